/* compiler/model/backward.c: reverse-mode differentiation: walks the tape recorded by the forward in reverse
 * and calls each layer kind's backward wiring. Layer ranges (NVTX) follow the forward's layers. */
#include "layers.h"

typedef void (*bwd_fn)(ddp_builder *, const ddp_node *);

static const bwd_fn backward_of[LK_COUNT] = {
    [LK_EMBED] = layer_embedding_bwd, [LK_LINEAR] = layer_linear_bwd,   [LK_RMSNORM] = layer_rmsnorm_bwd,
    [LK_ROPE] = layer_rope_bwd,       [LK_ATTENTION] = layer_attention_bwd, [LK_SWIGLU] = layer_swiglu_bwd,
    [LK_ATTENTION_NAIVE] = layer_attention_naive_bwd,
    [LK_RELU] = layer_relu_bwd,       [LK_LAYERNORM] = layer_layernorm_bwd, [LK_BIAS] = layer_bias_bwd,
    [LK_TP_COPY] = layer_tp_copy_bwd, [LK_TP_REDUCE] = NULL, /* a replicated output's gradient needs no sum */
    /* the losses produce their gradient in the forward */
    [LK_XENT] = NULL,             [LK_MSE] = NULL,
};

void b_backward(ddp_builder *b) {
  b_range_push(b, RANGE_BACKWARD, "backward");
  int open_layer = -1;
  for (int k = b->ntape - 1; k >= 0; k--) {
    const ddp_node n = b->tape[k]; /* copy: emitting may grow the tape's neighbours */
    if (n.layer != open_layer) {
      if (open_layer >= 0) b_range_pop(b);
      open_layer = n.layer;
      b->layer = n.layer;
      if (open_layer >= 0) {
        b_range_push(b, RANGE_LAYER, b_fmt(b, "layers.%d.backward", open_layer));
      }
    }
    if (backward_of[n.kind]) backward_of[n.kind](b, &n);
  }
  if (open_layer >= 0) b_range_pop(b);
  b->layer = -1;
  b_range_pop(b);
}

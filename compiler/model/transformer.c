/* compiler/model/transformer.c: the cs336 (2025) transformer LM: token embedding, pre-norm blocks
 * x + attn(rms1(x)), x + ffn(rms2(x)) with RoPE attention and SwiGLU, final RMSNorm, untied LM head, mean
 * cross-entropy. q/k/v and w1/w3 weights are stored adjacently (one GEMM each) under their own
 * state-dict names. Init: truncated normal std sqrt(2/(in+out)) cut at 3 std; embedding std 1; norms 1.
 * Under tensor parallelism (b->tp ranks, Megatron-style) each rank builds its share: heads/tp attention heads
 * (q/k/v column-parallel, output_proj row-parallel), d_ff/tp of the MLP (w1/w3 column-, w2 row-parallel),
 * vocab/tp rows of the embedding and the head with the vocabulary-parallel cross-entropy; per block one
 * all-reduce after each row-parallel layer in the forward and one of each column-parallel input's gradient
 * in the backward (tensor_parallel.c). The norms are whole on every rank. */
#include "layers.h"
#include "models.h"
#include <math.h>
#include <stdlib.h>

/* A linear unit of `numel` elements on this rank; its init std is the whole layer's, sqrt(2/(in + out_each)). */
static int linear_unit(ddp_builder *b, const char *unit_name, int64_t numel, int64_t out_each, int64_t in) {
  double std = sqrt(2.0 / (double)(in + out_each));
  return b_unit(b, unit_name, numel, true, INIT_TRUNC_NORMAL, (float)std, (float)(3.0 * std), in);
}

static int norm_unit(ddp_builder *b, const char *name, int64_t d) {
  int u = b_unit(b, name, d, true, INIT_CONST, 1.0f, 0.0f, 0);
  int64_t shape[1] = {d};
  b_param(b, u, name, 0, 1, shape);
  return u;
}

/* x + a W^T for a row-parallel W (this rank's input columns): every rank's GEMM writes its partial product,
 * tensor rank 0's with the residual added (TPP_RANK0_BETA), and the all-reduce sums them. One rank: the
 * GEMM with the residual. */
static int32_t row_parallel(ddp_builder *b, const char *name, int unit, int32_t a, int64_t in, int64_t out, int32_t x) {
  int32_t y = layer_linear(b, name, unit, a, in, out, x, b->res_dt);
  if (b->tp > 1) {
    b_tp_patch(b, b_last(b), TPP_RANK0_BETA, 0, 0);
    layer_tp_reduce(b, b_fmt(b, "%s.all_reduce", name), y);
  }
  return y;
}

int build_transformer(ddp_builder *b, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  const ddp_schedule *s = b->s;
  int64_t D = s->d_model, F = s->d_ff, V = s->vocab, H = s->heads, N = b->rows;
  /* Tensor parallelism over tp ranks: this rank's heads (Dl = D/tp model columns of q, k and v), d_ff
   * columns and vocabulary rows. tp == 1 is the whole model. */
  int64_t tp = b->tp, Dl = D / tp, Fl = F / tp, Vl = V / tp, Hl = H / tp;
  const char *nm;
  int64_t shape[2] = {N, 0};
  b->tokens = b_tensor(b, "batch.tokens", DT_I32, ARENA_IO, TF_TOKENS | TF_PERSISTENT, 1, shape);
  b->targets = b_tensor(b, "batch.targets", DT_I32, ARENA_IO, TF_TARGETS | TF_PERSISTENT, 1, shape);
  int64_t fshape[1] = {D / H / 2};
  b->rope_freq = b_tensor(b, "rope.inv_freq", b->fdt, ARENA_IO, TF_PERSISTENT, 1, fshape);

  /* Parameters in model.parameters() order; q/k/v (w1/w3) split by output rows, output_proj (w2) by input
   * columns, the embedding and the head by vocabulary rows. */
  int emb = b_unit(b, "token_embeddings.weight", Vl * D, true, INIT_TRUNC_NORMAL, 1.0f, 3.0f, D);
  b_param_tp(b, emb, "token_embeddings.weight", 0, V, D, TP_ROWS, 0);
  struct { int ln1, qkv, wo, ln2, w13, w2; } *u = ddp_xcalloc((size_t)s->layers, sizeof *u); /* units per layer */
  for (int64_t l = 0; l < s->layers; l++) {
    u[l].qkv = linear_unit(b, b_fmt(b, "layers.%lld.attn.qkv_proj", (long long)l), 3 * Dl * D, D, D);
    const char *qkv_names[3] = {"q_proj", "k_proj", "v_proj"};
    for (int k = 0; k < 3; k++)
      b_param_tp(b, u[l].qkv, b_fmt(b, "layers.%lld.attn.%s.weight", (long long)l, qkv_names[k]), k * Dl * D, D, D,
                 TP_ROWS, k * D * D);
    nm = b_fmt(b, "layers.%lld.attn.output_proj.weight", (long long)l);
    u[l].wo = linear_unit(b, nm, D * Dl, D, D);
    b_param_tp(b, u[l].wo, nm, 0, D, D, TP_COLS, 0);
    u[l].ln1 = norm_unit(b, b_fmt(b, "layers.%lld.ln1.weight", (long long)l), D);
    u[l].w13 = linear_unit(b, b_fmt(b, "layers.%lld.ffn.w13", (long long)l), 2 * Fl * D, F, D);
    b_param_tp(b, u[l].w13, b_fmt(b, "layers.%lld.ffn.w1.weight", (long long)l), 0, F, D, TP_ROWS, 0);
    nm = b_fmt(b, "layers.%lld.ffn.w2.weight", (long long)l);
    u[l].w2 = linear_unit(b, nm, D * Fl, D, F);
    b_param_tp(b, u[l].w2, nm, 0, D, F, TP_COLS, 0);
    b_param_tp(b, u[l].w13, b_fmt(b, "layers.%lld.ffn.w3.weight", (long long)l), Fl * D, F, D, TP_ROWS, F * D);
    u[l].ln2 = norm_unit(b, b_fmt(b, "layers.%lld.ln2.weight", (long long)l), D);
  }
  int lnf = norm_unit(b, "ln_final.weight", D);
  int head = linear_unit(b, "lm_head.weight", Vl * D, V, D);
  b_param_tp(b, head, "lm_head.weight", 0, V, D, TP_ROWS, 0);

  /* Forward. */
  b_range_push(b, RANGE_FORWARD, "forward");
  int32_t x = layer_embedding(b, "token_embeddings", emb, b->tokens, D);
  for (int64_t l = 0; l < s->layers; l++) {
    b->layer = (int)l;
    const char *p = b_fmt(b, "layers.%lld", (long long)l);
    b_range_push(b, RANGE_LAYER, p);
    int32_t h = layer_rmsnorm(b, b_fmt(b, "%s.ln1", p), u[l].ln1, x, D, b->act_dt);
    layer_tp_copy(b, b_fmt(b, "%s.ln1.tp_copy", p), h);
    int32_t q = layer_linear(b, b_fmt(b, "%s.attn.qkv_proj", p), u[l].qkv, h, D, 3 * Dl, -1, b->act_dt);
    b_range_push(b, RANGE_ATTENTION, "attention");
    layer_rope(b, b_fmt(b, "%s.attn.rope", p), q, Dl, Hl);
    nm = b_fmt(b, "%s.attn.sdpa", p);
    int32_t a = s->attention == ATTN_NAIVE ? layer_attention_naive(b, nm, q, Dl, Hl) : layer_attention(b, nm, q, Dl, Hl);
    b_range_pop(b);
    x = row_parallel(b, b_fmt(b, "%s.attn.output_proj", p), u[l].wo, a, Dl, D, x);
    int32_t h2 = layer_rmsnorm(b, b_fmt(b, "%s.ln2", p), u[l].ln2, x, D, b->act_dt);
    layer_tp_copy(b, b_fmt(b, "%s.ln2.tp_copy", p), h2);
    int32_t ab = layer_linear(b, b_fmt(b, "%s.ffn.w13", p), u[l].w13, h2, D, 2 * Fl, -1, b->act_dt);
    int32_t g = layer_swiglu(b, b_fmt(b, "%s.ffn.swiglu", p), ab, Fl);
    x = row_parallel(b, b_fmt(b, "%s.ffn.w2", p), u[l].w2, g, Fl, D, x);
    b_range_pop(b);
  }
  b->layer = -1;
  int32_t xf = layer_rmsnorm(b, "ln_final", lnf, x, D, b->act_dt);
  layer_tp_copy(b, "ln_final.tp_copy", xf);
  int32_t logits = layer_linear(b, "lm_head", head, xf, D, Vl, -1, b->act_dt);
  if (tp > 1) layer_cross_entropy_vp(b, logits, b->targets, Vl);
  else layer_cross_entropy(b, logits, b->targets, V);
  b_range_pop(b);
  b_timer(b, TIMER_FORWARD_END);
  free(u);
  return 0;
}

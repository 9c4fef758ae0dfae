/* compiler/model/layers/layers.h: the layer kinds, one file each (forward wiring, backward wiring, shape
 * rules): embedding.c, linear.c, norms.c, attention.c, attention_naive.c, pointwise.c, losses.c,
 * tensor_parallel.c. */
#ifndef DDP_LAYERS_H
#define DDP_LAYERS_H
#include "builder.h"

/* Forward functions emit the forward and record a node on the tape. */
int32_t layer_embedding(ddp_builder *b, const char *name, int unit, int32_t tokens, int64_t d);
int32_t layer_linear(ddp_builder *b, const char *name, int unit, int32_t x, int64_t in, int64_t out,
                     int32_t residual /* -1 or the tensor to add into (the output is then residual + xW^T) */,
                     int out_dt);
int32_t layer_rmsnorm(ddp_builder *b, const char *name, int unit, int32_t x, int64_t d, int out_dt);
void layer_rope(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads);
int32_t layer_attention(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads);
int32_t layer_attention_naive(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads);
int32_t layer_swiglu(ddp_builder *b, const char *name, int32_t ab, int64_t dff);
void layer_cross_entropy(ddp_builder *b, int32_t logits, int32_t targets, int64_t vocab);
void layer_mse(ddp_builder *b, int32_t pred, int32_t target, int64_t m);
int32_t layer_relu(ddp_builder *b, const char *name, int32_t x, int64_t n_cols);
int32_t layer_layernorm(ddp_builder *b, const char *name, int wunit, int bunit, int32_t x, int64_t d);
void layer_bias(ddp_builder *b, const char *name, int unit, int32_t y, int64_t m);
/* Tensor parallelism (tensor_parallel.c; nothing when b->tp == 1): the forward all-reduce of a row-parallel
 * output, the backward all-reduce of a column-parallel input's gradient; a collective over elements of t
 * on the rank's tensor communicator (compute stream, sum). */
void layer_tp_reduce(ddp_builder *b, const char *name, int32_t t);
void layer_tp_copy(ddp_builder *b, const char *name, int32_t t);
uint32_t b_tp_collective(ddp_builder *b, int opcode, int32_t t, uint64_t send_view, uint64_t recv_view, int64_t count,
                         const char *name); /* returns its index in the step */
/* The vocabulary-parallel cross-entropy (losses.c): logits [N, vocab_local] of this tensor rank's rows of the
 * head. (The embedding is vocabulary-parallel by itself when b->tp > 1.) */
void layer_cross_entropy_vp(ddp_builder *b, int32_t logits, int32_t targets, int64_t vocab_local);

/* Backward functions replay one tape node (b_backward calls them in reverse). */
void layer_embedding_bwd(ddp_builder *b, const ddp_node *n);
void layer_linear_bwd(ddp_builder *b, const ddp_node *n);
void layer_rmsnorm_bwd(ddp_builder *b, const ddp_node *n);
void layer_rope_bwd(ddp_builder *b, const ddp_node *n);
void layer_attention_bwd(ddp_builder *b, const ddp_node *n);
void layer_attention_naive_bwd(ddp_builder *b, const ddp_node *n);
void layer_swiglu_bwd(ddp_builder *b, const ddp_node *n);
void layer_relu_bwd(ddp_builder *b, const ddp_node *n);
void layer_layernorm_bwd(ddp_builder *b, const ddp_node *n);
void layer_bias_bwd(ddp_builder *b, const ddp_node *n);
void layer_tp_copy_bwd(ddp_builder *b, const ddp_node *n);
#endif

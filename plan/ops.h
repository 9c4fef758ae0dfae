/* plan/ops.h: the kernel op kinds, defined once. Each entry names its template file in templates/, its
 * CUDA entry point (ddp_<entry>), the reference C function ref_<entry> in runtime/ref/ and a one-line
 * synopsis (printed by `ddpc inspect` under "== kernel ops =="). The argument slots of every op (pointers
 * p[], integers i[], floats f[] of ddp_kargs) are named and documented in plan/op_slots.h, the contract
 * between the compiler, the CUDA templates and the reference kernels. */
#ifndef DDP_OPS_H
#define DDP_OPS_H
#include "op_slots.h"
#include <stdint.h>

/* X(ID, template file (templates/<file>.cu), entry (ddp_<entry> / ref_<entry>), synopsis) */
#define DDP_KERNEL_OPS(X) \
  X(EMBED_FWD, "embedding", embed_fwd, "out = table[tokens]") \
  X(EMBED_BWD, "embedding", embed_bwd, "dtable[tokens] (+)= dout, in token order") \
  X(RMSNORM_FWD, "rmsnorm", rmsnorm_fwd, "y = x*rsqrt(mean(x^2)+eps)*g") \
  X(RMSNORM_BWD, "rmsnorm", rmsnorm_bwd, "dx (+)= rstd*(g*dy - xhat*mean(g*dy*xhat)); dg_part = sum dy*xhat") \
  X(REDUCE_ROWS, "reduce", reduce_rows, "out[D] (+)= scale * sum_rows in[P,D]") \
  X(SUM, "reduce", sum, "out[0] (+)= scale * sum in[n]") \
  X(ROPE, "rope", rope, "x = rotate(x, t*inv_freq) in place") \
  X(ATTN_FWD, "attention_mma", attn_fwd, "o = softmax(scale*q*k^T, causal)*v; lse") \
  X(ATTN_BWD_PREP, "attention_mma", attn_bwd_prep, "delta = rowsum(do*o)") \
  X(ATTN_BWD_DKV, "attention_mma", attn_bwd_dkv, "dk, dv = attention backward(q, k, v, lse, do, delta)") \
  X(ATTN_BWD_DQ, "attention_mma", attn_bwd_dq, "dq = attention backward(q, k, v, lse, do, delta)") \
  X(SWIGLU_FWD, "swiglu", swiglu_fwd, "h = silu(a)*b, [a|b] = ab") \
  X(SWIGLU_BWD, "swiglu", swiglu_bwd, "dab = d(silu(a)*b)/d[a|b] * dh") \
  X(XENT, "cross_entropy", xent, "loss_rows = lse(logits) - logits[target]; dlogits = (softmax-onehot)*scale") \
  X(MSE, "mse", mse, "loss_rows = sum (pred-target)^2; dpred = scale*(pred-target)") \
  X(SUMSQ, "optimizer", sumsq, "part[c] = sum_chunk(c) x^2") \
  X(OPT_SCALARS, "optimizer", opt_scalars, "scalars = (t+1, lr(t), norm(part), clip scale)") \
  X(ADAMW, "optimizer", adamw, "m, v = moments(grad*clip); param -= lr*(mhat/(sqrt(vhat)+eps) + wd*param)") \
  X(SGD, "optimizer", sgd, "param -= lr * grad*clip") \
  X(CAST, "elementwise", cast, "out = (T1)in") \
  X(ADD, "elementwise", add, "out = a + b") \
  X(SCALE, "elementwise", scale, "x *= s") \
  X(BIAS_ADD, "elementwise", bias_add, "y[N,M] += b[M]") \
  X(RELU_FWD, "elementwise", relu_fwd, "y = max(x, 0)") \
  X(RELU_BWD, "elementwise", relu_bwd, "dx (+)= y > 0 ? dy : 0") \
  X(LAYERNORM_FWD, "layernorm", layernorm_fwd, "y = (x-mean)*rstd*w + b") \
  X(LAYERNORM_BWD, "layernorm", layernorm_bwd, "dx (+)= layernorm backward; dw_part, db_part = sums over chunks") \
  X(ATTN_NAIVE_SOFTMAX, "attention_naive", attn_naive_softmax, "scores = softmax(scale*scores, causal) in place; lse") \
  X(ATTN_NAIVE_SOFTMAX_BWD, "attention_naive", attn_naive_softmax_bwd, "dprobs = s*probs*(dprobs-rowsum(probs*dprobs))") \
  X(RMSNORM_BWD_CAST, "rmsnorm", rmsnorm_bwd_cast, "RMSNORM_BWD, then dx_cast = (T6)dx (the new dx, fused cast)") \
  X(ATTN_BWD_DKV_ROPE, "attention_mma", attn_bwd_dkv_rope, "ATTN_BWD_DKV, dk rotated back (inverse RoPE) as it is stored") \
  X(ATTN_BWD_DQ_ROPE, "attention_mma", attn_bwd_dq_rope, "ATTN_BWD_DQ, dq rotated back (inverse RoPE) as it is stored") \
  X(XENT_VP_STATS, "cross_entropy", xent_vp_stats, "stats[n] = (lse of the rank's logits, logit[target] if the rank holds it else 0)") \
  X(XENT_VP, "cross_entropy", xent_vp, "loss_rows, dlogits of the vocabulary-parallel cross-entropy from every rank's stats") \
  X(ATTN_BWD_FUSED, "attention_tma", attn_bwd_fused, "dk, dv = attention backward; dq_acc += dq (f32, tiles; additions in no fixed order)") \
  X(ATTN_DQ_STORE, "attention_mma", attn_dq_store, "dq = (T)dq_acc") \
  X(SUM_CHUNKS, "elementwise", sum_chunks, "out[n] = scale * sum_{w<P} in[w*n + i] (f32, w in order)")

typedef enum {
#define DDP_OP_ENUM(id, file, entry, synopsis) OP_##id,
  DDP_KERNEL_OPS(DDP_OP_ENUM)
#undef DDP_OP_ENUM
  OP_COUNT
} ddp_op;

#define DDP_MAX_PTRS 12
#define DDP_MAX_INTS 16
#define DDP_MAX_FLOATS 8

/* The one argument block every kernel receives, by value on the GPU and by pointer in the reference
 * executor. Its layout is mirrored by templates/common.cuh (struct ddp_kargs). */
typedef struct ddp_kargs {
  void *p[DDP_MAX_PTRS];
  int64_t i[DDP_MAX_INTS];
  float f[DDP_MAX_FLOATS];
} ddp_kargs;

const char *ddp_op_name(int op);      /* "RMSNORM_FWD" */
const char *ddp_op_template(int op);  /* "rmsnorm" */
const char *ddp_op_entry(int op);     /* "rmsnorm_fwd" */
const char *ddp_op_synopsis(int op);  /* "y = x*rsqrt(mean(x^2)+eps)*g" */
int ddp_op_from_name(const char *name);
#endif

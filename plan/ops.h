/* plan/ops.h: the kernel op kinds, defined once. Each entry names its template file in templates/, its
 * CUDA entry point (ddp_<entry>) and the reference C function ref_<entry> in runtime/ref/. The argument
 * slots of every op (pointers p[], integers i[], floats f[] of ddp_kargs) are documented here and are the
 * contract between the compiler, the CUDA templates and the reference kernels.
 *
 * Conventions: matrices are row-major; N is a row (token) count; "act" is the activation dtype; dtypes of
 * the pointer slots come from the instruction (dt[k]), so one op serves f32, bf16 and (reference only) f64.
 * "acc" flags: 0 = overwrite the output, 1 = add into it. Partial tables ([P, D]) split N rows into P
 * contiguous chunks of ceil(N/P) rows; chunk c's row of the table is the sum over its rows (chunks past N
 * are zero rows).
 * Optional operands (null = skipped): loss_rows and dlogits (XENT), loss_rows and dpred (MSE), rstd
 * (RMSNORM_FWD), dx and dg_part (RMSNORM_BWD), w/b (ones/zeros), mean, rstd (LAYERNORM_FWD), dx and the
 * partial tables (LAYERNORM_BWD), lse (ATTN_FWD, ATTN_NAIVE_SOFTMAX), parameter copies (ADAMW, SGD),
 * the sumsq partials (OPT_SCALARS: norm 0, scale 1). Besides XENT, outputs may alias inputs in SWIGLU_BWD,
 * MSE and the elementwise ops (each element is read before it is written). A token or target id outside
 * [0, V) gives a NaN row. The MSE gradient's factor 2 is in f0 (the compiler passes 2/numel).
 *
 * EMBED_FWD      p0 tokens i32[N], p1 table[V,D], p2 out[N,D]; i0 N, i1 D, i2 V
 * EMBED_BWD      p0 tokens i32[N], p1 dout[N,D], p2 dtable[V,D]; i0 N, i1 D, i2 V, i3 acc
 *                (deterministic: tokens are accumulated in order; rows never hit are 0 when acc=0)
 * RMSNORM_FWD    p0 x[N,D], p1 g[D], p2 y[N,D], p3 rstd f32[N]; i0 N, i1 D; f0 eps
 *                y = x * rstd * g, rstd = 1/sqrt(mean(x^2)+eps), statistics in f32
 * RMSNORM_BWD    p0 x, p1 g, p2 dy, p3 rstd, p4 dx[N,D], p5 dg_part f32[P,D]; i0 N, i1 D, i2 acc(dx), i3 P
 *                dx = rstd*(g*dy - xhat*mean(g*dy*xhat)), xhat = x*rstd; dg_part[c] = sum_rows dy*xhat
 * REDUCE_ROWS    p0 in[P,D], p1 out[D]; i0 P, i1 D, i2 acc; f0 scale (out (+)= scale * sum over rows)
 * SUM            p0 in[n], p1 out[1]; i0 n, i1 acc; f0 scale (out (+)= scale * sum)
 * ROPE           p0 x (in place) at x[(b*T+t)*i4 + h*Dh + j], p1 inv_freq f32[Dh/2]; i0 B, i1 T, i2 H,
 *                i3 Dh, i4 row stride (elements), i5 inverse; pairs (2m,2m+1) rotate by
 *                angle = fl32(t * inv_freq[m]) (or -angle when inverse)
 * ATTN_FWD       p0 q, p1 k, p2 v, p3 o, p4 lse f32[B,H,T]; element (b,t,h,j) of q at
 *                q[(b*T+t)*i4 + h*Dh + j] (k: i5, v: i6, o: i7 strides); i0 B, i1 T, i2 H, i3 Dh,
 *                i8 causal; f0 scale. lse = log-sum-exp of the scaled (masked) scores, natural log.
 * ATTN_BWD_PREP  p0 o, p1 do, p2 delta f32[B,H,T]; ints as ATTN_FWD (do uses o's stride i7)
 *                delta = sum_j do*o
 * ATTN_BWD_DKV   p0 q, p1 k, p2 v, p4 lse, p5 do, p6 delta, p7 dk, p8 dv; ints as ATTN_FWD
 *                (dk uses k's stride i5, dv v's stride i6; both overwritten)
 * ATTN_BWD_DQ    p0 q, p1 k, p2 v, p4 lse, p5 do, p6 delta, p9 dq; ints as ATTN_FWD (dq: stride i4)
 * SWIGLU_FWD     p0 ab[N,2F] (a = cols [0,F), b = cols [F,2F)), p1 h[N,F]; i0 N, i1 F
 *                h = silu(a) * b
 * SWIGLU_BWD     p0 ab[N,2F], p1 dh[N,F], p2 dab[N,2F]; i0 N, i1 F
 * XENT           p0 logits[N,V], p1 targets i32[N], p2 loss_rows f32[N], p3 dlogits[N,V] (may alias
 *                p0); i0 N, i1 V; f0 grad scale. loss_rows = logsumexp - logit[target];
 *                dlogits = (softmax - onehot) * scale
 * MSE            p0 pred[N,M], p1 target[N,M], p2 loss_rows f32[N], p3 dpred[N,M]; i0 N, i1 M;
 *                f0 grad scale. loss_rows = sum_c (pred-target)^2; dpred = scale*(pred-target)
 * SUMSQ          p0 x[n], p1 part f32[P]; i0 n, i1 P; part[c] = sum of x^2 over chunk c
 * OPT_SCALARS    p0 sumsq part f32[P] (or null), p1 scalars f32[8]; i0 P, i1 schedule (0 constant,
 *                1 cosine), i2 warmup, i3 cosine cycle steps, i4 clip; f0 lr max, f1 lr min, f2 max norm
 *                scalars: [0] t (incremented here, from 1), [1] lr_t, [2] grad norm, [3] clip scale.
 *                lr_t for it = t-1: it < warmup: it/warmup*max; it <= cycle:
 *                min + 0.5*(1+cos(pi*(it-warmup)/(cycle-warmup)))*(max-min); else min.
 *                clip scale = norm > max ? max/(norm+1e-6) : 1.
 * ADAMW          p0 param f32[n], p1 grad[n], p2 m f32[n], p3 v f32[n], p4 param copy[n] or null,
 *                p5 scalars f32[8]; i0 n; f0 b1, f1 b2, f2 eps, f3 wd. g = grad*scale;
 *                m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; a = lr sqrt(1-b2^t)/(1-b1^t);
 *                p -= a m/(sqrt(v)+eps); p -= lr wd p; copy = p (in the copy's dtype)
 * SGD            p0 param f32[n], p1 grad[n], p2 param copy or null, p3 scalars; i0 n
 *                p -= lr * grad * scale; copy = p
 * CAST           p0 in[n], p1 out[n]; i0 n
 * ADD            p0 a[n], p1 b[n], p2 out[n]; i0 n
 * SCALE          p0 x[n] (in place); i0 n; f0 s
 * BIAS_ADD       p0 y[N,M] (in place), p1 b[M]; i0 N, i1 M
 * RELU_FWD       p0 x[n], p1 y[n]; i0 n
 * RELU_BWD       p0 y[n] (the forward output), p1 dy[n], p2 dx[n]; i0 n, i1 acc
 * LAYERNORM_FWD  p0 x[N,D], p1 w[D], p2 b[D], p3 y[N,D], p4 mean f32[N], p5 rstd f32[N]; i0 N, i1 D; f0 eps
 * LAYERNORM_BWD  p0 x, p1 w, p2 dy, p3 mean, p4 rstd, p5 dx, p6 dw_part f32[P,D], p7 db_part f32[P,D];
 *                i0 N, i1 D, i2 acc(dx), i3 P
 * ATTN_NAIVE_SOFTMAX  p0 scores f32[B*H,T,T] (in place: scaled, masked, softmaxed), p1 lse f32[B,H,T];
 *                i0 B, i1 T, i2 H, i8 causal; f0 scale   (baseline path: scores come from GEMMs)
 * ATTN_NAIVE_SOFTMAX_BWD p0 probs f32[B*H,T,T], p1 dprobs f32[B*H,T,T] -> dscores (in place in p1,
 *                scaled by f0); i0 B, i1 T, i2 H
 */
#ifndef DDP_OPS_H
#define DDP_OPS_H
#include <stdint.h>

/* X(ID, template file (templates/<file>.cu), entry (ddp_<entry> / ref_<entry>)) */
#define DDP_KERNEL_OPS(X)                                   \
  X(EMBED_FWD, "embedding", embed_fwd)                      \
  X(EMBED_BWD, "embedding", embed_bwd)                      \
  X(RMSNORM_FWD, "rmsnorm", rmsnorm_fwd)                    \
  X(RMSNORM_BWD, "rmsnorm", rmsnorm_bwd)                    \
  X(REDUCE_ROWS, "reduce", reduce_rows)                     \
  X(SUM, "reduce", sum)                                     \
  X(ROPE, "rope", rope)                                     \
  X(ATTN_FWD, "attention", attn_fwd)                        \
  X(ATTN_BWD_PREP, "attention", attn_bwd_prep)              \
  X(ATTN_BWD_DKV, "attention", attn_bwd_dkv)                \
  X(ATTN_BWD_DQ, "attention", attn_bwd_dq)                  \
  X(SWIGLU_FWD, "swiglu", swiglu_fwd)                       \
  X(SWIGLU_BWD, "swiglu", swiglu_bwd)                       \
  X(XENT, "cross_entropy", xent)                            \
  X(MSE, "mse", mse)                                        \
  X(SUMSQ, "optimizer", sumsq)                              \
  X(OPT_SCALARS, "optimizer", opt_scalars)                  \
  X(ADAMW, "optimizer", adamw)                              \
  X(SGD, "optimizer", sgd)                                  \
  X(CAST, "elementwise", cast)                              \
  X(ADD, "elementwise", add)                                \
  X(SCALE, "elementwise", scale)                            \
  X(BIAS_ADD, "elementwise", bias_add)                      \
  X(RELU_FWD, "elementwise", relu_fwd)                      \
  X(RELU_BWD, "elementwise", relu_bwd)                      \
  X(LAYERNORM_FWD, "layernorm", layernorm_fwd)              \
  X(LAYERNORM_BWD, "layernorm", layernorm_bwd)              \
  X(ATTN_NAIVE_SOFTMAX, "attention_naive", attn_naive_softmax) \
  X(ATTN_NAIVE_SOFTMAX_BWD, "attention_naive", attn_naive_softmax_bwd)

typedef enum {
#define DDP_OP_ENUM(id, file, entry) OP_##id,
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
int ddp_op_from_name(const char *name);

/* Scalars block written by OPT_SCALARS and read by the optimizers and the metrics. */
enum { SCALAR_STEP = 0, SCALAR_LR = 1, SCALAR_GRAD_NORM = 2, SCALAR_CLIP_SCALE = 3, SCALAR_COUNT = 8 };
#endif

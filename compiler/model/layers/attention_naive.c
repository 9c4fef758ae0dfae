/* compiler/model/layers/attention_naive.c: the baseline attention that materialises the scores, as the
 * handouts' naive PyTorch attention does: S = Q K^T (f32, one batched GEMM per sequence over the heads),
 * causal softmax of scale*S in place, P cast to the activation dtype, O = P V. Backward: dP = dO V^T,
 * dV = P^T dO, dS = scale * P * (dP - rowsum(P dP)), dQ = dS K, dK = dS^T Q. Memory: two f32 and two
 * activation-dtype [B, H, T, T] tensors per layer. */
#include "layers.h"
#include <math.h>

typedef struct {
  int64_t B, T, H, Dh, D;
  uint64_t es; /* activation element size */
} dims;

static dims dims_of(ddp_builder *b, int32_t qkv, int64_t d, int64_t heads) {
  dims x = {b->rows / b->s->context, b->s->context, heads, d / heads, d, ddp_dtype_size(b_t(b, qkv)->dtype)};
  return x;
}

/* One batched GEMM per sequence: batch over the heads. Column offsets/strides in elements. */
static void per_sequence_gemm(ddp_builder *b, const char *name, const dims *g, int32_t A, uint64_t a_off,
                              int64_t a_seq, int64_t lda, int64_t a_stride, int transA, int32_t Bm, uint64_t b_off,
                              int64_t b_seq, int64_t ldb, int64_t b_stride, int transB, int32_t Dm, uint64_t d_off,
                              int64_t d_seq, int64_t ldd, int64_t d_stride, int64_t M, int64_t N, int64_t K) {
  uint64_t ea = ddp_dtype_size(b_t(b, A)->dtype), eb = ddp_dtype_size(b_t(b, Bm)->dtype),
           ed = ddp_dtype_size(b_t(b, Dm)->dtype);
  for (int64_t s = 0; s < g->B; s++) {
    ddp_instr *in = b_gemm(b, name, A, (a_off + (uint64_t)(s * a_seq)) * ea, transA, lda, Bm,
                           (b_off + (uint64_t)(s * b_seq)) * eb, transB, ldb, Dm, (d_off + (uint64_t)(s * d_seq)) * ed,
                           ldd, M, N, K, 0.0f);
    in->i[GEMM_I_BATCH] = g->H;
    in->i[GEMM_I_STRIDE_A] = a_stride;
    in->i[GEMM_I_STRIDE_B] = b_stride;
    in->i[GEMM_I_STRIDE_C] = in->i[GEMM_I_STRIDE_D] = d_stride;
    b->flops += 2.0 * (double)M * (double)N * (double)K * (double)(g->H - 1);
  }
}

static void softmax(ddp_builder *b, int op, int32_t p0, int32_t p1, const dims *g, const char *name) {
  ddp_instr in = b_kernel(op);
  b_buf(b, &in, ATTN_NAIVE_SOFTMAX_P_SCORES, p0);
  b_buf(b, &in, ATTN_NAIVE_SOFTMAX_P_LSE, p1);
  in.i[ATTN_NAIVE_SOFTMAX_I_B] = g->B;
  in.i[ATTN_NAIVE_SOFTMAX_I_T] = g->T;
  in.i[ATTN_NAIVE_SOFTMAX_I_H] = g->H;
  in.i[ATTN_NAIVE_SOFTMAX_I_CAUSAL] = 1;
  in.f[ATTN_NAIVE_SOFTMAX_F_SCALE] = (float)(1.0 / sqrt((double)g->Dh));
  b_emit(b, in, name);
}

int32_t layer_attention_naive(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads) {
  dims g = dims_of(b, qkv, d, heads);
  int64_t shape[4] = {g.B, g.H, g.T, g.T};
  int32_t S = b_tensor(b, b_fmt(b, "%s.scores", name), b->fdt, ARENA_ACT, 0, 4, shape);
  int32_t o = b_act(b, b_fmt(b, "%s.out", name), b_t(b, qkv)->dtype, b->rows, d);
  int64_t TT = g.T * g.T, rowq = g.T * 3 * d;
  per_sequence_gemm(b, b_fmt(b, "%s.qk", name), &g, qkv, 0, rowq, 3 * d, g.Dh, 0, qkv, (uint64_t)d, rowq, 3 * d, g.Dh,
                    1, S, 0, g.H * TT, g.T, TT, g.T, g.T, g.Dh);
  softmax(b, OP_ATTN_NAIVE_SOFTMAX, S, -1, &g, b_fmt(b, "%s.softmax", name));
  int32_t P = b_as_dtype(b, S, b_t(b, qkv)->dtype, b_fmt(b, "%s.probs", name));
  per_sequence_gemm(b, b_fmt(b, "%s.pv", name), &g, P, 0, g.H * TT, g.T, TT, 0, qkv, 2 * (uint64_t)d, rowq, 3 * d, g.Dh,
                    0, o, 0, g.T * d, d, g.Dh, g.T, g.Dh, g.T);
  ddp_node *n = b_record(b, LK_ATTENTION_NAIVE, name);
  n->t[0] = qkv;
  n->t[1] = o;
  n->t[2] = S;
  n->t[3] = P;
  n->i[0] = d;
  n->i[1] = heads;
  return o;
}

void layer_attention_naive_bwd(ddp_builder *b, const ddp_node *n) {
  int32_t qkv = n->t[0], o = n->t[1], S = n->t[2], P = n->t[3];
  if (!b_has_grad(b, o)) return;
  dims g = dims_of(b, qkv, n->i[0], n->i[1]);
  int64_t d = g.D, TT = g.T * g.T, rowq = g.T * 3 * d;
  const char *name = ddp_plan_string(b->plan, n->name);
  int32_t dout = b_grad(b, o), dqkv = b_grad(b, qkv);
  b_grad_acc(b, dqkv);
  int64_t shape[4] = {g.B, g.H, g.T, g.T};
  int32_t dS = b_tensor(b, b_fmt(b, "%s.dscores", name), b->fdt, ARENA_ACT, 0, 4, shape);
  /* dP = dO V^T */
  per_sequence_gemm(b, b_fmt(b, "%s.bwd_dp", name), &g, dout, 0, g.T * d, d, g.Dh, 0, qkv, 2 * (uint64_t)d, rowq, 3 * d,
                    g.Dh, 1, dS, 0, g.H * TT, g.T, TT, g.T, g.T, g.Dh);
  /* dV = P^T dO */
  per_sequence_gemm(b, b_fmt(b, "%s.bwd_dv", name), &g, P, 0, g.H * TT, g.T, TT, 1, dout, 0, g.T * d, d, g.Dh, 0, dqkv,
                    2 * (uint64_t)d, rowq, 3 * d, g.Dh, g.T, g.Dh, g.T);
  softmax(b, OP_ATTN_NAIVE_SOFTMAX_BWD, S, dS, &g, b_fmt(b, "%s.bwd_softmax", name));
  int32_t dSc = b_as_dtype(b, dS, b_t(b, qkv)->dtype, b_fmt(b, "%s.dscores.cast", name));
  /* dQ = dS K */
  per_sequence_gemm(b, b_fmt(b, "%s.bwd_dq", name), &g, dSc, 0, g.H * TT, g.T, TT, 0, qkv, (uint64_t)d, rowq, 3 * d,
                    g.Dh, 0, dqkv, 0, rowq, 3 * d, g.Dh, g.T, g.Dh, g.T);
  /* dK = dS^T Q */
  per_sequence_gemm(b, b_fmt(b, "%s.bwd_dk", name), &g, dSc, 0, g.H * TT, g.T, TT, 1, qkv, 0, rowq, 3 * d, g.Dh, 0,
                    dqkv, (uint64_t)d, rowq, 3 * d, g.Dh, g.T, g.Dh, g.T);
}

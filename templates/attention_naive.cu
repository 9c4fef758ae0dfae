// templates/attention_naive.cu: the softmax steps of the baseline (materialised scores) attention path
// (plan/ops.h ATTN_NAIVE_SOFTMAX / ATTN_NAIVE_SOFTMAX_BWD), reference runtime/ref/ref_attention_naive.c
// (ref_attn_naive_softmax, ref_attn_naive_softmax_bwd).
//   softmax: per row t of each [T, T] matrix, in place: s = scale*raw on visible keys (j <= t if causal),
//            P = softmax(s) there, 0 on masked keys; lse[b,h,t] = max + log sum exp(s - max) (null: skip)
//   bwd:     dS_tj = scale * P_tj * (dP_tj - sum_k P_tk dP_tk), in place in dprobs
// One block per row (grid-stride over the B*H*T rows). Types: softmax T0 scores, T1 lse (f32);
// bwd T0 probs, T1 dprobs. Spec: DDP_BLOCK.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif

#ifdef DDP_ENTRY_attn_naive_softmax
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_attn_naive_softmax(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  T0 *sc = (T0 *)a.p[ATTN_NAIVE_SOFTMAX_P_SCORES];
  float *lse = (float *)a.p[ATTN_NAIVE_SOFTMAX_P_LSE];
  const long long B = a.i[ATTN_NAIVE_SOFTMAX_I_B], T = a.i[ATTN_NAIVE_SOFTMAX_I_T], H = a.i[ATTN_NAIVE_SOFTMAX_I_H];
  const bool causal = a.i[ATTN_NAIVE_SOFTMAX_I_CAUSAL] != 0;
  const float scale = a.f[ATTN_NAIVE_SOFTMAX_F_SCALE];
  __shared__ float sh[64];
  for (long long r = blockIdx.x; r < B * H * T; r += gridDim.x) {
    const long long t = r % T, nk = causal ? t + 1 : T;
    T0 *row = sc + r * T;
    float m = -INFINITY, s = 0.f;
    for (long long j = threadIdx.x; j < nk; j += DDP_BLOCK) {
      const float v = ddp_f(row[j]) * scale;
      const float mn = fmaxf(m, v);
      s = (m == -INFINITY ? 0.f : s * expf(m - mn)) + expf(v - mn);
      m = mn;
    }
    ddp_block_ms(m, s, sh);
    const float l = m + logf(s);
    if (lse && threadIdx.x == 0) lse[r] = l;
    for (long long j = threadIdx.x; j < T; j += DDP_BLOCK)
      row[j] = ddp_to<T0>(j < nk ? expf(ddp_f(row[j]) * scale - l) : 0.f);
    __syncthreads();
  }
}
#endif

#ifdef DDP_ENTRY_attn_naive_softmax_bwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_attn_naive_softmax_bwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *pr = (const T0 *)a.p[ATTN_NAIVE_SOFTMAX_BWD_P_PROBS];
  T1 *dp = (T1 *)a.p[ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS];
  const long long B = a.i[ATTN_NAIVE_SOFTMAX_BWD_I_B], T = a.i[ATTN_NAIVE_SOFTMAX_BWD_I_T],
                  H = a.i[ATTN_NAIVE_SOFTMAX_BWD_I_H];
  const float scale = a.f[ATTN_NAIVE_SOFTMAX_BWD_F_SCALE];
  __shared__ float sh[32];
  for (long long r = blockIdx.x; r < B * H * T; r += gridDim.x) {
    const T0 *p = pr + r * T;
    T1 *d = dp + r * T;
    float s = 0.f;
    for (long long j = threadIdx.x; j < T; j += DDP_BLOCK) s = fmaf(ddp_f(p[j]), ddp_f(d[j]), s);
    s = ddp_block_sum(s, sh);
    for (long long j = threadIdx.x; j < T; j += DDP_BLOCK) d[j] = ddp_to<T1>(scale * ddp_f(p[j]) * (ddp_f(d[j]) - s));
  }
}
#endif

// templates/cross_entropy.cu: per-row cross-entropy with its gradient (plan/ops.h XENT), reference
// runtime/ref/ref_cross_entropy.c (ref_xent).
//   lse = max + log(sum exp(x - max)), loss_rows[n] = lse - x[target] (NaN for a target outside [0, V)),
//   dlogits = (softmax - onehot(target)) * scale, written in place when dlogits aliases logits.
// One block per row (grid-stride over rows): one pass for the statistics (online max/sum, merged in a
// fixed order), one pass writing dlogits (the row is re-read, from L2). x[target] is read before any
// write. Null loss_rows / dlogits are skipped. Types: T0 logits, T1 targets (int), T2 loss_rows (f32),
// T3 dlogits. Spec: DDP_BLOCK, DDP_VEC.
//
// The vocabulary-parallel cross-entropy (XENT_VP_STATS, XENT_VP; ref_xent_vp_stats, ref_xent_vp): each rank
// holds logits[N,V] of the vocabulary columns [vfirst, vfirst + V) of vtotal.
//   xent_vp_stats: stats[n] = (lse of the rank's row, x[target - vfirst] if the rank holds the target else 0),
//     the same statistics pass as xent (one block per row), thread 0 storing both. Types: T0 logits,
//     T1 targets (int), T2 stats (f32).
//   xent_vp: after an all-gather of the stats (stats[p][n][.], p < parts, in rank order): every thread of a
//     row's block folds the parts itself in one fixed order (max, then sum of exp(lse_p - max); the target
//     logits summed in part order), so all threads hold the same bits without a block reduction;
//     loss_rows[n] = lse - tgt (NaN for a target outside [0, vtotal)), and dlogits as xent's second pass
//     with the onehot at local column target - vfirst. Types: T0 logits, T1 targets, T2 stats (f32), T3
//     loss_rows (f32), T4 dlogits.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 1024
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif

#ifdef DDP_ENTRY_xent
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_xent(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *logits = (const T0 *)a.p[XENT_P_LOGITS];
  const int *tgt = (const int *)a.p[XENT_P_TARGETS];
  float *loss = (float *)a.p[XENT_P_LOSS_ROWS];
  T3 *dl = (T3 *)a.p[XENT_P_DLOGITS];
  const long long N = a.i[XENT_I_N], V = a.i[XENT_I_V];
  const float scale = a.f[XENT_F_SCALE];
  constexpr int W = DDP_VEC;
  const bool vin = V % W == 0 && ddp_pack_ok<T0, W>(logits), vout = V % W == 0 && ddp_pack_ok<T3, W>(dl);
  __shared__ float sh[64];
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    const T0 *x = logits + n * V;
    const long long t = tgt[n];
    const bool valid = t >= 0 && t < V;
    const float xt = valid ? ddp_f(x[t]) : 0.f;
    float m = -INFINITY, s = 0.f;
    for (long long c = (long long)threadIdx.x * W; c < V; c += (long long)DDP_BLOCK * W) {
      float v[W];
      ddp_load_nb<T0, W>(x, c, V, v, vin);
      float mx = v[0];
#pragma unroll
      for (int e = 1; e < W; e++)
        if (c + e < V) mx = fmaxf(mx, v[e]);
      const float mn = fmaxf(m, mx);
      float ss = 0.f;
#pragma unroll
      for (int e = 0; e < W; e++)
        if (c + e < V) ss += __expf(v[e] - mn);
      s = (m == -INFINITY ? 0.f : s * __expf(m - mn)) + ss;
      m = mn;
    }
    ddp_block_ms(m, s, sh);
    const float lse = m + logf(s);
    if (loss && threadIdx.x == 0) loss[n] = valid ? lse - xt : __int_as_float(0x7fc00000);
    if (dl) {
      T3 *d = dl + n * V;
      for (long long c = (long long)threadIdx.x * W; c < V; c += (long long)DDP_BLOCK * W) {
        float v[W];
        ddp_load_nb<T0, W>(x, c, V, v, vin);
#pragma unroll
        for (int e = 0; e < W; e++) v[e] = __expf(v[e] - lse) * scale - (c + e == t ? scale : 0.f);
        ddp_store_nb<T3, W>(d, c, V, v, vout);
      }
    }
    __syncthreads();  // the next row's statistics reuse sh
  }
}
#endif

#ifdef DDP_ENTRY_xent_vp_stats
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_xent_vp_stats(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *logits = (const T0 *)a.p[XENT_VP_STATS_P_LOGITS];
  const int *tgt = (const int *)a.p[XENT_VP_STATS_P_TARGETS];
  float *stats = (float *)a.p[XENT_VP_STATS_P_STATS];
  const long long N = a.i[XENT_VP_STATS_I_N], V = a.i[XENT_VP_STATS_I_V], vf = a.i[XENT_VP_STATS_I_VFIRST];
  constexpr int W = DDP_VEC;
  const bool vin = V % W == 0 && ddp_pack_ok<T0, W>(logits);
  __shared__ float sh[64];
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    const T0 *x = logits + n * V;
    float m = -INFINITY, s = 0.f;
    for (long long c = (long long)threadIdx.x * W; c < V; c += (long long)DDP_BLOCK * W) {
      float v[W];
      ddp_load_nb<T0, W>(x, c, V, v, vin);
      float mx = v[0];
#pragma unroll
      for (int e = 1; e < W; e++)
        if (c + e < V) mx = fmaxf(mx, v[e]);
      const float mn = fmaxf(m, mx);
      float ss = 0.f;
#pragma unroll
      for (int e = 0; e < W; e++)
        if (c + e < V) ss += __expf(v[e] - mn);
      s = (m == -INFINITY ? 0.f : s * __expf(m - mn)) + ss;
      m = mn;
    }
    ddp_block_ms(m, s, sh);
    if (threadIdx.x == 0) {
      const long long t = (long long)tgt[n] - vf;  // local column of the target
      stats[2 * n] = m + logf(s);
      stats[2 * n + 1] = t >= 0 && t < V ? ddp_f(x[t]) : 0.f;
    }
    __syncthreads();  // the next row's statistics reuse sh
  }
}
#endif

#ifdef DDP_ENTRY_xent_vp
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_xent_vp(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *logits = (const T0 *)a.p[XENT_VP_P_LOGITS];
  const int *tgt = (const int *)a.p[XENT_VP_P_TARGETS];
  const float *stats = (const float *)a.p[XENT_VP_P_STATS];
  float *loss = (float *)a.p[XENT_VP_P_LOSS_ROWS];
  T4 *dl = (T4 *)a.p[XENT_VP_P_DLOGITS];
  const long long N = a.i[XENT_VP_I_N], V = a.i[XENT_VP_I_V], vf = a.i[XENT_VP_I_VFIRST];
  const long long P = a.i[XENT_VP_I_PARTS], vtotal = a.i[XENT_VP_I_VTOTAL];
  const float scale = a.f[XENT_VP_F_SCALE];
  constexpr int W = DDP_VEC;
  const bool vin = V % W == 0 && ddp_pack_ok<T0, W>(logits), vout = V % W == 0 && ddp_pack_ok<T4, W>(dl);
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    const long long t = tgt[n];
    // the parts, in one order for every thread: max of the partial lse, then the sum of exp, then the
    // target logit (one part holds it, the others add 0)
    float m = -INFINITY;
    for (long long p = 0; p < P; p++) m = fmaxf(m, stats[(p * N + n) * 2]);
    float s = 0.f, xt = 0.f;
    for (long long p = 0; p < P; p++) {
      s += expf(stats[(p * N + n) * 2] - m);
      xt += stats[(p * N + n) * 2 + 1];
    }
    const float lse = m + logf(s);
    if (loss && threadIdx.x == 0) loss[n] = t >= 0 && t < vtotal ? lse - xt : __int_as_float(0x7fc00000);
    if (dl) {
      const T0 *x = logits + n * V;
      T4 *d = dl + n * V;
      const long long lt = t - vf;  // the onehot's local column (outside [0, V): none here)
      for (long long c = (long long)threadIdx.x * W; c < V; c += (long long)DDP_BLOCK * W) {
        float v[W];
        ddp_load_nb<T0, W>(x, c, V, v, vin);
#pragma unroll
        for (int e = 0; e < W; e++) v[e] = __expf(v[e] - lse) * scale - (c + e == lt ? scale : 0.f);
        ddp_store_nb<T4, W>(d, c, V, v, vout);
      }
    }
  }
}
#endif

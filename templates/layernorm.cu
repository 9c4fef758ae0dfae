// templates/layernorm.cu: LayerNorm over the last dimension, biased variance (plan/ops.h LAYERNORM_FWD /
// LAYERNORM_BWD), reference runtime/ref/ref_layernorm.c (ref_layernorm_fwd, ref_layernorm_bwd).
//   forward:  mean = sum x / D, rstd = 1/sqrt(sum (x-mean)^2 / D + eps), y = (x-mean)*rstd*w + b
//   backward: xhat = (x-mean)*rstd, gw = dy*w, dx (+)= rstd*(gw - mean(gw) - xhat*mean(gw*xhat)),
//             dw_part[c] = sum_chunk dy*xhat, db_part[c] = sum_chunk dy
// Null w (b) acts as ones (zeros); null mean/rstd (forward), dx, dw_part, db_part are skipped.
// Same register-resident layout as rmsnorm.cu (rows.cuh); the variance is a second pass over registers.
// Types: fwd T0 x, T1 w, T2 b, T3 y, T4 mean f32, T5 rstd f32; bwd T0 x, T1 w, T2 dy, T3 mean, T4 rstd,
// T5 dx, T6 dw_part f32, T7 db_part f32. Spec: rows.cuh.
#include "rows.cuh"
using namespace rows;

#ifdef DDP_ENTRY_layernorm_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_layernorm_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[LAYERNORM_FWD_P_X];
  const T1 *w = (const T1 *)a.p[LAYERNORM_FWD_P_W];
  const T2 *b = (const T2 *)a.p[LAYERNORM_FWD_P_B];
  T3 *y = (T3 *)a.p[LAYERNORM_FWD_P_Y];
  float *mean_out = (float *)a.p[LAYERNORM_FWD_P_MEAN], *rstd_out = (float *)a.p[LAYERNORM_FWD_P_RSTD];
  const long long N = a.i[LAYERNORM_FWD_I_N], D = a.i[LAYERNORM_FWD_I_D];
  const float eps = a.f[LAYERNORM_FWD_F_EPS], invD = 1.f / (float)D;
  __shared__ float sh[32];
  const bool vx = vec_ok(x, D), vy = vec_ok(y, D);
  float wv[K][V], bv[K][V];
  load_or(w, D, 1.f, wv, vec_ok(w, D));
  load_or(b, D, 0.f, bv, vec_ok(b, D));
  for (long long row = (long long)blockIdx.x * RPB + group(); row - group() < N;
       row += (long long)gridDim.x * RPB) {
    const bool live = row < N;
    float xv[K][V];
    load(x, live ? row * D : 0, live ? D : 0, xv, vx);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) s += xv[k][e];
    const float mean = sum(s, sh) * invD;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) {
        const float d = col(k) + e < D ? xv[k][e] - mean : 0.f;
        xv[k][e] = d;
        q = fmaf(d, d, q);
      }
    const float r = 1.f / sqrtf(sum(q, sh) * invD + eps);
    if (!live) continue;
    if (lane() == 0) {
      if (mean_out) mean_out[row] = mean;
      if (rstd_out) rstd_out[row] = r;
    }
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) xv[k][e] = fmaf(xv[k][e] * r, wv[k][e], bv[k][e]);
    store(y, row * D, D, xv, vy, false);
  }
}
#endif

#ifdef DDP_ENTRY_layernorm_bwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_layernorm_bwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[LAYERNORM_BWD_P_X];
  const T1 *w = (const T1 *)a.p[LAYERNORM_BWD_P_W];
  const T2 *dy = (const T2 *)a.p[LAYERNORM_BWD_P_DY];
  const float *mean = (const float *)a.p[LAYERNORM_BWD_P_MEAN], *rstd = (const float *)a.p[LAYERNORM_BWD_P_RSTD];
  T5 *dx = (T5 *)a.p[LAYERNORM_BWD_P_DX];
  float *dw = (float *)a.p[LAYERNORM_BWD_P_DW_PART], *db = (float *)a.p[LAYERNORM_BWD_P_DB_PART];
  const long long N = a.i[LAYERNORM_BWD_I_N], D = a.i[LAYERNORM_BWD_I_D],
                  P = a.i[LAYERNORM_BWD_I_P] < 1 ? 1 : a.i[LAYERNORM_BWD_I_P];
  const bool acc = a.i[LAYERNORM_BWD_I_ACC] != 0;
  __shared__ float sh[RPB > 1 ? G * K * V : 32];
  const bool vx = vec_ok(x, D), vdy = vec_ok(dy, D), vdx = vec_ok(dx, D);
  const float invD = 1.f / (float)D;
  float wv[K][V];
  load_or(w, D, 1.f, wv, vec_ok(w, D));
  for (long long c = blockIdx.x; c < P; c += gridDim.x) {
    long long lo, hi;
    chunk(N, P, c, lo, hi);
    float dwv[K][V], dbv[K][V];
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) dwv[k][e] = dbv[k][e] = 0.f;
    for (long long row = lo + group(); row - group() < hi; row += RPB) {
      const bool live = row < hi;
      float xv[K][V], dyv[K][V];
      load(x, live ? row * D : 0, live ? D : 0, xv, vx);
      load(dy, live ? row * D : 0, live ? D : 0, dyv, vdy);
      const float mu = live ? mean[row] : 0.f, r = live ? rstd[row] : 0.f;
      float s1 = 0.f, s2 = 0.f;
#pragma unroll
      for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < V; e++) {
          const float xh = col(k) + e < D ? (xv[k][e] - mu) * r : 0.f;
          xv[k][e] = xh;
          dwv[k][e] = fmaf(dyv[k][e], xh, dwv[k][e]);
          dbv[k][e] += dyv[k][e];
          const float gw = dyv[k][e] * wv[k][e];
          dyv[k][e] = gw;
          s1 += gw;
          s2 = fmaf(gw, xh, s2);
        }
      s1 = sum(s1, sh) * invD;
      s2 = sum(s2, sh) * invD;
      if (!live || !dx) continue;
#pragma unroll
      for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < V; e++) dyv[k][e] = r * (dyv[k][e] - s1 - xv[k][e] * s2);
      store(dx, row * D, D, dyv, vdx, acc);
    }
    write_partial(dw ? dw + c * D : nullptr, D, dwv, sh);
    write_partial(db ? db + c * D : nullptr, D, dbv, sh);
  }
}
#endif

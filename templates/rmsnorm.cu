// templates/rmsnorm.cu: RMSNorm (plan/ops.h RMSNORM_FWD / RMSNORM_BWD), reference
// runtime/ref/ref_rmsnorm.c (ref_rmsnorm_fwd, ref_rmsnorm_bwd).
//   forward:  rstd = 1/sqrt(mean(x^2) + eps) (f32), y = x * rstd * g
//   backward: xhat = x*rstd, dx (+)= rstd*(g*dy - xhat*mean(g*dy*xhat)),
//             dg_part[c] = sum over the rows of chunk c of dy*xhat (P chunks of ceil(N/P) rows)
// One pass over global memory: each row lives in registers (rows.cuh layout); g is loaded once per
// block. The backward runs one block per partial chunk (grid = P), accumulating dg in registers.
// Fused (RMSNORM_BWD_CAST, entry rmsnorm_bwd_cast, the same kernel): after dx (+)= ..., the new dx as
// stored is also written to dx_cast in its own dtype (T6): the CAST of the residual gradient that the next
// GEMM needs in bf16, without reading dx again.
// Types: T0 x, T1 g, T2 y / dy, T3 rstd (f32), T4 dx, T5 dg_part (f32), T6 dx_cast. Spec: rows.cuh.
#include "rows.cuh"
using namespace rows;

#ifdef DDP_ENTRY_rmsnorm_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_rmsnorm_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[RMSNORM_FWD_P_X];
  const T1 *g = (const T1 *)a.p[RMSNORM_FWD_P_G];
  T2 *y = (T2 *)a.p[RMSNORM_FWD_P_Y];
  float *rstd = (float *)a.p[RMSNORM_FWD_P_RSTD];
  const long long N = a.i[RMSNORM_FWD_I_N], D = a.i[RMSNORM_FWD_I_D];
  const float eps = a.f[RMSNORM_FWD_F_EPS];
  __shared__ float sh[32];
  const bool vx = vec_ok(x, D), vg = vec_ok(g, D), vy = vec_ok(y, D);
  float gv[K][V];
  load_or(g, D, 1.f, gv, vg);
  for (long long row = (long long)blockIdx.x * RPB + group(); row - group() < N;
       row += (long long)gridDim.x * RPB) {
    const bool live = row < N;
    float xv[K][V];
    load(x, live ? row * D : 0, live ? D : 0, xv, vx);
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) ss = fmaf(xv[k][e], xv[k][e], ss);
    ss = sum(ss, sh);
    const float r = 1.f / sqrtf(ss / (float)D + eps);
    if (!live) continue;
    if (rstd && lane() == 0) rstd[row] = r;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) xv[k][e] = xv[k][e] * r * gv[k][e];
    store(y, row * D, D, xv, vy, false);
  }
}
#endif

#if defined(DDP_ENTRY_rmsnorm_bwd) || defined(DDP_ENTRY_rmsnorm_bwd_cast)
#ifdef DDP_ENTRY_rmsnorm_bwd_cast
#define DDP_RMSNORM_BWD_ENTRY ddp_rmsnorm_bwd_cast
constexpr bool kCast = true;
#else
#define DDP_RMSNORM_BWD_ENTRY ddp_rmsnorm_bwd
constexpr bool kCast = false;
#endif
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) DDP_RMSNORM_BWD_ENTRY(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[RMSNORM_BWD_P_X];
  const T1 *g = (const T1 *)a.p[RMSNORM_BWD_P_G];
  const T2 *dy = (const T2 *)a.p[RMSNORM_BWD_P_DY];
  const float *rstd = (const float *)a.p[RMSNORM_BWD_P_RSTD];
  T4 *dx = (T4 *)a.p[RMSNORM_BWD_P_DX];
  float *dg = (float *)a.p[RMSNORM_BWD_P_DG_PART];
  const long long N = a.i[RMSNORM_BWD_I_N], D = a.i[RMSNORM_BWD_I_D],
                  P = a.i[RMSNORM_BWD_I_P] < 1 ? 1 : a.i[RMSNORM_BWD_I_P];
  const bool acc = a.i[RMSNORM_BWD_I_ACC] != 0;
  __shared__ float sh[RPB > 1 ? G * K * V : 32];
  const bool vx = vec_ok(x, D), vg = vec_ok(g, D), vdy = vec_ok(dy, D), vdx = vec_ok(dx, D);
  const float invD = 1.f / (float)D;
  float gv[K][V];
  load_or(g, D, 1.f, gv, vg);
  for (long long c = blockIdx.x; c < P; c += gridDim.x) {
    long long lo, hi;
    chunk(N, P, c, lo, hi);
    float dgv[K][V];
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) dgv[k][e] = 0.f;
    for (long long row = lo + group(); row - group() < hi; row += RPB) {
      const bool live = row < hi;
      float xv[K][V], dyv[K][V];
      load(x, live ? row * D : 0, live ? D : 0, xv, vx);
      load(dy, live ? row * D : 0, live ? D : 0, dyv, vdy);
      const float r = live ? rstd[row] : 0.f;
      float s = 0.f;
#pragma unroll
      for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < V; e++) {
          xv[k][e] *= r;                                    // xhat
          dgv[k][e] = fmaf(dyv[k][e], xv[k][e], dgv[k][e]); // dg += dy*xhat
          dyv[k][e] *= gv[k][e];                            // g*dy
          s = fmaf(dyv[k][e], xv[k][e], s);
        }
      s = sum(s, sh) * invD;
      if (!live || !dx) continue;
#pragma unroll
      for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < V; e++) dyv[k][e] = r * (dyv[k][e] - xv[k][e] * s);
      if constexpr (kCast) { // RMSNORM_BWD_CAST: dx as stored (rounded to T4), then dx_cast = (T6)dx
        T6 *dxc = (T6 *)a.p[RMSNORM_BWD_CAST_P_DX_CAST];
        if (acc) {
          float o[K][V];
          load(dx, row * D, D, o, vdx);
#pragma unroll
          for (int k = 0; k < K; k++)
#pragma unroll
            for (int e = 0; e < V; e++) dyv[k][e] += o[k][e];
        }
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
          for (int e = 0; e < V; e++) dyv[k][e] = ddp_f(ddp_to<T4>(dyv[k][e]));
        store(dx, row * D, D, dyv, vdx, false);
        store(dxc, row * D, D, dyv, vec_ok(dxc, D), false);
      } else {
        store(dx, row * D, D, dyv, vdx, acc);
      }
    }
    write_partial(dg ? dg + c * D : nullptr, D, dgv, sh);
  }
}
#endif

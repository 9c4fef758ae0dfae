// templates/mse.cu: mean-squared-error rows and gradient (plan/ops.h MSE), reference
// runtime/ref/ref_mse.c (ref_mse).
//   loss_rows[n] = sum_c (pred - target)^2, dpred = scale * (pred - target) (dpred may alias pred)
// One warp per row, 8 rows per block (grid-stride); null loss_rows / dpred are skipped.
// Types: T0 pred, T1 target, T2 loss_rows (f32), T3 dpred. Spec: DDP_BLOCK.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif

#ifdef DDP_ENTRY_mse
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_mse(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *pred = (const T0 *)a.p[MSE_P_PRED];
  const T1 *tgt = (const T1 *)a.p[MSE_P_TARGET];
  float *loss = (float *)a.p[MSE_P_LOSS_ROWS];
  T3 *dp = (T3 *)a.p[MSE_P_DPRED];
  const long long N = a.i[MSE_I_N], M = a.i[MSE_I_M];
  const float scale = a.f[MSE_F_SCALE];
  constexpr int RPB = DDP_BLOCK / 32;
  const int lane = threadIdx.x & 31;
  for (long long n = (long long)blockIdx.x * RPB + (threadIdx.x >> 5); n < N; n += (long long)gridDim.x * RPB) {
    float s = 0.f;
    for (long long c = lane; c < M; c += 32) {
      const float d = ddp_f(pred[n * M + c]) - ddp_f(tgt[n * M + c]);
      s = fmaf(d, d, s);
      if (dp) dp[n * M + c] = ddp_to<T3>(scale * d);
    }
    s = ddp_warp_sum(s);
    if (loss && lane == 0) loss[n] = s;
  }
}
#endif

/* runtime/ref/ref_mse.c: MSE (plan/ops.h): loss_rows[n] = sum_c (pred - target)^2 and
 * dpred = scale * (pred - target) (the factor 2 of the derivative is the compiler's, inside scale).
 * A null loss_rows or dpred is skipped; dpred may alias pred. */
#include "ref_ops.h"
#include "ref_util.h"

void ref_mse(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[MSE_I_N], M = a->i[MSE_I_M];
  const double scale = a->f[MSE_F_SCALE];
  for (int64_t n = 0; n < N; n++) {
    double s = 0.0;
    for (int64_t c = 0; c < M; c++) {
      const double d = ddp_load(a->p[MSE_P_PRED], dt[MSE_P_PRED], n * M + c) -
                       ddp_load(a->p[MSE_P_TARGET], dt[MSE_P_TARGET], n * M + c);
      s += d * d;
      if (a->p[MSE_P_DPRED]) ddp_store(a->p[MSE_P_DPRED], dt[MSE_P_DPRED], n * M + c, scale * d);
    }
    if (a->p[MSE_P_LOSS_ROWS]) ddp_store(a->p[MSE_P_LOSS_ROWS], dt[MSE_P_LOSS_ROWS], n, s);
  }
}

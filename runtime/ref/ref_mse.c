/* runtime/ref/ref_mse.c: MSE (plan/ops.h): loss_rows[n] = sum_c (pred - target)^2 and
 * dpred = scale * (pred - target) (the factor 2 of the derivative is the compiler's, inside scale).
 * A null loss_rows or dpred is skipped; dpred may alias pred. */
#include "ref_ops.h"
#include "ref_util.h"

void ref_mse(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[0], M = a->i[1];
  const double scale = a->f[0];
  for (int64_t n = 0; n < N; n++) {
    double s = 0.0;
    for (int64_t c = 0; c < M; c++) {
      const double d = ddp_load(a->p[0], dt[0], n * M + c) - ddp_load(a->p[1], dt[1], n * M + c);
      s += d * d;
      if (a->p[3]) ddp_store(a->p[3], dt[3], n * M + c, scale * d);
    }
    if (a->p[2]) ddp_store(a->p[2], dt[2], n, s);
  }
}

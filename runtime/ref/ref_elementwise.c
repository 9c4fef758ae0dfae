/* runtime/ref/ref_elementwise.c: the elementwise ops of plan/ops.h: CAST (out = in), ADD (out = a + b),
 * SCALE (x *= s), BIAS_ADD (y[n,m] += b[m]), RELU_FWD (y = max(x, 0), NaN kept), RELU_BWD
 * (dx (+)= dy where y > 0, else 0). Outputs may alias inputs element for element. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>

void ref_cast(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[0]; i++) ddp_store(a->p[1], dt[1], i, ddp_load(a->p[0], dt[0], i));
}

void ref_add(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[0]; i++)
    ddp_store(a->p[2], dt[2], i, ddp_load(a->p[0], dt[0], i) + ddp_load(a->p[1], dt[1], i));
}

void ref_scale(const ddp_kargs *a, const uint8_t *dt) {
  const double s = a->f[0];
  for (int64_t i = 0; i < a->i[0]; i++) ddp_store(a->p[0], dt[0], i, s * ddp_load(a->p[0], dt[0], i));
}

void ref_bias_add(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[0], M = a->i[1];
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      ddp_store(a->p[0], dt[0], n * M + m, ddp_load(a->p[0], dt[0], n * M + m) + ddp_load(a->p[1], dt[1], m));
}

void ref_relu_fwd(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[0]; i++) {
    const double x = ddp_load(a->p[0], dt[0], i);
    ddp_store(a->p[1], dt[1], i, x > 0.0 || isnan(x) ? x : 0.0);
  }
}

void ref_relu_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int acc = a->i[1] != 0;
  for (int64_t i = 0; i < a->i[0]; i++) {
    const double g = ddp_load(a->p[0], dt[0], i) > 0.0 ? ddp_load(a->p[1], dt[1], i) : 0.0;
    ddp_store(a->p[2], dt[2], i, acc ? ddp_load(a->p[2], dt[2], i) + g : g);
  }
}

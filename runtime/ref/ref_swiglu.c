/* runtime/ref/ref_swiglu.c: SWIGLU_FWD / SWIGLU_BWD (plan/ops.h) on the fused [N, 2F] projection
 * ab = [a | b]: h = silu(a) * b with silu(a) = a * sigmoid(a); backward
 *   da = dh * b * sig(a) * (1 + a * (1 - sig(a))),  db = dh * silu(a)   (dab overwritten).
 * Each element's a and b are read before its da, db are written, so dab may alias ab. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

void ref_swiglu_fwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[SWIGLU_FWD_I_N], F = a->i[SWIGLU_FWD_I_F];
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < F; j++) {
      const double x = ddp_load(a->p[SWIGLU_FWD_P_AB], dt[SWIGLU_FWD_P_AB], n * 2 * F + j);
      const double y = ddp_load(a->p[SWIGLU_FWD_P_AB], dt[SWIGLU_FWD_P_AB], n * 2 * F + F + j);
      ddp_store(a->p[SWIGLU_FWD_P_H], dt[SWIGLU_FWD_P_H], n * F + j, x * sigmoid(x) * y);
    }
}

void ref_swiglu_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[SWIGLU_BWD_I_N], F = a->i[SWIGLU_BWD_I_F];
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < F; j++) {
      const int64_t ia = n * 2 * F + j, ib = ia + F;
      const double x = ddp_load(a->p[SWIGLU_BWD_P_AB], dt[SWIGLU_BWD_P_AB], ia),
                   y = ddp_load(a->p[SWIGLU_BWD_P_AB], dt[SWIGLU_BWD_P_AB], ib);
      const double dh = ddp_load(a->p[SWIGLU_BWD_P_DH], dt[SWIGLU_BWD_P_DH], n * F + j);
      const double s = sigmoid(x);
      ddp_store(a->p[SWIGLU_BWD_P_DAB], dt[SWIGLU_BWD_P_DAB], ia, dh * y * s * (1.0 + x * (1.0 - s)));
      ddp_store(a->p[SWIGLU_BWD_P_DAB], dt[SWIGLU_BWD_P_DAB], ib, dh * x * s);
    }
}

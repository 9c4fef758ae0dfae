/* runtime/ref/ref_rope.c: ROPE (plan/ops.h), rotary position embedding in place. For each (b, t, h) the
 * pairs (x[2m], x[2m+1]) of the head rotate by angle = fl32(fl32(t) * inv_freq[m]) (the product rounded to
 * f32 as the GPU computes it; cos/sin then in double):
 *   x0' = x0 cos - x1 sin,  x1' = x0 sin + x1 cos.
 * inverse = 1 rotates by -angle: the transpose of the forward rotation, i.e. its backward (adjoint). */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

void ref_rope(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t B = a->i[ROPE_I_B], T = a->i[ROPE_I_T], H = a->i[ROPE_I_H], Dh = a->i[ROPE_I_DH],
                stride = a->i[ROPE_I_STRIDE];
  const int64_t half = Dh / 2;
  const double sign = a->i[ROPE_I_INVERSE] ? -1.0 : 1.0;
  void *x = a->p[ROPE_P_X];
  double *cs = ref_alloc((size_t)half, sizeof *cs);
  double *sn = ref_alloc((size_t)half, sizeof *sn);
  for (int64_t t = 0; t < T; t++) {
    for (int64_t m = 0; m < half; m++) {
      float inv = (float)ddp_load(a->p[ROPE_P_INV_FREQ], dt[ROPE_P_INV_FREQ], m);
      float angle = (float)t * inv;
      cs[m] = cos((double)angle);
      sn[m] = sign * sin((double)angle);
    }
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++) {
        const int64_t base = (b * T + t) * stride + h * Dh;
        for (int64_t m = 0; m < half; m++) {
          const double x0 = ddp_load(x, dt[ROPE_P_X], base + 2 * m), x1 = ddp_load(x, dt[ROPE_P_X], base + 2 * m + 1);
          ddp_store(x, dt[ROPE_P_X], base + 2 * m, x0 * cs[m] - x1 * sn[m]);
          ddp_store(x, dt[ROPE_P_X], base + 2 * m + 1, x0 * sn[m] + x1 * cs[m]);
        }
      }
  }
  free(cs);
  free(sn);
}

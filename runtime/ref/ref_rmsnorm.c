/* runtime/ref/ref_rmsnorm.c: RMSNORM_FWD / RMSNORM_BWD / RMSNORM_BWD_CAST (plan/ops.h).
 *   forward:  rstd = 1/sqrt(mean(x^2) + eps), y = x * rstd * g
 *   backward: xhat = x*rstd, dx (+)= rstd * (g*dy - xhat * mean(g*dy*xhat)),
 *             dg_part[c] = sum over the rows of chunk c of dy*xhat (P chunks of ceil(N/P) rows)
 *   fused:    RMSNORM_BWD_CAST = RMSNORM_BWD, then dx_cast = dx as stored (ref_cast's arithmetic: load, store)
 * The forward stores rstd in its buffer's dtype (f32: "statistics in f32") and computes y with the stored
 * value, so forward and backward use the same rstd. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

void ref_rmsnorm_fwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[RMSNORM_FWD_I_N], D = a->i[RMSNORM_FWD_I_D];
  const double eps = a->f[RMSNORM_FWD_F_EPS];
  double *x = ref_alloc((size_t)D, sizeof *x);
  double *g = ref_alloc((size_t)D, sizeof *g);
  ref_load_row(a->p[RMSNORM_FWD_P_G], dt[RMSNORM_FWD_P_G], 0, 1, D, g);
  for (int64_t n = 0; n < N; n++) {
    ref_load_row(a->p[RMSNORM_FWD_P_X], dt[RMSNORM_FWD_P_X], n * D, 1, D, x);
    double ss = 0.0;
    for (int64_t j = 0; j < D; j++) ss += x[j] * x[j];
    double r = 1.0 / sqrt(ss / (double)D + eps);
    if (a->p[RMSNORM_FWD_P_RSTD]) {
      ddp_store(a->p[RMSNORM_FWD_P_RSTD], dt[RMSNORM_FWD_P_RSTD], n, r);
      r = ddp_load(a->p[RMSNORM_FWD_P_RSTD], dt[RMSNORM_FWD_P_RSTD], n);
    }
    for (int64_t j = 0; j < D; j++) x[j] = x[j] * r * g[j];
    ref_store_row(a->p[RMSNORM_FWD_P_Y], dt[RMSNORM_FWD_P_Y], n * D, D, x, 0);
  }
  free(x);
  free(g);
}

void ref_rmsnorm_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[RMSNORM_BWD_I_N], D = a->i[RMSNORM_BWD_I_D], P = ref_parts(a->i[RMSNORM_BWD_I_P]);
  const int acc = a->i[RMSNORM_BWD_I_ACC] != 0;
  double *x = ref_alloc((size_t)D, sizeof *x);
  double *dy = ref_alloc((size_t)D, sizeof *dy);
  double *g = ref_alloc((size_t)D, sizeof *g);
  double *dg = ref_alloc((size_t)D, sizeof *dg);
  ref_load_row(a->p[RMSNORM_BWD_P_G], dt[RMSNORM_BWD_P_G], 0, 1, D, g);
  for (int64_t c = 0; c < P; c++) {
    int64_t lo, hi;
    ref_chunk(N, P, c, &lo, &hi);
    for (int64_t j = 0; j < D; j++) dg[j] = 0.0;
    for (int64_t n = lo; n < hi; n++) {
      const double r = ddp_load(a->p[RMSNORM_BWD_P_RSTD], dt[RMSNORM_BWD_P_RSTD], n);
      ref_load_row(a->p[RMSNORM_BWD_P_X], dt[RMSNORM_BWD_P_X], n * D, 1, D, x);
      ref_load_row(a->p[RMSNORM_BWD_P_DY], dt[RMSNORM_BWD_P_DY], n * D, 1, D, dy);
      double dot = 0.0;
      for (int64_t j = 0; j < D; j++) {
        x[j] *= r; /* xhat */
        dg[j] += dy[j] * x[j];
        dot += g[j] * dy[j] * x[j];
      }
      const double m = dot / (double)D;
      if (a->p[RMSNORM_BWD_P_DX]) {
        for (int64_t j = 0; j < D; j++) dy[j] = r * (g[j] * dy[j] - x[j] * m);
        ref_store_row(a->p[RMSNORM_BWD_P_DX], dt[RMSNORM_BWD_P_DX], n * D, D, dy, acc);
      }
    }
    if (a->p[RMSNORM_BWD_P_DG_PART])
      ref_store_row(a->p[RMSNORM_BWD_P_DG_PART], dt[RMSNORM_BWD_P_DG_PART], c * D, D, dg, 0);
  }
  free(x);
  free(dy);
  free(g);
  free(dg);
}

void ref_rmsnorm_bwd_cast(const ddp_kargs *a, const uint8_t *dt) {
  ref_rmsnorm_bwd(a, dt);
  const int64_t n = a->i[RMSNORM_BWD_I_N] * a->i[RMSNORM_BWD_I_D];
  for (int64_t i = 0; i < n; i++)
    ddp_store(a->p[RMSNORM_BWD_CAST_P_DX_CAST], dt[RMSNORM_BWD_CAST_P_DX_CAST], i,
              ddp_load(a->p[RMSNORM_BWD_P_DX], dt[RMSNORM_BWD_P_DX], i));
}

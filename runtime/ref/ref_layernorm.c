/* runtime/ref/ref_layernorm.c: LAYERNORM_FWD / LAYERNORM_BWD (plan/ops.h), PyTorch nn.LayerNorm over the
 * last dimension with the biased variance:
 *   forward:  mean = sum x / D, rstd = 1/sqrt(sum (x-mean)^2 / D + eps), y = (x-mean)*rstd*w + b
 *   backward: xhat = (x-mean)*rstd, gw = dy*w, dx (+)= rstd * (gw - mean(gw) - xhat*mean(gw*xhat)),
 *             dw_part[c] = sum over chunk c of dy*xhat, db_part[c] = sum over chunk c of dy.
 * mean and rstd are stored in their buffers' dtype and y uses the stored values. A null w (b) acts as
 * ones (zeros); a null dx, dw_part or db_part is skipped. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

static void load_or(const void *p, int dt, int64_t D, double fill, double *dst) {
  if (p)
    ref_load_row(p, dt, 0, 1, D, dst);
  else
    for (int64_t j = 0; j < D; j++) dst[j] = fill;
}

void ref_layernorm_fwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[LAYERNORM_FWD_I_N], D = a->i[LAYERNORM_FWD_I_D];
  const double eps = a->f[LAYERNORM_FWD_F_EPS];
  double *x = ref_alloc((size_t)D, sizeof *x), *w = ref_alloc((size_t)D, sizeof *w);
  double *bias = ref_alloc((size_t)D, sizeof *bias);
  load_or(a->p[LAYERNORM_FWD_P_W], dt[LAYERNORM_FWD_P_W], D, 1.0, w);
  load_or(a->p[LAYERNORM_FWD_P_B], dt[LAYERNORM_FWD_P_B], D, 0.0, bias);
  for (int64_t n = 0; n < N; n++) {
    ref_load_row(a->p[LAYERNORM_FWD_P_X], dt[LAYERNORM_FWD_P_X], n * D, 1, D, x);
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < D; j++) mean += x[j];
    mean /= (double)D;
    for (int64_t j = 0; j < D; j++) var += (x[j] - mean) * (x[j] - mean);
    double r = 1.0 / sqrt(var / (double)D + eps);
    if (a->p[LAYERNORM_FWD_P_MEAN]) {
      ddp_store(a->p[LAYERNORM_FWD_P_MEAN], dt[LAYERNORM_FWD_P_MEAN], n, mean);
      mean = ddp_load(a->p[LAYERNORM_FWD_P_MEAN], dt[LAYERNORM_FWD_P_MEAN], n);
    }
    if (a->p[LAYERNORM_FWD_P_RSTD]) {
      ddp_store(a->p[LAYERNORM_FWD_P_RSTD], dt[LAYERNORM_FWD_P_RSTD], n, r);
      r = ddp_load(a->p[LAYERNORM_FWD_P_RSTD], dt[LAYERNORM_FWD_P_RSTD], n);
    }
    for (int64_t j = 0; j < D; j++) x[j] = (x[j] - mean) * r * w[j] + bias[j];
    ref_store_row(a->p[LAYERNORM_FWD_P_Y], dt[LAYERNORM_FWD_P_Y], n * D, D, x, 0);
  }
  free(x);
  free(w);
  free(bias);
}

void ref_layernorm_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[LAYERNORM_BWD_I_N], D = a->i[LAYERNORM_BWD_I_D], P = ref_parts(a->i[LAYERNORM_BWD_I_P]);
  const int acc = a->i[LAYERNORM_BWD_I_ACC] != 0;
  double *x = ref_alloc((size_t)D, sizeof *x), *dy = ref_alloc((size_t)D, sizeof *dy);
  double *w = ref_alloc((size_t)D, sizeof *w), *dw = ref_alloc((size_t)D, sizeof *dw);
  double *db = ref_alloc((size_t)D, sizeof *db);
  load_or(a->p[LAYERNORM_BWD_P_W], dt[LAYERNORM_BWD_P_W], D, 1.0, w);
  for (int64_t c = 0; c < P; c++) {
    int64_t lo, hi;
    ref_chunk(N, P, c, &lo, &hi);
    for (int64_t j = 0; j < D; j++) dw[j] = db[j] = 0.0;
    for (int64_t n = lo; n < hi; n++) {
      const double mean = ddp_load(a->p[LAYERNORM_BWD_P_MEAN], dt[LAYERNORM_BWD_P_MEAN], n),
                   r = ddp_load(a->p[LAYERNORM_BWD_P_RSTD], dt[LAYERNORM_BWD_P_RSTD], n);
      ref_load_row(a->p[LAYERNORM_BWD_P_X], dt[LAYERNORM_BWD_P_X], n * D, 1, D, x);
      ref_load_row(a->p[LAYERNORM_BWD_P_DY], dt[LAYERNORM_BWD_P_DY], n * D, 1, D, dy);
      double sg = 0.0, sgx = 0.0;
      for (int64_t j = 0; j < D; j++) {
        x[j] = (x[j] - mean) * r; /* xhat */
        dw[j] += dy[j] * x[j];
        db[j] += dy[j];
        sg += dy[j] * w[j];
        sgx += dy[j] * w[j] * x[j];
      }
      sg /= (double)D;
      sgx /= (double)D;
      if (a->p[LAYERNORM_BWD_P_DX]) {
        for (int64_t j = 0; j < D; j++) dy[j] = r * (dy[j] * w[j] - sg - x[j] * sgx);
        ref_store_row(a->p[LAYERNORM_BWD_P_DX], dt[LAYERNORM_BWD_P_DX], n * D, D, dy, acc);
      }
    }
    if (a->p[LAYERNORM_BWD_P_DW_PART])
      ref_store_row(a->p[LAYERNORM_BWD_P_DW_PART], dt[LAYERNORM_BWD_P_DW_PART], c * D, D, dw, 0);
    if (a->p[LAYERNORM_BWD_P_DB_PART])
      ref_store_row(a->p[LAYERNORM_BWD_P_DB_PART], dt[LAYERNORM_BWD_P_DB_PART], c * D, D, db, 0);
  }
  free(x);
  free(dy);
  free(w);
  free(dw);
  free(db);
}

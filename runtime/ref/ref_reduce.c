/* runtime/ref/ref_reduce.c: REDUCE_ROWS (out[d] (+)= scale * sum_p in[p,d], e.g. folding a partial table
 * into a weight gradient) and SUM (out[0] (+)= scale * sum_i in[i]). Sums run in double in index order. */
#include "ref_ops.h"
#include "ref_util.h"
#include <stdlib.h>

void ref_reduce_rows(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t P = a->i[REDUCE_ROWS_I_P], D = a->i[REDUCE_ROWS_I_D];
  const int acc = a->i[REDUCE_ROWS_I_ACC] != 0;
  const double scale = a->f[REDUCE_ROWS_F_SCALE];
  double *sum = ref_alloc((size_t)D, sizeof *sum);
  double *row = ref_alloc((size_t)D, sizeof *row);
  for (int64_t p = 0; p < P; p++) {
    ref_load_row(a->p[REDUCE_ROWS_P_IN], dt[REDUCE_ROWS_P_IN], p * D, 1, D, row);
    for (int64_t j = 0; j < D; j++) sum[j] += row[j];
  }
  for (int64_t j = 0; j < D; j++) sum[j] *= scale;
  ref_store_row(a->p[REDUCE_ROWS_P_OUT], dt[REDUCE_ROWS_P_OUT], 0, D, sum, acc);
  free(sum);
  free(row);
}

void ref_sum(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[SUM_I_N];
  const int acc = a->i[SUM_I_ACC] != 0;
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += ddp_load(a->p[SUM_P_IN], dt[SUM_P_IN], i);
  s *= (double)a->f[SUM_F_SCALE];
  ref_store_row(a->p[SUM_P_OUT], dt[SUM_P_OUT], 0, 1, &s, acc);
}

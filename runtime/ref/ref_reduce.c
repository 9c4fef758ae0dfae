/* runtime/ref/ref_reduce.c: REDUCE_ROWS (out[d] (+)= scale * sum_p in[p,d], e.g. folding a partial table
 * into a weight gradient) and SUM (out[0] (+)= scale * sum_i in[i]). Sums run in double in index order. */
#include "ref_ops.h"
#include "ref_util.h"
#include <stdlib.h>

void ref_reduce_rows(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t P = a->i[0], D = a->i[1];
  const int acc = a->i[2] != 0;
  const double scale = a->f[0];
  double *sum = ref_alloc((size_t)D, sizeof *sum);
  double *row = ref_alloc((size_t)D, sizeof *row);
  for (int64_t p = 0; p < P; p++) {
    ref_load_row(a->p[0], dt[0], p * D, 1, D, row);
    for (int64_t j = 0; j < D; j++) sum[j] += row[j];
  }
  for (int64_t j = 0; j < D; j++) sum[j] *= scale;
  ref_store_row(a->p[1], dt[1], 0, D, sum, acc);
  free(sum);
  free(row);
}

void ref_sum(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[0];
  const int acc = a->i[1] != 0;
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += ddp_load(a->p[0], dt[0], i);
  s *= (double)a->f[0];
  ref_store_row(a->p[1], dt[1], 0, 1, &s, acc);
}

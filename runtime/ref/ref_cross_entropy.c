/* runtime/ref/ref_cross_entropy.c: XENT (plan/ops.h), per-row cross-entropy with max subtraction:
 *   lse = max + log(sum exp(logit - max)), loss_rows[n] = lse - logit[target],
 *   dlogits = (softmax - onehot(target)) * scale.
 * Each row is read into scratch before any of it is written, so dlogits may alias logits. A null
 * loss_rows or dlogits is skipped. A target outside [0, V) gives a NaN loss row (and no onehot term). */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

void ref_xent(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[XENT_I_N], V = a->i[XENT_I_V];
  const double scale = a->f[XENT_F_SCALE];
  double *x = ref_alloc((size_t)V, sizeof *x);
  for (int64_t n = 0; n < N; n++) {
    ref_load_row(a->p[XENT_P_LOGITS], dt[XENT_P_LOGITS], n * V, 1, V, x);
    const int64_t tgt = ref_index(a->p[XENT_P_TARGETS], dt[XENT_P_TARGETS], n, V);
    const int valid = tgt >= 0 && tgt < V;
    double mx = -INFINITY;
    for (int64_t v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
    double sum = 0.0;
    for (int64_t v = 0; v < V; v++) sum += exp(x[v] - mx);
    const double lse = mx + log(sum);
    if (a->p[XENT_P_LOSS_ROWS]) ddp_store(a->p[XENT_P_LOSS_ROWS], dt[XENT_P_LOSS_ROWS], n, valid ? lse - x[tgt] : NAN);
    if (a->p[XENT_P_DLOGITS]) {
      for (int64_t v = 0; v < V; v++) x[v] = exp(x[v] - lse) * scale;
      if (valid) x[tgt] -= scale;
      ref_store_row(a->p[XENT_P_DLOGITS], dt[XENT_P_DLOGITS], n * V, V, x, 0);
    }
  }
  free(x);
}

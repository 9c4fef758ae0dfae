/* runtime/ref/ref_cross_entropy.c: XENT (plan/ops.h), per-row cross-entropy with max subtraction:
 *   lse = max + log(sum exp(logit - max)), loss_rows[n] = lse - logit[target],
 *   dlogits = (softmax - onehot(target)) * scale.
 * Each row is read into scratch before any of it is written, so dlogits may alias logits. A null
 * loss_rows or dlogits is skipped. A target outside [0, V) gives a NaN loss row (and no onehot term).
 *
 * XENT_VP_STATS and XENT_VP, the vocabulary-parallel cross-entropy (each rank holds the columns
 * [vfirst, vfirst + V) of vtotal): the stats stats[n] = (lse of the rank's row, logit[target - vfirst] when
 * vfirst <= target < vfirst + V else 0); then, from every rank's stats stats[p][n][.] (p < parts, rank
 * order), lse = max_p lse_p + log(sum_p exp(lse_p - max)) and tgt = sum_p tgt_p in part order,
 * loss_rows[n] = lse - tgt (NaN for a target outside [0, vtotal)),
 * dlogits[n][c] = exp(logit[n][c] - lse) * scale - (c + vfirst == target ? scale : 0). In double; the stats
 * are stored in their buffer's dtype (f32 in plans) and read back from it. */
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

/* lse of row x[0..V) in double, with max subtraction (as ref_xent). */
static double row_lse(const double *x, int64_t V) {
  double mx = -INFINITY;
  for (int64_t v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
  double sum = 0.0;
  for (int64_t v = 0; v < V; v++) sum += exp(x[v] - mx);
  return mx + log(sum);
}

/* The target's column in [vfirst, vfirst + V), local (target - vfirst), or -1. */
static int64_t local_target(const void *p, int dt, int64_t n, int64_t vfirst, int64_t V) {
  const int64_t t = ref_index(p, dt, n, vfirst + V); /* -1 outside [0, vfirst + V) */
  return t >= vfirst ? t - vfirst : -1;
}

void ref_xent_vp_stats(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[XENT_VP_STATS_I_N], V = a->i[XENT_VP_STATS_I_V], vfirst = a->i[XENT_VP_STATS_I_VFIRST];
  double *x = ref_alloc((size_t)V, sizeof *x);
  for (int64_t n = 0; n < N; n++) {
    ref_load_row(a->p[XENT_VP_STATS_P_LOGITS], dt[XENT_VP_STATS_P_LOGITS], n * V, 1, V, x);
    const int64_t lt = local_target(a->p[XENT_VP_STATS_P_TARGETS], dt[XENT_VP_STATS_P_TARGETS], n, vfirst, V);
    ddp_store(a->p[XENT_VP_STATS_P_STATS], dt[XENT_VP_STATS_P_STATS], 2 * n, row_lse(x, V));
    ddp_store(a->p[XENT_VP_STATS_P_STATS], dt[XENT_VP_STATS_P_STATS], 2 * n + 1, lt >= 0 ? x[lt] : 0.0);
  }
  free(x);
}

void ref_xent_vp(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[XENT_VP_I_N], V = a->i[XENT_VP_I_V], vfirst = a->i[XENT_VP_I_VFIRST];
  const int64_t P = a->i[XENT_VP_I_PARTS], vtotal = a->i[XENT_VP_I_VTOTAL];
  const double scale = a->f[XENT_VP_F_SCALE];
  const void *st = a->p[XENT_VP_P_STATS];
  const int sdt = dt[XENT_VP_P_STATS];
  double *x = ref_alloc((size_t)V, sizeof *x);
  for (int64_t n = 0; n < N; n++) {
    double mx = -INFINITY, sum = 0.0, tgt = 0.0;
    for (int64_t p = 0; p < P; p++) {
      const double l = ddp_load(st, sdt, (p * N + n) * 2);
      mx = l > mx ? l : mx;
    }
    for (int64_t p = 0; p < P; p++) {
      sum += exp(ddp_load(st, sdt, (p * N + n) * 2) - mx);
      tgt += ddp_load(st, sdt, (p * N + n) * 2 + 1);
    }
    const double lse = mx + log(sum);
    const int valid = ref_index(a->p[XENT_VP_P_TARGETS], dt[XENT_VP_P_TARGETS], n, vtotal) >= 0;
    if (a->p[XENT_VP_P_LOSS_ROWS]) ddp_store(a->p[XENT_VP_P_LOSS_ROWS], dt[XENT_VP_P_LOSS_ROWS], n, valid ? lse - tgt : NAN);
    if (a->p[XENT_VP_P_DLOGITS]) {
      ref_load_row(a->p[XENT_VP_P_LOGITS], dt[XENT_VP_P_LOGITS], n * V, 1, V, x);
      const int64_t lt = local_target(a->p[XENT_VP_P_TARGETS], dt[XENT_VP_P_TARGETS], n, vfirst, V);
      for (int64_t v = 0; v < V; v++) x[v] = exp(x[v] - lse) * scale;
      if (lt >= 0) x[lt] -= scale;
      ref_store_row(a->p[XENT_VP_P_DLOGITS], dt[XENT_VP_P_DLOGITS], n * V, V, x, 0);
    }
  }
  free(x);
}

/* runtime/ref/ref_attention_naive.c: the softmax steps of the baseline attention path, whose scores and
 * outputs come from GEMMs (plan/ops.h):
 *   ATTN_NAIVE_SOFTMAX:     per row t of each [T, T] score matrix, in place: s = scale * raw on the visible
 *                           keys (j <= t when causal), P = softmax(s) there and 0 on masked keys;
 *                           lse[b,h,t] = max + log sum exp(s - max) (skipped when lse is null)
 *   ATTN_NAIVE_SOFTMAX_BWD: dprobs -> dscores in place: dS_tj = scale * P_tj * (dP_tj - sum_k P_tk dP_tk),
 *                           the gradient with respect to the raw (unscaled) scores. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

void ref_attn_naive_softmax(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t B = a->i[0], T = a->i[1], H = a->i[2];
  const int causal = a->i[8] != 0;
  const double scale = a->f[0];
  double *s = ref_alloc((size_t)T, sizeof *s);
  for (int64_t bh = 0; bh < B * H; bh++)
    for (int64_t t = 0; t < T; t++) {
      const int64_t off = (bh * T + t) * T, nk = causal ? t + 1 : T;
      ref_load_row(a->p[0], dt[0], off, 1, T, s);
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < nk; j++) {
        s[j] *= scale;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int64_t j = 0; j < nk; j++) sum += exp(s[j] - mx);
      const double lse = mx + log(sum);
      for (int64_t j = 0; j < T; j++) s[j] = j < nk ? exp(s[j] - lse) : 0.0;
      ref_store_row(a->p[0], dt[0], off, T, s, 0);
      if (a->p[1]) ddp_store(a->p[1], dt[1], bh * T + t, lse);
    }
  free(s);
}

void ref_attn_naive_softmax_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t B = a->i[0], T = a->i[1], H = a->i[2];
  const double scale = a->f[0];
  double *p = ref_alloc((size_t)T, sizeof *p), *g = ref_alloc((size_t)T, sizeof *g);
  for (int64_t bh = 0; bh < B * H; bh++)
    for (int64_t t = 0; t < T; t++) {
      const int64_t off = (bh * T + t) * T;
      ref_load_row(a->p[0], dt[0], off, 1, T, p);
      ref_load_row(a->p[1], dt[1], off, 1, T, g);
      double dotp = 0.0;
      for (int64_t j = 0; j < T; j++) dotp += p[j] * g[j];
      for (int64_t j = 0; j < T; j++) g[j] = scale * p[j] * (g[j] - dotp);
      ref_store_row(a->p[1], dt[1], off, T, g, 0);
    }
  free(p);
  free(g);
}

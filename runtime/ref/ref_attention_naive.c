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
  const int64_t B = a->i[ATTN_NAIVE_SOFTMAX_I_B], T = a->i[ATTN_NAIVE_SOFTMAX_I_T], H = a->i[ATTN_NAIVE_SOFTMAX_I_H];
  const int causal = a->i[ATTN_NAIVE_SOFTMAX_I_CAUSAL] != 0;
  const double scale = a->f[ATTN_NAIVE_SOFTMAX_F_SCALE];
  double *s = ref_alloc((size_t)T, sizeof *s);
  for (int64_t bh = 0; bh < B * H; bh++)
    for (int64_t t = 0; t < T; t++) {
      const int64_t off = (bh * T + t) * T, nk = causal ? t + 1 : T;
      ref_load_row(a->p[ATTN_NAIVE_SOFTMAX_P_SCORES], dt[ATTN_NAIVE_SOFTMAX_P_SCORES], off, 1, T, s);
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j < nk; j++) {
        s[j] *= scale;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int64_t j = 0; j < nk; j++) sum += exp(s[j] - mx);
      const double lse = mx + log(sum);
      for (int64_t j = 0; j < T; j++) s[j] = j < nk ? exp(s[j] - lse) : 0.0;
      ref_store_row(a->p[ATTN_NAIVE_SOFTMAX_P_SCORES], dt[ATTN_NAIVE_SOFTMAX_P_SCORES], off, T, s, 0);
      if (a->p[ATTN_NAIVE_SOFTMAX_P_LSE])
        ddp_store(a->p[ATTN_NAIVE_SOFTMAX_P_LSE], dt[ATTN_NAIVE_SOFTMAX_P_LSE], bh * T + t, lse);
    }
  free(s);
}

void ref_attn_naive_softmax_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t B = a->i[ATTN_NAIVE_SOFTMAX_BWD_I_B], T = a->i[ATTN_NAIVE_SOFTMAX_BWD_I_T],
                H = a->i[ATTN_NAIVE_SOFTMAX_BWD_I_H];
  const double scale = a->f[ATTN_NAIVE_SOFTMAX_BWD_F_SCALE];
  double *p = ref_alloc((size_t)T, sizeof *p), *g = ref_alloc((size_t)T, sizeof *g);
  for (int64_t bh = 0; bh < B * H; bh++)
    for (int64_t t = 0; t < T; t++) {
      const int64_t off = (bh * T + t) * T;
      ref_load_row(a->p[ATTN_NAIVE_SOFTMAX_BWD_P_PROBS], dt[ATTN_NAIVE_SOFTMAX_BWD_P_PROBS], off, 1, T, p);
      ref_load_row(a->p[ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS], dt[ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS], off, 1, T, g);
      double dotp = 0.0;
      for (int64_t j = 0; j < T; j++) dotp += p[j] * g[j];
      for (int64_t j = 0; j < T; j++) g[j] = scale * p[j] * (g[j] - dotp);
      ref_store_row(a->p[ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS], dt[ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS], off, T, g, 0);
    }
  free(p);
  free(g);
}

/* runtime/ref/ref_embedding.c: EMBED_FWD / EMBED_BWD (plan/ops.h), the token embedding lookup
 * out[n,:] = table[tok[n],:] and its adjoint dtable[v,:] (+)= sum over n with tok[n] = v of dout[n,:].
 * The backward is deterministic: rows are grouped by token with a stable counting sort and each table row
 * is summed in double in token order (n ascending), then rounded once. A token outside [0, V) gives a NaN
 * output row and contributes nothing to the backward.
 * partial = 1 (the vocabulary-parallel embedding): the table holds rows [vfirst, vfirst + V) of the
 * vocabulary, token t is local row t - vfirst, and a token outside them gives a ZERO output row (another
 * rank holds it) and contributes nothing to the backward. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

/* Token n's local row in [0, V) of a table holding rows [vfirst, vfirst + V), or -1. */
static int64_t local_row(const void *p, int dt, int64_t n, int64_t vfirst, int64_t V) {
  const int64_t t = ref_index(p, dt, n, vfirst + V); /* -1 outside [0, vfirst + V) */
  return t >= vfirst ? t - vfirst : -1;
}

void ref_embed_fwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[EMBED_FWD_I_N], D = a->i[EMBED_FWD_I_D], V = a->i[EMBED_FWD_I_V];
  const int partial = a->i[EMBED_FWD_I_PARTIAL] != 0;
  const int64_t vfirst = partial ? a->i[EMBED_FWD_I_VFIRST] : 0;
  double *row = ref_alloc((size_t)D, sizeof *row);
  for (int64_t n = 0; n < N; n++) {
    int64_t tok = local_row(a->p[EMBED_FWD_P_TOKENS], dt[EMBED_FWD_P_TOKENS], n, vfirst, V);
    if (tok < 0)
      for (int64_t j = 0; j < D; j++) row[j] = partial ? 0.0 : NAN;
    else
      ref_load_row(a->p[EMBED_FWD_P_TABLE], dt[EMBED_FWD_P_TABLE], tok * D, 1, D, row);
    ref_store_row(a->p[EMBED_FWD_P_OUT], dt[EMBED_FWD_P_OUT], n * D, D, row, 0);
  }
  free(row);
}

void ref_embed_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[EMBED_BWD_I_N], D = a->i[EMBED_BWD_I_D], V = a->i[EMBED_BWD_I_V];
  const int acc = a->i[EMBED_BWD_I_ACC] != 0;
  const int64_t vfirst = a->i[EMBED_BWD_I_PARTIAL] ? a->i[EMBED_BWD_I_VFIRST] : 0;
  int64_t *start = ref_alloc((size_t)V + 1, sizeof *start); /* counting sort: rows of token v are */
  int64_t *order = ref_alloc((size_t)N + 1, sizeof *order); /* order[start[v] .. start[v+1]) */
  int64_t *fill = ref_alloc((size_t)V + 1, sizeof *fill);
  double *sum = ref_alloc((size_t)D, sizeof *sum);
  double *row = ref_alloc((size_t)D, sizeof *row);
  for (int64_t n = 0; n < N; n++) {
    int64_t tok = local_row(a->p[EMBED_BWD_P_TOKENS], dt[EMBED_BWD_P_TOKENS], n, vfirst, V);
    if (tok >= 0) start[tok + 1]++;
  }
  for (int64_t v = 0; v < V; v++) start[v + 1] += start[v];
  for (int64_t n = 0; n < N; n++) {
    int64_t tok = local_row(a->p[EMBED_BWD_P_TOKENS], dt[EMBED_BWD_P_TOKENS], n, vfirst, V);
    if (tok >= 0) order[start[tok] + fill[tok]++] = n;
  }
  if (!acc) ref_fill_row(a->p[EMBED_BWD_P_DTABLE], dt[EMBED_BWD_P_DTABLE], 0, V * D, 0.0);
  for (int64_t v = 0; v < V; v++) {
    if (start[v] == start[v + 1]) continue;
    if (acc)
      ref_load_row(a->p[EMBED_BWD_P_DTABLE], dt[EMBED_BWD_P_DTABLE], v * D, 1, D, sum);
    else
      for (int64_t j = 0; j < D; j++) sum[j] = 0.0;
    for (int64_t r = start[v]; r < start[v + 1]; r++) {
      ref_load_row(a->p[EMBED_BWD_P_DOUT], dt[EMBED_BWD_P_DOUT], order[r] * D, 1, D, row);
      for (int64_t j = 0; j < D; j++) sum[j] += row[j];
    }
    ref_store_row(a->p[EMBED_BWD_P_DTABLE], dt[EMBED_BWD_P_DTABLE], v * D, D, sum, 0);
  }
  free(start);
  free(order);
  free(fill);
  free(sum);
  free(row);
}

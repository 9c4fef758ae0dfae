/* tests/unit/ref/test_ref_vocab_parallel.c: the vocabulary-parallel reference kernels of tensor parallelism.
 *   XENT_VP_STATS + XENT_VP against XENT on the whole logits: the V columns of each row split over `parts`
 *     ranks (even, uneven, a one-column part), XENT_VP_STATS per part, the stats concatenated in rank order
 *     (what the all-gather hands on), then XENT_VP per part must give XENT's loss rows (the same bits on every
 *     part) and XENT's dlogits columns, for targets inside a part, on a part's first / last column, outside
 *     [0, vtotal) (NaN loss, no onehot); in place (dlogits = logits), with null optional outputs; in f32 as
 *     plans store it; XENT_VP's dlogits against finite differences of the mean loss through both kernels.
 *   EMBED_FWD / EMBED_BWD with partial = 1: the parts' outputs sum to the whole table's lookup (a token
 *     outside a part: a zero row there, outside the vocabulary: zero everywhere), the parts' dtables
 *     concatenated are the whole dtable (acc 0 and 1, same bits: the same order of summation), dtable
 *     against finite differences, and partial = 0 ignores vfirst (today's behaviour, NaN rows). */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXP = 8 };

/* The columns of `parts` ranks: ceil(vtotal / parts) each, the last one the rest (lens given: used as is). */
typedef struct split {
  int P;
  int64_t first[MAXP], len[MAXP];
} split;

static split split_even(int64_t vtotal, int P) {
  split s = {.P = P};
  const int64_t per = (vtotal + P - 1) / P;
  for (int p = 0; p < P; p++) {
    s.first[p] = p * per < vtotal ? p * per : vtotal;
    s.len[p] = s.first[p] + per <= vtotal ? per : vtotal - s.first[p];
  }
  return s;
}

static split split_lens(int P, const int64_t *len) {
  split s = {.P = P};
  for (int p = 0; p < P; p++) s.first[p] = p ? s.first[p - 1] + s.len[p - 1] : 0, s.len[p] = len[p];
  return s;
}

/* ---- calls (every float buffer of dtype fdt: DT_F64 or DT_F32; targets / tokens i32) ---- */

static void xent_call(void *logits, const int32_t *tgt, void *loss, void *dl, int64_t N, int64_t V, float scale,
                      int fdt) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[XENT_P_LOGITS] = logits, k.a.p[XENT_P_TARGETS] = (void *)tgt, k.a.p[XENT_P_LOSS_ROWS] = loss;
  k.a.p[XENT_P_DLOGITS] = dl;
  k.dt[XENT_P_LOGITS] = k.dt[XENT_P_LOSS_ROWS] = k.dt[XENT_P_DLOGITS] = (uint8_t)fdt, k.dt[XENT_P_TARGETS] = DT_I32;
  k.a.i[XENT_I_N] = N, k.a.i[XENT_I_V] = V, k.a.f[XENT_F_SCALE] = scale;
  ref_xent(&k.a, k.dt);
}

static void stats_call(void *logits, const int32_t *tgt, void *stats, int64_t N, int64_t V, int64_t vfirst, int fdt) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[XENT_VP_STATS_P_LOGITS] = logits, k.a.p[XENT_VP_STATS_P_TARGETS] = (void *)tgt;
  k.a.p[XENT_VP_STATS_P_STATS] = stats;
  k.dt[XENT_VP_STATS_P_LOGITS] = k.dt[XENT_VP_STATS_P_STATS] = (uint8_t)fdt, k.dt[XENT_VP_STATS_P_TARGETS] = DT_I32;
  k.a.i[XENT_VP_STATS_I_N] = N, k.a.i[XENT_VP_STATS_I_V] = V, k.a.i[XENT_VP_STATS_I_VFIRST] = vfirst;
  ref_xent_vp_stats(&k.a, k.dt);
}

static void vp_call(void *logits, const int32_t *tgt, void *stats, void *loss, void *dl, int64_t N, int64_t V,
                    int64_t vfirst, int64_t P, int64_t vtotal, float scale, int fdt) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[XENT_VP_P_LOGITS] = logits, k.a.p[XENT_VP_P_TARGETS] = (void *)tgt, k.a.p[XENT_VP_P_STATS] = stats;
  k.a.p[XENT_VP_P_LOSS_ROWS] = loss, k.a.p[XENT_VP_P_DLOGITS] = dl;
  k.dt[XENT_VP_P_LOGITS] = k.dt[XENT_VP_P_STATS] = k.dt[XENT_VP_P_LOSS_ROWS] = k.dt[XENT_VP_P_DLOGITS] = (uint8_t)fdt;
  k.dt[XENT_VP_P_TARGETS] = DT_I32;
  k.a.i[XENT_VP_I_N] = N, k.a.i[XENT_VP_I_V] = V, k.a.i[XENT_VP_I_VFIRST] = vfirst, k.a.i[XENT_VP_I_PARTS] = P;
  k.a.i[XENT_VP_I_VTOTAL] = vtotal, k.a.f[XENT_VP_F_SCALE] = scale;
  ref_xent_vp(&k.a, k.dt);
}

/* Columns [first, first + len) of the rows of x[N, V] (dtype fdt), contiguous. */
static void *cols(const void *x, int64_t N, int64_t V, int64_t first, int64_t len, int fdt) {
  const size_t es = ddp_dtype_size(fdt);
  char *out = malloc((size_t)(N * len) * es + 1);
  for (int64_t n = 0; n < N; n++) memcpy(out + (size_t)(n * len) * es, (const char *)x + (size_t)(n * V + first) * es, (size_t)len * es);
  return out;
}

static double *to_f64(const void *x, int fdt, int64_t n) {
  double *out = gc_zeros((size_t)n);
  for (int64_t i = 0; i < n; i++) out[i] = ddp_load(x, fdt, i);
  return out;
}

/* The same NaN positions, then the rest close (NaN taken as 0). */
static void expect_close_nan(const char *what, const double *got, const double *want, int64_t n, double tol) {
  int same = 1;
  double *g = gc_copy(got, (size_t)n), *w = gc_copy(want, (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(g[i]) != isnan(w[i])) same = 0;
    if (isnan(g[i])) g[i] = 0;
    if (isnan(w[i])) w[i] = 0;
  }
  char m[240];
  snprintf(m, sizeof m, "%.200s: NaN where XENT has NaN", what);
  gc_expect(m, same);
  gc_expect_close(what, g, w, (size_t)n, tol, 1e-300);
  free(g), free(w);
}

/* ---- XENT_VP against XENT ---- */

/* Targets: inside the vocabulary at random, -1 and vtotal (outside: NaN loss), the first and last column
 * of every part. */
static void targets(gc_rng *r, int32_t *tgt, int64_t N, int64_t vtotal, const split *s) {
  for (int64_t n = 0; n < N; n++) tgt[n] = (int32_t)gc_uniform(r, 0, (double)vtotal);
  int64_t k = 0;
  tgt[k++ % N] = -1, tgt[k++ % N] = (int32_t)vtotal;
  for (int p = 0; p < s->P && k + 2 <= N; p++)
    tgt[k++] = (int32_t)s->first[p], tgt[k++] = (int32_t)(s->first[p] + s->len[p] - 1);
}

static void check_split(gc_rng *r, int64_t N, int64_t vtotal, const split *s, int fdt, double tol) {
  char what[200], name[96];
  snprintf(name, sizeof name, "%s vtotal=%lld parts=%d (", ddp_dtype_name(fdt), (long long)vtotal, s->P);
  for (int p = 0; p < s->P; p++)
    snprintf(name + strlen(name), sizeof name - strlen(name), "%s%lld", p ? "," : "", (long long)s->len[p]);
  snprintf(name + strlen(name), sizeof name - strlen(name), ")");
  const size_t es = ddp_dtype_size(fdt);
  const float scale = 1.0f / (float)N;
  int32_t *tgt = malloc(sizeof *tgt * (size_t)N);
  targets(r, tgt, N, vtotal, s);
  double *x64 = gc_rand(r, (size_t)(N * vtotal), -4, 4);
  void *x = malloc((size_t)(N * vtotal) * es), *loss = malloc((size_t)N * es), *dl = malloc((size_t)(N * vtotal) * es);
  for (int64_t i = 0; i < N * vtotal; i++) ddp_store(x, fdt, i, x64[i]);
  xent_call(x, tgt, loss, dl, N, vtotal, scale, fdt);
  double *want_loss = to_f64(loss, fdt, N), *want_dl = to_f64(dl, fdt, N * vtotal);

  void *stats = malloc((size_t)(s->P * N * 2) * es);
  void *part[MAXP];
  for (int p = 0; p < s->P; p++) {
    part[p] = cols(x, N, vtotal, s->first[p], s->len[p], fdt);
    stats_call(part[p], tgt, (char *)stats + (size_t)(p * N * 2) * es, N, s->len[p], s->first[p], fdt);
  }
  /* the stats themselves: (lse of the part's row, the target's logit there or 0) */
  double *st = to_f64(stats, fdt, s->P * N * 2), *want_st = gc_zeros((size_t)(s->P * N * 2));
  for (int p = 0; p < s->P; p++)
    for (int64_t n = 0; n < N; n++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < s->len[p]; c++) mx = fmax(mx, x64[n * vtotal + s->first[p] + c]);
      for (int64_t c = 0; c < s->len[p]; c++) sum += exp(x64[n * vtotal + s->first[p] + c] - mx);
      want_st[(p * N + n) * 2] = mx + log(sum);
      const int64_t t = tgt[n];
      want_st[(p * N + n) * 2 + 1] = t >= s->first[p] && t < s->first[p] + s->len[p] ? ddp_load(x, fdt, n * vtotal + t) : 0;
    }
  if (fdt == DT_F64) {
    snprintf(what, sizeof what, "%s: stats = (part lse, target logit or 0)", name);
    gc_expect_close(what, st, want_st, (size_t)(s->P * N * 2), 1e-14, 1e-300);
  }

  double *loss0 = NULL;
  for (int p = 0; p < s->P; p++) {
    const int64_t V = s->len[p];
    void *lp = malloc((size_t)N * es), *dp = malloc((size_t)(N * V) * es);
    vp_call(part[p], tgt, stats, lp, dp, N, V, s->first[p], s->P, vtotal, scale, fdt);
    double *gl = to_f64(lp, fdt, N), *gd = to_f64(dp, fdt, N * V);
    double *wd = cols(want_dl, N, vtotal, s->first[p], V, DT_F64);
    snprintf(what, sizeof what, "%s part %d: loss_rows = XENT's", name, p);
    expect_close_nan(what, gl, want_loss, N, tol);
    snprintf(what, sizeof what, "%s part %d: dlogits = XENT's columns %lld..%lld", name, p, (long long)s->first[p],
             (long long)(s->first[p] + V - 1));
    gc_expect_close(what, gd, wd, (size_t)(N * V), tol, 1e-300);
    if (!loss0) {
      loss0 = gc_copy(gl, (size_t)N);
    } else {
      snprintf(what, sizeof what, "%s part %d: loss_rows = part 0's bits", name, p);
      gc_expect_bits(what, gl, loss0, (size_t)N * sizeof(double));
    }
    /* in place, and each optional output alone */
    void *inpl = cols(part[p], N, V, 0, V, fdt), *l2 = malloc((size_t)N * es), *d2 = malloc((size_t)(N * V) * es);
    vp_call(inpl, tgt, stats, l2, inpl, N, V, s->first[p], s->P, vtotal, scale, fdt);
    snprintf(what, sizeof what, "%s part %d: dlogits aliasing logits = separate buffer", name, p);
    gc_expect_bits(what, inpl, dp, (size_t)(N * V) * es);
    snprintf(what, sizeof what, "%s part %d: loss with aliasing", name, p);
    gc_expect_bits(what, l2, lp, (size_t)N * es);
    vp_call(part[p], tgt, stats, NULL, d2, N, V, s->first[p], s->P, vtotal, scale, fdt);
    vp_call(part[p], tgt, stats, l2, NULL, N, V, s->first[p], s->P, vtotal, scale, fdt);
    snprintf(what, sizeof what, "%s part %d: null loss_rows / null dlogits change nothing else", name, p);
    gc_expect(what, !memcmp(d2, dp, (size_t)(N * V) * es) && !memcmp(l2, lp, (size_t)N * es));
    free(inpl), free(l2), free(d2), free(wd), free(gl), free(gd), free(lp), free(dp);
  }
  for (int p = 0; p < s->P; p++) free(part[p]);
  free(loss0), free(st), free(want_st), free(stats), free(want_loss), free(want_dl), free(x64), free(x), free(loss),
      free(dl), free(tgt);
}

static void test_xent_vp(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "XENT_VP_STATS + XENT_VP = XENT", seed);
  for (int P = 1; P <= 4; P++) {
    split s = split_even(23, P);
    check_split(&r, 9, 23, &s, DT_F64, 1e-13);
  }
  const int64_t odd[] = {1, 9, 13}, five[] = {4, 4, 4, 4, 1};
  split s = split_lens(3, odd);
  check_split(&r, 9, 23, &s, DT_F64, 1e-13);
  s = split_lens(5, five);
  check_split(&r, 12, 17, &s, DT_F64, 1e-13);
  s = split_even(1000, 4);
  check_split(&r, 5, 1000, &s, DT_F64, 1e-13);
  /* f32 buffers, as plans hold them: the stats rounded to f32 between the kernels */
  s = split_even(23, 3);
  check_split(&r, 9, 23, &s, DT_F32, 2e-6);
  s = split_lens(3, odd);
  check_split(&r, 9, 23, &s, DT_F32, 2e-6);
}

/* Finite differences of the mean loss (rows with a valid target) with respect to part q's logits, the other
 * parts' stats held: XENT_VP_STATS then XENT_VP. */
typedef struct vp_ctx {
  int64_t N, vtotal;
  split s;
  int q;
  double *part, *stats, *loss;
  int32_t *tgt;
} vp_ctx;

static double vp_mean_loss(void *ctx) {
  vp_ctx *c = ctx;
  const int q = c->q;
  stats_call(c->part, c->tgt, c->stats + q * c->N * 2, c->N, c->s.len[q], c->s.first[q], DT_F64);
  vp_call(c->part, c->tgt, c->stats, c->loss, NULL, c->N, c->s.len[q], c->s.first[q], c->s.P, c->vtotal, 0, DT_F64);
  double sum = 0;
  for (int64_t n = 0; n < c->N; n++)
    if (!isnan(c->loss[n])) sum += c->loss[n];
  return sum / (double)c->N;
}

static void test_xent_vp_fd(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "XENT_VP dlogits vs finite differences", seed);
  enum { N = 7, VT = 19 };
  const int64_t lens[] = {6, 8, 5};
  vp_ctx c = {.N = N, .vtotal = VT, .s = split_lens(3, lens)};
  int32_t tgt[N];
  targets(&r, tgt, N, VT, &c.s);
  tgt[0] = 0, tgt[1] = VT - 1; /* valid targets only: a NaN row's dlogits are still softmax * scale (as XENT's) */
  double *x = gc_rand(&r, N * VT, -3, 3), stats[3 * N * 2], loss[N];
  c.tgt = tgt, c.stats = stats, c.loss = loss;
  for (int p = 0; p < 3; p++) {
    double *xp = cols(x, N, VT, c.s.first[p], c.s.len[p], DT_F64);
    stats_call(xp, tgt, stats + p * N * 2, N, c.s.len[p], c.s.first[p], DT_F64);
    free(xp);
  }
  for (int q = 0; q < 3; q++) {
    c.q = q;
    c.part = cols(x, N, VT, c.s.first[q], c.s.len[q], DT_F64);
    double *dl = gc_zeros((size_t)(N * c.s.len[q]));
    vp_call(c.part, tgt, stats, NULL, dl, N, c.s.len[q], c.s.first[q], 3, VT, 1.0f / N, DT_F64);
    for (int64_t i = 0; i < N * c.s.len[q]; i++) dl[i] *= (1.0 / N) / (double)(1.0f / N); /* scale rounded to f32 */
    char what[120];
    snprintf(what, sizeof what, "part %d of 3: dlogits (scale 1/N) vs finite differences of the mean loss", q);
    gc_fd_check(what, vp_mean_loss, &c, c.part, (size_t)(N * c.s.len[q]), dl, 1e-6);
    vp_mean_loss(&c); /* part q's stats of its unperturbed logits again */
    free(dl), free(c.part);
  }
  free(x);
}

/* ---- the vocabulary-parallel embedding ---- */
enum { EN = 16, ED = 5, EVT = 11 };

static void embed_fwd(const int32_t *tok, double *table, double *out, int64_t V, int64_t vfirst, int partial) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[EMBED_FWD_P_TOKENS] = (void *)tok, k.a.p[EMBED_FWD_P_TABLE] = table, k.a.p[EMBED_FWD_P_OUT] = out;
  k.dt[EMBED_FWD_P_TOKENS] = DT_I32;
  k.a.i[EMBED_FWD_I_N] = EN, k.a.i[EMBED_FWD_I_D] = ED, k.a.i[EMBED_FWD_I_V] = V;
  k.a.i[EMBED_FWD_I_VFIRST] = vfirst, k.a.i[EMBED_FWD_I_PARTIAL] = partial;
  ref_embed_fwd(&k.a, k.dt);
}

static void embed_bwd(const int32_t *tok, double *dout, double *dtable, int64_t V, int64_t vfirst, int partial, int acc) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[EMBED_BWD_P_TOKENS] = (void *)tok, k.a.p[EMBED_BWD_P_DOUT] = dout, k.a.p[EMBED_BWD_P_DTABLE] = dtable;
  k.dt[EMBED_BWD_P_TOKENS] = DT_I32;
  k.a.i[EMBED_BWD_I_N] = EN, k.a.i[EMBED_BWD_I_D] = ED, k.a.i[EMBED_BWD_I_V] = V, k.a.i[EMBED_BWD_I_ACC] = acc;
  k.a.i[EMBED_BWD_I_VFIRST] = vfirst, k.a.i[EMBED_BWD_I_PARTIAL] = partial;
  ref_embed_bwd(&k.a, k.dt);
}

typedef struct emb_ctx {
  const int32_t *tok;
  double *table, *out, *R;
  int64_t V, vfirst;
} emb_ctx;

static double emb_loss(void *ctx) {
  emb_ctx *c = ctx;
  embed_fwd(c->tok, c->table, c->out, c->V, c->vfirst, 1);
  return gc_dot(c->out, c->R, EN * ED);
}

static void test_embedding_vp(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "EMBED_FWD / EMBED_BWD partial", seed);
  /* repeats, each part's first and last row, -1 and 11 (outside the vocabulary), row 6 never hit */
  const int32_t tok[EN] = {3, 0, 10, 4, 3, -1, 7, 8, 11, 3, 0, 9, 5, 10, 2, 1};
  const int64_t lens[] = {4, 4, 3};
  const split s = split_lens(3, lens);
  double *table = gc_rand(&r, EVT * ED, -1, 1), *full = gc_zeros(EN * ED), *sum = gc_zeros(EN * ED);
  double *R = gc_rand(&r, EN * ED, -1, 1);
  embed_fwd(tok, table, full, EVT, 0, 0);
  int zero_rows = 1;
  for (int p = 0; p < s.P; p++) {
    double *out = gc_rand(&r, EN * ED, 50, 60); /* garbage: every row must be written */
    embed_fwd(tok, table + s.first[p] * ED, out, s.len[p], s.first[p], 1);
    for (int n = 0; n < EN; n++)
      for (int j = 0; j < ED; j++) {
        const int mine = tok[n] >= s.first[p] && tok[n] < s.first[p] + s.len[p];
        if (!mine && out[n * ED + j] != 0.0) zero_rows = 0;
        sum[n * ED + j] += out[n * ED + j];
      }
    free(out);
  }
  gc_expect("partial: a token outside the part gives a zero row", zero_rows);
  for (int n = 0; n < EN; n++)
    if (tok[n] < 0 || tok[n] >= EVT)
      for (int j = 0; j < ED; j++) full[n * ED + j] = 0; /* outside the vocabulary: zero in every part */
  gc_expect_bits("partial: the parts' outputs sum to the whole lookup", sum, full, EN * ED * sizeof(double));

  /* backward: the parts' dtables are the whole one's rows, acc 0 (garbage overwritten) and acc 1 */
  double *want = gc_zeros(EVT * ED), *got = gc_rand(&r, EVT * ED, 50, 60);
  embed_bwd(tok, R, want, EVT, 0, 0, 0);
  for (int p = 0; p < s.P; p++) embed_bwd(tok, R, got + s.first[p] * ED, s.len[p], s.first[p], 1, 0);
  gc_expect_bits("partial backward: the parts' dtables = the whole dtable (acc 0)", got, want, EVT * ED * sizeof(double));
  double *base = gc_rand(&r, EVT * ED, -1, 1), *wacc = gc_copy(base, EVT * ED), *gacc = gc_copy(base, EVT * ED);
  embed_bwd(tok, R, wacc, EVT, 0, 0, 1);
  for (int p = 0; p < s.P; p++) embed_bwd(tok, R, gacc + s.first[p] * ED, s.len[p], s.first[p], 1, 1);
  gc_expect_bits("partial backward: the parts' dtables = the whole dtable (acc 1)", gacc, wacc, EVT * ED * sizeof(double));

  /* finite differences of L = sum(out * R) through the partial forward, for the middle part */
  emb_ctx c = {tok, gc_copy(table + s.first[1] * ED, (size_t)(s.len[1] * ED)), gc_zeros(EN * ED), R, s.len[1], s.first[1]};
  double *dt = gc_zeros((size_t)(s.len[1] * ED));
  embed_bwd(tok, R, dt, s.len[1], s.first[1], 1, 0);
  gc_fd_check("partial dtable vs finite differences", emb_loss, &c, c.table, (size_t)(s.len[1] * ED), dt, 1e-6);

  /* partial = 0 ignores vfirst: today's lookup, NaN rows for -1 and 11 */
  double *o0 = gc_zeros(EN * ED), *o1 = gc_zeros(EN * ED), *d0 = gc_zeros(EVT * ED), *d1 = gc_zeros(EVT * ED);
  embed_fwd(tok, table, o0, EVT, 0, 0);
  embed_fwd(tok, table, o1, EVT, 4, 0);
  gc_expect_bits("partial = 0: vfirst ignored (forward)", o1, o0, EN * ED * sizeof(double));
  gc_expect("partial = 0: a token outside [0, V) gives a NaN row", isnan(o0[5 * ED]) && isnan(o0[8 * ED + ED - 1]));
  embed_bwd(tok, R, d0, EVT, 0, 0, 0);
  embed_bwd(tok, R, d1, EVT, 4, 0, 0);
  gc_expect_bits("partial = 0: vfirst ignored (backward)", d1, d0, EVT * ED * sizeof(double));
  free(o0), free(o1), free(d0), free(d1), free(dt), free(c.table), free(c.out);
  free(base), free(wacc), free(gacc), free(want), free(got), free(table), free(full), free(sum), free(R);
}

int main(void) {
  test_xent_vp(401);
  test_xent_vp_fd(402);
  test_embedding_vp(403);
  return gc_finish("test_ref_vocab_parallel");
}

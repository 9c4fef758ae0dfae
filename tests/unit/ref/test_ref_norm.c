/* tests/unit/ref/test_ref_norm.c: RMSNORM_FWD/BWD, LAYERNORM_FWD/BWD, REDUCE_ROWS and SUM reference kernels:
 * forward values against the direct formulas, dx / dg / dw / db against finite differences of
 * L = sum(y * R) (weight gradients through the partial tables folded by REDUCE_ROWS), the chunk rule of
 * partial tables (zero rows past N), acc flags, f32 storage, determinism. */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 7, D = 12 };
static const double EPS = (double)1e-5f; /* f0 is a float */

typedef struct norm_ctx {
  double *x, *g, *b, *y, *s0, *s1, *R;
  int layer; /* 0: rmsnorm (s0 = rstd), 1: layernorm (s0 = mean, s1 = rstd) */
} norm_ctx;

static void norm_fwd(norm_ctx *c) {
  gc_call k;
  gc_call_init(&k);
  k.a.i[0] = N, k.a.i[1] = D, k.a.f[0] = (float)EPS;
  if (!c->layer) {
    k.a.p[0] = c->x, k.a.p[1] = c->g, k.a.p[2] = c->y, k.a.p[3] = c->s0;
    ref_rmsnorm_fwd(&k.a, k.dt);
  } else {
    k.a.p[0] = c->x, k.a.p[1] = c->g, k.a.p[2] = c->b, k.a.p[3] = c->y, k.a.p[4] = c->s0, k.a.p[5] = c->s1;
    ref_layernorm_fwd(&k.a, k.dt);
  }
}

static double norm_loss(void *ctx) {
  norm_ctx *c = ctx;
  norm_fwd(c);
  return gc_dot(c->y, c->R, N * D);
}

/* Backward with dy = R into dx and the [P, D] partial tables. */
static void norm_bwd(norm_ctx *c, double *dx, int acc, int64_t P, double *part0, double *part1) {
  gc_call k;
  gc_call_init(&k);
  k.a.i[0] = N, k.a.i[1] = D, k.a.i[2] = acc, k.a.i[3] = P;
  if (!c->layer) {
    k.a.p[0] = c->x, k.a.p[1] = c->g, k.a.p[2] = c->R, k.a.p[3] = c->s0, k.a.p[4] = dx, k.a.p[5] = part0;
    ref_rmsnorm_bwd(&k.a, k.dt);
  } else {
    k.a.p[0] = c->x, k.a.p[1] = c->g, k.a.p[2] = c->R, k.a.p[3] = c->s0, k.a.p[4] = c->s1, k.a.p[5] = dx;
    k.a.p[6] = part0, k.a.p[7] = part1;
    ref_layernorm_bwd(&k.a, k.dt);
  }
}

static void reduce_rows(const double *in, int64_t P, double *out, int acc, double scale) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = (void *)in, k.a.p[1] = out, k.a.i[0] = P, k.a.i[1] = D, k.a.i[2] = acc, k.a.f[0] = (float)scale;
  ref_reduce_rows(&k.a, k.dt);
}

/* Partial table rows: chunk c of ceil(N/P) rows holds sum over its rows of f(n, j); zero past N. */
static void check_partials(const char *what, const double *part, int64_t P, const double *perrow) {
  int64_t rows = (N + P - 1) / P;
  double *want = gc_zeros((size_t)(P * D));
  for (int64_t c = 0; c < P; c++)
    for (int64_t n = c * rows; n < (c + 1) * rows && n < N; n++)
      for (int j = 0; j < D; j++) want[c * D + j] += perrow[n * D + j];
  gc_expect_close(what, part, want, (size_t)(P * D), 1e-14, 1e-300);
  free(want);
}

static void test_norm(int layer, uint64_t seed) {
  gc_rng r;
  gc_case(&r, layer ? "layernorm" : "rmsnorm", seed);
  norm_ctx c = {gc_rand(&r, N * D, -2, 2), gc_rand(&r, D, 0.5, 1.5), gc_rand(&r, D, -0.5, 0.5),
                gc_zeros(N * D), gc_zeros(N), gc_zeros(N), gc_rand(&r, N * D, -1, 1), layer};
  /* Forward against the direct formula. */
  norm_fwd(&c);
  double *want = gc_zeros(N * D);
  for (int n = 0; n < N; n++) {
    double mean = 0, ss = 0;
    for (int j = 0; j < D; j++) mean += c.x[n * D + j] / D;
    if (!layer) mean = 0;
    for (int j = 0; j < D; j++) ss += (c.x[n * D + j] - mean) * (c.x[n * D + j] - mean) / D;
    for (int j = 0; j < D; j++)
      want[n * D + j] = (c.x[n * D + j] - mean) / sqrt(ss + EPS) * c.g[j] + (layer ? c.b[j] : 0);
  }
  gc_expect_close("forward vs direct formula", c.y, want, N * D, 1e-14, 1e-300);

  /* Gradients: dx directly, dg (dw) and db through P = 3 partials and REDUCE_ROWS. */
  double *dx = gc_zeros(N * D), *p0 = gc_zeros(3 * D), *p1 = gc_zeros(3 * D), *dg = gc_zeros(D), *db = gc_zeros(D);
  norm_fwd(&c);
  norm_bwd(&c, dx, 0, 3, p0, p1);
  reduce_rows(p0, 3, dg, 0, 1.0);
  reduce_rows(p1, 3, db, 0, 1.0);
  gc_fd_check("dx vs finite differences", norm_loss, &c, c.x, N * D, dx, 1e-6);
  gc_fd_check(layer ? "dw (partials + reduce_rows)" : "dg (partials + reduce_rows)", norm_loss, &c, c.g, D, dg,
              1e-6);
  if (layer) gc_fd_check("db (partials + reduce_rows)", norm_loss, &c, c.b, D, db, 1e-6);

  /* Chunk rule with P = 5 (chunks of 2 rows; chunk 4 lies past N = 7 and must be zero rows). */
  double *q0 = gc_rand(&r, 5 * D, 90, 99), *q1 = gc_rand(&r, 5 * D, 90, 99), *perrow0 = gc_zeros(N * D);
  double *perrow1 = gc_zeros(N * D);
  norm_fwd(&c);
  for (int n = 0; n < N; n++)
    for (int j = 0; j < D; j++) {
      const double xh = layer ? (c.x[n * D + j] - c.s0[n]) * c.s1[n] : c.x[n * D + j] * c.s0[n];
      perrow0[n * D + j] = c.R[n * D + j] * xh;
      perrow1[n * D + j] = c.R[n * D + j];
    }
  double *dx5 = gc_zeros(N * D);
  norm_bwd(&c, dx5, 0, 5, q0, q1);
  check_partials("partial table P=5 (rows past N zero)", q0, 5, perrow0);
  if (layer) check_partials("db partial table P=5", q1, 5, perrow1);
  gc_expect_bits("dx independent of P", dx5, dx, N * D * sizeof(double));

  /* acc = 1 adds into dx. */
  double *base = gc_rand(&r, N * D, -1, 1), *dxa = gc_copy(base, N * D), *sum = gc_zeros(N * D);
  for (int i = 0; i < N * D; i++) sum[i] = base[i] + dx[i];
  norm_bwd(&c, dxa, 1, 3, p0, p1);
  gc_expect_bits("acc=1 adds into dx", dxa, sum, N * D * sizeof(double));

  /* Determinism: the same inputs twice give identical bits. */
  double *y1 = gc_copy(c.y, N * D), *dx2 = gc_zeros(N * D), *p02 = gc_zeros(3 * D);
  norm_fwd(&c);
  gc_expect_bits("forward deterministic", c.y, y1, N * D * sizeof(double));
  norm_bwd(&c, dx2, 0, 3, p02, p1);
  gc_expect_bits("backward deterministic", dx2, dx, N * D * sizeof(double));
  free(y1), free(dx2), free(p02), free(base), free(dxa), free(sum), free(dx5), free(q0), free(q1);
  free(perrow0), free(perrow1), free(dx), free(p0), free(p1), free(dg), free(db), free(want);
  free(c.x), free(c.g), free(c.b), free(c.y), free(c.s0), free(c.s1), free(c.R);
}

/* f32 buffers (statistics in f32) track the f64 reference. */
static void test_rmsnorm_f32(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "rmsnorm f32 storage", seed);
  double *x = gc_rand(&r, N * D, -2, 2), *g = gc_rand(&r, D, 0.5, 1.5), *y = gc_zeros(N * D), *rs = gc_zeros(N);
  float xf[N * D], gf[D], yf[N * D], rf[N];
  double yd[N * D];
  for (int i = 0; i < N * D; i++) xf[i] = (float)x[i], x[i] = xf[i];
  for (int i = 0; i < D; i++) gf[i] = (float)g[i], g[i] = gf[i];
  gc_call k;
  gc_call_init(&k);
  k.a.i[0] = N, k.a.i[1] = D, k.a.f[0] = (float)EPS;
  k.a.p[0] = x, k.a.p[1] = g, k.a.p[2] = y, k.a.p[3] = rs;
  ref_rmsnorm_fwd(&k.a, k.dt);
  k.a.p[0] = xf, k.a.p[1] = gf, k.a.p[2] = yf, k.a.p[3] = rf;
  for (int j = 0; j < 4; j++) k.dt[j] = DT_F32;
  ref_rmsnorm_fwd(&k.a, k.dt);
  for (int i = 0; i < N * D; i++) yd[i] = yf[i];
  gc_expect_close("f32 y vs f64 y", yd, y, N * D, 3e-7, 1e-300);
  free(x), free(g), free(y), free(rs);
}

static void test_reduce(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "reduce_rows / sum", seed);
  double *in = gc_rand(&r, 5 * D, -1, 1), *out = gc_rand(&r, D, -1, 1), *base = gc_copy(out, D);
  double want[D], s = 0;
  for (int j = 0; j < D; j++) {
    want[j] = 0;
    for (int p = 0; p < 5; p++) want[j] += in[p * D + j];
    want[j] = base[j] + 0.25 * want[j];
  }
  reduce_rows(in, 5, out, 1, 0.25);
  gc_expect_close("reduce_rows acc=1 scale=0.25", out, want, D, 1e-15, 1e-300);
  reduce_rows(in, 5, out, 0, 0.25);
  for (int j = 0; j < D; j++) want[j] -= base[j];
  gc_expect_close("reduce_rows acc=0 overwrites", out, want, D, 1e-15, 1e-300);
  for (int i = 0; i < 5 * D; i++) s += in[i];
  double o = 3.0, w = 3.0 + 0.5 * s;
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = in, k.a.p[1] = &o, k.a.i[0] = 5 * D, k.a.i[1] = 1, k.a.f[0] = 0.5f;
  ref_sum(&k.a, k.dt);
  gc_expect_close("sum acc=1", &o, &w, 1, 1e-15, 1e-300);
  k.a.i[1] = 0;
  ref_sum(&k.a, k.dt);
  w = 0.5 * s;
  gc_expect_close("sum acc=0", &o, &w, 1, 1e-15, 1e-300);
  free(in), free(out), free(base);
}

int main(void) {
  test_norm(0, 101);
  test_norm(1, 102);
  test_rmsnorm_f32(103);
  test_reduce(104);
  return gc_finish("test_ref_norm");
}

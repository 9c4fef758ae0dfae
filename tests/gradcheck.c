/* tests/gradcheck.c: the helpers of gradcheck.h (splitmix64 RNG, finite differences, comparisons). */
#include "gradcheck.h"
#include "dtype.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;
static const char *current = "?";

void gc_case(gc_rng *r, const char *name, uint64_t seed) {
  current = name;
  r->s = seed;
  printf("[%s] seed %llu\n", name, (unsigned long long)seed);
}

static uint64_t next_u64(gc_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double gc_uniform(gc_rng *r, double lo, double hi) {
  return lo + (hi - lo) * ((double)(next_u64(r) >> 11) * 0x1.0p-53);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

double *gc_rand(gc_rng *r, size_t n, double lo, double hi) {
  double *x = xcalloc(n, sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = gc_uniform(r, lo, hi);
  return x;
}

double *gc_zeros(size_t n) { return xcalloc(n, sizeof(double)); }

double *gc_copy(const double *x, size_t n) {
  double *y = xcalloc(n, sizeof *y);
  memcpy(y, x, n * sizeof *y);
  return y;
}

double gc_dot(const double *x, const double *y, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

void gc_call_init(gc_call *c) {
  memset(c, 0, sizeof *c);
  for (int k = 0; k < DDP_MAX_PTRS; k++) c->dt[k] = DT_F64;
}

static void tally(const char *what, int ok, const char *detail) {
  checks++;
  if (!ok) failures++;
  printf("  %-4s %s: %s\n", ok ? "ok" : "FAIL", what, detail);
}

double gc_fd_check_at(const char *what, gc_loss_fn f, void *ctx, double *x, const size_t *idx, size_t n,
                      const double *analytic, double tol) {
  const double h = 1e-6;
  double scale = 0.0, worst = 0.0, worst_fd = 0.0;
  size_t worst_i = 0;
  double *fd = gc_zeros(n);
  for (size_t i = 0; i < n; i++) {
    const size_t e = idx ? idx[i] : i;
    const double x0 = x[e];
    x[e] = x0 + h;
    const double lp = f(ctx);
    x[e] = x0 - h;
    const double lm = f(ctx);
    x[e] = x0;
    fd[i] = (lp - lm) / (2 * h);
    scale = fmax(scale, fabs(fd[i]));
  }
  for (size_t i = 0; i < n; i++) {
    const double e = fabs(analytic[idx ? idx[i] : i] - fd[i]);
    if (e > worst || isnan(e)) worst = isnan(e) ? INFINITY : e, worst_i = i, worst_fd = fd[i];
  }
  const double rel = scale > 0 ? worst / scale : worst;
  char detail[256];
  snprintf(detail, sizeof detail, "max rel err %.3e (tol %.0e, %zu elements, |grad|max %.3e)%s", rel, tol, n,
           scale, scale == 0 ? " [gradient identically 0]" : "");
  tally(what, rel <= tol && scale > 0, detail);
  if (!(rel <= tol) || scale == 0) {
    const size_t e = idx ? idx[worst_i] : worst_i;
    printf("       worst element %zu: analytic %.17g, finite difference %.17g\n", e, n ? analytic[e] : 0.0,
           worst_fd);
  }
  free(fd);
  return rel;
}

double gc_fd_check(const char *what, gc_loss_fn f, void *ctx, double *x, size_t n, const double *analytic,
                   double tol) {
  return gc_fd_check_at(what, f, ctx, x, NULL, n, analytic, tol);
}

double gc_expect_close(const char *what, const double *got, const double *want, size_t n, double tol,
                       double floor) {
  double scale = floor, worst = 0.0;
  size_t wi = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++) {
    const double e = fabs(got[i] - want[i]);
    if (e > worst || isnan(e)) worst = isnan(e) ? INFINITY : e, wi = i;
  }
  const double rel = worst / scale;
  char detail[256];
  snprintf(detail, sizeof detail, "max rel err %.3e (tol %.0e, %zu values)", rel, tol, n);
  tally(what, rel <= tol, detail);
  if (!(rel <= tol)) printf("       element %zu: expected %.17g, got %.17g\n", wi, want[wi], got[wi]);
  return rel;
}

void gc_expect_bits(const char *what, const void *got, const void *want, size_t bytes) {
  const unsigned char *g = got, *w = want;
  size_t i = 0;
  while (i < bytes && g[i] == w[i]) i++;
  char detail[160];
  if (i == bytes)
    snprintf(detail, sizeof detail, "%zu bytes identical", bytes);
  else
    snprintf(detail, sizeof detail, "first differing byte %zu: expected 0x%02x, got 0x%02x", i, w[i], g[i]);
  tally(what, i == bytes, detail);
}

void gc_expect(const char *what, int ok) { tally(what, ok, ok ? "holds" : "does not hold"); }

int gc_finish(const char *suite) {
  printf("%s: %d checks, %d failed (last case %s)\n", suite, checks, failures, current);
  return failures ? 1 : 0;
}

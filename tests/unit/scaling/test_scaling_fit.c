/* tests/unit/scaling/test_scaling_fit.c: the IsoFLOPs fit of compiler/scaling (issue 16) on synthetic runs
 * from a known law L(N, D) = E + A / N^alpha + B / D^beta with C = 6 N D (Chinchilla's fitted constants),
 * 4 budgets 1e17..1e20, 7 sizes each 0.25 decades apart around points 0.05..0.11 decades off the true
 * optimum (a different offset per budget, so taking the lowest run instead of the vertex fails). The optimum is
 * N_opt = G (C/6)^(beta/(alpha+beta)), so the fitted exponents must be beta/(alpha+beta) = 0.4516 for N
 * and alpha/(alpha+beta) = 0.5484 for D: within 1e-3 without noise, within 0.03 with 0.2% multiplicative
 * Gaussian noise (fixed seed; the naive 0.5 is 0.048 away, so a fit that ignores the data fails). Also:
 * the fallbacks (fewer than 3 runs, a parabola opening downward), the metrics-file loss, the parameter
 * count of a shape, and bad input refused with one line each. */
#include "check.h"
#include "scaling.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const double E = 1.69, A = 406.4, B = 410.7, ALPHA = 0.34, BETA = 0.28;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* xorshift64*, in (0, 1) */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return ((double)((rng * 2685821657736338717ull) >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) { return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform()); }

static double true_n_opt(double c) {
  return pow(ALPHA * A / (BETA * B), 1 / (ALPHA + BETA)) * pow(c / 6, BETA / (ALPHA + BETA));
}

/* 4 budgets x 7 sizes into r (28 runs); noise: the relative standard deviation of the loss. */
static int synth(ddp_scaling_run *r, double noise) {
  static const double offset[4] = {0.11, -0.08, 0.05, -0.1}; /* decades off the optimum, per budget */
  int n = 0, b = 0;
  for (double c = 1e17; c < 1.5e20; c *= 10, b++) {
    double centre = log10(true_n_opt(c)) + offset[b];
    for (int k = 0; k < 7; k++) {
      double np = pow(10.0, centre + (k - 3) * 0.25), d = c / (6 * np);
      double l = E + A / pow(np, ALPHA) + B / pow(d, BETA);
      r[n++] = (ddp_scaling_run){np, c, l * (1 + noise * gauss())};
    }
  }
  return n;
}

static void exponents(double noise, double tol) {
  ddp_scaling_run r[28];
  int n = synth(r, noise);
  ddp_scaling_fit f;
  char err[512] = "";
  if (!CHECK(ddp_scaling_fit_runs(r, n, &f, err, sizeof err) == 0, "%s", err)) return;
  CHECK_INT("budgets", 4, f.nbudgets);
  double en = BETA / (ALPHA + BETA), ed = ALPHA / (ALPHA + BETA);
  printf("noise %.3f: N_opt ~ C^%.5f (true %.5f), D_opt ~ C^%.5f (true %.5f), R^2 %.5f\n", noise, f.n_law.slope, en,
         f.d_law.slope, ed, f.n_law.r2);
  CHECK(fabs(f.n_law.slope - en) < tol, "N exponent %.5f, expected %.5f within %g", f.n_law.slope, en, tol);
  CHECK(fabs(f.d_law.slope - ed) < tol, "D exponent %.5f, expected %.5f within %g", f.d_law.slope, ed, tol);
  CHECK(f.n_law.r2 > 0.99, "R^2 %.5f", f.n_law.r2);
  for (int k = 0; k < f.nbudgets; k++) {
    const ddp_scaling_budget *b = &f.budgets[k];
    CHECK(b->method == DDP_FIT_PARABOLA, "budget %d: %s", k, ddp_fit_method_name(b->method));
    CHECK_INT("runs per budget", 7, b->nruns);
    double want = true_n_opt(b->compute);
    CHECK(fabs(log10(b->n_opt / want)) < 0.1, "budget %.3g: N_opt %.4g, true %.4g", b->compute, b->n_opt, want);
    CHECK(fabs(b->d_opt * 6 * b->n_opt / b->compute - 1) < 1e-12, "D_opt = C / (6 N_opt)");
  }
  /* The extrapolation at 1e23 follows the law. */
  double n23 = ddp_power_law_at(&f.n_law, 1e23), t23 = true_n_opt(1e23);
  printf("  N_opt(1e23) = %.4g (true %.4g)\n", n23, t23);
  CHECK(fabs(log10(n23 / t23)) < (noise > 0 ? 0.2 : 0.05), "N_opt(1e23) %.4g, true %.4g", n23, t23);
  ddp_scaling_fit_free(&f);
}

static void fallbacks(void) {
  /* budget 1e18: two runs (the lower loss wins); budget 1e19: a concave profile (downward parabola). */
  ddp_scaling_run r[] = {{1e8, 1e18, 3.1}, {2e8, 1e18, 3.0}, {1e8, 1e19, 3.0}, {2e8, 1e19, 3.2}, {4e8, 1e19, 3.25}};
  ddp_scaling_fit f;
  char err[512] = "";
  if (!CHECK(ddp_scaling_fit_runs(r, 5, &f, err, sizeof err) == 0, "%s", err)) return;
  CHECK(f.budgets[0].method == DDP_FIT_FEW_RUNS);
  CHECK(f.budgets[0].n_opt == 2e8 && f.budgets[0].loss_min == 3.0);
  CHECK(f.budgets[1].method == DDP_FIT_DOWNWARD);
  CHECK(f.budgets[1].n_opt == 1e8 && f.budgets[1].loss_min == 3.0);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  ddp_scaling_print(m, &f, (double[]){1e23}, 1);
  fclose(m);
  CHECK_CONTAINS("table", buf, "lowest run (fewer than 3 runs)");
  CHECK_CONTAINS("table", buf, "lowest run (parabola opens downward)");
  CHECK_CONTAINS("table", buf, "(extrapolated)");
  free(buf);
  ddp_scaling_fit_free(&f);
}

/* `text` is refused with one line holding `want`. */
static void refused(const char *text, const char *want) {
  ddp_scaling_run *r = NULL;
  int n = 0;
  char err[512] = "";
  int rc = ddp_scaling_parse(text, "runs.json", NULL, &r, &n, err, sizeof err);
  if (rc == 0) {
    ddp_scaling_fit f;
    rc = ddp_scaling_fit_runs(r, n, &f, err, sizeof err);
    if (rc == 0) ddp_scaling_fit_free(&f);
  }
  free(r);
  CHECK(rc != 0, "accepted: %s", text);
  CHECK_CONTAINS("error", err, want);
  CHECK(strchr(err, '\n') == NULL, "one line: %s", err);
}

static void bad_input(void) {
  refused("{\"parameters\": 1}", "not a JSON array");
  refused("[{\"parameters\": 1e8, \"final_loss\": 3}]", "run 0: the field \"compute_budget\" is missing");
  refused("[{\"parameters\": 1e8, \"compute_budget\": 1e18, \"final_loss\": 3},"
          " {\"parameters\": -5, \"compute_budget\": 1e18, \"final_loss\": 3}]",
          "run 1: \"parameters\" is -5; it must be a number in [1, 1e40]");
  refused("[{\"parameters\": 1e8, \"compute_budget\": 1e18, \"final_loss\": 3},"
          " {\"parameters\": 1e300, \"compute_budget\": 1e18, \"final_loss\": 3}]",
          "run 1: \"parameters\" is 1e+300; it must be a number in [1, 1e40]");
  refused("[{\"parameters\": 1e8, \"compute_budget\": 1e18, \"final_loss\": 3},"
          " {\"parameters\": 2e8, \"compute_budget\": 1e18, \"final_loss\": 2.9}]",
          "2 runs in 1 compute budget: the power laws need at least 2 budgets");
  refused("[{\"parameters\": 1e8, \"compute_budget\": 1e18}]", "\"final_loss\" (or \"metrics\") is missing");
  refused("[1, 2]", "run 0: not an object");
  refused("[{\"parameters\": \"1e8\", \"compute_budget\": 1e18, \"final_loss\": 3}]", "\"parameters\" is not a number");
  refused("[", "runs.json: line 1: not JSON");
}

/* The seeds' own lines: integer parameters, exponent budgets. */
static void seeds_format(void) {
  ddp_scaling_run *r = NULL;
  int n = 0;
  char err[512] = "";
  const char *t = "[{\"parameters\": 499999999, \"compute_budget\": 6e+18, \"final_loss\": 7.19},\n"
                  " {\"parameters\": 1000000000, \"compute_budget\": 6e+18, \"final_loss\": 7.0}]";
  CHECK(ddp_scaling_parse(t, "isoflops_curves.json", NULL, &r, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 2 && r && r[0].params == 499999999.0 && r[0].compute == 6e18 && r[0].loss == 7.19);
  free(r);
}

static void metrics(void) {
  char dir[] = "/tmp/ddp_scaling_XXXXXX", path[128], err[512] = "";
  if (!CHECK(mkdtemp(dir) != NULL)) return;
  snprintf(path, sizeof path, "%s/a.jsonl", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"event\": \"memory\", \"rank\": 0}\n{\"step\": 1, \"loss\": 5.5}\n{\"step\": 2, \"loss\": 4.25}\n", f);
  fclose(f);
  double l = 0;
  CHECK(ddp_scaling_metrics_loss(path, &l, err, sizeof err) == 0, "%s", err);
  CHECK(l == 4.25, "loss %g", l);
  ddp_scaling_run *r = NULL;
  int n = 0;
  const char *runs = "[{\"parameters\": 1e6, \"compute_budget\": 1e15, \"metrics\": \"a.jsonl\"}]";
  CHECK(ddp_scaling_parse(runs, "runs.json", dir, &r, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 1 && r && r[0].loss == 4.25);
  free(r);
  r = NULL;
  runs = "[{\"parameters\": 1e6, \"compute_budget\": 1e15, \"metrics\": \"missing.jsonl\"}]";
  CHECK(ddp_scaling_parse(runs, "runs.json", dir, &r, &n, err, sizeof err) != 0);
  CHECK_CONTAINS("error", err, "run 0: \"metrics\"");
  free(r);
  f = fopen(path, "w");
  fputs("{\"event\": \"memory\", \"rank\": 0}\n", f);
  fclose(f);
  CHECK(ddp_scaling_metrics_loss(path, &l, err, sizeof err) != 0);
  CHECK_CONTAINS("error", err, "no step line");
  unlink(path);
  rmdir(dir);
}

static void shapes(void) {
  /* tiny: d 64, d_ff 128, 2 layers, vocab 256: 2 x 256 x 64 + 2 (4 x 64^2 + 3 x 64 x 128 + 2 x 64) + 64 */
  ddp_shape t = {.d_model = 64, .d_ff = 128, .layers = 2, .heads = 4, .vocab = 256};
  CHECK(ddp_shape_params(&t) == 115008.0, "%.0f", ddp_shape_params(&t));
  for (double n = 1e7; n <= 1e10; n *= 10) { /* under ~1.3e6 the vocab-10000 embeddings alone exceed it */
    ddp_shape s = ddp_shape_for(n, 10000);
    double got = ddp_shape_params(&s);
    CHECK(fabs(log(got / n)) < log(1.25), "target %.3g: %.4g params (d %lld, L %lld)", n, got, (long long)s.d_model,
          (long long)s.layers);
    CHECK(s.d_model % 64 == 0 && s.heads * 64 == s.d_model && s.d_ff == 4 * s.d_model && s.layers >= 1);
  }
}

int main(void) {
  exponents(0, 1e-3);
  exponents(0.002, 0.03);
  fallbacks();
  bad_input();
  seeds_format();
  metrics();
  shapes();
  return check_report("test_scaling_fit");
}

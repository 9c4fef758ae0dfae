/* compiler/scaling/plan.c: `ddpc scaling plan` (scaling.h): per compute budget C, `sizes` transformer shapes
 * spaced evenly in log10 N around the expected optimum N* = sqrt(C / (6 r)) (r tokens per parameter, 20 by
 * default, Chinchilla's rule; D = r N and C = 6 N D), each written as a .lua schedule whose steps spend the
 * budget at global_batch x context tokens per step, plus runs.json: the runs in the form `ddpc scaling fit`
 * reads, each naming the metrics file its ddprun run is to write (--metrics NAME.metrics.jsonl).
 * The parameter count is compiler/model/transformer.c's: token embedding V d, per layer q/k/v/o 4 d^2,
 * SwiGLU w1/w2/w3 3 d d_ff and two RMSNorm weights 2 d, the final norm d, the untied head V d. */
#include "scaling.h"
#include "err.h"
#include "file.h"
#include <sys/stat.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double ddp_shape_params(const ddp_shape *s) {
  double d = (double)s->d_model, f = (double)s->d_ff, v = (double)s->vocab;
  return v * d + (double)s->layers * (4 * d * d + 3 * d * f + 2 * d) + d + v * d;
}

ddp_shape ddp_shape_for(double target, int64_t vocab) {
  ddp_shape best = {0}, near = {0};
  double best_aspect = INFINITY, near_err = INFINITY;
  for (int64_t d = 64; d <= 16384; d += 64) {
    ddp_shape s = {.d_model = d, .d_ff = 4 * d, .heads = d / 64, .vocab = vocab};
    double per = 4.0 * d * d + 3.0 * d * s.d_ff + 2.0 * d, rest = 2.0 * vocab * d + d;
    double l = round((target - rest) / per);
    s.layers = l < 1 ? 1 : l > 4096 ? 4096 : (int64_t)l;
    double e = fabs(log(ddp_shape_params(&s) / target)), aspect = fabs(log((double)d / (double)s.layers / 64.0));
    if (e < near_err) near_err = e, near = s;
    if (e <= log(1.05) && aspect < best_aspect) best_aspect = aspect, best = s;
  }
  return best.d_model ? best : near;
}

static int write_schedule(const char *path, const ddp_shape *s, const ddp_plan_opts *o, double c, double n, int64_t steps,
                          char *err, size_t errcap) {
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, path, err, errcap)) return -1;
  FILE *f = af.f;
  int64_t warmup = steps / 100;
  fprintf(f,
          "-- Written by `ddpc scaling plan`: an IsoFLOPs run at compute budget C = %.4g FLOPs: a transformer of\n"
          "-- N = %.0f parameters trained on D = steps x global_batch x context = %lld tokens (6 N D = %.4g).\n"
          "return schedule {\n"
          "  model = transformer({ name = \"isoflops\", d_model = %lld, d_ff = %lld, layers = %lld, heads = %lld,\n"
          "                        vocab = %lld, context = %lld, rope_theta = 10000 }, 1),\n"
          "  data = { global_batch = %lld, tokens = \"%s\", seed = 1 },\n"
          "  precision = \"%s\",\n"
          "  optimizer = adamw { lr = %g, betas = { 0.9, 0.95 }, eps = 1e-8, weight_decay = 0.1,\n"
          "                      schedule = \"cosine\", warmup = %lld, cycle = %lld, lr_min = %g, clip = 1.0 },\n"
          "  steps = %lld, seed = 1,\n"
          "}\n",
          c, n, (long long)(steps * o->batch * o->context), 6.0 * n * (double)(steps * o->batch * o->context),
          (long long)s->d_model, (long long)s->d_ff, (long long)s->layers, (long long)s->heads, (long long)s->vocab,
          (long long)o->context, (long long)o->batch, o->tokens, o->precision, o->lr, (long long)warmup,
          (long long)steps, o->lr / 10, (long long)steps);
  return ddp_atomic_commit(&af, err, errcap);
}

int ddp_scaling_plan(const ddp_plan_opts *o, FILE *out, char *err, size_t errcap) {
  size_t cap = strlen(o->dir) + 64;
  char *path = ddp_xmalloc(cap);
  char *json = NULL;
  size_t jlen = 0;
  FILE *js = open_memstream(&json, &jlen);
  if (!js) {
    free(path);
    return ddp_fail(err, errcap, "out of memory for runs.json");
  }
  fputs("[\n", js);
  int rc = 0, first = 1;
  /* Pass 0 checks every run, pass 1 makes the folder, prints the table and writes: a refused budget leaves no
   * folder, schedule or table behind. */
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    if (pass == 1) {
      struct stat st;
      if (mkdir(o->dir, 0777) != 0 && errno != EEXIST)
        rc = ddp_fail(err, errcap, "-o: cannot make %s: %s", o->dir, strerror(errno));
      else if (stat(o->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = ddp_fail(err, errcap, "-o: %s is not a folder", o->dir);
      if (rc) break;
      fprintf(out, "%-10s %-24s %12s %5s %5s %6s %12s %10s\n", "budget", "schedule", "N", "d", "L", "heads",
              "D tokens", "steps");
    }
    for (int b = 0; b < o->nbudgets && rc == 0; b++) {
      double c = o->budgets[b], centre = log10(sqrt(c / (6.0 * o->tokens_per_param)));
      for (int k = 0; k < o->sizes && rc == 0; k++) {
        double target = pow(10.0, centre + (k - (o->sizes - 1) / 2.0) * o->spacing);
        ddp_shape s = ddp_shape_for(target, o->vocab);
        double n = ddp_shape_params(&s), per_step = (double)(o->batch * o->context);
        double steps_f = round(c / (6.0 * n) / per_step);
        if (steps_f < 1) {
          rc = ddp_fail(err, errcap, "budget %.4g: a model of %.4g parameters cannot train one step of %lld tokens "
                                     "(6 N x tokens > C); use a larger budget or a smaller --batch or --context",
                        c, n, (long long)per_step);
          break;
        }
        if (steps_f > INT32_MAX) {
          rc = ddp_fail(err, errcap, "budget %.4g: %.4g steps of %lld tokens exceed the schedule's limit (2^31-1); use "
                                     "a larger --batch", c, steps_f, (long long)per_step);
          break;
        }
        if (pass == 0) continue;
        char name[64];
        snprintf(name, sizeof name, "isoflops_%.4g_%02d", c, k);
        char *w = name; /* "1e+18" -> "1e18" */
        for (const char *r = name; *r; r++)
          if (*r != '+') *w++ = *r;
        *w = '\0';
        snprintf(path, cap, "%s/%s.lua", o->dir, name);
        rc = write_schedule(path, &s, o, c, n, (int64_t)steps_f, err, errcap);
        fprintf(js, "%s  {\"schedule\": \"%s.lua\", \"parameters\": %.0f, \"compute_budget\": %.6g, \"metrics\": "
                    "\"%s.metrics.jsonl\"}", first ? "" : ",\n", name, n, c, name);
        first = 0;
        fprintf(out, "%-10.3g %-24s %12.4g %5lld %5lld %6lld %12.4g %10.0f\n", c, name, n, (long long)s.d_model,
                (long long)s.layers, (long long)s.heads, steps_f * per_step, steps_f);
      }
    }
  }
  fputs("\n]\n", js);
  int bad = fclose(js);
  if (rc == 0 && (bad || !json)) rc = ddp_fail(err, errcap, "out of memory for runs.json");
  if (rc == 0) {
    snprintf(path, cap, "%s/runs.json", o->dir);
    rc = ddp_write_atomic(path, json, jlen, err, errcap);
  }
  free(json);
  free(path);
  return rc;
}

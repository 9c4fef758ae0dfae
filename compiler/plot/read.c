/* compiler/plot/read.c: a ddprun metrics file (JSON lines, runtime/driver/run.c) into a ddp_plot_run (see
 * plot.h for what each number is). The file must hold the {"event": "run"} line (schedule, parallel, world,
 * tokens_per_step) before its step lines, and every step line its per-rank arrays (rank_step_ms, ...)
 * with one number per rank; other event lines are skipped. Any other line is an error naming file:line.
 * A pipeline run's (its "parallel" text begins with "pipeline") step lines may also carry rank_forward_ms
 * and rank_backward_ms (one number per rank, when present), from which its bubble is split off compute. */
#include "err.h"
#include "file.h"
#include "metrics_lines.h"
#include "plot.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_BYTES ((size_t)1 << 30)
#define WORLD_MAX 4096

enum { RK_STEP, RK_EXPOSED, RK_OPT, RK_OPT_COMM, RK_PEAK, RK_COUNT };
static const char *const rank_fields[RK_COUNT] = {"rank_step_ms", "rank_exposed_comm_ms", "rank_optimizer_ms",
                                                  "rank_optimizer_comm_ms", "rank_peak_mem_GiB"};

/* Sums over a set of steps (the timed ones, or all). */
typedef struct sums {
  int n;
  double step_ms, slowest;
  double *c, *e, *o, *i, *b; /* per rank */
} sums;

static void sums_alloc(sums *s, int world) {
  s->b = ddp_xcalloc((size_t)world, sizeof(double));
  s->c = ddp_xcalloc((size_t)world, sizeof(double));
  s->e = ddp_xcalloc((size_t)world, sizeof(double));
  s->o = ddp_xcalloc((size_t)world, sizeof(double));
  s->i = ddp_xcalloc((size_t)world, sizeof(double));
}

static void sums_free(sums *s) {
  free(s->c), free(s->e), free(s->o), free(s->i), free(s->b);
}

/* One step: v[k][r] = rank r's value of rank_fields[k]; fb[r] rank r's forward + backward (a pipeline
 * run's), or NULL. */
static void sums_add(sums *s, int world, double step_ms, double *const *v, const double *fb) {
  double slowest = -INFINITY;
  for (int r = 0; r < world; r++) slowest = fmax(slowest, v[RK_STEP][r]);
  for (int r = 0; r < world; r++) {
    double e = v[RK_EXPOSED][r], o = fmax(0, v[RK_OPT][r] - v[RK_OPT_COMM][r]);
    double c = fmax(0, v[RK_STEP][r] - e - o), b = fb ? fmax(0, c - fb[r]) : 0;
    s->e[r] += e;
    s->o[r] += o;
    s->b[r] += b;
    s->c[r] += c - b;
    s->i[r] += slowest - v[RK_STEP][r];
  }
  s->step_ms += step_ms;
  s->slowest += slowest;
  s->n++;
}

static char *dup_field(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return ddp_xstrdup(json_is_string(v) ? json_string_value(v) : "");
}

/* The default label: the file name of `schedule` without ".lua", else that of `path` without ".jsonl". */
static char *default_label(const char *schedule, const char *path) {
  char *l = ddp_xstrdup(ddp_path_base(schedule[0] ? schedule : path));
  size_t n = strlen(l);
  const char *ext = schedule[0] ? ".lua" : ".jsonl";
  if (n > strlen(ext) && !strcmp(l + n - strlen(ext), ext)) l[n - strlen(ext)] = 0;
  return l;
}

/* The largest time (ms) or memory (GiB) a metrics value may hold, and tokens a step: far beyond any run,
 * and small enough that sums over many steps and ranks stay finite (1e308 gave NaN coordinates). */
#define VALUE_MAX 1e9
#define TOKENS_MAX 1e15

static int number(json_t *o, const char *key, double *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_number(v) || !isfinite(json_number_value(v))) return -1;
  *out = json_number_value(v);
  return 0;
}

/* The run line's fields into `run` (world, tokens_per_step, schedule, parallel). */
static int run_fields(json_t *o, const char *path, int lineno, ddp_plot_run *run, char *err, size_t errcap) {
  double world = 0, tokens = 0;
  if (number(o, "world", &world) || world != floor(world) || world < 1 || world > WORLD_MAX)
    return ddp_fail(err, errcap, "%s:%d: the run line's \"world\" is not an integer in 1..%d", path, lineno, WORLD_MAX);
  if (number(o, "tokens_per_step", &tokens) || !(tokens > 0) || tokens > TOKENS_MAX)
    return ddp_fail(err, errcap, "%s:%d: the run line's \"tokens_per_step\" is not a number in (0, %g]", path, lineno,
                    TOKENS_MAX);
  run->world = (int)world;
  run->tokens_per_step = tokens;
  run->schedule = dup_field(o, "schedule");
  run->parallel = dup_field(o, "parallel");
  return 0;
}

/* The optional per-rank array `key` into out[0 .. world): 1 read, 0 absent, -1 malformed. */
static int rank_array(json_t *o, const char *key, int world, double *out, const char *path, int lineno, char *err,
                      size_t errcap) {
  json_t *a = json_object_get(o, key);
  if (!a) return 0;
  if (!json_is_array(a) || json_array_size(a) != (size_t)world)
    return ddp_fail(err, errcap, "%s:%d: \"%s\" is not an array of %d numbers (one per rank)", path, lineno, key, world);
  for (int r = 0; r < world; r++) {
    json_t *x = json_array_get(a, (size_t)r);
    if (!json_is_number(x) || !(json_number_value(x) >= 0 && json_number_value(x) <= VALUE_MAX))
      return ddp_fail(err, errcap, "%s:%d: \"%s\"[%d] is not a number in [0, %g]", path, lineno, key, r, VALUE_MAX);
    out[r] = json_number_value(x);
  }
  return 1;
}

/* A step line into `acc` (timed) and `all`; fb is scratch for world x 2 numbers. */
static int step_fields(json_t *o, const char *path, int lineno, ddp_plot_run *run, double *const *v, double *fb,
                       sums *acc, sums *all, char *err, size_t errcap) {
  double step_ms;
  if (number(o, "step_ms", &step_ms) || !(step_ms > 0 && step_ms <= VALUE_MAX))
    return ddp_fail(err, errcap, "%s:%d: a step line without a number \"step_ms\" in (0, %g]", path, lineno, VALUE_MAX);
  int w = run->world, fr = 0, br = 0;
  if (!strncmp(run->parallel, "pipeline", 8)) {
    if ((fr = rank_array(o, "rank_forward_ms", w, fb, path, lineno, err, errcap)) < 0 ||
        (br = rank_array(o, "rank_backward_ms", w, fb + w, path, lineno, err, errcap)) < 0)
      return -1;
    for (int r = 0; fr && br && r < w; r++) fb[r] += fb[w + r];
  }
  const double *busy = fr && br ? fb : NULL;
  if (busy) run->has_bubble = 1;
  for (int k = 0; k < RK_COUNT; k++) {
    json_t *a = json_object_get(o, rank_fields[k]);
    if (!json_is_array(a) || json_array_size(a) != (size_t)run->world)
      return ddp_fail(err, errcap, "%s:%d: \"%s\" is not an array of %d numbers (one per rank; metrics of an older "
                      "ddprun?)", path, lineno, rank_fields[k], run->world);
    for (int r = 0; r < run->world; r++) {
      json_t *x = json_array_get(a, (size_t)r);
      if (!json_is_number(x) || !(json_number_value(x) >= 0 && json_number_value(x) <= VALUE_MAX))
        return ddp_fail(err, errcap, "%s:%d: \"%s\"[%d] is not a number in [0, %g]", path, lineno, rank_fields[k], r,
                        VALUE_MAX);
      v[k][r] = json_number_value(x);
    }
  }
  if (!json_is_true(json_object_get(o, "warmup"))) sums_add(acc, run->world, step_ms, v, busy);
  sums_add(all, run->world, step_ms, v, busy);
  for (int r = 0; r < run->world; r++) run->peak_GiB[r] = fmax(run->peak_GiB[r], v[RK_PEAK][r]);
  return 0;
}

typedef struct {
  const char *path;
  ddp_plot_run *run;
  sums acc, all;
  double *v[RK_COUNT], *fb;
} plot_ctx;

static int on_run(json_t *o, int lineno, void *arg, char *err, size_t errcap) {
  plot_ctx *c = arg;
  ddp_plot_run *run = c->run;
  if (run_fields(o, c->path, lineno, run, err, errcap)) return -1;
  sums_alloc(&c->acc, run->world);
  sums_alloc(&c->all, run->world);
  for (int k = 0; k < RK_COUNT; k++) c->v[k] = ddp_xcalloc((size_t)run->world, sizeof(double));
  c->fb = ddp_xcalloc(2 * (size_t)run->world, sizeof(double));
  run->peak_GiB = ddp_xcalloc((size_t)run->world, sizeof(double));
  return 0;
}

static int on_step(json_t *o, int lineno, void *arg, char *err, size_t errcap) {
  plot_ctx *c = arg;
  return step_fields(o, c->path, lineno, c->run, c->v, c->fb, &c->acc, &c->all, err, errcap);
}

int ddp_plot_read(const char *path, const char *label, ddp_plot_run *run, char *err, size_t errcap) {
  memset(run, 0, sizeof *run);
  plot_ctx c = {.path = path, .run = run};
  const ddp_metrics_visit vis = {on_run, on_step, &c};
  int rc = ddp_metrics_lines(path, METRICS_MAX_BYTES, &vis, err, errcap);
  if (rc == 0) {
    const sums *s = c.acc.n > 0 ? &c.acc : &c.all;
    int w = run->world;
    run->nsteps = s->n;
    run->step_ms = s->step_ms / s->n;
    run->slowest_ms = s->slowest / s->n;
    run->tokens_per_s = run->step_ms > 0 ? run->tokens_per_step / (run->step_ms * 1e-3) : 0;
    run->compute = ddp_xcalloc((size_t)w, sizeof(double));
    run->comm = ddp_xcalloc((size_t)w, sizeof(double));
    run->opt = ddp_xcalloc((size_t)w, sizeof(double));
    run->idle = ddp_xcalloc((size_t)w, sizeof(double));
    run->bubble = ddp_xcalloc((size_t)w, sizeof(double));
    for (int r = 0; r < w; r++) {
      run->bubble[r] = s->b[r] / s->n;
      run->compute[r] = s->c[r] / s->n;
      run->comm[r] = s->e[r] / s->n;
      run->opt[r] = s->o[r] / s->n;
      run->idle[r] = s->i[r] / s->n;
    }
    run->path = ddp_xstrdup(path);
    run->label = label ? ddp_xstrdup(label) : default_label(run->schedule, path);
  }
  sums_free(&c.acc);
  sums_free(&c.all);
  for (int k = 0; k < RK_COUNT; k++) free(c.v[k]);
  free(c.fb);
  if (rc) ddp_plot_run_free(run);
  return rc;
}

void ddp_plot_run_free(ddp_plot_run *run) {
  free(run->path), free(run->label), free(run->schedule), free(run->parallel);
  free(run->compute), free(run->comm), free(run->opt), free(run->idle), free(run->peak_GiB), free(run->bubble);
  memset(run, 0, sizeof *run);
}

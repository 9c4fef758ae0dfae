/* compiler/explain/compare.c: `ddpc explain PLAN --compare METRICS.jsonl` (docs/EXPLAIN.md, "Predicted
 * against measured"): the simulator's prediction of each rank's step next to ddprun's measurement of it.
 * The metrics file (runtime/driver/run.c) must hold its {"event": "run"} line, naming the plan's schedule,
 * parallel layout and world, before its step lines; warm-up steps ("warmup": true) are skipped (all steps
 * are used when every one is, as `ddpc plot` does, and the report says so) and each phase's measurement
 * is the median over the remaining steps: rank r's element of the per-rank array
 * (rank_step_ms, ...) where a step line has it, else, for rank 0 only, the scalar field (step_ms, ...).
 * Per phase: predicted ms, measured ms, measured / predicted and the prediction's error
 * (predicted - measured) / measured in percent; then the energy per step (the power model, energy.c:
 * idle_w times the measured step plus the joules above idle, against the measured energy: the mean power
 * over the timed steps from rank_energy_total_J and rank_energy_span_s, the last warm-up step's readings
 * or zero before them, times the timed steps' mean host_ms, as ddprun's closing line computes it); then
 * the targets as one verdict line per rank. */
#include "err.h"
#include "explain.h"
#include "metrics_lines.h"
#include "file.h"
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_BYTES ((size_t)1 << 30)
#define STEP_TARGET_PCT 10.0 /* the targets: the step within 10% ... */
#define EXPOSED_TARGET_MS 2.0 /* ... and the exposed communication within 2 ms */

enum { PH_STEP, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_COMM, PH_EXPOSED, PH_COUNT };
static const struct {
  const char *name, *scalar, *array;
} phase[PH_COUNT] = {
    {"step", "step_ms", "rank_step_ms"},
    {"forward", "forward_ms", "rank_forward_ms"},
    {"backward", "backward_ms", "rank_backward_ms"},
    {"optimizer", "optimizer_ms", "rank_optimizer_ms"},
    {"communication", "comm_ms", "rank_comm_ms"},
    {"exposed communication", "exposed_comm_ms", "rank_exposed_comm_ms"},
};

/* The step lines: v[(line * PH_COUNT + ph) * world + r], NAN where a line has no value; warm[line]. */
typedef struct measured {
  int world;
  size_t nlines, nwarm, cap; /* step lines, of which warm-up */
  int use_warm;              /* every line is a warm-up step: the medians use them all */
  double *v;
  double *energy;           /* [line * world * 2 + r * 2 + {0: J, 1: span s}], NAN where a line has none */
  double *host;             /* [line]: host_ms, NAN where a line has none */
  unsigned char *warm;
  json_t *recorded; /* the run line's "predicted" object, or NULL */
} measured;

/* A measurement (ms, J or s) is a number in [0, VALUE_MAX]: a negative time priced a negative energy, and
 * values near DBL_MAX overflow the sums over steps and ranks. */
#define VALUE_MAX 1e12
static int finite_number(json_t *x, double *out) {
  if (!json_is_number(x) || !(json_number_value(x) >= 0 && json_number_value(x) <= VALUE_MAX)) return 0;
  *out = json_number_value(x);
  return 1;
}

/* The run line names this plan: schedule, world and (when present) parallel must equal the plan's meta. */
static int check_run_line(json_t *o, const ddp_plan *p, const char *plan_path, const char *path, int lineno,
                          char *err, size_t errcap) {
  const ddp_meta *m = &p->meta;
  json_t *sch = json_object_get(o, "schedule"), *par = json_object_get(o, "parallel"), *w = json_object_get(o, "world");
  if (!json_is_string(sch) || !json_is_integer(w))
    return ddp_fail(err, errcap, "%s:%d: the run line has no \"schedule\" string or \"world\" integer", path, lineno);
  const char *ms = m->schedule_path ? m->schedule_path : "", *mp = m->parallel ? m->parallel : "";
  int same = !strcmp(json_string_value(sch), ms) && json_integer_value(w) == m->world &&
             (!json_is_string(par) || !strcmp(json_string_value(par), mp));
  if (!same)
    return ddp_fail(err, errcap, "%s: the metrics of another plan: its run line says schedule '%.200s', parallel "
                    "'%.100s', world %lld; %s is schedule '%.200s', parallel '%.100s', world %lld", path,
                    json_string_value(sch), json_is_string(par) ? json_string_value(par) : "?",
                    (long long)json_integer_value(w), plan_path, ms, mp, (long long)m->world);
  return 0;
}

/* One step line into the next row of mv. */
static int step_line(json_t *o, measured *mv, const char *path, int lineno, char *err, size_t errcap) {
  int w = mv->world;
  if (mv->nlines == mv->cap) {
    mv->cap = mv->cap ? 2 * mv->cap : 64;
    mv->v = ddp_xrealloc(mv->v, mv->cap * PH_COUNT * (size_t)w * sizeof(double));
    mv->warm = ddp_xrealloc(mv->warm, mv->cap);
    mv->energy = ddp_xrealloc(mv->energy, mv->cap * 2 * (size_t)w * sizeof(double));
    mv->host = ddp_xrealloc(mv->host, mv->cap * sizeof(double));
  }
  double *en = mv->energy + mv->nlines * 2 * (size_t)w;
  static const char *const energy_keys[2] = {"rank_energy_total_J", "rank_energy_span_s"};
  for (int k = 0; k < 2; k++) { /* a rank that could not read its counter prints null */
    json_t *a = json_object_get(o, energy_keys[k]);
    for (int r = 0; r < w; r++) en[2 * r + k] = NAN;
    if (!a || json_is_null(a)) continue;
    if (!json_is_array(a) || json_array_size(a) != (size_t)w)
      return ddp_fail(err, errcap, "%s:%d: \"%s\" is not an array of %d numbers (one per rank)", path, lineno,
                      energy_keys[k], w);
    for (int r = 0; r < w; r++) {
      json_t *x = json_array_get(a, (size_t)r);
      if (!json_is_null(x) && !finite_number(x, &en[2 * r + k]))
        return ddp_fail(err, errcap, "%s:%d: \"%s\"[%d] is not a number in [0, 1e12] or null", path, lineno,
                        energy_keys[k], r);
    }
  }
  json_t *h = json_object_get(o, "host_ms");
  mv->host[mv->nlines] = NAN;
  if (h && !json_is_null(h) && !finite_number(h, &mv->host[mv->nlines]))
    return ddp_fail(err, errcap, "%s:%d: \"host_ms\" is not a number in [0, 1e12]", path, lineno);
  double *row = mv->v + mv->nlines * PH_COUNT * (size_t)w;
  for (int ph = 0; ph < PH_COUNT; ph++) {
    double *out = row + (size_t)ph * (size_t)w;
    for (int r = 0; r < w; r++) out[r] = NAN;
    json_t *a = json_object_get(o, phase[ph].array), *s = json_object_get(o, phase[ph].scalar);
    if (a) {
      if (!json_is_array(a) || json_array_size(a) != (size_t)w)
        return ddp_fail(err, errcap, "%s:%d: \"%s\" is not an array of %d numbers (one per rank)", path, lineno,
                        phase[ph].array, w);
      for (int r = 0; r < w; r++)
        if (!finite_number(json_array_get(a, (size_t)r), &out[r]))
          return ddp_fail(err, errcap, "%s:%d: \"%s\"[%d] is not a number in [0, 1e12]", path, lineno, phase[ph].array, r);
    } else if (s && !finite_number(s, &out[0])) {
      return ddp_fail(err, errcap, "%s:%d: \"%s\" is not a number in [0, 1e12]", path, lineno, phase[ph].scalar);
    }
  }
  if (isnan(row[0]))
    return ddp_fail(err, errcap, "%s:%d: a step line without \"step_ms\" or \"rank_step_ms\"", path, lineno);
  mv->warm[mv->nlines] = json_is_true(json_object_get(o, "warmup"));
  mv->nwarm += mv->warm[mv->nlines];
  mv->nlines++;
  return 0;
}

typedef struct {
  const ddp_plan *p;
  const char *plan_path, *path;
  measured *mv;
} metrics_ctx;

static int on_run(json_t *o, int lineno, void *arg, char *err, size_t errcap) {
  metrics_ctx *c = arg;
  if (check_run_line(o, c->p, c->plan_path, c->path, lineno, err, errcap)) return -1;
  json_t *pred = json_object_get(o, "predicted");
  if (json_is_object(pred)) c->mv->recorded = json_incref(pred);
  return 0;
}

static int on_step(json_t *o, int lineno, void *arg, char *err, size_t errcap) {
  metrics_ctx *c = arg;
  return step_line(o, c->mv, c->path, lineno, err, errcap);
}

static int read_metrics(const char *path, const ddp_plan *p, const char *plan_path, measured *mv, char *err,
                        size_t errcap) {
  memset(mv, 0, sizeof *mv);
  mv->world = (int)p->meta.world;
  metrics_ctx c = {p, plan_path, path, mv};
  const ddp_metrics_visit v = {on_run, on_step, &c};
  int rc = ddp_metrics_lines(path, METRICS_MAX_BYTES, &v, err, errcap);
  mv->use_warm = mv->nwarm == mv->nlines;
  return rc;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of rank r's phase ph over the timed steps; NAN when no step has it. */
static double median(const measured *mv, int ph, int r) {
  double *x = ddp_xmalloc((mv->nlines + 1) * sizeof *x);
  size_t k = 0;
  for (size_t s = 0; s < mv->nlines; s++) {
    if (mv->warm[s] && !mv->use_warm) continue;
    double v = mv->v[(s * PH_COUNT + (size_t)ph) * (size_t)mv->world + (size_t)r];
    if (!isnan(v)) x[k++] = v;
  }
  double m = NAN;
  if (k) {
    qsort(x, k, sizeof *x, by_value);
    m = k % 2 ? x[k / 2] : (x[k / 2 - 1] + x[k / 2]) / 2;
  }
  free(x);
  return m;
}

/* Rank r's measured joules per step (NAN: n/a) and its mean power over the timed steps (*watts). */
static double measured_joules(const measured *mv, int r, double *watts) {
  *watts = NAN;
  double j0 = 0, s0 = 0, hsum = 0;
  size_t last = SIZE_MAX, nh = 0;
  for (size_t k = 0; k < mv->nlines; k++) {
    const double *en = mv->energy + k * 2 * (size_t)mv->world + 2 * (size_t)r;
    if (mv->warm[k] && !mv->use_warm) { /* the reference: the last warm-up step's readings */
      j0 = en[0], s0 = en[1];
      continue;
    }
    last = k;
    if (!isnan(mv->host[k])) hsum += mv->host[k], nh++;
  }
  if (last == SIZE_MAX || !nh) return NAN;
  const double *e1 = mv->energy + last * 2 * (size_t)mv->world + 2 * (size_t)r;
  if (isnan(j0) || isnan(s0) || isnan(e1[0]) || isnan(e1[1]) || !(e1[1] > s0)) return NAN;
  *watts = (e1[0] - j0) / (e1[1] - s0);
  return *watts * hsum / (double)nh * 1e-3;
}

/* The energy line of rank r: predicted (NAN without a power model) and measured joules per step. */
typedef struct energy_row {
  double pred, dyn, meas, watts, err_pct;
} energy_row;

static void energy_rows(const ddp_plan *p, const ddp_profile *pr, const measured *mv, int r, double step_ms,
                        energy_row *e) {
  ddp_step_energy se;
  e->pred = e->dyn = NAN;
  if (ddp_rank_energy(p, pr, r, &se) == 0 && !isnan(step_ms))
    e->dyn = se.j, e->pred = pr->power.idle_w * step_ms * 1e-3 + se.j;
  e->meas = measured_joules(mv, r, &e->watts);
  e->err_pct = !isnan(e->pred) && !isnan(e->meas) && e->meas > 0 ? (e->pred - e->meas) / e->meas * 100 : NAN;
}

/* One rank's rows: predicted (the step: the larger of the simulated step and the power floor) and measured ms
 * (NAN: n/a), ratio measured / predicted, error in percent. */
typedef struct row {
  double pred, meas, ratio, err_pct;
} row;

static void rank_rows(const ddp_plan *p, const ddp_profile *pr, const ddp_sim *s, const measured *mv, int r,
                      row out[PH_COUNT]) {
  const ddp_sim_rank *sr = &s->ranks[r];
  double ph[3];
  ddp_sim_phases(p, s, r, &ph[0], &ph[1], &ph[2]);
  /* communication and exposed communication as ddprun measures them (its function on the simulated
   * timers: the gradient collectives' brackets, exposed = what ends after the backward plus what runs
   * after the optimizer begins), not the simulator's step-less-free-communication figure */
  ddp_step_times st;
  ddp_sim_step_times(p, s, r, &st);
  double pred[PH_COUNT] = {ddp_rank_step_s(p, pr, r, sr->step_s, NULL), ph[0], ph[1], ph[2], st.comm_ms * 1e-3,
                           st.exposed_comm_ms * 1e-3};
  for (int k = 0; k < PH_COUNT; k++) {
    row *w = &out[k];
    w->pred = pred[k] >= 0 ? pred[k] * 1e3 : NAN;
    w->meas = median(mv, k, r);
    w->ratio = !isnan(w->pred) && !isnan(w->meas) && w->pred > 0 ? w->meas / w->pred : NAN;
    w->err_pct = !isnan(w->pred) && !isnan(w->meas) && w->meas > 0 ? (w->pred - w->meas) / w->meas * 100 : NAN;
  }
}

/* The verdicts: 1 yes, 0 no, -1 n/a. */
static int step_ok(const row *rw) {
  return isnan(rw[PH_STEP].err_pct) ? -1 : fabs(rw[PH_STEP].err_pct) <= STEP_TARGET_PCT;
}
static int exposed_ok(const row *rw) {
  const row *e = &rw[PH_EXPOSED];
  return isnan(e->pred) || isnan(e->meas) ? -1 : fabs(e->pred - e->meas) <= EXPOSED_TARGET_MS;
}
static const char *yes_no(int v) { return v < 0 ? "n/a" : v ? "yes" : "no"; }

static void cell(FILE *o, double v, int width, const char *fmt) {
  if (isnan(v)) fprintf(o, " %*s", width, "n/a");
  else fprintf(o, fmt, width, v);
}

static void text_report(const ddp_plan *p, const ddp_sim *s, const measured *mv, const char *plan_path,
                        const char *metrics_path, const ddp_profile *pr, int default_profile, int r0, int r1, FILE *o) {
  const ddp_meta *m = &p->meta;
  fprintf(o, "== explain --compare ==\n");
  fprintf(o, "plan: %s (schedule %s, world %lld)\n", plan_path, m->schedule_path ? m->schedule_path : "-",
          (long long)m->world);
  if (mv->use_warm)
    fprintf(o, "metrics: %s: %zu step lines, all warm-up steps, so medians of all %zu (no steady state)\n",
            metrics_path, mv->nlines, mv->nlines);
  else
    fprintf(o, "metrics: %s: %zu step lines, %zu warm-up skipped, medians of %zu\n", metrics_path, mv->nlines,
            mv->nwarm, mv->nlines - mv->nwarm);
  if (default_profile)
    fprintf(o, "profile: %s; no --profile given, so the predictions are the default's, not this machine's\n", pr->name);
  else fprintf(o, "profile: %s\n", pr->name);
  if (mv->recorded) {
    double rs = 0;
    json_t *rp = json_object_get(mv->recorded, "profile");
    if (finite_number(json_object_get(mv->recorded, "step_ms"), &rs))
      fprintf(o, "the run recorded the plan's compile-time prediction: step %.3f ms (profile %s)\n", rs,
              json_is_string(rp) ? json_string_value(rp) : "?");
  }
  fprintf(o, "error = (predicted - measured) / measured; negative: the prediction is low\n\n");
  for (int r = r0; r < r1; r++) {
    row rw[PH_COUNT];
    rank_rows(p, pr, s, mv, r, rw);
    fprintf(o, "== rank %d ==\n", r);
    fprintf(o, "%-22s %12s %12s %19s %9s\n", "phase", "predicted ms", "measured ms", "measured/predicted", "error %");
    for (int k = 0; k < PH_COUNT; k++) {
      fprintf(o, "%-22s", phase[k].name);
      cell(o, rw[k].pred, 12, " %*.3f");
      cell(o, rw[k].meas, 12, " %*.3f");
      cell(o, rw[k].ratio, 19, " %*.3f");
      cell(o, rw[k].err_pct, 9, " %+*.1f");
      fputc('\n', o);
    }
    energy_row er;
    energy_rows(p, pr, mv, r, rw[PH_STEP].meas, &er);
    if (isnan(er.pred)) fprintf(o, "energy per step: predicted n/a (%s)", pr->power.limit_w > 0 ? "no measured step" :
                                                                                    "the profile has no power model");
    else fprintf(o, "energy per step: predicted %.3f J (%.0f W idle x the measured step + %.3f J above idle)", er.pred,
                 pr->power.idle_w, er.dyn);
    if (isnan(er.meas)) fputs(", measured n/a (no energy readings in the metrics)", o);
    else fprintf(o, ", measured %.3f J (%.0f W)", er.meas, er.watts);
    if (!isnan(er.err_pct)) fprintf(o, "; error %+.1f%%", er.err_pct);
    fputc('\n', o);
    fprintf(o, "verdict: step within 10%%: %s; exposed communication within 2 ms: %s\n\n", yes_no(step_ok(rw)),
            yes_no(exposed_ok(rw)));
  }
}

static json_t *num_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }
static json_t *verdict_json(int v) { return v < 0 ? json_null() : json_boolean(v); }

static int json_report(const ddp_plan *p, const ddp_sim *s, const measured *mv, const char *plan_path,
                       const char *metrics_path, const ddp_profile *pr, int default_profile, int r0, int r1, FILE *o) {
  json_t *root = json_object(), *ranks = json_array();
  json_object_set_new(root, "plan", json_string(plan_path));
  json_object_set_new(root, "metrics", json_string(metrics_path));
  json_object_set_new(root, "profile", json_string(pr->name));
  json_object_set_new(root, "default_profile", json_boolean(default_profile));
  json_object_set_new(root, "world", json_integer(s->world));
  json_object_set_new(root, "step_lines", json_integer((json_int_t)mv->nlines));
  json_object_set_new(root, "warmup_skipped", json_integer((json_int_t)(mv->use_warm ? 0 : mv->nwarm)));
  json_object_set_new(root, "medians_of", json_integer((json_int_t)(mv->use_warm ? mv->nlines : mv->nlines - mv->nwarm)));
  json_object_set(root, "recorded_prediction", mv->recorded ? mv->recorded : json_null());
  for (int r = r0; r < r1; r++) {
    row rw[PH_COUNT];
    rank_rows(p, pr, s, mv, r, rw);
    json_t *jr = json_object(), *phs = json_array();
    json_object_set_new(jr, "rank", json_integer(r));
    for (int k = 0; k < PH_COUNT; k++) {
      json_t *e = json_object();
      json_object_set_new(e, "phase", json_string(phase[k].name));
      json_object_set_new(e, "predicted_ms", num_or_null(rw[k].pred));
      json_object_set_new(e, "measured_ms", num_or_null(rw[k].meas));
      json_object_set_new(e, "ratio", num_or_null(rw[k].ratio));
      json_object_set_new(e, "error_pct", num_or_null(rw[k].err_pct));
      json_array_append_new(phs, e);
    }
    json_object_set_new(jr, "phases", phs);
    energy_row er;
    energy_rows(p, pr, mv, r, rw[PH_STEP].meas, &er);
    json_t *je = json_object();
    json_object_set_new(je, "predicted_joules", num_or_null(er.pred));
    json_object_set_new(je, "joules_above_idle", num_or_null(er.dyn));
    json_object_set_new(je, "measured_joules", num_or_null(er.meas));
    json_object_set_new(je, "measured_watts", num_or_null(er.watts));
    json_object_set_new(je, "error_pct", num_or_null(er.err_pct));
    json_object_set_new(jr, "energy", je);
    json_object_set_new(jr, "step_within_10pct", verdict_json(step_ok(rw)));
    json_object_set_new(jr, "exposed_within_2ms", verdict_json(exposed_ok(rw)));
    json_array_append_new(ranks, jr);
  }
  json_object_set_new(root, "ranks", ranks);
  int rc = json_dumpf(root, o, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
  fputc('\n', o);
  json_decref(root);
  return rc;
}

int ddp_explain_compare(const ddp_plan *p, const char *plan_path, const char *metrics_path, const ddp_profile *pr,
                        int default_profile, int rank, int json, FILE *o, char *err, size_t errcap) {
  measured mv;
  int rc = read_metrics(metrics_path, p, plan_path, &mv, err, errcap);
  char serr[512] = "";
  ddp_sim *s = rc == 0 ? ddp_explain_sim(p, pr, serr, sizeof serr) : NULL;
  if (rc == 0 && !s) rc = ddp_fail(err, errcap, "%s: the simulator cannot run on this plan: %s", plan_path, serr);
  if (rc == 0) {
    int r0 = rank < 0 ? 0 : rank, r1 = rank < 0 ? s->world : rank + 1;
    if (!json) text_report(p, s, &mv, plan_path, metrics_path, pr, default_profile, r0, r1, o);
    else if (json_report(p, s, &mv, plan_path, metrics_path, pr, default_profile, r0, r1, o))
      rc = ddp_fail(err, errcap, "cannot write the JSON report");
  }
  ddp_sim_free(s);
  free(mv.v);
  free(mv.energy);
  free(mv.host);
  free(mv.warm);
  json_decref(mv.recorded);
  return rc;
}

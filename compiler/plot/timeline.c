/* compiler/plot/timeline.c: `ddpc plot timeline`: one step of every worker from `ddprun --trace` files (one
 * per rank, runtime/driver/trace.c), a row per worker on one time axis (ms since that worker's
 * step_begin): a box per pipeline microbatch range (pp.fwd / pp.bwd / pp.bwdw .mb<i>.chunk<c>; a plan
 * without them: its forward and backward ranges), the optimizer range, the send/receive instructions
 * (pp.send.* / pp.recv.*) as thin bars under the boxes, idle time as the row's grey background. It also
 * reports per worker the times of plot.h's ddp_timeline_worker (JSON lines on `out`) and the bubble
 * measured against the schedule's formula (ddp_pipe_bubble_formula). */
#include "err.h"
#include "file.h"
#include "plot.h"
#include "svg.h"
#include "vocab.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_MAX_BYTES ((size_t)1 << 30)
#define WORKERS_MAX 4096

enum { K_FWD, K_BWD, K_BWDW, K_OPT, K_SEND, K_RECV, K_COUNT };
static const char *const kind_name[K_COUNT] = {"forward", "backward", "backward, weight gradient (zero bubble)",
                                                "optimizer", "send", "receive"};
static const char *const kind_colour[K_COUNT] = {"#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#d62728", "#8c564b"};

typedef struct span {
  double t0, t1; /* ms since the worker's step began */
  int kind, mb, chunk;
  char *name;
} span;

typedef struct worker {
  int rank, world;   /* otherData's */
  char *plan_schedule; /* otherData.schedule: the schedule the plan came from */
  double step_ms;
  span *v;
  int n, cap;
  ddp_timeline_meta meta;
  ddp_timeline_worker t;
} worker;

double ddp_pipe_bubble_formula(const char *schedule, int p, int m, int v, const double *fbw, const char **formula) {
  const char *f = NULL;
  double b = -1;
  if (p >= 1 && m >= 1 && schedule && fbw && !strcmp(schedule, "zero_bubble") && fbw[0] > 0 && fbw[1] > 0 &&
      fbw[2] > 0 && fbw[0] + fbw[1] > fbw[2]) {
    /* ZB-H1's bubble, (p-1)(F+B-W) per stage (Qi et al., "Zero Bubble Pipeline Parallelism"), over the stage's
     * work m(F+B+W) plus it, with the trace's mean F, B and W */
    double u = (p - 1) * (fbw[0] + fbw[1] - fbw[2]);
    f = "(p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W)) (ZB-H1, the trace's mean F, B, W)";
    b = u / (m * (fbw[0] + fbw[1] + fbw[2]) + u);
  } else if (p >= 1 && m >= 1 && schedule) {
    if (!strcmp(schedule, "gpipe") || !strcmp(schedule, "1f1b"))
      f = "(p-1)/(m+p-1)", b = (double)(p - 1) / (m + p - 1);
    else if (!strcmp(schedule, "interleaved") && v >= 1)
      f = "(p-1)/(v*m+p-1)", b = (double)(p - 1) / ((double)v * m + p - 1);
    else if (!strcmp(schedule, "zero_bubble"))
      f = "(p-1)/(3m+p-1) (ZB-H1 with equal F, B, W times)", b = (double)(p - 1) / (3.0 * m + p - 1);
    else if (!strcmp(schedule, "sequential"))
      f = "(p-1)/p", b = (double)(p - 1) / p;
  }
  if (formula) *formula = f;
  return b;
}

static void push_span(worker *w, double t0, double t1, int kind, int mb, int chunk, const char *name) {
  if (w->n == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 64;
    w->v = ddp_xrealloc(w->v, (size_t)w->cap * sizeof *w->v);
  }
  w->v[w->n++] = (span){t0, t1, kind, mb, chunk, ddp_xstrdup(name)};
}

static void worker_free(worker *w) {
  for (int i = 0; i < w->n; i++) free(w->v[i].name);
  free(w->v);
  free(w->meta.schedule);
  free(w->meta.parallel);
  free(w->plan_schedule);
}

/* "pp.fwd.mb3.chunk1" -> K_FWD, 3, 1; -1 when `s` is not a pipeline range name. */
static int pp_range(const char *s, int *mb, int *chunk) {
  static const char *const pre[3] = {"pp.fwd.mb", "pp.bwd.mb", "pp.bwdw.mb"};
  for (int k = 0; k < 3; k++) {
    size_t n = strlen(pre[k]);
    char tail;
    if (!strncmp(s, pre[k], n) && sscanf(s + n, "%d.chunk%d%c", mb, chunk, &tail) == 2 && *mb >= 0 && *chunk >= 0)
      return k == 0 ? K_FWD : k == 1 ? K_BWD : K_BWDW;
  }
  return -1;
}

static int num(json_t *o, const char *key, double *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_number(v) || !isfinite(json_number_value(v))) return -1;
  *out = json_number_value(v);
  return 0;
}

static int int_field(json_t *o, const char *key, long long lo, long long hi, long long *out) {
  double d;
  if (num(o, key, &d) || d != floor(d) || d < (double)lo || d > (double)hi) return -1;
  *out = (long long)d;
  return 0;
}

static char *str_field(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? ddp_xstrdup(json_string_value(v)) : NULL;
}

/* otherData: rank (required), the parallel layout and the pipeline's meta (when the plan has one). */
static int read_meta(json_t *od, const char *path, worker *w, char *err, size_t errcap) {
  long long r, x;
  if (!json_is_object(od) || int_field(od, "rank", 0, WORKERS_MAX - 1, &r))
    return ddp_fail(err, errcap, "%s: no \"otherData\".\"rank\" (an integer in 0..%d); not a trace of ddprun --trace",
                    path, WORKERS_MAX - 1);
  w->rank = (int)r;
  if (int_field(od, "world", 1, WORKERS_MAX, &x) || r >= x)
    return ddp_fail(err, errcap, "%s: \"otherData\".\"world\" is not an integer in %lld..%d (above the rank %lld); "
                    "not a trace of ddprun --trace", path, r + 1, WORKERS_MAX, r);
  w->world = (int)x;
  w->plan_schedule = str_field(od, "schedule");
  w->meta.parallel = str_field(od, "parallel");
  if (!json_object_get(od, "pipe_stages")) return 0;
  static const char *const keys[4] = {"pipe_stages", "pipe_microbatches", "pipe_virtual", "pipe_replicas"};
  int *dst[4] = {&w->meta.stages, &w->meta.microbatches, &w->meta.virtual_stages, &w->meta.replicas};
  for (int k = 0; k < 4; k++) {
    if (int_field(od, keys[k], k == 2 ? 0 : 1, 1 << 20, &x))
      return ddp_fail(err, errcap, "%s: \"otherData\".\"%s\" is not a positive integer", path, keys[k]);
    *dst[k] = (int)x;
  }
  w->meta.schedule = str_field(od, "pipe_schedule");
  for (int k = 0; w->meta.schedule && k < PIPE_COUNT; k++)
    if (!strcmp(w->meta.schedule, ddp_pipe_schedule_names[k])) return 0;
  return ddp_fail(err, errcap, "%s: \"otherData\".\"pipe_schedule\" is not one of sequential, gpipe, 1f1b, "
                  "interleaved, zero_bubble", path);
}

/* The events into w's spans and step bounds (ms). */
static int read_events(json_t *ev, const char *path, worker *w, char *err, size_t errcap) {
  double begin = NAN, end = NAN, rbegin = NAN, rend = NAN, lo = INFINITY, hi = -INFINITY;
  size_t i;
  json_t *e;
  int pp = 0, nx = 0;
  json_array_foreach(ev, i, e) {
    json_t *ph = json_object_get(e, "ph"), *nm = json_object_get(e, "name");
    if (!json_is_object(e) || !json_is_string(ph))
      return ddp_fail(err, errcap, "%s: traceEvents[%zu] is not an object with a string \"ph\"", path, i);
    const char *p = json_string_value(ph), *name = json_is_string(nm) ? json_string_value(nm) : "";
    double ts, dur;
    if (!strcmp(p, "M")) continue;
    if (num(e, "ts", &ts))
      return ddp_fail(err, errcap, "%s: traceEvents[%zu] (\"%.60s\") has no finite \"ts\"", path, i, name);
    ts *= 1e-3;
    if (!strcmp(p, "i")) {
      if (!strcmp(name, "step_begin")) begin = ts;
      if (!strcmp(name, "step_end")) end = ts;
      continue;
    }
    if (strcmp(p, "X")) continue;
    if (num(e, "dur", &dur) || dur < 0)
      return ddp_fail(err, errcap, "%s: traceEvents[%zu] (\"%.60s\") has no \"dur\" >= 0", path, i, name);
    dur *= 1e-3;
    nx++;
    lo = fmin(lo, ts), hi = fmax(hi, ts + dur);
    json_t *cat = json_object_get(e, "cat"), *args = json_object_get(e, "args");
    json_t *kind = json_is_object(args) ? json_object_get(args, "kind") : NULL;
    int mb = -1, chunk = -1, k;
    if (json_is_string(cat) && !strcmp(json_string_value(cat), "range")) {
      const char *kn = json_is_string(kind) ? json_string_value(kind) : "";
      if ((k = pp_range(name, &mb, &chunk)) >= 0) pp = 1;
      else if (!strcmp(kn, "forward")) k = K_FWD;
      else if (!strcmp(kn, "backward")) k = K_BWD;
      else if (!strcmp(kn, "optimizer")) k = K_OPT;
      else if (!strcmp(kn, "step")) {
        rbegin = ts, rend = ts + dur;
        continue;
      } else continue;
      push_span(w, ts, ts + dur, k, mb, chunk, name);
    } else if (!strncmp(name, "pp.send.", 8) || !strncmp(name, "pp.recv.", 8)) {
      push_span(w, ts, ts + dur, name[3] == 's' ? K_SEND : K_RECV, -1, -1, name);
    }
  }
  if (!isnan(begin) && !isnan(end) && end > begin) lo = begin, hi = end;
  else if (!isnan(rbegin)) lo = rbegin, hi = rend;
  if (nx == 0 || !(hi > lo)) return ddp_fail(err, errcap, "%s: no timed spans in the step; nothing to draw", path);
  /* With pipeline ranges present, the plan's whole-phase forward/backward ranges (if any) are not boxes. */
  int n = 0;
  for (int j = 0; j < w->n; j++) {
    span s = w->v[j];
    if (pp && (s.kind == K_FWD || s.kind == K_BWD) && s.mb < 0) {
      free(s.name);
      continue;
    }
    s.t0 = fmax(s.t0, lo) - lo, s.t1 = fmin(s.t1, hi) - lo;
    if (s.t1 < s.t0) s.t1 = s.t0;
    w->v[n++] = s;
  }
  w->n = n;
  w->step_ms = hi - lo;
  return 0;
}

static int read_trace(const char *path, worker *w, char *err, size_t errcap) {
  size_t len = 0;
  char *text = ddp_read_file(path, TRACE_MAX_BYTES, &len, err, errcap);
  if (!text) return -1;
  if (strlen(text) != len) {
    free(text);
    return ddp_fail(err, errcap, "%s: holds a NUL byte; not a trace", path);
  }
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  free(text);
  if (!root) return ddp_fail(err, errcap, "%s:%d: not JSON (%s)", path, je.line, je.text);
  json_t *ev = json_is_object(root) ? json_object_get(root, "traceEvents") : NULL;
  int rc = json_is_array(ev) ? 0 : ddp_fail(err, errcap, "%s: no \"traceEvents\" array; not a Chrome trace", path);
  if (rc == 0) rc = read_meta(json_object_get(root, "otherData"), path, w, err, errcap);
  if (rc == 0) rc = read_events(ev, path, w, err, errcap);
  json_decref(root);
  return rc;
}

static int by_start(const void *a, const void *b) {
  double x = ((const span *)a)->t0, y = ((const span *)b)->t0;
  return x < y ? -1 : x > y;
}

/* The time covered by the spans whose kind is in `mask`. */
static double covered(const worker *w, unsigned mask) {
  span *s = ddp_xcalloc((size_t)w->n + 1, sizeof *s);
  int n = 0;
  for (int i = 0; i < w->n; i++)
    if (mask & (1u << w->v[i].kind)) s[n++] = w->v[i];
  qsort(s, (size_t)n, sizeof *s, by_start);
  double total = 0, a = 0, b = -1;
  for (int i = 0; i < n; i++) {
    if (s[i].t0 > b) {
      if (b > a) total += b - a;
      a = s[i].t0, b = s[i].t1;
    } else b = fmax(b, s[i].t1);
  }
  if (b > a) total += b - a;
  free(s);
  return total;
}

/* w's times in a step of `slowest` ms (the longest worker's step). */
static void worker_times(worker *w, double slowest) {
  ddp_timeline_worker *t = &w->t;
  t->rank = w->rank;
  t->step_ms = w->step_ms;
  t->forward_ms = covered(w, 1u << K_FWD);
  t->backward_ms = covered(w, 1u << K_BWD | 1u << K_BWDW);
  t->optimizer_ms = covered(w, 1u << K_OPT);
  t->sendrecv_ms = covered(w, 1u << K_SEND | 1u << K_RECV);
  t->idle_ms = fmax(0, slowest - covered(w, 1u << K_FWD | 1u << K_BWD | 1u << K_BWDW | 1u << K_OPT));
  double pipe = slowest - t->optimizer_ms;
  t->bubble = pipe > 0 ? t->idle_ms / pipe : 0;
}

static int by_rank(const void *a, const void *b) {
  return ((const worker *)a)->rank - ((const worker *)b)->rank;
}

static int same_meta(const ddp_timeline_meta *a, const ddp_timeline_meta *b) {
  return a->stages == b->stages && a->microbatches == b->microbatches && a->virtual_stages == b->virtual_stages &&
         a->replicas == b->replicas && !strcmp(a->schedule ? a->schedule : "", b->schedule ? b->schedule : "");
}

static void draw(FILE *f, const worker *ws, int n, double xmax, const ddp_timeline_meta *m) {
  const double row = 34, box = 20;
  ddp_svg_axes a = {.w = 1100, .left = 130, .right = 20, .top = 50, .bottom = 104, .x0 = 0, .x1 = xmax * 1.02,
                    .y0 = 0, .y1 = 1, .ystep = -1};
  a.h = a.top + row * n + 8 + a.bottom;
  char title[300];
  if (m->stages > 0)
    snprintf(title, sizeof title, "One step per worker: %s, %d stages, %d microbatches%s", m->schedule, m->stages,
             m->microbatches, m->virtual_stages > 1 ? ", interleaved" : "");
  else snprintf(title, sizeof title, "One step per worker");
  if (m->stages > 0 && m->virtual_stages > 1)
    snprintf(title + strlen(title), sizeof title - strlen(title), " (%d chunks per stage)", m->virtual_stages);
  ddp_svg_frame(f, &a, title, "milliseconds since the worker's step began", "");
  for (int r = 0; r < n; r++) {
    const worker *w = &ws[r];
    double y = a.top + 4 + row * r, x0 = ddp_svg_px(&a, 0), x1 = ddp_svg_px(&a, xmax);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">worker %d", a.left - 6, y + 15, w->rank);
    if (m->stages > 0) fprintf(f, " (stage %d)", w->rank % m->stages);
    fputs("</text>\n", f);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#e5e5e5\"><title>worker %d idle: "
            "%.3f ms of %.3f (bubble %.3f)</title></rect>\n", x0, y, x1 - x0, box, w->rank, w->t.idle_ms, xmax,
            w->t.bubble);
    for (int i = 0; i < w->n; i++) {
      const span *s = &w->v[i];
      int thin = s->kind == K_SEND || s->kind == K_RECV;
      double bx = ddp_svg_px(&a, s->t0), bw = fmax(0.5, ddp_svg_px(&a, s->t1) - bx);
      double by = thin ? y + box + 2 + (s->kind == K_RECV ? 4 : 0) : y, bh = thin ? 3 : box;
      fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"%s><title>", bx, by, bw, bh,
              kind_colour[s->kind], thin ? "" : " stroke=\"#ffffff\" stroke-width=\"0.5\"");
      ddp_svg_text(f, s->name);
      fprintf(f, ": %.3f .. %.3f ms (%.3f ms)</title></rect>\n", s->t0, s->t1, s->t1 - s->t0);
      if (!thin && s->mb >= 0) {
        char lab[32];
        if (m->virtual_stages > 1) snprintf(lab, sizeof lab, "%d.%d", s->mb, s->chunk);
        else snprintf(lab, sizeof lab, "%d", s->mb);
        if (bw >= 7.0 * (double)strlen(lab) + 2)
          fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#ffffff\" text-anchor=\"middle\">%s</text>\n",
                  bx + bw / 2, y + 14, lab);
      }
    }
  }
  double ly = a.h - a.bottom + 44, lx = a.left;
  for (int k = 0; k <= K_COUNT; k++) {
    const char *c = k < K_COUNT ? kind_colour[k] : "#e5e5e5", *nm = k < K_COUNT ? kind_name[k] : "idle";
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"%d\" fill=\"%s\"/>\n", lx, ly - 10,
            k == K_SEND || k == K_RECV ? 4 : 10, c);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n", lx + 18, ly, nm);
    lx += 26 + 6.2 * (double)strlen(nm);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">boxes: microbatch%s; send/receive drawn thin under the "
          "boxes; grey: idle</text>\n", a.left, ly + 20, m->virtual_stages > 1 ? ".chunk" : "");
}

int ddp_plot_timeline(const char *out, const char *const *paths, int n, FILE *report, char *err, size_t errcap) {
  if (n > WORKERS_MAX) return ddp_fail(err, errcap, "%d trace files; at most %d", n, WORKERS_MAX);
  worker *ws = ddp_xcalloc((size_t)n, sizeof *ws);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) rc = read_trace(paths[i], &ws[i], err, errcap);
  if (rc == 0) qsort(ws, (size_t)n, sizeof *ws, by_rank);
  for (int i = 1; i < n && rc == 0; i++) {
    if (ws[i].rank == ws[i - 1].rank) rc = ddp_fail(err, errcap, "two trace files of rank %d", ws[i].rank);
    else if (!same_meta(&ws[i].meta, &ws[0].meta) || ws[i].world != ws[0].world ||
             strcmp(ws[i].plan_schedule ? ws[i].plan_schedule : "", ws[0].plan_schedule ? ws[0].plan_schedule : "") ||
             strcmp(ws[i].meta.parallel ? ws[i].meta.parallel : "", ws[0].meta.parallel ? ws[0].meta.parallel : ""))
      rc = ddp_fail(err, errcap, "the traces of ranks %d and %d come from different plans (their schedule, parallel "
                    "layout, world or pipeline settings differ)", ws[0].rank, ws[i].rank);
  }
  /* every worker of the plan: without one, the slowest step, idle and bubble are of some workers only */
  for (int i = 0; i < n && rc == 0 && n != ws[0].world; i++)
    if (ws[i].rank != i || i == n - 1)
      rc = ddp_fail(err, errcap, "traces of %d of the plan's %d ranks: rank %d is missing (give one per rank)", n,
                    ws[0].world, ws[i].rank != i ? i : n);
  double xmax = 0, bubble = 0;
  for (int i = 0; i < n && rc == 0; i++) xmax = fmax(xmax, ws[i].step_ms);
  for (int i = 0; i < n && rc == 0; i++) {
    worker_times(&ws[i], xmax);
    bubble += ws[i].t.bubble / n;
  }
  if (rc == 0) {
    ddp_atomic_file af = {0};
    rc = ddp_atomic_open(&af, out, err, errcap);
    if (rc == 0) {
      draw(af.f, ws, n, xmax, &ws[0].meta);
      ddp_svg_end(af.f);
      rc = ddp_atomic_commit(&af, err, errcap);
    }
  }
  if (rc == 0) {
    const ddp_timeline_meta *m = &ws[0].meta;
    for (int i = 0; i < n; i++) {
      const ddp_timeline_worker *t = &ws[i].t;
      fprintf(report, "{\"worker\": %d, ", t->rank);
      if (m->stages > 0) fprintf(report, "\"stage\": %d, ", t->rank % m->stages);
      else fprintf(report, "\"stage\": null, ");
      fprintf(report, "\"step_ms\": %.4f, \"slowest_step_ms\": %.4f, \"forward_ms\": %.4f, \"backward_ms\": %.4f, \"sendrecv_ms\": %.4f, "
              "\"optimizer_ms\": %.4f, \"idle_ms\": %.4f, \"bubble\": %.4f}\n", t->step_ms, xmax, t->forward_ms,
              t->backward_ms, t->sendrecv_ms, t->optimizer_ms, t->idle_ms, t->bubble);
    }
    const char *formula = NULL;
    double fbw[3] = {0, 0, 0}, cnt[3] = {0, 0, 0}; /* mean forward, backward, weight-gradient box (ms) */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < ws[i].n; j++) {
        const span *s = &ws[i].v[j];
        int k = s->kind == K_FWD ? 0 : s->kind == K_BWD ? 1 : s->kind == K_BWDW ? 2 : -1;
        if (k >= 0 && s->mb >= 0) fbw[k] += s->t1 - s->t0, cnt[k]++;
      }
    for (int k = 0; k < 3; k++) fbw[k] = cnt[k] > 0 ? fbw[k] / cnt[k] : 0;
    double predicted = m->stages > 0 ? ddp_pipe_bubble_formula(m->schedule, m->stages, m->microbatches,
                                                               m->virtual_stages, fbw, &formula) : -1;
    fprintf(report, "{\"event\": \"timeline\", \"workers\": %d, \"bubble_measured\": %.4f", n, bubble);
    if (m->stages > 0)
      fprintf(report, ", \"schedule\": \"%s\", \"stages\": %d, \"microbatches\": %d, \"virtual_stages\": %d",
              m->schedule, m->stages, m->microbatches, m->virtual_stages);
    else /* the same keys for every plan: null where there is no pipeline */
      fprintf(report, ", \"schedule\": null, \"stages\": null, \"microbatches\": null, \"virtual_stages\": null");
    if (formula) fprintf(report, ", \"bubble_formula\": %.4f, \"formula\": \"%s\"", predicted, formula);
    else fprintf(report, ", \"bubble_formula\": null, \"formula\": null");
    fputs("}\n", report);
  }
  for (int i = 0; i < n; i++) worker_free(&ws[i]);
  free(ws);
  return rc;
}

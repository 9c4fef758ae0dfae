/* compiler/explain/buckets.c: `ddpc explain buckets SCHEDULE.lua [--profile FILE] [--sizes LIST]
 * [--metrics M.jsonl ...] [-o overhead.svg] [--json]` (docs/EXPLAIN.md, "Bucket size"): the schedule compiled
 * without kernels at each bucket size (parallel.bucket_mb) and simulated; the predicted overhead (step minus
 * the step with free communication); the simulation's optimum over a log grid; the seeds' closed form
 * (s_b* = sqrt(s o w)) and an overlap model with the backward's compute time; measured medians from
 * ddprun metrics files of bucketed runs beside the prediction, in the table and an SVG. */
#include "args.h"
#include "err.h"
#include "file.h"
#include "svg.h"
#include "xmodel.h"
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GRID = 20, MAX_SIZES = 64, MAX_METRICS = 64 };
#define MIB 1048576.0

typedef struct bpoint {
  double mb;
  ddp_xeval e;
  double measured_ms; /* median step_ms of a metrics file at this size, or -1 */
} bpoint;

typedef struct measured {
  const char *path;
  double mb, median_ms;
  int nsteps;
  long long world;      /* the run line's */
  char parallel[1024];  /* the run line's "parallel" */
  char schedule[1024];  /* the run line's "schedule": the path ddpc compiled */
} measured;

/* The seeds' model (CS336 Assignment 3 write-up, ddp_bucketed_benchmarking ii): s gradient bytes, w the
 * all-reduce algorithm bandwidth, o the per-call overhead; T(s_b) = (s + s_b)/w + s o / s_b. */
typedef struct model {
  double s, w, o, tb; /* bytes, bytes/s, s, s (tb: backward compute; -1 unknown) */
  int world;
} model;
static double seeds_T(const model *m, double sb) {
  if (sb > m->s) sb = m->s; /* a bucket holds at most the whole model: n_b >= 1 */
  return (m->s + sb) / m->w + m->s * m->o / sb; }
static double seeds_opt(const model *m) { return sqrt(m->s * m->o * m->w); }
/* The overlap model: n_b = s/s_b buckets become ready evenly over the backward (g = t_b s_b / s apart), each
 * all-reduce costs c = o + s_b/w on one stream; the time after the backward is max(c, n_b c - (n_b - 1) g). */
static double overlap_T(const model *m, double sb) {
  if (sb > m->s) sb = m->s;
  double nb = m->s / sb, c = m->o + sb / m->w, g = m->tb * sb / m->s;
  double t = nb * c - (nb - 1) * g;
  return t > c ? t : c;
}
/* Its minimum: s sqrt(o / t_b) (the minimum of the pipelined branch), capped where the last bucket's c
 * takes over (o / (t_b/s - 1/w), when the backward outlasts s/w) and at s. */
static double overlap_opt(const model *m) {
  double sb = m->s * sqrt(m->o / m->tb);
  double a = m->tb / m->s - 1 / m->w;
  if (a > 0 && m->o / a < sb) sb = m->o / a;
  return sb < m->s ? sb : m->s;
}

/* The schedule at bucket size mb (mb <= 0: as written), compiled and simulated (e NULL: only checked). */
static int eval_size(const char *path, double mb, const ddp_profile *pr, ddp_xeval *e, char *err, size_t errcap) {
  char set[64], lerr[1024];
  snprintf(set, sizeof set, "parallel.bucket_mb=%.17g", mb);
  const char *sets[1] = {set};
  ddp_schedule *s = ddp_schedule_load(path, sets, mb > 0, lerr, sizeof lerr);
  if (!s) return ddp_fail(err, errcap, "%s", lerr);
  int rc = 0;
  if (s->sync != SYNC_BUCKETED || s->bucket_policy || s->stages > 0 || s->ranks < 2 || s->shard == SHARD_ZERO3)
    rc = ddp_fail(err, errcap, "%s: not a bucketed data-parallel schedule on 2+ ranks (needs ddp{ sync = "
                  "\"bucketed\", ranks >= 2 } without a buckets function; fsdp{} and ZeRO-3 gather units, not "
                  "buckets)", path);
  if (rc == 0 && e) rc = ddp_xeval_schedule(s, pr, e, err, errcap);
  if (rc == 0 && e && e->sim_err[0]) rc = ddp_fail(err, errcap, "%s: %s", path, e->sim_err);
  ddp_schedule_free(s);
  return rc;
}

static int by_mb(const void *a, const void *b) {
  double x = ((const bpoint *)a)->mb, y = ((const bpoint *)b)->mb;
  return (x > y) - (x < y);
}
static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A metrics file: bucket_mb from the run line's "parallel" text, the median step_ms of the steps not marked
 * warmup (all when every one is). */
static int read_metrics(const char *path, measured *m, char *err, size_t errcap) {
  size_t len = 0;
  char *text = ddp_read_file(path, (size_t)1 << 30, &len, err, errcap);
  if (!text) return -1;
  double *timed = NULL, *all = NULL;
  size_t nt = 0, na = 0, cap = 0;
  int have_run = 0, rc = 0, lineno = 0;
  m->path = path, m->mb = -1;
  for (char *line = text; rc == 0 && line && *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    lineno++;
    json_error_t je;
    json_t *o = n ? json_loadb(line, n, 0, &je) : NULL;
    if (n && (!o || !json_is_object(o)))
      rc = ddp_fail(err, errcap, "%s:%d: not a JSON object", path, lineno);
    else if (o && json_is_string(json_object_get(o, "event")) &&
             !strcmp(json_string_value(json_object_get(o, "event")), "run")) {
      const char *par = json_string_value(json_object_get(o, "parallel"));
      const char *at = par ? strstr(par, "bucket_mb=") : NULL;
      char *end = NULL;
      double mb = at ? strtod(at + 10, &end) : -1;
      if (!at || end == at + 10 || !(mb > 0) || !isfinite(mb))
        rc = ddp_fail(err, errcap, "%s:%d: the run line's \"parallel\" has no bucket_mb=... (not a bucketed run)", path,
                      lineno);
      m->mb = mb, have_run = 1;
      json_t *w = json_object_get(o, "world");
      m->world = json_is_integer(w) ? json_integer_value(w) : -1;
      snprintf(m->parallel, sizeof m->parallel, "%s", par ? par : "");
      const char *sch = json_string_value(json_object_get(o, "schedule"));
      snprintf(m->schedule, sizeof m->schedule, "%s", sch ? sch : "");
    } else if (o && json_object_get(o, "step")) {
      json_t *v = json_object_get(o, "step_ms");
      if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) <= 0)
        rc = ddp_fail(err, errcap, "%s:%d: a step line without a positive number \"step_ms\"", path, lineno);
      else {
        if (na == cap) {
          cap = cap ? 2 * cap : 64;
          timed = ddp_xrealloc(timed, cap * sizeof *timed);
          all = ddp_xrealloc(all, cap * sizeof *all);
        }
        all[na++] = json_number_value(v);
        if (!json_is_true(json_object_get(o, "warmup"))) timed[nt++] = json_number_value(v);
      }
    }
    json_decref(o);
    line = nl ? nl + 1 : NULL;
  }
  if (rc == 0 && !have_run) rc = ddp_fail(err, errcap, "%s: no {\"event\": \"run\"} line; not a ddprun metrics file", path);
  if (rc == 0 && na == 0) rc = ddp_fail(err, errcap, "%s: no step lines", path);
  if (rc == 0) {
    double *v = nt ? timed : all;
    size_t k = nt ? nt : na;
    qsort(v, k, sizeof *v, by_double);
    m->median_ms = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    m->nsteps = (int)k;
  }
  free(timed), free(all), free(text);
  return rc;
}

static int parse_sizes(const char *text, double *out, int *n, char *err, size_t errcap) {
  char buf[1024];
  if (strlen(text) >= sizeof buf) return ddp_fail(err, errcap, "--sizes: too long");
  if (ddp_check_list("--sizes", text, err, errcap)) return -1;
  snprintf(buf, sizeof buf, "%s", text);
  *n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_SIZES) return ddp_fail(err, errcap, "--sizes: more than %d sizes", MAX_SIZES);
    if (ddp_parse_double(t, 0, 1, 1e6, "--sizes", &out[*n], err, errcap)) return -1;
    (*n)++;
  }
  if (*n == 0) return ddp_fail(err, errcap, "--sizes: '%s' has no sizes (e.g. 1,10,100,1000)", text);
  return 0;
}

static int write_svg(const char *out, const char *sched, const bpoint *pts, int n, const bpoint *grid, int ng,
                     const model *m, const measured *ms, int nm, char *err, size_t errcap) {
  double lo = 1e300, hi = -1e300, xlo = 1e300, xhi = -1e300;
  for (int i = 0; i < n + ng; i++) {
    const bpoint *b = i < n ? &pts[i] : &grid[i - n];
    lo = fmin(lo, b->e.step_s * 1e3), hi = fmax(hi, b->e.step_s * 1e3);
    xlo = fmin(xlo, b->mb), xhi = fmax(xhi, b->mb);
  }
  for (int i = 0; i < nm; i++) lo = fmin(lo, ms[i].median_ms), hi = fmax(hi, ms[i].median_ms), xlo = fmin(xlo, ms[i].mb),
                               xhi = fmax(xhi, ms[i].mb);
  double x0 = log10(xlo), x1 = log10(xhi);
  ddp_svg_pad(&x0, &x1);
  ddp_svg_pad(&lo, &hi);
  ddp_svg_axes a = {.w = 760, .h = 480, .left = 80, .right = 200, .top = 50, .bottom = 50, .x0 = x0, .x1 = x1,
                    .y0 = lo, .y1 = hi, .xlog = 1};
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, out, err, errcap)) return -1;
  FILE *f = af.f;
  char title[1200];
  snprintf(title, sizeof title, "%s: step time against bucket size", sched);
  ddp_svg_frame(f, &a, title, "bucket size (MB)", "step time (ms)");
  /* the predicted curve over the grid, the chosen sizes as dots, the measured medians as squares */
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", ddp_svg_colour(0));
  for (int i = 0; i < ng; i++)
    fprintf(f, "%s%.1f,%.1f", i ? " " : "", ddp_svg_px(&a, log10(grid[i].mb)), ddp_svg_py(&a, grid[i].e.step_s * 1e3));
  fprintf(f, "\"/>\n");
  for (int i = 0; i < n; i++)
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", ddp_svg_px(&a, log10(pts[i].mb)),
            ddp_svg_py(&a, pts[i].e.step_s * 1e3), ddp_svg_colour(0));
  for (int i = 0; i < nm; i++)
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>\n",
            ddp_svg_px(&a, log10(ms[i].mb)) - 4, ddp_svg_py(&a, ms[i].median_ms) - 4, ddp_svg_colour(1));
  if (m->world > 1) {
    double sx = ddp_svg_px(&a, log10(seeds_opt(m) / MIB));
    if (sx >= a.left && sx <= a.w - a.right)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"5,4\"/>\n", sx,
              a.top, sx, a.h - a.bottom, ddp_svg_colour(2));
  }
  double lx = a.w - a.right + 12, ly = a.top + 10;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", lx, ly,
          lx + 20, ly, ddp_svg_colour(0));
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">predicted step</text>\n", lx + 26, ly + 4);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>\n", lx + 6, ly + 16, ddp_svg_colour(1));
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">measured (median)</text>\n", lx + 26, ly + 24);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"5,4\"/>\n", lx,
          ly + 40, lx + 20, ly + 40, ddp_svg_colour(2));
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">seeds' s_b* = sqrt(s o w)</text>\n", lx + 26, ly + 44);
  ddp_svg_end(f);
  return ddp_atomic_commit(&af, err, errcap);
}

static void usage(FILE *f) {
  fprintf(f, "usage: ddpc explain buckets SCHEDULE.lua [--profile FILE] [--sizes 1,10,100,1000] [--metrics M.jsonl ...]\n"
             "                            [-o overhead.svg] [--json]\n"
             "The DDP overhead against the bucket size (docs/EXPLAIN.md, \"Bucket size\"): the schedule compiled without\n"
             "kernels at each size (parallel.bucket_mb) and simulated; the simulation's optimum over 20 sizes from\n"
             "0.5 to 2000 MB; the seeds' closed form s_b* = sqrt(s o w) and an overlap model with the backward time.\n"
             "  --profile FILE    device profile (JSON; default: the built-in H100/H200 profile)\n"
             "  --sizes LIST      bucket sizes in MB, comma-separated (default 1,10,100,1000)\n"
             "  --metrics FILE    a ddprun metrics file of a bucketed run (repeatable): its median step beside the prediction\n"
             "  -o FILE           an SVG of the predicted step against the bucket size, with the measured points\n"
             "  --json            one JSON document\n"
             "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

static void print_text(const char *sched, const ddp_profile *pr, int defprof, const bpoint *pts, int n,
                       const bpoint *grid, const bpoint *best, const model *m, const measured *ms, int nm) {
  printf("== explain buckets: %s ==\n", sched);
  printf("profile: %s%s\n", pr->name, defprof ? " (no --profile given)" : "");
  printf("ranks: %d; gradients all-reduced per step: s = %.0f B (%.2f MB); times are predictions of one step\n\n",
         m->world, m->s, m->s / MIB);
  printf("%10s %8s %10s %10s %12s %10s %11s %11s\n", "bucket_MB", "buckets", "step_ms", "comm_ms", "overhead_ms",
         "seeds_ms", "overlap_ms", "measured_ms");
  for (int i = 0; i < n; i++) {
    const ddp_xeval *e = &pts[i].e;
    double sb = pts[i].mb * MIB;
    printf("%10g %8u %10.3f %10.3f %12.3f %10.3f %11.3f ", pts[i].mb, e->nbuckets, e->step_s * 1e3,
           e->comm_s * 1e3, (e->step_s - e->free_s) * 1e3, seeds_T(m, sb) * 1e3,
           m->tb > 0 ? overlap_T(m, sb) * 1e3 : NAN);
    if (pts[i].measured_ms >= 0) printf("%11.3f\n", pts[i].measured_ms);
    else printf("%11s\n", "-");
  }
  printf("overhead = step - the step with free communication (exposed communication); seeds_ms, overlap_ms: the\n"
         "models below at that size\n\n");
  printf("scan (the simulation's optimum is the smallest step here):\n%10s %8s %10s %12s\n", "bucket_MB", "buckets",
         "step_ms", "overhead_ms");
  for (int i = 0; i < GRID; i++)
    printf("%10.4g %8u %10.3f %12.3f\n", grid[i].mb, grid[i].e.nbuckets, grid[i].e.step_s * 1e3,
           (grid[i].e.step_s - grid[i].e.free_s) * 1e3);
  printf("simulated optimum (%d sizes, 0.5 to 2000 MB, log-spaced): %g MB: step %.3f ms, overhead %.3f ms, %u buckets\n\n",
         GRID, best->mb, best->e.step_s * 1e3, (best->e.step_s - best->e.free_s) * 1e3, best->e.nbuckets);
  printf("seeds' model (CS336 Assignment 3 write-up, ddp_bucketed_benchmarking (ii)):\n");
  printf("  T(s_b) = (s + s_b)/w + s*o/s_b,  s_b* = sqrt(s*o*w)\n");
  printf("  s = %.0f B (gradient bytes), o = alpha = %g us (all_reduce), w = busbw * n/(2(n-1)) = %g GB/s * %d/%d = %.3f GB/s\n",
         m->s, pr->coll[COST_ALL_REDUCE].alpha_us, pr->coll[COST_ALL_REDUCE].busbw_gbps, m->world, 2 * (m->world - 1),
         m->w / 1e9);
  printf("  s_b* = sqrt(%.0f * %g * %.6g) = %.0f B = %.3f MB; T(s_b*) = %.3f ms%s\n", m->s, m->o, m->w, seeds_opt(m),
         seeds_opt(m) / MIB, seeds_T(m, seeds_opt(m)) * 1e3,
         seeds_opt(m) > m->s ? " (more than s: one bucket of s bytes)" : "");
  if (m->tb > 0) {
    printf("overlap model (buckets ready evenly over the backward, t_b = %.3f ms of backward compute, s/w = %.3f ms):\n",
           m->tb * 1e3, m->s / m->w * 1e3);
    printf("  overhead(s_b) = max(c, n_b*c - (n_b-1)*g), c = o + s_b/w, g = t_b*s_b/s, n_b = s/s_b\n");
    printf("  optimum: min(s*sqrt(o/t_b), o/(t_b/s - 1/w) when t_b > s/w, s) = %.0f B = %.3f MB; overhead %.3f ms\n",
           overlap_opt(m), overlap_opt(m) / MIB, overlap_T(m, overlap_opt(m)) * 1e3);
  } else {
    printf("overlap model: n/a (the plan has no backward timers)\n");
  }
  for (int i = 0; i < nm; i++)
    printf("measured: %s: bucket_mb=%g, median step %.3f ms over %d steps\n", ms[i].path, ms[i].mb, ms[i].median_ms,
           ms[i].nsteps);
}

static json_t *json_point(const bpoint *b, const model *m) {
  json_t *j = json_object();
  double sb = b->mb * MIB;
  json_object_set_new(j, "bucket_mb", json_real(b->mb));
  json_object_set_new(j, "buckets", json_integer(b->e.nbuckets));
  json_object_set_new(j, "step_ms", json_real(b->e.step_s * 1e3));
  json_object_set_new(j, "comm_ms", json_real(b->e.comm_s * 1e3));
  json_object_set_new(j, "overhead_ms", json_real((b->e.step_s - b->e.free_s) * 1e3));
  json_object_set_new(j, "seeds_model_ms", json_real(seeds_T(m, sb) * 1e3));
  json_object_set_new(j, "overlap_model_ms", m->tb > 0 ? json_real(overlap_T(m, sb) * 1e3) : json_null());
  json_object_set_new(j, "measured_ms", b->measured_ms >= 0 ? json_real(b->measured_ms) : json_null());
  return j;
}

static void print_json(const char *sched, const ddp_profile *pr, int defprof, const bpoint *pts, int n,
                       const bpoint *grid, const bpoint *best, const model *m, const measured *ms, int nm) {
  json_t *root = json_object(), *a = json_array(), *g = json_array(), *meas = json_array(), *sm = json_object();
  json_object_set_new(root, "schedule", json_string(sched));
  json_object_set_new(root, "profile", json_string(pr->name));
  json_object_set_new(root, "default_profile", json_boolean(defprof));
  json_object_set_new(root, "world", json_integer(m->world));
  json_object_set_new(root, "grad_bytes", json_real(m->s));
  for (int i = 0; i < n; i++) json_array_append_new(a, json_point(&pts[i], m));
  for (int i = 0; i < GRID; i++) json_array_append_new(g, json_point(&grid[i], m));
  json_object_set_new(root, "sizes", a);
  json_object_set_new(root, "grid", g);
  json_object_set_new(root, "simulated_optimum", json_point(best, m));
  json_object_set_new(sm, "o_s", json_real(m->o));
  json_object_set_new(sm, "w_bytes_per_s", json_real(m->w));
  json_object_set_new(sm, "s_bytes", json_real(m->s));
  json_object_set_new(sm, "optimum_bytes", json_real(seeds_opt(m)));
  json_object_set_new(sm, "optimum_mb", json_real(seeds_opt(m) / MIB));
  json_object_set_new(sm, "overhead_at_optimum_ms", json_real(seeds_T(m, seeds_opt(m)) * 1e3));
  json_object_set_new(root, "seeds_model", sm);
  json_t *om = json_object();
  json_object_set_new(om, "backward_s", m->tb > 0 ? json_real(m->tb) : json_null());
  json_object_set_new(om, "optimum_mb", m->tb > 0 ? json_real(overlap_opt(m) / MIB) : json_null());
  json_object_set_new(om, "overhead_at_optimum_ms", m->tb > 0 ? json_real(overlap_T(m, overlap_opt(m)) * 1e3) : json_null());
  json_object_set_new(root, "overlap_model", om);
  for (int i = 0; i < nm; i++) {
    json_t *x = json_object();
    json_object_set_new(x, "path", json_string(ms[i].path));
    json_object_set_new(x, "bucket_mb", json_real(ms[i].mb));
    json_object_set_new(x, "median_step_ms", json_real(ms[i].median_ms));
    json_object_set_new(x, "steps", json_integer(ms[i].nsteps));
    json_array_append_new(meas, x);
  }
  json_object_set_new(root, "measured", meas);
  json_dumpf(root, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
  fputc('\n', stdout);
  json_decref(root);
}

int ddp_explain_buckets_main(int argc, char **argv) {
  static const struct option lo[] = {{"profile", required_argument, NULL, 'p'}, {"sizes", required_argument, NULL, 's'},
                                     {"metrics", required_argument, NULL, 'm'}, {"json", no_argument, NULL, 'J'},
                                     {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  char bad[1024] = "", err[1024];
  const char *profile = NULL, *out = NULL, *mpaths[MAX_METRICS];
  double sizes[MAX_SIZES] = {1, 10, 100, 1000};
  int nsizes = 4, nm = 0, json = 0, help = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":ho:", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 'J') json = 1;
    else if (c == 'p') profile = optarg;
    else if (c == 'o') out = optarg;
    else if (c == 's') {
      if (parse_sizes(optarg, sizes, &nsizes, err, sizeof err) && !bad[0]) snprintf(bad, sizeof bad, "%s", err);
    } else if (c == 'm') {
      if (nm == MAX_METRICS && !bad[0]) snprintf(bad, sizeof bad, "--metrics: more than %d files", MAX_METRICS);
      else if (nm < MAX_METRICS) mpaths[nm++] = optarg;
    } else if (!bad[0]) ddp_getopt_error(c, argv, lo, "ddpc explain buckets", bad, sizeof bad);
  }
  if (help) return usage(stdout), 0;
  if (!bad[0] && optind >= argc) snprintf(bad, sizeof bad, "no schedule given (see ddpc explain buckets --help)");
  if (!bad[0] && optind + 1 < argc) snprintf(bad, sizeof bad, "more than one schedule given ('%s')", argv[optind + 1]);
  if (!bad[0] && out) {
    const char *in[MAX_METRICS + 2], *names[MAX_METRICS + 2];
    int k = 0;
    in[k] = argv[optind], names[k++] = "schedule";
    if (profile) in[k] = profile, names[k++] = "--profile";
    for (int i = 0; i < nm; i++) in[k] = mpaths[i], names[k++] = "--metrics";
    if (ddp_check_output("-o", out, in, names, k, 0, err, sizeof err) || ddp_check_output_folder("-o", out, err, sizeof err))
      snprintf(bad, sizeof bad, "%s", err);
  }
  if (bad[0]) {
    fprintf(stderr, "ddpc explain buckets: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  const char *sched = argv[optind];
  ddp_profile pr;
  ddp_profile_default(&pr);
  if (profile && ddp_profile_read(profile, &pr, err, sizeof err)) {
    fprintf(stderr, "ddpc explain buckets: --profile: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  measured ms[MAX_METRICS];
  for (int i = 0; i < nm; i++)
    if (read_metrics(mpaths[i], &ms[i], err, sizeof err)) {
      fprintf(stderr, "ddpc explain buckets: --metrics: %s\n", err);
      return DDP_EXIT_FAILURE;
    }
  /* the requested sizes plus the measured ones (a measured size not asked for joins the table) */
  bpoint pts[MAX_SIZES + MAX_METRICS], grid[GRID];
  int n = 0;
  for (int i = 0; i < nsizes + nm; i++) {
    double mb = i < nsizes ? sizes[i] : ms[i - nsizes].mb;
    int dup = 0;
    for (int j = 0; j < n && !dup; j++) dup = pts[j].mb == mb;
    if (!dup) pts[n++] = (bpoint){.mb = mb, .measured_ms = -1};
  }
  qsort(pts, (size_t)n, sizeof *pts, by_mb);
  for (int i = 0; i < nm; i++)
    for (int j = 0; j < n; j++)
      if (pts[j].mb == ms[i].mb) pts[j].measured_ms = ms[i].median_ms;
  int rc = eval_size(sched, 0, &pr, NULL, err, sizeof err);
  for (int i = 0; i < n && rc == 0; i++) rc = eval_size(sched, pts[i].mb, &pr, &pts[i].e, err, sizeof err);
  /* a measurement is this schedule's at its bucket size: the run line names a schedule file of this name (the
   * folder may differ: runs are made on another machine), and its world and parallel layout are the plan's
   * compiled at that size (shard, overlap, mesh, collectives and all) */
  for (int i = 0; i < nm && rc == 0; i++)
    if (!ms[i].schedule[0])
      rc = ddp_fail(err, sizeof err, "--metrics: %s: the run line names no \"schedule\"", ms[i].path);
    else if (strcmp(ddp_path_base(ms[i].schedule), ddp_path_base(sched)))
      rc = ddp_fail(err, sizeof err, "--metrics: %s is not a run of %s: its run line says schedule '%.300s'", ms[i].path,
                    sched, ms[i].schedule);
  for (int i = 0; i < nm && rc == 0; i++)
    for (int j = 0; j < n && rc == 0; j++)
      if (pts[j].mb == ms[i].mb && (ms[i].world != pts[j].e.world || strcmp(ms[i].parallel, pts[j].e.parallel)))
        rc = ddp_fail(err, sizeof err, "--metrics: %s is not a run of %s: its run line says world %lld, \"%s\"; the "
                      "schedule at bucket_mb=%g is world %d, \"%s\"", ms[i].path, sched, ms[i].world, ms[i].parallel,
                      ms[i].mb, pts[j].e.world, pts[j].e.parallel);
  int best = 0;
  for (int i = 0; i < GRID && rc == 0; i++) {
    grid[i] = (bpoint){.mb = 0.5 * pow(4000.0, (double)i / (GRID - 1)), .measured_ms = -1};
    rc = eval_size(sched, grid[i].mb, &pr, &grid[i].e, err, sizeof err);
    if (rc == 0 && grid[i].e.step_s < grid[best].e.step_s) best = i;
  }
  if (rc) {
    fprintf(stderr, "ddpc explain buckets: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  /* the model's figures: s from the plan's buckets (the same at every size), o and busbw from the profile,
   * t_b the backward of the free-communication simulation at the first size */
  model m = {.s = (double)pts[0].e.grad_bytes, .o = pr.coll[COST_ALL_REDUCE].alpha_us * 1e-6,
             .tb = pts[0].e.backward_s, .world = pts[0].e.world};
  m.w = pr.coll[COST_ALL_REDUCE].busbw_gbps * 1e9 * m.world / (2.0 * (m.world - 1));
  if (json) print_json(sched, &pr, profile == NULL, pts, n, grid, &grid[best], &m, ms, nm);
  else print_text(sched, &pr, profile == NULL, pts, n, grid, &grid[best], &m, ms, nm);
  if (out && write_svg(out, sched, pts, n, grid, GRID, &m, ms, nm, err, sizeof err)) {
    fprintf(stderr, "ddpc explain buckets: -o: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ddpc explain buckets: cannot write to stdout\n");
    return DDP_EXIT_FAILURE;
  }
  return 0;
}

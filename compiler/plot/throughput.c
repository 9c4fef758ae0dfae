/* compiler/plot/throughput.c: `ddpc plot throughput`: tokens/s (plot.h: tokens per step over the mean
 * step time) against the number of workers (the run's world size), one colour per series (the runs of one
 * label and one parallel kind, joined in order of workers: see series_build), and per series the ideal linear scaling from its
 * smallest-world point (the 1-worker run where there is one; the mean where several runs share that
 * world size), dashed, up to the largest world size plotted. */
#include "err.h"
#include "file.h"
#include "plot.h"
#include "svg.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A run's parallel kind: "single" for one worker, else the first word of its "parallel" text and, where
 * the text has one, the value of its "schedule=..." token ("pipeline 1f1b"), so the runs of one schedule file
 * compiled as different pipeline schedules (or as DDP) form different series. */
static char *parallel_kind(const ddp_plot_run *u) {
  const char *p = u->parallel ? u->parallel : "";
  if (u->world == 1 || !strncmp(p, "single", 6)) return ddp_xstrdup("single");
  size_t n = strcspn(p, " ,");
  const char *sch = strstr(p, " schedule=");
  if (sch) sch += strlen(" schedule=");
  size_t m = sch ? strcspn(sch, " ,") : 0;
  char *k = ddp_xmalloc(n + m + 2);
  snprintf(k, n + m + 2, "%.*s%s%.*s", (int)n, p, sch ? " " : "", (int)m, sch ? sch : "");
  if (!k[0]) snprintf(k, n + m + 2, "?");
  return k;
}

/* The series: runs of one label and one parallel kind; a label's 1-worker runs belong to every series of
 * that label (their common base), or form their own series when the label has nothing else. */
typedef struct series_set {
  int n;
  int *of;       /* per run: its series, -1 for a 1-worker run that joins its label's series */
  char **name;   /* per series: the label, or "label: kind" when the label has several kinds */
  int *first;    /* per series: a run of it (label and colour) */
} series_set;

static void series_build(const ddp_plot_run *runs, int n, series_set *ss) {
  char **kind = ddp_xcalloc((size_t)n, sizeof *kind);
  ss->of = ddp_xcalloc((size_t)n, sizeof(int));
  ss->name = ddp_xcalloc((size_t)n, sizeof(char *));
  ss->first = ddp_xcalloc((size_t)n, sizeof(int));
  ss->n = 0;
  for (int i = 0; i < n; i++) kind[i] = parallel_kind(&runs[i]);
  for (int i = 0; i < n; i++) {
    int single = !strcmp(kind[i], "single"), others = 0;
    for (int j = 0; j < n && single; j++) others |= !strcmp(runs[j].label, runs[i].label) && strcmp(kind[j], "single");
    if (single && others) {
      ss->of[i] = -1;
      continue;
    }
    int s = -1;
    for (int j = 0; j < i && s < 0; j++)
      if (ss->of[j] >= 0 && !strcmp(runs[j].label, runs[i].label) && !strcmp(kind[j], kind[i])) s = ss->of[j];
    if (s < 0) {
      s = ss->n++;
      ss->first[s] = i;
      int kinds = 0; /* other non-single kinds of this label */
      for (int j = 0; j < n; j++)
        kinds |= !strcmp(runs[j].label, runs[i].label) && strcmp(kind[j], kind[i]) && strcmp(kind[j], "single");
      size_t len = strlen(runs[i].label) + strlen(kind[i]) + 3;
      ss->name[s] = ddp_xmalloc(len);
      if (kinds) snprintf(ss->name[s], len, "%s: %s", runs[i].label, kind[i]);
      else snprintf(ss->name[s], len, "%s", runs[i].label);
    }
    ss->of[i] = s;
  }
  for (int i = 0; i < n; i++) free(kind[i]);
  free(kind);
}

static void series_free(series_set *ss) {
  for (int s = 0; s < ss->n; s++) free(ss->name[s]);
  free(ss->of), free(ss->name), free(ss->first);
}

/* The indices of the runs of series `s`, by world size. */
static int series_members(const ddp_plot_run *runs, int n, const series_set *ss, int s, int *idx) {
  int m = 0;
  const char *label = runs[ss->first[s]].label;
  for (int i = 0; i < n; i++)
    if (ss->of[i] == s || (ss->of[i] < 0 && !strcmp(runs[i].label, label))) {
      int j = m++;
      while (j > 0 && runs[idx[j - 1]].world > runs[i].world) idx[j] = idx[j - 1], j--;
      idx[j] = i;
    }
  return m;
}

/* The ideal line's base: the mean tokens/s of the series' smallest world size. */
static void ideal_base(const ddp_plot_run *runs, const int *idx, int m, int *world, double *tps) {
  int k = 0;
  double sum = 0;
  *world = runs[idx[0]].world;
  for (int j = 0; j < m && runs[idx[j]].world == *world; j++) sum += runs[idx[j]].tokens_per_s, k++;
  *tps = sum / k;
}

int ddp_plot_throughput_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap) {
  int maxw = 1, *idx = ddp_xcalloc((size_t)n, sizeof(int));
  double ymax = 0;
  series_set ss;
  series_build(runs, n, &ss);
  for (int i = 0; i < n; i++) maxw = runs[i].world > maxw ? runs[i].world : maxw;
  for (int i = 0; i < n; i++) ymax = fmax(ymax, runs[i].tokens_per_s);
  for (int i = 0; i < ss.n; i++) {
    int m = series_members(runs, n, &ss, i, idx), w0;
    double t0;
    ideal_base(runs, idx, m, &w0, &t0);
    ymax = fmax(ymax, t0 * maxw / w0);
  }
  if (!(ymax > 0)) ymax = 1;
  double xstep = ddp_svg_tick_step(maxw + 0.5);
  ddp_svg_axes a = {.w = 760, .h = 480, .left = 90, .right = 220, .top = 40, .bottom = 56, .x0 = 0,
                    .x1 = maxw + (maxw < 4 ? 0.5 : maxw * 0.08), .y0 = 0, .y1 = ymax * 1.1,
                    .xstep = xstep < 1 ? 1 : round(xstep)};
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, out, err, errcap)) {
    free(idx);
    series_free(&ss);
    return -1;
  }
  FILE *f = af.f;
  ddp_svg_frame(f, &a, "Throughput against the number of workers", "workers (world size)", "tokens/s");
  for (int s = 0; s < ss.n; s++) {
    const char *c = ddp_svg_colour(s);
    const char *name = ss.name[s];
    int m = series_members(runs, n, &ss, s, idx), w0;
    double t0;
    ideal_base(runs, idx, m, &w0, &t0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"><title>",
            ddp_svg_px(&a, w0), ddp_svg_py(&a, t0), ddp_svg_px(&a, maxw), ddp_svg_py(&a, t0 * maxw / w0), c);
    ddp_svg_text(f, name);
    fprintf(f, " ideal: %.1f tokens/s per worker</title></line>\n", t0 / w0);
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
    for (int j = 0; j < m; j++)
      fprintf(f, "%s%.1f,%.1f", j ? " " : "", ddp_svg_px(&a, runs[idx[j]].world), ddp_svg_py(&a, runs[idx[j]].tokens_per_s));
    fputs("\"/>\n", f);
    for (int j = 0; j < m; j++) {
      const ddp_plot_run *u = &runs[idx[j]];
      double x = ddp_svg_px(&a, u->world), y = ddp_svg_py(&a, u->tokens_per_s);
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>", x, y, c);
      ddp_svg_text(f, name);
      fprintf(f, ": %d worker%s, %.1f tokens/s, %.4f ms/step</title></circle>\n", u->world, u->world == 1 ? "" : "s",
              u->tokens_per_s, u->step_ms);
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%.0f</text>\n", x + 6, y - 6, c,
              u->tokens_per_s);
    }
    double ly = a.top + 14 + 34 * s;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
            a.w - a.right + 8, ly - 4, a.w - a.right + 26, ly - 4, c);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", a.w - a.right + 32, ly);
    ddp_svg_text(f, name);
    fputs("</text>\n", f);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>\n",
            a.w - a.right + 8, ly + 12, a.w - a.right + 26, ly + 12, c);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">ideal, linear from %d worker%s</text>\n",
            a.w - a.right + 32, ly + 16, w0, w0 == 1 ? "" : "s");
  }
  free(idx);
  series_free(&ss);
  ddp_svg_end(f);
  return ddp_atomic_commit(&af, err, errcap);
}

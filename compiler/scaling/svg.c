/* compiler/scaling/svg.c: the plots of `ddpc scaling fit --svg-dir` (scaling.h), written by hand as SVG
 * 1.1: isoflops.svg (loss against N on a log axis, one colour per budget: the runs as dots, the fitted
 * parabola as a curve, its minimum as a ring) and n_opt.svg / d_opt.svg (log-log: the optima per budget,
 * the fitted power law drawn through the extrapolated budgets, which are hollow squares with their value).
 * Each file is written atomically. */
#include "err.h"
#include "file.h"
#include "scaling.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 720.0
#define H 460.0
#define ML 92.0 /* margins */
#define MR 150.0
#define MT 40.0
#define MB 56.0

static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

typedef struct axes {
  double x0, x1, y0, y1; /* data ranges (log10 where the axis is logarithmic) */
  int xlog, ylog;
} axes;

static double px(const axes *a, double x) { return ML + (x - a->x0) / (a->x1 - a->x0) * (W - ML - MR); }
static double py(const axes *a, double y) { return H - MB - (y - a->y0) / (a->y1 - a->y0) * (H - MT - MB); }

/* Widens [lo, hi] by 5% on each side (or to a unit range when empty). */
static void pad(double *lo, double *hi) {
  double d = *hi - *lo;
  if (!(d > 0)) d = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1;
  *lo -= 0.05 * d;
  *hi += 0.05 * d;
}

/* A tick step giving 2..8 ticks over a range of `d`: 1, 2 or 5 times a power of ten (whole decades at
 * least on a log axis, unless the range is under one decade). */
static double tick_step(double d) {
  double s = pow(10.0, floor(log10(d / 5)));
  if (d / s > 8) s *= 2;
  if (d / s > 8) s *= 2.5;
  return s;
}

static void label(FILE *f, double v, int log) {
  if (log && fabs(v - round(v)) < 1e-9) fprintf(f, "1e%d", (int)round(v)); /* a whole decade */
  else if (log) fprintf(f, "%.3g", pow(10.0, v));
  else fprintf(f, "%.4g", v);
}

static void frame(FILE *f, const axes *a, const char *title, const char *xname, const char *yname) {
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
          W, H, W, H, W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n", (ML + W - MR) / 2,
          title);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n", ML, MT,
          W - ML - MR, H - MT - MB);
  double sx = tick_step(a->x1 - a->x0), sy = tick_step(a->y1 - a->y0);
  if (a->xlog && a->x1 - a->x0 >= 1.5) sx = fmax(sx, 1.0); /* whole decades on a log axis spanning several */
  if (a->ylog && a->y1 - a->y0 >= 1.5) sy = fmax(sy, 1.0);
  for (double t = ceil(a->x0 / sx) * sx; t <= a->x1 + 1e-12; t += sx) {
    double x = px(a, t);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, MT, x, H - MB);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, H - MB + 16);
    label(f, t, a->xlog);
    fputs("</text>\n", f);
  }
  for (double t = ceil(a->y0 / sy) * sy; t <= a->y1 + 1e-12; t += sy) {
    double y = py(a, t);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y, W - MR, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", ML - 6, y + 4);
    label(f, t, a->ylog);
    fputs("</text>\n", f);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", (ML + W - MR) / 2, H - 14, xname);
  fprintf(f, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">%s</text>\n",
          (MT + H - MB) / 2, (MT + H - MB) / 2, yname);
}

static int finish(ddp_atomic_file *af, char *err, size_t errcap) {
  fputs("</svg>\n", af->f);
  return ddp_atomic_commit(af, err, errcap);
}

static int isoflops_svg(const char *path, const ddp_scaling_run *runs, const ddp_scaling_fit *fit, char *err,
                        size_t errcap) {
  axes a = {.x0 = INFINITY, .x1 = -INFINITY, .y0 = INFINITY, .y1 = -INFINITY, .xlog = 1};
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    for (int i = b->first; i < b->first + b->nruns; i++) {
      double x = log10(runs[i].params);
      a.x0 = fmin(a.x0, x), a.x1 = fmax(a.x1, x), a.y0 = fmin(a.y0, runs[i].loss), a.y1 = fmax(a.y1, runs[i].loss);
    }
    a.y0 = fmin(a.y0, b->loss_min);
  }
  pad(&a.x0, &a.x1);
  pad(&a.y0, &a.y1);
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, path, err, errcap)) return -1;
  FILE *f = af.f;
  frame(f, &a, "IsoFLOPs profiles: final loss against model size", "parameters N (log scale)", "final loss");
  fprintf(f, "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n", ML,
          MT, W - ML - MR, H - MT - MB);
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    const char *c = colours[k % 10];
    double lo = log10(runs[b->first].params), hi = log10(runs[b->first + b->nruns - 1].params);
    if (b->method == DDP_FIT_PARABOLA) {
      fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", c);
      double x0 = lo - 0.1 * (hi - lo), x1 = hi + 0.1 * (hi - lo);
      for (int s = 0; s <= 60; s++) {
        double x = x0 + (x1 - x0) * s / 60.0;
        double y = b->coef[0] + b->coef[1] * x + b->coef[2] * x * x;
        fprintf(f, "%s%.1f,%.1f", s ? " " : "", px(&a, x), py(&a, y));
      }
      fputs("\"/>\n", f);
    }
    for (int i = b->first; i < b->first + b->nruns; i++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", px(&a, log10(runs[i].params)),
              py(&a, runs[i].loss), c);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
            px(&a, log10(b->n_opt)), py(&a, b->loss_min), c);
    double ly = MT + 14 + 18 * k;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", W - MR + 14, ly - 4, c);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">C = %.3g%s</text>\n", W - MR + 24, ly, b->compute,
            b->method == DDP_FIT_PARABOLA ? "" : " *");
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">ring: the minimum</text>\n", W - MR + 10,
          MT + 14 + 18 * fit->nbudgets + 6);
  return finish(&af, err, errcap);
}

static int law_svg(const char *path, const ddp_scaling_fit *fit, int d, const double *at, int n_at, char *err,
                   size_t errcap) {
  const ddp_power_law *l = d ? &fit->d_law : &fit->n_law;
  axes a = {.x0 = INFINITY, .x1 = -INFINITY, .y0 = INFINITY, .y1 = -INFINITY, .xlog = 1, .ylog = 1};
  for (int k = 0; k < fit->nbudgets + n_at; k++) {
    double c = k < fit->nbudgets ? fit->budgets[k].compute : at[k - fit->nbudgets];
    double y = k < fit->nbudgets ? log10(d ? fit->budgets[k].d_opt : fit->budgets[k].n_opt)
                                 : log10(ddp_power_law_at(l, c));
    a.x0 = fmin(a.x0, log10(c)), a.x1 = fmax(a.x1, log10(c)), a.y0 = fmin(a.y0, y), a.y1 = fmax(a.y1, y);
  }
  pad(&a.x0, &a.x1);
  pad(&a.y0, &a.y1);
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, path, err, errcap)) return -1;
  FILE *f = af.f;
  char title[160];
  snprintf(title, sizeof title, "%s = %.3g C^%.3f (R^2 %.3f)", d ? "D_opt(C)" : "N_opt(C)", pow(10.0, l->intercept),
           l->slope, l->r2);
  frame(f, &a, title, "compute budget C, FLOPs (log scale)",
        d ? "compute-optimal tokens D_opt (log scale)" : "compute-optimal parameters N_opt (log scale)");
  double cx0 = a.x0, cx1 = a.x1;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"1.5\" "
             "stroke-dasharray=\"6 4\"/>\n",
          px(&a, cx0), py(&a, l->slope * cx0 + l->intercept), px(&a, cx1), py(&a, l->slope * cx1 + l->intercept));
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"/>\n", px(&a, log10(b->compute)),
            py(&a, log10(d ? b->d_opt : b->n_opt)));
  }
  for (int i = 0; i < n_at; i++) {
    double x = px(&a, log10(at[i])), v = ddp_power_law_at(l, at[i]), y = py(&a, log10(v));
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"#d62728\" "
               "stroke-width=\"2\"/>\n", x - 4.5, y - 4.5);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%.3g at C = %.3g</text>\n", x - 8,
            y - 8, v, at[i]);
  }
  fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"/>\n", W - MR + 14, MT + 10);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">IsoFLOPs optimum</text>\n", W - MR + 24, MT + 14);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n",
          W - MR + 6, MT + 30, W - MR + 22, MT + 30);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">fitted law</text>\n", W - MR + 24, MT + 34);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"#d62728\"/>\n",
          W - MR + 9.5, MT + 45.5);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">extrapolated</text>\n", W - MR + 24, MT + 54);
  return finish(&af, err, errcap);
}

int ddp_scaling_svg(const char *dir, const ddp_scaling_run *runs, const ddp_scaling_fit *fit, const double *at,
                    int n_at, char *err, size_t errcap) {
  static const char *const names[3] = {"isoflops.svg", "n_opt.svg", "d_opt.svg"};
  size_t cap = strlen(dir) + 32;
  char *path = ddp_xmalloc(cap);
  int rc = 0;
  for (int i = 0; i < 3 && rc == 0; i++) {
    snprintf(path, cap, "%s/%s", dir, names[i]);
    rc = i == 0 ? isoflops_svg(path, runs, fit, err, errcap) : law_svg(path, fit, i == 2, at, n_at, err, errcap);
  }
  free(path);
  return rc;
}

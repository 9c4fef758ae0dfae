/* compiler/scaling/svg.c: the plots of `ddpc scaling fit --svg-dir` (scaling.h), written by hand as SVG
 * 1.1: isoflops.svg (loss against N on a log axis, one colour per budget: the runs as dots, the fitted
 * parabola as a curve, its minimum as a ring) and n_opt.svg / d_opt.svg (log-log: the optima per budget,
 * the fitted power law drawn through the extrapolated budgets, which are hollow squares with their value).
 * Each file is written atomically; the frame, axes and palette are base/svg.h's. */
#include "err.h"
#include "file.h"
#include "scaling.h"
#include "svg.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 720.0
#define H 460.0
#define ML 92.0 /* margins */
#define MR 150.0
#define MT 40.0
#define MB 56.0

/* A plot area of this file's canvas and margins. */
#define AXES(...) ((ddp_svg_axes){.w = W, .h = H, .left = ML, .right = MR, .top = MT, .bottom = MB, __VA_ARGS__})

static int finish(ddp_atomic_file *af, char *err, size_t errcap) {
  ddp_svg_end(af->f);
  return ddp_atomic_commit(af, err, errcap);
}

static int isoflops_svg(const char *path, const ddp_scaling_run *runs, const ddp_scaling_fit *fit, char *err,
                        size_t errcap) {
  ddp_svg_axes a = AXES(.x0 = INFINITY, .x1 = -INFINITY, .y0 = INFINITY, .y1 = -INFINITY, .xlog = 1);
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    for (int i = b->first; i < b->first + b->nruns; i++) {
      double x = log10(runs[i].params);
      a.x0 = fmin(a.x0, x), a.x1 = fmax(a.x1, x), a.y0 = fmin(a.y0, runs[i].loss), a.y1 = fmax(a.y1, runs[i].loss);
    }
    a.y0 = fmin(a.y0, b->loss_min);
  }
  ddp_svg_pad(&a.x0, &a.x1);
  ddp_svg_pad(&a.y0, &a.y1);
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, path, err, errcap)) return -1;
  FILE *f = af.f;
  ddp_svg_frame(f, &a, "IsoFLOPs profiles: final loss against model size", "parameters N (log scale)", "final loss");
  fprintf(f, "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n", ML,
          MT, W - ML - MR, H - MT - MB);
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    const char *c = ddp_svg_colour(k);
    double lo = log10(runs[b->first].params), hi = log10(runs[b->first + b->nruns - 1].params);
    if (b->method == DDP_FIT_PARABOLA) {
      fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", c);
      double x0 = lo - 0.1 * (hi - lo), x1 = hi + 0.1 * (hi - lo);
      for (int s = 0; s <= 60; s++) {
        double x = x0 + (x1 - x0) * s / 60.0;
        double y = b->coef[0] + b->coef[1] * x + b->coef[2] * x * x;
        fprintf(f, "%s%.1f,%.1f", s ? " " : "", ddp_svg_px(&a, x), ddp_svg_py(&a, y));
      }
      fputs("\"/>\n", f);
    }
    for (int i = b->first; i < b->first + b->nruns; i++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", ddp_svg_px(&a, log10(runs[i].params)),
              ddp_svg_py(&a, runs[i].loss), c);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
            ddp_svg_px(&a, log10(b->n_opt)), ddp_svg_py(&a, b->loss_min), c);
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
  ddp_svg_axes a = AXES(.x0 = INFINITY, .x1 = -INFINITY, .y0 = INFINITY, .y1 = -INFINITY, .xlog = 1, .ylog = 1);
  for (int k = 0; k < fit->nbudgets + n_at; k++) {
    double c = k < fit->nbudgets ? fit->budgets[k].compute : at[k - fit->nbudgets];
    double y = k < fit->nbudgets ? log10(d ? fit->budgets[k].d_opt : fit->budgets[k].n_opt)
                                 : log10(ddp_power_law_at(l, c));
    a.x0 = fmin(a.x0, log10(c)), a.x1 = fmax(a.x1, log10(c)), a.y0 = fmin(a.y0, y), a.y1 = fmax(a.y1, y);
  }
  ddp_svg_pad(&a.x0, &a.x1);
  ddp_svg_pad(&a.y0, &a.y1);
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, path, err, errcap)) return -1;
  FILE *f = af.f;
  char title[160];
  snprintf(title, sizeof title, "%s = %.3g C^%.3f (R^2 %.3f)", d ? "D_opt(C)" : "N_opt(C)", pow(10.0, l->intercept),
           l->slope, l->r2);
  ddp_svg_frame(f, &a, title, "compute budget C, FLOPs (log scale)",
        d ? "compute-optimal tokens D_opt (log scale)" : "compute-optimal parameters N_opt (log scale)");
  double cx0 = a.x0, cx1 = a.x1;
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"1.5\" "
             "stroke-dasharray=\"6 4\"/>\n",
          ddp_svg_px(&a, cx0), ddp_svg_py(&a, l->slope * cx0 + l->intercept), ddp_svg_px(&a, cx1), ddp_svg_py(&a, l->slope * cx1 + l->intercept));
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#1f77b4\"/>\n", ddp_svg_px(&a, log10(b->compute)),
            ddp_svg_py(&a, log10(d ? b->d_opt : b->n_opt)));
  }
  for (int i = 0; i < n_at; i++) {
    double x = ddp_svg_px(&a, log10(at[i])), v = ddp_power_law_at(l, at[i]), y = ddp_svg_py(&a, log10(v));
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

/* compiler/plot/split.c: `ddpc plot split`: per run file a heading (label, workers, parallel layout, steps
 * used), then per worker (rank) one horizontal stacked bar of its mean step time split into compute,
 * exposed communication, optimizer, the pipeline bubble (pipeline runs) and idle (plot.h defines them), the total at the bar's end; every
 * segment carries a <title> with its value in ms. */
#include "err.h"
#include "file.h"
#include "plot.h"
#include "svg.h"
#include <math.h>

#define ROW 22.0   /* a bar's row */
#define HEAD 24.0  /* a run's heading row */

/* The parts in drawing order; the pipeline bubble only for the runs that have one (plot.h). */
static const char *const part_name[5] = {"compute", "exposed communication", "optimizer", "pipeline bubble", "idle"};
static const char *const part_colour[5] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#c7c7c7"};

static double part(const ddp_plot_run *u, int r, int k) {
  return k == 0 ? u->compute[r] : k == 1 ? u->comm[r] : k == 2 ? u->opt[r] : k == 3 ? u->bubble[r] : u->idle[r];
}

int ddp_plot_split_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap) {
  double xmax = 0, rows = 0;
  for (int i = 0; i < n; i++) {
    rows += HEAD + ROW * runs[i].world;
    for (int r = 0; r < runs[i].world; r++) {
      double t = 0;
      for (int k = 0; k < 5; k++) t += part(&runs[i], r, k);
      xmax = fmax(xmax, t);
    }
  }
  if (!(xmax > 0)) xmax = 1;
  ddp_svg_axes a = {.w = 900, .left = 90, .right = 90, .top = 66, .bottom = 50, .x0 = 0, .x1 = xmax * 1.12,
                    .y0 = 0, .y1 = 1, .ystep = -1};
  a.h = a.top + rows + 10 + a.bottom;
  ddp_atomic_file af = {0};
  if (ddp_atomic_open(&af, out, err, errcap)) return -1;
  FILE *f = af.f;
  int bubbles = 0;
  for (int i = 0; i < n; i++) bubbles |= runs[i].has_bubble;
  ddp_svg_frame(f, &a, bubbles ? "Step time per worker: compute, exposed communication, optimizer, pipeline bubble, idle"
                               : "Step time per worker: compute, exposed communication, optimizer, idle",
                "milliseconds per step (mean over the timed steps)", "");
  double y = a.top + 8;
  for (int i = 0; i < n; i++) {
    const ddp_plot_run *u = &runs[i];
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">", a.left + 6, y + 16);
    ddp_svg_text(f, u->label);
    fprintf(f, ": %d worker%s, ", u->world, u->world == 1 ? "" : "s");
    ddp_svg_text(f, u->parallel[0] ? u->parallel : "layout not recorded");
    fprintf(f, " (%d steps)</text>\n", u->nsteps);
    y += HEAD;
    for (int r = 0; r < u->world; r++, y += ROW) {
      double x = 0, yb = y + 3, hb = ROW - 6;
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d</text>\n", a.left - 6, y + ROW / 2 + 4, r);
      for (int k = 0; k < 5; k++) {
        if (k == 3 && !u->has_bubble) continue;
        double v = part(u, r, k), x0 = ddp_svg_px(&a, x), x1 = ddp_svg_px(&a, x + v);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>", x0, yb, x1 - x0,
                hb, part_colour[k]);
        ddp_svg_text(f, u->label);
        fprintf(f, " rank %d: %s %.4f ms</title></rect>\n", r, part_name[k], v);
        x += v;
      }
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.3f ms</text>\n", ddp_svg_px(&a, x) + 4,
              y + ROW / 2 + 4, x);
    }
  }
  for (int k = 0; k < 5; k++) { /* the legend, in a row under the title */
    static const double at[5] = {0, 100, 290, 390, 530};
    if (k == 3 && !bubbles) continue;
    double lx = a.left + (k == 4 && !bubbles ? at[3] : at[k]);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, a.top - 26,
            part_colour[k]);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 18, a.top - 16, part_name[k]);
  }
  ddp_svg_end(f);
  return ddp_atomic_commit(&af, err, errcap);
}

/* base/svg.h: the small SVG 1.1 kit the toolchain's plots share (ddpc scaling fit --svg-dir, ddpc plot):
 * the document's head and tail, a 10-colour palette, text escaped for XML, and a framed plot area with
 * linear or log10 axes (grid lines, tick labels, a title and the two axis names). Plots write the rest
 * (points, curves, bars, legends) themselves with fprintf, through ddp_svg_px / ddp_svg_py. */
#ifndef DDP_SVG_H
#define DDP_SVG_H
#include <stdio.h>

/* A plot area: the canvas (w x h) with margins left/right/top/bottom, and the data ranges shown (log10 of
 * the data where the axis is logarithmic). */
typedef struct ddp_svg_axes {
  double w, h, left, right, top, bottom;
  double x0, x1, y0, y1;
  int xlog, ylog;
  double xstep, ystep; /* tick steps: 0 chosen by ddp_svg_tick_step, < 0 no ticks (nor grid lines) */
} ddp_svg_axes;

/* The i-th colour of the palette (cycles after 10). */
const char *ddp_svg_colour(int i);
/* The XML declaration, the <svg> element (w x h, sans-serif 12) and a white background. */
void ddp_svg_begin(FILE *f, double w, double h);
/* Closes the <svg> element. */
void ddp_svg_end(FILE *f);
/* `s` with &, <, >, " and ' escaped; control characters become '?'. */
void ddp_svg_text(FILE *f, const char *s);

/* Widens [lo, hi] by 5% on each side (or to a unit range when empty). */
void ddp_svg_pad(double *lo, double *hi);
/* A tick step giving 2..8 ticks over a range of `d`: 1, 2 or 5 times a power of ten. */
double ddp_svg_tick_step(double d);
/* Canvas coordinates of a data value (already log10 on a log axis). */
double ddp_svg_px(const ddp_svg_axes *a, double x);
double ddp_svg_py(const ddp_svg_axes *a, double y);
/* The head (ddp_svg_begin), the title centred above the plot area, the plot area's box, grid lines with
 * tick labels on both axes (whole decades on a log axis spanning 1.5 decades or more), and the axis
 * names; the strings are escaped. */
void ddp_svg_frame(FILE *f, const ddp_svg_axes *a, const char *title, const char *xname, const char *yname);
#endif

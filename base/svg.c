/* base/svg.c: see svg.h. */
#include "svg.h"
#include <math.h>

static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *ddp_svg_colour(int i) { return colours[(i < 0 ? -i : i) % 10]; }

void ddp_svg_begin(FILE *f, double w, double h) {
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
          w, h, w, h, w, h);
}

void ddp_svg_end(FILE *f) { fputs("</svg>\n", f); }

void ddp_svg_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '&') fputs("&amp;", f);
    else if (c == '<') fputs("&lt;", f);
    else if (c == '>') fputs("&gt;", f);
    else if (c == '"') fputs("&quot;", f);
    else if (c == '\'') fputs("&apos;", f);
    else if (c < 0x20 || c == 0x7f) fputc('?', f); /* not allowed in XML 1.0 text */
    else fputc(c, f);
  }
}

void ddp_svg_pad(double *lo, double *hi) {
  double d = *hi - *lo;
  if (!(d > 0)) d = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1;
  *lo -= 0.05 * d;
  *hi += 0.05 * d;
}

double ddp_svg_tick_step(double d) {
  double s = pow(10.0, floor(log10(d / 5)));
  if (d / s > 8) s *= 2;
  if (d / s > 8) s *= 2.5;
  return s;
}

double ddp_svg_px(const ddp_svg_axes *a, double x) {
  return a->left + (x - a->x0) / (a->x1 - a->x0) * (a->w - a->left - a->right);
}

double ddp_svg_py(const ddp_svg_axes *a, double y) {
  return a->h - a->bottom - (y - a->y0) / (a->y1 - a->y0) * (a->h - a->top - a->bottom);
}

static void tick_label(FILE *f, double v, int log) {
  if (log && fabs(v - round(v)) < 1e-9) fprintf(f, "1e%d", (int)round(v)); /* a whole decade */
  else if (log) fprintf(f, "%.3g", pow(10.0, v));
  else fprintf(f, "%.6g", v); /* no exponent below 1e6 */
}

void ddp_svg_frame(FILE *f, const ddp_svg_axes *a, const char *title, const char *xname, const char *yname) {
  double W = a->w, H = a->h, ML = a->left, MR = a->right, MT = a->top, MB = a->bottom;
  ddp_svg_begin(f, W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", (ML + W - MR) / 2);
  ddp_svg_text(f, title);
  fputs("</text>\n", f);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n", ML, MT,
          W - ML - MR, H - MT - MB);
  double sx = ddp_svg_tick_step(a->x1 - a->x0), sy = ddp_svg_tick_step(a->y1 - a->y0);
  if (a->xlog && a->x1 - a->x0 >= 1.5) sx = fmax(sx, 1.0); /* whole decades on a log axis spanning several */
  if (a->ylog && a->y1 - a->y0 >= 1.5) sy = fmax(sy, 1.0);
  if (a->xstep) sx = a->xstep;
  if (a->ystep) sy = a->ystep;
  for (double t = ceil(a->x0 / sx) * sx; sx > 0 && t <= a->x1 + 1e-12; t += sx) {
    double x = ddp_svg_px(a, t);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, MT, x, H - MB);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, H - MB + 16);
    tick_label(f, fabs(t) < sx * 1e-9 ? 0.0 : t, a->xlog); /* 0, not 1e-17 */
    fputs("</text>\n", f);
  }
  for (double t = ceil(a->y0 / sy) * sy; sy > 0 && t <= a->y1 + 1e-12; t += sy) {
    double y = ddp_svg_py(a, t);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y, W - MR, y);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", ML - 6, y + 4);
    tick_label(f, fabs(t) < sy * 1e-9 ? 0.0 : t, a->ylog);
    fputs("</text>\n", f);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (ML + W - MR) / 2, H - 14);
  ddp_svg_text(f, xname);
  fputs("</text>\n", f);
  fprintf(f, "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">", (MT + H - MB) / 2,
          (MT + H - MB) / 2);
  ddp_svg_text(f, yname);
  fputs("</text>\n", f);
}

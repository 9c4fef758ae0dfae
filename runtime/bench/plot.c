/* runtime/bench/plot.c: `ddprun --bench plot -o allreduce.svg [--link-GBs B] [--latency-us A] FILE...`:
 * draws the all-reduce throughput plot as SVG: x = message size (log), y = bus bandwidth, one curve per
 * (implementation, GPU count) read from the JSON lines of `ddprun --bench allreduce --out` and of the
 * PyTorch anchor (lines "ANCHOR {...}" with "kind": "allreduce"), plus the theoretical curve of a ring
 * all-reduce over a link of B GB/s with start-up latency A: busbw(S) = S / (A + S / B). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char impl[32];
  int world;
  int n;
  double mb[64], bus[64];
} curve;

static int field_num(const char *line, const char *key, double *out) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *at = strstr(line, pat);
  if (!at) return -1;
  *out = strtod(at + strlen(pat), NULL);
  return 0;
}

static curve *curve_for(curve *cs, int *nc, const char *impl, int world) {
  for (int i = 0; i < *nc; i++)
    if (cs[i].world == world && !strcmp(cs[i].impl, impl)) return &cs[i];
  if (*nc >= 32) return NULL;
  curve *c = &cs[(*nc)++];
  memset(c, 0, sizeof *c);
  snprintf(c->impl, sizeof c->impl, "%s", impl);
  c->world = world;
  return c;
}

int ddprun_plot_main(int argc, char **argv) {
  const char *out = NULL;
  double link = 450.0, lat_us = 10.0;
  curve cs[32];
  int nc = 0;
  for (int i = 0; i < argc; i++) {
    if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "--link-GBs") && i + 1 < argc) {
      link = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--latency-us") && i + 1 < argc) {
      lat_us = atof(argv[++i]);
    } else {
      FILE *f = fopen(argv[i], "r");
      if (!f) {
        fprintf(stderr, "ddprun --bench plot: %s: cannot open\n", argv[i]);
        return 1;
      }
      char line[4096];
      while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"allreduce\"")) continue;
        double world, mb, bus;
        if (field_num(line, "world", &world) || field_num(line, "mb", &mb) || field_num(line, "busbw_GBs", &bus))
          continue;
        const char *impl = strstr(line, "ANCHOR") ? "pytorch" : "ddpc";
        curve *c = curve_for(cs, &nc, impl, (int)world);
        if (c && c->n < 64) {
          c->mb[c->n] = mb;
          c->bus[c->n++] = bus;
        }
      }
      fclose(f);
    }
  }
  if (!out || nc == 0) {
    fprintf(stderr, "ddprun --bench plot: need -o FILE.svg and at least one file with all-reduce results\n");
    return 1;
  }
  double xmin = 1e9, xmax = 0, ymax = link;
  for (int i = 0; i < nc; i++)
    for (int k = 0; k < cs[i].n; k++) {
      if (cs[i].mb[k] < xmin) xmin = cs[i].mb[k];
      if (cs[i].mb[k] > xmax) xmax = cs[i].mb[k];
      if (cs[i].bus[k] > ymax) ymax = cs[i].bus[k];
    }
  ymax *= 1.1;
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "ddprun --bench plot: %s: cannot write\n", out);
    return 1;
  }
  const double W = 760, H = 480, L = 70, R = 190, T = 30, B = 50;
  double lx0 = log10(xmin), lx1 = log10(xmax > xmin ? xmax : xmin * 10);
#define PX(mb) (L + (log10(mb) - lx0) / (lx1 - lx0) * (W - L - R))
#define PY(v) (H - B - (v) / ymax * (H - T - B))
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
             "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"%.0f\" y=\"18\" font-size=\"14\">All-reduce bus bandwidth (float32)</text>\n", L);
  for (int k = 0; k <= 5; k++) {
    double v = ymax * k / 5;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
            L, PY(v), W - R, PY(v), L - 6, PY(v) + 4, v);
  }
  for (double d = pow(10, floor(lx0)); d <= xmax * 1.0001; d *= 10)
    if (d >= xmin * 0.999)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g MB</text>\n",
              PX(d), T + 0.0, PX(d), H - B, PX(d), H - B + 16, d);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">message size</text>\n", (L + W - R) / 2, H - 12);
  fprintf(f, "<text transform=\"translate(16,%.0f) rotate(-90)\" text-anchor=\"middle\">busbw GB/s</text>\n",
          (T + H - B) / 2);
  static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  int legend = 0;
  /* theoretical curve */
  fprintf(f, "<polyline fill=\"none\" stroke=\"#888\" stroke-dasharray=\"5,4\" points=\"");
  for (int k = 0; k <= 60; k++) {
    double mb = pow(10, lx0 + (lx1 - lx0) * k / 60), s = mb * 1048576.0;
    double bus = s / (lat_us * 1e-6 + s / (link * 1e9)) / 1e9;
    fprintf(f, "%.1f,%.1f ", PX(mb), PY(bus));
  }
  fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">theory: %.0f GB/s link, %.0f us</text>\n", W - R + 10,
          T + 14.0, link, lat_us);
  legend++;
  for (int i = 0; i < nc; i++) {
    const char *col = colors[i % 6];
    const char *dash = strcmp(cs[i].impl, "pytorch") ? "" : " stroke-dasharray=\"2,2\"";
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", col, dash);
    for (int k = 0; k < cs[i].n; k++) fprintf(f, "%.1f,%.1f ", PX(cs[i].mb[k]), PY(cs[i].bus[k]));
    fprintf(f, "\"/>\n");
    for (int k = 0; k < cs[i].n; k++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", PX(cs[i].mb[k]), PY(cs[i].bus[k]), col);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s, %d GPUs</text>\n", W - R + 10, T + 14.0 + 18 * legend,
            col, cs[i].impl, cs[i].world);
    legend++;
  }
  fprintf(f, "</svg>\n");
  fclose(f);
  printf("wrote %s (%d curves)\n", out, nc);
  return 0;
}

/* runtime/bench/plot.c: `ddprun --bench plot -o allreduce.svg [--link-GBs B] [--latency-us A] FILE...`:
 * draws the all-reduce throughput plot as SVG: x = message size (log), y = bus bandwidth, one curve per
 * (implementation, device, rank count) read from the JSON lines of `ddprun --bench allreduce --out` (GPU,
 * and CPU ranks with --device ref: "device": "cpu", "impl": "ddpc-ref-mpi") and of the PyTorch anchor
 * (lines "ANCHOR {...}" with "kind": "allreduce"), plus the theoretical curve of a ring all-reduce over a
 * link of B GB/s with start-up latency A: busbw(S) = S / (A + S / B). When the curves span more than two
 * decades (CPU ranks beside GPUs), the y axis is logarithmic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char impl[32];
  int world;
  int cpu; /* "device": "cpu" */
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

/* The string value of "key": "..." into out[cap]; -1 when absent. */
static int field_str(const char *line, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *at = strstr(line, pat);
  if (!at) return -1;
  at += strlen(pat);
  size_t n = 0;
  while (at[n] && at[n] != '"' && n + 1 < cap) n++;
  memcpy(out, at, n);
  out[n] = 0;
  return 0;
}

static curve *curve_for(curve *cs, int *nc, const char *impl, int world, int cpu) {
  for (int i = 0; i < *nc; i++)
    if (cs[i].world == world && cs[i].cpu == cpu && !strcmp(cs[i].impl, impl)) return &cs[i];
  if (*nc >= 32) return NULL;
  curve *c = &cs[(*nc)++];
  memset(c, 0, sizeof *c);
  snprintf(c->impl, sizeof c->impl, "%s", impl);
  c->world = world;
  c->cpu = cpu;
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
        char impl[32] = "ddpc", device[16] = "";
        if (strstr(line, "ANCHOR")) snprintf(impl, sizeof impl, "pytorch");
        else field_str(line, "impl", impl, sizeof impl);
        field_str(line, "device", device, sizeof device);
        if (mb <= 0 || bus <= 0) continue; /* nothing to draw on log axes */
        curve *c = curve_for(cs, &nc, impl, (int)world, !strcmp(device, "cpu"));
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
  double xmin = 1e9, xmax = 0, ymax = link, ymin = link;
  for (int i = 0; i < nc; i++)
    for (int k = 0; k < cs[i].n; k++) {
      if (cs[i].mb[k] < xmin) xmin = cs[i].mb[k];
      if (cs[i].mb[k] > xmax) xmax = cs[i].mb[k];
      if (cs[i].bus[k] > ymax) ymax = cs[i].bus[k];
      if (cs[i].bus[k] < ymin) ymin = cs[i].bus[k];
    }
  { /* the theoretical curve's lowest point, at the smallest size */
    double s = xmin * 1048576.0, th = s / (lat_us * 1e-6 + s / (link * 1e9)) / 1e9;
    if (th < ymin) ymin = th;
  }
  int logy = ymax / ymin > 100.0; /* CPU ranks (~1 GB/s) beside GPUs (~100s of GB/s) */
  double ly0 = logy ? floor(log10(ymin)) : 0, ly1 = logy ? ceil(log10(ymax)) : 0;
  if (logy && ly1 <= ly0) ly1 = ly0 + 1;
  ymax *= 1.1;
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "ddprun --bench plot: %s: cannot write\n", out);
    return 1;
  }
  const double W = 760, H = 480, L = 70, R = 190, T = 30, B = 50;
  double lx0 = log10(xmin), lx1 = log10(xmax > xmin ? xmax : xmin * 10);
#define PX(mb) (L + (log10(mb) - lx0) / (lx1 - lx0) * (W - L - R))
#define PY(v) (logy ? H - B - (log10((v) > 0 ? (v) : pow(10, ly0)) - ly0) / (ly1 - ly0) * (H - T - B) \
                   : H - B - (v) / ymax * (H - T - B))
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
             "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
  fprintf(f, "<text x=\"%.0f\" y=\"18\" font-size=\"14\">All-reduce bus bandwidth (float32)</text>\n", L);
  int yticks = logy ? (int)(ly1 - ly0) : 5;
  for (int k = 0; k <= yticks; k++) {
    double v = logy ? pow(10, ly0 + k) : ymax * k / 5;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            L, PY(v), W - R, PY(v), L - 6, PY(v) + 4, logy ? v : round(v));
  }
  for (double d = pow(10, floor(lx0)); d <= xmax * 1.0001; d *= 10)
    if (d >= xmin * 0.999)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g MB</text>\n",
              PX(d), T + 0.0, PX(d), H - B, PX(d), H - B + 16, d);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">message size</text>\n", (L + W - R) / 2, H - 12);
  fprintf(f, "<text transform=\"translate(16,%.0f) rotate(-90)\" text-anchor=\"middle\">busbw GB/s%s</text>\n",
          (T + H - B) / 2, logy ? " (log)" : "");
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
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s, %d %s</text>\n", W - R + 10, T + 14.0 + 18 * legend,
            col, cs[i].impl, cs[i].world, cs[i].cpu ? "CPU ranks" : "GPUs");
    legend++;
  }
  fprintf(f, "</svg>\n");
  fclose(f);
  printf("wrote %s (%d curves)\n", out, nc);
  return 0;
}

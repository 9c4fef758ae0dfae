/* runtime/bench/plot.c: `ddprun --bench plot -o allreduce.svg [--link-GBs B] [--latency-us A] FILE...`:
 * draws the all-reduce throughput plot as SVG: x = message size (log), y = bus bandwidth, one curve per
 * (implementation, device, rank count) read from the JSON lines of `ddprun --bench allreduce --out` (GPU,
 * and CPU ranks with --device ref: "device": "cpu", "impl": "ddpc-ref-mpi") and of the PyTorch anchor
 * (lines "ANCHOR {...}" with "kind": "allreduce"), plus the theoretical curve of a ring all-reduce over a
 * link of B GB/s with start-up latency A: busbw(S) = S / (A + S / B). When the curves span more than two
 * decades (CPU ranks beside GPUs), the y axis is logarithmic. The document's head and the escaping of the
 * implementation names (input text) are base/svg.h's. */
#include "args.h"
#include "err.h"
#include "file.h"
#include "outfile.h"
#include "svg.h"
#include <getopt.h>
#include <jansson.h>
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

/* One all-reduce result (a line of `--bench allreduce --out`, or an anchor's "ANCHOR {...}" line) into its
 * fields, every one checked: 0, or -1 with "FILE:LINE: ..." (a NaN or an absurd value was drawn). */
static int result_fields(const char *line, const char *path, int lineno, char *impl, size_t implcap, int *world,
                         int *cpu, double *mb, double *bus, char *err, size_t errcap) {
  const int anchor = !strncmp(line, "ANCHOR ", 7);
  json_error_t je;
  json_t *o = json_loads(anchor ? line + 7 : line, 0, &je);
  int rc = 0;
  json_t *w = json_object_get(o, "world"), *m = json_object_get(o, "mb"), *b = json_object_get(o, "busbw_GBs");
  if (!json_is_object(o))
    rc = ddp_fail(err, errcap, "%s:%d: an all-reduce result that is not a JSON object", path, lineno);
  else if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 4096)
    rc = ddp_fail(err, errcap, "%s:%d: \"world\" is not an integer in 1..4096", path, lineno);
  else if (!json_is_number(m) || !(json_number_value(m) > 0 && json_number_value(m) <= 65536))
    rc = ddp_fail(err, errcap, "%s:%d: \"mb\" is not a number in (0, 65536]", path, lineno);
  else if (!json_is_number(b) || !(json_number_value(b) > 0 && json_number_value(b) <= 1e6))
    rc = ddp_fail(err, errcap, "%s:%d: \"busbw_GBs\" is not a number in (0, 1e6]", path, lineno);
  if (rc == 0) {
    json_t *im = json_object_get(o, "impl"), *dev = json_object_get(o, "device");
    snprintf(impl, implcap, "%s", anchor ? "pytorch" : json_is_string(im) ? json_string_value(im) : "ddpc");
    *world = (int)json_integer_value(w);
    *cpu = json_is_string(dev) && !strcmp(json_string_value(dev), "cpu");
    *mb = json_number_value(m);
    *bus = json_number_value(b);
  }
  json_decref(o);
  return rc;
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

static void plot_usage(void) {
  printf("usage: ddprun --bench plot -o F.svg [--link-GBs B] [--latency-us A] FILE.jsonl ...\n"
         "Draws the all-reduce bus bandwidth of `ddprun --bench allreduce --out` files (and PyTorch ANCHOR lines).\n"
         "  -o, --out F.svg   the plot (never one of the inputs)\n"
         "  --link-GBs B      link bandwidth of the theoretical curve, in (0, 1e6] (default 450)\n"
         "  --latency-us A    start-up latency of the theoretical curve, in [0, 1e6] (default 10)\n"
         "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

int ddprun_plot_main(int argc, char **argv) {
  static const struct option lo[] = {{"out", required_argument, NULL, 'o'}, {"link-GBs", required_argument, NULL, 'l'},
                                     {"latency-us", required_argument, NULL, 'a'}, {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  const char *out = NULL;
  double link = 450.0, lat_us = 10.0;
  curve cs[32];
  int nc = 0, help = 0, c;
  char bad[1024] = "", msg[1024];
  opterr = 0;
  optind = 1; /* argv[0] is "plot" */
  while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
    int rc = 0;
    if (c == 'h') help = 1;
    else if (c == 'o') out = optarg;
    else if (c == 'l') rc = ddp_parse_double(optarg, 0, 1, 1e6, "--link-GBs", &link, msg, sizeof msg);
    else if (c == 'a') rc = ddp_parse_double(optarg, 0, 0, 1e6, "--latency-us", &lat_us, msg, sizeof msg);
    else ddp_getopt_error(c, argv, lo, "ddprun --bench plot", msg, sizeof msg), rc = -1;
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", msg);
  }
  if (help) {
    plot_usage();
    return 0;
  }
  if (!bad[0] && (!out || optind >= argc)) snprintf(bad, sizeof bad, "need -o FILE.svg and at least one results file");
  for (int i = optind; !bad[0] && i < argc; i++)
    if (ddp_check_output("-o", out, (const char *const *)&argv[i], (const char *[]){"results file"}, 1, 1, msg, sizeof msg))
      snprintf(bad, sizeof bad, "%s", msg);
  if (!bad[0] && ddp_check_output_folder("-o", out, msg, sizeof msg)) snprintf(bad, sizeof bad, "%s", msg);
  if (bad[0]) {
    fprintf(stderr, "ddprun --bench plot: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  for (int i = optind; i < argc; i++) {
    size_t len = 0;
    char *text = ddp_read_file(argv[i], (size_t)64 << 20, &len, msg, sizeof msg);
    if (!text) {
      fprintf(stderr, "ddprun --bench plot: %s\n", msg);
      return DDP_EXIT_FAILURE;
    }
    int lineno = 0;
    for (char *line = text; line && *line;) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = 0;
      lineno++;
      if (strstr(line, "\"allreduce\"")) { /* the results among other lines (an anchor's log) */
        char impl[32];
        int world, cpu;
        double mb, bus;
        if (result_fields(line, argv[i], lineno, impl, sizeof impl, &world, &cpu, &mb, &bus, msg, sizeof msg)) {
          fprintf(stderr, "ddprun --bench plot: %s\n", msg);
          free(text);
          return DDP_EXIT_FAILURE;
        }
        curve *cv = curve_for(cs, &nc, impl, world, cpu);
        if (cv && cv->n < 64) {
          cv->mb[cv->n] = mb;
          cv->bus[cv->n++] = bus;
        }
      }
      line = nl ? nl + 1 : NULL;
    }
    free(text);
  }
  if (nc == 0) {
    fprintf(stderr, "ddprun --bench plot: no all-reduce results in the files given\n");
    return DDP_EXIT_FAILURE;
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
  FILE *f = ddp_out_open(out, msg, sizeof msg);
  if (!f) {
    fprintf(stderr, "ddprun --bench plot: %s\n", msg);
    return DDP_EXIT_FAILURE;
  }
  const double W = 760, H = 480, L = 70, R = 190, T = 30, B = 50;
  double lx0 = log10(xmin), lx1 = log10(xmax > xmin ? xmax : xmin * 10);
#define PX(mb) (L + (log10(mb) - lx0) / (lx1 - lx0) * (W - L - R))
#define PY(v) (logy ? H - B - (log10((v) > 0 ? (v) : pow(10, ly0)) - ly0) / (ly1 - ly0) * (H - T - B) \
                   : H - B - (v) / ymax * (H - T - B))
  ddp_svg_begin(f, W, H);
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
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">", W - R + 10, T + 14.0 + 18 * legend, col);
    ddp_svg_text(f, cs[i].impl); /* from the input: escaped */
    fprintf(f, ", %d %s</text>\n", cs[i].world, cs[i].cpu ? "CPU ranks" : "GPUs");
    legend++;
  }
  ddp_svg_end(f);
  if (ddp_out_close(f, out, msg, sizeof msg)) {
    fprintf(stderr, "ddprun --bench plot: %s\n", msg);
    return DDP_EXIT_FAILURE;
  }
  printf("wrote %s (%d curves)\n", out, nc);
  return 0;
}

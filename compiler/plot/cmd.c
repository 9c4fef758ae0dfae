/* compiler/plot/cmd.c: the command line of `ddpc plot split|throughput|timeline` (plot.h, docs/CLI.md), with
 * compiler/main.c's conventions: getopt_long, -h/--help anywhere prints the usage to stdout and exits 0, a
 * bad command line is one line "ddpc plot KIND: ..." and exit 2, a bad metrics file or a failed write one
 * line and exit 1 (nothing written). */
#include "args.h"
#include "err.h"
#include "plot.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage_plot(FILE *f) {
  fprintf(f,
          "usage: ddpc plot split -o FILE.svg [--label NAME ...] METRICS.jsonl ...\n"
          "       ddpc plot throughput -o FILE.svg [--label NAME ...] METRICS.jsonl ...\n"
          "       ddpc plot timeline -o FILE.svg TRACE.json ...\n"
          "SVG plots of `ddprun --metrics` files (the steps not marked warmup; all when every one is),\n"
          "and of `ddprun --trace` files (timeline).\n"
          "split: per file and worker (rank), a bar of the mean step time: compute, exposed communication,\n"
          "     optimizer, idle (waiting for the slowest worker).\n"
          "throughput: tokens/s against workers (the run's world size), one series per label, with the ideal\n"
          "     linear scaling from the series' 1-worker (smallest) run.\n"
          "timeline: one step, a row per worker (one trace file per rank): forward/backward boxes per\n"
          "     microbatch, optimizer, send/receive (thin), idle (grey); prints per worker JSON lines of\n"
          "     forward, backward, send/receive, optimizer, idle ms and bubble, then the bubble measured\n"
          "     against the schedule's formula.\n"
          "  -o, --output FILE.svg  the plot (written atomically; never one of the inputs)\n"
          "  --label NAME           a label per metrics file, by position: the k-th --label names the k-th\n"
          "                         file (repeatable; default: the schedule's file name without .lua)\n"
          "  -h, --help             this help\n"
          "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

int ddp_cmd_plot(int argc, char **argv) {
  int split = argc >= 2 && !strcmp(argv[1], "split"), thr = argc >= 2 && !strcmp(argv[1], "throughput");
  int tl = argc >= 2 && !strcmp(argv[1], "timeline");
  if (!split && !thr && !tl) {
    for (int i = 1; i < argc; i++)
      if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
        usage_plot(stdout);
        return 0;
      }
    fprintf(stderr, "ddpc plot: %s (see ddpc plot --help)\n",
            argc < 2 ? "no plot given: split, throughput or timeline"
                                     : "unknown plot; expected split, throughput or timeline");
    return DDP_EXIT_USAGE;
  }
  const char *prog = split ? "ddpc plot split" : thr ? "ddpc plot throughput" : "ddpc plot timeline";
  const char *what = tl ? "trace file" : "metrics file";
  static const struct option lo[] = {{"output", required_argument, NULL, 'o'}, {"label", required_argument, NULL, 'l'},
                                     {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *out = NULL;
  const char **labels = ddp_xcalloc((size_t)argc + 1, sizeof *labels);
  int nlabels = 0, help = 0, c;
  char bad[1024] = "", err[1024] = "";
  argc--, argv++; /* argv[0] is now the plot's name */
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 'o') out = optarg;
    else if (c == 'l') {
      if (!optarg[0] && !bad[0]) snprintf(bad, sizeof bad, "--label: empty");
      labels[nlabels++] = optarg;
    } else if (!bad[0]) ddp_getopt_error(c, argv, lo, prog, bad, sizeof bad);
  }
  int nfiles = argc - optind;
  if (help) {
    usage_plot(stdout);
    free(labels);
    return 0;
  }
  if (!bad[0] && !out) snprintf(bad, sizeof bad, "-o: no output given (see %s --help)", prog);
  if (!bad[0] && nfiles < 1) snprintf(bad, sizeof bad, "no %s given (see %s --help)", what, prog);
  if (!bad[0] && tl && nlabels > 0) snprintf(bad, sizeof bad, "--label: not for the timeline (its rows are workers)");
  if (!bad[0] && nlabels > nfiles)
    snprintf(bad, sizeof bad, "--label: %d labels for %d metrics file%s", nlabels, nfiles, nfiles == 1 ? "" : "s");
  if (!bad[0]) {
    const char **names = ddp_xcalloc((size_t)nfiles, sizeof *names);
    for (int i = 0; i < nfiles; i++) names[i] = what;
    if (ddp_check_output("-o", out, (const char *const *)&argv[optind], names, nfiles, 0, err, sizeof err) ||
        ddp_check_output_folder("-o", out, err, sizeof err))
      snprintf(bad, sizeof bad, "%s", err);
    free(names);
  }
  if (bad[0]) {
    free(labels);
    fprintf(stderr, "%s: %s\n", prog, bad);
    return DDP_EXIT_USAGE;
  }
  if (tl) {
    free(labels);
    int rc = ddp_plot_timeline(out, (const char *const *)&argv[optind], nfiles, stdout, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", prog, err);
    else printf("wrote %s (%d worker%s)\n", out, nfiles, nfiles == 1 ? "" : "s");
    if (rc == 0 && (fflush(stdout) || ferror(stdout))) rc = -1;
    return rc ? DDP_EXIT_FAILURE : 0;
  }
  ddp_plot_run *runs = ddp_xcalloc((size_t)nfiles, sizeof *runs);
  int rc = 0, n = 0;
  for (; n < nfiles && rc == 0; n++)
    rc = ddp_plot_read(argv[optind + n], n < nlabels ? labels[n] : NULL, &runs[n], err, sizeof err);
  if (rc == 0)
    rc = split ? ddp_plot_split_svg(out, runs, nfiles, err, sizeof err)
               : ddp_plot_throughput_svg(out, runs, nfiles, err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", prog, err);
  else printf("wrote %s (%d run%s)\n", out, nfiles, nfiles == 1 ? "" : "s");
  for (int i = 0; i < n; i++) ddp_plot_run_free(&runs[i]);
  free(runs);
  free(labels);
  if (rc == 0 && (fflush(stdout) || ferror(stdout))) rc = -1;
  return rc ? DDP_EXIT_FAILURE : 0;
}

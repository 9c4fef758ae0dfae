/* compiler/scaling/cmd.c: the command lines of `ddpc scaling fit` and `ddpc scaling plan` (scaling.h,
 * docs/SCALING.md), with compiler/main.c's conventions: getopt_long, -h/--help anywhere prints the usage to
 * stdout and exits 0, a bad command line is one line "ddpc scaling ...: ..." and exit 2, any other
 * failure one line and exit 1. */
#include "args.h"
#include "err.h"
#include "scaling.h"
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BUDGETS 64

static void usage_scaling(FILE *f) {
  fprintf(f,
          "usage: ddpc scaling fit RUNS.json [--budgets 1e23,1e24] [--svg-dir DIR]\n"
          "       ddpc scaling plan --budgets 1e18,1e19 -o DIR [--sizes 5] [--spacing 0.25] [--tokens-per-param 20]\n"
          "                         [--batch 64] [--context 512] [--vocab 10000] [--tokens random] [--precision bf16]\n"
          "                         [--lr 3e-4]\n"
          "IsoFLOPs scaling laws (Chinchilla approach 2; docs/SCALING.md).\n"
          "fit: RUNS.json is a JSON array of {\"parameters\": N, \"compute_budget\": C, \"final_loss\": L} (or\n"
          "     \"metrics\": a ddprun --metrics file instead of final_loss). Per budget, a parabola of loss in log10 N\n"
          "     gives N_opt and D_opt = C / (6 N_opt); then N_opt(C) and D_opt(C) as power laws.\n"
          "  --budgets LIST   compute budgets (FLOPs, comma-separated) to extrapolate the laws to\n"
          "  --svg-dir DIR    write isoflops.svg, n_opt.svg, d_opt.svg there (made if missing)\n"
          "plan: per budget, --sizes transformer shapes spaced --spacing decades of N apart around sqrt(C / (6 r))\n"
          "     (r = --tokens-per-param), as DIR/isoflops_<C>_<k>.lua schedules whose steps spend C, and\n"
          "     DIR/runs.json for `ddpc scaling fit` once each run wrote its metrics file.\n"
          "  -o, --output DIR  the folder of the schedules (made if missing)\n"
          "  -h, --help        this help\n"
          "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

static int usage_error(const char *prog, const char *msg) {
  fprintf(stderr, "%s: %s\n", prog, msg);
  return DDP_EXIT_USAGE;
}

/* "1e18,1e19" -> budgets; 0 or -1 with one line. */
static int parse_budgets(const char *text, double *out, int *n, char *err, size_t errcap) {
  if (ddp_check_list("--budgets", text, err, errcap)) return -1;
  char *copy = ddp_xstrdup(text), *save = NULL;
  int rc = 0;
  *n = 0;
  for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_BUDGETS) rc = ddp_fail(err, errcap, "--budgets: more than %d budgets", MAX_BUDGETS);
    else rc = ddp_parse_double(t, 0, 1, 1e40, "--budgets", &out[(*n)++], err, errcap);
  }
  if (rc == 0 && *n == 0) rc = ddp_fail(err, errcap, "--budgets: '%s' holds no budget", text);
  free(copy);
  return rc;
}

/* Makes folder `dir` when missing; 0 or -1 with one line. */
static int make_dir(const char *opt, const char *dir, char *err, size_t errcap) {
  struct stat st;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) return ddp_fail(err, errcap, "%s: cannot make %s: %s", opt, dir, strerror(errno));
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return ddp_fail(err, errcap, "%s: %s is not a folder", opt, dir);
  return 0;
}

static int cmd_fit(int argc, char **argv) {
  static const struct option lo[] = {{"budgets", required_argument, NULL, 'b'},
                                     {"svg-dir", required_argument, NULL, 's'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  const char *prog = "ddpc scaling fit", *svg = NULL;
  double at[MAX_BUDGETS];
  int n_at = 0, help = 0, c;
  char bad[1024] = "", err[1024];
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 's') svg = optarg;
    else if (c == 'b') {
      if (parse_budgets(optarg, at, &n_at, err, sizeof err) && !bad[0]) snprintf(bad, sizeof bad, "%s", err);
    } else if (!bad[0]) ddp_getopt_error(c, argv, lo, prog, bad, sizeof bad);
  }
  if (help) {
    usage_scaling(stdout);
    return 0;
  }
  if (!bad[0] && optind >= argc) snprintf(bad, sizeof bad, "no runs file given (see ddpc scaling --help)");
  if (!bad[0] && optind + 1 < argc) snprintf(bad, sizeof bad, "more than one runs file given ('%s')", argv[optind + 1]);
  if (bad[0]) return usage_error(prog, bad);
  struct stat st;
  if (svg && (stat(svg, &st) == 0 ? !S_ISDIR(st.st_mode) && ddp_fail(err, sizeof err, "--svg-dir: %s is not a folder", svg)
                                  : ddp_check_output_folder("--svg-dir", svg, err, sizeof err))) {
    fprintf(stderr, "%s: %s\n", prog, err); /* before the fit is printed: a failed run leaves no whole-looking report */
    return DDP_EXIT_FAILURE;
  }
  ddp_scaling_run *runs = NULL;
  int nruns = 0;
  ddp_scaling_fit fit;
  if (ddp_scaling_read(argv[optind], &runs, &nruns, err, sizeof err) ||
      ddp_scaling_fit_runs(runs, nruns, &fit, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", prog, err);
    free(runs);
    return DDP_EXIT_FAILURE;
  }
  ddp_scaling_print(stdout, &fit, at, n_at);
  int rc = svg ? make_dir("--svg-dir", svg, err, sizeof err) : 0; /* made once the fit succeeded */
  if (rc == 0 && svg) rc = ddp_scaling_svg(svg, runs, &fit, at, n_at, err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", prog, err);
  else if (svg) printf("plots: %s/isoflops.svg %s/n_opt.svg %s/d_opt.svg\n", svg, svg, svg);
  if (rc == 0 && (fflush(stdout) || ferror(stdout))) {
    fprintf(stderr, "%s: cannot write to stdout\n", prog);
    rc = -1;
  }
  ddp_scaling_fit_free(&fit);
  free(runs);
  return rc ? DDP_EXIT_FAILURE : 0;
}

static int cmd_plan(int argc, char **argv) {
  static const struct option lo[] = {{"budgets", required_argument, NULL, 'b'},
                                     {"output", required_argument, NULL, 'o'},
                                     {"sizes", required_argument, NULL, 'n'},
                                     {"spacing", required_argument, NULL, 'S'},
                                     {"tokens-per-param", required_argument, NULL, 'r'},
                                     {"batch", required_argument, NULL, 'B'},
                                     {"context", required_argument, NULL, 'c'},
                                     {"vocab", required_argument, NULL, 'v'},
                                     {"tokens", required_argument, NULL, 't'},
                                     {"precision", required_argument, NULL, 'p'},
                                     {"lr", required_argument, NULL, 'l'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  const char *prog = "ddpc scaling plan";
  double budgets[MAX_BUDGETS];
  int64_t sizes = 5;
  ddp_plan_opts o = {.budgets = budgets, .spacing = 0.25, .tokens_per_param = 20, .lr = 3e-4, .batch = 64,
                     .context = 512, .vocab = 10000, .tokens = "random", .precision = "bf16"};
  int help = 0, c;
  char bad[1024] = "", err[1024];
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'h': help = 1; break;
    case 'o': o.dir = optarg; break;
    case 't': o.tokens = optarg; break;
    case 'p':
      o.precision = optarg;
      if (strcmp(optarg, "bf16") && strcmp(optarg, "fp32"))
        rc = ddp_fail(err, sizeof err, "--precision: '%s' is not bf16 or fp32", optarg);
      break;
    case 'b': rc = parse_budgets(optarg, budgets, &o.nbudgets, err, sizeof err); break;
    case 'n': rc = ddp_parse_i64(optarg, 1, 64, "--sizes", &sizes, err, sizeof err); break;
    case 'S': rc = ddp_parse_double(optarg, 0, 1, 2, "--spacing", &o.spacing, err, sizeof err); break;
    case 'r': rc = ddp_parse_double(optarg, 0, 1, 1e6, "--tokens-per-param", &o.tokens_per_param, err, sizeof err); break;
    case 'l': rc = ddp_parse_double(optarg, 0, 1, 10, "--lr", &o.lr, err, sizeof err); break;
    case 'B': rc = ddp_parse_i64(optarg, 1, 1 << 20, "--batch", &o.batch, err, sizeof err); break;
    case 'c': rc = ddp_parse_i64(optarg, 1, 1 << 20, "--context", &o.context, err, sizeof err); break;
    case 'v': rc = ddp_parse_i64(optarg, 1, 1 << 24, "--vocab", &o.vocab, err, sizeof err); break;
    default: ddp_getopt_error(c, argv, lo, prog, err, sizeof err), rc = -1;
    }
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", err);
  }
  if (help) {
    usage_scaling(stdout);
    return 0;
  }
  o.sizes = (int)sizes;
  if (!bad[0] && optind < argc) snprintf(bad, sizeof bad, "unexpected argument '%s' (see ddpc scaling --help)", argv[optind]);
  if (!bad[0] && !o.nbudgets) snprintf(bad, sizeof bad, "no --budgets given (see ddpc scaling --help)");
  for (int i = 0; i < o.nbudgets && !bad[0]; i++)
    for (int j = 0; j < i && !bad[0]; j++)
      if (budgets[i] == budgets[j]) snprintf(bad, sizeof bad, "--budgets: %g is given twice", budgets[i]);
  if (!bad[0] && !o.dir) snprintf(bad, sizeof bad, "no output folder given (-o DIR)");
  /* the name goes into each schedule as a Lua string literal, where '"', '\\' and control characters would
   * change or end it */
  for (const char *t = o.tokens; !bad[0] && *t; t++)
    if (*t == '"' || *t == '\\' || (unsigned char)*t < 0x20 || *t == 0x7f)
      snprintf(bad, sizeof bad, "--tokens: a file name with a quote, a backslash or a control character is refused");
  if (bad[0]) return usage_error(prog, bad);
  if (ddp_scaling_plan(&o, stdout, err, sizeof err)) { /* it makes the folder once every run checks out */
    fprintf(stderr, "%s: %s\n", prog, err);
    return DDP_EXIT_FAILURE;
  }
  printf("schedules and runs.json written to %s\n", o.dir);
  return fflush(stdout) || ferror(stdout) ? DDP_EXIT_FAILURE : 0;
}

int ddp_cmd_scaling(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "fit")) return cmd_fit(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "plan")) return cmd_plan(argc - 1, argv + 1);
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage_scaling(stdout);
    return 0;
  }
  fprintf(stderr, "ddpc scaling: %s (see ddpc scaling --help)\n",
          argc < 2 ? "no subcommand given: fit or plan" : "unknown subcommand; expected fit or plan");
  return DDP_EXIT_USAGE;
}

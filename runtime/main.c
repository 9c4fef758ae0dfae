/* runtime/main.c: the ddprun command line (docs/CLI.md).
 *   ddprun PLAN [--device cuda|ref] [--steps N] [--metrics FILE.jsonl] [--checkpoint-dir DIR]
 *          [--save-every K] [--save-initial] [--keep-checkpoints K] [--resume] [--seed S] [--nproc N]
 *          [--peak-tflops X] [--trace F.json] [--calibrate [--calibrate-out F.json]] [--quiet]
 *   ddprun --bench allreduce|plot ...   (runtime/bench/)
 *   ddprun --help-env prints the table of environment variables (base/param.h; docs/ENVIRONMENT.md).
 *   ddprun --version
 * Options by getopt_long: anywhere on the line, as `--opt value` or `--opt=value`; -h/--help anywhere
 * prints the usage to stdout and exits 0. Numbers are range-checked (no wrap, no saturation, no NaN).
 * Exit status: 0 done, 2 a bad command line (one line "ddprun: --opt: ..."), 1 any other failure.
 * Ranks come from the launcher's environment (srun, torchrun-style variables, mpirun) or --nproc N; the
 * reference executor runs one rank per process under mpirun/srun (collectives over MPI), else every rank
 * of the plan as a thread of this process (dispatch_ref.c). Without a GPU, ddprun says
 * so and runs the reference executor only for plans it estimates finish in reasonable time. SIGTERM/SIGINT
 * stop the run at the next step boundary (runtime/driver/stop.h) and ddprun exits with 128 + the signal. */
#include "args.h"
#include "cli.h"
#include "err.h"
#include "param.h"
#include "stop.h"
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: ddprun PLAN [--device cuda|ref] [--steps N] [--metrics FILE.jsonl] [--checkpoint-dir DIR]\n"
          "              [--save-every K] [--save-initial] [--keep-checkpoints K] [--resume] [--seed S]\n"
          "              [--nproc N] [--peak-tflops X] [--trace F.json] [--calibrate [--calibrate-out F.json]]\n"
          "              [--quiet]\n"
          "       ddprun --bench allreduce [--device cuda|ref] [--nproc N] [--sizes-mb 1,10,100,1000] [--iters N]\n"
          "              [--out F.jsonl]   (ref: CPU ranks, one process each under mpirun/srun)\n"
          "       ddprun --bench interference [--nproc N] [--mb 100] [--tokens 4096] [--paths ...] [--out F.jsonl]\n"
          "       ddprun --bench plot -o F.svg F.jsonl ...\n"
          "       ddprun --help-env   (the DDP_* environment variables)\n"
          "       ddprun --version\n"
          "Replays a plan compiled by ddpc. Under srun, torchrun-style variables or mpirun each process is one\n"
          "rank; --nproc N forks N local ranks.\n"
          "  --device cuda|ref     the executor (default: cuda when a GPU is present, else ref for small plans)\n"
          "  --steps N             steps to run, 0..1000000000 (default: the plan's)\n"
          "  --metrics FILE        one JSON line per step (rank 0); never one of the inputs\n"
          "  --checkpoint-dir DIR  save the model and optimizer state there (at the end, or every K steps)\n"
          "  --save-every K        checkpoint every K steps, 1..1000000000 (into DIR/step-NNNNNN/)\n"
          "  --save-initial        also checkpoint step 0, before the first step\n"
          "  --keep-checkpoints K  keep the K newest checkpoints, 0..1000000 (0: all; default 2)\n"
          "  --resume              continue from the newest complete checkpoint in --checkpoint-dir\n"
          "  --seed S              parameter and data seed, 0..9223372036854775807 (default: the plan's)\n"
          "  --nproc N             fork N local ranks, 1..4096\n"
          "  --peak-tflops X       the device's peak for MFU, in (0, 1e6]\n"
          "  --trace FILE.json     Chrome trace of the last step (FILE.rankR.json per rank for several)\n"
          "  --calibrate           time every instruction of a calibration plan (schedules/calibrate.lua) and\n"
          "                        write the fitted device profile for ddpc explain --profile (docs/EXPLAIN.md)\n"
          "                        under the cache directory, or to --calibrate-out FILE.json\n"
          "  -q, --quiet           no progress lines\n"
          "  -h, --help            this help\n"
          "SIGTERM/SIGINT stop at the next step boundary (with a checkpoint when --checkpoint-dir is set).\n"
          "Exit status: 0 done, 1 failed, 2 bad command line, 128+signal when stopped by a signal.\n");
}

enum { OPT_DEVICE = 256, OPT_STEPS, OPT_METRICS, OPT_CKPT, OPT_SAVE_EVERY, OPT_RESUME, OPT_SAVE_INITIAL, OPT_KEEP, OPT_SEED, OPT_NPROC,
       OPT_PEAK, OPT_TRACE, OPT_HELP_ENV, OPT_VERSION, OPT_CALIBRATE, OPT_CALIBRATE_OUT };

/* Flushes stdout; a write that failed (a full disk, /dev/full) is one line on stderr and true. */
static bool stdout_failed(void) {
  if (fflush(stdout) == 0 && !ferror(stdout)) return false;
  fprintf(stderr, "ddprun: cannot write to stdout: %s\n", errno ? strerror(errno) : "write error");
  return true;
}

static int usage_error(const char *msg) {
  fprintf(stderr, "ddprun: %s\n", msg);
  return DDP_EXIT_USAGE;
}

int main(int argc, char **argv) {
  ddp_set_progname("ddprun");
  if (argc >= 2 && !strcmp(argv[1], "--bench")) return ddprun_bench_main(argc - 2, argv + 2);
  for (int i = 2; i < argc; i++) /* a benchmark takes no plan: --bench elsewhere is a misplaced first word */
    if (!strcmp(argv[i], "--bench")) return usage_error("--bench must come first: ddprun --bench allreduce|interference|plot ...");
  static const struct option lo[] = {{"device", required_argument, NULL, OPT_DEVICE},
                                     {"steps", required_argument, NULL, OPT_STEPS},
                                     {"metrics", required_argument, NULL, OPT_METRICS},
                                     {"checkpoint-dir", required_argument, NULL, OPT_CKPT},
                                     {"save-every", required_argument, NULL, OPT_SAVE_EVERY},
                                     {"resume", no_argument, NULL, OPT_RESUME},
                                     {"save-initial", no_argument, NULL, OPT_SAVE_INITIAL},
                                     {"keep-checkpoints", required_argument, NULL, OPT_KEEP},
                                     {"seed", required_argument, NULL, OPT_SEED},
                                     {"nproc", required_argument, NULL, OPT_NPROC},
                                     {"peak-tflops", required_argument, NULL, OPT_PEAK},
                                     {"trace", required_argument, NULL, OPT_TRACE},
                                     {"calibrate", no_argument, NULL, OPT_CALIBRATE},
                                     {"calibrate-out", required_argument, NULL, OPT_CALIBRATE_OUT},
                                     {"quiet", no_argument, NULL, 'q'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"help-env", no_argument, NULL, OPT_HELP_ENV},
                                     {"version", no_argument, NULL, OPT_VERSION},
                                     {NULL, 0, NULL, 0}};
  ddprun_args a;
  memset(&a, 0, sizeof a);
  a.run.steps = -1;
  a.run.keep = 2;
  int help = 0, help_env = 0, want_version = 0, keep_given = 0, c;
  char bad[1024] = "", err[1024];
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":qh", lo, NULL)) != -1) {
    int rc = 0;
    int64_t n = 0;
    switch (c) {
    case OPT_DEVICE:
      if (strcmp(optarg, "cuda") && strcmp(optarg, "ref"))
        rc = ddp_fail(err, sizeof err, "--device: '%.100s' is not one of cuda, ref", optarg);
      a.device = optarg;
      break;
    case OPT_STEPS: rc = ddp_parse_i64(optarg, 0, 1000000000, "--steps", &a.run.steps, err, sizeof err); break;
    case OPT_METRICS: a.run.metrics_path = optarg; break;
    case OPT_TRACE: a.run.trace_path = optarg; break;
    case OPT_CALIBRATE: a.run.calibrate = true; break;
    case OPT_CALIBRATE_OUT: a.run.calibrate_out = optarg; break;
    case OPT_CKPT: a.run.ckpt_dir = optarg; break;
    case OPT_SAVE_EVERY:
      rc = ddp_parse_i64(optarg, 1, 1000000000, "--save-every", &a.run.save_every, err, sizeof err);
      break;
    case OPT_SEED:
      rc = ddp_parse_i64(optarg, 0, INT64_MAX, "--seed", &n, err, sizeof err);
      a.has_seed = 1;
      a.seed = (uint64_t)n;
      break;
    case OPT_NPROC:
      rc = ddp_parse_i64(optarg, 1, 4096, "--nproc", &n, err, sizeof err);
      a.nproc = (int)n;
      break;
    case OPT_PEAK: rc = ddp_parse_double(optarg, 0, 1, 1e6, "--peak-tflops", &a.run.peak_tflops, err, sizeof err); break;
    case OPT_RESUME: a.run.resume = true; break;
    case OPT_SAVE_INITIAL: a.run.save_initial = true; break;
    case OPT_KEEP:
      rc = ddp_parse_i64(optarg, 0, 1000000, "--keep-checkpoints", &n, err, sizeof err);
      a.run.keep = (int)n;
      keep_given = 1;
      break;
    case 'q': a.run.quiet = true; break;
    case 'h': help = 1; break;
    case OPT_HELP_ENV: help_env = 1; break;
    case OPT_VERSION: want_version = 1; break;
    default: ddp_getopt_error(c, argv, lo, "ddprun", err, sizeof err), rc = -1;
    }
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", err);
  }
  if (help) {
    usage(stdout);
    return stdout_failed() ? DDP_EXIT_FAILURE : 0;
  }
  if (help_env) {
    ddp_param_print_table(stdout);
    return fflush(stdout) || ferror(stdout) ? DDP_EXIT_FAILURE : 0;
  }
  if (want_version) return ddprun_version(stdout) ? DDP_EXIT_FAILURE : 0;
  if (bad[0]) return usage_error(bad);
  if (optind >= argc) return usage_error("no plan given (see ddprun --help)");
  if (optind + 1 < argc) {
    snprintf(bad, sizeof bad, "more than one plan given ('%s')", argv[optind + 1]);
    return usage_error(bad);
  }
  a.plan_path = argv[optind];
  if (a.run.resume && !a.run.ckpt_dir) return usage_error("--resume needs --checkpoint-dir DIR");
  if (a.run.save_initial && !a.run.ckpt_dir) return usage_error("--save-initial needs --checkpoint-dir DIR");
  if (a.run.save_every && !a.run.ckpt_dir) return usage_error("--save-every needs --checkpoint-dir DIR");
  if (keep_given && !a.run.ckpt_dir) return usage_error("--keep-checkpoints needs --checkpoint-dir DIR");
  if (a.run.ckpt_dir && !a.run.ckpt_dir[0]) return usage_error("--checkpoint-dir: an empty path");
  if (a.run.calibrate_out && !a.run.calibrate) return usage_error("--calibrate-out needs --calibrate");
  if (ddp_param_check_all("DDP_", err, sizeof err)) return usage_error(err); /* read or not by this run's path */
  ddp_stop_install();
  int rc = ddprun_main(&a);
  if (stdout_failed() && rc == 0) rc = DDP_EXIT_FAILURE; /* the log of a run on a full disk is not lost silently */
  return rc == 0 ? ddp_stop_exit_status() : rc;
}

/* runtime/main.c: the ddprun command line.
 *   ddprun PLAN [--device cuda|ref] [--steps N] [--metrics FILE.jsonl] [--checkpoint-dir DIR]
 *          [--save-every K] [--resume] [--seed S] [--nproc N] [--peak-tflops X] [--quiet]
 *   ddprun --help-env prints the table of environment variables (base/param.h; docs/ENVIRONMENT.md).
 * Ranks come from the launcher's environment (srun, torchrun-style variables, mpirun) or --nproc N; the
 * reference executor runs one rank per process under mpirun/srun (collectives over MPI), else every rank
 * of the plan as a thread of this process (dispatch_ref.c). Without a GPU, ddprun says
 * so and runs the reference executor only for plans it estimates finish in reasonable time. */
#include "cli.h"
#include "err.h"
#include "param.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: ddprun PLAN [--device cuda|ref] [--steps N] [--metrics FILE.jsonl] [--checkpoint-dir DIR]\n"
          "              [--save-every K] [--resume] [--seed S] [--nproc N] [--peak-tflops X] [--trace F.json]\n"
          "              [--quiet]\n"
          "       ddprun --bench allreduce [--device cuda|ref] [--nproc N] [--sizes-mb 1,10,100,1000] [--iters N]\n"
          "              [--out F.json]   (ref: CPU ranks, one process each under mpirun/srun)\n"
          "       ddprun --help-env   (the DDP_* environment variables)\n"
          "Replays a plan compiled by ddpc. Under srun, torchrun-style variables or mpirun each process is one\n"
          "rank; --nproc N forks N local ranks.\n");
}

static int parse_i64(const char *flag, const char *v, int64_t min, int64_t *out) {
  char *end;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || x < min) {
    fprintf(stderr, "ddprun: %s must be an integer >= %lld, got '%s'\n", flag, (long long)min, v);
    return -1;
  }
  *out = x;
  return 0;
}

int main(int argc, char **argv) {
  ddp_set_progname("ddprun");
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--help-env")) {
    ddp_param_print_table(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--bench")) return ddprun_bench_main(argc - 2, argv + 2);
  ddprun_args a;
  memset(&a, 0, sizeof a);
  a.run.steps = -1;
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(f, "--device") || !strcmp(f, "--steps") || !strcmp(f, "--metrics") ||
                !strcmp(f, "--checkpoint-dir") || !strcmp(f, "--save-every") || !strcmp(f, "--seed") ||
                !strcmp(f, "--nproc") || !strcmp(f, "--peak-tflops") || !strcmp(f, "--trace");
    if (takes && !v) {
      fprintf(stderr, "ddprun: %s needs a value\n", f);
      return 1;
    }
    int64_t n;
    if (!strcmp(f, "--device")) {
      if (strcmp(v, "cuda") && strcmp(v, "ref")) {
        fprintf(stderr, "ddprun: --device must be cuda or ref, got '%s'\n", v);
        return 1;
      }
      a.device = v;
    } else if (!strcmp(f, "--steps")) {
      if (parse_i64(f, v, 0, &a.run.steps)) return 1;
    } else if (!strcmp(f, "--metrics")) {
      a.run.metrics_path = v;
    } else if (!strcmp(f, "--trace")) {
      a.run.trace_path = v;
    } else if (!strcmp(f, "--checkpoint-dir")) {
      a.run.ckpt_dir = v;
    } else if (!strcmp(f, "--save-every")) {
      if (parse_i64(f, v, 1, &a.run.save_every)) return 1;
    } else if (!strcmp(f, "--seed")) {
      if (parse_i64(f, v, 0, &n)) return 1;
      a.has_seed = 1;
      a.seed = (uint64_t)n;
    } else if (!strcmp(f, "--nproc")) {
      if (parse_i64(f, v, 1, &n)) return 1;
      a.nproc = (int)n;
    } else if (!strcmp(f, "--peak-tflops")) {
      char *end;
      a.run.peak_tflops = strtod(v, &end);
      if (*end || a.run.peak_tflops <= 0) {
        fprintf(stderr, "ddprun: --peak-tflops must be a positive number, got '%s'\n", v);
        return 1;
      }
    } else if (!strcmp(f, "--resume")) {
      a.run.resume = true;
      continue;
    } else if (!strcmp(f, "--quiet") || !strcmp(f, "-q")) {
      a.run.quiet = true;
      continue;
    } else if (f[0] == '-') {
      fprintf(stderr, "ddprun: unknown option '%s' (see ddprun --help)\n", f);
      return 1;
    } else if (!a.plan_path) {
      a.plan_path = f;
      continue;
    } else {
      fprintf(stderr, "ddprun: more than one plan given ('%s')\n", f);
      return 1;
    }
    i++;
  }
  if (!a.plan_path) {
    fprintf(stderr, "ddprun: no plan given\n");
    return 1;
  }
  if (a.run.resume && !a.run.ckpt_dir) {
    fprintf(stderr, "ddprun: --resume needs --checkpoint-dir DIR\n");
    return 1;
  }
  return ddprun_main(&a);
}

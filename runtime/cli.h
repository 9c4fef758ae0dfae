/* runtime/cli.h: what ddprun's command line decided, and the entry points behind it. */
#ifndef DDP_CLI_H
#define DDP_CLI_H
#include "run.h"

typedef struct ddprun_args {
  const char *plan_path;
  const char *device; /* NULL: cuda when a GPU is present, else ref for small plans */
  int nproc;          /* 0: ranks from the environment */
  int has_seed;
  uint64_t seed;
  ddp_run_opts run;
} ddprun_args;

int ddprun_main(ddprun_args *a);                  /* runtime/dispatch.c */
int ddprun_ref(const ddp_plan *p, ddprun_args *a); /* runtime/dispatch_ref.c */
int ddprun_cuda(const ddp_plan *p, ddprun_args *a); /* runtime/dispatch_cuda.c */
int ddprun_bench_main(int argc, char **argv);     /* runtime/bench/allreduce.c */
int ddprun_bench_interference_main(int argc, char **argv); /* runtime/bench/interference.c */
/* "ddprun V (plan format N, CUDA R.R runtime, NCCL X.Y.Z)" on `out`; 0, or -1 on a write error
 * (runtime/version.c; no GPU needed). */
int ddprun_version(FILE *out);
/* Seconds the reference executor would need for `steps` steps of the plan (its FLOPs over a measured
 * rate of the reference GEMM). */
double ddprun_ref_estimate_s(const ddp_plan *p, int64_t steps);
/* Do the arenas of every rank (all run in this process) fit in `avail` bytes (MemAvailable of
 * /proc/meminfo when avail is 0; no check when it cannot be read)? 0, or -1 with one line giving both. */
int ddprun_ref_check_memory(const ddp_plan *p, uint64_t avail, char *err, size_t errcap); /* dispatch_ref.c */
#endif

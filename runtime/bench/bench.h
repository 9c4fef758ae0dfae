/* runtime/bench/bench.h: the options of `ddprun --bench allreduce`, shared by the GPU benchmark
 * (allreduce.c, NCCL) and the CPU one (allreduce_cpu.c, the reference executor's collectives), and how a
 * GPU benchmark gets its ranks (bench_launch.c). */
#ifndef DDP_BENCH_H
#define DDP_BENCH_H
#include "launch.h"
#include <stddef.h>

typedef struct bench_opts {
  double sizes_mb[32];
  int nsizes;
  int iters; /* 0: chosen per size */
  const char *out;
} bench_opts;

/* The CPU benchmark: ranks from mpirun/srun (one process each, collectives over MPI) or, with nproc > 0,
 * nproc threads of this process. Prints the table on rank 0 and appends JSON lines to o->out. Returns the
 * exit status. */
int ddprun_bench_allreduce_cpu(const bench_opts *o, int nproc);

/* One rank of a GPU benchmark: 0, or -1 with one line in err. */
typedef int (*ddp_bench_rank_fn)(const ddp_identity *id, void *ctx, char *err, size_t errcap);
/* Runs fn on nproc local ranks (--nproc), or on this process's rank under a launcher (mpirun, srun,
 * torchrun variables), NVLink multicast off unless set; a rank's error is printed as "ddprun --bench WHAT:
 * rank R: ...". Returns the exit status (bench_launch.c). */
int ddp_bench_launch(const char *what, int nproc, ddp_bench_rank_fn fn, void *ctx);
#endif

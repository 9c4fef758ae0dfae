/* runtime/bench/bench.h: the options of `ddprun --bench allreduce`, shared by the GPU benchmark
 * (allreduce.c, NCCL) and the CPU one (allreduce_cpu.c, the reference executor's collectives). */
#ifndef DDP_BENCH_H
#define DDP_BENCH_H

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
#endif

/* runtime/bench/bench_launch.c: how a GPU benchmark of `ddprun --bench` gets its ranks (bench.h). */
#include "bench.h"
#include "launch.h"
#include "probe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_job {
  const char *what;
  ddp_bench_rank_fn fn;
  void *ctx;
} bench_job;

/* One rank: the benchmark, its error as one line naming the benchmark and the rank. */
static int rank_entry(const ddp_identity *id, void *p) {
  const bench_job *j = p;
  char err[1024];
  if (j->fn(id, j->ctx, err, sizeof err)) {
    fprintf(stderr, "ddprun --bench %s: rank %d: %s\n", j->what, id->rank, err);
    return 1;
  }
  return 0;
}

int ddp_bench_launch(const char *what, int nproc, ddp_bench_rank_fn fn, void *ctx) {
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  bench_job j = {what, fn, ctx};
  char err[1024];
  int ndev = 0; /* before any rank starts or waits at the rendezvous: one line, not one per rank */
  if (ddp_cuda_probe_in_child(&ndev, err, sizeof err)) {
    fprintf(stderr, "ddprun --bench %s: %s%s\n", what, err,
            strcmp(what, "allreduce") ? "" : " (--device ref runs the reference executor's collectives on CPU ranks)");
    return 1;
  }
  if (nproc > 0) {
    int rc = ddp_launch_local(nproc, rank_entry, &j, err, sizeof err);
    if (rc == -1) fprintf(stderr, "ddprun: %s\n", err);
    return rc == 0 ? 0 : 1;
  }
  ddp_identity id;
  if (ddp_launch_identity(&id, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  return rank_entry(&id, &j);
}

/* runtime/bench/allreduce_cpu.c: `ddprun --bench allreduce --device ref`: the all-reduce benchmark on CPU
 * ranks, the seeds' "Gloo + CPU" row beside the GPU's "NCCL + GPU". It times exactly what the reference
 * executor runs for an I_ALL_REDUCE of float32 (ddp_ref_collective: the owner of each slice sums it in rank
 * order, then the slices are gathered), with one process per rank under mpirun or srun (bytes over MPI),
 * or with --nproc N as N threads of this process (the in-process communicator). Same table and JSON lines
 * as the GPU benchmark, with "device": "cpu" and "impl": "ddpc-ref-mpi" or "ddpc-ref-threads".
 * Correctness first: every rank contributes rank+1 and every element must equal W(W+1)/2. Time per size:
 * rank 0's wall clock over the iterations between two one-element all-reduces (barriers). */
#include "bench.h"
#include "clock.h"
#include "comm_mpi.h"
#include "comm_ref.h"
#include "err.h"
#include "launch.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const bench_opts *o;
  ddp_ref_comm *comm;
  int rank, world;
  const char *impl, *how;
  int rc;
  char err[512];
} cpu_rank;

static int allreduce(cpu_rank *r, float *buf, size_t n) {
  ddp_instr in;
  memset(&in, 0, sizeof in);
  in.opcode = I_ALL_REDUCE;
  in.dt[COLL_P_SEND] = DT_F32;
  in.i[COLL_I_COUNT] = (int64_t)n;
  in.i[COLL_I_REDOP] = REDOP_SUM;
  return ddp_ref_collective(r->comm, r->rank, &in, buf, buf, r->err, sizeof r->err);
}

static int bench(cpu_rank *r) {
  const bench_opts *o = r->o;
  double max_mb = 0;
  for (int s = 0; s < o->nsizes; s++)
    if (o->sizes_mb[s] > max_mb) max_mb = o->sizes_mb[s];
  size_t max_n = (size_t)(max_mb * 1048576.0 / 4.0);
  float *buf = malloc((max_n ? max_n : 1) * sizeof(float)), one = 0;
  if (!buf) return ddp_fail(r->err, sizeof r->err, "rank %d: out of memory for %.0f MB", r->rank, max_mb);
  for (size_t i = 0; i < max_n; i++) buf[i] = (float)(r->rank + 1);
  int rc = allreduce(r, buf, max_n);
  float want = (float)r->world * (float)(r->world + 1) / 2.0f;
  for (size_t i = 0; rc == 0 && i < max_n; i++)
    if (buf[i] != want)
      rc = ddp_fail(r->err, sizeof r->err, "rank %d: all-reduce gave %g at element %zu, expected %g", r->rank,
                    (double)buf[i], i, (double)want);
  FILE *out = NULL;
  if (rc == 0 && r->rank == 0 && o->out && !(out = fopen(o->out, "w")))
    rc = ddp_fail(r->err, sizeof r->err, "%s: cannot write", o->out);
  if (rc == 0 && r->rank == 0)
    printf("all-reduce float32, %d CPU ranks (%s, reference executor's rank-order sum)\n%10s %12s %12s %12s\n",
           r->world, r->how, "MB", "ms", "algbw GB/s", "busbw GB/s");
  for (int s = 0; rc == 0 && s < o->nsizes; s++) {
    size_t n = (size_t)(o->sizes_mb[s] * 1048576.0 / 4.0);
    int iters = o->iters > 0 ? o->iters : (o->sizes_mb[s] >= 100 ? 3 : 10);
    for (int w = 0; rc == 0 && w < 2; w++) rc = allreduce(r, buf, n);
    if (rc == 0) rc = allreduce(r, &one, 1);
    double t0 = ddp_now_s();
    for (int it = 0; rc == 0 && it < iters; it++) rc = allreduce(r, buf, n);
    if (rc == 0) rc = allreduce(r, &one, 1);
    double t = (ddp_now_s() - t0) / iters, bytes = (double)n * 4.0;
    double alg = bytes / t / 1e9, bus = alg * 2.0 * (r->world - 1) / r->world;
    if (rc == 0 && r->rank == 0) {
      printf("%10.1f %12.4f %12.2f %12.2f\n", o->sizes_mb[s], t * 1e3, alg, bus);
      fflush(stdout);
      if (out)
        fprintf(out, "{\"kind\": \"allreduce\", \"impl\": \"%s\", \"device\": \"cpu\", \"world\": %d, \"mb\": %g, "
                     "\"ms\": %.5f, \"algbw_GBs\": %.3f, \"busbw_GBs\": %.3f}\n",
                r->impl, r->world, o->sizes_mb[s], t * 1e3, alg, bus);
    }
  }
  if (out) fclose(out);
  free(buf);
  return rc;
}

static void *bench_thread(void *arg) {
  cpu_rank *r = arg;
  r->rc = bench(r);
  if (r->rc) ddp_ref_comm_abort(r->comm, r->rank);
  return NULL;
}

static int bench_threads(const bench_opts *o, int world) {
  ddp_ref_comm *comm = ddp_ref_comm_new(world);
  cpu_rank *rs = ddp_xcalloc((size_t)world, sizeof *rs);
  pthread_t *th = ddp_xcalloc((size_t)world, sizeof *th);
  for (int r = 0; r < world; r++) {
    rs[r] = (cpu_rank){.o = o, .comm = comm, .rank = r, .world = world, .impl = "ddpc-ref-threads",
                       .how = "threads of one process"};
    if (pthread_create(&th[r], NULL, bench_thread, &rs[r])) {
      fprintf(stderr, "ddprun --bench allreduce: cannot start thread %d\n", r);
      exit(1);
    }
  }
  for (int r = 0; r < world; r++) pthread_join(th[r], NULL);
  int rc = 0;
  for (int r = 0; r < world && !rc; r++)
    if (rs[r].rc && !strstr(rs[r].err, "collective aborted")) {
      fprintf(stderr, "ddprun --bench allreduce: %s\n", rs[r].err);
      rc = 1;
    }
  free(rs);
  free(th);
  ddp_ref_comm_free(comm);
  return rc;
}

int ddprun_bench_allreduce_cpu(const bench_opts *o, int nproc) {
  char err[1024];
  if (nproc > 0) {
    if (nproc < 2) {
      fprintf(stderr, "ddprun --bench allreduce --device ref: --nproc must be at least 2\n");
      return 1;
    }
    return bench_threads(o, nproc);
  }
  ddp_identity id;
  if (ddp_launch_identity(&id, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  if (id.world < 2 || (strcmp(id.source, "slurm") && strcmp(id.source, "openmpi"))) {
    fprintf(stderr,
            "ddprun --bench allreduce --device ref: needs 2 or more ranks: start it with mpirun -n N or srun -n N "
            "(one process per rank), or pass --nproc N (threads of one process); this launch is %d rank%s from "
            "%s\n",
            id.world, id.world == 1 ? "" : "s", id.source);
    return 1;
  }
  ddp_mpi *m = ddp_mpi_open(err, sizeof err);
  if (!m) {
    fprintf(stderr, "ddprun --bench allreduce: rank %d: %s\n", id.rank, err);
    return 1;
  }
  if (ddp_mpi_world(m) != id.world) {
    fprintf(stderr, "ddprun --bench allreduce: rank %d: the launcher says %d ranks, MPI sees %d (srun --mpi=pmix?)\n",
            id.rank, id.world, ddp_mpi_world(m));
    if (ddp_mpi_world(m) > 1) ddp_mpi_abort(m, 1);
    ddp_mpi_close(m);
    return 1;
  }
  cpu_rank r = {.o = o, .comm = ddp_ref_comm_new_mpi(m), .rank = ddp_mpi_rank(m), .world = ddp_mpi_world(m),
                .impl = "ddpc-ref-mpi", .how = "processes over MPI"};
  int rc = bench(&r);
  ddp_ref_comm_free(r.comm);
  if (rc) {
    fprintf(stderr, "ddprun --bench allreduce: %s\n", r.err);
    fflush(NULL);
    ddp_mpi_abort(m, 1);
  }
  ddp_mpi_close(m);
  return 0;
}

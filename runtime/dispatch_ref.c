/* runtime/dispatch_ref.c: runs a plan on the reference executor. Where its ranks run:
 *   - launched by mpirun or srun with more than one task (runtime/launch/env.c finds the identity): this
 *     process is ONE rank and the collectives go over MPI (comm_mpi.h); the plan's world must equal the
 *     launch's, else every rank prints one line and exits 1; a failing rank prints its line and ends the
 *     job (MPI_Abort);
 *   - torchrun-style variables with more than one rank: refused (no MPI wiring between such processes);
 *   - otherwise (no launcher, a 1-task launch, or --nproc N): every rank of the plan is a thread of this
 *     process sharing one in-process communicator, and a failing rank aborts the others' collectives.
 *     --nproc N says so once: the reference executor forks no processes.
 *   - a plan whose arenas (summed over the ranks this process runs) exceed the host's MemAvailable is
 *     refused before anything is allocated. */
#include "cli.h"
#include "exec_ref.h"
#include "comm_mpi.h"
#include "clock.h"
#include "err.h"
#include "launch.h"
#include "ref_ops.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const ddp_plan *p;
  ddprun_args *a;
  ddp_ref_comm *comm;
  ddp_data *data;
  int rank;
  int rc;
  char err[1024];
} ref_rank;

static void *rank_thread(void *arg) {
  ref_rank *r = arg;
  uint64_t seed = r->a->has_seed ? r->a->seed : (uint64_t)r->p->meta.seed;
  ddp_exec *x = ddp_exec_ref_new(r->p, r->rank, r->comm, r->data, seed, r->err, sizeof r->err);
  r->rc = x ? ddp_run_rank(x, &r->a->run, r->err, sizeof r->err) : -1;
  if (r->rc) ddp_ref_comm_abort(r->comm, r->rank);
  else ddp_ref_comm_leave(r->comm, r->rank); /* ranks still waiting on this one are a deadlock, not a hang */
  if (x) x->v->destroy(x);
  return NULL;
}

/* MemAvailable of /proc/meminfo in bytes, 0 when unknown. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
}

int ddprun_ref_check_memory(const ddp_plan *p, uint64_t avail, char *err, size_t errcap) {
  if (!avail) avail = mem_available();
  if (!avail) return 0;
  uint64_t need = 0;
  for (int64_t r = 0; r < p->meta.world; r++)
    for (int k = 0; k < ARENA_COUNT; k++)
      if (__builtin_add_overflow(need, p->ranks[r].arena_bytes[k], &need)) need = UINT64_MAX;
  if (need <= avail) return 0;
  return ddp_fail(err, errcap,
                  "the reference executor needs %llu bytes (%.2f GiB) for the arenas of %lld rank%s, the host has "
                  "%llu bytes (%.2f GiB) available (MemAvailable)",
                  (unsigned long long)need, (double)need / (1u << 30), (long long)p->meta.world,
                  p->meta.world == 1 ? "" : "s", (unsigned long long)avail, (double)avail / (1u << 30));
}

/* Every rank of the plan as a thread of this process. */
static int run_threads(const ddp_plan *p, ddprun_args *a) {
  char err[1024];
  if (ddprun_ref_check_memory(p, 0, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s: %s\n", a->plan_path, err);
    return 1;
  }
  uint64_t dseed = a->has_seed ? a->seed : (uint64_t)p->meta.data_seed;
  ddp_data *data = ddp_data_open(p, dseed, err, sizeof err);
  if (!data) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  int W = (int)p->meta.world;
  ddp_ref_comm *comm = ddp_ref_comm_new(W);
  ref_rank *ranks = ddp_xcalloc((size_t)W, sizeof(ref_rank));
  pthread_t *th = ddp_xcalloc((size_t)W, sizeof(pthread_t));
  if (!a->run.device_desc) a->run.device_desc = "cpu reference executor";
  for (int r = 0; r < W; r++) {
    ranks[r] = (ref_rank){.p = p, .a = a, .comm = comm, .data = data, .rank = r};
    pthread_create(&th[r], NULL, rank_thread, &ranks[r]);
  }
  int rc = 0;
  for (int r = 0; r < W; r++) pthread_join(th[r], NULL);
  /* Report the first rank that failed on its own (not the ones aborted because of it). */
  for (int r = 0; r < W && !rc; r++)
    if (ranks[r].rc && !strstr(ranks[r].err, "collective aborted")) {
      fprintf(stderr, "ddprun: rank %d: %s\n", r, ranks[r].err);
      rc = 1;
    }
  for (int r = 0; r < W && !rc; r++)
    if (ranks[r].rc) {
      fprintf(stderr, "ddprun: rank %d: %s\n", r, ranks[r].err);
      rc = 1;
    }
  free(ranks);
  free(th);
  ddp_ref_comm_free(comm);
  ddp_data_close(data);
  return rc;
}

/* The launcher's variable that holds the world size. */
static const char *world_var(const ddp_identity *id) {
  if (!strcmp(id->source, "slurm")) return "SLURM_NTASKS";
  if (!strcmp(id->source, "openmpi")) return "OMPI_COMM_WORLD_SIZE";
  return "WORLD_SIZE";
}

/* What every rank of a launch must run alike: the plan (its file's CRC32 and size, which the reader checked)
 * and the options that shape the run. */
static uint64_t run_fingerprint(const ddp_plan *p, const ddprun_args *a) {
  const int64_t v[] = {p->file_crc, (int64_t)p->file_bytes, a->run.steps, a->run.resume, a->has_seed, (int64_t)a->seed,
                       a->run.ckpt_dir != NULL};
  uint64_t h = 1469598103934665603ULL; /* FNV-1a over the values' bytes */
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    for (int b = 0; b < 8; b++) h = (h ^ (uint8_t)((uint64_t)v[i] >> (8 * b))) * 1099511628211ULL;
  return h;
}

/* Every rank's fingerprint to every rank (a sum of a vector with each rank's in its own slots, as two exact
 * 32-bit halves): ranks started with different plans or options (a stale plan.bin on one node, --steps on
 * one rank) are one line each, instead of a collective that waits for a partner that never comes. */
static int check_same_run(ddp_exec *x, const ddprun_args *a, int rank, int world, char *err, size_t errcap) {
  uint64_t mine = run_fingerprint(x->plan, a);
  double *v = ddp_xcalloc(2 * (size_t)world, sizeof *v);
  v[2 * rank] = (double)(mine >> 32), v[2 * rank + 1] = (double)(mine & 0xffffffffu);
  int rc = ddp_exec_allreduce(x, v, 2 * world, err, errcap);
  for (int r = 0; r < world && rc == 0; r++) {
    uint64_t theirs = ((uint64_t)v[2 * r] << 32) | (uint64_t)v[2 * r + 1];
    if (theirs != mine)
      rc = ddp_fail(err, errcap, "rank %d was started with another plan file or other options (--steps, --resume, "
                    "--seed, --checkpoint-dir) than rank %d: every rank must run the same", r, rank);
  }
  free(v);
  return rc;
}

/* This process is rank id->rank of id->world > 1; the others are processes reached over MPI. */
static int run_process_rank(const ddp_plan *p, ddprun_args *a, const ddp_identity *id) {
  char err[1024];
  ddp_mpi *m = ddp_mpi_open(err, sizeof err);
  if (!m) {
    fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
    return 1;
  }
  if (ddp_mpi_world(m) != id->world || ddp_mpi_rank(m) != id->rank) {
    /* e.g. ddprun started directly in an sbatch script (SLURM_PROCID=0 of SLURM_NTASKS) instead of by srun,
     * or srun --mpi=none: MPI then sees a job of one. */
    fprintf(stderr,
            "ddprun: rank %d: %s=%d (from %s) but MPI sees rank %d of %d: start ddprun with mpirun -n %d or "
            "srun --mpi=pmix -n %d\n",
            id->rank, world_var(id), id->world, id->source, ddp_mpi_rank(m), ddp_mpi_world(m), id->world, id->world);
    if (ddp_mpi_world(m) > 1) ddp_mpi_abort(m, 1);
    ddp_mpi_close(m);
    return 1;
  }
  uint64_t need = 0, avail = mem_available();
  for (int k = 0; k < ARENA_COUNT; k++)
    if (__builtin_add_overflow(need, p->ranks[id->rank].arena_bytes[k], &need)) need = UINT64_MAX;
  if (avail && need > avail) {
    fprintf(stderr, "ddprun: rank %d: the reference executor needs %llu bytes for this rank's arenas, the host has "
            "%llu bytes available (MemAvailable)\n", id->rank, (unsigned long long)need, (unsigned long long)avail);
    ddp_mpi_abort(m, 1);
    ddp_mpi_close(m);
    return 1;
  }
  uint64_t dseed = a->has_seed ? a->seed : (uint64_t)p->meta.data_seed;
  uint64_t seed = a->has_seed ? a->seed : (uint64_t)p->meta.seed;
  ddp_ref_comm *comm = ddp_ref_comm_new_mpi(m);
  ddp_data *data = ddp_data_open(p, dseed, err, sizeof err);
  ddp_exec *x = data ? ddp_exec_ref_new(p, id->rank, comm, data, seed, err, sizeof err) : NULL;
  char desc[160];
  snprintf(desc, sizeof desc, "cpu reference executor (rank %d of %d processes, MPI)", id->rank, id->world);
  ddp_run_opts run = a->run;
  if (!run.device_desc) run.device_desc = desc;
  int rc = x ? check_same_run(x, a, id->rank, id->world, err, sizeof err) : -1;
  if (rc == 0) rc = ddp_run_rank(x, &run, err, sizeof err);
  if (x) x->v->destroy(x);
  if (data) ddp_data_close(data);
  ddp_ref_comm_free(comm);
  if (rc) {
    fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
    fflush(NULL);
    ddp_mpi_abort(m, 1); /* the other ranks would wait in their next collective */
  }
  ddp_mpi_close(m);
  return 0;
}

int ddprun_ref(const ddp_plan *p, ddprun_args *a) {
  char err[1024];
  if (a->nproc) {
    if (a->nproc != p->meta.world) {
      fprintf(stderr, "ddprun: %s: compiled for %lld ranks, launched with --nproc %d\n", a->plan_path,
              (long long)p->meta.world, a->nproc);
      return 1;
    }
    if (a->nproc > 1 && !a->run.quiet)
      fprintf(stderr,
              "ddprun: --device ref: running %d ranks as threads in one process (one process per rank: mpirun -n %d "
              "or srun -n %d)\n",
              a->nproc, a->nproc, a->nproc);
    return run_threads(p, a);
  }
  /* mpirun inside a Slurm job: the ranks inherit the batch script's SLURM_PROCID=0, but they are mpirun's
   * (Open MPI sets OMPI_COMM_WORLD_* only in the processes it starts; srun's direct launch does not). */
  const char *ompi = getenv("OMPI_COMM_WORLD_SIZE");
  if (ompi && *ompi && getenv("SLURM_PROCID")) unsetenv("SLURM_PROCID");
  ddp_identity id;
  if (ddp_launch_identity(&id, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  if (!strcmp(id.source, "none")) return run_threads(p, a);
  if (id.world != p->meta.world) {
    fprintf(stderr, "ddprun: %s: compiled for %lld rank%s, launched with %d (%s=%d, rank %d)%s\n", a->plan_path,
            (long long)p->meta.world, p->meta.world == 1 ? "" : "s", id.world, world_var(&id), id.world, id.rank,
            id.world == 1 ? "; --nproc N runs the plan's N ranks as threads of this process" : "");
    return 1;
  }
  if (id.world == 1) return run_threads(p, a);
  if (strcmp(id.source, "slurm") && strcmp(id.source, "openmpi")) {
    fprintf(stderr,
            "ddprun: rank %d: --device ref with %s=%d from %s-style variables: the reference executor's ranks "
            "meet over MPI, so launch with mpirun -n %d or srun -n %d, or run one process with --nproc %d "
            "(ranks as threads)\n",
            id.rank, world_var(&id), id.world, id.source, id.world, id.world, id.world);
    return 1;
  }
  /* srun without an MPI plugin (--mpi=none) starts the tasks with no process-management interface: the MPI
   * library then aborts inside its init with a page of its own. Said here in one line instead; the sbatch
   * script's own SLURM_NTASKS (no step of tasks) is the same case and is said the same way after MPI's init. */
  static const char *const pmi[] = {"PMIX_RANK", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK"};
  int wired = 0;
  for (size_t i = 0; i < sizeof pmi / sizeof pmi[0]; i++) wired |= getenv(pmi[i]) && *getenv(pmi[i]);
  if (!strcmp(id.source, "slurm") && !wired && ddp_launch_in_slurm_step()) {
    fprintf(stderr, "ddprun: rank %d: SLURM_NTASKS=%d (from slurm) but no MPI wiring (no PMIX_RANK, PMI_RANK, "
            "PMI_FD): start ddprun with srun --mpi=pmix -n %d, or mpirun -n %d\n", id.rank, id.world, id.world,
            id.world);
    return 1;
  }
  return run_process_rank(p, a, &id);
}

double ddprun_ref_estimate_s(const ddp_plan *p, int64_t steps) {
  /* Measure the reference GEMM once on a 128^3 problem (a few ms). */
  static double rate = 0;
  if (rate == 0) {
    int n = 128;
    float *A = ddp_xcalloc((size_t)n * n, sizeof(float)), *B = ddp_xcalloc((size_t)n * n, sizeof(float)),
          *C = ddp_xcalloc((size_t)n * n, sizeof(float));
    for (int i = 0; i < n * n; i++) A[i] = B[i] = (float)(i % 7) * 0.1f;
    ddp_kargs k;
    memset(&k, 0, sizeof k);
    k.p[GEMM_P_A] = A;
    k.p[GEMM_P_B] = B;
    k.p[GEMM_P_C] = k.p[GEMM_P_D] = C;
    k.i[GEMM_I_M] = k.i[GEMM_I_N] = k.i[GEMM_I_K] = n;
    k.i[GEMM_I_LDA] = k.i[GEMM_I_LDB] = k.i[GEMM_I_LDC] = k.i[GEMM_I_LDD] = n;
    k.i[GEMM_I_BATCH] = 1;
    k.f[GEMM_F_ALPHA] = 1;
    uint8_t dt[DDP_MAX_PTRS] = {DT_F32, DT_F32, DT_F32, DT_F32};
    double t0 = ddp_now_s();
    ref_gemm(&k, dt);
    double s = ddp_now_s() - t0;
    rate = 2.0 * n * n * n / (s > 1e-6 ? s : 1e-6);
    free(A);
    free(B);
    free(C);
  }
  /* Every rank is a thread, but the kernels are single-threaded: ranks share the machine's cores. */
  return p->meta.flops_per_step * (double)p->meta.world * (double)steps / rate;
}

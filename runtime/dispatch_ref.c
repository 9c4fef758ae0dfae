/* runtime/dispatch_ref.c: runs a plan on the reference executor, every rank a thread of this process
 * sharing one in-process communicator; a failing rank aborts the others' collectives. A plan whose
 * arenas (summed over the ranks) exceed the host's MemAvailable is refused before anything is allocated. */
#include "cli.h"
#include "exec_ref.h"
#include "clock.h"
#include "err.h"
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

int ddprun_ref(const ddp_plan *p, ddprun_args *a) {
  char err[1024];
  if (a->nproc && a->nproc != p->meta.world) {
    fprintf(stderr, "ddprun: %s: compiled for %lld ranks, launched with --nproc %d\n", a->plan_path,
            (long long)p->meta.world, a->nproc);
    return 1;
  }
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

/* runtime/cuda/exec_cuda.c: the CUDA executor's construction, vtable and teardown (see exec_cuda.h). Load
 * order: probe, device, plan/arch check, streams/events/timers, arenas, cuBLASLt, NCCL, then both rank
 * programs prepared once (exec_cuda_prepare.c). Any failure tears down what exists and returns one line. */
#include "cx.h"
#include "err.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int cx_fail_at(const cx *x, const cx_prog *pg, const cx_op *op, char *err, size_t errcap) {
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", err ? err : "");
  (void)x;
  return cx_fail(err, errcap, "%s instruction %u (%s%s%s%s): %s", pg ? pg->what : "?",
                 op ? op->index : 0u, op ? ddp_opcode_name(op->in->opcode) : "?",
                 op && op->label && *op->label ? " '" : "", op && op->label ? op->label : "",
                 op && op->label && *op->label ? "'" : "", inner);
}

double cx_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cx_sleep_us(unsigned us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

static void cx_destroy(ddp_exec *e);

static int cx_memory_vt(ddp_exec *e, uint64_t *in_use, uint64_t *peak) { return cx_memory(e, in_use, peak); }

static const ddp_exec_vtbl cx_vtbl = {
    .name = "cuda",
    .run = cx_run,
    .sync = cx_sync,
    .read = cx_read,
    .write = cx_write,
    .timers = cx_timers,
    .memory = cx_memory_vt,
    .destroy = cx_destroy,
    .instr_times = cx_instr_times,
};

/* DDP_NCCL_TIMEOUT_S and DDP_CUDA_GRAPH. */
static int read_env(cx *x, char *err, size_t errcap) {
  x->timeout_s = CX_DEFAULT_TIMEOUT_S;
  const char *t = getenv("DDP_NCCL_TIMEOUT_S");
  if (t && *t) {
    char *end = NULL;
    double v = strtod(t, &end);
    if (!end || *end || !(v > 0) || !isfinite(v))
      return cx_fail(err, errcap, "DDP_NCCL_TIMEOUT_S='%s' is not a positive number of seconds", t);
    x->timeout_s = v;
  }
  const char *g = getenv("DDP_CUDA_GRAPH");
  if (g && *g && strcmp(g, "0") && strcmp(g, "1"))
    return cx_fail(err, errcap, "DDP_CUDA_GRAPH='%s' must be 0 or 1", g);
  x->graph_env = g && !strcmp(g, "1");
  const char *pr = getenv("DDP_STREAM_PRIORITY");
  if (pr && *pr && strcmp(pr, "0") && strcmp(pr, "1"))
    return cx_fail(err, errcap, "DDP_STREAM_PRIORITY='%s' must be 0 or 1", pr);
  x->stream_priority = pr && !strcmp(pr, "1");
  return 0;
}

static int streams_events_init(cx *x, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_rank_plan *rp = &p->ranks[x->base.rank];
  x->nstreams = p->nstreams;
  x->streams = calloc(x->nstreams, sizeof *x->streams);
  x->ws = calloc(x->nstreams, sizeof *x->ws);
  x->ws_bytes = calloc(x->nstreams, sizeof *x->ws_bytes);
  x->ws_owned = calloc(x->nstreams, sizeof *x->ws_owned);
  x->events = calloc(rp->nevents ? rp->nevents : 1, sizeof *x->events);
  x->timers = calloc(rp->ntimers ? rp->ntimers : 1, sizeof *x->timers);
  x->modules = calloc(p->nmodules ? p->nmodules : 1, sizeof *x->modules);
  if (!x->streams || !x->ws || !x->ws_bytes || !x->ws_owned || !x->events || !x->timers || !x->modules)
    return cx_fail(err, errcap, "out of host memory for %u streams, %u events, %u timers", x->nstreams,
                   rp->nevents, rp->ntimers);
  /* DDP_STREAM_PRIORITY=1: the compute stream at the device's highest priority and the others at its
   * lowest, so the block scheduler prefers the backward's kernels over NCCL's when both wait (an
   * experiment against the DDP backward's slowdown under overlapped collectives; off by default). */
  int lo = 0, hi = 0;
  if (x->stream_priority) DDP_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  for (uint32_t s = 0; s < x->nstreams; s++) {
    const int prio = s == STREAM_COMPUTE ? hi : lo;
    cudaError_t rc = cudaStreamCreateWithPriority(&x->streams[s], cudaStreamNonBlocking, prio);
    if (rc != cudaSuccess) {
      x->streams[s] = NULL;
      return cx_fail(err, errcap, "%s:%d: cudaStreamCreateWithPriority(stream %u of %u, NonBlocking, %d): %s: %s",
                     __FILE__, __LINE__, s, x->nstreams, prio, cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
  }
  for (uint32_t i = 0; i < rp->nevents; i++) {
    cudaError_t rc = cudaEventCreateWithFlags(&x->events[i], cudaEventDisableTiming);
    if (rc != cudaSuccess)
      return cx_fail(err, errcap, "%s:%d: cudaEventCreateWithFlags(event %u of %u, DisableTiming): %s: %s",
                     __FILE__, __LINE__, i, rp->nevents, cudaGetErrorName(rc), cudaGetErrorString(rc));
    x->nevents = i + 1;
  }
  for (uint32_t i = 0; i < rp->ntimers; i++) {
    cudaError_t rc = cudaEventCreate(&x->timers[i]);
    if (rc != cudaSuccess)
      return cx_fail(err, errcap, "%s:%d: cudaEventCreate(timer %u of %u): %s: %s", __FILE__, __LINE__, i,
                     rp->ntimers, cudaGetErrorName(rc), cudaGetErrorString(rc));
    x->ntimers = i + 1;
  }
  return 0;
}

static int load(cx *x, const void *nccl_id, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_rank_plan *rp = &p->ranks[x->base.rank];
  if (read_env(x, err, errcap) || streams_events_init(x, err, errcap) || cx_arenas_init(x, err, errcap) ||
      cx_gemm_init(x, err, errcap) || cx_comm_init(x, nccl_id, err, errcap) || cx_graph_init(x, err, errcap))
    return -1;
  if (cx_prog_prepare(x, &x->init, &rp->init, "init", err, errcap) ||
      cx_prog_prepare(x, &x->step, &rp->step, "step", err, errcap))
    return -1;
  if (x->gemm_timed && cx_arenas_zero(x, err, errcap)) return -1;
  cx_gemm_tune_free(x);
  if (x->graph_env) cx_graph_plan(x, &x->step);
  /* Surface anything asynchronous from loading (module loads, memsets) here rather than in the first step. */
  DDP_CUDA_TRY(cudaDeviceSynchronize());
  cx_memory_sample(x);
  return 0;
}

ddp_exec *ddp_exec_cuda_new(const ddp_plan *p, int rank, int world, int device, const void *nccl_id,
                            ddp_data *data, uint64_t seed, char *err, size_t errcap) {
  char why[768];
  if (!p) {
    cx_fail(err, errcap, "cuda executor: no plan");
    return NULL;
  }
  if (world < 1 || rank < 0 || rank >= world) {
    cx_fail(err, errcap, "cuda executor: rank %d of a world of %d ranks is not a valid rank", rank, world);
    return NULL;
  }
  if (world > 1 && !nccl_id) {
    cx_fail(err, errcap, "cuda executor: rank %d of %d: no NCCL id (needed when world > 1)", rank, world);
    return NULL;
  }
  /* NVLink multicast can take the host's GPUs out of service: off unless the user set it. */
  if (setenv("NCCL_NVLS_ENABLE", "0", 0) != 0) {
    cx_fail(err, errcap, "cuda executor: setenv(NCCL_NVLS_ENABLE): %s", strerror(errno));
    return NULL;
  }
  int ndev = 0;
  if (ddp_cuda_probe(&ndev, why, sizeof why)) {
    cx_fail(err, errcap, "cuda executor: %s", why);
    return NULL;
  }
  if (device < 0 || device >= ndev) {
    cx_fail(err, errcap, "cuda executor: rank %d: GPU %d does not exist (this machine shows %d GPU%s)", rank,
            device, ndev, ndev == 1 ? "" : "s");
    return NULL;
  }
  cudaError_t crc = cudaSetDevice(device);
  if (crc != cudaSuccess) {
    cx_fail(err, errcap, "cuda executor: rank %d: %s:%d: cudaSetDevice(%d): %s: %s", rank, __FILE__, __LINE__,
            device, cudaGetErrorName(crc), cudaGetErrorString(crc));
    return NULL;
  }
  cx *x = calloc(1, sizeof *x);
  if (!x) {
    cx_fail(err, errcap, "cuda executor: out of host memory");
    return NULL;
  }
  x->device = device;
  x->base = (ddp_exec){.v = &cx_vtbl, .plan = p, .rank = rank, .world = world, .data = data, .seed = seed,
                       .impl = x};
  if (ddp_cuda_device_arch(device, x->arch, sizeof x->arch, x->gpu_name, sizeof x->gpu_name, why, sizeof why) ||
      ddp_plan_check_launch(p, x->arch, world, why, sizeof why) || load(x, nccl_id, why, sizeof why)) {
    cx_fail(err, errcap, "cuda executor: rank %d on GPU %d (%s, %s): %s", rank, device,
            x->gpu_name[0] ? x->gpu_name : "?", x->arch[0] ? x->arch : "?", why);
    cx_destroy(&x->base);
    return NULL;
  }
  return &x->base;
}

static void cx_destroy(ddp_exec *e) {
  if (!e) return;
  cx *x = e->impl;
  char why[512];
  (void)cudaSetDevice(x->device);
  /* Let issued work finish (bounded: a hung collective aborts the communicator) before freeing memory. */
  if (x->streams && !x->comm_aborted) (void)cx_wait_streams(x, "teardown", why, sizeof why);
  /* Programs first: CUDA graphs holding NCCL work keep the communicator busy, so finalizing it before the
   * graphs are destroyed never completes. */
  cx_prog_free(x, &x->init);
  cx_prog_free(x, &x->step);
  cx_trace_free(x);
  cx_comm_fini(x);
  cx_graph_fini(x);
  cx_gemm_tune_free(x);
  cx_gemm_fini(x);
  if (x->modules)
    for (uint32_t m = 0; m < x->base.plan->nmodules; m++) ddp_cuda_module_unload(&x->modules[m]);
  for (uint32_t i = 0; i < x->nevents; i++) (void)cudaEventDestroy(x->events[i]);
  for (uint32_t i = 0; i < x->ntimers; i++) (void)cudaEventDestroy(x->timers[i]);
  if (x->staging) (void)cudaFreeHost(x->staging);
  if (x->staging_done) (void)cudaEventDestroy(x->staging_done);
  if (x->streams)
    for (uint32_t s = 0; s < x->nstreams; s++)
      if (x->streams[s]) (void)cudaStreamDestroy(x->streams[s]);
  cx_arenas_fini(x);
  free(x->streams);
  free(x->ws);
  free(x->ws_bytes);
  free(x->ws_owned);
  free(x->events);
  free(x->timers);
  free(x->modules);
  free(x);
}

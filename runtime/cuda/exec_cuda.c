/* runtime/cuda/exec_cuda.c: the CUDA executor's construction, vtable (run, sync, timers, instr_times; read,
 * write and memory are memory.c's) and teardown (see exec_cuda.h). run replays a prepared program through
 * graph.c or run.c. Load order: probe, device, plan/arch check, streams/events/timers, arenas, cuBLASLt,
 * NCCL, then both rank programs prepared once (prepare.c). Any failure tears down what exists and returns
 * one line. */
#include "cx.h"
#include "green.h"
#include "param.h"
#include "power.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cx_instr_times(ddp_exec *e, double *start, double *end, char *err, size_t errcap) {
  cx *x = e->impl;
  const cx_prog *pg = &x->step;
  if (!x->trace_ev || x->trace_n != pg->n || pg->timer_base < 0)
    return ddp_fail(err, errcap, "cuda executor: no traced step to report");
  for (uint32_t k = 0; k < pg->n; k++) {
    float a = 0, b = 0;
    DDP_CUDA_TRY(cudaEventElapsedTime(&a, x->timers[pg->timer_base], x->trace_ev[2 * k]));
    DDP_CUDA_TRY(cudaEventElapsedTime(&b, x->timers[pg->timer_base], x->trace_ev[2 * k + 1]));
    start[k] = a;
    end[k] = b;
  }
  return 0;
}

static int same_program(const cx_prog *pg, const ddp_program *prog) {
  return pg->src && (pg->src == prog || (pg->src->v == prog->v && pg->src->n == prog->n));
}

/* A program that is neither of the rank's (unusual): prepared, issued, waited for and freed. */
static int run_foreign(cx *x, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  cx_prog tmp;
  int rc = cx_prog_prepare(x, &tmp, prog, "program", err, errcap);
  if (!rc) rc = cx_run_ops(x, &tmp, 0, tmp.n, step, err, errcap);
  if (!rc) rc = cx_wait_streams(x, "a program outside the plan's init/step", err, errcap);
  cx_prog_free(x, &tmp);
  return rc;
}

static int cx_run(ddp_exec *e, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  cx *x = e->impl;
  char why[1024];
  int rc;
  if (x->comm_aborted)
    return ddp_fail(err, errcap, "cuda executor: the NCCL communicator was aborted after an earlier error");
  cudaError_t crc = cudaSetDevice(x->device);
  if (crc != cudaSuccess)
    return ddp_fail(err, errcap, "cuda executor: %s:%d: cudaSetDevice(%d): %s: %s", __FILE__,
                   __LINE__, x->device, cudaGetErrorName(crc), cudaGetErrorString(crc));
  cx_prog *pg = same_program(&x->step, prog) ? &x->step : same_program(&x->init, prog) ? &x->init : NULL;
  if (pg == &x->step && cx_link_load_step(x, why, sizeof why))
    return ddp_fail(err, errcap, "cuda executor: step %lld: %s", (long long)step, why);
  if (!pg)
    rc = run_foreign(x, prog, step, why, sizeof why);
  else if (pg->graph && !x->base.trace)
    rc = cx_graph_run(x, pg, step, why, sizeof why);
  else
    rc = cx_run_ops(x, pg, 0, pg->n, step, why, sizeof why);
  if (rc) return ddp_fail(err, errcap, "cuda executor: step %lld: %s", (long long)step, why);
  if (pg) {
    pg->runs++;
    if (pg->timer_base >= 0) x->last_timed = pg;
  }
  return 0;
}

static int cx_sync(ddp_exec *e, char *err, size_t errcap) {
  cx *x = e->impl;
  char why[1024];
  cudaError_t crc = cudaSetDevice(x->device);
  if (crc != cudaSuccess)
    return ddp_fail(err, errcap, "cuda executor: %s:%d: cudaSetDevice(%d): %s: %s", __FILE__,
                   __LINE__, x->device, cudaGetErrorName(crc), cudaGetErrorString(crc));
  if (cx_wait_streams(x, "sync", why, sizeof why))
    return ddp_fail(err, errcap, "cuda executor: %s", why);
  cx_memory_sample(x);
  return 0;
}

/* Every slot the last timed program records, relative to its first TIMER; other slots 0. */
static int cx_timers(ddp_exec *e, double *ms, char *err, size_t errcap) {
  cx *x = e->impl;
  for (uint32_t i = 0; i < x->ntimers; i++) ms[i] = 0.0;
  const cx_prog *pg = x->last_timed;
  if (!pg || pg->timer_base < 0) return 0;
  for (uint32_t k = 0; k < pg->ntimer_slots; k++) {
    uint32_t s = pg->timer_slots[k];
    float v = 0.0f;
    cudaError_t rc = cudaEventElapsedTime(&v, x->timers[pg->timer_base], x->timers[s]);
    if (rc != cudaSuccess)
      return ddp_fail(err, errcap,
                     "cuda executor: %s:%d: cudaEventElapsedTime(timer %d, timer %u)%s: %s: %s", __FILE__, __LINE__,
                     pg->timer_base, s,
                     rc == cudaErrorNotReady ? " (call sync first)" : "", cudaGetErrorName(rc),
                     cudaGetErrorString(rc));
    ms[s] = (double)v;
  }
  return 0;
}

static void cx_destroy(ddp_exec *e);

static int cx_energy(ddp_exec *e, ddp_energy *out) {
  cx *x = e->impl;
  if (!x->power) return 1;
  if (ddp_power_read(x->power, out) == 0) return 0;
  snprintf(e->power, sizeof e->power, "not measured: NVML stopped answering during the run");
  ddp_power_close(x->power);
  x->power = NULL;
  return 1;
}

static void cx_energy_window(ddp_exec *e, double seconds) {
  cx *x = e->impl;
  if (x->power) ddp_power_window(x->power, seconds);
}

/* The energy counters (power.c): the run line's "power" says which GPU and limit, or why there are none. */
static void power_open(cx *x) {
  char why[160];
  double limit_w = 0;
  if (!x->energy_env) {
    snprintf(x->base.power, sizeof x->base.power, "not measured: DDP_ENERGY=0");
    return;
  }
  x->power = ddp_power_open(x->device, (double)x->energy_period_ms * 1e-3, &limit_w, why, sizeof why);
  if (!x->power) snprintf(x->base.power, sizeof x->base.power, "not measured: %s", why);
  else if (limit_w > 0) snprintf(x->base.power, sizeof x->base.power, "NVML, power limit %.0f W", limit_w);
  else snprintf(x->base.power, sizeof x->base.power, "NVML, power limit unknown");
}

static const ddp_exec_vtbl cx_vtbl = {
    .name = "cuda",
    .run = cx_run,
    .sync = cx_sync,
    .read = cx_read,
    .write = cx_write,
    .timers = cx_timers,
    .memory = cx_memory,
    .destroy = cx_destroy,
    .instr_times = cx_instr_times,
    .allreduce_host = cx_allreduce_host,
    .allreduce_host_start = cx_allreduce_host_start,
    .allreduce_host_finish = cx_allreduce_host_finish,
    .energy_window = cx_energy_window,
    .time_collective = cx_time_collective,
    .time_gemm = cx_time_gemm,
    .energy = cx_energy,
};

/* DDP_NCCL_TIMEOUT_S, DDP_CUDA_GRAPH, DDP_STREAM_PRIORITY, DDP_P2P_COPY, the SM-partition experiments
 * DDP_SIDE_SMS, DDP_SIDE_STREAMS, DDP_SIDE_COMPUTE, DDP_GEMM_SM_TARGET, DDP_NCCL_MEM_ARENAS,
 * DDP_ENERGY, DDP_ENERGY_PERIOD_MS, DDP_PEER_COPY_BATCH, DDP_PDL and DDP_PERSISTENT_BLOCKS (base/param.h); DDP_LINK_LOAD_MB is
 * link_load.c's. */
static int read_env(cx *x, char *err, size_t errcap) {
  int64_t graph, priority, copy, pdl, persistent_blocks;
  if (ddp_param_seconds(PARAM_NCCL_TIMEOUT_S, &x->timeout_s, err, errcap) ||
      ddp_param_int(PARAM_CUDA_GRAPH, &graph, err, errcap) ||
      ddp_param_int(PARAM_STREAM_PRIORITY, &priority, err, errcap) || ddp_param_int(PARAM_P2P_COPY, &copy, err, errcap) ||
      ddp_param_int(PARAM_SIDE_SMS, &x->side_sms, err, errcap) ||
      ddp_param_int(PARAM_SIDE_STREAMS, &x->side_streams, err, errcap) ||
      ddp_param_int(PARAM_SIDE_COMPUTE, &x->side_compute, err, errcap) ||
      ddp_param_int(PARAM_GEMM_SM_TARGET, &x->gemm_sm_target, err, errcap) ||
      ddp_param_int(PARAM_NCCL_MEM_ARENAS, &x->nccl_mem_arenas, err, errcap) ||
      ddp_param_int(PARAM_ENERGY, &x->energy_env, err, errcap) ||
      ddp_param_int(PARAM_ENERGY_PERIOD_MS, &x->energy_period_ms, err, errcap) ||
      ddp_param_int(PARAM_PEER_COPY_BATCH, &x->peer_copy_batch, err, errcap) ||
      ddp_param_int(PARAM_PDL, &pdl, err, errcap) || ddp_param_int(PARAM_PERSISTENT_BLOCKS, &persistent_blocks, err, errcap))
    return -1;
  ddp_cuda_set_grid_overlap(pdl == 1);
  ddp_cuda_set_persistent_blocks((unsigned)persistent_blocks);
  if (!ddp_param_is_set(PARAM_NCCL_MEM_ARENAS)) x->nccl_mem_arenas = -1;
  x->p2p_copy_env = copy == 1;
  x->graph_env = graph == 1;
  x->stream_priority = (int)priority;
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
    return ddp_fail(err, errcap, "out of host memory for %u streams, %u events, %u timers", x->nstreams,
                   rp->nevents, rp->ntimers);
  /* The plan's low_priority_streams (streams = { update_priority = "low" }: the streams that carry only
   * updates) at the device's lowest priority and every other stream at its highest, so the block scheduler
   * gives waiting blocks of the backward and of the collectives the SMs before an update's. Without the
   * mask every stream has the default priority. Experiments against the DDP backward's slowdown under
   * overlapped collectives: DDP_STREAM_PRIORITY=1 puts every stream but the compute stream low, 2 every
   * stream that carries no collective (so NCCL's blocks start as soon as an SM frees). */
  uint64_t low = x->stream_priority == 1 ? ~(uint64_t)1 : (uint64_t)p->meta.low_priority_streams;
  if (x->stream_priority == 2) {
    low = ~(uint64_t)0;
    for (uint32_t k = 0; k < rp->step.n; k++) {
      const ddp_instr *in = &rp->step.v[k];
      const bool coll = ddp_is_group_collective(in->opcode) || in->opcode == I_SEND || in->opcode == I_RECV;
      if (coll && in->stream < 64) low &= ~((uint64_t)1 << in->stream);
    }
  }
  int lo = 0, hi = 0;
  if (low || x->side_sms) DDP_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  /* DDP_SIDE_SMS (experiments): the side streams in an SM partition of their own (green.c) */
  const uint64_t side = x->side_streams ? (uint64_t)x->side_streams : ~(uint64_t)1;
  if (x->side_sms) {
    if (!(x->green = calloc(1, sizeof *x->green))) return ddp_fail(err, errcap, "out of host memory");
    if (ddp_green_open(x->green, x->device, (int)x->side_sms, (int)x->side_compute, err, errcap)) return -1;
    fprintf(stderr, "ddprun: rank %d: DDP_SIDE_SMS: streams mask 0x%llx on %d SMs, %s on the other %d\n", x->base.rank,
            (unsigned long long)(x->nstreams >= 64 ? side : side & (((uint64_t)1 << x->nstreams) - 1)), x->green->sms,
            x->side_compute ? "the rest confined" : "the rest free", x->green->rest_sms);
  }
  for (uint32_t s = 0; s < x->nstreams; s++) {
    const int prio = s < 64 && ((low >> s) & 1) ? lo : hi;
    if (x->green && s < 64 && (((side >> s) & 1) || x->side_compute)) {
      if (ddp_green_stream(x->green, !((side >> s) & 1), prio, &x->streams[s], err, errcap)) return -1;
      continue;
    }
    cudaError_t rc = cudaStreamCreateWithPriority(&x->streams[s], cudaStreamNonBlocking, prio);
    if (rc != cudaSuccess) {
      x->streams[s] = NULL;
      return ddp_fail(err, errcap, "%s:%d: cudaStreamCreateWithPriority(stream %u of %u, NonBlocking, %d): %s: %s",
                     __FILE__, __LINE__, s, x->nstreams, prio, cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
  }
  for (uint32_t i = 0; i < rp->nevents; i++) {
    cudaError_t rc = cudaEventCreateWithFlags(&x->events[i], cudaEventDisableTiming);
    if (rc != cudaSuccess)
      return ddp_fail(err, errcap, "%s:%d: cudaEventCreateWithFlags(event %u of %u, DisableTiming): %s: %s",
                     __FILE__, __LINE__, i, rp->nevents, cudaGetErrorName(rc), cudaGetErrorString(rc));
    x->nevents = i + 1;
  }
  for (uint32_t i = 0; i < rp->ntimers; i++) {
    cudaError_t rc = cudaEventCreate(&x->timers[i]);
    if (rc != cudaSuccess)
      return ddp_fail(err, errcap, "%s:%d: cudaEventCreate(timer %u of %u): %s: %s", __FILE__, __LINE__, i,
                     rp->ntimers, cudaGetErrorName(rc), cudaGetErrorString(rc));
    x->ntimers = i + 1;
  }
  return 0;
}

static int load(cx *x, const void *nccl_id, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_rank_plan *rp = &p->ranks[x->base.rank];
  if (read_env(x, err, errcap) || streams_events_init(x, err, errcap)) return -1;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) x->base.mem_base = (uint64_t)(tot - fr);
  else (void)cudaGetLastError();
  if (cx_arenas_init(x, err, errcap) ||
      cx_gemm_init(x, err, errcap) || cx_comm_init(x, nccl_id, err, errcap) || cx_graph_init(x, err, errcap))
    return -1;
  if (cx_prog_prepare(x, &x->init, &rp->init, "init", err, errcap) ||
      cx_prog_prepare(x, &x->step, &rp->step, "step", err, errcap))
    return -1;
  if (cx_p2p_init(x, err, errcap) || cx_peer_init(x, err, errcap) || cx_link_load_init(x, err, errcap)) return -1;
  const cx_prog *const progs[2] = {&x->init, &x->step}; /* NCCL connects only what goes through it */
  if (cx_comm_connect_p2p(x, progs, x->p2p ? 1 : 2, err, errcap)) return -1;
  if (x->gemm_timed && cx_arenas_zero(x, err, errcap)) return -1;
  cx_gemm_tune_free(x);
  if (x->graph_env) cx_graph_plan(x, &x->step);
  /* Surface anything asynchronous from loading (module loads, memsets) here rather than in the first step. */
  DDP_CUDA_TRY(cudaDeviceSynchronize());
  cx_memory_sample(x);
  power_open(x);
  return 0;
}

ddp_exec *ddp_exec_cuda_new(const ddp_plan *p, int rank, int world, int device, const void *nccl_id,
                            ddp_data *data, uint64_t seed, char *err, size_t errcap) {
  char why[768];
  if (!p) {
    ddp_fail(err, errcap, "cuda executor: no plan");
    return NULL;
  }
  if (world < 1 || rank < 0 || rank >= world) {
    ddp_fail(err, errcap, "cuda executor: rank %d of a world of %d ranks is not a valid rank", rank, world);
    return NULL;
  }
  if (world > 1 && !nccl_id) {
    ddp_fail(err, errcap, "cuda executor: rank %d of %d: no NCCL id (needed when world > 1)", rank, world);
    return NULL;
  }
  /* NVLink multicast can take the host's GPUs out of service: off unless the user set it. */
  if (setenv("NCCL_NVLS_ENABLE", "0", 0) != 0) {
    ddp_fail(err, errcap, "cuda executor: setenv(NCCL_NVLS_ENABLE): %s", strerror(errno));
    return NULL;
  }
  int ndev = 0;
  if (ddp_cuda_probe(&ndev, why, sizeof why)) {
    ddp_fail(err, errcap, "cuda executor: %s", why);
    return NULL;
  }
  if (device < 0 || device >= ndev) {
    ddp_fail(err, errcap, "cuda executor: GPU %d does not exist (this machine shows %d GPU%s)",
            device, ndev, ndev == 1 ? "" : "s");
    return NULL;
  }
  cudaError_t crc = cudaSetDevice(device);
  if (crc != cudaSuccess) {
    ddp_fail(err, errcap, "cuda executor: %s:%d: cudaSetDevice(%d): %s: %s", __FILE__, __LINE__,
            device, cudaGetErrorName(crc), cudaGetErrorString(crc));
    return NULL;
  }
  cx *x = calloc(1, sizeof *x);
  if (!x) {
    ddp_fail(err, errcap, "cuda executor: out of host memory");
    return NULL;
  }
  x->device = device;
  x->base = (ddp_exec){.v = &cx_vtbl, .plan = p, .rank = rank, .world = world, .data = data, .seed = seed,
                       .impl = x};
  if (ddp_cuda_device_arch(device, x->arch, sizeof x->arch, x->gpu_name, sizeof x->gpu_name, why, sizeof why) ||
      ddp_plan_check_launch(p, x->arch, world, why, sizeof why) || load(x, nccl_id, why, sizeof why)) {
    ddp_fail(err, errcap, "cuda executor: on GPU %d (%s, %s): %s", device,
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
  cx_p2p_fini(x);
  cx_peer_fini(x);
  cx_link_load_fini(x);
  cx_host_sum_fini(x);
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
  if (x->green) ddp_green_close(x->green);
  free(x->green);
  ddp_power_close(x->power);
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

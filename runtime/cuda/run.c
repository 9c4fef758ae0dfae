/* runtime/cuda/exec_cuda_run.c: the replay. `run` walks the prepared instructions and calls the execution
 * of each opcode through a table built from DDP_OPCODES (a missing execution does not compile); the simple
 * executions (MEMSET, COPY, events, timers, NVTX ranges, kernel launches) live here. Also `sync` and
 * `timers`. Nothing here allocates or waits for the GPU. */
#include "cx.h"
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cx_exec_fn exec_table[I_COUNT] = {
#define CX_EXEC_ENTRY(id, name) [I_##id] = cx_exec_##id,
    DDP_OPCODES(CX_EXEC_ENTRY)
#undef CX_EXEC_ENTRY
};

int cx_exec_KERNEL(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  return ddp_cuda_launch(op->kernel, op->in, &op->args, op->stream, err, errcap);
}

int cx_exec_MEMSET(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  if (op->skip) return 0;
  DDP_CUDA_TRY(cudaMemsetAsync(op->ptr[MEMSET_P_DST], (int)op->in->i[MEMSET_I_VALUE], op->bytes, op->stream));
  return 0;
}

int cx_exec_COPY(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  if (op->skip) return 0;
  DDP_CUDA_TRY(
      cudaMemcpyAsync(op->ptr[COPY_P_DST], op->ptr[COPY_P_SRC], op->bytes, cudaMemcpyDeviceToDevice, op->stream));
  return 0;
}

int cx_exec_EVENT_RECORD(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  DDP_CUDA_TRY(cudaEventRecord(op->event, op->stream));
  return 0;
}

int cx_exec_EVENT_WAIT(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  DDP_CUDA_TRY(cudaStreamWaitEvent(op->stream, op->event, 0));
  return 0;
}

/* NVTX ranges are per host thread; one thread issues everything, so push/pop nest as the plan does. */
int cx_exec_RANGE_PUSH(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)step;
  (void)err;
  (void)errcap;
  nvtxRangePushA(op->label);
  return 0;
}

int cx_exec_RANGE_POP(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)x;
  (void)op;
  (void)step;
  (void)err;
  (void)errcap;
  nvtxRangePop();
  return 0;
}

/* Inside a graph capture the timer must be an event-record node (External), or replays would not record. */
int cx_exec_TIMER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  DDP_CUDA_TRY(cudaEventRecordWithFlags(op->event, op->stream,
                                        x->capturing ? cudaEventRecordExternal : cudaEventRecordDefault));
  return 0;
}

/* --trace: events around every instruction of the step (eager replay only: a traced step is never
 * captured into a graph), so the trace shows each kernel, GEMM and collective on its stream. */
static int trace_events(cx *x, uint32_t n, char *err, size_t errcap) {
  if (x->trace_ev && x->trace_n == n) return 0;
  cx_trace_free(x);
  x->trace_ev = calloc(2 * (size_t)n + 1, sizeof(cudaEvent_t));
  x->trace_n = n;
  for (uint32_t k = 0; k < 2 * n; k++) DDP_CUDA_TRY(cudaEventCreate(&x->trace_ev[k]));
  return 0;
}

void cx_trace_free(cx *x) {
  for (uint32_t k = 0; x->trace_ev && k < 2 * x->trace_n; k++)
    if (x->trace_ev[k]) cudaEventDestroy(x->trace_ev[k]);
  free(x->trace_ev);
  x->trace_ev = NULL;
  x->trace_n = 0;
}

int cx_run_ops(cx *x, const cx_prog *pg, uint32_t begin, uint32_t end, int64_t step, char *err, size_t errcap) {
  int tracing = x->base.trace && pg == &x->step && !x->capturing;
  if (tracing && trace_events(x, pg->n, err, errcap)) return -1;
  for (uint32_t i = begin; i < end; i++) {
    const cx_op *op = &pg->ops[i];
    if (tracing) DDP_CUDA_TRY(cudaEventRecord(x->trace_ev[2 * i], op->stream));
    if (exec_table[op->in->opcode](x, op, step, err, errcap)) return cx_fail_at(x, pg, op, err, errcap);
    if (tracing) DDP_CUDA_TRY(cudaEventRecord(x->trace_ev[2 * i + 1], op->stream));
  }
  return 0;
}

int cx_instr_times(ddp_exec *e, double *start, double *end, char *err, size_t errcap) {
  cx *x = e->impl;
  const cx_prog *pg = &x->step;
  if (!x->trace_ev || x->trace_n != pg->n || pg->timer_base < 0)
    return cx_fail(err, errcap, "cuda executor: rank %d: no traced step to report", x->base.rank);
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

int cx_run(ddp_exec *e, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  cx *x = e->impl;
  char why[1024];
  int rc;
  if (x->comm_aborted)
    return cx_fail(err, errcap, "cuda executor: rank %d: the NCCL communicator was aborted after an earlier error",
                   x->base.rank);
  cudaError_t crc = cudaSetDevice(x->device);
  if (crc != cudaSuccess)
    return cx_fail(err, errcap, "cuda executor: rank %d: %s:%d: cudaSetDevice(%d): %s: %s", x->base.rank, __FILE__,
                   __LINE__, x->device, cudaGetErrorName(crc), cudaGetErrorString(crc));
  cx_prog *pg = same_program(&x->step, prog) ? &x->step : same_program(&x->init, prog) ? &x->init : NULL;
  if (!pg)
    rc = run_foreign(x, prog, step, why, sizeof why);
  else if (pg->graph && !x->base.trace)
    rc = cx_graph_run(x, pg, step, why, sizeof why);
  else
    rc = cx_run_ops(x, pg, 0, pg->n, step, why, sizeof why);
  if (rc) return cx_fail(err, errcap, "cuda executor: rank %d step %lld: %s", x->base.rank, (long long)step, why);
  if (pg) {
    pg->runs++;
    if (pg->timer_base >= 0) x->last_timed = pg;
  }
  return 0;
}

int cx_sync(ddp_exec *e, char *err, size_t errcap) {
  cx *x = e->impl;
  char why[1024];
  cudaError_t crc = cudaSetDevice(x->device);
  if (crc != cudaSuccess)
    return cx_fail(err, errcap, "cuda executor: rank %d: %s:%d: cudaSetDevice(%d): %s: %s", x->base.rank, __FILE__,
                   __LINE__, x->device, cudaGetErrorName(crc), cudaGetErrorString(crc));
  if (cx_wait_streams(x, "sync", why, sizeof why))
    return cx_fail(err, errcap, "cuda executor: rank %d: %s", x->base.rank, why);
  cx_memory_sample(x);
  return 0;
}

/* Every slot the last timed program records, relative to its first TIMER; other slots 0. */
int cx_timers(ddp_exec *e, double *ms, char *err, size_t errcap) {
  cx *x = e->impl;
  for (uint32_t i = 0; i < x->ntimers; i++) ms[i] = 0.0;
  const cx_prog *pg = x->last_timed;
  if (!pg || pg->timer_base < 0) return 0;
  for (uint32_t k = 0; k < pg->ntimer_slots; k++) {
    uint32_t s = pg->timer_slots[k];
    float v = 0.0f;
    cudaError_t rc = cudaEventElapsedTime(&v, x->timers[pg->timer_base], x->timers[s]);
    if (rc != cudaSuccess)
      return cx_fail(err, errcap,
                     "cuda executor: rank %d: %s:%d: cudaEventElapsedTime(timer %d, timer %u)%s: %s: %s",
                     x->base.rank, __FILE__, __LINE__, pg->timer_base, s,
                     rc == cudaErrorNotReady ? " (call sync first)" : "", cudaGetErrorName(rc),
                     cudaGetErrorString(rc));
    ms[s] = (double)v;
  }
  return 0;
}

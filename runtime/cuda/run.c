/* runtime/cuda/run.c: the eager replay. cx_run_ops walks the prepared instructions and calls the execution
 * of each opcode through a table built from DDP_OPCODES (a missing execution does not compile); the simple
 * executions (MEMSET, COPY, events, timers, NVTX ranges, kernel launches) live here. graph.c captures the
 * same replay; exec_cuda.c's vtable entries call both. Nothing here waits for the GPU. */
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
  return ddp_cuda_launch_maps(op->kernel, op->in, &op->args, op->maps, op->stream, err, errcap);
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
  if (!x->trace_ev) return ddp_fail(err, errcap, "out of host memory for %u trace events", 2 * n);
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

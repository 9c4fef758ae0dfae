/* runtime/cuda/graph.c: optional CUDA graph mode for the step program (DDP_CUDA_GRAPH=1).
 *
 * The step is cut into segments at host work (LOAD_BATCH, INIT_TENSOR: their host fill must happen every
 * step, so they always run eagerly between graphs). A segment is captured when it has device work and its
 * plan events are local to it (every wait's latest record is earlier in the same segment and no wait
 * elsewhere depends on a record inside it); other segments run eagerly. The first run of the step is eager
 * (NCCL connects, modules and cuBLASLt warm up); the second captures each capturable segment on stream 0
 * (the other streams fork from and join back to it, so the whole segment is one graph) and launches it;
 * later runs only launch. Around a launch every other stream is joined into stream 0 before and forked
 * from it after, so graph and eager work are ordered exactly as in the eager replay of the program.
 * TIMERs inside a graph are external event-record nodes (run.c), so timing still works; NVTX
 * ranges of a replayed segment are pushed/popped on the host at launch to keep them balanced. */
#include "cx.h"
#include <stdio.h>
#include <stdlib.h>

static int is_host(int opc) { return opc == I_LOAD_BATCH || opc == I_INIT_TENSOR; }
static int is_device_work(int opc) {
  return opc == I_KERNEL || opc == I_GEMM || opc == I_MEMSET || opc == I_COPY || ddp_is_group_collective(opc) ||
         opc == I_SEND || opc == I_RECV;
}

int cx_graph_init(cx *x, char *err, size_t errcap) {
  if (!x->graph_env) return 0;
  x->gjoin = calloc(x->nstreams, sizeof *x->gjoin);
  x->ljoin = calloc(x->nstreams, sizeof *x->ljoin);
  if (!x->gjoin || !x->ljoin) return ddp_fail(err, errcap, "out of host memory");
  DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->gfork, cudaEventDisableTiming));
  DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->lfork, cudaEventDisableTiming));
  for (uint32_t s = 1; s < x->nstreams; s++) {
    DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->gjoin[s], cudaEventDisableTiming));
    DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->ljoin[s], cudaEventDisableTiming));
  }
  return 0;
}

void cx_graph_fini(cx *x) {
  if (x->gfork) (void)cudaEventDestroy(x->gfork);
  if (x->lfork) (void)cudaEventDestroy(x->lfork);
  for (uint32_t s = 1; s < x->nstreams; s++) {
    if (x->gjoin && x->gjoin[s]) (void)cudaEventDestroy(x->gjoin[s]);
    if (x->ljoin && x->ljoin[s]) (void)cudaEventDestroy(x->ljoin[s]);
  }
  free(x->gjoin);
  free(x->ljoin);
  x->gjoin = x->ljoin = NULL;
  x->gfork = x->lfork = NULL;
}

void cx_graph_free(cx_prog *pg) {
  for (uint32_t k = 0; k < pg->nsegs; k++)
    if (pg->segs[k].exec) (void)cudaGraphExecDestroy(pg->segs[k].exec);
  free(pg->segs);
  pg->segs = NULL;
  pg->nsegs = 0;
}

static int64_t event_of(const cx_op *op) {
  int opc = op->in->opcode;
  return opc == I_EVENT_RECORD || opc == I_EVENT_WAIT ? op->in->i[EVENT_I_EVENT] : -1;
}

/* Are the plan events touched in [b, e) local to it? */
static int events_local(const cx_prog *pg, uint32_t b, uint32_t e) {
  for (uint32_t i = b; i < e; i++) {
    int64_t ev = event_of(&pg->ops[i]);
    if (ev < 0) continue;
    if (pg->ops[i].in->opcode == I_EVENT_WAIT) {
      int32_t rec = -1; /* latest record before the wait */
      for (uint32_t j = 0; j < i; j++)
        if (pg->ops[j].in->opcode == I_EVENT_RECORD && event_of(&pg->ops[j]) == ev) rec = (int32_t)j;
      if (rec < (int32_t)b) return 0;
    } else {
      for (uint32_t j = 0; j < pg->n; j++) /* every wait on it: inside, after this record */
        if (pg->ops[j].in->opcode == I_EVENT_WAIT && event_of(&pg->ops[j]) == ev && (j < i || j >= e)) return 0;
    }
  }
  return 1;
}

void cx_graph_plan(cx *x, cx_prog *pg) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < pg->n; i++)
    if (i == 0 || is_host(pg->ops[i].in->opcode) || is_host(pg->ops[i - 1].in->opcode)) n++;
  if (!n) return;
  pg->segs = calloc(n, sizeof *pg->segs);
  if (!pg->segs) return; /* graph mode is optional: stay eager */
  uint32_t captured = 0, graphs = 0;
  for (uint32_t i = 0; i < pg->n; i++) {
    if (i == 0 || is_host(pg->ops[i].in->opcode) || is_host(pg->ops[i - 1].in->opcode))
      pg->segs[pg->nsegs++] = (cx_segment){.begin = i, .end = i + 1};
    else
      pg->segs[pg->nsegs - 1].end = i + 1;
  }
  for (uint32_t k = 0; k < pg->nsegs; k++) {
    cx_segment *s = &pg->segs[k];
    int work = 0;
    for (uint32_t i = s->begin; i < s->end; i++) work |= is_device_work(pg->ops[i].in->opcode);
    s->graphable = work && !is_host(pg->ops[s->begin].in->opcode) && events_local(pg, s->begin, s->end);
    if (s->graphable) captured += s->end - s->begin, graphs++;
  }
  pg->graph = graphs > 0;
  fprintf(stderr,
          "cuda executor: rank %d: DDP_CUDA_GRAPH=1: %s program as %u CUDA graph%s covering %u of %u instructions "
          "(captured on its second run; host work and the rest run eagerly)\n",
          x->base.rank, pg->what, graphs, graphs == 1 ? "" : "s", captured, pg->n);
}

static int capture(cx *x, const cx_prog *pg, cx_segment *seg, int64_t step, char *err, size_t errcap) {
  cudaStream_t s0 = x->streams[0];
  DDP_CUDA_TRY(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  x->capturing = 1;
  int rc = DDP_CUDA_CHECK(cudaEventRecord(x->gfork, s0), err, errcap);
  for (uint32_t s = 1; s < x->nstreams && !rc; s++)
    rc = DDP_CUDA_CHECK(cudaStreamWaitEvent(x->streams[s], x->gfork, 0), err, errcap);
  if (!rc) rc = cx_run_ops(x, pg, seg->begin, seg->end, step, err, errcap);
  for (uint32_t s = 1; s < x->nstreams && !rc; s++) {
    rc = DDP_CUDA_CHECK(cudaEventRecord(x->gjoin[s], x->streams[s]), err, errcap);
    if (!rc) rc = DDP_CUDA_CHECK(cudaStreamWaitEvent(s0, x->gjoin[s], 0), err, errcap);
  }
  x->capturing = 0;
  cudaGraph_t g = NULL;
  cudaError_t erc = cudaStreamEndCapture(s0, &g);
  if (!rc && erc != cudaSuccess) rc = DDP_CUDA_CHECK(erc, err, errcap);
  /* kernel nodes keep the priority of the stream they were captured from (streams_events_init: the plan's
   * low_priority_streams); without the flag a graph runs every node at its launch stream's priority, which
   * cost the XL step its priorities' 2 ms (67.7 against 65.8 ms eager, 2026-11-27) */
  if (!rc) rc = DDP_CUDA_CHECK(cudaGraphInstantiate(&seg->exec, g, cudaGraphInstantiateFlagUseNodePriority), err, errcap);
  if (g) (void)cudaGraphDestroy(g);
  if (rc) {
    char why[1024];
    snprintf(why, sizeof why, "%s", err);
    seg->exec = NULL;
    return ddp_fail(err, errcap, "capturing %s instructions %u..%u into a CUDA graph (DDP_CUDA_GRAPH=1): %s",
                   pg->what, seg->begin, seg->end - 1, why);
  }
  return 0;
}

static int launch(cx *x, const cx_prog *pg, const cx_segment *seg, char *err, size_t errcap) {
  cudaStream_t s0 = x->streams[0];
  for (uint32_t i = seg->begin; i < seg->end; i++) { /* host-only NVTX ranges, in order */
    int opc = pg->ops[i].in->opcode;
    if ((opc == I_RANGE_PUSH && cx_exec_RANGE_PUSH(x, &pg->ops[i], 0, err, errcap)) ||
        (opc == I_RANGE_POP && cx_exec_RANGE_POP(x, &pg->ops[i], 0, err, errcap)))
      return -1;
  }
  for (uint32_t s = 1; s < x->nstreams; s++) {
    DDP_CUDA_TRY(cudaEventRecord(x->ljoin[s], x->streams[s]));
    DDP_CUDA_TRY(cudaStreamWaitEvent(s0, x->ljoin[s], 0));
  }
  DDP_CUDA_TRY(cudaGraphLaunch(seg->exec, s0));
  DDP_CUDA_TRY(cudaEventRecord(x->lfork, s0));
  for (uint32_t s = 1; s < x->nstreams; s++) DDP_CUDA_TRY(cudaStreamWaitEvent(x->streams[s], x->lfork, 0));
  return 0;
}

int cx_graph_run(cx *x, cx_prog *pg, int64_t step, char *err, size_t errcap) {
  if (pg->runs == 0) return cx_run_ops(x, pg, 0, pg->n, step, err, errcap);
  for (uint32_t k = 0; k < pg->nsegs; k++) {
    cx_segment *seg = &pg->segs[k];
    if (!seg->graphable) {
      if (cx_run_ops(x, pg, seg->begin, seg->end, step, err, errcap)) return -1;
      continue;
    }
    if (!seg->exec && capture(x, pg, seg, step, err, errcap)) return -1;
    if (launch(x, pg, seg, err, errcap)) return -1;
  }
  return 0;
}

/* runtime/cuda/host_sum.c: the driver's host sums over the ranks (exec.h allreduce_host and its two halves,
 * allreduce_host_start / _finish) through the world's NCCL communicator. The doubles go up to the device,
 * one ncclAllReduce sums them on stream 0 behind whatever was issued there, and they come back, all through
 * buffers kept for the run (pinned host memory, a device buffer, an event): no allocation, no device-wide
 * synchronisation per sum. Because the sum is only queued, the driver can queue a step's sum behind the
 * next step and collect it after that step (runtime/driver/run.c), so neither the GPU nor the host waits
 * for it. One sum in flight at a time; every rank queues its sums in the same order, like any collective.
 * Compiled but untested here (no GPU in the CPU test suite); the reference executor's synchronous sum is
 * the tested one, and tests/e2e/gpu_ddp.sh runs this one on the GPUs. */
#include "cx.h"
#include <stdlib.h>
#include <string.h>

/* Room for n doubles (the buffers grow only while no sum is in flight). */
static int reserve(cx *x, int n, char *err, size_t errcap) {
  if (n <= x->hsum_cap) return 0;
  cx_host_sum_fini(x);
  const size_t bytes = (size_t)n * sizeof(double);
  DDP_CUDA_TRY(cudaMallocHost((void **)&x->hsum_host, bytes));
  DDP_CUDA_TRY(cudaMalloc((void **)&x->hsum_dev, bytes));
  DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->hsum_done, cudaEventDisableTiming));
  x->hsum_cap = n;
  return 0;
}

int cx_allreduce_host_start(ddp_exec *e, const double *v, int n, char *err, size_t errcap) {
  cx *x = e->impl;
  if (!x->comm || n <= 0) return x->comm_aborted ? ddp_fail(err, errcap, "host sum: the NCCL communicator was aborted") : 0;
  if (x->hsum_pending) return ddp_fail(err, errcap, "host sum: queued while another is in flight");
  if (reserve(x, n, err, errcap)) return -1;
  const size_t bytes = (size_t)n * sizeof(double);
  memcpy(x->hsum_host, v, bytes);
  cudaStream_t s = x->streams[0];
  DDP_CUDA_TRY(cudaMemcpyAsync(x->hsum_dev, x->hsum_host, bytes, cudaMemcpyHostToDevice, s));
  if (cx_nccl_call(x, ncclAllReduce(x->hsum_dev, x->hsum_dev, (size_t)n, ncclFloat64, ncclSum, x->comm, s),
                   "ncclAllReduce (host sum)", err, errcap))
    return -1;
  DDP_CUDA_TRY(cudaMemcpyAsync(x->hsum_host, x->hsum_dev, bytes, cudaMemcpyDeviceToHost, s));
  DDP_CUDA_TRY(cudaEventRecord(x->hsum_done, s));
  x->hsum_pending = n;
  return 0;
}

int cx_allreduce_host_finish(ddp_exec *e, double *v, int n, char *err, size_t errcap) {
  cx *x = e->impl;
  if (!x->comm || n <= 0) return x->comm_aborted ? ddp_fail(err, errcap, "host sum: the NCCL communicator was aborted") : 0;
  if (x->hsum_pending != n)
    return ddp_fail(err, errcap, "host sum: collecting %d values where %d are in flight", n, x->hsum_pending);
  const int rc = cx_wait_event(x, x->hsum_done, "host sum", err, errcap);
  x->hsum_pending = 0;
  if (rc) return -1;
  memcpy(v, x->hsum_host, (size_t)n * sizeof(double));
  return 0;
}

int cx_allreduce_host(ddp_exec *e, double *v, int n, char *err, size_t errcap) {
  return cx_allreduce_host_start(e, v, n, err, errcap) || cx_allreduce_host_finish(e, v, n, err, errcap) ? -1 : 0;
}

int cx_all_agree(cx *x, int ok, int *all, char *err, size_t errcap) {
  double v = ok ? 0 : 1;
  if (cx_allreduce_host(&x->base, &v, 1, err, errcap)) return -1;
  *all = v == 0;
  return 0;
}

void cx_host_sum_fini(cx *x) {
  /* a sum still in flight (a failed run) is waited for by the caller's teardown, or its communicator was
   * aborted, which ends its kernel */
  if (x->hsum_host) (void)cudaFreeHost(x->hsum_host);
  if (x->hsum_dev) (void)cudaFree(x->hsum_dev);
  if (x->hsum_done) (void)cudaEventDestroy(x->hsum_done);
  x->hsum_host = x->hsum_dev = NULL;
  x->hsum_done = NULL;
  x->hsum_cap = x->hsum_pending = 0;
}

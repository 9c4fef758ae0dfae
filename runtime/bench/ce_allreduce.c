/* runtime/bench/ce_allreduce.c: an all-reduce of two GPUs built from copy-engine pulls, for the
 * interference benchmark's "copy" path (ce_allreduce.h): how much less a reduction costs the compute
 * beside it when its data moves on the copy engines and only the sum runs on the SMs. Each rank owns half
 * of the buffer; with k the all-reduce's number (1, 2, ..) and the peer's flags mapped through CUDA IPC:
 *   wait gathered >= k-1 (the peer has read my last sum and rewritten its copy of my half)
 *   pull the peer's copy of my half into tmp (cudaMemcpyAsync from its mapped buffer: a copy engine)
 *   sum = my half + tmp (cublasLtMatrixTransform: the only SM work)
 *   reduced <- k on the peer; wait reduced >= k (the peer's sum is ready)
 *   pull the peer's sum into my copy of its half (copy engine); gathered <- k on the peer
 * Flags are written to the peer by an 8-byte copy of a word this GPU first wrote with a stream memory
 * operation (memops.h). The owner's sum stays in `sum` (an optimizer reading it would take it from there);
 * the traffic per rank is that of NCCL's two-GPU all-reduce: half the buffer in over NVLink twice, half
 * read twice and written once by the sum. */
#include "ce_allreduce.h"
#include "cuda_check.h"
#include "err.h"
#include "memops.h"
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

enum { F_REDUCED, F_GATHERED, F_STAGE_R, F_STAGE_G, F_COUNT };

typedef struct card {
  cudaIpcMemHandle_t buf, sum, flags;
  int32_t ok; /* this rank's local set-up worked */
} card;

struct ddp_ce_ar {
  ddp_memops ops;
  cublasLtHandle_t lt;
  cublasLtMatrixTransformDesc_t td;
  cublasLtMatrixLayout_t layout;
  cudaStream_t s;
  float *buf, *tmp, *sum;
  uint64_t *flags;
  float *peer_buf, *peer_sum;
  uint64_t *peer_flags;
  size_t half;
  int rank;
  uint64_t k;
};

#define LT_TRY(call)                                                                                         \
  do {                                                                                                       \
    cublasStatus_t s_ = (call);                                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                         \
      return ddp_fail(err, errcap, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cublasLtGetStatusString(s_)); \
  } while (0)

/* Every rank's card (ncclAllGather through the device, waited). */
static int gather_cards(ncclComm_t comm, const card *mine, card *all, cudaStream_t s, char *err, size_t errcap) {
  card *d = NULL;
  DDP_CUDA_TRY(cudaMalloc((void **)&d, 3 * sizeof *d));
  int rc = 0;
  cudaError_t ce = cudaMemcpy(d + 2, mine, sizeof *mine, cudaMemcpyHostToDevice);
  ncclResult_t nr = ce == cudaSuccess ? ncclAllGather(d + 2, d, sizeof *mine, ncclInt8, comm, s) : ncclSuccess;
  if (ce == cudaSuccess && nr == ncclSuccess) ce = cudaStreamSynchronize(s);
  if (ce == cudaSuccess && nr == ncclSuccess) ce = cudaMemcpy(all, d, 2 * sizeof *all, cudaMemcpyDeviceToHost);
  if (ce != cudaSuccess) rc = ddp_fail(err, errcap, "%s:%d: exchanging IPC handles: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  else if (nr != ncclSuccess) rc = ddp_fail(err, errcap, "%s:%d: ncclAllGather (IPC handles): %s", __FILE__, __LINE__, ncclGetErrorString(nr));
  (void)cudaFree(d);
  return rc;
}

static int open_handle(const cudaIpcMemHandle_t *h, void **p, const char *what, char *err, size_t errcap) {
  cudaError_t ce = cudaIpcOpenMemHandle(p, *h, cudaIpcMemLazyEnablePeerAccess);
  if (ce != cudaSuccess) {
    *p = NULL;
    (void)cudaGetLastError();
    return ddp_fail(err, errcap, "%s:%d: cudaIpcOpenMemHandle(the peer's %s): %s", __FILE__, __LINE__, what, cudaGetErrorString(ce));
  }
  return 0;
}

/* This rank's own part: memory operations, cuBLASLt, scratch, flags and their IPC handles. */
static int local_setup(ddp_ce_ar *a, int device, card *mine, char *err, size_t errcap) {
  if (ddp_memops_load(&a->ops, device, err, errcap)) return -1;
  LT_TRY(cublasLtCreate(&a->lt));
  LT_TRY(cublasLtMatrixTransformDescCreate(&a->td, CUDA_R_32F));
  LT_TRY(cublasLtMatrixLayoutCreate(&a->layout, CUDA_R_32F, a->half, 1, (int64_t)a->half));
  DDP_CUDA_TRY(cudaMalloc((void **)&a->tmp, a->half * sizeof(float)));
  DDP_CUDA_TRY(cudaMalloc((void **)&a->sum, a->half * sizeof(float)));
  DDP_CUDA_TRY(cudaMalloc((void **)&a->flags, F_COUNT * sizeof(uint64_t)));
  DDP_CUDA_TRY(cudaMemset(a->flags, 0, F_COUNT * sizeof(uint64_t)));
  DDP_CUDA_TRY(cudaMemset(a->tmp, 0, a->half * sizeof(float)));
  DDP_CUDA_TRY(cudaIpcGetMemHandle(&mine->buf, a->buf));
  DDP_CUDA_TRY(cudaIpcGetMemHandle(&mine->sum, a->sum));
  DDP_CUDA_TRY(cudaIpcGetMemHandle(&mine->flags, a->flags));
  return 0;
}

/* Both ranks together, whatever fails where: the cards, then the peer's mappings, then whether both
 * mapped (a second exchange), so neither rank starts all-reduces the other cannot answer. */
static int setup(ddp_ce_ar *a, ncclComm_t comm, int device, char *err, size_t errcap) {
  card mine, all[2];
  memset(&mine, 0, sizeof mine);
  char why[512] = "";
  mine.ok = local_setup(a, device, &mine, why, sizeof why) == 0;
  if (gather_cards(comm, &mine, all, a->s, err, errcap)) return -1;
  const card *peer = &all[1 - a->rank];
  if (!mine.ok) return ddp_fail(err, errcap, "%s", why);
  if (!peer->ok) return ddp_fail(err, errcap, "the peer could not set up its side");
  mine.ok = open_handle(&peer->buf, (void **)&a->peer_buf, "buffer", why, sizeof why) == 0 &&
            open_handle(&peer->sum, (void **)&a->peer_sum, "sum", why, sizeof why) == 0 &&
            open_handle(&peer->flags, (void **)&a->peer_flags, "flags", why, sizeof why) == 0;
  if (gather_cards(comm, &mine, all, a->s, err, errcap)) return -1;
  if (!mine.ok) return ddp_fail(err, errcap, "%s", why);
  if (!all[1 - a->rank].ok) return ddp_fail(err, errcap, "the peer could not map this rank's buffers");
  DDP_CUDA_TRY(cudaDeviceSynchronize());
  return 0;
}

int ddp_ce_ar_open(ddp_ce_ar **out, ncclComm_t comm, int rank, int world, int device, float *buf, size_t n,
                   cudaStream_t s, char *err, size_t errcap) {
  *out = NULL;
  if (world != 2) return ddp_fail(err, errcap, "the copy-engine all-reduce is written for 2 GPUs, not %d", world);
  if (n < 2 || n % 2) return ddp_fail(err, errcap, "the copy-engine all-reduce needs an even element count, not %zu", n);
  ddp_ce_ar *a = calloc(1, sizeof *a);
  if (!a) return ddp_fail(err, errcap, "out of host memory");
  a->rank = rank, a->buf = buf, a->half = n / 2, a->s = s;
  if (setup(a, comm, device, err, errcap)) {
    ddp_ce_ar_close(a);
    return -1;
  }
  *out = a;
  return 0;
}

/* flag f on the peer <- value, through this GPU's staging word */
static int signal_peer(ddp_ce_ar *a, int f, int stage, uint64_t value, char *err, size_t errcap) {
  if (ddp_memops_write(&a->ops, a->s, a->flags + stage, value, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaMemcpyAsync(a->peer_flags + f, a->flags + stage, sizeof(uint64_t), cudaMemcpyDeviceToDevice, a->s));
  return 0;
}

int ddp_ce_ar_run(ddp_ce_ar *a, char *err, size_t errcap) {
  const uint64_t k = ++a->k;
  const size_t mine = (size_t)a->rank * a->half, theirs = (size_t)(1 - a->rank) * a->half;
  const size_t bytes = a->half * sizeof(float);
  const float one = 1.0f;
  if (k > 1 && ddp_memops_wait(&a->ops, a->s, a->flags + F_GATHERED, k - 1, 1, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaMemcpyAsync(a->tmp, a->peer_buf + mine, bytes, cudaMemcpyDeviceToDevice, a->s));
  LT_TRY(cublasLtMatrixTransform(a->lt, a->td, &one, a->buf + mine, a->layout, &one, a->tmp, a->layout, a->sum,
                                 a->layout, a->s));
  if (signal_peer(a, F_REDUCED, F_STAGE_R, k, err, errcap) ||
      ddp_memops_wait(&a->ops, a->s, a->flags + F_REDUCED, k, 1, err, errcap))
    return -1;
  DDP_CUDA_TRY(cudaMemcpyAsync(a->buf + theirs, a->peer_sum, bytes, cudaMemcpyDeviceToDevice, a->s));
  return signal_peer(a, F_GATHERED, F_STAGE_G, k, err, errcap);
}

void ddp_ce_ar_close(ddp_ce_ar *a) {
  if (!a) return;
  char why[256];
  if (a->k > 0 && a->peer_flags) /* the peer has pulled my last sum (and, before that, my half) */
    (void)ddp_memops_wait(&a->ops, a->s, a->flags + F_GATHERED, a->k, 1, why, sizeof why);
  (void)cudaDeviceSynchronize();
  if (a->peer_buf) (void)cudaIpcCloseMemHandle(a->peer_buf);
  if (a->peer_sum) (void)cudaIpcCloseMemHandle(a->peer_sum);
  if (a->peer_flags) (void)cudaIpcCloseMemHandle(a->peer_flags);
  (void)cudaFree(a->tmp), (void)cudaFree(a->sum), (void)cudaFree(a->flags);
  if (a->layout) (void)cublasLtMatrixLayoutDestroy(a->layout);
  if (a->td) (void)cublasLtMatrixTransformDescDestroy(a->td);
  if (a->lt) (void)cublasLtDestroy(a->lt);
  free(a);
}

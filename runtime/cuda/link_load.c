/* runtime/cuda/link_load.c: DDP_LINK_LOAD_MB, an experiment: a synthetic NVLink load beside the plan's step,
 * issued by this process. With n > 0 every step first queues n MiB of copy-engine copies that pull from the
 * next visible GPU ((device + 1) % count) into this one, on a stream of their own at the lowest priority,
 * with no dependence on the step in either direction. It answers what a data-parallel step's collective
 * bytes cost the compute when nothing waits for them: run the one-GPU plan on GPU 0 with
 * CUDA_VISIBLE_DEVICES=0,1 and on GPU 1 with CUDA_VISIBLE_DEVICES=1,0 at once, with the MiB a rank of the
 * data-parallel plan receives per step (tests/bench/device_link_floor.sh).
 *
 * Where the source lives matters, because each GPU here runs another process's step:
 * - DDP_LINK_LOAD_DIR set (the measurement): every process exports one chunk of its own GPU's memory by CUDA
 *   IPC through a file in that folder (link_load.<PCI bus id>.handle) and maps the other process's chunk, as
 *   a data-parallel rank maps its peers' buffers (cudaIpcMemLazyEnablePeerAccess), and copies with
 *   cudaMemcpyAsync on its own GPU's stream. Use a fresh folder per run: a handle left by an earlier process
 *   fails to open. Before freeing its chunk at the end each process waits (60 s at most) for the other's
 *   .done file, so nobody reads freed memory.
 * - unset: the chunk is allocated on the peer GPU by this process (a context there), and the copies are
 *   cudaMemcpyPeerAsync. On 2 x H200 both ways cost the step alike: a 1 MiB load 1.0-1.7%, 4 GB 2.7-3.3%, 8 GB
 *   4.0-5.2% (docs/PERFORMANCE.md, *What the bytes alone cost*); what the 1 MiB load costs is not isolated.
 * A load from another process altogether (tests/bench/link_load.py) makes the driver time-slice two contexts
 * on each GPU and costs the step far more than the bytes (19% for 4 GB and for 8 GB alike).
 *
 * DDP_LINK_LOAD_MODE, controls that split what a load costs: 1 sets everything up (the source, its mapping, the
 * stream) and copies nothing; 2 copies within this GPU (a second chunk here as the source) instead.
 *
 * The chunk (at most 256 MiB, every copy of a step reuses it) holds pseudo-random bytes, so the links carry
 * varied data. A step whose previous load has not finished issues none (counted): the load never queues up
 * behind itself. cx_link_load_fini prints what was issued. */
#include "clock.h"
#include "cx.h"
#include "param.h"
#include "rng.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINK_CHUNK_MAX ((size_t)256 << 20)
#define LINK_WAIT_S 60

struct cx_link_load {
  int64_t mb;           /* per step */
  int peer;             /* the CUDA device pulled from */
  size_t chunk;         /* bytes per copy */
  int64_t copies;       /* per step: mb MiB in copies of chunk (the last one shorter) */
  void *src, *dst;      /* src: on the peer (allocated here, or the other process's mapped); dst: here */
  void *exported;       /* DDP_LINK_LOAD_DIR: this GPU's chunk, mapped by the other process */
  const char *dir;      /* DDP_LINK_LOAD_DIR, NULL when unset */
  char own_bus[32], peer_bus[32];
  cudaStream_t stream;  /* lowest priority, non-blocking */
  cudaEvent_t done;     /* recorded after each step's copies */
  int64_t issued, skipped;
  int64_t mode;         /* DDP_LINK_LOAD_MODE: 0 pull, 1 nothing copied, 2 within this GPU */
  void *local;          /* mode 2: the source chunk on this GPU */
};

static int fill_random(void *dev, size_t bytes, char *err, size_t errcap) {
  uint64_t *h = malloc(bytes);
  if (!h) return ddp_fail(err, errcap, "DDP_LINK_LOAD_MB: out of host memory for %zu bytes", bytes);
  for (size_t i = 0; i < bytes / 8; i++) h[i] = ddp_rng_u64(0, DDP_RNG_STREAM_LINK_LOAD, i);
  cudaError_t rc = cudaMemcpy(dev, h, bytes, cudaMemcpyHostToDevice);
  free(h);
  if (rc != cudaSuccess)
    return ddp_fail(err, errcap, "%s:%d: cudaMemcpy(DDP_LINK_LOAD_MB source, %zu bytes): %s: %s", __FILE__, __LINE__,
                   bytes, cudaGetErrorName(rc), cudaGetErrorString(rc));
  return 0;
}

static void path_of(const struct cx_link_load *l, const char *bus, const char *ext, char *out, size_t cap) {
  snprintf(out, cap, "%s/link_load.%s.%s", l->dir, bus, ext);
}

/* Waits up to LINK_WAIT_S for PATH to exist; 0 when it does. */
static int wait_for(const char *path) {
  for (int k = 0; k < LINK_WAIT_S * 100; k++) {
    if (access(path, F_OK) == 0) return 0;
    ddp_sleep_s(0.01);
  }
  return -1;
}

/* DDP_LINK_LOAD_DIR: this GPU's chunk exported, the other process's mapped as the source. */
static int map_other(cx *x, struct cx_link_load *l, char *err, size_t errcap) {
  DDP_CUDA_TRY(cudaDeviceGetPCIBusId(l->own_bus, sizeof l->own_bus, x->device));
  DDP_CUDA_TRY(cudaDeviceGetPCIBusId(l->peer_bus, sizeof l->peer_bus, l->peer));
  DDP_CUDA_TRY(cudaMalloc(&l->exported, l->chunk));
  if (fill_random(l->exported, l->chunk, err, errcap)) return -1;
  cudaIpcMemHandle_t h;
  DDP_CUDA_TRY(cudaIpcGetMemHandle(&h, l->exported));
  char tmp[4096], path[4096];
  path_of(l, l->own_bus, "handle.tmp", tmp, sizeof tmp);
  path_of(l, l->own_bus, "handle", path, sizeof path);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(&h, sizeof h, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0)
    return ddp_fail(err, errcap, "DDP_LINK_LOAD_DIR: cannot write %s: %s", path, strerror(errno));
  path_of(l, l->peer_bus, "handle", path, sizeof path);
  if (wait_for(path))
    return ddp_fail(err, errcap, "DDP_LINK_LOAD_DIR: no %s after %d s (start the process on GPU %s too)", path,
                   LINK_WAIT_S, l->peer_bus);
  f = fopen(path, "rb");
  size_t got = f ? fread(&h, sizeof h, 1, f) : 0;
  if (f) fclose(f);
  if (got != 1) return ddp_fail(err, errcap, "DDP_LINK_LOAD_DIR: %s is not a CUDA IPC handle", path);
  char why[512];
  if (!(l->src = cx_ipc_open(h, -1, "DDP_LINK_LOAD_MB chunk", why, sizeof why)))
    return ddp_fail(err, errcap, "DDP_LINK_LOAD_DIR: the chunk of GPU %s: %s", l->peer_bus, why);
  return 0;
}

/* Unset DDP_LINK_LOAD_DIR: the source allocated on the peer GPU by this process. */
static int alloc_on_peer(cx *x, struct cx_link_load *l, char *err, size_t errcap) {
  int can = 0;
  DDP_CUDA_TRY(cudaDeviceCanAccessPeer(&can, x->device, l->peer));
  if (!can)
    return ddp_fail(err, errcap, "DDP_LINK_LOAD_MB: GPU %d has no peer access to GPU %d (visible device numbers)",
                   x->device, l->peer);
  cudaError_t prc = cudaDeviceEnablePeerAccess(l->peer, 0);
  if (prc == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
  else if (prc != cudaSuccess)
    return ddp_fail(err, errcap, "%s:%d: cudaDeviceEnablePeerAccess(%d): %s: %s", __FILE__, __LINE__, l->peer,
                   cudaGetErrorName(prc), cudaGetErrorString(prc));
  DDP_CUDA_TRY(cudaSetDevice(l->peer));
  cudaError_t arc = cudaMalloc(&l->src, l->chunk);
  const int frc = arc == cudaSuccess ? fill_random(l->src, l->chunk, err, errcap) : 0;
  DDP_CUDA_TRY(cudaSetDevice(x->device));
  if (arc != cudaSuccess) {
    l->src = NULL;
    return ddp_fail(err, errcap, "%s:%d: cudaMalloc(%zu bytes on GPU %d for DDP_LINK_LOAD_MB): %s: %s", __FILE__,
                   __LINE__, l->chunk, l->peer, cudaGetErrorName(arc), cudaGetErrorString(arc));
  }
  return frc;
}

int cx_link_load_init(cx *x, char *err, size_t errcap) {
  int64_t mb = 0;
  if (ddp_param_int(PARAM_LINK_LOAD_MB, &mb, err, errcap)) return -1;
  if (mb == 0) return 0;
  int ndev = 0;
  DDP_CUDA_TRY(cudaGetDeviceCount(&ndev));
  if (ndev < 2)
    return ddp_fail(err, errcap, "DDP_LINK_LOAD_MB=%lld needs a second visible GPU to pull from (%d visible)",
                   (long long)mb, ndev);
  struct cx_link_load *l = calloc(1, sizeof *l);
  if (!l) return ddp_fail(err, errcap, "DDP_LINK_LOAD_MB: out of host memory");
  x->link = l;
  l->mb = mb;
  l->peer = (x->device + 1) % ndev;
  l->dir = ddp_param_path(PARAM_LINK_LOAD_DIR);
  if (ddp_param_int(PARAM_LINK_LOAD_MODE, &l->mode, err, errcap)) return -1;
  const size_t total = (size_t)mb << 20;
  l->chunk = total < LINK_CHUNK_MAX ? total : LINK_CHUNK_MAX;
  l->copies = (int64_t)((total + l->chunk - 1) / l->chunk);
  if (l->dir ? map_other(x, l, err, errcap) : alloc_on_peer(x, l, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaMalloc(&l->dst, l->chunk));
  if (l->mode == 2) {
    DDP_CUDA_TRY(cudaMalloc(&l->local, l->chunk));
    if (fill_random(l->local, l->chunk, err, errcap)) return -1;
  }
  int lo = 0, hi = 0;
  DDP_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  DDP_CUDA_TRY(cudaStreamCreateWithPriority(&l->stream, cudaStreamNonBlocking, lo));
  DDP_CUDA_TRY(cudaEventCreateWithFlags(&l->done, cudaEventDisableTiming));
  const char *src = l->dir ? "the other process's memory, by CUDA IPC" : "allocated on that GPU by this process";
  if (l->mode == 2)
    fprintf(stderr, "ddprun: rank %d: DDP_LINK_LOAD_MB=%lld, DDP_LINK_LOAD_MODE=2: each step copies %lld MiB within "
            "GPU %d (visible numbers) on a low-priority stream of its own, none from GPU %d\n", x->base.rank,
            (long long)mb, (long long)mb, x->device, l->peer);
  else
    fprintf(stderr, "ddprun: rank %d: DDP_LINK_LOAD_MB=%lld: each step %s %lld MiB from GPU %d into GPU %d (visible "
            "numbers; %lld copies of up to %zu MiB on a low-priority stream of their own; the source %s)\n",
            x->base.rank, (long long)mb, l->mode == 1 ? "would pull (DDP_LINK_LOAD_MODE=1: copies nothing)" : "pulls",
            (long long)mb, l->peer, x->device, (long long)l->copies, l->chunk >> 20, src);
  return 0;
}

int cx_link_load_step(cx *x, char *err, size_t errcap) {
  struct cx_link_load *l = x->link;
  if (!l) return 0;
  if (l->issued + l->skipped > 0) {
    cudaError_t q = cudaEventQuery(l->done);
    if (q == cudaErrorNotReady) {
      (void)cudaGetLastError();
      l->skipped++;
      return 0;
    }
    DDP_CUDA_TRY(q);
  }
  size_t left = (size_t)l->mb << 20;
  for (int64_t k = 0; l->mode != 1 && k < l->copies; k++) {
    const size_t n = left < l->chunk ? left : l->chunk;
    if (l->mode == 2) DDP_CUDA_TRY(cudaMemcpyAsync(l->dst, l->local, n, cudaMemcpyDeviceToDevice, l->stream));
    else if (l->dir) DDP_CUDA_TRY(cudaMemcpyAsync(l->dst, l->src, n, cudaMemcpyDeviceToDevice, l->stream));
    else DDP_CUDA_TRY(cudaMemcpyPeerAsync(l->dst, x->device, l->src, l->peer, n, l->stream));
    left -= n;
  }
  DDP_CUDA_TRY(cudaEventRecord(l->done, l->stream));
  l->issued++;
  return 0;
}

void cx_link_load_fini(cx *x) {
  struct cx_link_load *l = x->link;
  if (!l) return;
  if (l->stream) (void)cudaStreamSynchronize(l->stream);
  if (l->issued + l->skipped)
    fprintf(stderr, "ddprun: rank %d: DDP_LINK_LOAD_MB: %lld of %lld steps %s %lld MiB each; %lld skipped (the "
            "previous step's load still in flight)\n", x->base.rank, (long long)l->issued,
            (long long)(l->issued + l->skipped), l->mode == 2 ? "copied within this GPU" : "pulled",
            (long long)(l->mode == 1 ? 0 : l->mb), (long long)l->skipped);
  if (l->done) (void)cudaEventDestroy(l->done);
  if (l->stream) (void)cudaStreamDestroy(l->stream);
  if (l->dst) (void)cudaFree(l->dst);
  if (l->local) (void)cudaFree(l->local);
  if (l->dir) {
    if (l->src) (void)cudaIpcCloseMemHandle(l->src);
    char path[4096];
    path_of(l, l->own_bus, "done", path, sizeof path);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    path_of(l, l->peer_bus, "done", path, sizeof path);
    if (l->exported && l->src && wait_for(path))
      fprintf(stderr, "ddprun: rank %d: DDP_LINK_LOAD_DIR: no %s after %d s; this GPU's chunk is left to the "
              "process's exit\n", x->base.rank, path, LINK_WAIT_S);
    else if (l->exported)
      (void)cudaFree(l->exported);
  } else if (l->src && cudaSetDevice(l->peer) == cudaSuccess) {
    (void)cudaFree(l->src);
    (void)cudaSetDevice(x->device);
  }
  free(l);
  x->link = NULL;
}

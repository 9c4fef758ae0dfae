/* runtime/cuda/memory.c: device and host memory of the CUDA executor: one cudaMalloc per arena
 * class (ncclMemAlloc where nccl = { register = "window" } on more than one rank, so the arenas can be
 * NCCL symmetric windows; zeroed, so both executors start from the same bytes), synchronous tensor read/write, memory
 * statistics (cudaMemGetInfo, sampled at load and at every sync), and the two instructions that move host
 * data in: LOAD_BATCH (two pinned buffers per instruction used alternately: the host fills one for step s
 * while the GPU still copies or runs step s-1; before refilling a buffer it waits only for the copy out of
 * it two batches ago) and INIT_TENSOR (ddp_init_fill into one pinned staging buffer sized for the largest
 * initialised tensor, refilled once its previous copy is done). */
#include "cx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cx_arenas_init(cx *x, char *err, size_t errcap) {
  const ddp_rank_plan *rp = &x->base.plan->ranks[x->base.rank];
  for (int a = 0; a < ARENA_COUNT; a++) {
    uint64_t n = rp->arena_bytes[a];
    x->arena_bytes[a] = n;
    if (!n) continue;
    x->arena_alloc[a] = n;
    /* nccl.register = "window": every arena from ncclMemAlloc; DDP_NCCL_MEM_ARENAS (experiments) picks them */
    const int by_nccl = x->nccl_mem_arenas >= 0 ? (int)((x->nccl_mem_arenas >> a) & 1)
                                                : x->base.plan->meta.nccl_register == NCCL_REGISTER_WINDOW;
    if (x->base.world > 1 && by_nccl) {
      const uint64_t whole = ddp_window_bytes(n);
      ncclResult_t nr = ncclMemAlloc(&x->arena[a], (size_t)whole);
      if (nr != ncclSuccess) {
        x->arena[a] = NULL;
        return ddp_fail(err, errcap, "%s:%d: ncclMemAlloc(%s arena, %llu bytes = %.2f GiB; nccl.register = \"window\"): %s",
                        __FILE__, __LINE__, ddp_arena_name(a), (unsigned long long)whole, (double)whole / (1u << 30),
                        ncclGetErrorString(nr));
      }
      x->arena_nccl[a] = 1;
      x->arena_alloc[a] = whole;
      continue;
    }
    cudaError_t rc = cudaMalloc(&x->arena[a], (size_t)n);
    if (rc != cudaSuccess) {
      x->arena[a] = NULL;
      size_t fr = 0, tot = 0;
      (void)cudaGetLastError();
      (void)cudaMemGetInfo(&fr, &tot);
      return ddp_fail(err, errcap, "%s:%d: cudaMalloc(%s arena, %llu bytes = %.2f GiB; GPU has %.2f GiB free of %.2f): %s: %s",
                     __FILE__, __LINE__, ddp_arena_name(a), (unsigned long long)n, (double)n / (1u << 30),
                     (double)fr / (1u << 30), (double)tot / (1u << 30), cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
  }
  return cx_arenas_zero(x, err, errcap);
}

int cx_arenas_zero(cx *x, char *err, size_t errcap) {
  for (int a = 0; a < ARENA_COUNT; a++)
    if (x->arena[a]) DDP_CUDA_TRY(cudaMemset(x->arena[a], 0, (size_t)x->arena_bytes[a]));
  return 0;
}

void cx_arenas_fini(cx *x) {
  for (int a = 0; a < ARENA_COUNT; a++)
    if (x->arena[a] && x->arena_nccl[a]) (void)ncclMemFree(x->arena[a]);
    else if (x->arena[a]) (void)cudaFree(x->arena[a]);
  memset(x->arena, 0, sizeof x->arena);
  memset(x->arena_nccl, 0, sizeof x->arena_nccl);
}

void cx_memory_sample(cx *x) {
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  uint64_t used = (uint64_t)(tot - fr);
  if (used > x->mem_peak) x->mem_peak = used;
}

int cx_memory(ddp_exec *e, uint64_t *in_use, uint64_t *peak) {
  cx *x = e->impl;
  size_t fr = 0, tot = 0;
  (void)cudaSetDevice(x->device);
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  uint64_t used = (uint64_t)(tot - fr);
  if (used > x->mem_peak) x->mem_peak = used;
  if (in_use) *in_use = used;
  if (peak) *peak = x->mem_peak;
  return 0;
}

/* A whole tensor (or view) of this rank: its resolved offset and bytes. */
static int tensor_span(cx *x, int32_t t, void **ptr, size_t *bytes, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  if (t < 0 || (uint32_t)t >= p->ntensors)
    return ddp_fail(err, errcap, "cuda executor: tensor %d does not exist (plan has %u)", t,
                   p->ntensors);
  const ddp_tensor *tt = &p->tensors[t];
  if (tt->offset > x->arena_bytes[tt->arena] || tt->bytes > x->arena_bytes[tt->arena] - tt->offset)
    return ddp_fail(err, errcap,
                    "cuda executor: tensor '%s' (%s offset %llu, %llu bytes) is outside this rank's arena (%llu bytes)",
                    tt->name, ddp_arena_name(tt->arena), (unsigned long long)tt->offset,
                   (unsigned long long)tt->bytes, (unsigned long long)x->arena_bytes[tt->arena]);
  *bytes = (size_t)tt->bytes;
  *ptr = *bytes ? (uint8_t *)x->arena[tt->arena] + tt->offset : NULL;
  return 0;
}

/* Synchronous copy between a tensor and host memory: wait for everything issued, copy on stream 0, wait. */
static int transfer(cx *x, int32_t t, void *host, int to_host, char *err, size_t errcap) {
  void *dev = NULL;
  size_t n = 0;
  char why[1024];
  if (tensor_span(x, t, &dev, &n, err, errcap)) return -1;
  const char *name = x->base.plan->tensors[t].name;
  DDP_CUDA_TRY(cudaSetDevice(x->device));
  if (cx_wait_streams(x, to_host ? "read" : "write", why, sizeof why))
    return ddp_fail(err, errcap, "cuda executor: %s of tensor '%s': %s",
                   to_host ? "read" : "write", name, why);
  if (!n) return 0;
  cudaError_t rc = to_host ? cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, x->streams[0])
                           : cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, x->streams[0]);
  if (rc == cudaSuccess) rc = cudaStreamSynchronize(x->streams[0]);
  if (rc != cudaSuccess)
    return ddp_fail(err, errcap,
                    "cuda executor: %s:%d: cudaMemcpyAsync(%s tensor '%s', %zu bytes) + cudaStreamSynchronize: %s: %s",
                    __FILE__, __LINE__, to_host ? "read" : "write", name, n, cudaGetErrorName(rc),
                   cudaGetErrorString(rc));
  return 0;
}

int cx_read(ddp_exec *e, int32_t tensor, void *dst, char *err, size_t errcap) {
  return transfer(e->impl, tensor, dst, 1, err, errcap);
}

int cx_write(ddp_exec *e, int32_t tensor, const void *src, char *err, size_t errcap) {
  return transfer(e->impl, tensor, (void *)src, 0, err, errcap);
}

/* ---- LOAD_BATCH ---- */

void cx_batch_free(cx_batch *b) {
  for (int k = 0; k < 2; k++) {
    if (b->host[k]) (void)cudaFreeHost(b->host[k]);
    if (b->done[k]) (void)cudaEventDestroy(b->done[k]);
  }
  free(b);
}

/* Bytes the data source writes for part k (the plan's tokens/targets tensor), and bytes of the operand. */
static int batch_part(cx *x, cx_op *op, int k, int32_t meta_tensor, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_bufref *r = &op->in->p[k];
  cx_batch *b = op->batch;
  if (r->tensor < 0) {
    if (k == 0) return ddp_fail(err, errcap, "LOAD_BATCH has no inputs operand (p0)");
    return 0; /* no targets */
  }
  const ddp_tensor *t = &p->tensors[r->tensor];
  uint64_t extent = t->bytes >= r->view ? t->bytes - r->view : 0;
  uint64_t fill = meta_tensor >= 0 && (uint32_t)meta_tensor < p->ntensors ? p->tensors[meta_tensor].bytes : extent;
  if (fill > extent)
    return ddp_fail(err, errcap, "the data source writes %llu bytes of %s ('%s') but operand p%d ('%s') holds %llu",
                   (unsigned long long)fill, k ? "targets" : "inputs", p->tensors[meta_tensor].name, k, t->name,
                   (unsigned long long)extent);
  b->fill_bytes[k] = (size_t)fill;
  b->copy_bytes[k] = (size_t)fill;
  return cx_buffer(x, op->in, k, fill, &op->ptr[k], err, errcap);
}

int cx_batch_prepare(cx *x, cx_op *op, char *err, size_t errcap) {
  if (!x->base.data) return ddp_fail(err, errcap, "LOAD_BATCH needs a data source (the executor was given none)");
  cx_batch *b = calloc(1, sizeof *b);
  if (!b) return ddp_fail(err, errcap, "out of host memory");
  op->batch = b;
  const ddp_meta *m = &x->base.plan->meta;
  if (batch_part(x, op, 0, (int32_t)m->tokens_tensor, err, errcap) ||
      batch_part(x, op, 1, (int32_t)m->targets_tensor, err, errcap))
    return -1;
  size_t total = b->fill_bytes[0] + b->fill_bytes[1];
  for (int k = 0; k < 2; k++) {
    cudaError_t rc = cudaMallocHost((void **)&b->host[k], total ? total : 1);
    if (rc != cudaSuccess) {
      b->host[k] = NULL;
      return ddp_fail(err, errcap, "%s:%d: cudaMallocHost(batch buffer %d, %zu bytes): %s: %s", __FILE__, __LINE__, k,
                     total, cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
    DDP_CUDA_TRY(cudaEventCreateWithFlags(&b->done[k], cudaEventDisableTiming));
  }
  return 0;
}

int cx_exec_LOAD_BATCH(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  cx_batch *b = op->batch;
  const unsigned k = b->next;
  char why[1024];
  b->next ^= 1u;
  if (b->used[k] && cx_wait_event(x, b->done[k], "waiting for the batch copy of two steps ago", err, errcap))
    return -1;
  uint8_t *in = b->host[k], *tg = b->fill_bytes[1] ? b->host[k] + b->fill_bytes[0] : NULL;
  const ddp_instr *li = op->in;
  int part = li->i[LOAD_BATCH_I_PARTS] > 0 ? (int)li->i[LOAD_BATCH_I_PART] : x->base.rank;
  int parts = li->i[LOAD_BATCH_I_PARTS] > 0 ? (int)li->i[LOAD_BATCH_I_PARTS] : x->base.world;
  if (ddp_data_fill(x->base.data, step, part, parts, in, tg, why, sizeof why))
    return ddp_fail(err, errcap, "data: %s", why);
  if (b->copy_bytes[0])
    DDP_CUDA_TRY(
        cudaMemcpyAsync(op->ptr[LOAD_BATCH_P_INPUTS], in, b->copy_bytes[0], cudaMemcpyHostToDevice, op->stream));
  if (b->copy_bytes[1])
    DDP_CUDA_TRY(
        cudaMemcpyAsync(op->ptr[LOAD_BATCH_P_TARGETS], tg, b->copy_bytes[1], cudaMemcpyHostToDevice, op->stream));
  DDP_CUDA_TRY(cudaEventRecord(b->done[k], op->stream));
  b->used[k] = 1;
  return 0;
}

/* ---- INIT_TENSOR ---- */

int cx_init_prepare(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_instr *in = op->in;
  if (in->i[INIT_TENSOR_I_KIND] < 0 || in->i[INIT_TENSOR_I_KIND] >= INIT_COUNT) return ddp_fail(err, errcap, "init kind %lld", (long long)in->i[INIT_TENSOR_I_KIND]);
  if (in->i[INIT_TENSOR_I_ELEMENTS] < 0) return ddp_fail(err, errcap, "negative element count %lld", (long long)in->i[INIT_TENSOR_I_ELEMENTS]);
  size_t es = ddp_dtype_size(in->dt[INIT_TENSOR_P_TENSOR]);
  if (!es) return ddp_fail(err, errcap, "dtype %s cannot be initialised", ddp_dtype_name(in->dt[INIT_TENSOR_P_TENSOR]));
  op->bytes = (size_t)in->i[INIT_TENSOR_I_ELEMENTS] * es;
  if (op->bytes == 0) { /* INIT_NONE fills like the others (zeros, as in the reference executor) */
    op->skip = 1;
    return 0;
  }
  if (cx_buffer(x, in, INIT_TENSOR_P_TENSOR, op->bytes, &op->ptr[INIT_TENSOR_P_TENSOR], err, errcap)) return -1;
  if (op->bytes <= x->staging_bytes) return 0;
  /* Grow the staging buffer to the largest INIT tensor (load time, or a foreign program's preparation). */
  if (x->staging_used && cx_wait_event(x, x->staging_done, "growing the INIT_TENSOR staging buffer", err, errcap))
    return -1;
  if (x->staging) DDP_CUDA_TRY(cudaFreeHost(x->staging));
  x->staging = NULL;
  x->staging_bytes = 0;
  cudaError_t rc = cudaMallocHost((void **)&x->staging, op->bytes);
  if (rc != cudaSuccess) {
    x->staging = NULL;
    return ddp_fail(err, errcap, "%s:%d: cudaMallocHost(INIT_TENSOR staging, %zu bytes): %s: %s", __FILE__, __LINE__,
                   op->bytes, cudaGetErrorName(rc), cudaGetErrorString(rc));
  }
  x->staging_bytes = op->bytes;
  if (!x->staging_done) DDP_CUDA_TRY(cudaEventCreateWithFlags(&x->staging_done, cudaEventDisableTiming));
  return 0;
}

int cx_exec_INIT_TENSOR(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (x->staging_used &&
      cx_wait_event(x, x->staging_done, "waiting for the previous INIT_TENSOR copy", err, errcap))
    return -1;
  ddp_init_fill(op->in, x->base.seed, x->staging);
  DDP_CUDA_TRY(
      cudaMemcpyAsync(op->ptr[INIT_TENSOR_P_TENSOR], x->staging, op->bytes, cudaMemcpyHostToDevice, op->stream));
  DDP_CUDA_TRY(cudaEventRecord(x->staging_done, op->stream));
  x->staging_used = 1;
  return 0;
}

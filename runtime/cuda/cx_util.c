/* runtime/cuda/cx_util.c: the leaf helpers every other cx_* file may call (and which call none of them):
 * the instruction prefix of an error line, the checked device pointer of a buffer operand, and the CUDA IPC
 * pieces of p2p.c and peer.c (a rank's flag buffer and handles; whether a peer's GPU can be mapped from here). */
#include "cx.h"
#include <stdio.h>
#include <unistd.h>

uint64_t cx_host_hash(void) {
  char name[256] = "";
  (void)gethostname(name, sizeof name - 1);
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
  return h;
}

int cx_ipc_mailbox(cx *x, size_t nflags, uint64_t **mailbox, char bus[32], cudaIpcMemHandle_t *mailbox_handle,
                   cudaIpcMemHandle_t arena_handle[ARENA_COUNT], char *why, size_t cap) {
  const size_t mbytes = sizeof(uint64_t) * nflags;
  const uint64_t one = 1;
  cudaError_t rc = cudaDeviceGetPCIBusId(bus, 32, x->device);
  const char *call = "cudaDeviceGetPCIBusId";
  if (rc == cudaSuccess) rc = cudaMalloc((void **)mailbox, mbytes), call = "cudaMalloc(flags)";
  if (rc == cudaSuccess) rc = cudaMemset(*mailbox, 0, mbytes), call = "cudaMemset(flags)";
  if (rc == cudaSuccess) rc = cudaMemcpy(*mailbox, &one, sizeof one, cudaMemcpyHostToDevice), call = "cudaMemcpy(flags)";
  if (rc == cudaSuccess) rc = cudaIpcGetMemHandle(mailbox_handle, *mailbox), call = "cudaIpcGetMemHandle(flags)";
  for (int a = 0; rc == cudaSuccess && a < ARENA_COUNT; a++)
    if (x->arena[a]) rc = cudaIpcGetMemHandle(&arena_handle[a], x->arena[a]), call = "cudaIpcGetMemHandle(arena)";
  if (rc == cudaSuccess) return 0;
  (void)cudaGetLastError();
  snprintf(why, cap, "%s:%d: %s: %s", __FILE__, __LINE__, call, cudaGetErrorString(rc));
  return -1;
}

void *cx_ipc_open(cudaIpcMemHandle_t h, int peer, const char *what, char *why, size_t cap) {
  void *p = NULL;
  cudaError_t rc = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (rc == cudaSuccess) return p;
  (void)cudaGetLastError();
  snprintf(why, cap, "%s:%d: cudaIpcOpenMemHandle(rank %d's %s): %s: %s", __FILE__, __LINE__, peer, what,
           cudaGetErrorName(rc), cudaGetErrorString(rc));
  return NULL;
}

int cx_peer_gpu(const cx *x, int peer, uint64_t peer_host, uint64_t my_host, const char *bus, char *why, size_t cap) {
  if (peer_host != my_host) return snprintf(why, cap, "rank %d is on another host", peer), 0;
  int dev = -1, can = 0;
  if (cudaDeviceGetByPCIBusId(&dev, bus) != cudaSuccess)
    return (void)cudaGetLastError(), snprintf(why, cap, "rank %d's GPU %s is not visible here", peer, bus), 0;
  if (dev == x->device) return snprintf(why, cap, "rank %d shares this GPU", peer), 0;
  if (cudaDeviceCanAccessPeer(&can, x->device, dev) != cudaSuccess || !can)
    return (void)cudaGetLastError(), snprintf(why, cap, "no peer access to rank %d's GPU", peer), 0;
  return 1;
}

int cx_fail_at(const cx *x, const cx_prog *pg, const cx_op *op, char *err, size_t errcap) {
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", err ? err : "");
  (void)x;
  return ddp_fail(err, errcap, "%s instruction %u (%s%s%s%s): %s", pg ? pg->what : "?",
                 op ? op->index : 0u, op ? ddp_opcode_name(op->in->opcode) : "?",
                 op && op->label && *op->label ? " '" : "", op && op->label ? op->label : "",
                 op && op->label && *op->label ? "'" : "", inner);
}

int cx_buffer(const cx *x, const ddp_instr *in, int slot, uint64_t bytes, void **out, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_bufref *r = &in->p[slot];
  *out = NULL;
  if (r->tensor < 0 || (uint32_t)r->tensor >= p->ntensors)
    return ddp_fail(err, errcap, "operand p%d names no tensor (tensor %d)", slot, r->tensor);
  if (r->arena >= ARENA_COUNT) return ddp_fail(err, errcap, "operand p%d is in arena %u", slot, r->arena);
  const ddp_tensor *t = &p->tensors[r->tensor];
  const ddp_tensor *root = &p->tensors[ddp_tensor_root(p, r->tensor)];
  uint64_t begin = root->offset, end = root->offset + root->bytes;
  if (r->offset < begin || r->offset > end || bytes > end - r->offset)
    return ddp_fail(err, errcap,
                   "operand p%d (tensor '%s') needs %llu bytes at %s offset %llu, outside its storage '%s' "
                   "[%llu, %llu)",
                   slot, t->name, (unsigned long long)bytes, ddp_arena_name((int)r->arena),
                   (unsigned long long)r->offset, root->name, (unsigned long long)begin, (unsigned long long)end);
  uint64_t cap = x->arena_bytes[r->arena];
  if (r->offset > cap || bytes > cap - r->offset)
    return ddp_fail(err, errcap, "operand p%d (tensor '%s') at %s offset %llu + %llu bytes exceeds rank %d's arena (%llu bytes)",
                   slot, t->name, ddp_arena_name((int)r->arena), (unsigned long long)r->offset,
                   (unsigned long long)bytes, x->base.rank, (unsigned long long)cap);
  if (!x->arena[r->arena]) return 0; /* empty arena: only zero-byte operands reach here */
  *out = (uint8_t *)x->arena[r->arena] + r->offset;
  return 0;
}

int cx_mean_ms(cudaEvent_t ev[2], int iters, double *ms, char *err, size_t errcap) {
  float t = 0;
  cudaError_t ce = cudaEventElapsedTime(&t, ev[0], ev[1]);
  for (int k = 0; k < 2; k++)
    if (ev[k]) (void)cudaEventDestroy(ev[k]), ev[k] = NULL;
  if (ce != cudaSuccess)
    return ddp_fail(err, errcap, "%s:%d: cudaEventElapsedTime: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  *ms = (double)t / iters;
  return 0;
}

/* runtime/cuda/window_peer.c: where another rank's NCCL symmetric window lies in this process. With
 * nccl = { register = "window" } every arena comes from ncclMemAlloc, which CUDA IPC cannot map; but
 * ncclCommWindowRegister has already mapped every member's window into each member's address space, one
 * after another: member i's at lsaFlatBase + i * stride4G * 4 GiB (NCCL's device-side ncclGetPeerPointer).
 * NCCL 2.28 offers no host call that returns that address, so this reads the leading fields of the window's
 * description, which the handle points at in device memory (struct ncclWindow_vidmem in NCCL 2.28's
 * nccl_device/impl/core__types.h: winHost, lsaFlatBase, lsaRank, worldRank, stride4G). NCCL calls those fields
 * internal, so the reading is checked before use: only NCCL 2.28, and this rank's own address, computed the
 * same way, must be the arena it registered. A layout that moved fails that check with one line. */
#include "window_peer.h"
#include "cuda_check.h"
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The leading fields of NCCL 2.28's struct ncclWindow_vidmem, in their order. */
typedef struct window_head {
  void *win_host;
  char *lsa_flat_base;
  int lsa_rank;
  int world_rank;
  uint32_t stride4g;
} window_head;

int ddp_window_peer_base(ncclWindow_t win, const void *own, int rank, int peer, const char *what, void **base,
                         char *why, size_t cap) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v / 100 != 228)
    return snprintf(why, cap, "the %s arena's window: reading a peer's address needs NCCL 2.28's window layout, "
                    "this is NCCL %d.%d.%d", what, v / 10000, v / 100 % 100, v % 100), -1;
  if (!win) return snprintf(why, cap, "the %s arena has no symmetric window on the world's communicator", what), -1;
  window_head h;
  cudaError_t rc = cudaMemcpy(&h, win, sizeof h, cudaMemcpyDefault);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    return snprintf(why, cap, "%s:%d: cudaMemcpy(the %s arena's window description): %s", __FILE__, __LINE__, what,
                    cudaGetErrorString(rc)), -1;
  }
  const uint64_t stride = (uint64_t)h.stride4g << 32;
  if (!h.lsa_flat_base || !stride || h.world_rank != rank ||
      h.lsa_flat_base + (uint64_t)h.lsa_rank * stride != (const char *)own)
    return snprintf(why, cap, "the %s arena's window: NCCL's window description does not give this rank's own "
                    "address (its layout differs from NCCL 2.28.9's)", what), -1;
  const int i = h.lsa_rank + (peer - h.world_rank);
  if (i < 0) return snprintf(why, cap, "the %s arena's window: rank %d is not in this rank's NVLink team", what, peer), -1;
  *base = h.lsa_flat_base + (uint64_t)i * stride;
  return 0;
}

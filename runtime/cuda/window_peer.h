/* runtime/cuda/window_peer.h: another rank's NCCL symmetric window, mapped in this process (window_peer.c). */
#ifndef DDP_WINDOW_PEER_H
#define DDP_WINDOW_PEER_H
#include <nccl.h>
#include <stddef.h>

/* *base = where rank `peer`'s window of the one this rank registered as `win` over `own` (its arena, named
 * `what` in messages) lies in this process; -1 with one line in why when NCCL's description of the window
 * cannot be read or does not check out. */
int ddp_window_peer_base(ncclWindow_t win, const void *own, int rank, int peer, const char *what, void **base,
                         char *why, size_t cap);
#endif

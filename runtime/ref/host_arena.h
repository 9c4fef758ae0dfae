/* runtime/ref/host_arena.h: the reference executor's arenas in host memory. An arena is its own anonymous
 * mapping with an inaccessible page on each side: pages are zero and cost nothing until touched (a plan's
 * 32 MiB GEMM workspace, which the reference kernels never use, costs no memory and no time), and an access
 * past either end faults at once instead of landing in a neighbour (the reader proves every access in
 * bounds; the guard pages are the second line). */
#ifndef DDP_HOST_ARENA_H
#define DDP_HOST_ARENA_H
#include <stdint.h>

/* A zeroed arena of n bytes (n may be 0); NULL when the host cannot map it. */
uint8_t *ddp_host_arena_new(uint64_t n);
/* Gives back an arena from ddp_host_arena_new (NULL is fine); n is the size it was made with. */
void ddp_host_arena_free(uint8_t *a, uint64_t n);

#endif

/* compiler/memplan/occupancy.h: the activation planner's index of placed blocks. A block occupies byte range
 * [lo, hi) during the instruction interval [first, last] (closed). ddp_occ_lowest answers the lowest offset
 * x >= 0 at which [x, x + need) meets no block whose interval overlaps a given [first, last]: the same
 * answer as scanning every time-overlapping block in address order (the first fit), without visiting each
 * of them. Blocks live in a segment tree over instruction indices: a block is recorded, as one coalesced
 * byte range, in the `cover` set of the O(log T) nodes its interval decomposes into and in the `sub` set of
 * each of their ancestors; a query reads the sub sets of its own decomposition and the cover sets of the
 * nodes it passes through, and hops over the first blocking range of any of these O(log T) sets until
 * none blocks. */
#ifndef DDP_OCCUPANCY_H
#define DDP_OCCUPANCY_H
#include <stdint.h>

typedef struct ddp_occ ddp_occ;

ddp_occ *ddp_occ_new(uint32_t ntimes); /* instruction indices 0 .. ntimes-1; aborts when out of memory */
void ddp_occ_free(ddp_occ *o);
/* Records a block; hi > lo, first <= last < ntimes. */
void ddp_occ_add(ddp_occ *o, int32_t first, int32_t last, uint64_t lo, uint64_t hi);
/* The lowest x >= 0 where [x, x + need) (need > 0) is free during [first, last]. */
uint64_t ddp_occ_lowest(ddp_occ *o, int32_t first, int32_t last, uint64_t need);
#endif

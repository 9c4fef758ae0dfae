/* compiler/layout/ownership.c: which rank updates which range of the flat tensors. Unsharded: every rank
 * owns everything (the ZeRO levels own slices of their groups: shard.c); optimizer sharding: contiguous groups of
 * whole units, balanced by elements. The per-rank optimizer-state size is the largest owned range. */
#include "layout.h"

void ddp_layout_ownership(const ddp_builder *b, ddp_layout *lay) {
  const ddp_schedule *s = b->s;
  lay->own_lo = ddp_xcalloc((size_t)lay->world, sizeof(int64_t));
  lay->own_hi = ddp_xcalloc((size_t)lay->world, sizeof(int64_t));
  if (s->shard == SHARD_OPTIMIZER) {
    /* Contiguous groups of whole units, each closing once it reaches its share of the elements. */
    int64_t total = lay->used, acc = 0;
    int r = 0;
    for (int k = 0; k < lay->norder; k++) {
      int64_t end = k + 1 < lay->norder ? b->units[lay->order[k + 1]].flat_offset : lay->nflat;
      acc += b->units[lay->order[k]].numel;
      if (r < lay->world - 1 && acc * lay->world >= total * (r + 1)) {
        lay->own_hi[r] = end;
        lay->own_lo[++r] = end;
      }
    }
    lay->own_hi[r] = lay->nflat;
    for (r = r + 1; r < lay->world; r++) lay->own_lo[r] = lay->own_hi[r] = lay->nflat;
  } else {
    for (int r = 0; r < lay->world; r++) lay->own_hi[r] = lay->nflat;
  }
  for (int r = 0; r < lay->world; r++)
    if (lay->own_hi[r] - lay->own_lo[r] > lay->state_elems) lay->state_elems = lay->own_hi[r] - lay->own_lo[r];
  if (lay->state_elems == 0) lay->state_elems = DDP_FLAT_ALIGN;
}

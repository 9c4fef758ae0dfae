/* compiler/memplan/memplan.c: see memplan.h. */
#include "err.h"
#include "memplan.h"
#include "access.h"
#include "occupancy.h"
#include <stdlib.h>

static uint64_t align_up(uint64_t v) { return (v + DDP_ALIGN - 1) / DDP_ALIGN * DDP_ALIGN; }

static void note_uses(ddp_plan *p, const ddp_program *prog, bool persistent_marks) {
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      int32_t t = in->p[s].tensor;
      if (t < 0) continue;
      int32_t r = ddp_tensor_root(p, t);
      ddp_tensor *rt = &p->tensors[r];
      if (persistent_marks) {
        rt->flags |= TF_PERSISTENT;
        continue;
      }
      if (rt->first_use < 0 || (int32_t)k < rt->first_use) rt->first_use = (int32_t)k;
      if ((int32_t)k > rt->last_use) rt->last_use = (int32_t)k;
    }
  }
}

static int by_size_desc(const void *a, const void *b, void *ctx) {
  const ddp_plan *p = ctx;
  uint64_t x = p->tensors[*(const int32_t *)a].bytes, y = p->tensors[*(const int32_t *)b].bytes;
  if (x != y) return x > y ? -1 : 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

/* Largest first, each at the lowest offset free during its liveness among those placed before it (the
 * first fit over the time-overlapping blocks, answered by occupancy.h). A tensor the step never uses, or of
 * zero bytes, goes to offset 0 and blocks nothing (a zero-byte range meets no range). */
static uint64_t place_activations(ddp_plan *p) {
  int32_t *ids = ddp_xmalloc(sizeof(int32_t) * (p->ntensors ? p->ntensors : 1));
  int n = 0;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0 && tt->arena == ARENA_ACT && !(tt->flags & TF_PERSISTENT)) ids[n++] = (int32_t)t;
  }
  qsort_r(ids, (size_t)n, sizeof(int32_t), by_size_desc, p);
  ddp_occ *occ = ddp_occ_new(p->ranks[0].step.n);
  uint64_t top = 0;
  for (int i = 0; i < n; i++) {
    ddp_tensor *t = &p->tensors[ids[i]];
    int32_t f = t->first_use, l = t->last_use;
    uint64_t off = 0, need = align_up(t->bytes);
    if (f >= 0 && need > 0) {
      off = ddp_occ_lowest(occ, f, l, need);
      ddp_occ_add(occ, f, l, off, off + need);
    }
    t->offset = off;
    if (off + need > top) top = off + need;
  }
  ddp_occ_free(occ);
  free(ids);
  return top;
}

static uint64_t resolve_offset(const ddp_plan *p, int32_t t) {
  uint64_t off = 0;
  while (p->tensors[t].base >= 0) {
    off += p->tensors[t].view;
    t = p->tensors[t].base;
  }
  return off + p->tensors[t].offset;
}

static void resolve_program(ddp_plan *p, ddp_program *prog) {
  for (uint32_t k = 0; k < prog->n; k++)
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      ddp_bufref *r = &prog->v[k].p[s];
      if (r->tensor < 0) {
        r->arena = 0;
        r->offset = 0;
        r->view = 0;
        continue;
      }
      r->arena = p->tensors[ddp_tensor_root(p, r->tensor)].arena;
      r->offset = p->tensors[r->tensor].offset + r->view;
    }
}

int ddp_memplan(ddp_plan *p, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  if (p->meta.world < 1 || !p->ranks) return -1;
  for (uint32_t t = 0; t < p->ntensors; t++) p->tensors[t].first_use = p->tensors[t].last_use = -1;
  note_uses(p, &p->ranks[0].init, true);
  note_uses(p, &p->ranks[0].step, false);
  uint64_t bytes[ARENA_COUNT] = {0};
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base >= 0 || (tt->flags & TF_SHAPE_ONLY) || (tt->arena == ARENA_ACT && !(tt->flags & TF_PERSISTENT)))
      continue;
    tt->offset = bytes[tt->arena];
    bytes[tt->arena] = align_up(bytes[tt->arena] + tt->bytes);
  }
  /* Persistent activations (used by init) go after the shared ones. */
  uint64_t shared = place_activations(p);
  bytes[ARENA_ACT] = shared;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0 && tt->arena == ARENA_ACT && (tt->flags & TF_PERSISTENT)) {
      tt->offset = bytes[ARENA_ACT];
      bytes[ARENA_ACT] = align_up(bytes[ARENA_ACT] + tt->bytes);
    }
  }
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base >= 0) {
      tt->offset = resolve_offset(p, (int32_t)t);
      tt->arena = p->tensors[ddp_tensor_root(p, (int32_t)t)].arena;
      /* views report the liveness of their root */
      tt->first_use = p->tensors[ddp_tensor_root(p, (int32_t)t)].first_use;
      tt->last_use = p->tensors[ddp_tensor_root(p, (int32_t)t)].last_use;
    }
  }
  for (int64_t r = 0; r < p->meta.world; r++) {
    resolve_program(p, &p->ranks[r].init);
    resolve_program(p, &p->ranks[r].step);
    for (int a = 0; a < ARENA_COUNT; a++) p->ranks[r].arena_bytes[a] = bytes[a];
  }
  return 0;
}

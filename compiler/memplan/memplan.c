/* compiler/memplan/memplan.c: see memplan.h. */
#include "err.h"
#include "memplan.h"
#include "access.h"
#include "occupancy.h"
#include "vec.h"
#include <stdlib.h>
#include <string.h>

static uint64_t align_up(uint64_t v) { return (v + DDP_ALIGN - 1) / DDP_ALIGN * DDP_ALIGN; }

/* Every tensor the init program touches lives across steps. */
static void mark_init_uses(ddp_plan *p, const ddp_program *prog) {
  for (uint32_t k = 0; k < prog->n; k++)
    for (int s = 0; s < DDP_MAX_PTRS; s++)
      if (prog->v[k].p[s].tensor >= 0) p->tensors[ddp_tensor_root(p, prog->v[k].p[s].tensor)].flags |= TF_PERSISTENT;
}

/* The step program's liveness, across streams. A use on the compute stream lives at its own index. A use
 * on another stream may run before or after its neighbours in program order: it starts where that stream
 * last learned of the others (after its last wait: anything later may still be running) and ends where
 * every other stream has learned that it finished (the first wait there whose event covers it; the end
 * of the step when none does). So two tensors whose intervals do not meet are ordered by events. */
typedef struct wait_mark {
  int32_t at;
  int32_t *knows; /* the stream's clock after the wait */
} wait_mark;

static void note_step_uses(ddp_plan *p, const ddp_program *prog, uint32_t nevents) {
  int S = p->nstreams > DDP_DEFAULT_STREAMS ? (int)p->nstreams : DDP_DEFAULT_STREAMS;
  int32_t *clock = ddp_xmalloc(sizeof(int32_t) * (size_t)S * (size_t)S);
  int32_t *ev = ddp_xmalloc(sizeof(int32_t) * (size_t)S * ((size_t)nevents + 1));
  for (size_t i = 0; i < (size_t)S * (size_t)S; i++) clock[i] = -1;
  for (size_t i = 0; i < (size_t)S * ((size_t)nevents + 1); i++) ev[i] = -1;
  wait_mark **marks = ddp_xcalloc((size_t)S, sizeof(wait_mark *));
  uint32_t *nmarks = ddp_xcalloc((size_t)S, sizeof(uint32_t));
  size_t *cap = ddp_xcalloc((size_t)S, sizeof(size_t));
  int32_t *start = ddp_xmalloc(sizeof(int32_t) * ((size_t)prog->n + 1));
  for (uint32_t k = 0; k < prog->n; k++) { /* clocks, wait marks, and each instruction's start */
    const ddp_instr *in = &prog->v[k];
    int s = in->stream < S ? in->stream : 0;
    int32_t *cs = &clock[(size_t)s * (size_t)S];
    cs[s] = (int32_t)k;
    uint32_t e = (uint32_t)in->i[EVENT_I_EVENT];
    if (in->opcode == I_EVENT_RECORD && e < nevents) memcpy(&ev[(size_t)e * (size_t)S], cs, sizeof(int32_t) * (size_t)S);
    if (in->opcode == I_EVENT_WAIT && e < nevents) {
      for (int q = 0; q < S; q++)
        if (ev[(size_t)e * (size_t)S + (size_t)q] > cs[q]) cs[q] = ev[(size_t)e * (size_t)S + (size_t)q];
      wait_mark *m = DDP_VEC_PUSH(marks[s], nmarks[s], cap[s]);
      m->at = (int32_t)k;
      m->knows = ddp_xmalloc(sizeof(int32_t) * (size_t)S);
      memcpy(m->knows, cs, sizeof(int32_t) * (size_t)S);
    }
    start[k] = (int32_t)k;
    if (s != STREAM_COMPUTE)
      for (int q = 0; q < S; q++)
        if (q != s && cs[q] + 1 < start[k]) start[k] = cs[q] + 1;
  }
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    int s = in->stream < S ? in->stream : 0;
    int32_t end = (int32_t)k;
    if (s != STREAM_COMPUTE)
      for (int q = 0; q < S; q++) {
        if (q == s) continue;
        uint32_t lo = 0, hi = nmarks[q]; /* the first wait on q whose clock covers k */
        while (lo < hi) {
          uint32_t mid = lo + (hi - lo) / 2;
          if (marks[q][mid].knows[s] >= (int32_t)k) hi = mid;
          else lo = mid + 1;
        }
        int32_t at = lo < nmarks[q] ? marks[q][lo].at : (int32_t)prog->n;
        if (at > end) end = at;
      }
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
      int32_t t = in->p[sl].tensor;
      if (t < 0) continue;
      ddp_tensor *rt = &p->tensors[ddp_tensor_root(p, t)];
      if (rt->first_use < 0 || start[k] < rt->first_use) rt->first_use = start[k];
      if (end > rt->last_use) rt->last_use = end;
    }
  }
  for (int q = 0; q < S; q++) {
    for (uint32_t i = 0; i < nmarks[q]; i++) free(marks[q][i].knows);
    free(marks[q]);
  }
  free(marks);
  free(nmarks);
  free(cap);
  free(start);
  free(clock);
  free(ev);
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
static uint64_t place_activations(ddp_plan *p, const uint8_t *only, uint32_t steps, uint64_t base) {
  int32_t *ids = ddp_xmalloc(sizeof(int32_t) * (p->ntensors ? p->ntensors : 1));
  int n = 0;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0 && tt->arena == ARENA_ACT && !(tt->flags & TF_PERSISTENT) && (!only || only[t]))
      ids[n++] = (int32_t)t;
  }
  qsort_r(ids, (size_t)n, sizeof(int32_t), by_size_desc, p);
  ddp_occ *occ = ddp_occ_new(steps);
  uint64_t top = base;
  for (int i = 0; i < n; i++) {
    ddp_tensor *t = &p->tensors[ids[i]];
    int32_t f = t->first_use, l = t->last_use;
    uint64_t off = 0, need = align_up(t->bytes);
    if (f >= 0 && need > 0) {
      off = ddp_occ_lowest(occ, f, l, need);
      ddp_occ_add(occ, f, l, off, off + need);
    }
    t->offset = base + off;
    if (base + off + need > top) top = base + off + need;
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

/* Pipelines: every rank runs its own programs on its own tensors. A tensor two or more ranks use (the batch,
 * the loss, the optimizer scalars, the activations sent between stages, a stage's parameters, gradients and
 * state that its replicas share) gets the same offset on each of them; after them each rank lays out its
 * private persistent tensors and plans its private activations by its own step's liveness (different GPUs).
 * Each rank's arenas are as large as its own tensors need: a stage's state is not on the other stages'
 * ranks (with replicas it had been on every rank: 65 GB a rank for XL on 2 x 2 instead of about 22). */
static void plan_per_rank(ddp_plan *p) {
  uint32_t W = (uint32_t)p->meta.world, nt = p->ntensors;
  uint8_t *used = ddp_xcalloc((size_t)nt * W + 1, 1), *only = ddp_xcalloc((size_t)nt + 1, 1);
  uint32_t *users = ddp_xcalloc((size_t)nt + 1, sizeof(uint32_t));
  for (uint32_t r = 0; r < W; r++) {
    mark_init_uses(p, &p->ranks[r].init);
    const ddp_program *progs[2] = {&p->ranks[r].init, &p->ranks[r].step};
    for (int q = 0; q < 2; q++)
      for (uint32_t k = 0; k < progs[q]->n; k++)
        for (int s = 0; s < DDP_MAX_PTRS; s++) {
          int32_t t = progs[q]->v[k].p[s].tensor;
          if (t < 0) continue;
          int32_t root = ddp_tensor_root(p, t);
          if (!used[(size_t)root * W + r]) users[root]++;
          used[(size_t)root * W + r] = 1;
        }
  }
  for (uint32_t r = 0; r < W; r++) note_step_uses(p, &p->ranks[r].step, p->ranks[r].nevents);
  /* used by several ranks: the same offset on each of them (the next free one on all its users), and no
   * room on the others (a stage's parameters, gradients and state, which its replicas share, are not every
   * stage's); used by no instruction (the GEMM workspace): on every rank */
  uint64_t *fill = ddp_xcalloc((size_t)W * ARENA_COUNT, sizeof *fill);
  for (uint32_t t = 0; t < nt; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base >= 0 || (tt->flags & TF_SHAPE_ONLY) || users[t] == 1) continue;
    uint64_t at = 0;
    for (uint32_t r = 0; r < W; r++)
      if ((users[t] == 0 || used[(size_t)t * W + r]) && fill[(size_t)r * ARENA_COUNT + tt->arena] > at)
        at = fill[(size_t)r * ARENA_COUNT + tt->arena];
    tt->offset = at;
    for (uint32_t r = 0; r < W; r++)
      if (users[t] == 0 || used[(size_t)t * W + r]) fill[(size_t)r * ARENA_COUNT + tt->arena] = align_up(at + tt->bytes);
  }
  for (uint32_t r = 0; r < W; r++) {
    uint64_t bytes[ARENA_COUNT];
    memcpy(bytes, &fill[(size_t)r * ARENA_COUNT], sizeof bytes);
    for (uint32_t t = 0; t < nt; t++) {
      ddp_tensor *tt = &p->tensors[t];
      only[t] = users[t] == 1 && used[(size_t)t * W + r];
      if (!only[t] || tt->base >= 0 || (tt->flags & TF_SHAPE_ONLY) ||
          (tt->arena == ARENA_ACT && !(tt->flags & TF_PERSISTENT)))
        continue;
      tt->offset = bytes[tt->arena];
      bytes[tt->arena] = align_up(bytes[tt->arena] + tt->bytes);
    }
    bytes[ARENA_ACT] = place_activations(p, only, p->ranks[r].step.n, bytes[ARENA_ACT]);
    for (int a = 0; a < ARENA_COUNT; a++) p->ranks[r].arena_bytes[a] = bytes[a];
  }
  free(used);
  free(only);
  free(users);
  free(fill);
}

/* Every view (base >= 0) at its root's offset plus its own, in its root's arena, with its root's liveness. */
static void place_views(ddp_plan *p) {
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0) continue;
    const ddp_tensor *root = &p->tensors[ddp_tensor_root(p, (int32_t)t)];
    tt->offset = resolve_offset(p, (int32_t)t);
    tt->arena = root->arena;
    tt->first_use = root->first_use;
    tt->last_use = root->last_use;
  }
}

int ddp_memplan(ddp_plan *p, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  if (p->meta.world < 1 || !p->ranks) return -1;
  if (p->meta.pipe_stages > 0) {
    for (uint32_t t = 0; t < p->ntensors; t++) p->tensors[t].first_use = p->tensors[t].last_use = -1;
    plan_per_rank(p);
    place_views(p);
    for (int64_t r = 0; r < p->meta.world; r++) {
      resolve_program(p, &p->ranks[r].init);
      resolve_program(p, &p->ranks[r].step);
    }
    return 0;
  }
  for (uint32_t t = 0; t < p->ntensors; t++) p->tensors[t].first_use = p->tensors[t].last_use = -1;
  mark_init_uses(p, &p->ranks[0].init);
  note_step_uses(p, &p->ranks[0].step, p->ranks[0].nevents);
  uint64_t bytes[ARENA_COUNT] = {0};
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base >= 0 || (tt->flags & TF_SHAPE_ONLY) || (tt->arena == ARENA_ACT && !(tt->flags & TF_PERSISTENT)))
      continue;
    tt->offset = bytes[tt->arena];
    bytes[tt->arena] = align_up(bytes[tt->arena] + tt->bytes);
  }
  /* Persistent activations (used by init) go after the shared ones. */
  uint64_t shared = place_activations(p, NULL, p->ranks[0].step.n, 0);
  bytes[ARENA_ACT] = shared;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0 && tt->arena == ARENA_ACT && (tt->flags & TF_PERSISTENT)) {
      tt->offset = bytes[ARENA_ACT];
      bytes[ARENA_ACT] = align_up(bytes[ARENA_ACT] + tt->bytes);
    }
  }
  place_views(p);
  for (int64_t r = 0; r < p->meta.world; r++) {
    resolve_program(p, &p->ranks[r].init);
    resolve_program(p, &p->ranks[r].step);
    for (int a = 0; a < ARENA_COUNT; a++) p->ranks[r].arena_bytes[a] = bytes[a];
  }
  return 0;
}

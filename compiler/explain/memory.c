/* compiler/explain/memory.c: a rank's memory per class at the peak, for `ddpc explain`. The planner gives
 * each rank one arena per class (plan/plan.h ARENA_*); the activation arena is already the liveness peak
 * (compiler/memplan), the others live for the whole run, so the peak is the sum of the arenas, as
 * `ddpc inspect` prints it. Classes: parameters (masters and low-precision copies), gradients, optimizer
 * state, activations, workspace and inputs/scalars are their arenas; communication buffers are the
 * persistent tensors outside the parameter, gradient and optimizer arenas that a step collective
 * reads or writes (a gather or staging buffer), moved out of their arena's class. Gradients reduced in
 * place in their buckets stay gradients. Sharded plans keep two kinds of parameter and gradient memory in
 * the activation arena, live only for part of the step: ZeRO-3's gathered parameters (TF_PARAM_COPY, or
 * written by an ALL_GATHER; not one on a tensor group, whose all-gathers gather activations: the
 * vocabulary-parallel cross-entropy's statistics) and the full gradients of a group until its reduce-scatter (TF_GRAD); those
 * live at the activation peak
 * (ddp_act_peak_find) move from activations to parameters and gradients. The classes sum to the rank's
 * arena bytes. */
#include "access.h"
#include "err.h"
#include "explain.h"
#include <stdlib.h>

static const char *const class_names[MEM_COUNT] = {
#define DDP_MEM_NAME(id, name) name,
    DDP_MEM_CLASSES(DDP_MEM_NAME)
#undef DDP_MEM_NAME
};
const char *ddp_mem_class_name(int c) { return c >= 0 && c < MEM_COUNT ? class_names[c] : "?"; }

static int arena_class(int a) {
  switch (a) {
  case ARENA_PARAM: return MEM_PARAMS;
  case ARENA_GRAD: return MEM_GRADS;
  case ARENA_OPT: return MEM_OPT;
  case ARENA_ACT: return MEM_ACT;
  case ARENA_WORK: return MEM_WORK;
  default: return MEM_IO;
  }
}

static uint64_t align_up(uint64_t v) { return (v + DDP_ALIGN - 1) / DDP_ALIGN * DDP_ALIGN; }

int ddp_act_transient(const ddp_plan *p, uint32_t t) {
  const ddp_tensor *tt = &p->tensors[t];
  return tt->base < 0 && tt->arena == ARENA_ACT && !(tt->flags & (TF_PERSISTENT | TF_SHAPE_ONLY));
}

unsigned char *ddp_gathered_params(const ddp_plan *p) {
  unsigned char *g = ddp_xcalloc(p->ntensors + 1u, 1);
  const ddp_program *prog = p->ranks && p->meta.world > 0 ? &p->ranks[0].step : NULL;
  for (uint32_t k = 0; prog && k < prog->n; k++) {
    if (prog->v[k].opcode != I_ALL_GATHER) continue;
    int32_t t = prog->v[k].p[COLL_P_RECV].tensor;
    int64_t cm = prog->v[k].i[COLL_I_COMM];
    if (ddp_plan_tensor_comm(p, cm)) continue; /* a tensor group's (the world's with one replica) */
    if (t >= 0 && (uint32_t)t < p->ntensors) g[ddp_tensor_root(p, t)] = 1;
  }
  for (uint32_t t = 0; t < p->ntensors; t++)
    g[t] = ddp_act_transient(p, t) && (g[t] || (p->tensors[t].flags & TF_PARAM_COPY));
  return g;
}

void ddp_act_peak_find(const ddp_plan *p, ddp_act_peak *pk) {
  *pk = (ddp_act_peak){-1, 0, 0, 0};
  uint32_t n = p->ranks && p->meta.world > 0 ? p->ranks[0].step.n : 0;
  if (!n) return;
  /* live bytes per instruction by a difference array: +bytes at first use, -bytes after the last */
  int64_t *delta = ddp_xcalloc((size_t)n + 1u, sizeof *delta);
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    if (!ddp_act_transient(p, t) || tt->first_use < 0 || (uint32_t)tt->first_use >= n) continue;
    uint32_t last = tt->last_use < tt->first_use ? (uint32_t)tt->first_use : (uint32_t)tt->last_use;
    if (last >= n) last = n - 1;
    delta[tt->first_use] += (int64_t)align_up(tt->bytes);
    delta[last + 1] -= (int64_t)align_up(tt->bytes);
  }
  int64_t live = 0, best = 0, at = -1;
  for (uint32_t k = 0; k < n; k++) {
    live += delta[k];
    if (live > best) best = live, at = k;
  }
  free(delta);
  if (at < 0) return;
  pk->at = at;
  pk->live = (uint64_t)best;
  unsigned char *gathered = ddp_gathered_params(p);
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    if (!ddp_act_transient(p, t) || tt->first_use < 0 || tt->first_use > at || tt->last_use < at) continue;
    if (gathered[t]) pk->params += align_up(tt->bytes);
    else if (tt->flags & TF_GRAD) pk->grads += align_up(tt->bytes);
  }
  free(gathered);
}

/* Moves up to `bytes` from class `from` to class `to`. */
static void move_class(uint64_t out[MEM_COUNT], int from, int to, uint64_t bytes) {
  if (bytes > out[from]) bytes = out[from];
  out[from] -= bytes;
  out[to] += bytes;
}

void ddp_memory_classes(const ddp_plan *p, int rank, uint64_t out[MEM_COUNT]) {
  for (int c = 0; c < MEM_COUNT; c++) out[c] = 0;
  const ddp_rank_plan *rp = &p->ranks[rank];
  for (int a = 0; a < ARENA_COUNT; a++) out[arena_class(a)] += rp->arena_bytes[a];
  unsigned char *seen = ddp_xcalloc(p->ntensors + 1u, 1);
  for (uint32_t k = 0; k < rp->step.n; k++) {
    const ddp_instr *in = &rp->step.v[k];
    if (in->opcode < I_ALL_REDUCE || in->opcode > I_RECV) continue;
    for (int s = 0; s < 2; s++) {
      int32_t t = in->p[s].tensor;
      if (t < 0 || (uint32_t)t >= p->ntensors) continue;
      t = ddp_tensor_root(p, t);
      if (t < 0 || seen[t]) continue;
      seen[t] = 1;
      const ddp_tensor *tt = &p->tensors[t];
      int cls = arena_class(tt->arena);
      if (tt->arena == ARENA_PARAM || tt->arena == ARENA_GRAD || tt->arena == ARENA_OPT) continue;
      if (!(tt->flags & TF_PERSISTENT) || out[cls] < tt->bytes) continue;
      out[cls] -= tt->bytes;
      out[MEM_COMM] += tt->bytes;
    }
  }
  free(seen);
  ddp_act_peak pk;
  ddp_act_peak_find(p, &pk);
  move_class(out, MEM_ACT, MEM_PARAMS, pk.params);
  move_class(out, MEM_ACT, MEM_GRADS, pk.grads);
}

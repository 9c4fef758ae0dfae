/* compiler/explain/memory.c: a rank's memory per class at the peak, for `ddpc explain`. The planner gives
 * each rank one arena per class (plan/plan.h ARENA_*); the activation arena is already the liveness peak
 * (compiler/memplan), the others live for the whole run, so the peak is the sum of the arenas, as
 * `ddpc inspect` prints it. Classes: parameters (masters and low-precision copies), gradients, optimizer
 * state, activations, workspace and inputs/scalars are their arenas; communication buffers are the
 * persistent tensors outside the parameter, gradient and optimizer arenas that a step collective
 * reads or writes (a gather or staging buffer), moved out of their arena's class. Gradients reduced in
 * place in their buckets stay gradients. The classes sum to the rank's arena bytes. */
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
}

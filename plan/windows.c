/* plan/windows.c: which arenas of a plan can be NCCL symmetric windows (nccl = { register = "window" }), the
 * same answer for every rank: those some group collective of some rank reads or writes, registered with a
 * communicator only where all its members hold the arena at one size (a window registration is collective).
 * The CUDA executor registers exactly these (runtime/cuda/comm.c) and `ddpc inspect` lists them. */
#include "plan.h"
#include "vocab.h"

uint64_t ddp_window_bytes(uint64_t n) { return (n + DDP_WINDOW_ALIGN - 1) / DDP_WINDOW_ALIGN * DDP_WINDOW_ALIGN; }

uint32_t ddp_plan_collective_arenas(const ddp_plan *p) {
  uint32_t mask = 0;
  for (uint32_t r = 0; p->ranks && r < p->meta.world; r++)
    for (int k = 0; k < 2; k++) {
      const ddp_program *g = k ? &p->ranks[r].step : &p->ranks[r].init;
      for (uint32_t i = 0; i < g->n; i++) {
        const ddp_instr *in = &g->v[i];
        if (!ddp_is_group_collective(in->opcode)) continue;
        for (int s = 0; s < 2; s++)
          if (in->p[s].tensor >= 0 && in->p[s].arena < ARENA_COUNT) mask |= 1u << in->p[s].arena;
      }
    }
  return mask;
}

uint64_t ddp_plan_window_bytes(const ddp_plan *p, uint32_t coll, int64_t comm, int arena) {
  if (p->meta.nccl_register != NCCL_REGISTER_WINDOW || p->meta.world < 2 || arena < 0 || arena >= ARENA_COUNT ||
      !((coll >> arena) & 1) || !p->ranks)
    return 0;
  const int64_t n = ddp_plan_comm_size(p, comm);
  if (n < 1) return 0;
  uint64_t bytes = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t r = ddp_plan_comm_member(p, comm, i);
    if (r < 0 || r >= p->meta.world) return 0;
    const uint64_t b = ddp_window_bytes(p->ranks[r].arena_bytes[arena]);
    if (!b || (i && b != bytes)) return 0;
    bytes = b;
  }
  return bytes;
}

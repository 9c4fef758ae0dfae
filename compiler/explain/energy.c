/* compiler/explain/energy.c: the power model of `ddpc explain` (docs/EXPLAIN.md, *Energy*). A GPU at its
 * power limit runs a step no faster than the step's energy allows, so one rank's step program is priced
 * in joules above idle from its work (plan/work.h): GEMM and attention FLOPs at j_per_tflop (16-bit inputs,
 * the tensor cores) or j_per_tflop_fp32 (4-byte inputs: fp32 plans run them on FFMA), the bytes of
 * the memory-bound kernels, copies and loads at j_per_gb_hbm, and the ring traffic a rank sends in each
 * collective at j_per_gb_copy_engine (the collectives the simulator puts on the copy engines, and the
 * peer copies) or j_per_gb_nccl (NCCL's kernels, the reduction's memory traffic included). A receive is
 * priced at its sender, whose figure covers both ends. floor_s = joules / (limit_w - idle_w): the
 * shortest step the limit allows. The predicted step is the larger of the simulated step and the floor
 * (ddp_rank_step_s): the simulator's rates are those of kernels alone, the floor what the limit makes of the
 * whole step's energy (docs/EXPLAIN.md, *Energy*). */
#include "explain.h"
#include "work.h"

int ddp_rank_energy(const ddp_plan *p, const ddp_profile *pr, int rank, ddp_step_energy *out) {
  *out = (ddp_step_energy){0};
  if (!(pr->power.limit_w > 0)) return -1;
  const ddp_program *prog = &p->ranks[rank].step;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    ddp_work w;
    ddp_instr_work(p, in, &w);
    switch (w.kind) {
    case WORK_GEMM:
    case WORK_ATTENTION:
      out->tflop += w.flops / 1e12;
      if (!w.gemm16) out->tflop_fp32 += w.flops / 1e12;
      break;
    case WORK_MEMORY:
      if (w.bytes > 0) out->hbm_gb += w.bytes / 1e9;
      break;
    case WORK_COLL: {
      if (in->opcode == I_RECV) break;
      double gb = w.wire_bytes / 1e9;
      out->link_gb += gb;
      out->link_j += gb * (ddp_coll_on_copy_engines(p, in) ? pr->power.j_per_gb_copy_engine
                                                                    : pr->power.j_per_gb_nccl);
      break;
    }
    default: break;
    }
  }
  out->compute_j =
      (out->tflop - out->tflop_fp32) * pr->power.j_per_tflop + out->tflop_fp32 * pr->power.j_per_tflop_fp32;
  out->memory_j = out->hbm_gb * pr->power.j_per_gb_hbm;
  out->j = out->compute_j + out->memory_j + out->link_j;
  double headroom = pr->power.limit_w - pr->power.idle_w;
  out->floor_s = headroom > 0 ? out->j / headroom : 0;
  return 0;
}

double ddp_rank_step_s(const ddp_plan *p, const ddp_profile *pr, int rank, double sim_s, int *floor_bound) {
  ddp_step_energy e;
  int fl = sim_s >= 0 && ddp_rank_energy(p, pr, rank, &e) == 0 && e.floor_s > sim_s;
  if (floor_bound) *floor_bound = fl;
  return fl ? e.floor_s : sim_s;
}

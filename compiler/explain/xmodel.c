/* compiler/explain/xmodel.c: one schedule compiled without kernels (ddp_compile with skip_codegen; the cost
 * model needs no launch geometry: cost.c prices kernels from their operands' footprints) and simulated with
 * and without communication costs, reduced to what `ddpc explain buckets` and `ddpc explain mesh` print. */
#include "xmodel.h"
#include "clock.h"
#include "compile.h"
#include "err.h"
#include <string.h>

/* Ring traffic per rank of one collective, as cost.c prices it (plan/work.c), with the ring factor of its
 * communicator's size (the world, a pipeline's replica group, a tensor group or a tensor rank's data group):
 * all-reduce 2(n-1)/n of the buffer, reduce-scatter and all-gather (n-1)/n of the whole buffer, broadcast
 * and send the buffer; a receive is counted once, at its sender. */
static int coll_kind(const ddp_plan *p, const ddp_instr *in, double *bytes) {
  ddp_work w;
  switch (in->opcode) {
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST:
  case I_SEND: ddp_instr_work(p, in, &w); *bytes = w.wire_bytes; return w.coll_kind;
  case I_RECV: *bytes = 0; return COST_SEND_RECV;
  default: return -1;
  }
}


int ddp_xeval_schedule(const ddp_schedule *s, const ddp_profile *pr, ddp_xeval *out, char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1, .profile = pr};
  double t0 = ddp_now_s();
  ddp_plan *p = ddp_compile(s, &o, err, errcap);
  out->compile_s = ddp_now_s() - t0;
  if (!p) return -1;
  char serr[1024] = "";
  ddp_sim *full = ddp_simulate(p, pr, 0, serr, sizeof serr);
  ddp_sim *zero = full ? ddp_simulate(p, pr, 1, serr, sizeof serr) : NULL;
  if (!full || !zero) {
    ddp_sim_free(full);
    full = zero = NULL;
    out->step_s = out->free_s = out->comm_s = out->backward_s = -1;
    snprintf(out->sim_err, sizeof out->sim_err, "%.500s", serr);
  }
  out->world = (int)p->meta.world;
  snprintf(out->parallel, sizeof out->parallel, "%s", p->meta.parallel ? p->meta.parallel : "");
  out->energy_j = out->floor_s = -1; /* the rank with the most joules: the limit paces the step by it */
  for (int r = 0; r < out->world; r++) {
    ddp_step_energy en;
    if (ddp_rank_energy(p, pr, r, &en) == 0 && en.j > out->energy_j) out->energy_j = en.j, out->floor_s = en.floor_s;
  }
  out->nbuckets = p->nbuckets;
  for (uint32_t b = 0; b < p->nbuckets; b++) out->grad_bytes += p->buckets[b].bytes;
  for (int r = 0; r < out->world; r++) {
    if (full && full->ranks[r].step_s > out->step_s) out->step_s = full->ranks[r].step_s;
    if (zero && zero->ranks[r].step_s > out->free_s) out->free_s = zero->ranks[r].step_s;
    double bytes[COST_COLL_COUNT] = {0}, tp_bytes = 0;
    int calls[COST_COLL_COUNT] = {0}, tp_calls = 0;
    const ddp_program *prog = &p->ranks[r].step;
    for (uint32_t k = 0; k < prog->n; k++) {
      double b = 0;
      int kind = coll_kind(p, &prog->v[k], &b);
      if (kind < 0) continue;
      bytes[kind] += b;
      if (prog->v[k].opcode != I_RECV) calls[kind]++;
      if (ddp_is_group_collective(prog->v[k].opcode) && ddp_plan_tensor_comm(p, prog->v[k].i[COLL_I_COMM]))
        tp_bytes += b, tp_calls++;
    }
    if (tp_bytes > out->tp_bytes) out->tp_bytes = tp_bytes;
    if (tp_calls > out->tp_calls) out->tp_calls = tp_calls;
    for (int k = 0; k < COST_COLL_COUNT; k++) {
      if (bytes[k] > out->coll_bytes[k]) out->coll_bytes[k] = bytes[k];
      if (calls[k] > out->coll_calls[k]) out->coll_calls[k] = calls[k];
    }
    uint64_t mem[MEM_COUNT], total = 0;
    ddp_memory_classes(p, r, mem);
    for (int c = 0; c < MEM_COUNT; c++) total += mem[c];
    if (r == 0 || total > out->mem_total) {
      memcpy(out->mem, mem, sizeof mem);
      out->mem_total = total, out->mem_rank = r;
    }
  }
  if (full) {
    out->comm_s = full->ranks[0].comm_s;
    double fw, bw, op;
    ddp_sim_phases(p, zero, 0, &fw, &bw, &op);
    out->backward_s = bw;
  }
  ddp_sim_free(full);
  ddp_sim_free(zero);
  ddp_plan_free(p);
  return 0;
}

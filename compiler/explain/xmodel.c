/* compiler/explain/xmodel.c: one schedule compiled without kernels (ddp_compile with skip_codegen; the cost
 * model needs no launch geometry: cost.c prices kernels from their operands' footprints) and simulated with
 * and without communication costs, reduced to what `ddpc explain buckets` and `ddpc explain mesh` print. */
#include "xmodel.h"
#include "clock.h"
#include "compile.h"
#include "err.h"
#include <string.h>

/* Ring traffic per rank of one collective, as cost.c prices it: all-reduce 2(n-1)/n of the buffer,
 * reduce-scatter and all-gather (n-1)/n of the whole buffer, broadcast and send/recv the buffer. */
static int coll_kind(const ddp_instr *in, double n, double *bytes) {
  double b = (double)in->i[COLL_I_COUNT] * (double)ddp_dtype_size(in->dt[0]);
  switch (in->opcode) {
  case I_ALL_REDUCE: *bytes = 2 * (n - 1) / n * b; return COST_ALL_REDUCE;
  case I_REDUCE_SCATTER: *bytes = (n - 1) * b; return COST_REDUCE_SCATTER;
  case I_ALL_GATHER: *bytes = (n - 1) * b; return COST_ALL_GATHER;
  case I_BROADCAST: *bytes = b; return COST_BROADCAST;
  case I_SEND: *bytes = b; return COST_SEND_RECV;
  case I_RECV: *bytes = 0; return COST_SEND_RECV; /* counted once, at the sender */
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
  out->nbuckets = p->nbuckets;
  for (uint32_t b = 0; b < p->nbuckets; b++) out->grad_bytes += p->buckets[b].bytes;
  double n = out->world > 0 ? out->world : 1;
  for (int r = 0; r < out->world; r++) {
    if (full && full->ranks[r].step_s > out->step_s) out->step_s = full->ranks[r].step_s;
    if (zero && zero->ranks[r].step_s > out->free_s) out->free_s = zero->ranks[r].step_s;
    double bytes[COST_COLL_COUNT] = {0};
    int calls[COST_COLL_COUNT] = {0};
    const ddp_program *prog = &p->ranks[r].step;
    for (uint32_t k = 0; k < prog->n; k++) {
      double b = 0;
      int kind = coll_kind(&prog->v[k], n, &b);
      if (kind < 0) continue;
      bytes[kind] += b;
      if (prog->v[k].opcode != I_RECV) calls[kind]++;
    }
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

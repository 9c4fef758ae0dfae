/* plan/step_times.c: turns one step's timing points into ddp_step_times (step_times.h), for ddprun's
 * metrics and ddpc explain's prediction alike.
 * Gradient collectives are those bracketed before the optimizer's timing point; collectives after it
 * (ZeRO-1's all-gather, the sharded optimizer's broadcasts) are waited for by compute, so fully exposed.
 * Tensor-parallel collectives (TP_COMM_*) run on the compute stream: all exposed, summed into tp_comm_ms.
 * A pipeline plan's forward and backward are the sums of its microbatch brackets (MB_FORWARD_BEGIN ..
 * MB_FORWARD_END, MB_BACKWARD_BEGIN .. MB_BACKWARD_END, each END closing the last BEGIN of its kind). */
#include "step_times.h"

void ddp_step_times_from_timers(const ddp_plan *p, int rank, const double *ms, ddp_step_times *out) {
  const ddp_program *prog = &p->ranks[rank].step;
  double begin = 0, end = 0, bwd_end = -1, fwd_end = -1, opt_begin = -1;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode != I_TIMER) continue;
    if (in->i[TIMER_I_ROLE] == TIMER_STEP_BEGIN) begin = ms[in->i[TIMER_I_SLOT]];
    if (in->i[TIMER_I_ROLE] == TIMER_STEP_END) end = ms[in->i[TIMER_I_SLOT]];
    if (in->i[TIMER_I_ROLE] == TIMER_BACKWARD_END) bwd_end = ms[in->i[TIMER_I_SLOT]];
    if (in->i[TIMER_I_ROLE] == TIMER_FORWARD_END) fwd_end = ms[in->i[TIMER_I_SLOT]];
    if (in->i[TIMER_I_ROLE] == TIMER_OPT_BEGIN) opt_begin = ms[in->i[TIMER_I_SLOT]];
  }
  out->forward_ms = fwd_end >= 0 ? fwd_end - begin : 0;
  out->backward_ms = fwd_end >= 0 && bwd_end >= 0 ? bwd_end - fwd_end : 0;
  double mb_open[2] = {-1, -1}, mb_sum[2] = {0, 0};
  int mb = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    int64_t role = in->i[TIMER_I_ROLE];
    if (in->opcode != I_TIMER || role < TIMER_MB_FORWARD_BEGIN || role > TIMER_MB_BACKWARD_END) continue;
    int kind = role >= TIMER_MB_BACKWARD_BEGIN, is_end = role == TIMER_MB_FORWARD_END || role == TIMER_MB_BACKWARD_END;
    double t = ms[in->i[TIMER_I_SLOT]];
    mb = 1;
    if (!is_end) mb_open[kind] = t;
    else if (mb_open[kind] >= 0) mb_sum[kind] += t - mb_open[kind], mb_open[kind] = -1;
  }
  if (mb) out->forward_ms = mb_sum[0], out->backward_ms = mb_sum[1];
  out->optimizer_ms = opt_begin >= 0 ? end - opt_begin : 0;
  if (bwd_end < 0) bwd_end = begin;
  double comm = 0, overlapped = 0, last_grad_end = -1, post_opt = 0, open = -1, tp = 0, tp_open = -1;
  int after_opt = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode != I_TIMER) continue;
    double t = ms[in->i[TIMER_I_SLOT]];
    if (in->i[TIMER_I_ROLE] == TIMER_OPT_BEGIN) after_opt = 1;
    if (in->i[TIMER_I_ROLE] == TIMER_TP_COMM_BEGIN) tp_open = t;
    if (in->i[TIMER_I_ROLE] == TIMER_TP_COMM_END && tp_open >= 0) tp += t - tp_open, tp_open = -1;
    if (in->i[TIMER_I_ROLE] == TIMER_COMM_BEGIN) open = t;
    if (in->i[TIMER_I_ROLE] == TIMER_COMM_END && open >= 0) {
      double d = t - open;
      comm += d;
      if (after_opt) {
        post_opt += d;
      } else {
        double lo = open > begin ? open : begin, hi = t < bwd_end ? t : bwd_end;
        if (hi > lo) overlapped += hi - lo;
        if (t > last_grad_end) last_grad_end = t;
      }
      open = -1;
    }
  }
  out->step_ms = end - begin;
  out->comm_ms = comm;
  out->exposed_comm_ms = (last_grad_end > bwd_end ? last_grad_end - bwd_end : 0) + post_opt + tp;
  out->tp_comm_ms = tp;
  out->optimizer_comm_ms = post_opt;
  out->overlap_ratio = comm > 0 ? overlapped / comm : 0;
  out->compute_ms = out->step_ms - out->exposed_comm_ms;
}

/* compiler/passes/opt_overlap.c: a single rank's step with the optimizer off the critical path. The
 * trainable units, in gradient-ready order, are cut into groups of about 32 MB of fp32 parameters; each
 * group's update runs on a side stream (stream 1, which a single rank's plan has no collectives for) as soon
 * as the backward is done with the group: after the last instruction that writes its gradients or reads its
 * parameters (a layer's input gradient may read the weights after their gradient is final). The scalars
 * (step count, scheduled lr) run first on the side stream; the compute stream waits for the side stream at
 * the end of the step, so the next forward reads updated weights. Without gradient clipping only: the norm
 * needs every gradient before any update.
 * step -> RANGE_PUSH TIMER LOAD_BATCH order(compute, side) OPT_SCALARS(side)
 *         [instruction [order(compute, side) update(group)(side)]*]* TIMER(BACKWARD_END) TIMER(OPT_BEGIN)
 *         order(side, compute) TIMER(STEP_END) RANGE_POP
 * optimizer_ms (STEP_END - OPT_BEGIN) is then the optimizer's exposed tail.
 * With streams = { update_priority = "low", update_tail = f } the last-ready fraction f of the groups runs on a
 * second side stream (stream 2, after the scalars) that is not one of b->update_streams and so keeps the
 * high priority: the first side stream's updates then only fill the SMs the backward leaves free, and the
 * last groups' do not queue behind them. */
#include "passes.h"
#include "access.h"
#include <stdlib.h>

#define GROUP_ELEMS ((int64_t)8 << 20)

bool pass_opt_overlap_applies(const ddp_builder *b, const ddp_layout *lay) {
  const ddp_schedule *s = b->s;
  return lay->world == 1 && !lay->zero && !lay->pipe && s->mode == MODE_TRAIN && s->single_optimizer_overlap &&
         lay->sumsq_partials < 0 && b->backward;
}

enum { STREAM_TAIL = DDP_DEFAULT_STREAMS }; /* streams.update_tail: the last groups' updates */

static void on_stream(rank_ctx *c, int s) { c->out->v[c->out->n - 1].stream = (uint16_t)s; }
static void on_side(rank_ctx *c) { on_stream(c, STREAM_COMM); }
/* an update on stream s; the side stream then carries only updates (and the scalars) */
static void update_on(rank_ctx *c, int s, int64_t lo, int64_t hi, const char *name) {
  pass_update(c, lo, hi, 0, true, name);
  on_stream(c, s);
  if (s == STREAM_COMM) c->b->update_streams |= (uint64_t)1 << STREAM_COMM;
}

int pass_opt_overlap_step(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_plan *p = b->plan;
  /* the last step instruction touching each unit's gradient, copy or master */
  int32_t *unit_of = malloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  if (!unit_of) return -1;
  for (uint32_t t = 0; t < p->ntensors; t++) unit_of[t] = -1;
  for (int u = 0; u < b->nunits; u++) {
    if (!b->units[u].trainable) continue;
    unit_of[b->units[u].master] = unit_of[b->units[u].copy] = u;
    if (b->units[u].grad >= 0) unit_of[b->units[u].grad] = u;
  }
  int32_t *last = b_last_touch(b, unit_of, b->nunits);
  /* groups: contiguous runs of the flat order; each ready after the latest of its units */
  int ngroups = 0;
  int64_t *lo = malloc(sizeof(int64_t) * ((size_t)lay->norder + 1)), *hi = malloc(sizeof(int64_t) * ((size_t)lay->norder + 1));
  int32_t *ready = malloc(sizeof(int32_t) * ((size_t)lay->norder + 1));
  if (!lo || !hi || !ready) {
    free(unit_of), free(last), free(lo), free(hi), free(ready);
    return -1;
  }
  for (int j = 0; j < lay->norder; j++) {
    const ddp_unit *u = &b->units[lay->order[j]];
    if (ngroups == 0 || u->flat_offset + u->numel - lo[ngroups - 1] > GROUP_ELEMS) {
      lo[ngroups] = u->flat_offset;
      ready[ngroups] = -1;
      ngroups++;
    }
    hi[ngroups - 1] = j + 1 < lay->norder ? b->units[lay->order[j + 1]].flat_offset : lay->nflat;
    if (last[lay->order[j]] > ready[ngroups - 1]) ready[ngroups - 1] = last[lay->order[j]];
  }
  hi[ngroups - 1] = lay->nflat;
  const ddp_schedule *s = b->s;
  int ntail = s->update_priority == UPDATE_PRIORITY_LOW ? (int)(s->update_tail * ngroups + 0.5) : 0;
  if (ntail > ngroups) ntail = ngroups;
  if (ntail > 0 && b->plan->nstreams < STREAM_TAIL + 1) b->plan->nstreams = STREAM_TAIL + 1;

  rp_range(c, 1, RANGE_STEP, "step");
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_BEGIN);
  ddp_instr load = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  b_buf(b, &load, LOAD_BATCH_P_INPUTS, b->tokens);
  b_buf(b, &load, LOAD_BATCH_P_TARGETS, b->targets);
  pass_tp_load_batch(c, &load);
  rp_push(c, load, "load_batch");
  rp_order(c, STREAM_COMPUTE, STREAM_COMM); /* the side stream starts with this step */
  pass_opt_scalars(c, false);
  on_side(c);
  if (ntail > 0) rp_order(c, STREAM_COMM, STREAM_TAIL); /* the tail's updates read the scalars */
  for (uint32_t k = 0; k < b->step.n; k++) {
    ddp_instr in = b->step.v[k];
    if (in.opcode == I_TIMER) in.i[TIMER_I_SLOT] = c->ntimers++;
    pass_tp_apply(c, k, &in);
    rp_push(c, in, NULL);
    for (int g = 0; g < ngroups; g++) {
      if (ready[g] != (int32_t)k) continue;
      const int st = g >= ngroups - ntail ? STREAM_TAIL : STREAM_COMM;
      rp_order(c, STREAM_COMPUTE, st);
      update_on(c, st, lo[g], hi[g], b_fmt(b, "optimizer.group%d", g));
    }
  }
  for (int g = 0; g < ngroups; g++) /* groups the step never touches */
    if (ready[g] < 0) update_on(c, STREAM_COMM, lo[g], hi[g], b_fmt(b, "optimizer.group%d", g));
  rp_timer(c, STREAM_COMPUTE, TIMER_BACKWARD_END);
  rp_timer(c, STREAM_COMPUTE, TIMER_OPT_BEGIN);
  rp_order(c, STREAM_COMM, STREAM_COMPUTE);
  if (ntail > 0) rp_order(c, STREAM_TAIL, STREAM_COMPUTE);
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_END);
  rp_range(c, 0, RANGE_STEP, NULL);
  free(unit_of), free(last), free(lo), free(hi), free(ready);
  return 0;
}

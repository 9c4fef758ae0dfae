/* compiler/passes/optimizer.c: the optimizer phase of a rank's step: gradient norm for clipping
 * (SUMSQ, all-reduced across shards; per group slice under the ZeRO levels: zero.c), the per-step scalars (step count, scheduled lr, clip
 * scale), the fused AdamW/SGD update over flat ranges, and for sharded optimizers the exchange that
 * brings every rank the updated parameters. */
#include "passes.h"

/* scalars -> [SUMSQ(grads) [ALL_REDUCE(partials) when summed over a shard]] OPT_SCALARS */
void pass_opt_scalars(rank_ctx *c, bool sumsq_over_shard) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  if (lay->sumsq_partials >= 0 && lay->zero) {
    pass_zero_sumsq(c);
  } else if (lay->sumsq_partials >= 0 && b->tp > 1) {
    pass_tp_sumsq(c);
  } else if (lay->sumsq_partials >= 0) {
    int64_t lo = sumsq_over_shard ? lay->own_lo[c->rank] : 0;
    int64_t hi = sumsq_over_shard ? lay->own_hi[c->rank] : lay->nflat;
    ddp_instr in = b_kernel(OP_SUMSQ);
    b_arg(&in, SUMSQ_P_X, lay->flat_grads, (uint64_t)lo * ddp_dtype_size(b->grad_dt), b->grad_dt);
    b_buf(b, &in, SUMSQ_P_PART, lay->sumsq_partials);
    in.i[SUMSQ_I_N] = hi - lo;
    in.i[SUMSQ_I_P] = lay->sumsq_p;
    rp_push(c, in, "grad_norm.sumsq");
    if (sumsq_over_shard && lay->world > 1)
      rp_collective(c, I_ALL_REDUCE, STREAM_COMPUTE, lay->sumsq_partials, 0, lay->sumsq_p, REDOP_SUM, 0,
                    "grad_norm.all_reduce");
  }
  pass_scalars(c);
}

/* scalars -> OPT_SCALARS (step count, scheduled lr, clip scale from the partials when clipping) */
void pass_scalars(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_schedule *s = b->s;
  ddp_instr in = b_kernel(OP_OPT_SCALARS);
  b_buf(b, &in, OPT_SCALARS_P_PART, lay->sumsq_partials);
  b_buf(b, &in, OPT_SCALARS_P_SCALARS, b->scalars);
  in.i[OPT_SCALARS_I_P] = lay->sumsq_partials >= 0 ? lay->sumsq_p : 0;
  in.i[OPT_SCALARS_I_SCHEDULE] = s->lr_schedule;
  in.i[OPT_SCALARS_I_WARMUP] = s->lr_warmup;
  in.i[OPT_SCALARS_I_CYCLE] = s->lr_cycle;
  in.i[OPT_SCALARS_I_CLIP] = s->clip_norm > 0;
  in.f[OPT_SCALARS_F_LR_MAX] = (float)s->lr;
  in.f[OPT_SCALARS_F_LR_MIN] = (float)s->lr_min;
  in.f[OPT_SCALARS_F_MAX_NORM] = (float)s->clip_norm;
  rp_push(c, in, "optimizer.scalars");
}

/* update -> ADAMW | SGD of u->n elements, each operand a tensor and an element offset (no copy: copy < 0) */
void pass_update_at(rank_ctx *c, const pass_upd *u, const char *name) {
  ddp_builder *b = c->b;
  const ddp_schedule *s = b->s;
  if (u->n <= 0) return;
  uint64_t fsz = ddp_dtype_size(b->fdt), gsz = ddp_dtype_size(b->grad_dt), csz = ddp_dtype_size(b->act_dt);
  bool adamw = s->optimizer == OPTIM_ADAMW;
  ddp_instr in = b_kernel(adamw ? OP_ADAMW : OP_SGD);
  in.stream = (uint16_t)u->stream;
  b_arg(&in, adamw ? ADAMW_P_PARAM : SGD_P_PARAM, u->param, (uint64_t)u->param_at * fsz, b->fdt);
  b_arg(&in, adamw ? ADAMW_P_GRAD : SGD_P_GRAD, u->grad, (uint64_t)u->grad_at * gsz, b->grad_dt);
  if (u->copy >= 0) b_arg(&in, adamw ? ADAMW_P_COPY : SGD_P_COPY, u->copy, (uint64_t)u->copy_at * csz, b->act_dt);
  b_buf(b, &in, adamw ? ADAMW_P_SCALARS : SGD_P_SCALARS, b->scalars);
  if (adamw) {
    b_arg(&in, ADAMW_P_M, u->m, (uint64_t)u->state_at * fsz, b->fdt);
    b_arg(&in, ADAMW_P_V, u->v, (uint64_t)u->state_at * fsz, b->fdt);
    in.i[ADAMW_I_N] = u->n;
    in.f[ADAMW_F_B1] = (float)s->beta1;
    in.f[ADAMW_F_B2] = (float)s->beta2;
    in.f[ADAMW_F_EPS] = (float)s->eps;
    in.f[ADAMW_F_WD] = (float)s->weight_decay;
  } else {
    in.i[SGD_I_N] = u->n;
  }
  rp_push(c, in, name);
}

/* update -> ADAMW | SGD over flat elements [lo, hi) (nothing when empty); state indexed from state_base */
void pass_update(rank_ctx *c, int64_t lo, int64_t hi, int64_t state_base, bool write_copy, const char *name) {
  ddp_layout *lay = c->lay;
  pass_upd u = {.n = hi - lo, .param = lay->flat_params, .param_at = lo, .grad = lay->flat_grads, .grad_at = lo,
                .m = lay->flat_m, .v = lay->flat_v, .state_at = lo - state_base,
                .copy = write_copy ? lay->flat_copies : -1, .copy_at = lo};
  pass_update_at(c, &u, name);
}

/* exchange -> order(compute, comm) BROADCAST(owner's range)* order(comm, compute) [CAST(copy)]
 * After the owner-broadcast sharded optimizer's updates: every rank gets every updated parameter, then the GEMM copies are rewritten. */
void pass_exchange_params(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  rp_order(c, STREAM_COMPUTE, STREAM_COMM);
  for (int q = 0; q < lay->world; q++) {
    if (lay->own_hi[q] > lay->own_lo[q])
      rp_collective(c, I_BROADCAST, STREAM_COMM, lay->flat_params, lay->own_lo[q], lay->own_hi[q] - lay->own_lo[q],
                    REDOP_SUM, q, b_fmt(c->b, "shard.broadcast.rank%d", q));
  }
  rp_order(c, STREAM_COMM, STREAM_COMPUTE);
  if (lay->flat_copies >= 0) {
    ddp_instr in = b_kernel(OP_CAST);
    b_buf(b, &in, CAST_P_IN, lay->flat_params);
    b_buf(b, &in, CAST_P_OUT, lay->flat_copies);
    in.i[CAST_I_N] = lay->nflat;
    rp_push(c, in, "params.copy");
  }
}

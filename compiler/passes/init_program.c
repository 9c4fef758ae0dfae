/* compiler/passes/init_program.c: a rank's init program: zero the flat tensors and optimizer state,
 * initialise every parameter unit (seeded per rank unless the schedule asks for identical init), the RoPE
 * frequency table, broadcast the parameters from rank 0 when the schedule asks, and write the GEMM
 * copies. A forward plan (mode "forward") has no collectives: there every rank initialises as rank 0
 * does unless the schedule turns the broadcast off, which gives the broadcast's result without it. */
#include "passes.h"

void pass_memset(rank_ctx *c, int32_t t) {
  if (t < 0) return;
  ddp_instr in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
  b_arg(&in, MEMSET_P_DST, t, 0, b_t(c->b, t)->dtype);
  in.i[MEMSET_I_BYTES] = (int64_t)b_t(c->b, t)->bytes;
  rp_push(c, in, b_t(c->b, t)->name);
}

void pass_cast(rank_ctx *c, int32_t from, int32_t to, int64_t n, const char *name) {
  ddp_instr in = b_kernel(OP_CAST);
  b_buf(c->b, &in, CAST_P_IN, from);
  b_buf(c->b, &in, CAST_P_OUT, to);
  in.i[CAST_I_N] = n;
  rp_push(c, in, name);
}

/* INIT_TENSOR of unit u's elements [first, first + count) into tensor t at byte offset `at` */
void pass_init_unit(rank_ctx *c, int u, int32_t t, uint64_t at, int64_t first, int64_t count, int salt) {
  pass_init_unit_runs(c, u, t, at, first, count, salt, 0, 0);
}

void pass_init_unit_runs(rank_ctx *c, int u, int32_t t, uint64_t at, int64_t first, int64_t count, int salt, int64_t run,
                         int64_t stride) {
  const ddp_unit *un = &c->b->units[u];
  ddp_instr in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
  b_arg(&in, INIT_TENSOR_P_TENSOR, t, at, c->b->fdt);
  in.i[INIT_TENSOR_I_KIND] = un->init_kind;
  in.i[INIT_TENSOR_I_ELEMENTS] = count;
  in.i[INIT_TENSOR_I_STREAM] = u;
  in.i[INIT_TENSOR_I_FAN_IN] = un->fan_in;
  in.i[INIT_TENSOR_I_SALT] = salt;
  in.i[INIT_TENSOR_I_FIRST] = first;
  in.i[INIT_TENSOR_I_RUN] = run;
  in.i[INIT_TENSOR_I_STRIDE] = stride;
  in.f[INIT_TENSOR_F_A] = un->init_a;
  in.f[INIT_TENSOR_F_B] = un->init_b;
  rp_push(c, in, un->name);
}

/* INIT_TENSOR of the RoPE frequency table, when the model has one */
void pass_init_rope(rank_ctx *c) {
  ddp_builder *b = c->b;
  const ddp_schedule *s = b->s;
  if (b->rope_freq < 0) return;
  ddp_instr in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
  b_buf(b, &in, INIT_TENSOR_P_TENSOR, b->rope_freq);
  in.i[INIT_TENSOR_I_KIND] = INIT_ROPE_INV_FREQ;
  in.i[INIT_TENSOR_I_ELEMENTS] = (int64_t)ddp_tensor_numel(b_t(b, b->rope_freq));
  in.i[INIT_TENSOR_I_FAN_IN] = s->d_model / s->heads;
  in.f[INIT_TENSOR_F_A] = (float)s->rope_theta;
  rp_push(c, in, "rope.inv_freq");
}

/* Tensor parallelism: unit u's elements [lo, hi) (this tensor rank's local order) into `dst` from element
 * dst_at (the one holding element lo), each parameter's part drawing the values the whole model's unit holds
 * there (its segments: ddp_tp_segments). */
static void init_range_tp(rank_ctx *c, int u, int64_t lo, int64_t hi, int32_t dst, int64_t dst_at, int salt) {
  ddp_builder *b = c->b;
  uint64_t fsz = ddp_dtype_size(b->fdt);
  for (int p = 0; p < b->nparams; p++) {
    const ddp_model_param *pp = &b->params[p];
    if (pp->unit != u) continue;
    int64_t plo = pp->unit_offset, a = lo > plo ? lo : plo, e = hi < plo + pp->numel ? hi : plo + pp->numel;
    ddp_tp_seg seg[3];
    int ns = ddp_tp_segments(pp, b->tp, c->tp, a - plo, e - plo, seg);
    for (int q = 0; q < ns; q++)
      pass_init_unit_runs(c, u, dst, (uint64_t)(dst_at + plo + seg[q].at - lo) * fsz, pp->full_unit_offset + seg[q].first,
                          seg[q].n, salt, seg[q].runs > 1 ? seg[q].n / seg[q].runs : 0, seg[q].runs > 1 ? seg[q].stride : 0);
  }
}

/* ZeRO levels: each rank draws the values of its own slices (the values rank 0 would draw for the whole
 * unit, so no broadcast is needed). */
static void init_shards(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  uint64_t fsz = ddp_dtype_size(b->fdt);
  for (int g = 0; g < lay->ngroups; g++) {
    const ddp_shard_group *sg = &lay->groups[g];
    int64_t per = sg->len / lay->world, slo = sg->lo + c->rank * per, shi = slo + per;
    for (int j = sg->first; j <= sg->last; j++) {
      const ddp_unit *un = &b->units[lay->order[j]];
      int64_t lo, hi;
      if (!ddp_unit_in_slice(un, slo, shi, &lo, &hi)) continue;
      if (un->tp_split && b->tp > 1)
        init_range_tp(c, lay->order[j], lo - un->flat_offset, hi - un->flat_offset, lay->shard_master,
                      sg->lo / lay->world + lo - slo, 0);
      else
        pass_init_unit(c, lay->order[j], lay->shard_master, (uint64_t)(sg->lo / lay->world + lo - slo) * fsz,
                  lo - un->flat_offset, hi - lo, 0);
    }
  }
}

/* ZeRO levels: the compute copies of the masters: zero3 the copy shard, zero1/2 the full parameters of
 * every group (cast of its slice, all-gather). */
static void shard_copies(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  uint64_t fsz = ddp_dtype_size(b->fdt);
  if (lay->shard_copy >= 0) pass_cast(c, lay->shard_master, lay->shard_copy, lay->nflat / lay->world, "params.copy.shard");
  if (b->s->shard == SHARD_ZERO3) return;
  for (int g = 0; g < lay->ngroups; g++) {
    const ddp_shard_group *sg = &lay->groups[g];
    int64_t per = sg->len / lay->world;
    if (sg->dtype != b->fdt) {
      ddp_instr in = b_kernel(OP_CAST);
      b_arg(&in, CAST_P_IN, lay->shard_master, (uint64_t)(sg->lo / lay->world) * fsz, b->fdt);
      b_arg(&in, CAST_P_OUT, sg->params, (uint64_t)(c->rank * per) * ddp_dtype_size(sg->dtype), sg->dtype);
      in.i[CAST_I_N] = per;
      rp_push(c, in, b_fmt(b, "group%d.params.slice", g));
    }
    pass_zero_gather_params(c, STREAM_COMPUTE, g, b_fmt(b, "zero.all_gather.bucket%d", g));
  }
}

/* Tensor parallelism: unit u's parameters as this tensor rank holds them, each drawing the values the whole
 * model's unit holds there (rows: one range; columns: a run per row), so that any tensor size starts from
 * one rank's weights. */
void pass_init_unit_tp(rank_ctx *c, int u, int salt) {
  init_range_tp(c, u, 0, c->b->units[u].numel, c->b->units[u].master, 0, salt);
}

/* init -> MEMSET(flat params, grads, m, v, scalars, loss) INIT_TENSOR(unit or its slices)* [INIT_TENSOR(rope)]
 *         [BROADCAST(flat params) BROADCAST(frozen unit)*] | refresh: [CAST(params.copy) | shard copies]
 *         CAST(frozen unit copy)*
 * Under the ZeRO levels the refresh part (from rank.init_refresh) is what --resume runs again. */
void pass_init_program(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_schedule *s = b->s;
  pass_memset(c, lay->flat_params);
  pass_memset(c, lay->flat_grads);
  pass_memset(c, lay->shard_grads);
  pass_memset(c, lay->flat_m);
  pass_memset(c, lay->flat_v);
  pass_memset(c, b->scalars);
  pass_memset(c, b->loss);
  bool no_comm = s->mode == MODE_FORWARD;
  int salt = (s->identical_init || c->rank == 0 || (no_comm && s->broadcast_init)) ? 0 : c->rank;
  for (int u = 0; u < b->nunits; u++)
    if (lay->zero && b->units[u].trainable) continue; /* init_shards: each rank's slices */
    else if (b->units[u].tp_split && b->tp > 1) pass_init_unit_tp(c, u, salt);
    else pass_init_unit(c, u, b->units[u].master, 0, 0, b->units[u].numel, salt);
  pass_init_rope(c);
  if (lay->zero) init_shards(c);
  if (lay->world > 1 && s->broadcast_init && !no_comm) {
    if (!lay->zero)
      rp_collective(c, I_BROADCAST, STREAM_COMPUTE, lay->flat_params, 0, lay->nflat, REDOP_SUM, 0, "broadcast.params");
    for (int u = 0; u < b->nunits; u++)
      if (!b->units[u].trainable)
        rp_collective(c, I_BROADCAST, STREAM_COMPUTE, b->units[u].master, 0, b->units[u].numel, REDOP_SUM, 0,
                      b->units[u].name);
  }
  if (lay->zero) c->b->plan->ranks[c->world_rank].init_refresh = c->out->n;
  if (lay->zero) shard_copies(c);
  if (lay->flat_copies >= 0) pass_cast(c, lay->flat_params, lay->flat_copies, lay->nflat, "params.copy");
  for (int u = 0; u < b->nunits; u++) {
    const ddp_unit *un = &b->units[u];
    if (!un->trainable && un->copy != un->master) pass_cast(c, un->master, un->copy, un->numel, un->name);
  }
}

/* compiler/passes/zero.c: a rank's step program under the ZeRO levels (layout: compiler/layout/shard.c).
 *   zero1  full gradients kept; each group's gradients reduce-scattered into the rank's gradient shard
 *          as soon as the backward finishes them; each slice updated as soon as its reduce-scatter is
 *          done; the group's parameters all-gathered right after its update (overlapping the later
 *          groups' updates)
 *   zero2  the same with each group's full gradients a short-lived activation (bucket<g>.grads): it is
 *          free once its reduce-scatter has run, and the compute stream waits for that two groups later
 *          so the memory planner can reuse it
 *   zero3  parameters exist only as shards: each group is all-gathered into unit<g>.gathered before its
 *          first use, prefetch_forward / prefetch_backward groups ahead, on the communication stream; with
 *          reshard_after_forward the backward gathers again into unit<g>.gathered.bwd (except a group
 *          used last in the forward and first in the backward, kept); no all-gather after the update
 * With optimizer_overlap (no clipping) a group's update leaves the optimizer phase: it runs on a third
 * stream, the update stream, during the backward, once the group's reduce-scatter has landed and the
 * backward has touched the group's gradients and parameters for the last time; the step's scalars run first
 * on that stream. The group's all-gather (zero1/2) is queued on the communication stream behind the
 * update's event just before the next reduce-scatter (or at the backward's end), so no reduce-scatter
 * waits behind an update. The compute stream waits for both streams at the end of the step, so the next
 * forward reads updated parameters.
 * With param_gather = "before_forward" (zero1/2) the all-gathers leave the backward altogether: they run at
 * the start of the next step, in the order of first use, under the forward (gather_before_forward).
 * Collectives run on the communication stream after an event from compute; compute waits for an
 * event after each collective it depends on; every dependence is proven by the verifier. */
#include "passes.h"
#include "access.h"
#include <stdlib.h>
#include <string.h>

enum { STREAM_UPDATE = DDP_DEFAULT_STREAMS }; /* optimizer_overlap: the shard updates' own stream */

typedef struct zgroup {
  int32_t fwd_first, fwd_last, bwd_first, bwd_last; /* uses of its parameters (zero3: gathered), -1: none */
  int32_t grad_first, grad_last;                     /* writes of the gradients, -1: none */
  int32_t ready;   /* the last instruction touching the group's gradients or parameters, -1: none */
  bool updated;    /* optimizer_overlap: updated during the backward */
  bool split;                                        /* zero3: the backward uses its own gather */
  uint32_t ev_rs;                                    /* event after the reduce-scatter */
  uint32_t ev_ag;  /* param_gather before_forward: event after the step-start all-gather (when has_ag) */
  bool has_ag;
  uint32_t ev_upd;     /* optimizer_overlap: event after the update on the update stream */
  bool gather_pending; /* ... whose all-gather is still to be queued on the communication stream */
  bool rs_done;
} zgroup;

typedef struct gather_item { /* zero3: one all-gather of group g into `tensor`, first used at `first` */
  int g;
  int32_t tensor;
  int32_t first;
  uint32_t event;
} gather_item;

typedef struct zctx {
  rank_ctx *c;
  ddp_builder *b;
  ddp_layout *lay;
  int W;
  uint32_t n, fe; /* builder step length, index of the forward's end (n when none) */
  zgroup *g;
  int32_t *param_group; /* tensor root -> group whose gathered parameters it is (zero3) */
  int32_t *view_group;  /* zero1/2: a group's persistent parameter view -> the group */
  int32_t *grad_group;  /* unit gradient tensor -> group */
  uint8_t *grad_written; /* unit gradient tensor -> some instruction of the step writes it */
  gather_item *items;
  int nitems;
} zctx;

static void minmax(int32_t *lo, int32_t *hi, int32_t k) {
  if (*lo < 0 || k < *lo) *lo = k;
  if (k > *hi) *hi = k;
}

/* Uses of each group's parameters and writes of its gradients in the builder's step program. */
static void scan(zctx *z) {
  ddp_builder *b = z->b;
  ddp_layout *lay = z->lay;
  const ddp_plan *p = b->plan;
  z->param_group = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  z->grad_group = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  z->view_group = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  z->grad_written = ddp_xcalloc((size_t)p->ntensors + 1, 1);
  for (uint32_t t = 0; t < p->ntensors; t++) z->param_group[t] = z->grad_group[t] = z->view_group[t] = -1;
  for (int g = 0; g < lay->ngroups; g++) {
    z->g[g] = (zgroup){.fwd_first = -1, .fwd_last = -1, .bwd_first = -1, .bwd_last = -1, .grad_first = -1,
                       .grad_last = -1, .ready = -1};
    if (b->s->shard == SHARD_ZERO3) z->param_group[lay->groups[g].params] = g;
    else z->view_group[lay->groups[g].params] = g;
    for (int j = lay->groups[g].first; j <= lay->groups[g].last; j++)
      if (b->units[lay->order[j]].grad >= 0) z->grad_group[b->units[lay->order[j]].grad] = g;
  }
  z->fe = b_forward_end(b);
  for (uint32_t k = 0; k < z->n; k++) {
    const ddp_instr *in = &b->step.v[k];
    uint32_t wm = in->opcode == I_KERNEL ? ddp_op_write_mask(in->op) : in->opcode == I_GEMM ? 1u << 3 : 0;
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      int32_t t = in->p[s].tensor;
      if (t < 0) continue;
      int g = z->param_group[ddp_tensor_root(p, t)];
      if (g >= 0) {
        if (k < z->fe) minmax(&z->g[g].fwd_first, &z->g[g].fwd_last, (int32_t)k);
        else minmax(&z->g[g].bwd_first, &z->g[g].bwd_last, (int32_t)k);
        z->g[g].ready = (int32_t)k;
      }
      for (int32_t v = t; v >= 0; v = p->tensors[v].base) { /* a use of a zero1/2 view or of gradients */
        int h = z->view_group[v];
        if (h >= 0) {
          if (k < z->fe) minmax(&z->g[h].fwd_first, &z->g[h].fwd_last, (int32_t)k);
          else minmax(&z->g[h].bwd_first, &z->g[h].bwd_last, (int32_t)k);
        }
        if (h < 0) h = z->grad_group[v];
        if (h >= 0) {
          z->g[h].ready = (int32_t)k;
          break;
        }
      }
      if ((wm >> s) & 1u)
        for (; t >= 0; t = p->tensors[t].base)
          if (z->grad_group[t] >= 0) {
            z->grad_written[t] = 1;
            minmax(&z->g[z->grad_group[t]].grad_first, &z->g[z->grad_group[t]].grad_last, (int32_t)k);
            break;
          }
    }
  }
}

/* A group keeps its forward gather for the backward when it is not resharded, or when no other group is
 * used between its last forward and its first backward use (the head: freeing it would only gather it
 * again at once). */
static void decide_split(zctx *z) {
  for (int g = 0; g < z->lay->ngroups; g++) {
    zgroup *x = &z->g[g];
    x->split = false;
    if (z->lay->groups[g].params_bwd < 0 || x->fwd_first < 0 || x->bwd_first < 0) continue;
    for (int h = 0; h < z->lay->ngroups && !x->split; h++) {
      const zgroup *y = &z->g[h];
      x->split = h != g && (y->fwd_last > x->fwd_last || (y->bwd_first >= 0 && y->bwd_first < x->bwd_first));
    }
  }
}

static int by_first(const void *a, const void *b) {
  const gather_item *x = a, *y = b;
  return x->first != y->first ? (x->first < y->first ? -1 : 1) : x->g - y->g;
}

/* The gathers, each phase's items in order of first use. */
static void plan_gathers(zctx *z) {
  ddp_layout *lay = z->lay;
  z->items = ddp_xcalloc((size_t)lay->ngroups * 2 + 1, sizeof(gather_item));
  for (int g = 0; g < lay->ngroups; g++) {
    const zgroup *x = &z->g[g];
    int32_t first = x->fwd_first >= 0 ? x->fwd_first : x->bwd_first;
    if (first >= 0) z->items[z->nitems++] = (gather_item){g, lay->groups[g].params, first, 0};
    if (x->split) z->items[z->nitems++] = (gather_item){g, lay->groups[g].params_bwd, x->bwd_first, 0};
  }
  qsort(z->items, (size_t)z->nitems, sizeof(gather_item), by_first);
}

/* The instruction before which item j is gathered: the first use of the FSDP unit `depth` units before
 * its own in its phase (a unit's fp32 and compute-dtype parts are separate items of one unit). */
static int32_t issue_point(const zctx *z, int j) {
  bool bwd = z->items[j].first > (int32_t)z->fe;
  int depth = bwd ? z->b->s->prefetch_backward : z->b->s->prefetch_forward;
  int unit = z->lay->groups[z->items[j].g].unit, at = j;
  for (int i = j - 1; i >= 0 && (z->items[i].first > (int32_t)z->fe) == bwd; i--) {
    int u = z->lay->groups[z->items[i].g].unit;
    if (u != unit) {
      if (depth == 0) break;
      depth--;
      unit = u;
    }
    at = i;
  }
  /* at is the earliest item of the unit `depth` back (or of the phase's first unit); its unit's first use */
  return z->items[at].first;
}

/* collective over (send tensor + elements, recv tensor + elements), bracketed by timers */
static void coll(zctx *z, int opcode, int32_t send, int64_t send_at, int32_t recv, int64_t recv_at, int64_t count,
                 const char *name) {
  rank_ctx *c = z->c;
  const ddp_tensor *st = b_t(z->b, send);
  int dt = st->dtype;
  uint64_t es = ddp_dtype_size(dt);
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMM);
  b_arg(&in, COLL_P_SEND, send, (uint64_t)send_at * es, dt);
  b_arg(&in, COLL_P_RECV, recv, (uint64_t)recv_at * es, dt);
  in.i[COLL_I_COUNT] = count;
  in.i[COLL_I_REDOP] = REDOP_AVG;
  in.i[COLL_I_COMM] = c->comm; /* the data axis (the world without tensor parallelism) */
  rp_timer(c, STREAM_COMM, TIMER_COMM_BEGIN);
  rp_push(c, in, name);
  rp_timer(c, STREAM_COMM, TIMER_COMM_END);
}

/* gather -> ALL_GATHER(shard -> unit<g>.gathered) | ALL_GATHER(master shard -> fp32 buffer) CAST, then an
 * event for the compute stream */
static void gather(zctx *z, gather_item *it) {
  const ddp_shard_group *sg = &z->lay->groups[it->g];
  int64_t per = sg->len / z->W;
  bool bwd = it->tensor == sg->params_bwd && sg->params_bwd != sg->params;
  int32_t f32 = bwd ? sg->gather32_bwd : sg->gather32;
  int32_t src = sg->dtype == z->b->fdt || f32 >= 0 ? z->lay->shard_master : z->lay->shard_copy;
  const char *name = b_fmt(z->b, "fsdp.all_gather.unit%d%s", it->g, bwd ? ".bwd" : "");
  coll(z, I_ALL_GATHER, src, sg->lo / z->W, f32 >= 0 ? f32 : it->tensor, 0, per, name);
  if (f32 >= 0) {
    ddp_instr in = b_kernel(OP_CAST);
    in.stream = STREAM_COMM;
    b_buf(z->b, &in, CAST_P_IN, f32);
    b_buf(z->b, &in, CAST_P_OUT, it->tensor);
    in.i[CAST_I_N] = sg->len;
    rp_push(z->c, in, b_fmt(z->b, "fsdp.cast.unit%d%s", it->g, bwd ? ".bwd" : ""));
  }
  it->event = rp_record(z->c, STREAM_COMM);
}

/* MEMSETs of the parts of a group's gradient buffer no instruction writes (alignment gaps, the padding,
 * the gradients of units the step never reaches). */
static void zero_gaps(zctx *z, int g) {
  const ddp_shard_group *sg = &z->lay->groups[g];
  uint64_t gsz = ddp_dtype_size(z->b->grad_dt);
  int64_t at = 0;
  for (int j = sg->first; j <= sg->last + 1; j++) {
    if (j <= sg->last && !z->grad_written[z->b->units[z->lay->order[j]].grad]) continue;
    int64_t next = j <= sg->last ? z->b->units[z->lay->order[j]].flat_offset - sg->lo : sg->len;
    if (next > at) {
      ddp_instr in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
      b_arg(&in, MEMSET_P_DST, sg->grads, (uint64_t)at * gsz, z->b->grad_dt);
      in.i[MEMSET_I_BYTES] = (int64_t)((uint64_t)(next - at) * gsz);
      rp_push(z->c, in, b_fmt(z->b, "bucket%d.grads.padding", g));
    }
    if (j <= sg->last) at = next + z->b->units[z->lay->order[j]].numel;
  }
}

/* Where the rank's reduced gradients of group g are: the gradient shard (zero2/3), or its own slice of the
 * full gradients (zero1, reduced in place). */
static void grad_slice(const ddp_layout *lay, int rank, int g, int32_t *t, int64_t *at) {
  const ddp_shard_group *sg = &lay->groups[g];
  *t = lay->shard_grads >= 0 ? lay->shard_grads : lay->flat_grads;
  *at = lay->shard_grads >= 0 ? sg->lo / lay->world : sg->lo + rank * (sg->len / lay->world);
}

/* nccl.reduce_scatter = "alltoall": chunk q of the group goes to rank q (ALL_TO_ALL into zero.received, data
 * movement only), then SUM_CHUNKS averages the W chunks received into the rank's slice; both between one
 * pair of communication timers, so the step's comm time includes the sum. */
static void reduce_scatter_alltoall(zctx *z, int g, int32_t send, int64_t send_at, int32_t recv, int64_t recv_at) {
  rank_ctx *c = z->c;
  rp_timer(c, STREAM_COMM, TIMER_COMM_BEGIN);
  rp_alltoall_sum(c, send, send_at, z->lay->a2a_received, recv, recv_at, z->lay->groups[g].len / z->W, z->W,
                  b_fmt(z->b, "zero.all_to_all.bucket%d", g), b_fmt(z->b, "zero.sum_chunks.bucket%d", g));
  rp_timer(c, STREAM_COMM, TIMER_COMM_END);
}

static void reduce_scatter(zctx *z, int g) {
  const ddp_shard_group *sg = &z->lay->groups[g];
  int32_t send = sg->grads >= 0 ? sg->grads : z->lay->flat_grads, recv;
  int64_t send_at = sg->grads >= 0 ? 0 : sg->lo, recv_at;
  grad_slice(z->lay, z->c->rank, g, &recv, &recv_at);
  if (z->lay->a2a_received >= 0)
    reduce_scatter_alltoall(z, g, send, send_at, recv, recv_at);
  else
    coll(z, I_REDUCE_SCATTER, send, send_at, recv, recv_at, sg->len / z->W,
         b_fmt(z->b, "zero.reduce_scatter.bucket%d", g));
  z->g[g].ev_rs = rp_record(z->c, STREAM_COMM);
  z->g[g].rs_done = true;
}

/* The backward instruction k reads group g's backward gather: its buffers move there, same bytes. */
static void retarget(zctx *z, ddp_instr *in) {
  const ddp_plan *p = z->b->plan;
  for (int s = 0; s < DDP_MAX_PTRS; s++) {
    int32_t t = in->p[s].tensor;
    if (t < 0) continue;
    int g = z->param_group[ddp_tensor_root(p, t)];
    if (g < 0 || !z->g[g].split) continue;
    uint64_t off = in->p[s].view;
    for (; p->tensors[t].base >= 0; t = p->tensors[t].base) off += p->tensors[t].view;
    in->p[s].tensor = z->lay->groups[g].params_bwd;
    in->p[s].view = off;
  }
}

/* update of group g's slice on `stream` -> ADAMW | SGD (master shard, gradient shard, moments, compute copy) */
static void update(zctx *z, int g, int stream) {
  ddp_builder *b = z->b;
  ddp_layout *lay = z->lay;
  const ddp_schedule *s = b->s;
  const ddp_shard_group *sg = &lay->groups[g];
  int64_t per = sg->len / z->W, at = sg->lo / z->W;
  pass_upd u = {.n = per, .param = lay->shard_master, .param_at = at, .m = lay->flat_m, .v = lay->flat_v,
                .state_at = at, .copy = -1, .stream = stream};
  grad_slice(lay, z->c->rank, g, &u.grad, &u.grad_at);
  if (sg->dtype != b->fdt && (s->shard != SHARD_ZERO3 || lay->shard_copy >= 0)) {
    /* the compute copy of the slice: in place (zero1/2) or the copy shard (zero3 with compute-dtype gathers) */
    u.copy = s->shard == SHARD_ZERO3 ? lay->shard_copy : sg->params;
    u.copy_at = s->shard == SHARD_ZERO3 ? at : z->c->rank * per;
  }
  pass_update_at(z->c, &u, b_fmt(b, "optimizer.bucket%d", g));
}

/* zero1/2: every rank gets group g's updated parameters: in place from the slices the update wrote, or
 * from the master shard when the compute dtype is the masters' */
void pass_zero_gather_params(rank_ctx *c, int stream, int g, const char *name) {
  ddp_layout *lay = c->lay;
  const ddp_shard_group *sg = &lay->groups[g];
  int64_t per = sg->len / lay->world;
  const ddp_tensor *pt = b_t(c->b, sg->params);
  uint64_t es = ddp_dtype_size(pt->dtype);
  bool in_place = sg->dtype != c->b->fdt;
  int32_t send = in_place ? sg->params : lay->shard_master;
  uint64_t send_at = in_place ? (uint64_t)(c->rank * per) * es : (uint64_t)(sg->lo / lay->world) * es;
  ddp_instr in = ddp_instr_blank(I_ALL_GATHER, (uint16_t)stream);
  b_arg(&in, COLL_P_SEND, send, send_at, pt->dtype);
  b_arg(&in, COLL_P_RECV, sg->params, 0, pt->dtype);
  in.i[COLL_I_COUNT] = per;
  in.i[COLL_I_REDOP] = REDOP_SUM;
  in.i[COLL_I_COMM] = c->comm;
  rp_timer(c, in.stream, TIMER_COMM_BEGIN);
  rp_push(c, in, name);
  rp_timer(c, in.stream, TIMER_COMM_END);
}

/* Tensor parallelism: per group, one table per run of split or whole units inside the rank's slice (the
 * group's tp_slice_tables, the unused ones zeroed); tensor ranks other than 0 zero the whole units' tables;
 * the tables are then summed over the data ranks and over the tensor group. */
static void zero_sumsq_tp(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  int K = lay->tp_slice_tables;
  int64_t *lo = ddp_xcalloc((size_t)K + 1, sizeof(int64_t)), *hi = ddp_xcalloc((size_t)K + 1, sizeof(int64_t));
  bool *split = ddp_xcalloc((size_t)K + 1, sizeof(bool));
  for (int g = 0; g < lay->ngroups; g++) {
    int32_t grad;
    int64_t at, slo = lay->groups[g].lo + c->rank * (lay->groups[g].len / lay->world);
    grad_slice(lay, c->rank, g, &grad, &at);
    int n = ddp_layout_tp_slice_runs(b, lay, g, c->rank, lo, hi, split);
    for (int k = 0; k < K; k++)
      pass_tp_sumsq_table(c, g * K + k, grad, k < n ? at + lo[k] - slo : 0, k < n ? hi[k] - lo[k] : 0,
                          k < n ? split[k] : -1, b_fmt(b, "bucket%d.run%d", g, k));
  }
  free(lo), free(hi), free(split);
  if (lay->world > 1)
    rp_collective(c, I_ALL_REDUCE, STREAM_COMPUTE, lay->sumsq_partials, 0, lay->sumsq_p, REDOP_SUM, 0,
                  "grad_norm.all_reduce");
  pass_tp_reduce_partials(c);
}

/* sumsq -> SUMSQ(group g's gradient slice -> partials table g)* [ALL_REDUCE(partials)] */
void pass_zero_sumsq(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  if (b->tp > 1) {
    zero_sumsq_tp(c);
    return;
  }
  for (int g = 0; g < lay->ngroups; g++) {
    int32_t grad;
    int64_t at;
    grad_slice(lay, c->rank, g, &grad, &at);
    ddp_instr in = b_kernel(OP_SUMSQ);
    b_arg(&in, SUMSQ_P_X, grad, (uint64_t)at * ddp_dtype_size(b->grad_dt), b->grad_dt);
    b_arg(&in, SUMSQ_P_PART, lay->sumsq_partials, (uint64_t)g * DDP_SUMSQ_PARTS * ddp_dtype_size(b->fdt), b->fdt);
    in.i[SUMSQ_I_N] = lay->groups[g].len / lay->world;
    in.i[SUMSQ_I_P] = DDP_SUMSQ_PARTS;
    rp_push(c, in, b_fmt(b, "grad_norm.sumsq.bucket%d", g));
  }
  if (lay->world > 1)
    rp_collective(c, I_ALL_REDUCE, STREAM_COMPUTE, lay->sumsq_partials, 0, lay->sumsq_p, REDOP_SUM, 0,
                  "grad_norm.all_reduce");
}

static int32_t first_use(const zgroup *x) { return x->fwd_first >= 0 ? x->fwd_first : x->bwd_first; }

/* param_gather = "before_forward" (zero1/2): at the step's start, after everything before it on compute (the
 * last step's backward read these parameters), every group's all-gather in the order of first use, each
 * followed by an event its first use waits for. A group then reaches the other ranks one step after its
 * update; the masters (and so checkpoints) are current. Groups the step never uses are gathered last. */
static void gather_before_forward(zctx *z) {
  rank_ctx *c = z->c;
  int n = z->lay->ngroups;
  rp_order(c, STREAM_COMPUTE, STREAM_COMM);
  bool *done = ddp_xcalloc((size_t)n + 1, sizeof(bool));
  for (int i = 0; i < n; i++) {
    int best = -1;
    for (int g = 0; g < n; g++) {
      if (done[g]) continue;
      int32_t u = first_use(&z->g[g]), b = best < 0 ? 0 : first_use(&z->g[best]);
      if (best < 0 || (u >= 0 && (b < 0 || u < b))) best = g;
    }
    done[best] = true;
    pass_zero_gather_params(c, STREAM_COMM, best, b_fmt(z->b, "zero.all_gather.bucket%d", best));
    z->g[best].has_ag = first_use(&z->g[best]) >= 0;
    if (z->g[best].has_ag) z->g[best].ev_ag = rp_record(c, STREAM_COMM);
  }
  free(done);
}

/* group g's update on the compute stream after the backward, then (zero1/2, unless gathered before the next
 * forward) its all-gather on the communication stream */
static void update_and_gather(zctx *z, int g) {
  rank_ctx *c = z->c;
  update(z, g, STREAM_COMPUTE);
  if (z->b->s->shard != SHARD_ZERO3 && !z->b->s->gather_before_forward) {
    rp_order(c, STREAM_COMPUTE, STREAM_COMM);
    pass_zero_gather_params(c, STREAM_COMM, g, b_fmt(z->b, "zero.all_gather.bucket%d", g));
  }
  z->g[g].updated = true;
}

/* optimizer_overlap, zero1/2: the all-gathers of the groups updated since the last call, each after its
 * update's event, queued on the communication stream (before the next reduce-scatter, so that a
 * reduce-scatter never waits behind an update) */
static void flush_gathers(zctx *z) {
  for (int g = 0; g < z->lay->ngroups; g++) {
    if (!z->g[g].gather_pending) continue;
    rp_wait(z->c, STREAM_COMM, z->g[g].ev_upd);
    pass_zero_gather_params(z->c, STREAM_COMM, g, b_fmt(z->b, "zero.all_gather.bucket%d", g));
    z->g[g].gather_pending = false;
  }
}

/* optimizer_overlap: the groups the backward is done with after instruction k, each updated on the update
 * stream once its reduce-scatter is done; their all-gathers wait in flush_gathers */
static void update_ready(zctx *z, uint32_t k) {
  rank_ctx *c = z->c;
  bool ordered = false, gathers = z->b->s->shard != SHARD_ZERO3 && !z->b->s->gather_before_forward;
  for (int g = 0; g < z->lay->ngroups; g++) {
    if (z->g[g].ready != (int32_t)k || !z->g[g].rs_done || z->g[g].updated) continue;
    if (!ordered) rp_order(c, STREAM_COMPUTE, STREAM_UPDATE);
    ordered = true;
    rp_wait(c, STREAM_UPDATE, z->g[g].ev_rs);
    update(z, g, STREAM_UPDATE);
    z->g[g].updated = true;
    if (gathers) {
      z->g[g].ev_upd = rp_record(c, STREAM_UPDATE);
      z->g[g].gather_pending = true;
    }
  }
}

static void optimizer(zctx *z, bool overlapped) {
  rank_ctx *c = z->c;
  ddp_layout *lay = z->lay;
  rp_range(c, 1, RANGE_OPTIMIZER, "optimizer");
  bool clip = lay->sumsq_partials >= 0;
  if (overlapped) { /* the last groups' all-gathers; the scalars and the updates ran on the update stream */
    flush_gathers(z);
    rp_order(c, STREAM_UPDATE, STREAM_COMPUTE);
  }
  /* the norm needs every reduced gradient */
  if (clip || overlapped) rp_order(c, STREAM_COMM, STREAM_COMPUTE);
  rp_timer(c, STREAM_COMPUTE, TIMER_OPT_BEGIN);
  if (!overlapped) pass_opt_scalars(c, true);
  for (int g = 0; g < lay->ngroups; g++) {
    if (z->g[g].updated) continue;
    if (!clip && !overlapped && z->g[g].rs_done) rp_wait(c, STREAM_COMPUTE, z->g[g].ev_rs);
    update_and_gather(z, g);
  }
  rp_range(c, 0, RANGE_OPTIMIZER, NULL);
}

int pass_zero_step(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_schedule *s = b->s;
  zctx z = {.c = c, .b = b, .lay = lay, .W = lay->world, .n = b->step.n};
  z.g = ddp_xcalloc((size_t)lay->ngroups + 1, sizeof(zgroup));
  scan(&z);
  bool zero3 = s->shard == SHARD_ZERO3, grads = b->backward, train = s->mode == MODE_TRAIN;
  if (zero3) {
    decide_split(&z);
    plan_gathers(&z);
  }
  /* per instruction: gathers issued before it, reduce-scatters after it (by group index order) */
  int32_t *issue_at = ddp_xmalloc(sizeof(int32_t) * ((size_t)z.nitems + 1));
  for (int j = 0; j < z.nitems; j++) issue_at[j] = issue_point(&z, j);
  int *grad_order = ddp_xmalloc(sizeof(int) * ((size_t)lay->ngroups + 1)), ngo = 0;
  for (uint32_t k = 0; k < z.n; k++)
    for (int g = 0; g < lay->ngroups; g++)
      if (z.g[g].grad_first == (int32_t)k) grad_order[ngo++] = g;

  rp_range(c, 1, RANGE_STEP, "step");
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_BEGIN);
  ddp_instr load = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  b_buf(b, &load, LOAD_BATCH_P_INPUTS, b->tokens);
  b_buf(b, &load, LOAD_BATCH_P_TARGETS, b->targets);
  pass_tp_load_batch(c, &load);
  rp_push(c, load, "load_batch");

  if (train && s->gather_before_forward && !zero3) gather_before_forward(&z);
  bool overlap = s->overlap_backward;
  bool opt_overlap = train && grads && overlap && s->optimizer_overlap && lay->sumsq_partials < 0;
  if (opt_overlap) { /* the step count and lr first, on the stream the updates run on */
    if (b->plan->nstreams < STREAM_UPDATE + 1) b->plan->nstreams = STREAM_UPDATE + 1;
    b->update_streams |= (uint64_t)1 << STREAM_UPDATE;
    rp_order(c, STREAM_COMPUTE, STREAM_UPDATE);
    pass_scalars(c);
    c->out->v[c->out->n - 1].stream = STREAM_UPDATE;
  }
  for (uint32_t k = 0; k < z.n; k++) {
    /* gathers due before k, then the waits for those first used at k */
    bool ordered = false;
    for (int j = 0; j < z.nitems; j++)
      if (issue_at[j] == (int32_t)k) {
        if (!ordered) rp_order(c, STREAM_COMPUTE, STREAM_COMM);
        ordered = true;
        gather(&z, &z.items[j]);
      }
    for (int j = 0; j < z.nitems; j++)
      if (z.items[j].first == (int32_t)k) rp_wait(c, STREAM_COMPUTE, z.items[j].event);
    for (int g = 0; g < lay->ngroups; g++)
      if (z.g[g].has_ag && first_use(&z.g[g]) == (int32_t)k) rp_wait(c, STREAM_COMPUTE, z.g[g].ev_ag);
    /* zero2/3: a group's gradient buffer starts here: the one two groups back must be reduced by now */
    for (int x = 0; x < ngo; x++)
      if (z.g[grad_order[x]].grad_first == (int32_t)k && lay->groups[grad_order[x]].grads >= 0) {
        if (x >= 2 && z.g[grad_order[x - 2]].rs_done) rp_wait(c, STREAM_COMPUTE, z.g[grad_order[x - 2]].ev_rs);
        zero_gaps(&z, grad_order[x]);
      }
    ddp_instr in = b->step.v[k];
    if (in.opcode == I_TIMER) in.i[TIMER_I_SLOT] = c->ntimers++;
    pass_tp_apply(c, k, &in); /* tensor parallelism: this tensor rank's communicator, offsets, residual */
    if (zero3 && k > z.fe) retarget(&z, &in);
    rp_push(c, in, NULL);
    if (grads && k + 1 == z.n) rp_timer(c, STREAM_COMPUTE, TIMER_BACKWARD_END);
    if (!grads || !overlap) continue;
    ordered = false;
    for (int g = 0; g < lay->ngroups; g++)
      if (z.g[g].grad_last == (int32_t)k) {
        if (!ordered) {
          if (opt_overlap) flush_gathers(&z);
          rp_order(c, STREAM_COMPUTE, STREAM_COMM);
        }
        ordered = true;
        reduce_scatter(&z, g);
      }
    if (opt_overlap) update_ready(&z, k);
  }
  if (grads && z.n == 0) rp_timer(c, STREAM_COMPUTE, TIMER_BACKWARD_END);
  if (grads) { /* not overlapped, or never written (a reduce-scatter of zeros keeps every rank in step) */
    bool ordered = false;
    for (int g = 0; g < lay->ngroups; g++)
      if (!z.g[g].rs_done) {
        if (!ordered) rp_order(c, STREAM_COMPUTE, STREAM_COMM);
        ordered = true;
        if (lay->groups[g].grads >= 0 && z.g[g].grad_first < 0) zero_gaps(&z, g);
        reduce_scatter(&z, g);
      }
  }
  if (train) optimizer(&z, opt_overlap);
  rp_order(c, STREAM_COMM, STREAM_COMPUTE); /* nothing of this step left on the communication stream */
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_END);
  rp_range(c, 0, RANGE_STEP, NULL);

  free(issue_at);
  free(grad_order);
  free(z.g);
  free(z.items);
  free(z.param_group);
  free(z.view_group);
  free(z.grad_group);
  free(z.grad_written);
  return 0;
}

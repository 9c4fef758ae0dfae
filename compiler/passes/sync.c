/* compiler/passes/sync.c: assembles every rank's step program from the model's forward + backward and
 * the schedule's gradient synchronisation:
 *   naive       one all-reduce per parameter gradient after the whole backward
 *   flat        one all-reduce over the whole (contiguous) gradient arena after the backward
 *   individual  each unit's parameters all-reduced as soon as the backward finishes that unit's gradient
 *   bucketed    each bucket (a contiguous gradient range) all-reduced when its last gradient is final;
 *               with optimizer_overlap each bucket is updated during the backward on a third stream, the
 *               update stream, once its all-reduce has landed and the backward has touched its
 *               gradients, compute copies and masters for the last time (the step's scalars run first on
 *               that stream; the compute stream waits for it at the step's end, so the next forward reads
 *               updated parameters); optimizer_ms is then the update's exposed tail; with streams =
 *               { update_priority = "low", update_tail = f } the last fraction f of the buckets runs on a
 *               second update stream that keeps the high priority; with nccl.all_reduce = "peer" there is no
 *               all-reduce: the bucket's PEER_BARRIER on the communication stream (every rank's bucket is
 *               final) and an update that reads every rank's gradient (ADAMW with peers), and one more
 *               barrier on the update stream after the last update (every rank has read them) before the
 *               compute stream goes on to the next step, whose backward overwrites the gradients; with
 *               "peer_copy" the communication stream pulls the other ranks' bucket into a buffer of the bucket's
 *               own (sync.peer_received.bucket<k>) with a PEER_COPY after the barrier, and the update reads that
 *   zero1..3    the ZeRO levels: zero.c
 *   optimizer   (shard="optimizer") the sync above, then each rank updates the parameters it owns and
 *               the owners broadcast them
 * Collectives run on the communication stream, ordered against compute by events, bracketed by timers.
 * The schedule's mode trims the step: "forward_backward" stops after the gradient sync (no optimizer, no
 * OPT_BEGIN timer), "forward" after the loss (no backward, no BACKWARD_END timer, no collectives). */
#include "passes.h"
#include "access.h"
#include <stdlib.h>
#include <string.h>

enum { STREAM_UPDATE = DDP_DEFAULT_STREAMS, /* optimizer_overlap: the bucket updates' own stream */
       STREAM_TAIL };                         /* ... streams.update_tail: the last buckets' updates */

static int64_t unit_end(const ddp_builder *b, int u) { return b->units[u].flat_offset + b->units[u].numel; }

/* Bucket k's contiguous range [*lo, *hi) of the flat gradients. */
static void bucket_range(const ddp_builder *b, const ddp_layout *lay, int k, int64_t *lo, int64_t *hi) {
  *lo = b->units[lay->order[lay->buckets[k].first]].flat_offset;
  *hi = unit_end(b, lay->order[lay->buckets[k].last]);
}

/* Items 0..n-1 grouped by the instruction each is due after (at[i]; -1: never): item[at_k[k] .. at_k[k + 1])
 * are those due after instruction k (0 <= k <= nk), in index order (a counting sort). */
typedef struct due_list {
  uint32_t *at_k;
  int *item;
} due_list;

static due_list due_by_instruction(const int32_t *at, int n, uint32_t nk) {
  due_list d = {ddp_xcalloc((size_t)nk + 2, sizeof(uint32_t)), ddp_xmalloc(sizeof(int) * ((size_t)n + 1))};
  uint32_t *fill = ddp_xcalloc((size_t)nk + 2, sizeof(uint32_t));
  for (int i = 0; i < n; i++)
    if (at[i] >= 0) d.at_k[at[i] + 1]++;
  for (uint32_t k = 0; k <= nk; k++) d.at_k[k + 1] += d.at_k[k];
  memcpy(fill, d.at_k, sizeof(uint32_t) * ((size_t)nk + 2));
  for (int i = 0; i < n; i++)
    if (at[i] >= 0) d.item[fill[at[i]]++] = i;
  free(fill);
  return d;
}

static void due_list_free(due_list *d) { free(d->at_k), free(d->item); }

/* For every tensor, the index in the builder's step program of the last instruction writing it or a view
 * inside it (-1: none); unit u's gradient is final after last[units[u].grad]. One pass over the step, each
 * written operand's view chain walked up to its root (as ddp_tensor_within would test it against each). */
static int32_t *last_writers(const ddp_builder *b) {
  int32_t *last = ddp_xmalloc(sizeof(int32_t) * ((size_t)b->plan->ntensors + 1));
  for (uint32_t t = 0; t < b->plan->ntensors; t++) last[t] = -1;
  for (uint32_t k = 0; k < b->step.n; k++) {
    const ddp_instr *in = &b->step.v[k];
    uint32_t wm = in->opcode == I_KERNEL ? ddp_op_write_mask(in->op) : in->opcode == I_GEMM ? 1u << 3 : 0;
    for (int s = 0; s < DDP_MAX_PTRS; s++)
      if (((wm >> s) & 1u) && in->p[s].tensor >= 0)
        for (int32_t t = in->p[s].tensor; t >= 0; t = b->plan->tensors[t].base) last[t] = (int32_t)k;
  }
  return last;
}

static int last_writer(const ddp_builder *b, const int32_t *last, int u) {
  int32_t g = b->units[u].grad;
  return g >= 0 ? last[g] : -1;
}

/* unit -> ALL_REDUCE(parameter's gradient range)* over the unit's state-dict parameters */
static void allreduce_unit_params(rank_ctx *c, const ddp_unit_params *up, int u) {
  ddp_builder *b = c->b;
  for (int k = up->at[u]; k < up->at[u + 1]; k++) {
    const ddp_model_param *pp = &b->params[up->param[k]];
    rp_collective(c, I_ALL_REDUCE, STREAM_COMM, c->lay->flat_grads, b->units[u].flat_offset + pp->unit_offset,
                  pp->numel, REDOP_AVG, 0, b_fmt(c->b, "all_reduce.%s", b_t(b, pp->tensor)->state_name));
  }
}

/* ALL_REDUCE(flat gradients [lo, lo + n)); with nccl.all_reduce = "alltoall" (sync.received exists) and n a
 * multiple of the ranks: ALL_TO_ALL into sync.received, SUM_CHUNKS into the rank's chunk, ALL_GATHER of the
 * chunks in place, between one pair of communication timers */
static void allreduce_range(rank_ctx *c, int64_t lo, int64_t n, const char *name) {
  ddp_layout *lay = c->lay;
  const int W = lay->world;
  if (lay->a2a_received < 0 || n <= 0 || n % W) {
    rp_collective(c, I_ALL_REDUCE, STREAM_COMM, lay->flat_grads, lo, n, REDOP_AVG, 0, name);
    return;
  }
  const int64_t per = n / W, mine = lo + c->rank * per;
  const ddp_tensor *t = b_t(c->b, lay->flat_grads);
  const uint64_t es = ddp_dtype_size(t->dtype);
  rp_timer(c, STREAM_COMM, TIMER_COMM_BEGIN);
  rp_alltoall_sum(c, lay->flat_grads, lo, lay->a2a_received, lay->flat_grads, mine, per, W,
                  b_fmt(c->b, "%s.all_to_all", name), b_fmt(c->b, "%s.sum_chunks", name));
  ddp_instr ag = ddp_instr_blank(I_ALL_GATHER, STREAM_COMM);
  b_arg(&ag, COLL_P_SEND, lay->flat_grads, (uint64_t)mine * es, t->dtype);
  b_arg(&ag, COLL_P_RECV, lay->flat_grads, (uint64_t)lo * es, t->dtype);
  ag.i[COLL_I_COUNT] = per;
  ag.i[COLL_I_COMM] = c->comm;
  rp_push(c, ag, b_fmt(c->b, "%s.all_gather", name));
  rp_timer(c, STREAM_COMM, TIMER_COMM_END);
}

/* bucket k -> ALL_REDUCE(the bucket's contiguous gradient range) */
static void allreduce_bucket(rank_ctx *c, int k) {
  int64_t lo, hi;
  bucket_range(c->b, c->lay, k, &lo, &hi);
  allreduce_range(c, lo, hi - lo, b_fmt(c->b, "all_reduce.bucket%d", k));
}

/* nccl.all_reduce = "peer": a PEER_BARRIER on `stream` (the world's; no bytes), between communication timers */
static void peer_barrier(rank_ctx *c, int stream, const char *name) {
  ddp_instr in = ddp_instr_blank(I_PEER_BARRIER, (uint16_t)stream);
  in.dt[COLL_P_SEND] = DT_F32;
  rp_timer(c, stream, TIMER_COMM_BEGIN);
  rp_push(c, in, name);
  rp_timer(c, stream, TIMER_COMM_END);
}

/* "peer" / "peer_copy": bucket k's barrier on the communication stream, and with "peer_copy" the copy of the
 * other ranks' bucket into its receive buffer after it */
static void peer_bucket(rank_ctx *c, int k) {
  peer_barrier(c, STREAM_COMM, b_fmt(c->b, "peer_barrier.bucket%d", k));
  if (!c->lay->peer_received) return;
  int64_t lo, hi;
  bucket_range(c->b, c->lay, k, &lo, &hi);
  const ddp_tensor *g = b_t(c->b, c->lay->flat_grads);
  ddp_instr cp = ddp_instr_blank(I_PEER_COPY, STREAM_COMM);
  b_arg(&cp, COLL_P_SEND, c->lay->flat_grads, (uint64_t)lo * ddp_dtype_size(g->dtype), g->dtype);
  b_arg(&cp, COLL_P_RECV, c->lay->peer_received[k], 0, g->dtype);
  cp.i[COLL_I_COUNT] = hi - lo;
  rp_timer(c, STREAM_COMM, TIMER_COMM_BEGIN);
  rp_push(c, cp, b_fmt(c->b, "peer_copy.bucket%d", k));
  rp_timer(c, STREAM_COMM, TIMER_COMM_END);
}

/* nccl.all_reduce = "alltoall": sync.received, the size of the largest range allreduce_range takes through
 * the all-to-all (the flat gradients, or a bucket), a multiple of the ranks; none when no range is. */
static void received_buffer(ddp_builder *b, ddp_layout *lay) {
  const int W = lay->world;
  int64_t most = b->s->sync == SYNC_FLAT && lay->nflat % W == 0 ? lay->nflat : 0;
  for (int k = 0; k < lay->nbuckets && b->s->sync == SYNC_BUCKETED; k++) {
    int64_t lo, hi;
    bucket_range(b, lay, k, &lo, &hi);
    if ((hi - lo) % W == 0 && hi - lo > most) most = hi - lo;
  }
  if (most == 0) return;
  int64_t shape[1] = {most};
  lay->a2a_received = b_tensor(b, "sync.received", b->grad_dt, ARENA_ACT, 0, 1, shape);
}

/* nccl.all_reduce = "peer_copy": per bucket, sync.peer_received.bucket<k>, the other ranks' copies of it. A
 * buffer per bucket: the copies run on the communication stream and the updates on the update stream, and
 * nothing tells the communication stream when an update has read its buffer before the step's end. */
static void peer_received_buffers(ddp_builder *b, ddp_layout *lay) {
  lay->peer_received = ddp_xcalloc((size_t)lay->nbuckets + 1, sizeof(int32_t));
  for (int k = 0; k < lay->nbuckets; k++) {
    int64_t lo, hi;
    bucket_range(b, lay, k, &lo, &hi);
    int64_t shape[1] = {(hi - lo) * (lay->world - 1)};
    lay->peer_received[k] = b_tensor(b, b_fmt(b, "sync.peer_received.bucket%d", k), b->grad_dt, ARENA_ACT, 0, 1, shape);
  }
}

/* optimizer_overlap: per bucket, the index in the builder's step program of the last instruction touching
 * its units' gradients, compute copies or masters (-1: none). A layer's input gradient may read the weights
 * after their gradient is final, so this can come after the bucket's last gradient writer. */
static int32_t *bucket_ready(const ddp_builder *b, const ddp_layout *lay) {
  const ddp_plan *p = b->plan;
  int32_t *bucket_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  for (uint32_t t = 0; t < p->ntensors; t++) bucket_of[t] = -1;
  for (int k = 0; k < lay->nbuckets; k++)
    for (int j = lay->buckets[k].first; j <= lay->buckets[k].last; j++) {
      const ddp_unit *u = &b->units[lay->order[j]];
      const int32_t mine[3] = {u->master, u->copy, u->grad};
      for (int i = 0; i < 3; i++)
        if (mine[i] >= 0) bucket_of[mine[i]] = k;
    }
  int32_t *ready = b_last_touch(b, bucket_of, lay->nbuckets);
  free(bucket_of);
  return ready;
}

/* optimizer_overlap: the buckets' updates during the backward, each once its all-reduce is issued and the
 * backward is done with it (those due after an instruction in index order; those never reduced at the
 * step's end) */
typedef struct bucket_updates {
  int n, ntail;  /* buckets; the last ntail go on STREAM_TAIL */
  int peers;     /* nccl.all_reduce = "peer" / "peer_copy": the world size, each update's ADAMW_I_PEERS; else 0 */
  const int32_t *received; /* "peer_copy": per bucket, its receive buffer; else NULL */
  due_list due;  /* by bucket_ready */
  bool *reduced, *updated;
  uint32_t *event; /* after the bucket's all-reduce on the communication stream */
  bool ordered[2]; /* the compute stream already ordered before the update / tail stream at this point */
} bucket_updates;

static void updates_init(bucket_updates *u, const ddp_builder *b, const ddp_layout *lay, int ntail) {
  *u = (bucket_updates){.n = lay->nbuckets, .ntail = ntail};
  int32_t *ready = bucket_ready(b, lay);
  u->due = due_by_instruction(ready, u->n, b->step.n);
  free(ready);
  u->reduced = ddp_xcalloc((size_t)u->n + 1, sizeof(bool));
  u->updated = ddp_xcalloc((size_t)u->n + 1, sizeof(bool));
  u->event = ddp_xcalloc((size_t)u->n + 1, sizeof(uint32_t));
}

static void updates_free(bucket_updates *u) {
  due_list_free(&u->due), free(u->reduced), free(u->updated), free(u->event);
}

/* bucket k's update on the update stream (the tail's: STREAM_TAIL), after its all-reduce's event when it had
 * one */
static void update_bucket(rank_ctx *c, bucket_updates *u, int k) {
  const bool tail = k >= u->n - u->ntail;
  const int stream = tail ? STREAM_TAIL : STREAM_UPDATE;
  if (!u->ordered[tail]) rp_order(c, STREAM_COMPUTE, stream);
  u->ordered[tail] = true;
  int64_t lo, hi;
  bucket_range(c->b, c->lay, k, &lo, &hi);
  if (u->reduced[k]) rp_wait(c, stream, u->event[k]);
  /* a bucket that nothing writes (never reduced) keeps its zero gradient on every rank: a plain update */
  const int peers = u->reduced[k] ? u->peers : 0;
  const int32_t recv = peers && u->received ? u->received[k] : -1;
  uint32_t first = c->out->n;
  pass_update(c, lo, hi, 0, true, b_fmt(c->b, "optimizer.bucket%d", k));
  for (uint32_t i = first; i < c->out->n; i++) {
    ddp_instr *in = &c->out->v[i];
    in->stream = (uint16_t)stream;
    if (in->opcode != I_KERNEL || in->op != OP_ADAMW) continue;
    in->i[ADAMW_I_PEERS] = peers;
    if (recv >= 0) b_arg(in, ADAMW_P_RECEIVED, recv, 0, in->dt[ADAMW_P_GRAD]);
  }
  u->updated[k] = true;
}

/* After step instruction k (k == n: the step's end, every bucket left): the updates due. */
static void updates_due(rank_ctx *c, bucket_updates *u, uint32_t k, uint32_t n) {
  u->ordered[0] = u->ordered[1] = false;
  for (uint32_t d = u->due.at_k[k]; k < n && d < u->due.at_k[k + 1]; d++)
    if (u->reduced[u->due.item[d]]) update_bucket(c, u, u->due.item[d]);
  for (int g = 0; k == n && g < u->n; g++)
    if (!u->updated[g]) update_bucket(c, u, g);
}

/* optimizer -> RANGE_PUSH (TIMER order(update, compute) | [order(comm, compute)] TIMER scalars
 *              (update(own range) exchange | update(all))) RANGE_POP
 * With optimizer overlap the updates already ran on the update stream: compute waits for it. Else waits
 * for the gradient sync, then the scalars and the update. */
static void optimizer_phase(rank_ctx *c, bool opt_overlap, bool tail, bool peer) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_schedule *s = b->s;
  int rank = c->rank;
  bool dist = lay->world > 1;
  rp_range(c, 1, RANGE_OPTIMIZER, "optimizer");
  if (opt_overlap) {
    rp_timer(c, STREAM_COMPUTE, TIMER_OPT_BEGIN);
    if (peer) { /* every rank has read every rank's gradients before anyone writes them again */
      if (tail) rp_order(c, STREAM_TAIL, STREAM_UPDATE);
      peer_barrier(c, STREAM_UPDATE, "peer_barrier.step_end");
    }
    rp_order(c, STREAM_UPDATE, STREAM_COMPUTE);
    if (tail && !peer) rp_order(c, STREAM_TAIL, STREAM_COMPUTE);
  } else {
    if (dist) rp_order(c, STREAM_COMM, STREAM_COMPUTE);
    rp_timer(c, STREAM_COMPUTE, TIMER_OPT_BEGIN);
    bool sharded = dist && s->shard != SHARD_NONE;
    pass_opt_scalars(c, false);
    if (sharded) {
      pass_update(c, lay->own_lo[rank], lay->own_hi[rank], lay->own_lo[rank], false, "optimizer.shard");
      pass_exchange_params(c);
    } else {
      pass_update(c, 0, lay->nflat, 0, true, "optimizer");
    }
  }
  rp_range(c, 0, RANGE_OPTIMIZER, NULL);
}

/* rank -> init; step -> RANGE_PUSH TIMER LOAD_BATCH [fwd|bwd [TIMER(BACKWARD_END)] [order sync(group)* after
 *         its last writer]]* [order (ALL_REDUCE(flat) | unit*)] [optimizer] [order] TIMER RANGE_POP
 *         (the ZeRO levels: zero.c) */
static int assemble_rank(ddp_builder *b, ddp_layout *lay, int world_rank, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  ddp_rank_plan *rp = &b->plan->ranks[world_rank];
  rank_ctx c = {.b = b, .lay = lay, .rank = world_rank, .out = &rp->init};
  pass_tp_rank(&c, world_rank); /* tensor parallelism: rank is the data replica, comm its data group */
  pass_init_program(&c);

  c.out = &rp->step;
  if (pass_opt_overlap_applies(b, lay)) {
    int rc = pass_opt_overlap_step(&c);
    rp->nevents = c.nevents;
    rp->ntimers = c.ntimers;
    return rc;
  }
  if (lay->zero) {
    int rc = pass_zero_step(&c);
    rp->nevents = c.nevents;
    rp->ntimers = c.ntimers;
    return rc;
  }
  bool dist = lay->world > 1, grads = b->backward, train = s->mode == MODE_TRAIN;
  int sync = dist && grads ? s->sync : SYNC_NONE;
  bool overlap = dist && s->overlap_backward && (sync == SYNC_INDIVIDUAL || sync == SYNC_BUCKETED);
  /* the frontend refuses optimizer_overlap with clipping (the norm needs every gradient first) */
  bool opt_overlap = train && overlap && sync == SYNC_BUCKETED && s->optimizer_overlap && s->shard == SHARD_NONE &&
                     lay->sumsq_partials < 0;
  /* the frontend allows nccl.all_reduce = "peer" only where the updates overlap the backward */
  bool peer = (s->nccl_all_reduce == NCCL_AR_PEER || s->nccl_all_reduce == NCCL_AR_PEER_COPY) && dist && grads;
  if (peer && !opt_overlap)
    return ddp_fail(err, errcap, "nccl.all_reduce = \"%s\" needs the bucket updates in the backward (optimizer_overlap, "
                    "no clipping)", ddp_nccl_all_reduce_names[s->nccl_all_reduce]);

  /* When is each collective issued? after[k] lists groups (units for individual, buckets) for instr k. */
  int ngroups = sync == SYNC_INDIVIDUAL ? lay->norder : sync == SYNC_BUCKETED ? lay->nbuckets : 0;
  int32_t *issue_at = ddp_xmalloc(sizeof(int32_t) * (size_t)(ngroups + 1));
  int32_t *last = last_writers(b);
  ddp_unit_params up = b_unit_params(b);
  for (int gidx = 0; gidx < ngroups; gidx++) {
    int at = -1;
    int from = sync == SYNC_INDIVIDUAL ? gidx : lay->buckets[gidx].first;
    int to = sync == SYNC_INDIVIDUAL ? gidx : lay->buckets[gidx].last;
    for (int j = from; j <= to; j++) {
      int w = last_writer(b, last, lay->order[j]);
      if (w > at) at = w;
    }
    issue_at[gidx] = overlap ? at : (int32_t)b->step.n; /* not overlapped: after the backward */
  }
  free(last);
  /* The groups due after instruction k, in group order (a group whose gradient nothing writes, -1, is never
   * due). */
  due_list due = due_by_instruction(issue_at, ngroups, b->step.n);
  free(issue_at);

  rp_range(&c, 1, RANGE_STEP, "step");
  rp_timer(&c, STREAM_COMPUTE, TIMER_STEP_BEGIN);
  ddp_instr load = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  b_buf(b, &load, LOAD_BATCH_P_INPUTS, b->tokens);
  b_buf(b, &load, LOAD_BATCH_P_TARGETS, b->targets);
  pass_tp_load_batch(&c, &load);
  rp_push(&c, load, "load_batch");

  if (opt_overlap) { /* the step count and lr first, on the stream the updates run on */
    if (b->plan->nstreams < STREAM_UPDATE + 1) b->plan->nstreams = STREAM_UPDATE + 1;
    b->update_streams |= (uint64_t)1 << STREAM_UPDATE;
    rp_order(&c, STREAM_COMPUTE, STREAM_UPDATE);
    pass_scalars(&c);
    c.out->v[c.out->n - 1].stream = STREAM_UPDATE;
  }
  /* streams.update_tail: the last-ready fraction of the buckets on a second update stream that keeps the high
   * priority (it is not one of b->update_streams), after the scalars */
  int ntail = opt_overlap && s->update_priority == UPDATE_PRIORITY_LOW ? (int)(s->update_tail * ngroups + 0.5) : 0;
  if (ntail > ngroups) ntail = ngroups;
  if (ntail > 0) {
    if (b->plan->nstreams < STREAM_TAIL + 1) b->plan->nstreams = STREAM_TAIL + 1;
    rp_order(&c, STREAM_UPDATE, STREAM_TAIL);
  }
  bucket_updates upd = {0};
  if (opt_overlap) updates_init(&upd, b, lay, ntail);
  upd.peers = peer ? lay->world : 0;
  upd.received = peer ? lay->peer_received : NULL;
  for (uint32_t k = 0; k <= b->step.n; k++) {
    if (k < b->step.n) {
      ddp_instr in = b->step.v[k];
      if (in.opcode == I_TIMER) in.i[TIMER_I_SLOT] = c.ntimers++;
      pass_tp_apply(&c, k, &in);
      rp_push(&c, in, NULL);
    }
    if (grads && (k + 1 == b->step.n || (b->step.n == 0 && k == 0)))
      rp_timer(&c, STREAM_COMPUTE, TIMER_BACKWARD_END);
    /* groups due after instruction k (for k == n: the non-overlapped ones) */
    bool ordered = false;
    for (uint32_t d = due.at_k[k]; d < due.at_k[k + 1]; d++) {
      int gidx = due.item[d];
      if (!ordered) {
        rp_order(&c, STREAM_COMPUTE, STREAM_COMM);
        ordered = true;
      }
      if (sync == SYNC_INDIVIDUAL)
        allreduce_unit_params(&c, &up, lay->order[gidx]);
      else if (peer)
        peer_bucket(&c, gidx);
      else
        allreduce_bucket(&c, gidx);
      if (opt_overlap) {
        upd.event[gidx] = rp_record(&c, STREAM_COMM);
        upd.reduced[gidx] = true;
      }
    }
    if (opt_overlap) updates_due(&c, &upd, k, b->step.n);
  }
  if (sync == SYNC_NAIVE || sync == SYNC_FLAT) {
    rp_order(&c, STREAM_COMPUTE, STREAM_COMM);
    if (sync == SYNC_FLAT) {
      allreduce_range(&c, 0, lay->nflat, "all_reduce.flat");
    } else {
      for (int j = 0; j < lay->norder; j++) allreduce_unit_params(&c, &up, lay->order[j]);
    }
  }

  if (train) optimizer_phase(&c, opt_overlap, ntail > 0, peer);
  if (dist && grads) rp_order(&c, STREAM_COMM, STREAM_COMPUTE); /* nothing of this step left on the comm stream */
  rp_timer(&c, STREAM_COMPUTE, TIMER_STEP_END);
  rp_range(&c, 0, RANGE_STEP, NULL);

  rp->nevents = c.nevents;
  rp->ntimers = c.ntimers;
  due_list_free(&due);
  b_unit_params_free(&up);
  if (opt_overlap) updates_free(&upd);
  return 0;
}

/* nccl.movement = "peer_copy": every all-to-all and all-gather of the world in the step programs moved by
 * copy-engine pulls (COLL_I_PATH); a schedule that has none is refused, the field would change nothing. */
static int movement_by_peer_copy(ddp_plan *p, char *err, size_t errcap) {
  uint64_t n = 0;
  for (int64_t r = 0; r < p->meta.world; r++)
    for (uint32_t k = 0; k < p->ranks[r].step.n; k++) {
      ddp_instr *in = &p->ranks[r].step.v[k];
      if ((in->opcode == I_ALL_TO_ALL || in->opcode == I_ALL_GATHER) && in->i[COLL_I_COMM] == 0) {
        in->i[COLL_I_PATH] = COLL_PATH_PEER_COPY;
        n++;
      }
    }
  if (n == 0)
    return ddp_fail(err, errcap, "nccl.movement = \"peer_copy\": this schedule's step has no all-to-all or all-gather "
                    "to move (nccl.all_reduce or nccl.reduce_scatter = \"alltoall\", or a ZeRO level, has them)");
  return 0;
}

/* plan -> rank* (every rank's init and step) */
int ddp_assemble_programs(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  if (lay->pipe) return pass_pipeline(b, lay, err, errcap);
  int world = lay->world * b->tp; /* tensor parallelism: the layout's world is the data axis */
  b->plan->meta.world = world;
  pass_tp_prepare(b);
  if (!lay->zero && b->s->nccl_all_reduce == NCCL_AR_ALLTOALL && lay->world > 1 && b->backward)
    received_buffer(b, lay);
  if (!lay->zero && b->s->nccl_all_reduce == NCCL_AR_PEER_COPY && lay->world > 1 && b->backward)
    peer_received_buffers(b, lay);
  b->plan->ranks = ddp_xcalloc((size_t)world, sizeof(ddp_rank_plan));
  for (int r = 0; r < world; r++)
    if (assemble_rank(b, lay, r, err, errcap) != 0) return -1;
  return b->s->nccl_movement == NCCL_MOVE_PEER_COPY ? movement_by_peer_copy(b->plan, err, errcap) : 0;
}

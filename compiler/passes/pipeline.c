/* compiler/passes/pipeline.c: every rank's programs under a pipeline (layout: compiler/layout/stages.c).
 * The builder's step is one microbatch of the whole model; each of its instructions belongs to a chunk.
 * Microbatch i > 0 runs on its own copies of the activation tensors ("mb<i>.<name>"; the memory planner
 * shares their memory by liveness, so 1F1B holds at most `stages` microbatches and GPipe all of them), and
 * on its slice of the replica's batch (tokens and targets loaded once per step). A schedule is, per stage,
 * a list of actions F (forward), B (backward; zero bubble: its input-gradient part) and W (zero bubble: the
 * weight-gradient part) of (chunk, microbatch):
 *   sequential   F B                                     (one microbatch)
 *   gpipe        F0 .. F(m-1) B0 .. B(m-1)
 *   1f1b         w = min(stages - s - 1, m) warm-up forwards, then F B pairs, then the remaining B
 *   interleaved  Megatron's interleaved 1F1B over the stage's chunks
 *   zero_bubble  1f1b's F and B, each W where the stage would wait, at most stages - 1 pending (ZB-H1,
 *                zb_actions); what a W reads that later backward instructions change is stashed first
 *                (zb_stash)
 * step -> RANGE_PUSH TIMER LOAD_BATCH [MEMSET(stage gradients): no optimizer]
 *         [SEND* RECV* TIMER(MB_*_BEGIN) RANGE_PUSH(action) instructions RANGE_POP TIMER(MB_*_END)]* SEND*
 *         TIMER(BACKWARD_END) [optimizer ending in MEMSET(stage gradients)] TIMER RANGE_POP
 * A tensor written on one rank and read on another travels once per microbatch: a SEND right after the
 * action that last writes it, a RECV right before the first action that reads it on the other rank; the
 * sends ending one action and the receives starting the next are consecutive, so they go out as one group
 * (CUDA executor: one NCCL group; reference executor: posted together). Parameter gradients add up over
 * the microbatches (the step zeroes them first); the loss and its gradient are scaled by 1 / microbatches.
 * The verifier simulates the programs and refuses one whose sends and receives can deadlock.
 *
 * Data-parallel replicas (pipeline{stages = S, replicas = R}): the world is S x R ranks, rank = replica x S +
 * stage, so each replica is a contiguous pipeline (ranks replica*S .. replica*S + S - 1) and its transfers
 * stay inside it. Replica r loads part r of R of the global batch (LOAD_BATCH part/parts) and splits it
 * into its microbatches as above. The plan's communicators (plan.h ddp_comm): comm 1 + s holds stage s of
 * every replica (ranks s, S + s, .., (R-1)S + s), comm 1 + S + r the ranks of replica r. After a stage's
 * The stage's gradient flat is cut into buckets of bucket_mb MB (default 25) of whole units in flat order
 * (a contiguous partition of the flat); a bucket is all-reduced (REDOP_AVG: each replica's gradient is the
 * mean over its share, so the mean of the R means is the global batch's mean) on the stage's comm, on the
 * communication stream ordered by an event after the compute stream, bracketed by COMM timers, as soon as
 * the last microbatch's backward (zero bubble: its weight-gradient part, W, so every deferred weight
 * gradient is final) has written the last gradient of its units: the all-reduce overlaps the rest of the
 * backward (the earlier layers, the other chunks of an interleaved stage, the cool-down); the optimizer
 * waits for all of them. The
 * gradient norm's partial sums are all-reduced over the replica's comm (every replica then holds the same
 * norm). One replica (R = 1) has no communicators and no gradient all-reduce.
 *
 * Tensor parallelism (mesh.tensor = T > 1): every stage of every replica is T tensor ranks, world rank
 * (d S + s) T + t for replica d, stage s, tensor rank t (compiler/schedule.h); the world is R x S x T ranks.
 * Each rank runs the builder's instructions (tensor rank 0's share, compiler/model/transformer.c) with its
 * tensor rank's patches applied (pass_tp_apply) to every microbatch's copy; a tensor rank sends to and
 * receives from the same tensor rank of the other stages, loads its replica's part of the batch (the tensor
 * ranks of a replica share its sequences), draws its part of every split unit (pass_init_unit_tp), and under
 * clipping counts its split units' squares and tensor rank 0 the whole units' (tables per run of the
 * stage's flat, all-reduced over the tensor group, then over the replica's stages).
 * The communicators, numbered in this order (each block only where the plan needs it):
 *   stage groups    (R > 1)          comm 1 + s T + t: stage s's replicas at tensor rank t, ranks (d S + s) T + t
 *                                    for d = 0 .. R-1 (the gradient all-reduce, the init broadcast)
 *   replica groups  (R > 1 or T > 1) comm 1 + Sn + d T + t: replica d's stages at tensor rank t (the gradient
 *                                    norm), Sn = the stage groups' count (S T, or 0)
 *   tensor groups   (T > 1)          comm 1 + Sn + Rn + d S + s: the T tensor ranks of stage s of replica d
 *                                    (the builder's collectives), Rn = the replica groups' count (R T, or 0)
 * With T = 1 these are the comms above (1 + s, 1 + S + r). */
#include "passes.h"
#include "access.h"
#include <stdlib.h>
#include <string.h>

enum { ACT_F = 0, ACT_B = 1, ACT_W = 2 };
typedef struct action {
  int kind, chunk, mb;
  bool joined; /* no transfer point after it: its sends and the next action's receives move to the points
                  around the pair (interleaved 1F1B's steady F-B pairs, as Megatron batches them) */
} action;

typedef struct flow { /* tensor t (a root of the one-microbatch program) from (rank, key) to (rank, key) */
  int32_t t;
  int from_rank, from_key, to_rank, to_key;
} flow;

typedef struct pctx {
  ddp_builder *b;
  ddp_layout *lay;
  const ddp_schedule *s;
  int P, C, m;
  int D, T;   /* data replicas, tensor ranks (1: none) */
  int Sn, Rn; /* how many stage groups and replica groups the plan has (the communicators above) */
  uint32_t fe;
  uint8_t *part;       /* [builder instr]: ACT_F, ACT_B or ACT_W */
  int32_t **map;       /* [mb][tensor]: the microbatch's tensor */
  flow *flows;
  int nflows;
  int32_t tokens, targets; /* the replica's whole batch */
  int32_t *grad_last;      /* [unit]: the builder instruction that last writes its gradient, -1 */
} pctx;

/* The mesh: world rank (replica d, stage s, tensor rank t) = (d P + s) T + t, and its communicators. */
static int world_rank(const pctx *x, int d, int s, int t) { return (d * x->P + s) * x->T + t; }
static int stage_of(const pctx *x, int r) { return r / x->T % x->P; }
static int replica_of(const pctx *x, int r) { return r / x->T / x->P; }
static int comm_stage(const pctx *x, int s, int t) { return x->D > 1 ? 1 + s * x->T + t : 0; }
static int comm_replica(const pctx *x, int d, int t) { return x->Rn ? 1 + x->Sn + d * x->T + t : 0; }
static int comm_tensor(const pctx *x, int d, int s) { return x->T > 1 ? 1 + x->Sn + x->Rn + d * x->P + s : 0; }

/* Replicas: the stage's gradient buckets (a contiguous partition of its flat) and how many of each
 * bucket's units still wait for their last gradient write. */
typedef struct gbuckets {
  int n;
  int64_t *lo, *hi;
  int *pending, *of_unit; /* [bucket]; [unit]: its bucket, -1 off this stage */
  bool *issued;
} gbuckets;

/* The last builder instruction writing each unit's gradient (or a view inside it). */
static int32_t *grad_last_writers(const ddp_builder *b) {
  const ddp_plan *p = b->plan;
  int32_t *unit_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  for (uint32_t t = 0; t < p->ntensors; t++) unit_of[t] = -1;
  for (int u = 0; u < b->nunits; u++)
    if (b->units[u].grad >= 0) unit_of[b->units[u].grad] = u;
  int32_t *last = ddp_xmalloc(sizeof(int32_t) * ((size_t)b->nunits + 1));
  for (int u = 0; u < b->nunits; u++) last[u] = -1;
  for (uint32_t k = 0; k < b->step.n; k++) {
    ddp_slot_use use[DDP_MAX_PTRS];
    char why[160];
    if (ddp_instr_footprint(&b->step.v[k], 1, use, why, sizeof why)) continue;
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++)
      if (use[sl].write)
        for (int32_t t = b->step.v[k].p[sl].tensor; t >= 0; t = p->tensors[t].base)
          if (unit_of[t] >= 0) last[unit_of[t]] = (int32_t)k;
  }
  free(unit_of);
  return last;
}

static gbuckets stage_buckets(const pctx *x, int stage) {
  const ddp_builder *b = x->b;
  const ddp_layout *lay = x->lay;
  gbuckets g = {0};
  g.lo = ddp_xcalloc((size_t)lay->norder + 1, sizeof(int64_t));
  g.hi = ddp_xcalloc((size_t)lay->norder + 1, sizeof(int64_t));
  g.pending = ddp_xcalloc((size_t)lay->norder + 1, sizeof(int));
  g.issued = ddp_xcalloc((size_t)lay->norder + 1, sizeof(bool));
  g.of_unit = ddp_xmalloc(sizeof(int) * ((size_t)b->nunits + 1));
  for (int u = 0; u < b->nunits; u++) g.of_unit[u] = -1;
  double cap = x->s->bucket_mb * 1048576.0, bytes = 0, gsz = (double)ddp_dtype_size(b->grad_dt);
  for (int j = 0; j < lay->norder; j++) {
    int u = lay->order[j];
    if (lay->stage_of_unit[u] != stage) continue;
    if (g.n == 0 || bytes >= cap) { /* a new bucket from this unit on */
      if (g.n > 0) g.hi[g.n - 1] = b->units[u].flat_offset;
      g.lo[g.n] = g.n == 0 ? 0 : b->units[u].flat_offset;
      g.n++;
      bytes = 0;
    }
    bytes += (double)b->units[u].numel * gsz;
    g.of_unit[u] = g.n - 1;
    g.pending[g.n - 1] += x->grad_last[u] >= 0;
  }
  if (g.n == 0) g.lo[g.n++] = 0; /* a stage without trainable units: its (padding) flat is one bucket */
  g.lo[0] = 0;
  g.hi[g.n - 1] = lay->stage_flat[stage].n;
  return g;
}

static void gbuckets_free(gbuckets *g) {
  free(g->lo), free(g->hi), free(g->pending), free(g->of_unit), free(g->issued);
}

/* bucket k -> RECORD(compute) WAIT(comm) TIMER ALL_REDUCE(the stage's gradients [lo, hi), its comm) TIMER */
static void allreduce_bucket(rank_ctx *c, const pctx *x, gbuckets *g, int k, int stage) {
  const ddp_stage_flat *f = &c->lay->stage_flat[stage];
  rp_order(c, STREAM_COMPUTE, STREAM_COMM);
  c->comm = comm_stage(x, stage, c->tp);
  rp_collective(c, I_ALL_REDUCE, STREAM_COMM, f->grads, g->lo[k], g->hi[k] - g->lo[k], REDOP_AVG, 0,
                b_fmt(c->b, "all_reduce.stage%d.bucket%d", stage, k));
  c->comm = 0;
  g->issued[k] = true;
}

static int rank_of_chunk(const pctx *x, int c) { return c % x->P; }
/* a microbatch's actions in logical order: forwards by chunk, backwards by reversed chunk, then W */
static int key_of(const pctx *x, int kind, int chunk) {
  return kind == ACT_F ? chunk : kind == ACT_B ? x->C + (x->C - 1 - chunk) : 2 * x->C + (x->C - 1 - chunk);
}

static action *push_action(action *v, int *n, int kind, int chunk, int mb) {
  v[(*n)++] = (action){kind, chunk, mb, false};
  return v;
}

/* Zero bubble (ZB-H1): stage s runs 1F1B's forwards and input-gradient backwards (B) in 1F1B's order, and
 * the weight-gradient parts (W, in microbatch order, each after its B) where the stage would otherwise
 * wait. Where that is comes from simulating every stage with unit times for F, B and W and free
 * transfers: a stage whose next F or B has its input (the previous stage's F, the next stage's B) ready
 * runs it; one that would wait runs a pending W instead, unless its last action was an F (whose sends then
 * could not go out in one group with the next B's receives, which the verifier refuses as a possible
 * deadlock under NCCL's blocking sends); and at most stages - 1 W may be pending on any stage (ZB-H1's
 * memory bound: every stage within the first stage's 1F1B peak of `stages` microbatches in flight; a
 * weight-gradient part holds less than a whole microbatch's activations), a B beyond that being followed by
 * its W at once. So every stage sends its input gradients first; the first stage fills the wait for each
 * gradient with the W of an earlier microbatch, and the last stage, which never waits in the steady
 * state, keeps stages - 1 W for the cool-down, where they run while the earlier stages finish their last
 * backwards (with the last stage running each W right after its B, the first stage's tail was its last B
 * and W with the last stage idle; a static placement, deferred by a fixed count, also left an earlier W
 * there: measured on 2 x H200, 2026-11-23, no faster than 1F1B). The simulation picks, each time, the
 * stage that is free first (ties: the lower stage); an input not yet simulated then finishes later than
 * that stage is free. */
static action *zb_actions(int P, int m, int s, int *count) {
  const double never = 1e300;
  size_t pm = (size_t)P * (size_t)m;
  double *fdone = ddp_xmalloc(sizeof(double) * (pm + 1)), *bdone = ddp_xmalloc(sizeof(double) * (pm + 1));
  for (size_t k = 0; k < pm; k++) fdone[k] = bdone[k] = never;
  int *next = ddp_xcalloc((size_t)P, sizeof(int)), *nb = ddp_xcalloc((size_t)P, sizeof(int));
  int *nw = ddp_xcalloc((size_t)P, sizeof(int));
  double *at = ddp_xcalloc((size_t)P, sizeof(double));
  bool *blocked = ddp_xcalloc((size_t)P, sizeof(bool));
  int *last = ddp_xcalloc((size_t)P, sizeof(int)); /* the kind of the stage's last action (ACT_F = 0 at start) */
  action *v = ddp_xcalloc((size_t)(3 * m) + 4, sizeof(action));
  int n = 0;
  for (;;) {
    int q = -1;
    for (int r = 0; r < P; r++)
      if (!blocked[r] && (next[r] < 2 * m || nw[r] < m) && (q < 0 || at[r] < at[q])) q = r;
    if (q < 0) break; /* every stage done (1F1B's order cannot leave all of them waiting) */
    int w = P - q - 1 < m ? P - q - 1 : m, k = next[q], kind = -1, mb = -1;
    if (k < 2 * m) { /* 1F1B's k-th action of stage q: w forwards, then F/B pairs, then backwards */
      if (k < w) kind = ACT_F, mb = k;
      else if (k < 2 * m - w) kind = (k - w) % 2 ? ACT_B : ACT_F, mb = kind == ACT_F ? w + (k - w) / 2 : (k - w) / 2;
      else kind = ACT_B, mb = m - (2 * m - k);
    }
    double ready = kind < 0 ? never
                   : kind == ACT_F ? (q == 0 ? 0 : fdone[(size_t)(q - 1) * m + mb])
                   : (q == P - 1 ? fdone[(size_t)q * m + mb] : bdone[(size_t)(q + 1) * m + mb]);
    int pending = nb[q] - nw[q];
    if (pending > 0 && (pending > P - 1 || kind < 0 || (ready > at[q] && last[q] != ACT_F))) {
      if (q == s) push_action(v, &n, ACT_W, s, nw[q]);
      nw[q]++, at[q] += 1, last[q] = ACT_W;
    } else if (kind >= 0 && ready < never) {
      last[q] = kind;
      at[q] = (ready > at[q] ? ready : at[q]) + 1;
      (kind == ACT_F ? fdone : bdone)[(size_t)q * m + mb] = at[q];
      if (kind == ACT_B) nb[q]++;
      if (q == s) push_action(v, &n, kind, s, mb);
      next[q]++;
      memset(blocked, 0, sizeof(bool) * (size_t)P);
    } else {
      blocked[q] = true;
    }
  }
  free(fdone), free(bdone), free(next), free(nb), free(nw), free(at), free(blocked), free(last);
  *count = n;
  return v;
}

/* The actions of stage s, in order. */
static action *stage_actions(const pctx *x, int s, bool backward, int *count) {
  int P = x->P, m = x->m, V = x->s->virtual_stages, n = 0, sched = x->s->pipe_schedule;
  action *v = ddp_xcalloc((size_t)(3 * m * V) + 4, sizeof(action));
  if (!backward) {
    for (int i = 0; i < m; i++)
      for (int c = 0; c < V; c++) push_action(v, &n, ACT_F, c * P + s, i);
    *count = n;
    return v;
  }
  if (sched == PIPE_INTERLEAVED) {
    int T = m * V, warm = (P - s - 1) * 2 + (V - 1) * P;
    if (warm > T) warm = T;
#define FCH(k) (((k) / P) % V * P + s)
#define BCH(k) ((V - 1 - ((k) / P) % V) * P + s)
#define MB(k) (((k) / (P * V)) * P + (k) % P)
    for (int k = 0; k < warm; k++) push_action(v, &n, ACT_F, FCH(k), MB(k));
    for (int i = 0; i < T - warm; i++) {
      push_action(v, &n, ACT_F, FCH(warm + i), MB(warm + i))[n - 1].joined = true;
      push_action(v, &n, ACT_B, BCH(i), MB(i));
    }
    for (int k = T - warm; k < T; k++) push_action(v, &n, ACT_B, BCH(k), MB(k));
#undef FCH
#undef BCH
#undef MB
  } else if (sched == PIPE_GPIPE || sched == PIPE_SEQUENTIAL) {
    for (int i = 0; i < m; i++) push_action(v, &n, ACT_F, s, i);
    for (int i = 0; i < m; i++) push_action(v, &n, ACT_B, s, i);
  } else if (sched == PIPE_ZERO_BUBBLE) {
    free(v);
    return zb_actions(P, m, s, count);
  } else { /* 1f1b */
    int w = P - s - 1 < m ? P - s - 1 : m;
    for (int i = 0; i < w; i++) push_action(v, &n, ACT_F, s, i);
    for (int i = 0; i < m - w; i++) {
      push_action(v, &n, ACT_F, s, w + i);
      push_action(v, &n, ACT_B, s, i);
    }
    for (int i = m - w; i < m; i++) push_action(v, &n, ACT_B, s, i);
  }
  *count = n;
  return v;
}

/* Zero bubble: a weight-gradient instruction runs after the rest of its chunk's backward (and, deferred,
 * after later microbatches'), so whatever it reads that a later backward instruction changes (the residual
 * stream's gradient, which every layer adds into in place) is copied, where it originally ran, into a
 * stash tensor of its own that it reads instead: the copy belongs to the B part, the read to the W part.
 * Rewrites the builder's step, the layout's chunk of each instruction and the tensor-parallel patches'
 * instruction indices. */
/* Does `in` write a stage's parameter gradients (the weight-gradient part of a backward)? */
static bool writes_stage_grad(const ddp_builder *b, const ddp_layout *lay, const ddp_instr *in,
                              const ddp_slot_use *use) {
  for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
    if (!use[sl].write || in->p[sl].tensor < 0) continue;
    int32_t r = ddp_tensor_root(b->plan, in->p[sl].tensor);
    for (int st = 0; st < b->s->stages; st++)
      if (lay->stage_flat[st].grads == r) return true;
  }
  return false;
}

static void zb_stash(ddp_builder *b, ddp_layout *lay) {
  ddp_plan *p = b->plan;
  uint32_t n = b->step.n, fe = b_forward_end(b);
  ddp_slot_use (*use)[DDP_MAX_PTRS] = ddp_xcalloc((size_t)n + 1, sizeof *use);
  uint8_t *isw = ddp_xcalloc((size_t)n + 1, 1);
  char why[160];
  for (uint32_t k = 0; k < n; k++) {
    if (ddp_instr_footprint(&b->step.v[k], 1, use[k], why, sizeof why)) memset(use[k], 0, sizeof use[k]);
    isw[k] = k > fe && lay->instr_chunk[k] >= 0 && writes_stage_grad(b, lay, &b->step.v[k], use[k]);
  }
  /* the last backward (B) writer of each root, by instruction */
  int32_t *last_b_write = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  for (uint32_t t = 0; t < p->ntensors; t++) last_b_write[t] = -1;
  for (uint32_t k = fe + 1; k < n; k++)
    if (!isw[k])
      for (int sl = 0; sl < DDP_MAX_PTRS; sl++)
        if (use[k][sl].write && b->step.v[k].p[sl].tensor >= 0)
          last_b_write[ddp_tensor_root(p, b->step.v[k].p[sl].tensor)] = (int32_t)k;
  ddp_program out = {0};
  int32_t *chunk = ddp_xmalloc(sizeof(int32_t) * (2 * (size_t)n * DDP_MAX_PTRS + 1));
  uint32_t *moved = ddp_xmalloc(sizeof(uint32_t) * ((size_t)n + 1)); /* [k]: instruction k's new index */
  uint32_t nout = 0;
  for (uint32_t k = 0; k < n; k++) {
    ddp_instr in = b->step.v[k];
    if (isw[k])
      for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
        int32_t t = in.p[sl].tensor;
        if (t < 0 || !use[k][sl].used || use[k][sl].write) continue;
        int32_t root = ddp_tensor_root(p, t);
        if (last_b_write[root] <= (int32_t)k) continue; /* nothing later in the backward changes it */
        const ddp_tensor rt = p->tensors[root];
        int32_t stash = b_tensor(b, b_fmt(b, "%s.stash%u", rt.name, k), rt.dtype, rt.arena, 0, rt.ndim, rt.shape);
        ddp_instr cp = ddp_instr_blank(I_COPY, STREAM_COMPUTE);
        b_arg(&cp, COPY_P_SRC, root, 0, DT_NONE);
        b_arg(&cp, COPY_P_DST, stash, 0, DT_NONE);
        cp.i[COPY_I_BYTES] = (int64_t)rt.bytes;
        cp.layer = in.layer;
        if (!ddp_program_push(&out, &cp))
          ddp_out_of_memory("ordering a pipeline's program (at %u instructions)", out.n); /* exits as ddp_x* do */
        chunk[nout++] = lay->instr_chunk[k];
        uint64_t off = in.p[sl].view;
        for (int32_t v = t; p->tensors[v].base >= 0; v = p->tensors[v].base) off += p->tensors[v].view;
        in.p[sl].tensor = stash;
        in.p[sl].view = off;
      }
    if (!ddp_program_push(&out, &in)) ddp_out_of_memory("ordering a pipeline's program (at %u instructions)", out.n);
    moved[k] = nout;
    chunk[nout++] = lay->instr_chunk[k];
  }
  for (int j = 0; j < b->ntp_patches; j++) /* the tensor ranks' patches follow their instructions */
    b->tp_patches[j].instr = moved[b->tp_patches[j].instr];
  free(moved);
  ddp_program_free(&b->step);
  b->step = out;
  free(lay->instr_chunk);
  lay->instr_chunk = chunk;
  free(use);
  free(isw);
  free(last_b_write);
}

typedef struct use_rec { /* one use of an activation by the one-microbatch program */
  int32_t t;
  int key, rank;
  uint32_t k;
  bool write;
} use_rec;

static int by_tensor_key(const void *a, const void *b) {
  const use_rec *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

/* Each instruction's part (F, B, W), and the tensors that cross ranks. A tensor's uses, in a microbatch's
 * logical order (forward chunks up, backward chunks down, then weight parts), fall into runs on one rank;
 * where a run ends on rank a and the next starts on rank b that does not hold the newest value, the value
 * moves from a to b (the residual stream's gradient is one tensor the whole backward adds into, so it goes
 * stage to stage like this; an activation a stage reads back in its backward, unchanged, stays). */
static int analyse(pctx *x, char *err, size_t errcap) {
  ddp_builder *b = x->b;
  const ddp_plan *p = b->plan;
  uint32_t n = b->step.n;
  x->fe = b_forward_end(b);
  x->part = ddp_xcalloc((size_t)n + 1, 1);
  use_rec *uses = ddp_xmalloc(sizeof(use_rec) * ((size_t)n * DDP_MAX_PTRS + 1));
  size_t nu = 0;
  for (uint32_t k = 0; k < n; k++) {
    const ddp_instr *in = &b->step.v[k];
    int c = x->lay->instr_chunk[k];
    if (c < 0) continue;
    ddp_slot_use use[DDP_MAX_PTRS];
    char why[160];
    if (ddp_instr_footprint(in, 1, use, why, sizeof why)) {
      free(uses);
      return ddp_fail(err, errcap, "pipeline: builder instruction %u: %s", k, why);
    }
    int part = k < x->fe ? ACT_F : ACT_B;
    if (part == ACT_B && x->s->pipe_schedule == PIPE_ZERO_BUBBLE && writes_stage_grad(b, x->lay, in, use)) part = ACT_W;
    x->part[k] = (uint8_t)part;
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
      if (!use[sl].used || in->p[sl].tensor < 0) continue;
      int32_t t = ddp_tensor_root(p, in->p[sl].tensor);
      const ddp_tensor *tt = &p->tensors[t];
      if (tt->arena != ARENA_ACT || (tt->flags & TF_PERSISTENT)) continue; /* a stage's own, or on every rank */
      uses[nu++] = (use_rec){t, key_of(x, part, c), rank_of_chunk(x, c), k, use[sl].write != 0};
    }
  }
  qsort(uses, nu, sizeof *uses, by_tensor_key);
  /* per tensor: which version of it each rank holds; a run on a rank holding an older one receives it from
   * the rank of the run before (which holds the newest: it wrote it or received it) */
  x->flows = ddp_xcalloc(nu + 1, sizeof(flow));
  int *known = ddp_xmalloc(sizeof(int) * (size_t)x->P);
  int version = 0;
  for (size_t i = 0; i < nu; i++) {
    if (i == 0 || uses[i].t != uses[i - 1].t) {
      for (int r = 0; r < x->P; r++) known[r] = -1;
      version = 0;
      known[uses[i].rank] = 0;
    } else if (uses[i].rank != uses[i - 1].rank && known[uses[i].rank] != version) {
      x->flows[x->nflows++] = (flow){uses[i].t, uses[i - 1].rank, uses[i - 1].key, uses[i].rank, uses[i].key};
      known[uses[i].rank] = version;
    }
    if (uses[i].write) known[uses[i].rank] = ++version;
  }
  free(known);
  free(uses);
  return 0;
}

/* Microbatch i's tensors: activations cloned (views after their bases), tokens and targets as slices of
 * the replica's batch; everything else shared. */
static void clone_tensors(pctx *x) {
  ddp_builder *b = x->b;
  uint32_t nt = b->plan->ntensors; /* the builder's tensors; clones come after */
  int64_t mbrows = b->rows;
  int64_t tshape[1] = {mbrows * x->m}, tgshape[1];
  const ddp_tensor *tg = b_t(b, b->targets);
  int64_t tg_per = (int64_t)ddp_tensor_numel(tg);
  tgshape[0] = tg_per * x->m;
  int tok_dt = b_t(b, b->tokens)->dtype, tg_dt = tg->dtype;
  int64_t tok_per = (int64_t)ddp_tensor_numel(b_t(b, b->tokens));
  tshape[0] = tok_per * x->m;
  x->tokens = b_tensor(b, "batch.tokens.replica", tok_dt, ARENA_IO, TF_TOKENS | TF_PERSISTENT, 1, tshape);
  x->targets = b_tensor(b, "batch.targets.replica", tg_dt, ARENA_IO, TF_TARGETS | TF_PERSISTENT, 1, tgshape);
  x->map = ddp_xcalloc((size_t)x->m, sizeof(int32_t *));
  for (int i = 0; i < x->m; i++) {
    int32_t *mp = x->map[i] = ddp_xmalloc(sizeof(int32_t) * ((size_t)nt + 1));
    for (uint32_t t = 0; t < nt; t++) mp[t] = (int32_t)t;
    /* this microbatch's rows of the replica's batch */
    mp[b->tokens] = b_view(b, b_fmt(b, "batch.tokens.mb%d", i), x->tokens,
                           (uint64_t)(i * tok_per) * ddp_dtype_size(tok_dt), tok_dt, b_t(b, b->tokens)->ndim,
                           b_t(b, b->tokens)->shape, 0);
    mp[b->targets] = b_view(b, b_fmt(b, "batch.targets.mb%d", i), x->targets,
                            (uint64_t)(i * tg_per) * ddp_dtype_size(tg_dt), tg_dt, b_t(b, b->targets)->ndim,
                            b_t(b, b->targets)->shape, 0);
    for (uint32_t t = 0; t < nt; t++) { /* views come after their bases in the table */
      const ddp_tensor tt = b->plan->tensors[t];
      if ((int32_t)t == b->tokens || (int32_t)t == b->targets || (tt.flags & TF_SHAPE_ONLY)) continue;
      int32_t root = ddp_tensor_root(b->plan, (int32_t)t);
      bool data = root == b->tokens || root == b->targets;
      const ddp_tensor rt = b->plan->tensors[root];
      if (!data && (i == 0 || rt.arena != ARENA_ACT || (rt.flags & TF_PERSISTENT))) continue;
      if (tt.base < 0) mp[t] = b_tensor(b, b_fmt(b, "mb%d.%s", i, tt.name), tt.dtype, tt.arena, tt.flags, tt.ndim, tt.shape);
      else mp[t] = b_view(b, b_fmt(b, "mb%d.%s", i, tt.name), mp[tt.base], tt.view, tt.dtype, tt.ndim, tt.shape, tt.flags);
    }
  }
}

/* builder instruction k for microbatch mb: tensors mapped, the loss scaled to the replica's mean (the
 * tensor ranks' patches apply to the result: a TPP_VIEW offsets the view inside the microbatch's tensor) */
static ddp_instr for_mb(const pctx *x, uint32_t k, int mb) {
  ddp_instr in = x->b->step.v[k];
  for (int sl = 0; sl < DDP_MAX_PTRS; sl++)
    if (in.p[sl].tensor >= 0) in.p[sl].tensor = x->map[mb][in.p[sl].tensor];
  if (in.opcode == I_KERNEL) {
    if (in.op == OP_XENT) in.f[XENT_F_SCALE] /= (float)x->m;
    if (in.op == OP_XENT_VP) in.f[XENT_VP_F_SCALE] /= (float)x->m;
    if (in.op == OP_MSE) in.f[MSE_F_SCALE] /= (float)x->m;
    if (in.op == OP_SUM && x->b->step.v[k].p[SUM_P_OUT].tensor == x->b->loss) {
      in.f[SUM_F_SCALE] /= (float)x->m;
      in.i[SUM_I_ACC] = mb > 0;
    }
  }
  return in;
}

/* SEND or RECV of flow f for microbatch mb; the flow's ranks are stages, the peer is the stage's rank in
 * this rank's replica with this rank's tensor rank */
static void p2p(rank_ctx *c, const pctx *x, int opcode, const flow *f, int mb) {
  int32_t t = x->map[mb][f->t];
  const ddp_tensor *tt = b_t(c->b, t);
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMPUTE);
  b_arg(&in, COLL_P_BUF, t, 0, tt->dtype);
  in.i[COLL_I_COUNT] = (int64_t)ddp_tensor_numel(tt);
  in.i[COLL_I_PEER] = world_rank(x, replica_of(x, c->rank), opcode == I_SEND ? f->to_rank : f->from_rank, c->tp);
  bool act = f->from_key < x->C;
  rp_push(c, in, b_fmt(c->b, "pp.%s.%s.mb%d:%s", opcode == I_SEND ? "send" : "recv", act ? "act" : "grad", mb,
                       c->b->plan->tensors[f->t].name));
}

/* Tensor parallelism: the stage's squares as pass_tp_sumsq counts them: one table of DDP_SUMSQ_PARTS per run
 * of split or whole units of the stage's flat, a whole run's zeroed on tensor ranks other than 0 (counted
 * once), the tables past the stage's runs zeroed, all summed over the tensor group. */
static void sumsq_tp(rank_ctx *c, const ddp_stage_flat *f, int stage) {
  int n = ddp_layout_tp_stage_runs(c->b, c->lay, stage, NULL, NULL, NULL);
  int64_t *lo = ddp_xcalloc((size_t)n + 1, sizeof(int64_t)), *hi = ddp_xcalloc((size_t)n + 1, sizeof(int64_t));
  bool *split = ddp_xcalloc((size_t)n + 1, sizeof(bool));
  ddp_layout_tp_stage_runs(c->b, c->lay, stage, lo, hi, split);
  pass_tp_sumsq_runs(c, f->grads, n, lo, hi, split);
  free(lo), free(hi), free(split);
}

static void optimizer(rank_ctx *c, const pctx *x, const ddp_stage_flat *f, int stage) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  rp_range(c, 1, RANGE_OPTIMIZER, "optimizer");
  rp_timer(c, STREAM_COMPUTE, TIMER_OPT_BEGIN);
  if (lay->sumsq_partials >= 0) { /* the norm over every stage's gradients */
    if (x->T > 1) {
      sumsq_tp(c, f, stage);
    } else {
      ddp_instr in = b_kernel(OP_SUMSQ);
      b_buf(b, &in, SUMSQ_P_X, f->grads);
      b_buf(b, &in, SUMSQ_P_PART, lay->sumsq_partials);
      in.i[SUMSQ_I_N] = f->n;
      in.i[SUMSQ_I_P] = lay->sumsq_p;
      rp_push(c, in, "grad_norm.sumsq");
    }
    c->comm = comm_replica(x, replica_of(x, c->rank), c->tp); /* the replica's stages (0: the world) */
    rp_collective(c, I_ALL_REDUCE, STREAM_COMPUTE, lay->sumsq_partials, 0, lay->sumsq_p, REDOP_SUM, 0,
                  "grad_norm.all_reduce");
    c->comm = 0;
  }
  pass_scalars(c);
  pass_upd u = {.n = f->n, .param = f->params, .grad = f->grads, .m = f->m, .v = f->v, .copy = f->copies};
  pass_update_at(c, &u, "optimizer.stage");
  pass_memset(c, f->grads); /* zero_grad for the next step, inside the optimizer's timers (see step_rank) */
  rp_range(c, 0, RANGE_OPTIMIZER, NULL);
}

/* init -> MEMSET(stage flats, scalars, loss) INIT_TENSOR(the stage's units) [INIT_TENSOR(rope)]
 *         [BROADCAST(stage params, frozen units) from the stage's first replica, on the stage's comm] |
 *         refresh: [CAST(stage copies)] CAST(frozen copies)*
 * As ddp{}: replica 0 draws the values one rank would; the other replicas draw the same (identical_init),
 * or their own (salted by the replica) and receive replica 0's by the broadcast (the default). */
static void init_rank(rank_ctx *c, const pctx *x, int stage) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  const ddp_schedule *s = b->s;
  const ddp_stage_flat *f = &lay->stage_flat[stage];
  int replica = replica_of(x, c->rank);
  bool no_comm = s->mode == MODE_FORWARD, bcast = s->replicas > 1 && s->broadcast_init && !no_comm;
  int salt = s->identical_init || replica == 0 || (no_comm && s->broadcast_init) ? 0 : replica;
  pass_memset(c, f->params), pass_memset(c, f->grads), pass_memset(c, f->m), pass_memset(c, f->v);
  pass_memset(c, b->scalars), pass_memset(c, b->loss);
  for (int u = 0; u < b->nunits; u++)
    if (lay->stage_of_unit[u] != stage) continue;
    else if (b->units[u].tp_split && x->T > 1) pass_init_unit_tp(c, u, salt); /* the tensor rank's part */
    else pass_init_unit(c, u, b->units[u].master, 0, 0, b->units[u].numel, salt);
  pass_init_rope(c);
  if (bcast) {
    c->comm = comm_stage(x, stage, c->tp);
    rp_collective(c, I_BROADCAST, STREAM_COMPUTE, f->params, 0, f->n, REDOP_SUM, 0, b_fmt(b, "broadcast.stage%d.params", stage));
    for (int u = 0; u < b->nunits; u++)
      if (lay->stage_of_unit[u] == stage && !b->units[u].trainable)
        rp_collective(c, I_BROADCAST, STREAM_COMPUTE, b->units[u].master, 0, b->units[u].numel, REDOP_SUM, 0,
                      b->units[u].name);
    c->comm = 0;
  }
  b->plan->ranks[c->rank].init_refresh = c->out->n;
  if (f->copies >= 0) pass_cast(c, f->params, f->copies, f->n, "params.copy");
  for (int u = 0; u < b->nunits; u++) {
    const ddp_unit *un = &b->units[u];
    if (lay->stage_of_unit[u] == stage && !un->trainable && un->copy != un->master)
      pass_cast(c, un->master, un->copy, un->numel, un->name);
  }
}

static void step_rank(rank_ctx *c, const pctx *x, int stage) {
  ddp_builder *b = c->b;
  const ddp_schedule *s = b->s;
  const ddp_stage_flat *f = &c->lay->stage_flat[stage];
  bool grads = b->backward, train = s->mode == MODE_TRAIN;
  int na = 0;
  action *acts = stage_actions(x, stage, grads, &na);
  rp_range(c, 1, RANGE_STEP, "step");
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_BEGIN);
  ddp_instr load = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  b_buf(b, &load, LOAD_BATCH_P_INPUTS, x->tokens);
  b_buf(b, &load, LOAD_BATCH_P_TARGETS, x->targets);
  load.i[LOAD_BATCH_I_PART] = replica_of(x, c->rank); /* the replica (its tensor ranks share its sequences) */
  load.i[LOAD_BATCH_I_PARTS] = s->replicas;
  rp_push(c, load, "load_batch");
  /* Training zeroes the stage's gradients at the end of the optimizer (init zeroes them for the first step),
   * so the zeroing (a 4 GB memset, about 1 ms on H200, for the XL model's stage) counts in the optimizer's
   * time, not as idle time in the pipeline's bubble; a backward without an optimizer zeroes them here. */
  if (grads && !train) pass_memset(c, f->grads);
  bool sync = grads && s->replicas > 1;
  gbuckets gb = {0};
  if (sync) gb = stage_buckets(x, stage);
  int last_f = -1, last_b = -1;
  for (int a = 0; a < na; a++) {
    if (acts[a].kind == ACT_F) last_f = a;
    else last_b = a;
  }
  /* At each transfer point (before the first action, and after every action not joined to the next): the
   * sends of the actions since the last point, then the receives of the actions up to the next point,
   * consecutive, so they go out as one group. */
  int from = 0;
  for (int a = 0; a <= na; a++) {
    if (a > 0 && a < na && acts[a - 1].joined) goto run;
    for (int q = from; q < a; q++) {
      int key = key_of(x, acts[q].kind, acts[q].chunk);
      for (int k = 0; k < x->nflows; k++)
        if (x->flows[k].from_rank == stage && x->flows[k].from_key == key) p2p(c, x, I_SEND, &x->flows[k], acts[q].mb);
    }
    from = a;
    for (int q = a; q < na; q++) {
      int key = key_of(x, acts[q].kind, acts[q].chunk);
      for (int k = 0; k < x->nflows; k++)
        if (x->flows[k].to_rank == stage && x->flows[k].to_key == key) p2p(c, x, I_RECV, &x->flows[k], acts[q].mb);
      if (!acts[q].joined) break;
    }
  run:
    if (a == na) break;
    const action *ac = &acts[a];
    rp_timer(c, STREAM_COMPUTE, ac->kind == ACT_F ? TIMER_MB_FORWARD_BEGIN : TIMER_MB_BACKWARD_BEGIN);
    rp_range(c, 1, ac->kind == ACT_F ? RANGE_FORWARD : RANGE_BACKWARD,
             b_fmt(b, "pp.%s.mb%d.chunk%d", ac->kind == ACT_F ? "fwd" : ac->kind == ACT_B ? "bwd" : "bwdw", ac->mb,
                   ac->chunk));
    for (uint32_t k = 0; k < b->step.n; k++) {
      if (c->lay->instr_chunk[k] != ac->chunk || x->part[k] != ac->kind) continue;
      ddp_instr in = for_mb(x, k, ac->mb);
      pass_tp_apply(c, k, &in); /* the tensor rank's patches (nothing without tensor parallelism) */
      if (in.opcode == I_TIMER) in.i[TIMER_I_SLOT] = c->ntimers++; /* a tensor collective's TP_COMM timer */
      rp_push(c, in, NULL);
      if (!sync || ac->mb != x->m - 1 || ac->kind == ACT_F) continue;
      for (int u = 0; u < b->nunits; u++) /* the last microbatch's last write of unit u's gradient */
        if (x->grad_last[u] == (int32_t)k && gb.of_unit[u] >= 0 && --gb.pending[gb.of_unit[u]] == 0)
          allreduce_bucket(c, x, &gb, gb.of_unit[u], stage);
    }
    rp_range(c, 0, ac->kind == ACT_F ? RANGE_FORWARD : RANGE_BACKWARD, NULL);
    rp_timer(c, STREAM_COMPUTE, ac->kind == ACT_F ? TIMER_MB_FORWARD_END : TIMER_MB_BACKWARD_END);
    if (a == last_f) rp_timer(c, STREAM_COMPUTE, TIMER_FORWARD_END);
    if (grads && a == last_b) rp_timer(c, STREAM_COMPUTE, TIMER_BACKWARD_END);
  }
  if (sync) { /* buckets no instruction completed (none here: every unit's gradient is written), then wait */
    for (int k = 0; k < gb.n; k++)
      if (!gb.issued[k]) allreduce_bucket(c, x, &gb, k, stage);
    rp_order(c, STREAM_COMM, STREAM_COMPUTE);
    gbuckets_free(&gb);
  }
  if (train) optimizer(c, x, f, stage);
  rp_timer(c, STREAM_COMPUTE, TIMER_STEP_END);
  rp_range(c, 0, RANGE_STEP, NULL);
  free(acts);
}

int pass_pipeline(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  if (s->pipe_schedule == PIPE_ZERO_BUBBLE && b->backward) zb_stash(b, lay);
  pctx x = {.b = b, .lay = lay, .s = s, .P = s->stages, .C = lay->nchunks, .m = s->microbatches, .D = s->replicas,
            .T = b->tp > 1 ? b->tp : 1};
  x.Sn = x.D > 1 ? x.P * x.T : 0;
  x.Rn = x.D > 1 || x.T > 1 ? x.D * x.T : 0;
  if (analyse(&x, err, errcap)) {
    free(x.part);
    free(x.flows);
    return -1;
  }
  clone_tensors(&x);
  x.grad_last = grad_last_writers(b);
  b->tokens = x.tokens; /* the plan's meta names the replica's batch */
  b->targets = x.targets;
  b->plan->meta.world = s->ranks; /* stages x replicas x tensor ranks */
  pass_tp_prepare(b);              /* the tensor ranks' patches in instruction order (no communicators) */
  /* the communicators (numbering: the comment at the top) */
  int P = x.P, D = x.D, T = x.T;
  int32_t *m = ddp_xmalloc(sizeof(int32_t) * (size_t)(P + D + T));
  for (int st = 0; st < P && x.Sn; st++)
    for (int t = 0; t < T; t++) {
      for (int d = 0; d < D; d++) m[d] = world_rank(&x, d, st, t);
      if (ddp_plan_add_comm(b->plan, m, (uint32_t)D) != comm_stage(&x, st, t)) ddp_xmalloc(SIZE_MAX);
    }
  for (int d = 0; d < D && x.Rn; d++)
    for (int t = 0; t < T; t++) {
      for (int st = 0; st < P; st++) m[st] = world_rank(&x, d, st, t);
      if (ddp_plan_add_comm(b->plan, m, (uint32_t)P) != comm_replica(&x, d, t)) ddp_xmalloc(SIZE_MAX);
    }
  for (int d = 0; d < D && T > 1; d++)
    for (int st = 0; st < P; st++) {
      for (int t = 0; t < T; t++) m[t] = world_rank(&x, d, st, t);
      if (ddp_plan_add_comm(b->plan, m, (uint32_t)T) != comm_tensor(&x, d, st)) ddp_xmalloc(SIZE_MAX);
    }
  free(m);
  b->plan->ranks = ddp_xcalloc((size_t)s->ranks, sizeof(ddp_rank_plan));
  for (int r = 0; r < s->ranks; r++) {
    ddp_rank_plan *rp = &b->plan->ranks[r];
    int st = stage_of(&x, r), d = replica_of(&x, r);
    rank_ctx c = {.b = b, .lay = lay, .rank = r, .world_rank = r, .out = &rp->init, .tp = r % T,
                  .tp_comm = comm_tensor(&x, d, st)};
    init_rank(&c, &x, st);
    c.out = &rp->step;
    step_rank(&c, &x, st);
    rp->nevents = c.nevents;
    rp->ntimers = c.ntimers;
  }
  for (int i = 0; i < x.m; i++) free(x.map[i]);
  free(x.map);
  free(x.part);
  free(x.flows);
  free(x.grad_last);
  return 0;
}

/* compiler/explain/sim.c: the stream simulator of `ddpc explain` (docs/EXPLAIN.md, "The model"). Every rank
 * starts its step at 0 with one clock per stream; instructions run in program order on their stream, each
 * for its cost (cost.c); EVENT_RECORD stamps the event with its stream's clock, EVENT_WAIT moves its
 * stream's clock up to the last record's stamp (a wait before any record is free, as in CUDA); a
 * collective starts when every rank has reached it on its stream (the max of the ranks' ready times) and
 * a point-to-point group (consecutive SEND/RECV on one stream) is posted when reached, each pair running when
 * both sides are posted (post_group). A collective spans its communicator: the world (comm 0) or the
 * plan's group (pipeline replicas: a stage's replicas; tensor parallelism: a tensor group, whose
 * all-reduces run on the compute stream, or a tensor rank's data group), starting when every member has
 * reached it and timed with the group's size (plan/work.c), so the groups of different stages (or tensor
 * groups) run independently. The
 * compute work of a rank (every costed instruction but the collectives) shares one device: each runs at
 * its full rate in the device's free time from its stream's clock on, across as many gaps as it takes
 * (device_place), so two streams' kernels never run at once (the profile's rates are each of the whole device),
 * while a collective overlaps compute, but while one runs on a rank (its interval at full cost, also in
 * the zero-communication run: the loss is compute's, not waiting) the rank's compute on the other streams
 * runs at 1 - the profile's collective_share of its rate (stretch; point-to-point transfers do not slow
 * compute; a collective NCCL runs on the copy engines, an all-gather or all-to-all of a plan whose arenas
 * are symmetric windows under the zero-CTA policy, slows it by copy_engine_share instead, the larger share
 * where both kinds run). A collective never slows its own stream's work: in the full run that work waits for it, and
 * in the zero-communication run it must not either (the tensor-parallel all-reduces on the compute stream,
 * compiler/passes/tensor.c, would otherwise stretch the kernels after them by collective_share of their
 * whole cost, and the exposed communication would lose that share); nor the work of a stream that has waited
 * for it through an event (known_after_wait: a flat DDP's update after its all-reduce). Each instruction remembers the
 * dependency that set its start (a kernel delayed by the other stream's kernels keeps its stream or event
 * dependency), so the critical path can be walked back. */
#include "err.h"
#include "explain.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ev_state {
  double t;
  int64_t src; /* the instruction before the record on its stream, or -1 */
  int recorded;
} ev_state;

typedef struct coll_iv { /* one collective's interval, as issued */
  double s, e;
  uint32_t sid;  /* its stream */
  int64_t seq;   /* 1 + the collectives issued on that stream before it */
  int ce;        /* on the copy engines */
} coll_iv;

typedef struct busy_iv {
  double s, e;
} busy_iv;

typedef struct coll_set { /* a union of collectives' intervals, sorted, disjoint */
  busy_iv *v;
  size_t n, cap;
} coll_set;

typedef struct rank_state {
  uint32_t pc;
  coll_set dev;    /* the device's busy time: sorted, disjoint intervals, touching ones merged */
  coll_set *coll; /* [nstreams]: the collectives' intervals that slow stream k's compute (the other streams') */
  coll_set *coll_ce; /* [nstreams]: ... of those on the copy engines (copy_engine_share) */
  coll_iv *issued;   /* every collective's interval, in issue order */
  size_t nissued, capissued;
  int64_t *seq;      /* [nstreams]: collectives issued on each stream */
  int64_t *known;    /* [nstreams x nstreams]: known[a][b]: how many of b's collectives stream a has waited for */
  int64_t *ev_known; /* [nev x nstreams]: what an event's record knew: its stream's collectives and its known */
  double *clock;   /* [nstreams] */
  int64_t *last;   /* [nstreams]: the last instruction on each stream, -1 */
  ev_state *ev;    /* [nev] */
} rank_state;

static int is_coll(int opc) { return ddp_is_group_collective(opc) || opc == I_SEND || opc == I_RECV; }

void ddp_sim_free(ddp_sim *s) {
  if (!s) return;
  for (int r = 0; r < s->world && s->ranks; r++) {
    free(s->ranks[r].busy_s);
    free(s->ranks[r].compute_s);
    free(s->ranks[r].in);
  }
  free(s->ranks);
  free(s);
}

/* The first interval of v[0..n) (sorted, disjoint) that ends after t. */
static size_t first_ending_after(const busy_iv *v, size_t n, double t) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v[mid].e <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Adds [s, e) to the union c. */
static void coll_set_add(coll_set *c, double s, double e) {
  size_t i = first_ending_after(c->v, c->n, s), j = i;
  while (j < c->n && c->v[j].s <= e) { /* overlapping or touching: merged */
    if (c->v[j].s < s) s = c->v[j].s;
    if (c->v[j].e > e) e = c->v[j].e;
    j++;
  }
  size_t removed = j - i;
  if (removed == 0) {
    if (c->n == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 16;
      c->v = ddp_xrealloc(c->v, c->cap * sizeof *c->v);
    }
    memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof *c->v);
    c->n++;
  } else if (removed > 1) {
    memmove(&c->v[i + 1], &c->v[j], (c->n - j) * sizeof *c->v);
    c->n -= removed - 1;
  }
  c->v[i] = (busy_iv){s, e};
}

/* Compute work of c seconds ready at t runs in the device's free time from t on, across as many gaps as it
 * takes: a kernel's blocks interleave with the other streams' kernels rather than waiting for a gap that
 * holds it whole (which left the gaps between one stream's short kernels idle; 2 x H200, 2026-11-28: the
 * updates of `nccl.all_reduce = "peer_copy"` placed beside the backward put it 32% over the measured one).
 * That time is marked busy. Returns the work's start (the first free moment at or after t); *end its end. */
static double device_place(rank_state *st, double t, double c, double *end) {
  double cur = t, left = c, start = -1;
  while (left > 0) {
    size_t i = first_ending_after(st->dev.v, st->dev.n, cur);
    if (i < st->dev.n && st->dev.v[i].s <= cur) { /* inside a busy interval: on at its end */
      cur = st->dev.v[i].e;
      continue;
    }
    double take = i < st->dev.n && st->dev.v[i].s - cur < left ? st->dev.v[i].s - cur : left;
    if (start < 0) start = cur;
    coll_set_add(&st->dev, cur, cur + take);
    left -= take;
    cur += take;
  }
  *end = cur;
  return start < 0 ? t : start;
}

/* Does this collective run on the copy engines? All-gathers and all-to-alls of a plan whose arenas are
 * symmetric windows under the zero-CTA policy (NCCL 2.28 on NVLink; the runtime reports what it took) or
 * moved by copy-engine pulls (nccl.movement = "peer_copy"), and the peer copies (cudaMemcpyAsync from the
 * peers' mapped memory). */
int ddp_coll_on_copy_engines(const ddp_plan *p, const ddp_instr *in) {
  const int opc = in->opcode;
  if (opc == I_PEER_COPY || ddp_instr_peer_copied(in)) return 1;
  return (opc == I_ALL_GATHER || opc == I_ALL_TO_ALL) && p->meta.nccl_register == NCCL_REGISTER_WINDOW &&
         p->meta.nccl_cta_policy == NCCL_CTA_ZERO;
}

/* A collective on stream `sid` over [s, e): it slows the compute of every other stream of the rank (ce: by
 * the copy engines' share) until that stream waits for it (known_after_wait). */
static void coll_add(rank_state *st, uint32_t ns, uint32_t sid, double s, double e, int ce) {
  if (!(e > s)) return;
  if (st->nissued == st->capissued) {
    st->capissued = st->capissued ? 2 * st->capissued : 64;
    st->issued = ddp_xrealloc(st->issued, st->capissued * sizeof *st->issued);
  }
  st->issued[st->nissued++] = (coll_iv){s, e, sid, ++st->seq[sid], ce};
  for (uint32_t k = 0; k < ns; k++)
    if (k != sid) coll_set_add(ce ? &st->coll_ce[k] : &st->coll[k], s, e);
}

/* Stream `sid` has waited for an event whose record knew ev[0..ns) of each stream's collectives. A
 * collective a stream has waited for no longer slows its compute. In the full run its interval lies before
 * the wait anyway; in the zero-communication run it still occupies its interval (for the slowdown of the
 * work beside it), and the work that waits for it must not be stretched by it, any more than its own
 * stream's next kernels are: else a flat DDP's update, which waits for the all-reduce, runs beside that
 * all-reduce's phantom, and the exposed communication loses collective_share of the all-reduce. */
static void known_after_wait(rank_state *st, uint32_t ns, uint32_t sid, const int64_t *ev) {
  int64_t *kn = &st->known[(size_t)sid * ns];
  int more = 0;
  for (uint32_t b = 0; b < ns; b++)
    if (b != sid && ev[b] > kn[b]) kn[b] = ev[b], more = 1;
  if (!more) return;
  st->coll[sid].n = st->coll_ce[sid].n = 0;
  for (size_t j = 0; j < st->nissued; j++) {
    const coll_iv *c = &st->issued[j];
    if (c->sid != sid && c->seq > kn[c->sid]) coll_set_add(c->ce ? &st->coll_ce[sid] : &st->coll[sid], c->s, c->e);
  }
}

/* The next boundary of the union v[0..n) after cur, from index *i on (advanced past intervals ending by
 * cur); *inside: whether cur lies in one. INFINITY: none. */
static double next_edge(const coll_set *cs, size_t *i, double cur, int *inside) {
  while (*i < cs->n && cs->v[*i].e <= cur) (*i)++;
  *inside = *i < cs->n && cs->v[*i].s <= cur;
  return *i == cs->n ? INFINITY : *inside ? cs->v[*i].e : cs->v[*i].s;
}

/* The wall time of c seconds of compute started at t when it runs at (1 - share) of its rate inside the
 * intervals of cs (the SM collectives of the other streams) and at (1 - ce_share) inside those of ce (their
 * copy-engine collectives), at the lower rate where both are. */
static double stretch(const coll_set *cs, double share, const coll_set *ce, double ce_share, double t, double c) {
  double cur = t, left = c;
  size_t i = first_ending_after(cs->v, cs->n, t), j = first_ending_after(ce->v, ce->n, t);
  for (;;) {
    int in_sm, in_ce;
    double a = next_edge(cs, &i, cur, &in_sm), b = next_edge(ce, &j, cur, &in_ce);
    double next = a < b ? a : b;
    double rate = 1 - (in_sm && share > 0 ? share : 0);
    if (in_ce && 1 - ce_share < rate) rate = 1 - ce_share;
    if (isinf(next) || left <= (next - cur) * rate) return cur + left / rate - t;
    left -= (next - cur) * rate;
    cur = next;
  }
}

/* The start of c seconds of compute on stream sid ready at t: where device_place runs it (the device's free
 * time from t on), slowed by the other streams' collectives around it (the stretch is taken from the first
 * free moment and not recomputed where the work is split). *wall: from its start to its end. */
static double compute_place(rank_state *st, uint32_t sid, double t, double c, const ddp_profile *pr, double *wall) {
  const coll_set *cs = &st->coll[sid], *ce = &st->coll_ce[sid];
  double w = c, end;
  if (!((pr->collective_share <= 0 || cs->n == 0) && (pr->copy_engine_share <= 0 || ce->n == 0))) {
    size_t i = first_ending_after(st->dev.v, st->dev.n, t);
    double s = i < st->dev.n && st->dev.v[i].s <= t ? st->dev.v[i].e : t; /* the first free moment */
    w = stretch(cs, pr->collective_share, ce, pr->copy_engine_share, s, c);
  }
  double start = device_place(st, t, w, &end);
  *wall = end - start;
  return start;
}

/* Runs rank r's instructions up to its next collective. */
static void advance(const ddp_plan *p, const ddp_profile *pr, ddp_sim *s, rank_state *st, int r, uint32_t nev,
                    uint32_t ns) {
  const ddp_program *prog = &p->ranks[r].step;
  ddp_sim_rank *sr = &s->ranks[r];
  while (st->pc < prog->n && !is_coll(prog->v[st->pc].opcode)) {
    uint32_t k = st->pc++;
    const ddp_instr *in = &prog->v[k];
    int sid = in->stream, comm = 0;
    ddp_sim_instr *si = &sr->in[k];
    si->dep = st->last[sid] >= 0 ? DEP_STREAM : DEP_NONE;
    si->dep_rank = st->last[sid] >= 0 ? r : -1;
    si->dep_index = st->last[sid];
    int64_t e = in->i[EVENT_I_EVENT];
    if (in->opcode == I_EVENT_RECORD && e >= 0 && (uint64_t)e < nev) {
      st->ev[e] = (ev_state){st->clock[sid], st->last[sid], 1};
      int64_t *ek = &st->ev_known[(size_t)e * ns];
      memcpy(ek, &st->known[(size_t)sid * ns], ns * sizeof *ek);
      ek[sid] = st->seq[sid];
    } else if (in->opcode == I_EVENT_WAIT && e >= 0 && (uint64_t)e < nev && st->ev[e].recorded) {
      known_after_wait(st, ns, (uint32_t)sid, &st->ev_known[(size_t)e * ns]);
      if (st->ev[e].t > st->clock[sid]) {
        st->clock[sid] = st->ev[e].t;
        si->dep = st->ev[e].src >= 0 ? DEP_EVENT : DEP_NONE;
        si->dep_rank = st->ev[e].src >= 0 ? r : -1;
        si->dep_index = st->ev[e].src;
      }
    }
    double c = ddp_instr_cost(p, in, pr, &comm), wall = c;
    si->start =
        c > 0 ? compute_place(st, (uint32_t)sid, st->clock[sid], c, pr, &wall) : st->clock[sid];
    si->end = si->start + wall;
    st->clock[sid] = si->end;
    st->last[sid] = k;
    sr->busy_s[sid] += c;
    sr->compute_s[sid] += c;
  }
}

/* Starts the collective at every rank in `who` (n of them) at the max of their ready times. */
static void fire(const ddp_plan *p, const ddp_profile *pr, int zero_comm, ddp_sim *s, rank_state *st, const int *who,
                 int n) {
  double start = -1;
  int late = who[0];
  for (int j = 0; j < n; j++) {
    int r = who[j];
    const ddp_instr *in = &p->ranks[r].step.v[st[r].pc];
    if (st[r].clock[in->stream] > start) start = st[r].clock[in->stream], late = r;
  }
  const ddp_instr *lin = &p->ranks[late].step.v[st[late].pc];
  int64_t late_prev = st[late].last[lin->stream];
  for (int j = 0; j < n; j++) {
    int r = who[j];
    uint32_t k = st[r].pc++;
    const ddp_instr *in = &p->ranks[r].step.v[k];
    int comm = 0;
    double full = ddp_instr_cost(p, in, pr, &comm), c = zero_comm ? 0 : full;
    if (in->opcode != I_PEER_BARRIER) /* a peer barrier is flags on the copy engines: no kernel beside the compute */
      coll_add(&st[r], s->nstreams, in->stream, start, start + full, ddp_coll_on_copy_engines(p, in));
    ddp_sim_instr *si = &s->ranks[r].in[k];
    if (late == r || st[r].clock[in->stream] == start) {
      si->dep = st[r].last[in->stream] >= 0 ? DEP_STREAM : DEP_NONE;
      si->dep_rank = si->dep ? r : -1;
      si->dep_index = st[r].last[in->stream];
    } else {
      si->dep = late_prev >= 0 ? DEP_COLLECTIVE : DEP_NONE;
      si->dep_rank = late_prev >= 0 ? late : -1;
      si->dep_index = late_prev;
    }
    si->start = start;
    si->end = start + c;
    st[r].clock[in->stream] = si->end;
    st[r].last[in->stream] = k;
    s->ranks[r].busy_s[in->stream] += c;
    s->ranks[r].comm_s += c;
  }
}

static int is_p2p(int opc) { return opc == I_SEND || opc == I_RECV; }

/* The end of the run of consecutive SEND/RECV on one stream that starts at `pc`: one group. */
static uint32_t group_end(const ddp_program *prog, uint32_t pc) {
  uint32_t e = pc;
  while (e < prog->n && is_p2p(prog->v[e].opcode) && prog->v[e].stream == prog->v[pc].stream) e++;
  return e;
}

/* Point-to-point groups, as NCCL runs them: when a rank reaches a group it posts every operation at its
 * stream's time; the k-th send from a to b pairs with the k-th receive on b from a, and a pair runs from
 * the later of their two post times for its cost; the rank leaves the group when all of its operations
 * have run, at the end of the last. A send of at most EAGER_SEND_BYTES does not wait for its receive: NCCL
 * writes it into the receiver's buffers, so it runs from its own post time, and the receive runs from the
 * later of its post and the send's start (2 x H200, 2026-11-23: every send of the traced XL pipeline
 * steps, fp32 activations and gradients of 3.3, 6.6 and 13.1 MB, finished in 0.03-0.05 ms, in zero bubble
 * too, whose sends and receives are not paired in one group; modelled as rendezvous, zero bubble with 8
 * microbatches was predicted with 35 ms of waiting where the GPU waited 13, +18.6% on the step, now
 * +4.1%). The verifier's deadlock proof keeps every send blocking: a plan must not depend on the
 * buffering. */
#define EAGER_SEND_BYTES ((double)(16u << 20)) /* what NCCL buffered on one NVLink peer in those traces */
typedef struct p2p_post {
  int rank;
  uint32_t k;
  double ready;
  int done; /* an eager send that has run; its pair only runs the receive */
} p2p_post;

typedef struct p2p_queue {
  p2p_post *v;
  size_t n, cap, head;
} p2p_queue;

typedef struct p2p_state {
  p2p_queue *send, *recv; /* [from * world + to]: posted, not yet paired */
  int *posted;            /* [rank] */
  uint32_t *gend, *left;  /* [rank]: the group's end, its operations not yet run */
  double *gmax;           /* [rank]: the latest end among its run operations */
} p2p_state;

/* Runs one side of a transfer from `start` for its cost; `late` is the post that set the start (the
 * other rank's: the dependency the critical path follows). */
static void run_side(const ddp_plan *p, const ddp_profile *pr, int zero_comm, ddp_sim *s, p2p_state *ps,
                     const p2p_post *me, const p2p_post *late, double start) {
  const ddp_instr *in = &p->ranks[me->rank].step.v[me->k];
  int comm = 0;
  double c = zero_comm ? 0 : ddp_instr_cost(p, in, pr, &comm);
  ddp_sim_instr *si = &s->ranks[me->rank].in[me->k];
  int other = late->rank != me->rank;
  si->dep = other ? DEP_COLLECTIVE : DEP_NONE;
  si->dep_rank = other ? late->rank : -1;
  si->dep_index = other ? (int64_t)late->k : -1;
  si->start = start;
  si->end = start + c;
  s->ranks[me->rank].busy_s[in->stream] += c;
  s->ranks[me->rank].comm_s += c;
  if (si->end > ps->gmax[me->rank]) ps->gmax[me->rank] = si->end;
  ps->left[me->rank]--;
}

static void run_pair(const ddp_plan *p, const ddp_profile *pr, int zero_comm, ddp_sim *s, p2p_state *ps,
                     const p2p_post *a, const p2p_post *b) {
  double start = a->ready > b->ready ? a->ready : b->ready;
  const p2p_post *late = a->ready >= b->ready ? a : b;
  if (!a->done) run_side(p, pr, zero_comm, s, ps, a, late, start);
  if (!b->done) run_side(p, pr, zero_comm, s, ps, b, late, start);
}

static void post_group(const ddp_plan *p, const ddp_profile *pr, int zero_comm, ddp_sim *s, rank_state *st,
                       p2p_state *ps, int r) {
  int world = (int)p->meta.world;
  const ddp_program *prog = &p->ranks[r].step;
  uint32_t pc = st[r].pc, e = group_end(prog, pc);
  ps->posted[r] = 1;
  ps->gend[r] = e;
  ps->left[r] = e - pc;
  ps->gmax[r] = st[r].clock[prog->v[pc].stream];
  for (uint32_t k = pc; k < e; k++) {
    const ddp_instr *in = &prog->v[k];
    int64_t q = in->i[COLL_I_PEER];
    p2p_post me = {r, k, st[r].clock[in->stream], 0};
    if (q < 0 || q >= world || q == r) continue; /* the reader refuses such plans */
    bool send = in->opcode == I_SEND;
    ddp_work w;
    ddp_instr_work(p, in, &w);
    if (send && w.kind == WORK_COLL && w.wire_bytes <= EAGER_SEND_BYTES) { /* runs now, on its own */
      run_side(p, pr, zero_comm, s, ps, &me, &me, me.ready);
      me.done = 1;
    }
    p2p_queue *mine = send ? &ps->send[(size_t)r * (size_t)world + (size_t)q] : &ps->recv[(size_t)q * (size_t)world + (size_t)r];
    p2p_queue *theirs = send ? &ps->recv[(size_t)r * (size_t)world + (size_t)q] : &ps->send[(size_t)q * (size_t)world + (size_t)r];
    if (theirs->head < theirs->n) {
      run_pair(p, pr, zero_comm, s, ps, &theirs->v[theirs->head], &me);
      theirs->head++;
    } else {
      if (mine->n == mine->cap) {
        mine->cap = mine->cap ? 2 * mine->cap : 8;
        mine->v = ddp_xrealloc(mine->v, mine->cap * sizeof *mine->v);
      }
      mine->v[mine->n++] = me;
    }
  }
}

ddp_sim *ddp_simulate(const ddp_plan *p, const ddp_profile *pr, int zero_comm, char *err, size_t errcap) {
  int world = (int)p->meta.world;
  if (world < 1 || !p->ranks) return ddp_fail(err, errcap, "the plan has no ranks"), NULL;
  uint32_t ns = p->nstreams > DDP_DEFAULT_STREAMS ? p->nstreams : DDP_DEFAULT_STREAMS, nev = 1;
  for (int r = 0; r < world; r++) {
    const ddp_program *prog = &p->ranks[r].step;
    if (p->ranks[r].nevents > nev) nev = p->ranks[r].nevents;
    for (uint32_t k = 0; k < prog->n; k++) {
      if (prog->v[k].stream >= ns) ns = prog->v[k].stream + 1u;
      int opc = prog->v[k].opcode;
      if ((opc == I_EVENT_RECORD || opc == I_EVENT_WAIT) && prog->v[k].i[EVENT_I_EVENT] >= (int64_t)nev &&
          prog->v[k].i[EVENT_I_EVENT] < (int64_t)1 << 20)
        nev = (uint32_t)prog->v[k].i[EVENT_I_EVENT] + 1;
    }
  }
  ddp_sim *s = ddp_xcalloc(1, sizeof *s);
  s->world = world;
  s->nstreams = ns;
  s->ranks = ddp_xcalloc((size_t)world, sizeof *s->ranks);
  rank_state *st = ddp_xcalloc((size_t)world, sizeof *st);
  int *who = ddp_xcalloc((size_t)world, sizeof *who);
  p2p_state ps = {ddp_xcalloc((size_t)world * (size_t)world, sizeof(p2p_queue)),
                  ddp_xcalloc((size_t)world * (size_t)world, sizeof(p2p_queue)), ddp_xcalloc((size_t)world, sizeof(int)),
                  ddp_xcalloc((size_t)world, sizeof(uint32_t)), ddp_xcalloc((size_t)world, sizeof(uint32_t)),
                  ddp_xcalloc((size_t)world, sizeof(double))};
  for (int r = 0; r < world; r++) {
    s->ranks[r].busy_s = ddp_xcalloc(ns, sizeof(double));
    s->ranks[r].compute_s = ddp_xcalloc(ns, sizeof(double));
    s->ranks[r].in = ddp_xcalloc(p->ranks[r].step.n + 1u, sizeof(ddp_sim_instr));
    st[r].clock = ddp_xcalloc(ns, sizeof(double));
    st[r].last = ddp_xmalloc(ns * sizeof(int64_t));
    for (uint32_t k = 0; k < ns; k++) st[r].last[k] = -1;
    st[r].ev = ddp_xcalloc(nev, sizeof(ev_state));
    st[r].coll = ddp_xcalloc(ns, sizeof(coll_set));
    st[r].coll_ce = ddp_xcalloc(ns, sizeof(coll_set));
    st[r].seq = ddp_xcalloc(ns, sizeof(int64_t));
    st[r].known = ddp_xcalloc((size_t)ns * ns, sizeof(int64_t));
    st[r].ev_known = ddp_xcalloc((size_t)nev * ns, sizeof(int64_t));
  }
  int rc = 0;
  for (;;) {
    for (int r = 0; r < world; r++) advance(p, pr, s, &st[r], r, nev, ns);
    int moved = 0;
    for (int r = 0; r < world; r++) {
      const ddp_program *prog = &p->ranks[r].step;
      if (!ps.posted[r] && st[r].pc < prog->n && is_p2p(prog->v[st[r].pc].opcode)) {
        post_group(p, pr, zero_comm, s, st, &ps, r);
        moved = 1;
      }
    }
    for (int r = 0; r < world; r++)
      if (ps.posted[r] && ps.left[r] == 0) { /* the group has run: the rank goes on after its last operation */
        const ddp_program *prog = &p->ranks[r].step;
        int sid = prog->v[st[r].pc].stream;
        st[r].clock[sid] = ps.gmax[r];
        st[r].last[sid] = ps.gend[r] - 1;
        st[r].pc = ps.gend[r];
        ps.posted[r] = 0;
        moved = 1;
      }
    if (moved) continue;
    int fired = 0, pending = -1;
    for (int r = 0; r < world && !fired; r++) {
      if (st[r].pc >= p->ranks[r].step.n) continue;
      if (pending < 0) pending = r;
      const ddp_instr *in = &p->ranks[r].step.v[st[r].pc];
      if (is_p2p(in->opcode)) continue; /* posted, waiting for its partners */
      int64_t cm = in->i[COLL_I_COMM], n = ddp_plan_comm_size(p, cm);
      if (n < 1 || ddp_plan_comm_index(p, cm, r) < 0) continue; /* the reader refuses such plans */
      int all = 1;
      for (int64_t j = 0; j < n && all; j++) {
        int q = (int)ddp_plan_comm_member(p, cm, j);
        all = st[q].pc < p->ranks[q].step.n && p->ranks[q].step.v[st[q].pc].opcode == in->opcode &&
              p->ranks[q].step.v[st[q].pc].i[COLL_I_COMM] == cm;
        who[j] = q;
      }
      if (!all) continue;
      fire(p, pr, zero_comm, s, st, who, (int)n);
      fired = 1;
    }
    if (fired) continue;
    if (pending >= 0) {
      const ddp_instr *in = &p->ranks[pending].step.v[st[pending].pc];
      rc = ddp_fail(err, errcap,
                    "rank %d: step instruction %u (%s) never meets its partners: the ranks' collectives do not match",
                    pending, st[pending].pc, ddp_opcode_name(in->opcode));
    }
    break;
  }
  for (int r = 0; r < world; r++) {
    for (uint32_t k = 0; k < ns; k++) {
      if (st[r].clock[k] > s->ranks[r].step_s) s->ranks[r].step_s = st[r].clock[k];
    }
    free(st[r].clock);
    free(st[r].last);
    free(st[r].ev);
    free(st[r].dev.v);
    for (uint32_t k = 0; k < ns; k++) free(st[r].coll[k].v), free(st[r].coll_ce[k].v);
    free(st[r].coll);
    free(st[r].coll_ce);
    free(st[r].issued);
    free(st[r].seq);
    free(st[r].known);
    free(st[r].ev_known);
  }
  free(st);
  free(who);
  for (size_t i = 0; i < (size_t)world * (size_t)world; i++) free(ps.send[i].v), free(ps.recv[i].v);
  free(ps.send), free(ps.recv), free(ps.posted), free(ps.gend), free(ps.left), free(ps.gmax);
  if (rc) {
    ddp_sim_free(s);
    return NULL;
  }
  return s;
}

ddp_sim *ddp_explain_sim(const ddp_plan *p, const ddp_profile *pr, char *err, size_t errcap) {
  ddp_sim *s = ddp_simulate(p, pr, 0, err, errcap);
  if (!s) return NULL;
  ddp_sim *z = ddp_simulate(p, pr, 1, err, errcap);
  if (!z) {
    ddp_sim_free(s);
    return NULL;
  }
  for (int r = 0; r < s->world; r++) s->ranks[r].exposed_s = s->ranks[r].step_s - z->ranks[r].step_s;
  ddp_sim_free(z);
  return s;
}

size_t ddp_sim_critical_path(const ddp_plan *p, const ddp_sim *s, int rank, int *ranks, int64_t *idx, size_t cap) {
  const ddp_program *prog = &p->ranks[rank].step;
  int64_t k = -1;
  for (uint32_t j = 0; j < prog->n; j++)
    if (k < 0 || s->ranks[rank].in[j].end >= s->ranks[rank].in[k].end) k = j;
  size_t n = 0;
  int r = rank;
  while (k >= 0 && n < cap) {
    ranks[n] = r, idx[n] = k, n++;
    const ddp_sim_instr *si = &s->ranks[r].in[k];
    if (si->dep == DEP_NONE) break;
    r = si->dep_rank;
    k = si->dep_index;
  }
  return n;
}

void ddp_sim_phases(const ddp_plan *p, const ddp_sim *s, int rank, double *forward, double *backward,
                    double *optimizer) {
  const ddp_program *prog = &p->ranks[rank].step;
  double t[TIMER_COUNT];
  for (int k = 0; k < TIMER_COUNT; k++) t[k] = -1;
  for (uint32_t k = 0; k < prog->n; k++) {
    int64_t role = prog->v[k].i[TIMER_I_ROLE];
    if (prog->v[k].opcode == I_TIMER && role >= 0 && role < TIMER_COUNT && t[role] < 0)
      t[role] = s->ranks[rank].in[k].start;
  }
  ddp_step_times st;
  ddp_sim_step_times(p, s, rank, &st);
  *forward = t[TIMER_FORWARD_END] >= 0 ? st.forward_ms * 1e-3 : -1;
  *backward = t[TIMER_FORWARD_END] >= 0 && t[TIMER_BACKWARD_END] >= 0 ? st.backward_ms * 1e-3 : -1;
  *optimizer = t[TIMER_OPT_BEGIN] >= 0 && t[TIMER_STEP_END] >= 0 ? st.optimizer_ms * 1e-3 : -1;
}

void ddp_sim_step_times(const ddp_plan *p, const ddp_sim *s, int rank, ddp_step_times *out) {
  const ddp_program *prog = &p->ranks[rank].step;
  int64_t slots = 0; /* the plan's reader proved every slot below its ntimers; hand-built plans have none */
  for (uint32_t k = 0; k < prog->n; k++)
    if (prog->v[k].opcode == I_TIMER && prog->v[k].i[TIMER_I_SLOT] >= slots) slots = prog->v[k].i[TIMER_I_SLOT] + 1;
  double *ms = ddp_xcalloc((size_t)slots + 1, sizeof *ms);
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode == I_TIMER && in->i[TIMER_I_SLOT] >= 0) ms[in->i[TIMER_I_SLOT]] = s->ranks[rank].in[k].start * 1e3;
  }
  ddp_step_times_from_timers(p, rank, ms, out);
  free(ms);
}

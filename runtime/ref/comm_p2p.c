/* runtime/ref/comm_p2p.c: point-to-point SEND/RECV groups of the reference executor (ddp_ref_p2p_group,
 * comm_ref.h), the threads protocol, and the deadlock detector that also watches comm_ref.c's barriers.
 * Processes: dispatched to comm_mpi.c (ddp_mpi_p2p_group).
 *
 * Threads protocol (all under the comm's lock and condition variable):
 *   1. post: each SEND of the group becomes a message (its op, src, dst) appended to the FIFO of its
 *      ordered pair (src, dst): the k-th SEND from s to d is the k-th message of queue (s, d);
 *   2. complete: the rank loops until every RECV of its group has its message and every SEND of its group
 *      was copied. A RECV from p takes the head of queue (p, self) once every earlier RECV of the group
 *      from p has its message (RECVs from one peer in program order, so the k-th RECV on d from s meets
 *      the k-th SEND: the CUDA executor's NCCL order; the queue can grow while a rank copies), checks count
 *      and dtype, marks it claimed, copies outside the lock, then marks it done and wakes everyone. A
 *      sender's group completes when all its messages are done: copy semantics, the buffer is the
 *      sender's again when ddp_ref_p2p_group returns. A message of 0 elements is a message too.
 *   3. failure: a count/dtype mismatch marks the message bad and fails the comm with one line naming both
 *      instructions (the receiver and the sender both report it; other ranks "collective aborted"); any
 *      failure (ddp_ref_comm_abort, a deadlock) wakes every waiter; a waiter that leaves takes its
 *      unclaimed messages off the queues and waits for claimed ones to be copied (no dangling pointer).
 * Deadlock detector (its line says "collective deadlock" when no rank waits in a group: communicator
 * groups met in crossed orders): a rank about to sleep (in a barrier or a group) checks, under the lock, whether any
 * rank can still move: one not waiting (running, or copying a message), one in a barrier that has ended,
 * or one in a group with a RECV whose queue is not empty or with everything done. If none can and one
 * waits, no wake-up can ever come: every rank fails with one line saying what each waits for. This turns
 * the classic mistake (both sides of an exchange SEND first, each in a group of its own: NCCL may block
 * there, and the CUDA executor then fails only after DDP_NCCL_TIMEOUT_S) into an immediate error. ddp_ref_comm_leave marks a rank that
 * enters no more groups, so ranks waiting on it are reported too. */
#include "comm_ref_impl.h"
#include "err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t count_of(const ddp_ref_p2p *o) { return o->in->i[COLL_I_COUNT]; }
static int dt_of(const ddp_ref_p2p *o) { return o->in->dt[COLL_P_BUF]; }
static int peer_of(const ddp_ref_p2p *o) { return (int)o->in->i[COLL_I_PEER]; }
static int is_send(const ddp_ref_p2p *o) { return o->in->opcode == I_SEND; }

void ddp_ref_p2p_desc_of(const ddp_ref_p2p *o, int rank, ddp_ref_p2p_desc *d) {
  memset(d, 0, sizeof *d);
  d->count = count_of(o);
  d->dt = dt_of(o);
  d->send = is_send(o);
  d->rank = rank;
  d->peer = peer_of(o);
  d->index = o->index;
  snprintf(d->prog, sizeof d->prog, "%s", o->prog);
  snprintf(d->name, sizeof d->name, "%s", o->name);
}

void ddp_ref_p2p_describe(const ddp_ref_p2p_desc *d, char *b, size_t cap) {
  snprintf(b, cap, "rank %d %s instruction %u (%s%s%s%s, %lld x %s %s rank %d)", d->rank, d->prog, d->index,
           d->send ? "send" : "recv", *d->name ? " \"" : "", d->name, *d->name ? "\"" : "", (long long)d->count,
           ddp_dtype_name(d->dt), d->send ? "to" : "from", d->peer);
}

int ddp_ref_p2p_mismatch(const ddp_ref_p2p_desc *send, const ddp_ref_p2p_desc *recv, char *err, size_t errcap) {
  char s[256], r[256];
  ddp_ref_p2p_describe(send, s, sizeof s);
  ddp_ref_p2p_describe(recv, r, sizeof r);
  return ddp_fail(err, errcap, "point-to-point mismatch: %s pairs with %s: count and dtype must agree", s, r);
}

static void describe(char *b, size_t cap, int rank, const ddp_ref_p2p *o) {
  ddp_ref_p2p_desc d;
  ddp_ref_p2p_desc_of(o, rank, &d);
  ddp_ref_p2p_describe(&d, b, cap);
}

int ddp_ref_comm_failure(ddp_ref_comm *c, char *err, size_t errcap) {
  if (c->why_all) return ddp_fail(err, errcap, "%s", c->why);
  return ddp_fail(err, errcap, "collective aborted: rank %d failed", c->failed_rank);
}

static int can_move(const ddp_ref_comm *c, int q) {
  switch (c->state[q]) {
  case RS_RUNNING: return 1;
  case RS_BARRIER: return c->wait_gen[q] != c->wait_group[q]->generation;
  case RS_LEFT: return 0;
  default: break;
  }
  const p2p_group *g = c->group[q];
  int all = 1;
  for (int i = 0; i < g->n; i++) {
    const ddp_ref_p2p *o = &g->ops[i];
    if (is_send(o)) {
      all &= g->msgs[i].done;
    } else if (!g->rdone[i]) {
      if (c->qhead[peer_of(o) * c->world + q]) return 1;
      all = 0;
    }
  }
  return all;
}

/* What rank q waits for, appended to b. */
static void waits_for(const ddp_ref_comm *c, int q, char *b, size_t cap) {
  size_t len = strlen(b);
  if (len + 1 >= cap) return;
  char d[256] = "";
  if (c->state[q] == RS_LEFT) {
    snprintf(b + len, cap - len, "%srank %d has finished", len ? "; " : "", q);
    return;
  }
  if (c->state[q] == RS_BARRIER) {
    snprintf(b + len, cap - len, "%srank %d waits in a collective on comm %d", len ? "; " : "", q, c->wait_comm[q]);
    return;
  }
  const p2p_group *g = c->group[q];
  for (int i = 0; i < g->n && !*d; i++) /* the first RECV still missing, else the first SEND not yet taken */
    if (!is_send(&g->ops[i]) && !g->rdone[i]) describe(d, sizeof d, q, &g->ops[i]);
  for (int i = 0; i < g->n && !*d; i++)
    if (is_send(&g->ops[i]) && !g->msgs[i].done) describe(d, sizeof d, q, &g->ops[i]);
  snprintf(b + len, cap - len, "%s%s waits (group of %d)", len ? "; " : "", d, g->n);
}

int ddp_ref_deadlock_check(ddp_ref_comm *c, int rank) {
  (void)rank;
  int waiting = 0, in_p2p = 0;
  for (int q = 0; q < c->world; q++) {
    if (can_move(c, q)) return 0;
    waiting += c->state[q] != RS_LEFT;
    in_p2p += c->state[q] == RS_P2P;
  }
  if (!waiting) return 0;
  char b[sizeof c->why - 200] = "";
  for (int q = 0; q < c->world; q++) waits_for(c, q, b, sizeof b);
  if (in_p2p)
    snprintf(c->why, sizeof c->why,
             "point-to-point deadlock, no rank can move: %s (consecutive SEND/RECV on one stream form one group; "
             "put both directions of an exchange in one group)",
             b);
  else /* only collectives: of communicator groups met in crossed orders, or a member that never comes */
    snprintf(c->why, sizeof c->why,
             "collective deadlock, no rank can move: %s (the members of each communicator must reach its "
             "collectives in an order the other communicators' members can meet)",
             b);
  c->why_all = 1;
  c->failed_rank = rank;
  pthread_cond_broadcast(&c->cond);
  return 1;
}

/* Lock held: leaves the group after a failure. Unclaimed messages come off their queues; claimed ones are
 * being copied by their receiver, who marks them done whatever happens: wait for that. */
static int bail(ddp_ref_comm *c, int rank, p2p_group *g, char *err, size_t errcap) {
  int bad = 0;
  for (int i = 0; i < g->n; i++) {
    p2p_msg *m = &g->msgs[i];
    if (!is_send(&g->ops[i])) continue;
    if (!m->claimed) {
      p2p_msg **at = &c->qhead[m->src * c->world + m->dst], *prev = NULL;
      while (*at && *at != m) prev = *at, at = &(*at)->next;
      if (*at) *at = m->next;
      if (c->qtail[m->src * c->world + m->dst] == m) c->qtail[m->src * c->world + m->dst] = prev;
      continue;
    }
    while (!m->done) pthread_cond_wait(&c->cond, &c->lock);
    bad |= m->bad;
  }
  c->state[rank] = RS_RUNNING;
  c->group[rank] = NULL;
  if (bad) return ddp_fail(err, errcap, "%s", c->why);
  return ddp_ref_comm_failure(c, err, errcap);
}

static int threads_group(ddp_ref_comm *c, int rank, const ddp_ref_p2p *ops, int n, char *err, size_t errcap) {
  const int W = c->world;
  p2p_group g = {ops, n, ddp_xcalloc((size_t)n, sizeof(p2p_msg)), ddp_xcalloc((size_t)n, 1)};
  int rc = 0;
  pthread_mutex_lock(&c->lock);
  if (c->failed_rank >= 0) {
    rc = ddp_ref_comm_failure(c, err, errcap);
    goto out;
  }
  for (int i = 0; i < n; i++) { /* 1. post */
    if (!is_send(&ops[i])) continue;
    p2p_msg *m = &g.msgs[i];
    *m = (p2p_msg){.op = &ops[i], .src = rank, .dst = peer_of(&ops[i])};
    p2p_msg **tail = &c->qtail[rank * W + m->dst];
    if (*tail) (*tail)->next = m;
    else c->qhead[rank * W + m->dst] = m;
    *tail = m;
  }
  c->group[rank] = &g;
  c->state[rank] = RS_P2P;
  pthread_cond_broadcast(&c->cond);
  for (;;) { /* 2. complete */
    if (c->failed_rank >= 0) {
      rc = bail(c, rank, &g, err, errcap);
      goto out;
    }
    int moved = 0, all = 1;
    for (int i = 0; i < n; i++) {
      const ddp_ref_p2p *o = &ops[i];
      if (is_send(o)) {
        all &= g.msgs[i].done;
        continue;
      }
      if (g.rdone[i]) continue;
      int earlier = 0; /* an earlier RECV from the same peer still waits: the head is its message */
      for (int j = 0; j < i && !earlier; j++)
        earlier = !is_send(&ops[j]) && !g.rdone[j] && peer_of(&ops[j]) == peer_of(o);
      p2p_msg **head = &c->qhead[peer_of(o) * W + rank];
      p2p_msg *m = earlier ? NULL : *head;
      if (!m) {
        all = 0;
        continue;
      }
      *head = m->next; /* claim */
      if (!*head) c->qtail[peer_of(o) * W + rank] = NULL;
      m->claimed = 1;
      if (count_of(m->op) != count_of(o) || dt_of(m->op) != dt_of(o)) {
        ddp_ref_p2p_desc s, r;
        ddp_ref_p2p_desc_of(m->op, m->src, &s);
        ddp_ref_p2p_desc_of(o, rank, &r);
        ddp_ref_p2p_mismatch(&s, &r, c->why, sizeof c->why);
        m->bad = m->done = 1;
        if (c->failed_rank < 0) c->failed_rank = rank;
        pthread_cond_broadcast(&c->cond);
        bail(c, rank, &g, err, errcap);
        rc = ddp_fail(err, errcap, "%s", c->why);
        goto out;
      }
      c->state[rank] = RS_RUNNING; /* copying: others must not take this for a deadlock */
      pthread_mutex_unlock(&c->lock);
      size_t bytes = (size_t)count_of(o) * ddp_dtype_size(dt_of(o));
      if (bytes) memcpy(o->buf, m->op->buf, bytes);
      pthread_mutex_lock(&c->lock);
      c->state[rank] = RS_P2P;
      m->done = 1;
      g.rdone[i] = 1;
      moved = 1;
      pthread_cond_broadcast(&c->cond);
    }
    if (all && !moved) break;
    if (moved) continue;
    if (!ddp_ref_deadlock_check(c, rank)) pthread_cond_wait(&c->cond, &c->lock);
  }
  c->state[rank] = RS_RUNNING;
  c->group[rank] = NULL;
out:
  pthread_mutex_unlock(&c->lock);
  free(g.msgs);
  free(g.rdone);
  return rc;
}

int ddp_ref_p2p_group(ddp_ref_comm *c, int rank, const ddp_ref_p2p *ops, int n, char *err, size_t errcap) {
  if (n <= 0) return 0;
  for (int i = 0; i < n; i++) { /* plan_check proves these for read plans; hand-built ones get a line */
    const ddp_ref_p2p *o = &ops[i];
    char d[384];
    describe(d, sizeof d, rank, o);
    const char *why = o->in->opcode != I_SEND && o->in->opcode != I_RECV ? "not a send or a receive"
                      : peer_of(o) < 0 || peer_of(o) >= c->world       ? "peer out of the world"
                      : peer_of(o) == rank                             ? "a rank cannot send to itself"
                      : count_of(o) < 0                                ? "negative count"
                      : !ddp_dtype_size(dt_of(o))                      ? "dtype has no size"
                      : count_of(o) > 0 && !o->buf                     ? "no buffer"
                                                                       : NULL;
    if (why) {
      ddp_fail(err, errcap, "%s: %s (world of %d)", d, why, c->world);
      ddp_ref_comm_abort(c, rank);
      return -1;
    }
  }
  if (c->mpi) {
    if (c->failed_rank >= 0) return ddp_ref_comm_failure(c, err, errcap);
    return ddp_mpi_p2p_group(c->mpi, ops, n, err, errcap);
  }
  return threads_group(c, rank, ops, n, err, errcap);
}

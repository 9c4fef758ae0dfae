/* compiler/verify/p2p.c: the static deadlock proof of a plan's point-to-point transfers (pipelines). Every
 * rank's step program is replayed in program order, all ranks together:
 *   - a run of consecutive SEND/RECV on one stream is a group: the rank posts all of them, then waits until
 *     each has its counterpart (the k-th send from a to b pairs with the k-th receive on b from a), as an
 *     NCCL group or the reference executor's group does;
 *   - a collective on communicator c waits until every member of c has reached it: its collective number n
 *     on c (members issue the same sequence on c: check_collectives' business), so group collectives of
 *     disjoint communicators pass independently and interleave with the transfers;
 *   - everything else runs.
 * When no rank can move and some have not finished, the plan can deadlock: refused with one line naming
 * every blocked rank's instruction and what it waits for (also when a plan has communicator groups and no
 * transfers: two groups' collectives issued in crossed orders can deadlock). A send and the receive it pairs with must carry
 * the same message: equal counts and dtypes, and, for the pipeline's transfers ("pp.send.X" / "pp.recv.X"),
 * the same X, so two transfers of equal size swapped on one side are refused too. */
#include "verify.h"
#include "err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct post {
  int rank;
  uint32_t k;
} post;

typedef struct queue { /* posted operations of one direction of one ordered pair */
  post *v;
  uint32_t n, cap;
} queue;

static void qpush(queue *q, int rank, uint32_t k) {
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 16;
    q->v = ddp_xrealloc(q->v, sizeof(post) * q->cap);
  }
  q->v[q->n++] = (post){rank, k};
}

static bool is_p2p(int opc) { return opc == I_SEND || opc == I_RECV; }
/* the message a pipeline transfer names, after "pp.send." / "pp.recv.", or NULL */
static const char *message(const ddp_plan *p, const ddp_instr *in) {
  const char *nm = ddp_plan_string(p, in->name);
  const char *pre = in->opcode == I_SEND ? "pp.send." : "pp.recv.";
  return strncmp(nm, pre, 8) == 0 ? nm + 8 : NULL;
}

typedef struct rstate {
  uint32_t *qidx;    /* [instruction]: a posted SEND/RECV's place in its queue */
  uint32_t pc;       /* next instruction */
  uint32_t group_end; /* while waiting on a posted group: its end, else 0 */
  uint32_t group_begin;
  uint32_t *ncoll;   /* [comm]: collectives passed on it */
} rstate;

int ddp_verify_p2p(const ddp_plan *p, char *err, size_t errcap) {
  int W = (int)p->meta.world;
  bool any = p->ncomms > 0; /* group collectives of different comms can wait on each other too */
  for (int r = 0; r < W && !any; r++)
    for (uint32_t k = 0; k < p->ranks[r].step.n && !any; k++) any = is_p2p(p->ranks[r].step.v[k].opcode);
  if (!any) return 0;
  queue *sends = ddp_xcalloc((size_t)W * (size_t)W, sizeof(queue)), *recvs = ddp_xcalloc((size_t)W * (size_t)W, sizeof(queue));
  rstate *st = ddp_xcalloc((size_t)W, sizeof(rstate));
  uint32_t NC = p->ncomms + 1;
  for (int r = 0; r < W; r++) {
    st[r].qidx = ddp_xcalloc((size_t)p->ranks[r].step.n + 1, sizeof(uint32_t));
    st[r].ncoll = ddp_xcalloc(NC, sizeof(uint32_t));
  }
  int rc = 0;
  for (;;) {
    bool moved = false, done = true;
    for (int r = 0; r < W && rc == 0; r++) {
      const ddp_program *pr = &p->ranks[r].step;
      rstate *x = &st[r];
      for (;;) {
        if (x->group_end) { /* waiting: every op of the group paired? */
          bool all = true;
          for (uint32_t k = x->group_begin; k < x->group_end && all; k++) {
            const ddp_instr *in = &pr->v[k];
            int peer = (int)in->i[COLL_I_PEER];
            queue *mine = in->opcode == I_SEND ? &sends[(size_t)r * W + peer] : &recvs[(size_t)peer * W + r];
            queue *theirs = in->opcode == I_SEND ? &recvs[(size_t)r * W + peer] : &sends[(size_t)peer * W + r];
            (void)mine;
            all = x->qidx[k] < theirs->n;
          }
          if (!all) break;
          x->pc = x->group_end;
          x->group_end = 0;
          moved = true;
          continue;
        }
        if (x->pc >= pr->n) break;
        const ddp_instr *in = &pr->v[x->pc];
        if (is_p2p(in->opcode)) { /* post the group */
          uint32_t e = x->pc;
          while (e < pr->n && is_p2p(pr->v[e].opcode) && pr->v[e].stream == in->stream) e++;
          for (uint32_t k = x->pc; k < e && rc == 0; k++) {
            const ddp_instr *q = &pr->v[k];
            int peer = (int)q->i[COLL_I_PEER];
            if (peer < 0 || peer >= W || peer == r) {
              rc = ddp_fail(err, errcap, "plan step: rank %d instruction %u (%s) names peer %d", r, k,
                            ddp_opcode_name(q->opcode), peer);
              break;
            }
            queue *mine = q->opcode == I_SEND ? &sends[(size_t)r * W + peer] : &recvs[(size_t)peer * W + r];
            queue *theirs = q->opcode == I_SEND ? &recvs[(size_t)r * W + peer] : &sends[(size_t)peer * W + r];
            uint32_t idx = mine->n;
            x->qidx[k] = idx;
            qpush(mine, r, k);
            if (idx < theirs->n) { /* already posted by the peer: the pair must carry one message */
              const ddp_instr *o = &p->ranks[theirs->v[idx].rank].step.v[theirs->v[idx].k];
              const char *ma = message(p, q), *mb = message(p, o);
              if (q->i[COLL_I_COUNT] != o->i[COLL_I_COUNT] || q->dt[COLL_P_BUF] != o->dt[COLL_P_BUF] ||
                  (ma && mb && strcmp(ma, mb) != 0))
                rc = ddp_fail(err, errcap, "plan step: rank %d instruction %u (%s '%s', %lld %s) pairs with rank %d "
                              "instruction %u (%s '%s', %lld %s): not the same message", r, k,
                              ddp_opcode_name(q->opcode), ddp_plan_string(p, q->name), (long long)q->i[COLL_I_COUNT],
                              ddp_dtype_name(q->dt[COLL_P_BUF]), theirs->v[idx].rank, theirs->v[idx].k,
                              ddp_opcode_name(o->opcode), ddp_plan_string(p, o->name), (long long)o->i[COLL_I_COUNT],
                              ddp_dtype_name(o->dt[COLL_P_BUF]));
            }
          }
          x->group_begin = x->pc;
          x->group_end = e;
          moved = true;
          continue;
        }
        int64_t cm = ddp_is_group_collective(in->opcode) ? in->i[COLL_I_COMM] : -1;
        if (cm > (int64_t)p->ncomms) cm = -1; /* refused by check_collectives */
        if (cm >= 0) { /* every member of its comm must have reached its collective number ncoll[cm] */
          bool all = true;
          int64_t n = ddp_plan_comm_size(p, cm);
          for (int64_t i = 0; i < n && all; i++) {
            int q = (int)ddp_plan_comm_member(p, cm, i);
            if (q == r || q < 0 || q >= W) continue;
            const rstate *y = &st[q];
            const ddp_program *pq = &p->ranks[q].step;
            all = y->ncoll[cm] > x->ncoll[cm] ||
                  (y->ncoll[cm] == x->ncoll[cm] && !y->group_end && y->pc < pq->n && ddp_is_group_collective(pq->v[y->pc].opcode) &&
                   pq->v[y->pc].i[COLL_I_COMM] == cm);
          }
          if (!all) break;
          x->ncoll[cm]++;
        }
        x->pc++;
        moved = true;
      }
      if (x->pc < pr->n || x->group_end) done = false;
    }
    if (rc || done) break;
    if (!moved) {
      char msg[1024];
      size_t n = 0;
      for (int r = 0; r < W; r++) {
        const ddp_program *pr = &p->ranks[r].step;
        const rstate *x = &st[r];
        if (x->pc >= pr->n && !x->group_end) continue;
        uint32_t k = x->group_end ? x->group_begin : x->pc;
        const ddp_instr *in = &pr->v[k];
        n += (size_t)snprintf(msg + n, n < sizeof msg ? sizeof msg - n : 0, "%srank %d at instruction %u (%s%s%s)",
                              n ? "; " : "", r, k, ddp_opcode_name(in->opcode), in->name >= 0 ? " " : "",
                              ddp_plan_string(p, in->name));
        if (n >= sizeof msg) break;
      }
      rc = ddp_fail(err, errcap, "plan step: the point-to-point transfers and collectives can deadlock: %s", msg);
      break;
    }
  }
  for (size_t i = 0; i < (size_t)W * (size_t)W; i++) free(sends[i].v), free(recvs[i].v);
  free(sends);
  free(recvs);
  for (int r = 0; r < W; r++) free(st[r].qidx), free(st[r].ncoll);
  free(st);
  return rc;
}

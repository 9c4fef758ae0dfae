/* compiler/verify/peer.c: the proof that instructions reading other ranks' gradients (nccl.all_reduce = "peer":
 * ADAMW with i[ADAMW_I_PEERS] = W and no received buffer; "peer_copy": PEER_COPY) read them whole and before
 * anyone writes them again. Below, "update" is either. The per-rank
 * verifier (verify.c) sees only this rank's accesses; here every rank's step is replayed twice with the same
 * vector clocks (vclock.h), and a PEER_BARRIER b is the point every rank's b-th barrier
 * meets (check_collectives proves all ranks issue the same ones):
 *   1. the u-th update with peers names the same gradient range (arena offset, elements, dtype) on every
 *      rank, since each rank reads the others' at its own offset;
 *   2. on every rank, every write to that range in a step happens before barrier w, and the update on every
 *      rank happens after a barrier b >= w (so every rank's gradient is final when any rank reads it);
 *   3. each barrier happens before the next (so reaching one means every earlier one is done), and the update
 *      before the step's last barrier L (so a barrier's flags are reset before any rank can set them in the
 *      next step, and every rank is done reading when L returns);
 *   4. in the next step, every write to the range, every barrier and every update with peers happens after
 *      the previous step's L (so no rank overwrites a gradient another may still be reading).
 * On failure: -1 and one line naming the rank, the instruction and what it is not ordered against. */
#include "verify.h"
#include "access.h"
#include "vclock.h"
#include "err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does `in` read other ranks' memory? Then *slot is the operand it reads there and *bytes its length. */
static bool reads_peers(const ddp_instr *in, int *slot, uint64_t *bytes) {
  if (in->opcode == I_PEER_COPY) {
    *slot = COLL_P_SEND;
    *bytes = (uint64_t)in->i[COLL_I_COUNT] * ddp_dtype_size(in->dt[COLL_P_SEND]);
    return true;
  }
  if (in->opcode == I_KERNEL && in->op == OP_ADAMW && in->i[ADAMW_I_PEERS] > 0 && in->p[ADAMW_P_RECEIVED].tensor < 0) {
    *slot = ADAMW_P_GRAD;
    *bytes = (uint64_t)in->i[ADAMW_I_N] * ddp_dtype_size(in->dt[ADAMW_P_GRAD]);
    return true;
  }
  return false;
}

static bool is_update(const ddp_instr *in) {
  int slot;
  uint64_t bytes;
  return reads_peers(in, &slot, &bytes);
}

/* Every write access of the step, with its instruction (computed once per rank). */
typedef struct write_acc {
  uint32_t k;
  ddp_access a;
} write_acc;

static write_acc *step_writes(const ddp_plan *p, int rank, uint32_t *n) {
  const ddp_program *prog = &p->ranks[rank].step;
  write_acc *v = ddp_xcalloc((size_t)prog->n * DDP_MAX_PTRS + 1, sizeof *v);
  *n = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    ddp_access acc[DDP_MAX_PTRS];
    int na = ddp_instr_accesses(p, rank, &prog->v[k], acc);
    for (int j = 0; j < na; j++)
      if (acc[j].write) v[(*n)++] = (write_acc){k, acc[j]};
  }
  return v;
}

static const char *name_of(const ddp_plan *p, const ddp_instr *in) {
  const char *nm = ddp_plan_string(p, in->name);
  return nm[0] ? nm : ddp_opcode_name(in->opcode);
}

/* One rank: its barriers (instruction indices), its updates with peers; for update u, read[u] = the last
 * barrier before it, done[u] = the first barrier every write of its range happens before. */
typedef struct rank_peers {
  uint32_t *bar, nbar;
  uint32_t *upd, nupd;
  int64_t *read, *done;
} rank_peers;

static void rank_peers_free(rank_peers *q) { free(q->bar), free(q->upd), free(q->read), free(q->done); }

static int check_rank(const ddp_plan *p, int rank, rank_peers *q, char *err, size_t errcap) {
  const ddp_program *prog = &p->ranks[rank].step;
  memset(q, 0, sizeof *q);
  q->bar = ddp_xcalloc((size_t)prog->n + 1, sizeof(uint32_t));
  q->upd = ddp_xcalloc((size_t)prog->n + 1, sizeof(uint32_t));
  for (uint32_t k = 0; k < prog->n; k++) {
    if (prog->v[k].opcode == I_PEER_BARRIER) q->bar[q->nbar++] = k;
    if (is_update(&prog->v[k])) q->upd[q->nupd++] = k;
  }
  q->read = ddp_xcalloc((size_t)q->nupd + 1, sizeof(int64_t));
  q->done = ddp_xcalloc((size_t)q->nupd + 1, sizeof(int64_t));
  if (!q->nupd) return 0;
  if (!q->nbar)
    return ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) reads every rank's gradient, the step has no "
                    "peer barrier", rank, q->upd[0], name_of(p, &prog->v[q->upd[0]]));
  uint32_t *clock = ddp_vclock_replay(p, rank, prog, 2, "step", err, errcap);
  if (!clock) return -1;
  int rc = 0;
  const uint32_t L = q->bar[q->nbar - 1];
  for (uint32_t b = 0; b + 1 < q->nbar && rc == 0; b++) /* 3: each barrier before the next, so before the last */
    if (!ddp_vclock_before(prog, clock, 0, q->bar[b], 0, q->bar[b + 1]))
      rc = ddp_fail(err, errcap, "plan rank %d step: peer barrier %u (instruction %u, %s) is not ordered before peer "
                    "barrier %u (instruction %u)", rank, b, q->bar[b], name_of(p, &prog->v[q->bar[b]]), b + 1, q->bar[b + 1]);
  uint32_t nw = 0;
  write_acc *wv = step_writes(p, rank, &nw);
  for (uint32_t k = 0; k < prog->n && rc == 0; k++) /* 4: the next step's barriers and updates after L */
    if ((prog->v[k].opcode == I_PEER_BARRIER || is_update(&prog->v[k])) && !ddp_vclock_before(prog, clock, 0, L, 1, k))
      rc = ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) of the next step is not ordered after this "
                    "step's last peer barrier (instruction %u)", rank, k, name_of(p, &prog->v[k]), L);
  for (uint32_t u = 0; u < q->nupd && rc == 0; u++) {
    const uint32_t k = q->upd[u];
    const ddp_instr *in = &prog->v[k];
    int slot = 0;
    uint64_t bytes = 0;
    reads_peers(in, &slot, &bytes);
    const ddp_bufref *g = &in->p[slot];
    const uint64_t lo = g->offset, hi = lo + bytes;
    q->read[u] = -1;
    for (uint32_t b = 0; b < q->nbar; b++)
      if (ddp_vclock_before(prog, clock, 0, q->bar[b], 0, k)) q->read[u] = b;
    if (q->read[u] < 0) {
      rc = ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) reads every rank's gradient before any peer "
                    "barrier", rank, k, name_of(p, in));
      break;
    }
    if (!ddp_vclock_before(prog, clock, 0, k, 0, L)) { /* 3 */
      rc = ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) is not ordered before the step's last peer "
                    "barrier (instruction %u), so a rank may write its gradient while it is read", rank, k, name_of(p, in), L);
      break;
    }
    q->done[u] = 0; /* 2: the first barrier every write of the range happens before */
    for (uint32_t j = 0; j < nw && rc == 0; j++) {
      const ddp_access *a = &wv[j].a;
      const uint32_t w = wv[j].k;
      if (a->arena != g->arena || a->end <= lo || hi <= a->begin) continue;
      while (q->done[u] < (int64_t)q->nbar && !ddp_vclock_before(prog, clock, 0, w, 0, q->bar[q->done[u]])) q->done[u]++;
      if (q->done[u] == (int64_t)q->nbar)
        rc = ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) writes the gradient that instruction %u (%s) "
                      "reads on every rank, and no peer barrier follows it", rank, w, name_of(p, &prog->v[w]), k, name_of(p, in));
      else if (!ddp_vclock_before(prog, clock, 0, L, 1, w)) /* 4 */
        rc = ddp_fail(err, errcap, "plan rank %d step: instruction %u (%s) writes the gradient that instruction %u (%s) "
                      "reads on every rank, and is not ordered after the previous step's last peer barrier", rank, w,
                      name_of(p, &prog->v[w]), k, name_of(p, in));
    }
  }
  free(wv);
  free(clock);
  return rc;
}

int ddp_verify_peer(const ddp_plan *p, char *err, size_t errcap) {
  const int64_t W = p->meta.world;
  rank_peers *q = ddp_xcalloc((size_t)W + 1, sizeof *q);
  int rc = 0;
  int64_t built = 0;
  for (; built < W && rc == 0; built++) rc = check_rank(p, (int)built, &q[built], err, errcap);
  for (int64_t r = 1; r < W && rc == 0; r++) { /* 1: the same updates on every rank */
    if (q[r].nupd != q[0].nupd) {
      rc = ddp_fail(err, errcap, "plan step: rank 0 has %u updates reading every rank's gradient, rank %lld has %u",
                    q[0].nupd, (long long)r, q[r].nupd);
      break;
    }
    for (uint32_t u = 0; u < q[0].nupd && rc == 0; u++) {
      const ddp_instr *a = &p->ranks[0].step.v[q[0].upd[u]], *b = &p->ranks[r].step.v[q[r].upd[u]];
      int sa = 0, sb = 0;
      uint64_t na = 0, nb = 0;
      reads_peers(a, &sa, &na), reads_peers(b, &sb, &nb);
      if (a->opcode != b->opcode || a->p[sa].arena != b->p[sb].arena || a->p[sa].offset != b->p[sb].offset || na != nb ||
          a->dt[sa] != b->dt[sb])
        rc = ddp_fail(err, errcap, "plan step: update %u reading every rank's gradient (%s) names different gradient "
                      "ranges on rank 0 and rank %lld", u, name_of(p, a), (long long)r);
    }
  }
  for (uint32_t u = 0; rc == 0 && W > 0 && u < q[0].nupd; u++) { /* 2: written everywhere before read anywhere */
    int64_t wr = 0, rd = 0;
    for (int64_t r = 1; r < W; r++) {
      if (q[r].done[u] > q[wr].done[u]) wr = r;
      if (q[r].read[u] < q[rd].read[u]) rd = r;
    }
    if (q[wr].done[u] > q[rd].read[u])
      rc = ddp_fail(err, errcap, "plan step: rank %lld's update %u (%s) reads every rank's gradient after peer barrier "
                    "%lld, but rank %lld writes its gradient until peer barrier %lld", (long long)rd, u,
                    name_of(p, &p->ranks[rd].step.v[q[rd].upd[u]]), (long long)q[rd].read[u], (long long)wr,
                    (long long)q[wr].done[u]);
  }
  for (int64_t r = 0; r < built; r++) rank_peers_free(&q[r]);
  free(q);
  return rc;
}

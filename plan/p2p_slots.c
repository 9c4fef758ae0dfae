/* plan/p2p_slots.c: the pairing of the step programs' SEND/RECV as flag slots (p2p_slots.h). */
#include "p2p_slots.h"
#include "err.h"
#include <stdlib.h>

static int is_p2p(int opcode) { return opcode == I_SEND || opcode == I_RECV; }

static uint64_t message_bytes(const ddp_instr *in) {
  int64_t count = in->i[COLL_I_COUNT];
  return count > 0 ? (uint64_t)count * ddp_dtype_size(in->dt[COLL_P_BUF]) : 0;
}

static uint32_t count_op(const ddp_program *prog, int opcode) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < prog->n; i++) n += prog->v[i].opcode == opcode;
  return n;
}

uint32_t ddp_p2p_nslots(const ddp_plan *p, int rank) {
  const ddp_program *prog = &p->ranks[rank].step;
  return 1 + count_op(prog, I_RECV) + count_op(prog, I_SEND);
}

/* In `prog`, the k-th instruction of `opcode` with peer `peer` and a message: its index (*at) and its ordinal
 * among all of the program's instructions of that opcode; -1 when there is none. */
static int64_t kth(const ddp_program *prog, int opcode, int peer, uint32_t k, uint32_t *at) {
  uint32_t seen = 0;
  int64_t ord = 0;
  for (uint32_t i = 0; i < prog->n; i++) {
    const ddp_instr *in = &prog->v[i];
    if (in->opcode != opcode) continue;
    if (in->i[COLL_I_PEER] == peer && message_bytes(in) > 0 && seen++ == k) {
      *at = i;
      return ord;
    }
    ord++;
  }
  return -1;
}

int ddp_p2p_slots(const ddp_plan *p, int rank, ddp_p2p_slot **out, uint32_t *n, uint32_t *nslots, char *err,
                  size_t errcap) {
  const ddp_program *prog = &p->ranks[rank].step;
  const uint32_t world = (uint32_t)p->meta.world, nrecv = count_op(prog, I_RECV);
  *out = NULL;
  *n = 0;
  *nslots = ddp_p2p_nslots(p, rank);
  ddp_p2p_slot *v = calloc((size_t)count_op(prog, I_SEND) + nrecv + 1, sizeof *v);
  uint32_t *to = calloc((size_t)world + 1, sizeof *to), *from = calloc((size_t)world + 1, sizeof *from);
  if (!v || !to || !from) return free(v), free(to), free(from), ddp_fail(err, errcap, "out of host memory");
  uint32_t nsend = 0, recvs = 0, m = 0;
  int rc = 0;
  for (uint32_t i = 0; i < prog->n && rc == 0; i++) {
    const ddp_instr *in = &prog->v[i];
    if (!is_p2p(in->opcode)) continue;
    ddp_p2p_slot *s = &v[m++];
    s->instr = i;
    s->send = in->opcode == I_SEND;
    s->peer = (int)in->i[COLL_I_PEER];
    s->bytes = message_bytes(in);
    s->local = s->send ? 1 + nrecv + nsend++ : 1 + recvs++;
    if (!s->bytes) continue;
    if (s->peer < 0 || (uint32_t)s->peer >= world || s->peer == rank) {
      rc = ddp_fail(err, errcap, "rank %d step instruction %u: peer %d in a world of %u", rank, i, s->peer, world);
      break;
    }
    const ddp_program *pp = &p->ranks[s->peer].step;
    uint32_t k = s->send ? to[s->peer]++ : from[s->peer]++, at = 0;
    int64_t theirs = kth(pp, s->send ? I_RECV : I_SEND, rank, k, &at);
    if (theirs < 0) {
      rc = ddp_fail(err, errcap, "rank %d step instruction %u: message %u %s rank %d has no partner there", rank, i, k,
                    s->send ? "to" : "from", s->peer);
      break;
    }
    if (message_bytes(&pp->v[at]) != s->bytes) {
      rc = ddp_fail(err, errcap, "rank %d step instruction %u (%llu bytes) pairs with rank %d instruction %u (%llu bytes)",
                    rank, i, (unsigned long long)s->bytes, s->peer, at, (unsigned long long)message_bytes(&pp->v[at]));
      break;
    }
    s->peer_instr = at;
    /* a SEND sets the receiver's AVAIL (1 + its RECV ordinal), a RECV the sender's DONE (1 + nrecv + its SEND ordinal) */
    s->remote = s->send ? 1 + (uint32_t)theirs : 1 + count_op(pp, I_RECV) + (uint32_t)theirs;
  }
  free(to);
  free(from);
  if (rc) return free(v), -1;
  *out = v;
  *n = m;
  return 0;
}

/* plan/plan_check_ranks.c: the reader's checks across ranks (see plan_check.h): group collectives agree
 * among the members of each communicator, and every SEND pairs with its RECV. A rank's executor reads and writes
 * its peers' buffers with its own count, so per-rank bounds are only a proof when the ranks agree. */
#include "plan_check.h"
#include <stdlib.h>
#include <string.h>

/* Within every communicator, every member issues the same collectives on it in the same order with the
 * same count, dtype, reduction, root and path (NCCL's or copy-engine pulls) as its first member: a rank's executor reads and writes the other
 * members' buffers with its own count (the reference executor directly, NCCL by its protocol), so a count
 * in bounds on one rank must be the count of all. (That only members issue them: check_instr.) One pass
 * over each member's program per communicator it belongs to (at most 2 x world communicators). */
static int match_comm(const vctx *c, int step, int64_t comm) {
  const ddp_plan *p = c->p;
  const char *prog = step ? "step" : "init";
  int64_t n = ddp_plan_comm_size(p, comm), r0 = ddp_plan_comm_member(p, comm, 0);
  const ddp_program *p0 = step ? &p->ranks[r0].step : &p->ranks[r0].init;
#define ON_COMM(v) (ddp_is_group_collective((v).opcode) && (v).i[COLL_I_COMM] == comm)
  for (int64_t i = 1; i < n; i++) {
    int64_t r = ddp_plan_comm_member(p, comm, i);
    const ddp_program *pr = step ? &p->ranks[r].step : &p->ranks[r].init;
    uint32_t a = 0, b = 0, k = 0;
    for (;; a++, b++, k++) {
      while (a < p0->n && !ON_COMM(p0->v[a])) a++;
      while (b < pr->n && !ON_COMM(pr->v[b])) b++;
      if (a >= p0->n && b >= pr->n) break;
      if (b >= pr->n)
        return ddp_io_fail(c->err, c->errcap, c->path,
                           "invalid: rank %lld %s program has %u collectives on comm %lld, rank %lld has more "
                           "(instruction %u, %s)", (long long)r, prog, k, (long long)comm, (long long)r0, a,
                           ddp_opcode_name(p0->v[a].opcode));
      where w = {r, prog, b, &pr->v[b]};
      const ddp_instr *x = &p0->v[a], *y = &pr->v[b];
      if (a >= p0->n) return IFAIL(&w, "collective #%u on comm %lld, rank %lld has only %u", k, (long long)comm,
                                   (long long)r0, k);
      static const struct { int slot; const char *name; } ints[] = {
          {COLL_I_COUNT, "count"}, {COLL_I_REDOP, "redop"}, {COLL_I_ROOT, "root"}, {COLL_I_PATH, "path"}};
      if (x->opcode != y->opcode)
        return IFAIL(&w, "collective #%u on comm %lld, rank %lld's (instruction %u) is %s", k, (long long)comm,
                     (long long)r0, a, ddp_opcode_name(x->opcode));
      if (x->dt[COLL_P_SEND] != y->dt[COLL_P_SEND])
        return IFAIL(&w, "dt[0] = %s, rank %lld's collective #%u on comm %lld (instruction %u) is %s",
                     ddp_dtype_name(y->dt[0]), (long long)r0, k, (long long)comm, a, ddp_dtype_name(x->dt[0]));
      for (size_t q = 0; q < sizeof ints / sizeof ints[0]; q++)
        if (x->i[ints[q].slot] != y->i[ints[q].slot])
          return IFAIL(&w, "i[%d] (%s) = %lld, rank %lld's collective #%u on comm %lld (instruction %u) has %lld",
                       ints[q].slot, ints[q].name, (long long)y->i[ints[q].slot], (long long)r0, k, (long long)comm,
                       a, (long long)x->i[ints[q].slot]);
    }
  }
#undef ON_COMM
  return 0;
}

int ddp_check_collectives_match(const vctx *c, int step) {
  for (int64_t comm = 0; comm <= (int64_t)c->p->ncomms; comm++)
    if (match_comm(c, step, comm)) return -1;
  return 0;
}

/* Point-to-point: the k-th SEND from rank s to rank d pairs with the k-th RECV on d from s (NCCL's
 * order); both must move the same count of the same dtype. Records sorted by (src, dst, program order)
 * with two stable counting sorts over the ranks: linear in the instructions plus the world size. */
typedef struct p2p { uint32_t src, dst, index; const ddp_instr *in; } p2p;

/* Stable counting sort of v[0..n) by src (by_src) or dst into out. */
static void sort_by(const p2p *v, size_t n, int by_src, size_t *count, size_t world, p2p *out) {
  memset(count, 0, (world + 1) * sizeof *count);
  for (size_t k = 0; k < n; k++) count[(by_src ? v[k].src : v[k].dst) + 1]++;
  for (size_t r = 0; r < world; r++) count[r + 1] += count[r];
  for (size_t k = 0; k < n; k++) out[count[by_src ? v[k].src : v[k].dst]++] = v[k];
}

int ddp_check_p2p(const vctx *c, int step) {
  const ddp_plan *p = c->p;
  const char *prog = step ? "step" : "init";
  size_t world = (size_t)p->meta.world, ns = 0, nr = 0;
  for (size_t r = 0; r < world; r++) {
    const ddp_program *pr = step ? &p->ranks[r].step : &p->ranks[r].init;
    for (uint32_t k = 0; k < pr->n; k++) ns += pr->v[k].opcode == I_SEND, nr += pr->v[k].opcode == I_RECV;
  }
  if (ns == 0 && nr == 0) return 0;
  p2p *v = malloc((ns + nr) * 2 * sizeof *v);
  size_t *count = malloc((world + 1) * sizeof *count);
  if (!v || !count) {
    free(v);
    free(count);
    return ddp_io_fail(c->err, c->errcap, c->path, "out of memory checking %zu sends and receives", ns + nr);
  }
  p2p *sends = v, *recvs = v + ns, *tmp = v + ns + nr;
  size_t is = 0, ir = 0;
  for (size_t r = 0; r < world; r++) { /* generated in (rank, program order) */
    const ddp_program *pr = step ? &p->ranks[r].step : &p->ranks[r].init;
    for (uint32_t k = 0; k < pr->n; k++) {
      const ddp_instr *in = &pr->v[k];
      uint32_t peer = (uint32_t)in->i[COLL_I_PEER]; /* < world: check_instr */
      if (in->opcode == I_SEND) sends[is++] = (p2p){(uint32_t)r, peer, k, in};
      if (in->opcode == I_RECV) recvs[ir++] = (p2p){peer, (uint32_t)r, k, in};
    }
  }
  sort_by(sends, ns, 0, count, world, tmp); /* sends: (src, k) -> by dst -> by src: (src, dst, k) */
  sort_by(tmp, ns, 1, count, world, sends);
  sort_by(recvs, nr, 1, count, world, tmp); /* receives: (dst, k) -> by src: (src, dst, k) */
  memcpy(recvs, tmp, nr * sizeof *tmp);
  int rc = 0;
  for (size_t a = 0, b = 0; rc == 0 && (a < ns || b < nr);) {
    const p2p *x = a < ns ? &sends[a] : NULL, *y = b < nr ? &recvs[b] : NULL;
    int pair = x && y && x->src == y->src && x->dst == y->dst;
    if (!pair) { /* the smaller (src, dst) has no partner */
      int send_first = x && (!y || x->src < y->src || (x->src == y->src && x->dst < y->dst));
      const p2p *lone = send_first ? x : y;
      where w = {send_first ? lone->src : lone->dst, prog, lone->index, lone->in};
      rc = IFAIL(&w, "%s rank %u has no matching %s", send_first ? "send to" : "receive from",
                 send_first ? lone->dst : lone->src, send_first ? "receive" : "send");
      break;
    }
    if (x->in->i[COLL_I_COUNT] != y->in->i[COLL_I_COUNT] || x->in->dt[COLL_P_BUF] != y->in->dt[COLL_P_BUF]) {
      where w = {y->dst, prog, y->index, y->in};
      rc = IFAIL(&w, "i[0] (count) = %lld of %s, the matching send (rank %u instruction %u) has %lld of %s",
                 (long long)y->in->i[COLL_I_COUNT], ddp_dtype_name(y->in->dt[COLL_P_BUF]), x->src, x->index,
                 (long long)x->in->i[COLL_I_COUNT], ddp_dtype_name(x->in->dt[COLL_P_BUF]));
    }
    a++, b++;
  }
  free(v);
  free(count);
  return rc;
}

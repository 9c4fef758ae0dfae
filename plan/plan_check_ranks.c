/* plan/plan_check_ranks.c: the reader's checks across ranks (see plan_check.h): group collectives agree
 * between every rank and rank 0, and every SEND pairs with its RECV. A rank's executor reads and writes
 * its peers' buffers with its own count, so per-rank bounds are only a proof when the ranks agree. */
#include "plan_check.h"
#include <stdlib.h>
#include <string.h>

static int is_group_collective(int opc) {
  return opc == I_ALL_REDUCE || opc == I_REDUCE_SCATTER || opc == I_ALL_GATHER || opc == I_BROADCAST;
}

/* Every rank issues the same group collectives in the same order with the same count, dtype, reduction,
 * root and communicator: a rank's executor reads and writes the other ranks' buffers with its own count
 * (the reference executor directly, NCCL by its protocol), so a count in bounds on one rank must be the
 * count of all. One pass over each rank's program against rank 0's: linear in the instructions. */
int ddp_check_collectives_match(const vctx *c, int step) {
  const ddp_plan *p = c->p;
  const char *prog = step ? "step" : "init";
  const ddp_program *p0 = step ? &p->ranks[0].step : &p->ranks[0].init;
  for (int64_t r = 1; r < p->meta.world; r++) {
    const ddp_program *pr = step ? &p->ranks[r].step : &p->ranks[r].init;
    uint32_t a = 0, b = 0, n = 0;
    for (;; a++, b++, n++) {
      while (a < p0->n && !is_group_collective(p0->v[a].opcode)) a++;
      while (b < pr->n && !is_group_collective(pr->v[b].opcode)) b++;
      if (a >= p0->n && b >= pr->n) break;
      if (b >= pr->n)
        return ddp_io_fail(c->err, c->errcap, c->path,
                           "invalid: rank %lld %s program has %u collectives, rank 0 has more (instruction %u, %s)",
                           (long long)r, prog, n, a, ddp_opcode_name(p0->v[a].opcode));
      where w = {r, prog, b, &pr->v[b]};
      const ddp_instr *x = &p0->v[a], *y = &pr->v[b];
      if (a >= p0->n) return IFAIL(&w, "collective #%u, rank 0 has only %u", n, n);
      static const struct { int slot; const char *name; } ints[] = {
          {COLL_I_COUNT, "count"}, {COLL_I_REDOP, "redop"}, {COLL_I_ROOT, "root"}, {COLL_I_COMM, "comm"}};
      if (x->opcode != y->opcode)
        return IFAIL(&w, "collective #%u, rank 0's (instruction %u) is %s", n, a, ddp_opcode_name(x->opcode));
      if (x->dt[COLL_P_SEND] != y->dt[COLL_P_SEND])
        return IFAIL(&w, "dt[0] = %s, rank 0's collective #%u (instruction %u) is %s", ddp_dtype_name(y->dt[0]), n, a,
                     ddp_dtype_name(x->dt[0]));
      for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (x->i[ints[k].slot] != y->i[ints[k].slot])
          return IFAIL(&w, "i[%d] (%s) = %lld, rank 0's collective #%u (instruction %u) has %lld", ints[k].slot,
                       ints[k].name, (long long)y->i[ints[k].slot], n, a, (long long)x->i[ints[k].slot]);
    }
  }
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

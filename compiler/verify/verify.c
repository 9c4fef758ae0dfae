/* compiler/verify/verify.c: see verify.h. Ordering is decided with vector clocks (vclock.h): access a (stream
 * sa, position n) happens before a later access b iff b's clock has seen position n of sa. */
#include "err.h"
#include "verify.h"
#include "access.h"
#include "conflicts.h"
#include "vclock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS DDP_VERIFY_MAX_STREAMS
typedef ddp_vrec rec;

typedef struct {
  rec *v;
  size_t n, cap;
} recs;

static void push(recs *r, const rec *x) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 1024;
    r->v = ddp_xrealloc(r->v, sizeof(rec) * r->cap);
  }
  r->v[r->n++] = *x;
}

static const char *instr_desc(const ddp_plan *p, const ddp_instr *in, char *buf, size_t cap) {
  const char *nm = ddp_plan_string(p, in->name);
  snprintf(buf, cap, "%s%s%s%s", ddp_opcode_name(in->opcode),
           in->opcode == I_KERNEL ? " " : "", in->opcode == I_KERNEL ? ddp_op_name(in->op) : "",
           nm[0] ? "" : "");
  if (nm[0]) {
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l, " '%s'", nm);
  }
  return buf;
}

static const char *tensor_at(const ddp_plan *p, const ddp_instr *in, int slot) {
  int32_t t = in->p[slot].tensor;
  return t >= 0 ? p->tensors[t].name : "?";
}

static int check_program(const ddp_plan *p, int rank, const ddp_program *prog, int iters, const char *what,
                         char *err, size_t errcap) {
  uint32_t nstreams = p->nstreams;
  uint32_t *clock = ddp_vclock_replay(p, rank, prog, iters, what, err, errcap);
  if (!clock) return -1;
  recs per_stream[MAX_STREAMS];
  memset(per_stream, 0, sizeof per_stream);
  int rc = 0;
  for (int it = 0; it < iters; it++)
    for (uint32_t k = 0; k < prog->n; k++) {
      const ddp_instr *in = &prog->v[k];
      if (in->opcode == I_EVENT_RECORD || in->opcode == I_EVENT_WAIT) continue;
      const uint16_t s = in->stream;
      const uint32_t *c = &clock[((size_t)it * prog->n + k) * MAX_STREAMS];
      ddp_access acc[DDP_MAX_PTRS];
      int na = ddp_instr_accesses(p, rank, in, acc);
      for (int j = 0; j < na; j++) {
        rec r = {.idx = k, .iter = it, .stream = s, .pos = c[s], .a = acc[j]};
        memcpy(r.clock, c, sizeof r.clock);
        push(&per_stream[s], &r);
      }
    }
  free(clock);
  /* Cross-stream conflicts: the first unordered pair of records from different streams (conflicts.h). */
  for (uint32_t s1 = 0; s1 < nstreams && rc == 0; s1++)
    for (uint32_t s2 = s1 + 1; s2 < nstreams && rc == 0; s2++) {
      recs *A = &per_stream[s1], *B = &per_stream[s2];
      size_t i, j;
      if (ddp_first_conflict(A->v, A->n, B->v, B->n, &i, &j)) {
        const rec *x = &A->v[i], *y = &B->v[j];
        char d1[200], d2[200];
        const ddp_instr *ix = &prog->v[x->idx], *iy = &prog->v[y->idx];
        ddp_fail(err, errcap,
                 "plan rank %d %s: unordered access across streams: instruction %u (%s, stream %u, %s %s) and "
                 "instruction %u (%s, stream %u, %s %s) touch the same bytes of %s with no event between them",
                 rank, what, x->idx, instr_desc(p, ix, d1, sizeof d1), x->stream, x->a.write ? "writes" : "reads",
                 tensor_at(p, ix, x->a.slot), y->idx, instr_desc(p, iy, d2, sizeof d2), y->stream,
                 y->a.write ? "writes" : "reads", tensor_at(p, iy, y->a.slot), ddp_arena_name((int)x->a.arena));
        rc = -1;
      }
    }
  for (uint32_t s = 0; s < MAX_STREAMS; s++) free(per_stream[s].v);
  return rc;
}

/* Within every communicator (comm 0, the world, and the plan's groups), every member issues the same
 * collectives on it in the same order (opcode, count, dtype, reduction, root) as its first member; a rank
 * that is not a member issues none on it. */
static int check_comm_collectives(const ddp_plan *p, int which, int64_t comm, char *err, size_t errcap) {
  const char *what = which ? "step" : "init";
  int64_t n = ddp_plan_comm_size(p, comm), r0 = ddp_plan_comm_member(p, comm, 0);
  const ddp_program *p0 = which ? &p->ranks[r0].step : &p->ranks[r0].init;
#define ON_COMM(v) (ddp_is_group_collective((v).opcode) && (v).i[COLL_I_COMM] == comm)
  for (int64_t r = 0; r < p->meta.world; r++) {
    const ddp_program *pr = which ? &p->ranks[r].step : &p->ranks[r].init;
    if (ddp_plan_comm_index(p, comm, r) >= 0) continue;
    for (uint32_t k = 0; k < pr->n; k++)
      if (ON_COMM(pr->v[k]))
        return ddp_fail(err, errcap, "plan %s: rank %lld instruction %u (%s '%s') is on comm %lld, which rank %lld "
                        "is not a member of", what, (long long)r, k, ddp_opcode_name(pr->v[k].opcode),
                        ddp_plan_string(p, pr->v[k].name), (long long)comm, (long long)r);
  }
  for (int64_t i = 1; i < n; i++) {
    int64_t r = ddp_plan_comm_member(p, comm, i);
    const ddp_program *pr = which ? &p->ranks[r].step : &p->ranks[r].init;
    uint32_t a = 0, b = 0, k = 0;
    for (;;) {
      while (a < p0->n && !ON_COMM(p0->v[a])) a++;
      while (b < pr->n && !ON_COMM(pr->v[b])) b++;
      if (a >= p0->n || b >= pr->n) {
        if (a < p0->n || b < pr->n)
          return ddp_fail(err, errcap,
                          "plan %s: on comm %lld, rank %lld and rank %lld issue different numbers of collectives "
                          "(rank %lld has more, after %u)", what, (long long)comm, (long long)r0, (long long)r,
                          (long long)(a < p0->n ? r0 : r), k);
        break;
      }
      const ddp_instr *x = &p0->v[a], *y = &pr->v[b];
      if (x->opcode != y->opcode || x->i[COLL_I_COUNT] != y->i[COLL_I_COUNT] ||
          x->dt[COLL_P_SEND] != y->dt[COLL_P_SEND] || x->i[COLL_I_REDOP] != y->i[COLL_I_REDOP] ||
          x->i[COLL_I_ROOT] != y->i[COLL_I_ROOT]) {
        return ddp_fail(err, errcap,
                        "plan %s: collective #%u on comm %lld differs between rank %lld (instruction %u: %s of %lld "
                        "%s, redop %lld, root %lld) and rank %lld (instruction %u: %s of %lld %s, redop %lld, root "
                        "%lld)",
                        what, k, (long long)comm, (long long)r0, a, ddp_opcode_name(x->opcode),
                        (long long)x->i[COLL_I_COUNT], ddp_dtype_name(x->dt[COLL_P_SEND]),
                        (long long)x->i[COLL_I_REDOP], (long long)x->i[COLL_I_ROOT], (long long)r, b,
                        ddp_opcode_name(y->opcode), (long long)y->i[COLL_I_COUNT], ddp_dtype_name(y->dt[COLL_P_SEND]),
                        (long long)y->i[COLL_I_REDOP], (long long)y->i[COLL_I_ROOT]);
      }
      a++;
      b++;
      k++;
    }
  }
#undef ON_COMM
  return 0;
}

static int check_collectives(const ddp_plan *p, int which, char *err, size_t errcap) {
  for (int64_t r = 0; r < p->meta.world; r++) { /* every collective names a communicator of the plan */
    const ddp_program *pr = which ? &p->ranks[r].step : &p->ranks[r].init;
    for (uint32_t k = 0; k < pr->n; k++)
      if (ddp_is_group_collective(pr->v[k].opcode) && ddp_plan_comm_size(p, pr->v[k].i[COLL_I_COMM]) < 0)
        return ddp_fail(err, errcap, "plan %s: rank %lld instruction %u (%s) names comm %lld, the plan has %u "
                        "besides the world", which ? "step" : "init", (long long)r, k, ddp_opcode_name(pr->v[k].opcode),
                        (long long)pr->v[k].i[COLL_I_COMM], p->ncomms);
  }
  for (int64_t comm = 0; comm <= (int64_t)p->ncomms; comm++)
    if (check_comm_collectives(p, which, comm, err, errcap)) return -1;
  return 0;
}

int ddp_verify(const ddp_plan *p, char *err, size_t errcap) {
  if (check_collectives(p, 0, err, errcap) || check_collectives(p, 1, err, errcap) || ddp_verify_p2p(p, err, errcap) ||
      ddp_verify_peer(p, err, errcap))
    return -1;
  for (int64_t r = 0; r < p->meta.world; r++) {
    if (check_program(p, (int)r, &p->ranks[r].init, 1, "init", err, errcap)) return -1;
    if (check_program(p, (int)r, &p->ranks[r].step, 2, "step", err, errcap)) return -1;
  }
  return 0;
}

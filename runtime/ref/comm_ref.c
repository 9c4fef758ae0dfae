/* runtime/ref/comm_ref.c: see comm_ref.h. The process backend is comm_mpi.c; this file dispatches to it.
 * Point-to-point groups are comm_p2p.c (the state both files share: comm_ref_impl.h).
 * Threads protocol per collective, among the members of its communicator (comm 0: every rank; comm c: the
 * plan's group, with its own barrier, so disjoint groups run at once): every member posts its buffers and
 * meets at the group's barrier; each member then reduces its own slice of the result (elements split evenly by group rank)
 * from all members' send buffers into a private scratch; a second barrier; each rank writes its slice into
 * every destination; a third barrier. In-place collectives are therefore safe. */
#include "comm_ref_impl.h"
#include "err.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ref_group *group_new(int n, const int32_t *members) {
  ref_group *g = ddp_xcalloc(1, sizeof *g);
  g->n = n;
  g->members = ddp_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) g->members[i] = members ? members[i] : i;
  g->send = ddp_xcalloc((size_t)(n ? n : 1), sizeof(void *));
  g->recv = ddp_xcalloc((size_t)(n ? n : 1), sizeof(void *));
  return g;
}

static void group_free(ref_group *g) {
  if (!g) return;
  free(g->members);
  free(g->send);
  free(g->recv);
  free(g);
}

ddp_ref_comm *ddp_ref_comm_new(int world) {
  ddp_ref_comm *c = ddp_xcalloc(1, sizeof *c);
  c->world = world;
  c->failed_rank = -1;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  c->groups = ddp_xcalloc(1, sizeof(ref_group *));
  c->groups[0] = group_new(world, NULL);
  c->ngroups = 1;
  c->scratch = ddp_xcalloc((size_t)world, sizeof(double *));
  c->scratch_cap = ddp_xcalloc((size_t)world, sizeof(size_t));
  c->state = ddp_xcalloc((size_t)world, sizeof(int));
  c->wait_gen = ddp_xcalloc((size_t)world, sizeof(uint64_t));
  c->wait_group = ddp_xcalloc((size_t)world, sizeof(ref_group *));
  c->wait_comm = ddp_xcalloc((size_t)world, sizeof(int));
  c->group = ddp_xcalloc((size_t)world, sizeof(p2p_group *));
  c->qhead = ddp_xcalloc((size_t)world * (size_t)world, sizeof(p2p_msg *));
  c->qtail = ddp_xcalloc((size_t)world * (size_t)world, sizeof(p2p_msg *));
  return c;
}

ddp_ref_comm *ddp_ref_comm_new_mpi(ddp_mpi *m) {
  ddp_ref_comm *c = ddp_ref_comm_new(1); /* the thread fields serve one rank: this process's */
  c->world = ddp_mpi_world(m);
  c->mpi = m;
  return c;
}

void ddp_ref_comm_free(ddp_ref_comm *c) {
  if (!c) return;
  for (int r = 0; r < (c->mpi ? 1 : c->world); r++) free(c->scratch[r]);
  for (int k = 0; k < c->ngroups; k++) group_free(c->groups[k]);
  free(c->groups);
  free(c->scratch);
  free(c->scratch_cap);
  free(c->state);
  free(c->wait_gen);
  free(c->wait_group);
  free(c->wait_comm);
  free(c->group);
  free(c->qhead);
  free(c->qtail);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
  free(c);
}

void ddp_ref_comm_abort(ddp_ref_comm *c, int rank) {
  pthread_mutex_lock(&c->lock);
  if (c->failed_rank < 0) c->failed_rank = rank;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

void ddp_ref_comm_leave(ddp_ref_comm *c, int rank) {
  if (c->mpi) return;
  pthread_mutex_lock(&c->lock);
  c->state[rank] = RS_LEFT;
  if (c->failed_rank < 0) ddp_ref_deadlock_check(c, rank); /* the others may have waited on this rank */
  pthread_mutex_unlock(&c->lock);
}

/* Communicator `comm`'s rendezvous (created on first use, lock held by the caller); NULL when its
 * members differ from those it was created with (the plan names one communicator twice differently). */
static ref_group *group_of(ddp_ref_comm *c, int comm, int n, const int32_t *members) {
  if (comm >= c->ngroups) {
    c->groups = ddp_xrealloc(c->groups, sizeof(ref_group *) * (size_t)(comm + 1));
    for (int k = c->ngroups; k <= comm; k++) c->groups[k] = NULL;
    c->ngroups = comm + 1;
  }
  if (!c->groups[comm]) c->groups[comm] = group_new(n, members);
  ref_group *g = c->groups[comm];
  if (g->n != n) return NULL;
  for (int i = 0; i < n; i++)
    if (g->members[i] != (members ? members[i] : i)) return NULL;
  return g;
}

static int barrier(ddp_ref_comm *c, ref_group *g, int comm, int rank, char *err, size_t errcap) {
  pthread_mutex_lock(&c->lock);
  int rc = 0;
  if (c->failed_rank >= 0) {
    rc = -1;
  } else {
    uint64_t gen = g->generation;
    if (++g->arrived == g->n) {
      g->arrived = 0;
      g->generation++;
      pthread_cond_broadcast(&c->cond);
    } else {
      c->state[rank] = RS_BARRIER;
      c->wait_gen[rank] = gen;
      c->wait_group[rank] = g;
      c->wait_comm[rank] = comm;
      while (gen == g->generation && c->failed_rank < 0) {
        if (ddp_ref_deadlock_check(c, rank)) break;
        pthread_cond_wait(&c->cond, &c->lock);
      }
      c->state[rank] = RS_RUNNING;
      if (gen == g->generation) rc = -1;
    }
  }
  if (rc) ddp_ref_comm_failure(c, err, errcap);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

static double *scratch(ddp_ref_comm *c, int rank, size_t n) {
  if (c->scratch_cap[rank] < n) {
    free(c->scratch[rank]);
    c->scratch[rank] = ddp_xmalloc(sizeof(double) * (n ? n : 1));
    c->scratch_cap[rank] = n;
  }
  return c->scratch[rank];
}

static void slice(int64_t n, int world, int rank, int64_t *lo, int64_t *hi) {
  int64_t per = (n + world - 1) / world;
  *lo = rank * per < n ? rank * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

int ddp_ref_collective(ddp_ref_comm *c, int rank, const ddp_instr *in, void *send, void *recv, char *err,
                       size_t errcap) {
  return ddp_ref_collective_on(c, rank, in, 0, 0, NULL, send, recv, err, errcap);
}

int ddp_ref_collective_on(ddp_ref_comm *c, int rank, const ddp_instr *in, int comm, int n, const int32_t *members,
                          void *send, void *recv, char *err, size_t errcap) {
  if (comm == 0) n = c->world, members = NULL;
  int me = rank; /* the group rank */
  if (members) {
    me = -1;
    for (int i = 0; i < n; i++)
      if (members[i] == rank) me = i;
    if (me < 0) {
      ddp_ref_comm_abort(c, rank);
      return ddp_fail(err, errcap, "reference executor: rank %d is not a member of comm %d", rank, comm);
    }
  }
  if (c->mpi) {
    if (c->failed_rank >= 0) return ddp_fail(err, errcap, "collective aborted: rank %d failed", c->failed_rank);
    return ddp_mpi_collective_on(c->mpi, in, comm, n, members, send, recv, err, errcap);
  }
  pthread_mutex_lock(&c->lock);
  ref_group *g = group_of(c, comm, n, members);
  pthread_mutex_unlock(&c->lock);
  if (!g) {
    ddp_ref_comm_abort(c, rank);
    return ddp_fail(err, errcap, "reference executor: comm %d named with different members", comm);
  }
  int W = g->n, dt = in->dt[COLL_P_SEND];
  int64_t count = in->i[COLL_I_COUNT];
  size_t es = ddp_dtype_size(dt);
  g->send[me] = send;
  g->recv[me] = recv;
  if (barrier(c, g, comm, rank, err, errcap)) return -1;
  int64_t lo, hi;
  switch ((ddp_opcode)in->opcode) { /* no default: -Wswitch names a missing opcode */
  case I_ALL_REDUCE: {
    slice(count, W, me, &lo, &hi);
    double *acc = scratch(c, rank, (size_t)(hi - lo));
    for (int64_t i = lo; i < hi; i++)
      acc[i - lo] = ddp_ref_reduce_elem((const void *const *)g->send, W, dt, i, (int)in->i[COLL_I_REDOP]);
    if (barrier(c, g, comm, rank, err, errcap)) return -1;
    for (int q = 0; q < W; q++)
      for (int64_t i = lo; i < hi; i++) ddp_store(g->recv[q], dt, i, acc[i - lo]);
    break;
  }
  case I_REDUCE_SCATTER: {
    double *acc = scratch(c, rank, (size_t)count);
    for (int64_t i = 0; i < count; i++)
      acc[i] = ddp_ref_reduce_elem((const void *const *)g->send, W, dt, me * count + i, (int)in->i[COLL_I_REDOP]);
    if (barrier(c, g, comm, rank, err, errcap)) return -1;
    for (int64_t i = 0; i < count; i++) ddp_store(recv, dt, i, acc[i]);
    break;
  }
  case I_ALL_GATHER:
    for (int q = 0; q < W; q++)
      if ((char *)recv + (size_t)q * (size_t)count * es != g->send[q])
        memcpy((char *)recv + (size_t)q * (size_t)count * es, g->send[q], (size_t)count * es);
    if (barrier(c, g, comm, rank, err, errcap)) return -1;
    break;
  case I_BROADCAST: {
    int root = (int)in->i[COLL_I_ROOT];
    if (recv != g->send[root]) memcpy(recv, g->send[root], (size_t)count * es);
    if (barrier(c, g, comm, rank, err, errcap)) return -1;
    break;
  }
  case I_ALL_TO_ALL: /* chunk q of recv <- chunk `me` of rank q's send (the buffers do not overlap: plan_check) */
    for (int q = 0; q < W; q++)
      memcpy((char *)recv + (size_t)q * (size_t)count * es, (const char *)g->send[q] + (size_t)me * (size_t)count * es,
             (size_t)count * es);
    break;
  case I_PEER_BARRIER: /* the rendezvous above and below is all it is */
    break;
  case I_PEER_COPY: /* the executor runs it as an all-gather */
  case I_SEND: case I_RECV: case I_KERNEL: case I_GEMM: case I_MEMSET: case I_COPY: case I_EVENT_RECORD:
  case I_EVENT_WAIT: case I_RANGE_PUSH: case I_RANGE_POP: case I_TIMER: case I_LOAD_BATCH: case I_INIT_TENSOR:
  case I_COUNT:
    ddp_fail(err, errcap, "reference executor: %s is not a collective (SEND and RECV go through ddp_ref_p2p_group)",
             ddp_opcode_name(in->opcode));
    ddp_ref_comm_abort(c, rank);
    return -1;
  }
  return barrier(c, g, comm, rank, err, errcap);
}

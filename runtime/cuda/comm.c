/* runtime/cuda/comm.c: NCCL. One non-blocking communicator over the world (so that neither its
 * setup nor a lazily connecting first collective can hang the host: every call that answers ncclInProgress
 * is polled with a deadline); collectives and point-to-point on the instruction's stream; consecutive
 * SEND/RECV of one stream as one group. Waiting for the streams (sync, teardown, pinned-buffer reuse) polls
 * the streams and NCCL's asynchronous error; after DDP_NCCL_TIMEOUT_S seconds, or on an NCCL error, the
 * communicator is aborted and the error names the peer that stopped responding. A world of one rank has no
 * communicator: its collectives are local copies. The plan's communicator groups (COLL_I_COMM c >= 1,
 * plan.h ddp_comm) are split from the world's at init, one ncclCommSplit per group in plan order on every
 * rank (color 0 for its members, keyed by their group rank; NCCL_SPLIT_NOCOLOR for the others); a group
 * collective runs on its group's communicator. SEND/RECV always use the world's (peers are world ranks);
 * their peers are connected at load (cx_comm_connect_p2p), never lazily inside a step. */
#include "clock.h"
#include "param.h"
#include "cx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(ncclUniqueId) == DDP_NCCL_ID_BYTES, "DDP_NCCL_ID_BYTES must equal sizeof(ncclUniqueId)");

static void peer_name(const cx *x, char *buf, size_t cap) {
  if (x->base.world == 2)
    snprintf(buf, cap, "peer rank %d", 1 - x->base.rank);
  else
    snprintf(buf, cap, "one of the other %d ranks", x->base.world - 1);
}

static void comm_abort(cx *x) {
  if (!x->comm || x->comm_aborted) return;
  if (x->in_group) (void)ncclGroupEnd();
  x->in_group = 0;
  for (uint32_t g = 0; g < x->ngroups; g++)
    if (x->groups[g]) (void)ncclCommAbort(x->groups[g]), x->groups[g] = NULL;
  (void)ncclCommAbort(x->comm);
  x->comm = NULL;
  x->comm_aborted = 1;
}

/* An NCCL failure: message, then abort (the other ranks must not wait on this one forever). */
static int comm_error(cx *x, ncclResult_t rc, const char *call, char *err, size_t errcap) {
  char peer[64], blame[128] = "";
  peer_name(x, peer, sizeof peer);
  if (rc == ncclRemoteError || rc == ncclSystemError)
    snprintf(blame, sizeof blame, ": %s failed or its connection broke", peer);
  const char *last = ncclGetLastError(x->comm);
  ddp_fail(err, errcap, "%s: NCCL %s (%s)%s; rank %d aborted its NCCL communicator", call, ncclGetErrorString(rc),
          last && *last ? last : "no detail", blame, x->base.rank);
  comm_abort(x);
  return -1;
}

/* While waiting on the GPU: NCCL's asynchronous error, then the deadline. 0: keep waiting. */
static int watchdog(cx *x, double t0, const char *why, char *err, size_t errcap) {
  if (!x->comm) return 0;
  ncclResult_t st = ncclSuccess, rc = ncclCommGetAsyncError(x->comm, &st);
  if (rc != ncclSuccess) return comm_error(x, rc, "ncclCommGetAsyncError", err, errcap);
  if (st != ncclSuccess && st != ncclInProgress) {
    char what[256];
    snprintf(what, sizeof what, "%s: asynchronous NCCL error", why);
    return comm_error(x, st, what, err, errcap);
  }
  if (ddp_now_s() - t0 > x->timeout_s) {
    char peer[64];
    peer_name(x, peer, sizeof peer);
    comm_abort(x);
    return ddp_fail(err, errcap,
                   "%s: not finished after %g s (DDP_NCCL_TIMEOUT_S) with NCCL work outstanding: %s stopped "
                   "responding; rank %d aborted its NCCL communicator",
                   why, x->timeout_s, peer, x->base.rank);
  }
  return 0;
}

/* An NCCL call answered ncclInProgress (non-blocking communicator): poll communicator c until it settles.
 * On a non-blocking communicator every collective outside a group answers so (NCCL enqueues it from its
 * own thread), and settles within tens of microseconds: the first SPIN_S are a busy poll, since the
 * shortest sleep the kernel grants is longer than that (naps from the first poll put 100-160 us on every
 * collective: a 2 x H200 sweep, 2026-11-23, timed a 64 KiB all-reduce at 162 us and an 8 MiB one at 118);
 * after that, naps doubling to 2 ms. */
#define SPIN_S 300e-6
static int settle_on(cx *x, ncclComm_t c, const char *call, char *err, size_t errcap) {
  double t0 = ddp_now_s();
  unsigned nap = 10;
  for (;;) {
    ncclResult_t st = ncclInProgress, rc = ncclCommGetAsyncError(c, &st);
    if (rc != ncclSuccess) return comm_error(x, rc, "ncclCommGetAsyncError", err, errcap);
    if (st == ncclSuccess) return 0;
    if (st != ncclInProgress) return comm_error(x, st, call, err, errcap);
    if (watchdog(x, t0, call, err, errcap)) return -1;
    if (ddp_now_s() - t0 < SPIN_S) continue;
    ddp_sleep_s(nap * 1e-6);
    nap = nap < 2000 ? nap * 2 : 2000;
  }
}

static int settle(cx *x, const char *call, char *err, size_t errcap) { return settle_on(x, x->comm, call, err, errcap); }

int cx_nccl_call(cx *x, ncclResult_t rc, const char *call, char *err, size_t errcap) {
  if (rc == ncclSuccess) return 0;
  if (rc == ncclInProgress) return settle(x, call, err, errcap);
  return comm_error(x, rc, call, err, errcap);
}

/* A group collective's call: an in-progress answer is polled on the group's communicator. */
static int group_call(cx *x, ncclComm_t c, ncclResult_t rc, const char *call, char *err, size_t errcap) {
  if (rc == ncclSuccess) return 0;
  if (rc == ncclInProgress) return settle_on(x, c, call, err, errcap);
  return comm_error(x, rc, call, err, errcap);
}

/* One communicator per plan group, each a communicator of its own: rank 0 makes every group's unique id, the
 * world's communicator broadcasts them, and each member joins its groups in plan order (the same order on
 * every rank, so a rank in two groups cannot wait on one while its peers wait on the other).
 * Not ncclCommSplit: on a non-blocking parent NCCL 2.28 writes a member's split communicator from its own
 * thread after the parent reads settled (4 x H200: NULL at that point, a later split on the same parent
 * crashed a rank, and a late write into freed memory corrupted the heap once a run gave up). */
static int init_groups(cx *x, const ncclConfig_t *cfg0, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  if (!p->ncomms) return 0;
  x->groups = calloc(p->ncomms, sizeof *x->groups);
  ncclUniqueId *ids = calloc(p->ncomms, sizeof *ids);
  if (!x->groups || !ids) {
    free(ids);
    return ddp_fail(err, errcap, "out of memory for %u NCCL communicators", p->ncomms);
  }
  x->ngroups = p->ncomms;
  size_t bytes = sizeof *ids * p->ncomms;
  void *dev = NULL;
  int rc = 0;
  for (uint32_t g = 0; rc == 0 && x->base.rank == 0 && g < p->ncomms; g++)
    rc = cx_nccl_call(x, ncclGetUniqueId(&ids[g]), "ncclGetUniqueId (a group's communicator)", err, errcap);
  cudaError_t ce = rc ? cudaSuccess : cudaMalloc(&dev, bytes);
  if (ce == cudaSuccess && !rc) ce = cudaMemcpy(dev, ids, bytes, cudaMemcpyHostToDevice);
  if (ce != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: the groups' NCCL ids (%zu bytes): %s: %s", __FILE__, __LINE__, bytes,
                  cudaGetErrorName(ce), cudaGetErrorString(ce));
  if (rc == 0)
    rc = cx_nccl_call(x, ncclBroadcast(dev, dev, bytes, ncclUint8, 0, x->comm, x->streams[0]),
                   "ncclBroadcast (the groups' NCCL ids)", err, errcap);
  if (rc == 0) rc = cx_wait_streams(x, "broadcasting the groups' NCCL ids", err, errcap);
  if (rc == 0 && (ce = cudaMemcpy(ids, dev, bytes, cudaMemcpyDeviceToHost)) != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: the groups' NCCL ids: %s: %s", __FILE__, __LINE__, cudaGetErrorName(ce),
                  cudaGetErrorString(ce));
  if (dev) (void)cudaFree(dev);
  for (uint32_t g = 0; rc == 0 && g < p->ncomms; g++) {
    int64_t at = ddp_plan_comm_index(p, g + 1, x->base.rank);
    if (at < 0) continue;
    ncclConfig_t cfg = *cfg0;
    char call[160];
    snprintf(call, sizeof call, "ncclCommInitRankConfig(comm %u of %u ranks, group rank %lld)", g + 1, p->comms[g].n,
             (long long)at);
    ncclResult_t r = ncclCommInitRankConfig(&x->groups[g], (int)p->comms[g].n, ids[g], (int)at, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) rc = comm_error(x, r, call, err, errcap);
    else if (!x->groups[g]) rc = ddp_fail(err, errcap, "%s gave no communicator", call);
    else rc = settle_on(x, x->groups[g], call, err, errcap);
  }
  free(ids);
  return rc;
}

/* One arena with one communicator: as user buffers (ncclCommRegister, a local call) or as a symmetric
 * window (ncclCommWindowRegister, collective over the communicator's members). *reg = NULL when refused;
 * then why (if still empty) says what NCCL answered. -1 only when settling the communicator failed. */
static int register_one(cx *x, ncclComm_t comm, uint32_t c, int a, int window, void **reg, ncclWindow_t *win,
                        char *why, size_t whycap, char *err, size_t errcap) {
  const char *call = window ? "ncclCommWindowRegister" : "ncclCommRegister";
  ncclResult_t rc;
  if (window) {
    /* NCCL fills the handle when the registration completes, after the call on a non-blocking communicator:
     * it gets the persistent slot, never a local */
    *win = NULL;
    rc = ncclCommWindowRegister(comm, x->arena[a], (size_t)x->arena_alloc[a], win, NCCL_WIN_COLL_SYMMETRIC);
  } else {
    rc = ncclCommRegister(comm, x->arena[a], (size_t)x->arena_bytes[a], reg);
  }
  /* A window registration on a non-blocking communicator goes on after the call returns, success or not, and
   * the next call on the communicator is refused until it is done (NCCL 2.28: "Attempt to use communicator
   * before the previous operation returned ncclSuccess"): settle it either way. */
  if ((rc == ncclInProgress || (window && rc == ncclSuccess)) && settle_on(x, comm, call, err, errcap)) return -1;
  if (rc != ncclSuccess && rc != ncclInProgress) {
    *reg = NULL;
    *win = NULL;
    if (!why[0]) snprintf(why, whycap, "; %s(%s arena, communicator %u): %s", call, ddp_arena_name(a), c, ncclGetErrorString(rc));
  }
  return 0;
}

/* nccl = { register = "buffers" }: every non-empty arena registered with the world's communicator and each
 * of this rank's groups (ncclCommRegister), so collectives on them can skip NCCL's staging copies;
 * register = "window": every arena allocated by ncclMemAlloc in whole DDP_WINDOW_ALIGN units (memory.c);
 * those a collective of some rank touches registered as symmetric windows with each communicator whose
 * members all have them at this size. A refusal is not an error: the run goes on
 * unregistered and x->base.comm says what NCCL answered. */
static int register_arenas(cx *x, char *err, size_t errcap) {
  const ddp_meta *m = &x->base.plan->meta;
  int v = 0;
  (void)ncclGetVersion(&v);
  char ctas[32] = "NCCL's";
  if (m->nccl_max_ctas > 0) snprintf(ctas, sizeof ctas, "%lld", (long long)m->nccl_max_ctas);
  snprintf(x->base.comm, sizeof x->base.comm, "NCCL %d.%d.%d, CTA policy %s, maxCTAs %s", v / 10000, v / 100 % 100,
           v % 100, ddp_vocab_name(ddp_nccl_cta_policy_names, NCCL_CTA_COUNT, m->nccl_cta_policy), ctas);
  if (m->nccl_register == NCCL_REGISTER_NONE) return 0;
  const int window = m->nccl_register == NCCL_REGISTER_WINDOW;
  const uint32_t coll = window ? ddp_plan_collective_arenas(x->base.plan) : ~0u; /* plan/windows.c */
  const uint32_t ncomm = 1 + x->ngroups;
  x->reg = calloc((size_t)ncomm * ARENA_COUNT, sizeof *x->reg);
  x->wins = calloc((size_t)ncomm * ARENA_COUNT, sizeof *x->wins);
  if (!x->reg || !x->wins) return ddp_fail(err, errcap, "out of host memory");
  uint64_t bytes = 0;
  int done = 0, skipped = 0;
  char why[160] = "";
  for (uint32_t c = 0; c < ncomm; c++) {
    ncclComm_t comm = c == 0 ? x->comm : x->groups[c - 1];
    if (!comm) continue;
    for (int a = 0; a < ARENA_COUNT; a++) {
      if (!x->arena[a] || !((coll >> a) & 1)) continue;
      if (window && (!x->arena_nccl[a] || ddp_plan_window_bytes(x->base.plan, coll, c, a) != x->arena_alloc[a])) {
        skipped++;
        continue;
      }
      const uint32_t k = c * ARENA_COUNT + (uint32_t)a;
      if (register_one(x, comm, c, a, window, &x->reg[k], &x->wins[k], why, sizeof why, err, errcap)) return -1;
      if (window ? !x->wins[k] : !x->reg[k]) continue;
      if (c == 0) bytes += x->arena_bytes[a];
      done++;
    }
  }
  size_t len = strlen(x->base.comm);
  snprintf(x->base.comm + len, sizeof x->base.comm - len, ", %d arena %s (%.2f GiB on the world's)%s%s", done,
           window ? "windows" : "registrations", (double)bytes / (double)(1ull << 30),
           skipped ? ", some arenas left out (not from ncclMemAlloc, or their sizes differ between the ranks)" : "",
           why);
  return 0;
}

static void deregister_arenas(cx *x) {
  for (uint32_t c = 0; x->reg && x->wins && c < 1 + x->ngroups; c++) {
    ncclComm_t comm = c == 0 ? x->comm : x->groups ? x->groups[c - 1] : NULL;
    for (int a = 0; a < ARENA_COUNT; a++) {
      const uint32_t k = c * ARENA_COUNT + (uint32_t)a;
      if (comm && x->wins[k]) (void)ncclCommWindowDeregister(comm, x->wins[k]);
      if (comm && x->reg[k]) (void)ncclCommDeregister(comm, x->reg[k]);
    }
  }
  free(x->reg);
  free(x->wins);
  x->reg = NULL;
  x->wins = NULL;
}

int cx_comm_init(cx *x, const void *nccl_id, char *err, size_t errcap) {
  if (x->base.world <= 1) return 0;
  ncclUniqueId id;
  memcpy(&id, nccl_id, sizeof id);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  int64_t blocking; /* diagnostic: a blocking communicator (no setup deadline) */
  if (ddp_param_int(PARAM_NCCL_BLOCKING, &blocking, err, errcap)) return -1;
  cfg.blocking = (int)blocking;
  const ddp_meta *m = &x->base.plan->meta; /* the schedule's nccl = {...} */
  static const int policy[NCCL_CTA_COUNT] = {NCCL_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_ZERO};
  if (m->nccl_cta_policy > 0 && m->nccl_cta_policy < NCCL_CTA_COUNT) cfg.CTAPolicy = policy[m->nccl_cta_policy];
  if (m->nccl_max_ctas > 0) cfg.maxCTAs = (int)m->nccl_max_ctas;
  char call[160];
  snprintf(call, sizeof call, "ncclCommInitRankConfig(rank %d of %d, GPU %d)", x->base.rank, x->base.world,
           x->device);
  ncclResult_t rc = ncclCommInitRankConfig(&x->comm, x->base.world, id, x->base.rank, &cfg);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    return comm_error(x, rc, call, err, errcap);
  }
  if (settle(x, call, err, errcap)) return -1;
  if (init_groups(x, &cfg, err, errcap)) return -1;
  return register_arenas(x, err, errcap);
}

void cx_comm_fini(cx *x) {
  if (x->comm && !x->comm_aborted) deregister_arenas(x);
  free(x->reg);
  free(x->wins);
  x->reg = NULL;
  x->wins = NULL;
  if (!x->comm || x->comm_aborted) {
    free(x->groups); /* aborted ones: comm_abort */
    x->groups = NULL;
    x->ngroups = 0;
    return;
  }
  /* Graceful: finalize (flushes, may be in progress), then destroy; a peer that never finalizes gets the
   * communicator aborted after the deadline instead of a hang. */
  char why[256];
  for (uint32_t g = 0; g < x->ngroups; g++) { /* the groups first, each finalized and destroyed */
    if (!x->groups[g]) continue;
    if (ncclCommFinalize(x->groups[g]) == ncclInProgress &&
        settle_on(x, x->groups[g], "ncclCommFinalize (group)", why, sizeof why)) {
      free(x->groups); /* aborted, every group with it */
      x->groups = NULL;
      x->ngroups = 0;
      return;
    }
    (void)ncclCommDestroy(x->groups[g]);
    x->groups[g] = NULL;
  }
  free(x->groups);
  x->groups = NULL;
  x->ngroups = 0;
  ncclResult_t rc = ncclCommFinalize(x->comm);
  if (cx_nccl_call(x, rc, "ncclCommFinalize", why, sizeof why)) return; /* aborted */
  (void)ncclCommDestroy(x->comm);
  x->comm = NULL;
}

static int nccl_type(int dt) {
  switch (dt) {
  case DT_F32: return ncclFloat32;
  case DT_BF16: return ncclBfloat16;
  case DT_F64: return ncclFloat64;
  case DT_I32: return ncclInt32;
  default: return -1;
  }
}

int cx_comm_prepare(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_instr *in = op->in;
  const int W = x->base.world, opc = in->opcode;
  const int64_t count = in->i[COLL_I_COUNT];
  if (count < 0) return ddp_fail(err, errcap, "negative count %lld", (long long)count);
  int64_t comm = opc == I_SEND || opc == I_RECV ? 0 : in->i[COLL_I_COMM];
  int G = W; /* the ranks of the collective's communicator */
  op->ncomm = x->comm;
  if (comm != 0) {
    if (comm < 0 || (uint64_t)comm > x->ngroups || !x->groups[comm - 1])
      return ddp_fail(err, errcap, "communicator %lld: rank %d has no NCCL communicator for it (%u groups)",
                      (long long)comm, x->base.rank, x->ngroups);
    op->ncomm = x->groups[comm - 1];
    G = (int)x->base.plan->comms[comm - 1].n;
  }
  op->nccl_type = nccl_type(in->dt[COLL_P_SEND]);
  if (op->nccl_type < 0) return ddp_fail(err, errcap, "dtype %s has no NCCL type", ddp_dtype_name(in->dt[COLL_P_SEND]));
  const uint64_t es = ddp_dtype_size(in->dt[COLL_P_SEND]), n = (uint64_t)count * es;
  uint64_t send = n, recv = n;
  if (opc == I_REDUCE_SCATTER) send = n * (uint64_t)G;
  if (opc == I_ALL_GATHER) recv = n * (uint64_t)G;
  if (opc == I_ALL_TO_ALL) send = recv = n * (uint64_t)G;
  if (opc == I_ALL_REDUCE || opc == I_REDUCE_SCATTER) {
    if (in->i[COLL_I_REDOP] != REDOP_SUM && in->i[COLL_I_REDOP] != REDOP_AVG)
      return ddp_fail(err, errcap, "reduction %lld", (long long)in->i[COLL_I_REDOP]);
    op->nccl_op = in->i[COLL_I_REDOP] == REDOP_AVG ? ncclAvg : ncclSum;
  }
  if (opc == I_BROADCAST || opc == I_SEND || opc == I_RECV) {
    int lim = opc == I_BROADCAST ? G : W; /* a root is a group rank, a peer a world rank */
    if (in->i[COLL_I_PEER] < 0 || in->i[COLL_I_PEER] >= lim)
      return ddp_fail(err, errcap, "root/peer rank %lld, %d ranks", (long long)in->i[COLL_I_PEER], lim);
    op->peer = (int)in->i[COLL_I_PEER];
    if (opc != I_BROADCAST && op->peer == x->base.rank)
      return ddp_fail(err, errcap, "rank %d sends to or receives from itself", op->peer);
  }
  op->count = (size_t)count;
  if (count == 0) {
    op->skip = 1;
    return 0;
  }
  if (opc == I_SEND || opc == I_RECV) {
    if (W == 1) return ddp_fail(err, errcap, "point-to-point in a world of one rank");
    return cx_buffer(x, in, COLL_P_BUF, n, &op->ptr[COLL_P_BUF], err, errcap);
  }
  if (cx_buffer(x, in, COLL_P_RECV, recv, &op->ptr[COLL_P_RECV], err, errcap)) return -1;
  if (opc == I_BROADCAST && in->p[COLL_P_SEND].tensor < 0)
    op->ptr[COLL_P_SEND] = op->ptr[COLL_P_RECV]; /* in place (only the root's send buffer is read) */
  else if (cx_buffer(x, in, COLL_P_SEND, send, &op->ptr[COLL_P_SEND], err, errcap))
    return -1;
  if (W > 1) {
    if (!x->comm) return ddp_fail(err, errcap, "no NCCL communicator");
    return 0;
  }
  /* One rank: every collective is the identity; copy when not in place. */
  op->bytes = (size_t)n;
  const uint8_t *s = op->ptr[COLL_P_SEND], *d = op->ptr[COLL_P_RECV];
  if (s == d) op->skip = 1;
  else if (s < d + n && d < s + n)
    return ddp_fail(err, errcap, "send and receive buffers overlap without being in place");
  return 0;
}

static int local_copy(const cx_op *op, char *err, size_t errcap) {
  DDP_CUDA_TRY(
      cudaMemcpyAsync(op->ptr[COLL_P_RECV], op->ptr[COLL_P_SEND], op->bytes, cudaMemcpyDeviceToDevice, op->stream));
  return 0;
}

int cx_exec_ALL_REDUCE(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (!x->comm) return x->comm_aborted ? ddp_fail(err, errcap, "NCCL communicator aborted") : local_copy(op, err, errcap);
  return group_call(x, op->ncomm, ncclAllReduce(op->ptr[COLL_P_SEND], op->ptr[COLL_P_RECV], op->count, (ncclDataType_t)op->nccl_type,
                                    (ncclRedOp_t)op->nccl_op, op->ncomm, op->stream),
                   "ncclAllReduce", err, errcap);
}

int cx_exec_REDUCE_SCATTER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (!x->comm) return x->comm_aborted ? ddp_fail(err, errcap, "NCCL communicator aborted") : local_copy(op, err, errcap);
  return group_call(x, op->ncomm, ncclReduceScatter(op->ptr[COLL_P_SEND], op->ptr[COLL_P_RECV], op->count, (ncclDataType_t)op->nccl_type,
                                        (ncclRedOp_t)op->nccl_op, op->ncomm, op->stream),
                   "ncclReduceScatter", err, errcap);
}

int cx_exec_ALL_GATHER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (!x->comm) return x->comm_aborted ? ddp_fail(err, errcap, "NCCL communicator aborted") : local_copy(op, err, errcap);
  if (ddp_instr_peer_copied(op->in)) return cx_peer_move(x, op, err, errcap); /* nccl.movement = "peer_copy" */
  return group_call(x, op->ncomm, ncclAllGather(op->ptr[COLL_P_SEND], op->ptr[COLL_P_RECV], op->count, (ncclDataType_t)op->nccl_type, op->ncomm,
                                    op->stream),
                   "ncclAllGather", err, errcap);
}

/* count elements to and from each rank of the communicator: NCCL's copy-engine path when the communicator has
 * the zero-CTA policy and both buffers lie in symmetric windows (nccl = { register = "window" }). */
int cx_exec_ALL_TO_ALL(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (!x->comm) return x->comm_aborted ? ddp_fail(err, errcap, "NCCL communicator aborted") : local_copy(op, err, errcap);
  if (ddp_instr_peer_copied(op->in)) return cx_peer_move(x, op, err, errcap); /* nccl.movement = "peer_copy" */
  return group_call(x, op->ncomm, ncclAlltoAll(op->ptr[COLL_P_SEND], op->ptr[COLL_P_RECV], op->count, (ncclDataType_t)op->nccl_type,
                                    op->ncomm, op->stream),
                   "ncclAlltoAll", err, errcap);
}

int cx_exec_BROADCAST(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  if (!x->comm) return x->comm_aborted ? ddp_fail(err, errcap, "NCCL communicator aborted") : local_copy(op, err, errcap);
  return group_call(x, op->ncomm, ncclBroadcast(op->ptr[COLL_P_SEND], op->ptr[COLL_P_RECV], op->count, (ncclDataType_t)op->nccl_type, op->peer,
                                    op->ncomm, op->stream),
                   "ncclBroadcast", err, errcap);
}

int cx_comm_p2p(cx *x, const cx_op *op, int send, char *err, size_t errcap) {
  if (op->skip && !op->group_begin && !op->group_end) return 0;
  if (!x->comm) return ddp_fail(err, errcap, "NCCL communicator aborted");
  if (op->group_begin) {
    if (cx_nccl_call(x, ncclGroupStart(), "ncclGroupStart", err, errcap)) return -1;
    x->in_group = 1;
  }
  if (!op->skip) {
    ncclResult_t rc =
        send ? ncclSend(op->ptr[COLL_P_BUF], op->count, (ncclDataType_t)op->nccl_type, op->peer, x->comm, op->stream)
             : ncclRecv(op->ptr[COLL_P_BUF], op->count, (ncclDataType_t)op->nccl_type, op->peer, x->comm, op->stream);
    char call[64];
    snprintf(call, sizeof call, "%s(peer %d)", send ? "ncclSend" : "ncclRecv", op->peer);
    if (cx_nccl_call(x, rc, call, err, errcap)) return -1;
  }
  if (op->group_end) {
    x->in_group = 0;
    return cx_nccl_call(x, ncclGroupEnd(), "ncclGroupEnd (point-to-point group)", err, errcap);
  }
  return 0;
}

int cx_allgather_host(cx *x, const void *mine, void *all, size_t bytes, char *err, size_t errcap) {
  const size_t W = (size_t)x->base.world;
  if (!x->comm) return ddp_fail(err, errcap, "all-gather: no NCCL communicator");
  uint8_t *d = NULL;
  DDP_CUDA_TRY(cudaMalloc((void **)&d, bytes * (W + 1)));
  cudaStream_t s = x->streams[0];
  int rc = cudaMemcpyAsync(d + bytes * W, mine, bytes, cudaMemcpyHostToDevice, s) == cudaSuccess
               ? cx_nccl_call(x, ncclAllGather(d + bytes * W, d, bytes, ncclInt8, x->comm, s), "ncclAllGather (host cards)",
                           err, errcap)
               : ddp_fail(err, errcap, "all-gather: cudaMemcpyAsync to the device failed");
  if (rc == 0) rc = cx_wait_streams(x, "all-gather", err, errcap);
  if (rc == 0 && cudaMemcpy(all, d, bytes * W, cudaMemcpyDeviceToHost) != cudaSuccess)
    rc = ddp_fail(err, errcap, "all-gather: cudaMemcpy to the host failed");
  (void)cudaFree(d);
  return rc;
}

/* One point-to-point message size this rank sends to (send = 1) or receives from a peer. */
typedef struct p2p_size {
  int peer, send;
  uint64_t bytes;
} p2p_size;

static int by_peer_dir_bytes(const void *a, const void *b) {
  const p2p_size *x = a, *y = b;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  if (x->send != y->send) return x->send < y->send ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* NCCL connects a peer's point-to-point channels lazily, in the ncclGroupEnd of the first SEND/RECV that
 * needs them, by a handshake with the peer's host. A pipeline step can hold a rank's host from reaching its
 * side of that handshake: with GPipe on the XL model, stage 1's host enqueues every microbatch's forward
 * behind a receive that waits for stage 0's group {send activation, receive gradient}, whose ncclGroupEnd
 * waits in the handshake for stage 1's first send; once the GPU's launch queue is full, stage 1's host
 * blocks in a kernel launch and never gets there (2026-11-23, 2 x H200: a hang in step 0). So every pair
 * of ranks that exchanges messages connects here, before any step: one group per rank with a send of each
 * distinct size it sends to each peer and a receive of each distinct size it receives (ascending, so both
 * sides post them in the same order: the verifier proved every send pairs with a receive of its size),
 * which connects every channel the step's messages will use. Nothing to do for plans without SEND/RECV. */
int cx_comm_connect_p2p(cx *x, const cx_prog *const *progs, int nprogs, char *err, size_t errcap) {
  if (!x->comm) return 0;
  size_t n = 0, cap = 0;
  p2p_size *v = NULL;
  for (int k = 0; k < nprogs; k++)
    for (uint32_t i = 0; i < progs[k]->n; i++) {
      const cx_op *op = &progs[k]->ops[i];
      int opc = op->in->opcode;
      if ((opc != I_SEND && opc != I_RECV) || op->skip) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        p2p_size *w = realloc(v, cap * sizeof *v);
        if (!w) return free(v), ddp_fail(err, errcap, "out of host memory");
        v = w;
      }
      v[n++] = (p2p_size){op->peer, opc == I_SEND, (uint64_t)op->count * ddp_dtype_size(op->in->dt[COLL_P_SEND])};
    }
  if (!n) return 0;
  qsort(v, n, sizeof *v, by_peer_dir_bytes);
  size_t m = 0; /* distinct (peer, direction, size) */
  uint64_t send_max = 0, recv_sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && !by_peer_dir_bytes(&v[m - 1], &v[i])) continue;
    v[m++] = v[i];
    if (v[i].send) send_max = v[i].bytes > send_max ? v[i].bytes : send_max;
    else recv_sum += v[i].bytes;
  }
  uint8_t *sbuf = NULL, *rbuf = NULL;
  cudaStream_t s = x->streams[0];
  int rc = 0;
  cudaError_t ce = cudaMalloc((void **)&sbuf, send_max ? send_max : 1);
  if (ce == cudaSuccess) ce = cudaMalloc((void **)&rbuf, recv_sum ? recv_sum : 1);
  if (ce == cudaSuccess) ce = cudaMemsetAsync(sbuf, 0, send_max ? send_max : 1, s);
  if (ce != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: connecting point-to-point peers: %s: %s", __FILE__, __LINE__,
                  cudaGetErrorName(ce), cudaGetErrorString(ce));
  if (rc == 0) rc = cx_nccl_call(x, ncclGroupStart(), "ncclGroupStart (connecting point-to-point peers)", err, errcap);
  if (rc == 0) x->in_group = 1; /* comm_abort ends it */
  uint64_t at = 0;
  for (size_t i = 0; rc == 0 && i < m; i++) {
    char call[96];
    snprintf(call, sizeof call, "%s(peer %d, %llu bytes, connecting)", v[i].send ? "ncclSend" : "ncclRecv", v[i].peer,
             (unsigned long long)v[i].bytes);
    ncclResult_t r = v[i].send ? ncclSend(sbuf, v[i].bytes, ncclInt8, v[i].peer, x->comm, s)
                               : ncclRecv(rbuf + at, v[i].bytes, ncclInt8, v[i].peer, x->comm, s);
    if (!v[i].send) at += v[i].bytes;
    if (r != ncclSuccess && r != ncclInProgress) rc = comm_error(x, r, call, err, errcap);
  }
  if (rc == 0) {
    x->in_group = 0;
    rc = cx_nccl_call(x, ncclGroupEnd(), "ncclGroupEnd (connecting point-to-point peers)", err, errcap);
  }
  if (rc == 0) rc = cx_wait_streams(x, "connecting point-to-point peers", err, errcap);
  if (sbuf) (void)cudaFree(sbuf);
  if (rbuf) (void)cudaFree(rbuf);
  free(v);
  return rc;
}

/* One run of the timed collective (cx_time_collective). */
static int timed_op(cx *x, const ddp_instr *in, void *sbuf, void *rbuf, size_t count, cudaStream_t s, char *err,
                    size_t errcap) {
  const int r = x->base.rank, W = x->base.world;
  switch (in->opcode) {
  case I_ALL_REDUCE:
    return cx_nccl_call(x, ncclAllReduce(sbuf, rbuf, count, ncclFloat32, ncclSum, x->comm, s), "ncclAllReduce (timed)", err,
                     errcap);
  case I_REDUCE_SCATTER:
    return cx_nccl_call(x, ncclReduceScatter(sbuf, rbuf, count, ncclFloat32, ncclSum, x->comm, s),
                     "ncclReduceScatter (timed)", err, errcap);
  case I_ALL_GATHER:
    return cx_nccl_call(x, ncclAllGather(sbuf, rbuf, count, ncclFloat32, x->comm, s), "ncclAllGather (timed)", err, errcap);
  default: /* I_SEND: even ranks to the next */
    if (r % 2 == 0 && r + 1 < W)
      return cx_nccl_call(x, ncclSend(sbuf, count, ncclFloat32, r + 1, x->comm, s), "ncclSend (timed)", err, errcap);
    if (r % 2 == 1)
      return cx_nccl_call(x, ncclRecv(rbuf, count, ncclFloat32, r - 1, x->comm, s), "ncclRecv (timed)", err, errcap);
    return 0;
  }
}

int cx_time_collective(ddp_exec *e, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap) {
  cx *x = e->impl;
  const int W = x->base.world, opc = in->opcode;
  if (!x->comm) return ddp_fail(err, errcap, "timing a collective: no NCCL communicator (a world of %d)", W);
  if (opc != I_ALL_REDUCE && opc != I_REDUCE_SCATTER && opc != I_ALL_GATHER && opc != I_SEND)
    return ddp_fail(err, errcap, "timing a collective: %s is not one", ddp_opcode_name(opc));
  int64_t count = in->i[COLL_I_COUNT];
  if (count < 1 || iters < 1) return ddp_fail(err, errcap, "timing a collective: count %lld, %d runs", (long long)count, iters);
  size_t sbytes = (size_t)count * 4 * (opc == I_REDUCE_SCATTER ? (size_t)W : 1);
  size_t rbytes = (size_t)count * 4 * (opc == I_ALL_GATHER ? (size_t)W : 1);
  void *sbuf = NULL, *rbuf = NULL;
  cudaEvent_t ev[2] = {NULL, NULL};
  cudaStream_t s = x->streams[0];
  int rc = 0;
  cudaError_t ce = cudaMalloc(&sbuf, sbytes);
  if (ce == cudaSuccess) ce = cudaMalloc(&rbuf, rbytes);
  if (ce == cudaSuccess) ce = cudaMemsetAsync(sbuf, 0, sbytes, s);
  if (ce == cudaSuccess) ce = cudaEventCreate(&ev[0]);
  if (ce == cudaSuccess) ce = cudaEventCreate(&ev[1]);
  if (ce != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: timing a collective of %zu bytes: %s: %s", __FILE__, __LINE__, sbytes,
                  cudaGetErrorName(ce), cudaGetErrorString(ce));
  for (int k = 0; rc == 0 && k < 2; k++) rc = timed_op(x, in, sbuf, rbuf, (size_t)count, s, err, errcap);
  if (rc == 0) rc = cx_wait_streams(x, "timing a collective (warm-up)", err, errcap);
  if (rc == 0 && (ce = cudaEventRecord(ev[0], s)) != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: cudaEventRecord: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  for (int k = 0; rc == 0 && k < iters; k++) rc = timed_op(x, in, sbuf, rbuf, (size_t)count, s, err, errcap);
  if (rc == 0 && (ce = cudaEventRecord(ev[1], s)) != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: cudaEventRecord: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  if (rc == 0) rc = cx_wait_streams(x, "timing a collective", err, errcap);
  if (rc == 0) rc = cx_mean_ms(ev, iters, ms, err, errcap);
  for (int k = 0; k < 2; k++)
    if (ev[k]) (void)cudaEventDestroy(ev[k]);
  if (sbuf) (void)cudaFree(sbuf);
  if (rbuf) (void)cudaFree(rbuf);
  return rc;
}

/* Waiting with a communicator polls (the watchdog must run) with naps doubling from 10 us to WAIT_NAP_US.
 * The cap is what a wait can return late, and with several ranks the slowest rank's lateness is every
 * rank's: with naps of up to 1 ms, 2 x H200 DDP steps of ~70 ms took 1.2-3.1 ms more wall time than GPU
 * time (medians), 0.8-2.5 ms with naps of up to 100 us (2026-11-27; most of the rest was the energy
 * sampler, power.c). A 70 ms wait at 100 us naps is ~700 polls: nothing for a host core. */
#define WAIT_NAP_US 100u

int cx_wait_streams(cx *x, const char *why, char *err, size_t errcap) {
  if (!x->comm) {
    for (uint32_t s = 0; s < x->nstreams; s++) {
      cudaError_t rc = cudaStreamSynchronize(x->streams[s]);
      if (rc != cudaSuccess)
        return ddp_fail(err, errcap, "%s: %s:%d: cudaStreamSynchronize(stream %u): %s: %s", why, __FILE__, __LINE__, s,
                       cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
    return 0;
  }
  double t0 = ddp_now_s();
  unsigned nap = 10;
  for (;;) {
    int busy = 0;
    for (uint32_t s = 0; s < x->nstreams; s++) {
      cudaError_t rc = cudaStreamQuery(x->streams[s]);
      if (rc == cudaErrorNotReady) {
        busy = 1;
      } else if (rc != cudaSuccess) {
        comm_abort(x);
        return ddp_fail(err, errcap, "%s: %s:%d: cudaStreamQuery(stream %u): %s: %s (NCCL communicator aborted)", why,
                       __FILE__, __LINE__, s, cudaGetErrorName(rc), cudaGetErrorString(rc));
      }
    }
    if (!busy) return 0;
    if (watchdog(x, t0, why, err, errcap)) return -1;
    ddp_sleep_s(nap * 1e-6);
    nap = nap < WAIT_NAP_US ? nap * 2 : WAIT_NAP_US;
  }
}

int cx_wait_event(cx *x, cudaEvent_t ev, const char *why, char *err, size_t errcap) {
  if (!x->comm) {
    cudaError_t rc = cudaEventSynchronize(ev);
    if (rc != cudaSuccess)
      return ddp_fail(err, errcap, "%s: %s:%d: cudaEventSynchronize: %s: %s", why, __FILE__, __LINE__,
                     cudaGetErrorName(rc), cudaGetErrorString(rc));
    return 0;
  }
  double t0 = ddp_now_s();
  unsigned nap = 10;
  for (;;) {
    cudaError_t rc = cudaEventQuery(ev);
    if (rc == cudaSuccess) return 0;
    if (rc != cudaErrorNotReady) {
      comm_abort(x);
      return ddp_fail(err, errcap, "%s: %s:%d: cudaEventQuery: %s: %s (NCCL communicator aborted)", why, __FILE__,
                     __LINE__, cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
    if (watchdog(x, t0, why, err, errcap)) return -1;
    ddp_sleep_s(nap * 1e-6);
    nap = nap < WAIT_NAP_US ? nap * 2 : WAIT_NAP_US;
  }
}

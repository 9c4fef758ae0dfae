/* runtime/ref/exec_ref.c: the reference executor (see exec_ref.h). Arenas are host mappings sized by the
 * plan (host_arena.h: guarded, zero until touched); kernel arguments are resolved once at construction;
 * run() executes a program in order (streams and events are no-ops on one CPU thread: program order is a
 * valid order of every stream).
 * Point-to-point: a run of consecutive SEND/RECV instructions on one stream is one group (the CUDA
 * executor's group_p2p: runtime/cuda/prepare.c), handed to the comm at once (ddp_ref_p2p_group). Any other
 * instruction between them, or a change of stream, starts a new group. */
#include "exec_ref.h"
#include "clock.h"
#include "err.h"
#include "host_arena.h"
#include "ref_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t *arena[ARENA_COUNT];
  ddp_ref_comm *comm;
  ddp_kargs *init_args, *step_args; /* per instruction of the rank's init and step programs */
  double *timer_ms;
  uint32_t ntimers;
  double *t_start, *t_end; /* per step instruction, when tracing */
  uint64_t bytes;
  ddp_ref_p2p *p2p; /* the current point-to-point group */
  uint32_t p2p_cap;
} ref_impl;

static void *ptr(const ref_impl *m, const ddp_bufref *r) {
  return r->tensor < 0 ? NULL : m->arena[r->arena] + r->offset;
}

static ddp_kargs *resolve(const ref_impl *m, const ddp_program *prog) {
  ddp_kargs *a = calloc(prog->n ? prog->n : 1, sizeof(ddp_kargs));
  if (!a) return NULL;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    for (int s = 0; s < DDP_MAX_PTRS; s++) a[k].p[s] = ptr(m, &in->p[s]);
    memcpy(a[k].i, in->i, sizeof a[k].i);
    memcpy(a[k].f, in->f, sizeof a[k].f);
  }
  return a;
}

static int is_p2p(const ddp_instr *in) { return in->opcode == I_SEND || in->opcode == I_RECV; }

/* Instructions [k, end) of prog: one group of SEND/RECV (consecutive, one stream). */
static int p2p_group(ddp_exec *x, const ddp_program *prog, const ddp_kargs *args, uint32_t k, uint32_t end, char *err,
                     size_t errcap) {
  ref_impl *m = x->impl;
  const ddp_rank_plan *rp = &x->plan->ranks[x->rank];
  const ddp_instr *first = &prog->v[k];
  /* where the instructions are, for messages: a tail of init (the refresh) is still "init" */
  const char *pname = "program";
  uint32_t base = 0;
  if (first >= rp->init.v && first < rp->init.v + rp->init.n) pname = "init", base = (uint32_t)(prog->v - rp->init.v);
  if (first >= rp->step.v && first < rp->step.v + rp->step.n) pname = "step", base = (uint32_t)(prog->v - rp->step.v);
  if (x->world == 1 || !m->comm)
    return ddp_fail(err, errcap, "reference executor: rank %d %s instruction %u: %s %s rank %lld in a world of %d %s",
                    x->rank, pname, base + k, ddp_opcode_name(first->opcode), first->opcode == I_SEND ? "to" : "from",
                    (long long)first->i[COLL_I_PEER], x->world,
                    x->world == 1 ? "rank (a plan cannot send to itself)" : "ranks without a communicator");
  uint32_t n = end - k;
  if (n > m->p2p_cap) {
    m->p2p = ddp_xrealloc(m->p2p, (size_t)n * sizeof *m->p2p);
    m->p2p_cap = n;
  }
  for (uint32_t j = 0; j < n; j++) {
    const ddp_instr *in = &prog->v[k + j];
    m->p2p[j] = (ddp_ref_p2p){in, args[k + j].p[COLL_P_BUF], pname, base + k + j,
                              in->name >= 0 ? ddp_plan_string(x->plan, in->name) : ""};
  }
  return ddp_ref_p2p_group(m->comm, x->rank, m->p2p, (int)n, err, errcap);
}

/* Every rank's `count` elements of dtype dt at `send` (the same range on each), gathered through the comm into
 * all[W * count] in rank order (an all-gather: threads or MPI alike). */
static int gather_range(ddp_exec *x, const void *send, int64_t count, int dt, uint8_t *all, char *err, size_t errcap) {
  ddp_instr gather = ddp_instr_blank(I_ALL_GATHER, STREAM_COMPUTE);
  gather.dt[COLL_P_SEND] = gather.dt[COLL_P_RECV] = (uint8_t)dt;
  gather.i[COLL_I_COUNT] = count;
  return ddp_ref_collective(((ref_impl *)x->impl)->comm, x->rank, &gather, (void *)send, all, err, errcap);
}

/* ADAMW with peers (nccl.all_reduce = "peer"): every rank's gradient range, gathered, summed in rank order in
 * f32 and divided by W, as the CUDA kernel does (templates/optimizer.cu), then the plain update on that f32
 * gradient. With a received buffer ("peer_copy") the other ranks' ranges are already there (rank order
 * without this rank), and nothing is gathered. */
static int peer_adamw(ddp_exec *x, const ddp_instr *in, const ddp_kargs *a, char *err, size_t errcap) {
  ref_impl *m = x->impl;
  const int W = x->world, gdt = in->dt[ADAMW_P_GRAD];
  const int64_t n = in->i[ADAMW_I_N];
  const size_t chunk = (size_t)n * ddp_dtype_size(gdt);
  const uint8_t *recv = a->p[ADAMW_P_RECEIVED];
  if (W < 2 || (!m->comm && !recv) || in->i[ADAMW_I_PEERS] != W)
    return ddp_fail(err, errcap, "reference executor: an update with %lld peers on a world of %d",
                    (long long)in->i[ADAMW_I_PEERS], W);
  uint8_t *all = recv ? NULL : malloc(chunk * (size_t)W + 1);
  const uint8_t **src = malloc(sizeof *src * (size_t)W);
  float *g = malloc((size_t)n * sizeof(float) + 1);
  int rc = (all || recv) && src && g ? 0 : ddp_fail(err, errcap, "reference executor: out of memory for %lld peer gradients", (long long)n);
  if (rc == 0 && !recv) rc = gather_range(x, a->p[ADAMW_P_GRAD], n, gdt, all, err, errcap);
  for (int q = 0; rc == 0 && q < W; q++) /* rank q's range */
    src[q] = all ? all + (size_t)q * chunk : q == x->rank ? a->p[ADAMW_P_GRAD] : recv + (size_t)(q - (q > x->rank)) * chunk;
  if (rc == 0) {
    for (int64_t i = 0; i < n; i++) {
      float sum = (float)ddp_load(src[0], gdt, i);
      for (int q = 1; q < W; q++) sum += (float)ddp_load(src[q], gdt, i);
      g[i] = sum / (float)W;
    }
    ddp_kargs b = *a;
    uint8_t dt[DDP_MAX_PTRS];
    memcpy(dt, in->dt, sizeof dt);
    b.p[ADAMW_P_GRAD] = g;
    dt[ADAMW_P_GRAD] = DT_F32;
    ddp_ref_ops[OP_ADAMW](&b, dt);
  }
  free(all);
  free(src);
  free(g);
  return rc;
}

/* PEER_COPY ("peer_copy"): the other ranks' same range into recv, rank order without this rank; gathered
 * (every rank issues the same ones: the verifier's matching) into a scratch, this rank's chunk dropped. */
static int peer_copy(ddp_exec *x, const ddp_instr *in, const ddp_kargs *a, char *err, size_t errcap) {
  const int W = x->world;
  const size_t chunk = (size_t)in->i[COLL_I_COUNT] * ddp_dtype_size(in->dt[COLL_P_SEND]), mine = (size_t)x->rank * chunk;
  if (W < 2 || !((ref_impl *)x->impl)->comm)
    return ddp_fail(err, errcap, "reference executor: a peer copy on a world of %d", W);
  uint8_t *all = malloc(chunk * (size_t)W + 1);
  if (!all) return ddp_fail(err, errcap, "reference executor: out of memory for a peer copy of %zu bytes", chunk);
  int rc = gather_range(x, a->p[COLL_P_SEND], in->i[COLL_I_COUNT], in->dt[COLL_P_SEND], all, err, errcap);
  if (rc == 0) {
    uint8_t *recv = a->p[COLL_P_RECV];
    memcpy(recv, all, mine);
    memcpy(recv + mine, all + mine + chunk, (size_t)(W - 1 - x->rank) * chunk);
  }
  free(all);
  return rc;
}

static int run(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  ref_impl *m = x->impl;
  const ddp_rank_plan *rp = &x->plan->ranks[x->rank];
  const ddp_kargs *args = prog == &rp->init ? m->init_args : prog == &rp->step ? m->step_args : NULL;
  ddp_kargs *own = args ? NULL : resolve(m, prog);
  if (!args && !own) return ddp_fail(err, errcap, "reference executor: out of memory for %u instructions", prog->n);
  if (!args) args = own;
  int rc = 0;
  bool tracing = x->trace && prog == &rp->step;
  for (uint32_t k = 0; k < prog->n && rc == 0; k++) {
    const ddp_instr *in = &prog->v[k];
    const ddp_kargs *a = &args[k];
    if (tracing) m->t_start[k] = 1e3 * ddp_now_s();
    switch ((ddp_opcode)in->opcode) { /* no default: -Wswitch names a missing opcode */
    case I_KERNEL:
      if (in->op == OP_ADAMW && in->i[ADAMW_I_PEERS] > 0) rc = peer_adamw(x, in, a, err, errcap);
      else ddp_ref_ops[in->op](a, in->dt);
      break;
    case I_GEMM:
      ref_gemm(a, in->dt);
      break;
    case I_MEMSET:
      memset(a->p[MEMSET_P_DST], (int)in->i[MEMSET_I_VALUE], (size_t)in->i[MEMSET_I_BYTES]);
      break;
    case I_COPY:
      memmove(a->p[COPY_P_DST], a->p[COPY_P_SRC], (size_t)in->i[COPY_I_BYTES]);
      break;
    case I_EVENT_RECORD:
    case I_EVENT_WAIT:
    case I_RANGE_PUSH:
    case I_RANGE_POP:
      break;
    case I_ALL_REDUCE:
    case I_REDUCE_SCATTER:
    case I_ALL_GATHER:
    case I_ALL_TO_ALL:
    case I_BROADCAST:
    case I_PEER_BARRIER:
      if (x->world == 1) {
        if (a->p[COLL_P_SEND] != a->p[COLL_P_RECV] && a->p[COLL_P_RECV])
          memmove(a->p[COLL_P_RECV], a->p[COLL_P_SEND],
                  (size_t)in->i[COLL_I_COUNT] * ddp_dtype_size(in->dt[COLL_P_SEND]));
      } else {
      {
        int64_t comm = in->i[COLL_I_COMM]; /* in range: the reader */
        const ddp_comm *g = comm > 0 ? &x->plan->comms[comm - 1] : NULL;
        rc = ddp_ref_collective_on(m->comm, x->rank, in, (int)comm, g ? (int)g->n : x->world, g ? g->ranks : NULL,
                                   a->p[COLL_P_SEND], a->p[COLL_P_RECV], err, errcap);
      }
      }
      break;
    case I_PEER_COPY:
      rc = peer_copy(x, in, a, err, errcap);
      break;
    case I_SEND:
    case I_RECV: { /* the group: this and the SEND/RECV that follow on its stream */
      uint32_t end = k + 1;
      while (end < prog->n && is_p2p(&prog->v[end]) && prog->v[end].stream == in->stream) end++;
      rc = p2p_group(x, prog, args, k, end, err, errcap);
      if (tracing)
        for (uint32_t j = k + 1; j < end; j++) m->t_start[j] = m->t_start[k], m->t_end[j - 1] = 1e3 * ddp_now_s();
      k = end - 1;
      break;
    }
    case I_TIMER:
      if ((uint32_t)in->i[TIMER_I_SLOT] < m->ntimers) m->timer_ms[in->i[TIMER_I_SLOT]] = 1e3 * ddp_now_s();
      break;
    case I_LOAD_BATCH:
      rc = ddp_data_fill(x->data, step, in->i[LOAD_BATCH_I_PARTS] > 0 ? (int)in->i[LOAD_BATCH_I_PART] : x->rank,
                         in->i[LOAD_BATCH_I_PARTS] > 0 ? (int)in->i[LOAD_BATCH_I_PARTS] : x->world,
                         a->p[LOAD_BATCH_P_INPUTS], a->p[LOAD_BATCH_P_TARGETS], err,
                         errcap);
      break;
    case I_INIT_TENSOR:
      ddp_init_fill(in, x->seed, a->p[INIT_TENSOR_P_TENSOR]);
      break;
    case I_COUNT: /* plan_check refuses it */
      rc = ddp_fail(err, errcap, "reference executor: unknown opcode %u", in->opcode);
      break;
    }
    if (tracing) m->t_end[k] = 1e3 * ddp_now_s();
  }
  free(own);
  if (rc && m->comm && x->world > 1) ddp_ref_comm_abort(m->comm, x->rank);
  return rc;
}

static int sync_noop(ddp_exec *x, char *err, size_t errcap) {
  (void)x;
  (void)err;
  (void)errcap;
  return 0;
}

static const ddp_tensor *tensor_of(ddp_exec *x, int32_t t, char *err, size_t errcap) {
  if (t < 0 || (uint32_t)t >= x->plan->ntensors) {
    ddp_fail(err, errcap, "tensor %d is not in the plan", t);
    return NULL;
  }
  return &x->plan->tensors[t];
}

static int read_t(ddp_exec *x, int32_t t, void *dst, char *err, size_t errcap) {
  const ddp_tensor *tt = tensor_of(x, t, err, errcap);
  if (!tt) return -1;
  ref_impl *m = x->impl;
  memcpy(dst, m->arena[tt->arena] + tt->offset, tt->bytes);
  return 0;
}

static int write_t(ddp_exec *x, int32_t t, const void *src, char *err, size_t errcap) {
  const ddp_tensor *tt = tensor_of(x, t, err, errcap);
  if (!tt) return -1;
  ref_impl *m = x->impl;
  memcpy(m->arena[tt->arena] + tt->offset, src, tt->bytes);
  return 0;
}

static int timers(ddp_exec *x, double *ms, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  ref_impl *m = x->impl;
  for (uint32_t k = 0; k < m->ntimers; k++) ms[k] = m->timer_ms[k] - m->timer_ms[0];
  return 0;
}

static int instr_times(ddp_exec *x, double *start, double *end, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  ref_impl *m = x->impl;
  const ddp_program *prog = &x->plan->ranks[x->rank].step;
  for (uint32_t k = 0; k < prog->n; k++) {
    start[k] = m->t_start[k] - m->timer_ms[0];
    end[k] = m->t_end[k] - m->timer_ms[0];
  }
  return 0;
}

static int memory(ddp_exec *x, uint64_t *in_use, uint64_t *peak) {
  ref_impl *m = x->impl;
  *in_use = *peak = m->bytes;
  return 0;
}

static void destroy(ddp_exec *x) {
  if (!x) return;
  ref_impl *m = x->impl;
  if (m) {
    for (int a = 0; a < ARENA_COUNT; a++) ddp_host_arena_free(m->arena[a], x->plan->ranks[x->rank].arena_bytes[a]);
    free(m->init_args);
    free(m->step_args);
    free(m->timer_ms);
    free(m->t_start);
    free(m->t_end);
    free(m->p2p);
    free(m);
  }
  free(x);
}

/* The driver's host sums: an all-reduce of doubles through the in-process communicator (rank order). */
static int allreduce_host(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  ref_impl *m = x->impl;
  if (!m->comm || x->world <= 1) return 0;
  ddp_instr in;
  memset(&in, 0, sizeof in);
  in.opcode = I_ALL_REDUCE;
  in.dt[COLL_P_SEND] = DT_F64;
  in.i[COLL_I_COUNT] = n;
  in.i[COLL_I_REDOP] = REDOP_SUM;
  return ddp_ref_collective(m->comm, x->rank, &in, v, v, err, errcap);
}

/* The exec vtbl's time_collective (exec.h) through the in-process communicator, timed by the host clock. */
static int time_collective(ddp_exec *x, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap) {
  ref_impl *m = x->impl;
  const int W = x->world, r = x->rank, opc = in->opcode;
  if (!m->comm || W <= 1) return ddp_fail(err, errcap, "timing a collective: a world of one rank");
  if (opc != I_ALL_REDUCE && opc != I_REDUCE_SCATTER && opc != I_ALL_GATHER && opc != I_SEND)
    return ddp_fail(err, errcap, "timing a collective: %s is not one", ddp_opcode_name(opc));
  int64_t count = in->i[COLL_I_COUNT];
  if (count < 1 || iters < 1 || count > ((int64_t)1 << 28))
    return ddp_fail(err, errcap, "timing a collective: count %lld, %d runs", (long long)count, iters);
  size_t sn = (size_t)count * (opc == I_REDUCE_SCATTER ? (size_t)W : 1), rn = (size_t)count * (opc == I_ALL_GATHER ? (size_t)W : 1);
  float *sbuf = ddp_xcalloc(sn, sizeof *sbuf), *rbuf = ddp_xcalloc(rn, sizeof *rbuf);
  ddp_instr one = *in;
  one.dt[COLL_P_SEND] = one.dt[COLL_P_RECV] = DT_F32;
  one.i[COLL_I_REDOP] = REDOP_SUM;
  int peer = r % 2 == 0 ? (r + 1 < W ? r + 1 : -1) : r - 1;
  if (opc == I_SEND) one.opcode = r % 2 == 0 ? I_SEND : I_RECV, one.i[COLL_I_PEER] = peer;
  ddp_ref_p2p op = {&one, r % 2 == 0 ? (void *)sbuf : (void *)rbuf, "calibrate", 0, "timed transfer"};
  int rc = 0;
  double t0 = 0;
  for (int k = -2; rc == 0 && k < iters; k++) {
    if (k == 0) t0 = ddp_now_s();
    if (opc != I_SEND) rc = ddp_ref_collective(m->comm, r, &one, sbuf, rbuf, err, errcap);
    else if (peer >= 0) rc = ddp_ref_p2p_group(m->comm, r, &op, 1, err, errcap);
  }
  if (rc == 0) *ms = (ddp_now_s() - t0) * 1e3 / iters;
  free(sbuf), free(rbuf);
  return rc;
}

/* The exec vtbl's time_gemm (exec.h): the reference GEMM on zero-filled host buffers, timed by the host clock. */
static int time_gemm(ddp_exec *x, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap) {
  (void)x;
  const int64_t M = in->i[GEMM_I_M], N = in->i[GEMM_I_N], K = in->i[GEMM_I_K], lim = 1024;
  if (in->opcode != I_GEMM || M < 1 || N < 1 || K < 1 || M > lim || N > lim || K > lim || iters < 1 ||
      (in->i[GEMM_I_BATCH] > 1))
    return ddp_fail(err, errcap, "timing a GEMM: %s M %lld N %lld K %lld (the reference executor: one batch, 1..%lld)",
                    ddp_opcode_name(in->opcode), (long long)M, (long long)N, (long long)K, (long long)lim);
  int64_t lda = in->i[GEMM_I_LDA], ldb = in->i[GEMM_I_LDB], ldd = in->i[GEMM_I_LDD];
  int64_t ra = in->i[GEMM_I_TRANS_A] ? K : M, rb = in->i[GEMM_I_TRANS_B] ? N : K;
  if (lda < 1 || ldb < 1 || ldd < N || lda > lim || ldb > lim || ldd > lim)
    return ddp_fail(err, errcap, "timing a GEMM: leading dimensions %lld, %lld, %lld", (long long)lda, (long long)ldb,
                    (long long)ldd);
  ddp_kargs a;
  memset(&a, 0, sizeof a);
  size_t es = 8; /* room for any dtype */
  a.p[GEMM_P_A] = ddp_xcalloc((size_t)(ra * lda), es);
  a.p[GEMM_P_B] = ddp_xcalloc((size_t)(rb * ldb), es);
  a.p[GEMM_P_D] = ddp_xcalloc((size_t)(M * ldd), es);
  a.p[GEMM_P_C] = a.p[GEMM_P_D];
  memcpy(a.i, in->i, sizeof a.i);
  memcpy(a.f, in->f, sizeof a.f);
  a.i[GEMM_I_LDC] = ldd;
  double t0 = 0;
  for (int k = -2; k < iters; k++) {
    if (k == 0) t0 = ddp_now_s();
    ref_gemm(&a, in->dt);
  }
  *ms = (ddp_now_s() - t0) * 1e3 / iters;
  free(a.p[GEMM_P_A]), free(a.p[GEMM_P_B]), free(a.p[GEMM_P_D]);
  return 0;
}

static const ddp_exec_vtbl ref_vtbl = {.name = "ref",
                                       .run = run,
                                       .sync = sync_noop,
                                       .read = read_t,
                                       .write = write_t,
                                       .timers = timers,
                                       .memory = memory,
                                       .destroy = destroy,
                                       .instr_times = instr_times,
                                       .allreduce_host = allreduce_host,
                                       .time_collective = time_collective,
                                       .time_gemm = time_gemm}; /* no energy counters on the CPU */

ddp_exec *ddp_exec_ref_new(const ddp_plan *p, int rank, ddp_ref_comm *comm, ddp_data *data, uint64_t seed,
                           char *err, size_t errcap) {
  ddp_exec *x = calloc(1, sizeof *x);
  ref_impl *m = calloc(1, sizeof *m);
  if (!x || !m) {
    free(x);
    free(m);
    ddp_fail(err, errcap, "reference executor: out of host memory");
    return NULL;
  }
  x->v = &ref_vtbl;
  x->plan = p;
  x->rank = rank;
  x->world = (int)p->meta.world;
  x->data = data;
  x->seed = seed;
  x->impl = m;
  m->comm = comm;
  const ddp_rank_plan *rp = &p->ranks[rank];
  for (int a = 0; a < ARENA_COUNT; a++) {
    uint64_t n = rp->arena_bytes[a];
    m->arena[a] = ddp_host_arena_new(n);
    if (!m->arena[a]) {
      ddp_fail(err, errcap, "reference executor: cannot allocate %.2f GiB for the %s arena", (double)n / (1 << 30),
               ddp_arena_name(a));
      destroy(x);
      return NULL;
    }
    m->bytes += n;
  }
  m->ntimers = rp->ntimers;
  m->timer_ms = calloc(rp->ntimers + 1, sizeof(double));
  m->t_start = calloc(rp->step.n + 1, sizeof(double));
  m->t_end = calloc(rp->step.n + 1, sizeof(double));
  m->init_args = resolve(m, &rp->init);
  m->step_args = resolve(m, &rp->step);
  if (!m->timer_ms || !m->t_start || !m->t_end || !m->init_args || !m->step_args) {
    ddp_fail(err, errcap, "reference executor: out of host memory");
    destroy(x);
    return NULL;
  }
  return x;
}

/* runtime/ref/comm_mpi.c: see comm_mpi.h. The few MPI functions used are resolved with dlsym into a
 * table; the handles are Open MPI's predefined objects (mpi.h defines MPI_COMM_WORLD as
 * &ompi_mpi_comm_world, MPI_BYTE as &ompi_mpi_byte, MPI_ERRORS_RETURN as &ompi_mpi_errors_return,
 * MPI_IN_PLACE as (void *)1), so this file needs no mpi.h. A communicator group of the plan (COLL_I_COMM > 0)
 * becomes an MPI communicator on its first collective: MPI_Comm_group of the world, MPI_Group_incl of the
 * members in the plan's order (so MPI's rank in it is the group rank), MPI_Comm_create_group (collective over
 * the members only, tagged with the comm id: the other ranks need not take part); the collectives then run
 * exactly as on the world, with the group's size and this process's group rank. */
#include "comm_mpi.h"
#include "comm_ref_impl.h"
#include "clock.h"
#include "err.h"
#include "param.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MPI_OK 0
#define MPI_THREAD_FUNNELED_ 1 /* enum order in mpi.h: SINGLE, FUNNELED, SERIALIZED, MULTIPLE */
#define MPI_IN_PLACE_ ((void *)1)
#define MPI_ERR_STR 256 /* MPI_MAX_ERROR_STRING */

typedef void *handle; /* MPI_Comm, MPI_Datatype, MPI_Errhandler, MPI_Request: pointers in Open MPI */

typedef struct mpi_fns {
  int (*Init_thread)(int *, char ***, int, int *);
  int (*Initialized)(int *);
  int (*Finalize)(void);
  int (*Abort)(handle, int);
  int (*Comm_rank)(handle, int *);
  int (*Comm_size)(handle, int *);
  int (*Comm_set_errhandler)(handle, handle);
  int (*Error_string)(int, char *, int *);
  int (*Get_library_version)(char *, int *);
  int (*Ialltoallv)(const void *, const int *, const int *, handle, void *, const int *, const int *, handle, handle,
                    handle *);
  int (*Iallgatherv)(const void *, int, handle, void *, const int *, const int *, handle, handle, handle *);
  int (*Iallgather)(const void *, int, handle, void *, int, handle, handle, handle *);
  int (*Ialltoall)(const void *, int, handle, void *, int, handle, handle, handle *);
  int (*Ibcast)(void *, int, handle, int, handle, handle *);
  int (*Test)(handle *, int *, void *);
  int (*Isend)(const void *, int, handle, int, int, handle, handle *);
  int (*Irecv)(void *, int, handle, int, int, handle, handle *);
  int (*Comm_group)(handle, handle *);
  int (*Group_incl)(handle, int, const int *, handle *);
  int (*Group_free)(handle *);
  int (*Comm_create_group)(handle, handle, int, handle *);
  int (*Comm_free)(handle *);
} mpi_fns;

/* The ranks a collective runs among: the world, or a group of the plan. */
typedef struct mgroup {
  handle comm;
  int rank, n; /* this process's group rank, the group's size */
} mgroup;

struct ddp_mpi {
  void *lib;
  mpi_fns f;
  handle world_comm, byte, errors_return;
  int rank, world;
  double timeout_s;
  int *counts, *displs, *rcounts, *rdispls; /* per rank, in bytes */
  int64_t *lo_of, *n_of;                    /* per rank: its elements of the collective */
  unsigned char *scratch, *mine;            /* received slices; this rank's reduced slice */
  size_t scratch_cap, mine_cap;
  const void **srcs;                       /* per rank: its slice inside scratch */
  handle *comms;                            /* [comm id]: created communicators (NULL: not yet), ncomms */
  int ncomms;
};

static int mpi_err(ddp_mpi *m, int code, const char *what, char *err, size_t errcap) {
  char s[MPI_ERR_STR + 1] = "";
  int len = 0;
  if (m->f.Error_string && m->f.Error_string(code, s, &len) == MPI_OK && len > 0 && len <= MPI_ERR_STR) s[len] = 0;
  return ddp_fail(err, errcap, "%s: MPI error %d (%s)", what, code, *s ? s : "no description");
}

#define MPI_TRY(m, call, what)                                  \
  do {                                                          \
    int rc_ = (call);                                           \
    if (rc_ != MPI_OK) return mpi_err((m), rc_, (what), err, errcap); \
  } while (0)

/* MPI_Init_thread waits for every rank of the launch; one that never starts, or is stopped, would keep the
 * others there without a bound. A watcher ends the process after DDP_MPI_TIMEOUT_S with one line. */
typedef struct {
  double timeout_s;
  atomic_int done;
} init_watch;

static void *watch_init(void *arg) {
  init_watch *w = arg;
  const double end = ddp_now_s() + w->timeout_s;
  while (!atomic_load(&w->done)) {
    if (ddp_now_s() > end) {
      fprintf(stderr, "ddprun: MPI_Init_thread did not finish in %g s (DDP_MPI_TIMEOUT_S): a rank of the launch did "
              "not start, or is stopped\n", w->timeout_s);
      fflush(stderr);
      _exit(1);
    }
    struct timespec nap = {0, 20 * 1000000L};
    nanosleep(&nap, NULL);
  }
  return NULL;
}

ddp_mpi *ddp_mpi_open(char *err, size_t errcap) {
  const char *path = ddp_param_path(PARAM_MPI_LIBRARY);
  if (!path) path = "libmpi.so.40";
  double timeout_s;
  if (ddp_param_seconds(PARAM_MPI_TIMEOUT_S, &timeout_s, err, errcap)) return NULL;
  /* RTLD_GLOBAL: Open MPI's own plugins (mca_*.so) resolve libmpi's symbols from the global scope. */
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char *why = dlerror();
    ddp_fail(err, errcap,
             "cannot load Open MPI's library %s (%s): the reference executor's ranks as processes need it "
             "(Debian: apt-get install openmpi-bin; or set DDP_MPI_LIBRARY)",
             path, why ? why : "unknown reason");
    return NULL;
  }
  ddp_mpi *m = calloc(1, sizeof *m);
  if (!m) {
    dlclose(lib);
    ddp_fail(err, errcap, "out of memory");
    return NULL;
  }
  m->lib = lib;
  m->timeout_s = timeout_s;
  struct { const char *name; void **slot; } syms[] = {
      {"MPI_Init_thread", (void **)&m->f.Init_thread}, {"MPI_Initialized", (void **)&m->f.Initialized},
      {"MPI_Finalize", (void **)&m->f.Finalize}, {"MPI_Abort", (void **)&m->f.Abort},
      {"MPI_Comm_rank", (void **)&m->f.Comm_rank}, {"MPI_Comm_size", (void **)&m->f.Comm_size},
      {"MPI_Comm_set_errhandler", (void **)&m->f.Comm_set_errhandler},
      {"MPI_Error_string", (void **)&m->f.Error_string},
      {"MPI_Get_library_version", (void **)&m->f.Get_library_version},
      {"MPI_Ialltoallv", (void **)&m->f.Ialltoallv}, {"MPI_Iallgatherv", (void **)&m->f.Iallgatherv},
      {"MPI_Iallgather", (void **)&m->f.Iallgather}, {"MPI_Ialltoall", (void **)&m->f.Ialltoall},
      {"MPI_Ibcast", (void **)&m->f.Ibcast}, {"MPI_Test", (void **)&m->f.Test},
      {"MPI_Isend", (void **)&m->f.Isend}, {"MPI_Irecv", (void **)&m->f.Irecv},
      {"MPI_Comm_group", (void **)&m->f.Comm_group}, {"MPI_Group_incl", (void **)&m->f.Group_incl},
      {"MPI_Group_free", (void **)&m->f.Group_free}, {"MPI_Comm_create_group", (void **)&m->f.Comm_create_group},
      {"MPI_Comm_free", (void **)&m->f.Comm_free},
      {"ompi_mpi_comm_world", &m->world_comm}, {"ompi_mpi_byte", &m->byte},
      {"ompi_mpi_errors_return", &m->errors_return},
  };
  for (size_t k = 0; k < sizeof syms / sizeof syms[0]; k++) {
    *syms[k].slot = dlsym(lib, syms[k].name);
    if (!*syms[k].slot) {
      ddp_fail(err, errcap, "%s has no symbol %s: ddprun's process backend speaks Open MPI's ABI only", path,
               syms[k].name);
      dlclose(lib);
      free(m);
      return NULL;
    }
  }
  int provided = 0, done = 0, rc = m->f.Initialized(&done);
  if (rc == MPI_OK && !done) {
    init_watch w = {.timeout_s = timeout_s};
    pthread_t watcher;
    int watching = pthread_create(&watcher, NULL, watch_init, &w) == 0;
    rc = m->f.Init_thread(NULL, NULL, MPI_THREAD_FUNNELED_, &provided);
    atomic_store(&w.done, 1);
    if (watching) pthread_join(watcher, NULL);
  }
  if (rc == MPI_OK) rc = m->f.Comm_set_errhandler(m->world_comm, m->errors_return);
  if (rc == MPI_OK) rc = m->f.Comm_rank(m->world_comm, &m->rank);
  if (rc == MPI_OK) rc = m->f.Comm_size(m->world_comm, &m->world);
  if (rc != MPI_OK) {
    mpi_err(m, rc, "MPI_Init_thread", err, errcap);
    dlclose(lib);
    free(m);
    return NULL;
  }
  size_t W = (size_t)m->world;
  m->counts = calloc(W, sizeof(int));
  m->displs = calloc(W, sizeof(int));
  m->rcounts = calloc(W, sizeof(int));
  m->rdispls = calloc(W, sizeof(int));
  m->srcs = calloc(W, sizeof(void *));
  m->lo_of = calloc(W, sizeof(int64_t));
  m->n_of = calloc(W, sizeof(int64_t));
  if (!m->counts || !m->displs || !m->rcounts || !m->rdispls || !m->srcs || !m->lo_of || !m->n_of) {
    ddp_fail(err, errcap, "out of memory for %d ranks", m->world);
    ddp_mpi_close(m);
    return NULL;
  }
  return m;
}

int ddp_mpi_rank(const ddp_mpi *m) { return m->rank; }
int ddp_mpi_world(const ddp_mpi *m) { return m->world; }

/* Polls a started nonblocking collective until it completes or the deadline passes. */
static int wait_req(ddp_mpi *m, handle *req, const char *what, size_t bytes, char *err, size_t errcap) {
  double deadline = ddp_now_s() + m->timeout_s;
  for (unsigned spin = 0;; spin++) {
    int flag = 0;
    MPI_TRY(m, m->f.Test(req, &flag, NULL), what);
    if (flag) return 0;
    if ((spin & 63) == 63) sched_yield(); /* oversubscribed (more ranks than cores): let the others run */
    if ((spin & 1023) == 1023 && ddp_now_s() > deadline)
      return ddp_fail(err, errcap,
                      "%s of %zu bytes waited more than %g s for the other ranks (DDP_MPI_TIMEOUT_S)", what,
                      bytes, m->timeout_s);
  }
}

static int reserve(unsigned char **buf, size_t *cap, size_t n, char *err, size_t errcap) {
  if (*cap >= n && *buf) return 0;
  free(*buf);
  *buf = malloc(n ? n : 1);
  *cap = *buf ? n : 0;
  return *buf ? 0 : ddp_fail(err, errcap, "out of memory for %zu bytes of collective scratch", n);
}

/* Elements [lo, hi) owned by `rank` when n are split as comm_ref.c splits them. */
static void slice(int64_t n, int world, int rank, int64_t *lo, int64_t *hi) {
  int64_t per = (n + world - 1) / world;
  *lo = rank * per < n ? rank * per : n;
  *hi = *lo + per < n ? *lo + per : n;
}

/* Elements [lo_of[q], lo_of[q] + n_of[q]) of every rank's send buffer go to rank q; the blocks this rank
 * receives land in scratch in rank order, and their element-wise reduction (rank order, in double, rounded
 * once) goes into m->mine. */
static int reduce_blocks(ddp_mpi *m, const mgroup *g, const ddp_instr *in, const void *send, const int64_t *lo_of,
                         const int64_t *n_of, size_t bytes, char *err, size_t errcap) {
  int W = g->n, dt = in->dt[COLL_P_SEND];
  size_t es = ddp_dtype_size(dt);
  size_t mine_n = (size_t)n_of[g->rank];
  if (reserve(&m->scratch, &m->scratch_cap, mine_n * es * (size_t)W, err, errcap) ||
      reserve(&m->mine, &m->mine_cap, mine_n * es, err, errcap))
    return -1;
  for (int q = 0; q < W; q++) {
    m->counts[q] = (int)((size_t)n_of[q] * es);
    m->displs[q] = (int)((size_t)lo_of[q] * es);
    m->rcounts[q] = (int)(mine_n * es);
    m->rdispls[q] = (int)((size_t)q * mine_n * es);
    m->srcs[q] = m->scratch + (size_t)q * mine_n * es;
  }
  handle req = NULL;
  MPI_TRY(m, m->f.Ialltoallv(send, m->counts, m->displs, m->byte, m->scratch, m->rcounts, m->rdispls, m->byte,
                             g->comm, &req), "MPI_Ialltoallv");
  if (wait_req(m, &req, ddp_opcode_name(in->opcode), bytes, err, errcap)) return -1;
  for (size_t i = 0; i < mine_n; i++)
    ddp_store(m->mine, dt, (int64_t)i, ddp_ref_reduce_elem(m->srcs, W, dt, (int64_t)i, (int)in->i[COLL_I_REDOP]));
  return 0;
}

static int collective(ddp_mpi *m, const mgroup *g, const ddp_instr *in, void *send, void *recv, char *err,
                      size_t errcap) {
  int W = g->n, dt = in->dt[COLL_P_SEND];
  int64_t count = in->i[COLL_I_COUNT];
  size_t es = ddp_dtype_size(dt);
  const char *what = ddp_opcode_name(in->opcode);
  /* MPI counts are int: the whole exchange (W blocks for reduce-scatter and all-gather) must fit. */
  int64_t total = in->opcode == I_REDUCE_SCATTER || in->opcode == I_ALL_GATHER || in->opcode == I_ALL_TO_ALL
                      ? count * W
                      : count;
  if (count < 0 || (uint64_t)total * es > (uint64_t)INT_MAX)
    return ddp_fail(err, errcap, "%s of %lld elements exceeds the MPI backend's 2 GiB per collective", what,
                    (long long)count);
  int64_t *lo_of = m->lo_of, *n_of = m->n_of;
  handle req = NULL;
  switch ((ddp_opcode)in->opcode) { /* no default: -Wswitch names a missing opcode */
  case I_ALL_REDUCE: {
    for (int q = 0; q < W; q++) {
      int64_t lo, hi;
      slice(count, W, q, &lo, &hi);
      lo_of[q] = lo, n_of[q] = hi - lo;
    }
    if (reduce_blocks(m, g, in, send, lo_of, n_of, (size_t)count * es, err, errcap)) return -1;
    for (int q = 0; q < W; q++) { /* the reduced slices back to everyone, in place in recv */
      m->rcounts[q] = (int)((size_t)n_of[q] * es);
      m->rdispls[q] = (int)((size_t)lo_of[q] * es);
    }
    MPI_TRY(m, m->f.Iallgatherv(m->mine, m->rcounts[g->rank], m->byte, recv, m->rcounts, m->rdispls, m->byte,
                                g->comm, &req), "MPI_Iallgatherv");
    return wait_req(m, &req, what, (size_t)count * es, err, errcap);
  }
  case I_REDUCE_SCATTER: {
    for (int q = 0; q < W; q++) lo_of[q] = q * count, n_of[q] = count;
    if (reduce_blocks(m, g, in, send, lo_of, n_of, (size_t)count * W * es, err, errcap)) return -1;
    memcpy(recv, m->mine, (size_t)count * es);
    return 0;
  }
  case I_ALL_GATHER: {
    size_t bytes = (size_t)count * es;
    char *mine_at = (char *)recv + (size_t)g->rank * bytes;
    const void *src = send;
    if ((char *)send == mine_at) {
      src = MPI_IN_PLACE_;
    } else if ((char *)send < (char *)recv + (size_t)W * bytes && (char *)send + bytes > (char *)recv) {
      if (reserve(&m->mine, &m->mine_cap, bytes, err, errcap)) return -1; /* overlaps: copy first */
      memcpy(m->mine, send, bytes);
      src = m->mine;
    }
    MPI_TRY(m, m->f.Iallgather(src, (int)bytes, m->byte, recv, (int)bytes, m->byte, g->comm, &req),
            "MPI_Iallgather");
    return wait_req(m, &req, what, bytes * (size_t)W, err, errcap);
  }
  case I_BROADCAST: {
    int root = (int)in->i[COLL_I_ROOT];
    if (root < 0 || root >= W) return ddp_fail(err, errcap, "broadcast from rank %d of %d", root, W);
    if (g->rank == root && recv != send) memcpy(recv, send, (size_t)count * es);
    MPI_TRY(m, m->f.Ibcast(recv, (int)((size_t)count * es), m->byte, root, g->comm, &req), "MPI_Ibcast");
    return wait_req(m, &req, what, (size_t)count * es, err, errcap);
  }
  case I_ALL_TO_ALL: { /* send and recv do not overlap (plan_check) */
    size_t bytes = (size_t)count * es;
    MPI_TRY(m, m->f.Ialltoall(send, (int)bytes, m->byte, recv, (int)bytes, m->byte, g->comm, &req), "MPI_Ialltoall");
    return wait_req(m, &req, what, bytes * (size_t)W, err, errcap);
  }
  case I_PEER_BARRIER: { /* a rendezvous: one byte from every rank */
    if (reserve(&m->mine, &m->mine_cap, (size_t)W + 1, err, errcap)) return -1;
    m->mine[W] = 0;
    MPI_TRY(m, m->f.Iallgather(m->mine + W, 1, m->byte, m->mine, 1, m->byte, g->comm, &req), "MPI_Iallgather");
    return wait_req(m, &req, what, (size_t)W, err, errcap);
  }
  case I_PEER_COPY: /* the executor runs it as an all-gather */
  case I_SEND: case I_RECV: case I_KERNEL: case I_GEMM: case I_MEMSET: case I_COPY: case I_EVENT_RECORD:
  case I_EVENT_WAIT: case I_RANGE_PUSH: case I_RANGE_POP: case I_TIMER: case I_LOAD_BATCH: case I_INIT_TENSOR:
  case I_COUNT:
    break;
  }
  return ddp_fail(err, errcap, "reference executor: %s is not a collective (SEND and RECV go through ddp_ref_p2p_group)",
                  what);
}

int ddp_mpi_collective(ddp_mpi *m, const ddp_instr *in, void *send, void *recv, char *err, size_t errcap) {
  mgroup g = {m->world_comm, m->rank, m->world};
  return collective(m, &g, in, send, recv, err, errcap);
}

/* Communicator `comm` of the n members (created on first use, see the top of the file). */
static int group_comm(ddp_mpi *m, int comm, int n, const int32_t *members, handle *out, char *err, size_t errcap) {
  if (comm >= m->ncomms) {
    handle *v = realloc(m->comms, sizeof(handle) * (size_t)(comm + 1));
    if (!v) return ddp_fail(err, errcap, "out of memory for communicator %d", comm);
    for (int k = m->ncomms; k <= comm; k++) v[k] = NULL;
    m->comms = v;
    m->ncomms = comm + 1;
  }
  if (!m->comms[comm]) {
    int *ranks = malloc(sizeof(int) * (size_t)n);
    if (!ranks) return ddp_fail(err, errcap, "out of memory for communicator %d", comm);
    for (int i = 0; i < n; i++) ranks[i] = members[i];
    handle world_group = NULL, group = NULL, c = NULL;
    int rc = m->f.Comm_group(m->world_comm, &world_group);
    if (rc == MPI_OK) rc = m->f.Group_incl(world_group, n, ranks, &group);
    if (rc == MPI_OK) rc = m->f.Comm_create_group(m->world_comm, group, 7200 + comm % 1000, &c);
    if (rc == MPI_OK && c) rc = m->f.Comm_set_errhandler(c, m->errors_return);
    if (group) m->f.Group_free(&group);
    if (world_group) m->f.Group_free(&world_group);
    free(ranks);
    if (rc != MPI_OK) return mpi_err(m, rc, "MPI_Comm_create_group", err, errcap);
    m->comms[comm] = c;
  }
  *out = m->comms[comm];
  return 0;
}

int ddp_mpi_collective_on(ddp_mpi *m, const ddp_instr *in, int comm, int n, const int32_t *members, void *send,
                          void *recv, char *err, size_t errcap) {
  if (comm == 0) return ddp_mpi_collective(m, in, send, recv, err, errcap);
  mgroup g = {NULL, -1, n};
  for (int i = 0; i < n; i++)
    if (members[i] == m->rank) g.rank = i;
  if (g.rank < 0) return ddp_fail(err, errcap, "rank %d is not a member of comm %d", m->rank, comm);
  if (group_comm(m, comm, n, members, &g.comm, err, errcap)) return -1;
  return collective(m, &g, in, send, recv, err, errcap);
}

/* Point-to-point (see comm_mpi.h). Tags of the three kinds of message. */
enum { TAG_SEND_DESC = 7101, TAG_RECV_DESC = 7102, TAG_PAYLOAD = 7103 };

/* Completes reqs[0..n) (NULL: done) under one deadline; what[k] names request k's operation. */
static int wait_all(ddp_mpi *m, handle *reqs, int n, const ddp_ref_p2p_desc *const *what, const char *round,
                    char *err, size_t errcap) {
  double deadline = ddp_now_s() + m->timeout_s;
  for (unsigned spin = 0;; spin++) {
    int left = -1;
    for (int k = 0; k < n; k++) {
      if (!reqs[k]) continue;
      int flag = 0, rc = m->f.Test(&reqs[k], &flag, NULL);
      if (rc != MPI_OK) {
        char d[256], call[320];
        ddp_ref_p2p_describe(what[k], d, sizeof d);
        snprintf(call, sizeof call, "MPI_Test (%s of %s)", round, d);
        return mpi_err(m, rc, call, err, errcap);
      }
      if (flag) reqs[k] = NULL;
      else if (left < 0) left = k;
    }
    if (left < 0) return 0;
    if ((spin & 63) == 63) sched_yield();
    if ((spin & 1023) == 1023 && ddp_now_s() > deadline) {
      char d[256];
      ddp_ref_p2p_describe(what[left], d, sizeof d);
      return ddp_fail(err, errcap,
                      "%s waited more than %g s for rank %d's matching %s (%s; DDP_MPI_TIMEOUT_S): a deadlock (both "
                      "sides of an exchange sending first, in groups of their own?) or a rank that stopped",
                      d, m->timeout_s, what[left]->peer, what[left]->send ? "receive" : "send", round);
    }
  }
}

int ddp_mpi_p2p_group(ddp_mpi *m, const ddp_ref_p2p *ops, int n, char *err, size_t errcap) {
  size_t nn = (size_t)(n > 0 ? n : 1);
  ddp_ref_p2p_desc *mine = calloc(nn, sizeof *mine), *theirs = calloc(nn, sizeof *theirs);
  handle *reqs = calloc(2 * nn, sizeof *reqs);
  const ddp_ref_p2p_desc **what = calloc(2 * nn, sizeof *what);
  int rc = -1;
  if (!mine || !theirs || !reqs || !what) {
    ddp_fail(err, errcap, "out of memory for a point-to-point group of %d", n);
    goto out;
  }
  char call[320], d[256];
#define P2P_TRY(expr, fn, k)                                        do {                                                                int rc_ = (expr);                                                 if (rc_ != MPI_OK) {                                                ddp_ref_p2p_describe(&mine[k], d, sizeof d);                      snprintf(call, sizeof call, "%s (%s)", (fn), d);                  mpi_err(m, rc_, call, err, errcap);                               goto out;                                                       }                                                               } while (0)
  /* round 1: descriptors, both ways for every operation */
  for (int k = 0; k < n; k++) {
    ddp_ref_p2p_desc_of(&ops[k], m->rank, &mine[k]);
    int peer = mine[k].peer, send = mine[k].send;
    what[2 * k] = what[2 * k + 1] = &mine[k];
    P2P_TRY(m->f.Isend(&mine[k], (int)sizeof mine[k], m->byte, peer, send ? TAG_SEND_DESC : TAG_RECV_DESC,
                       m->world_comm, &reqs[2 * k]), "MPI_Isend", k);
    P2P_TRY(m->f.Irecv(&theirs[k], (int)sizeof theirs[k], m->byte, peer, send ? TAG_RECV_DESC : TAG_SEND_DESC,
                       m->world_comm, &reqs[2 * k + 1]), "MPI_Irecv", k);
  }
  if (wait_all(m, reqs, 2 * n, what, "descriptor exchange", err, errcap)) goto out;
  for (int k = 0; k < n; k++) {
    const ddp_ref_p2p_desc *s = mine[k].send ? &mine[k] : &theirs[k], *r = mine[k].send ? &theirs[k] : &mine[k];
    if (theirs[k].send == mine[k].send || theirs[k].peer != m->rank || theirs[k].rank != mine[k].peer) {
      ddp_ref_p2p_describe(&mine[k], d, sizeof d);
      ddp_fail(err, errcap, "%s: rank %d's answer is not its matching %s (a different build of ddprun?)", d,
               mine[k].peer, mine[k].send ? "receive" : "send");
      goto out;
    }
    if (s->count != r->count || s->dt != r->dt) {
      ddp_ref_p2p_mismatch(s, r, err, errcap);
      goto out;
    }
  }
  /* round 2: payloads */
  for (int k = 0; k < n; k++) {
    reqs[k] = NULL;
    what[k] = &mine[k];
    uint64_t bytes = (uint64_t)mine[k].count * ddp_dtype_size(mine[k].dt);
    if (bytes == 0) continue;
    if (bytes > (uint64_t)INT_MAX) {
      ddp_ref_p2p_describe(&mine[k], d, sizeof d);
      ddp_fail(err, errcap, "%s: %llu bytes exceed the MPI backend's 2 GiB per message", d, (unsigned long long)bytes);
      goto out;
    }
    if (mine[k].send)
      P2P_TRY(m->f.Isend(ops[k].buf, (int)bytes, m->byte, mine[k].peer, TAG_PAYLOAD, m->world_comm, &reqs[k]),
              "MPI_Isend", k);
    else
      P2P_TRY(m->f.Irecv(ops[k].buf, (int)bytes, m->byte, mine[k].peer, TAG_PAYLOAD, m->world_comm, &reqs[k]),
              "MPI_Irecv", k);
  }
#undef P2P_TRY
  rc = wait_all(m, reqs, n, what, "payload", err, errcap);
out:
  for (int k = 0; rc && reqs && k < 2 * n; k++)
    if (reqs[k]) return rc; /* still posted (a timeout): MPI may yet write into them; the job is ending */
  free(mine);
  free(theirs);
  free(reqs);
  free(what);
  return rc;
}

_Noreturn void ddp_mpi_abort(ddp_mpi *m, int code) {
  m->f.Abort(m->world_comm, code);
  exit(code); /* MPI_Abort does not return; this is for the compiler */
}

void ddp_mpi_close(ddp_mpi *m) {
  if (!m) return;
  int done = 0;
  if (m->f.Initialized && m->f.Initialized(&done) == MPI_OK && done) {
    for (int k = 0; k < m->ncomms; k++)
      if (m->comms[k]) m->f.Comm_free(&m->comms[k]);
    m->f.Finalize();
  }
  free(m->comms);
  /* The library stays loaded: Open MPI leaves threads and atexit handlers behind after MPI_Finalize. */
  free(m->counts);
  free(m->displs);
  free(m->rcounts);
  free(m->rdispls);
  free(m->srcs);
  free(m->lo_of);
  free(m->n_of);
  free(m->scratch);
  free(m->mine);
  free(m);
}

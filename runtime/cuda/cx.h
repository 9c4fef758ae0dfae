/* runtime/cuda/cx.h: the private header of every cx_* file of the CUDA executor (exec_cuda.c, cx_util.c,
 * prepare.c, run.c, graph.c, gemm.c, gemm_tune.c, comm.c, host_sum.c, memory.c, p2p.c, peer.c), not part of any interface. A program
 * is "prepared" once (cx_op per instruction: stream, device pointers, kernel arguments, GEMM descriptors,
 * collective parameters) and then replayed by run.c through a table of cx_exec_<OPCODE> functions built
 * from DDP_OPCODES. Calls go one way, no file calling a function of a file that calls it: exec_cuda.c
 * (the vtable) -> prepare.c, graph.c, p2p.c and peer.c (their loads) -> run.c -> the executions (gemm.c ->
 * gemm_tune.c, p2p.c and peer.c -> host_sum.c -> comm.c, memory.c -> comm.c) -> cx_util.c, the leaf. */
#ifndef DDP_CX_H
#define DDP_CX_H
#include "access.h"
#include "cuda_check.h"
#include "kernels.h"
#include "err.h"
#include "exec_cuda.h"
#include "instr.h"
#include <cublasLt.h>
#include <nccl.h>
#include <stdarg.h>

#define CX_TUNE_CANDIDATES 16 /* cuBLASLt proposals timed per GEMM at load */

/* One GEMM: cuBLASLt descriptors and the algorithm chosen at load, operands in cuBLASLt's order (see
 * gemm.c for the row-major mapping). */
typedef struct cx_gemm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatmulAlgo_t algo;
  const void *a, *b, *c;
  void *d;
  float alpha, beta;
  void *ws;
  size_t ws_bytes;
} cx_gemm;

/* LOAD_BATCH: two pinned host buffers used alternately; done[k] marks the copy out of buffer k. */
typedef struct cx_batch {
  uint8_t *host[2];
  cudaEvent_t done[2];
  int used[2];
  unsigned next;
  size_t fill_bytes[2]; /* what the data source writes for inputs / targets */
  size_t copy_bytes[2]; /* what is copied to p0 / p1 */
} cx_batch;

typedef struct cx_op {
  const ddp_instr *in;
  uint32_t index;      /* position in its program (messages) */
  cudaStream_t stream;
  const char *label;   /* the instruction's name string, or its range kind name, or "" */
  void *ptr[2];        /* p0, p1 device pointers (MEMSET, COPY, collectives, LOAD_BATCH, INIT_TENSOR) */
  size_t bytes;        /* MEMSET / COPY / INIT_TENSOR bytes; local collective copy bytes */
  size_t count;        /* collectives: elements */
  int nccl_type, nccl_op, peer;
  ncclComm_t ncomm;    /* group collectives: the communicator of COLL_I_COMM (the world's, or a group's) */
  int group_begin, group_end; /* SEND/RECV: first/last of a run issued as one NCCL group */
  int skip;            /* nothing to do (empty GEMM, INIT_NONE, zero bytes) */
  ddp_cuda_kernel *kernel;
  ddp_kargs args;
  ddp_tmaps *maps;     /* a tensor-map kernel's maps, encoded at load (NULL for the others) */
  cx_gemm *gemm;
  int pc;              /* SEND/RECV of the step on p2p.c's copy path */
  uint32_t pc_local;   /* its flag in this rank's mailbox (RECV: AVAIL, SEND: DONE) */
  uint64_t *pc_remote; /* the peer's flag it sets (SEND: the receiver's AVAIL, RECV: the sender's DONE) */
  const void *pc_src;  /* RECV: the sender's tensor, mapped */
  uint32_t barrier;    /* PEER_BARRIER: its number among the step's barriers; a moved collective: its first (peer.c) */
  const void **peer_src; /* PEER_COPY, moved collective: [world] each rank's source, mapped (NULL for this rank;
                          * peer.c owns it) */
  cudaEvent_t event;   /* EVENT_RECORD/WAIT, TIMER */
  cx_batch *batch;
} cx_op;

/* A run of instructions between host work (LOAD_BATCH, INIT_TENSOR): the unit of CUDA graph capture. */
typedef struct cx_segment {
  uint32_t begin, end;
  int graphable;
  cudaGraphExec_t exec;
} cx_segment;

typedef struct cx_prog {
  const ddp_program *src;
  const char *what;     /* "init", "step", "program" */
  cx_op *ops;
  uint32_t n;
  int32_t timer_base;   /* slot of the first TIMER, -1 when none */
  uint32_t *timer_slots;
  uint32_t ntimer_slots;
  cx_segment *segs;
  uint32_t nsegs;
  int graph;            /* graph mode applies to this program */
  uint64_t runs;
} cx_prog;

typedef struct cx {
  ddp_exec base; /* base.impl points back here */
  int device;
  char arch[16], gpu_name[128];
  void *arena[ARENA_COUNT];
  uint64_t arena_bytes[ARENA_COUNT];
  int arena_nccl[ARENA_COUNT]; /* allocated by ncclMemAlloc (nccl = { register = "window" }), freed by ncclMemFree */
  uint64_t arena_alloc[ARENA_COUNT]; /* bytes allocated: arena_bytes, rounded up by ddp_window_bytes for a window */
  cudaStream_t *streams;
  uint32_t nstreams;
  cudaEvent_t *events;
  uint32_t nevents;
  cudaEvent_t *timers;
  uint32_t ntimers;
  ddp_cuda_kernel *modules; /* per plan module, loaded when first used by this rank */
  cublasLtHandle_t lt;
  void **ws;                /* per stream: cuBLASLt workspace */
  size_t *ws_bytes;
  void **ws_owned;          /* per stream: allocated here (freed at destroy) */
  int plan_ws_taken;
  void *tg[3];              /* time_gemm's scratch A, B, D (gemm.c), freed at destroy */
  size_t tg_bytes[3];
  ncclComm_t comm;
  ncclComm_t *groups;       /* [plan comm c - 1]: split from comm (ncclCommSplit), NULL where not a member */
  uint32_t ngroups;
  int comm_aborted;
  double *hsum_host, *hsum_dev; /* the host sums' buffers (host_sum.c): pinned, device; hsum_cap doubles */
  cudaEvent_t hsum_done;        /* recorded after a sum's copy back */
  int hsum_cap, hsum_pending;   /* hsum_pending: the count of the sum in flight, 0 when none */
  int in_group;             /* between ncclGroupStart and ncclGroupEnd */
  double timeout_s;
  uint8_t *staging;         /* INIT_TENSOR pinned staging */
  size_t staging_bytes;
  cudaEvent_t staging_done;
  int staging_used;
  cx_prog init, step;
  const cx_prog *last_timed;
  int capturing;            /* inside a CUDA graph capture */
  int graph_env;
  int stream_priority;      /* DDP_STREAM_PRIORITY: 0 the plan's, 1 compute first, 2 collectives first (see streams_events_init) */
  int p2p_copy_env;         /* DDP_P2P_COPY (p2p.c) */
  int64_t peer_copy_batch;  /* DDP_PEER_COPY_BATCH (peer.c) */
  int64_t side_sms, side_streams, side_compute; /* DDP_SIDE_SMS, DDP_SIDE_STREAMS, DDP_SIDE_COMPUTE */
  struct ddp_green *green;  /* the side streams' SM partition (green.h), NULL without DDP_SIDE_SMS */
  struct ddp_power *power;  /* the GPU's energy counters (power.h), NULL where NVML cannot read them */
  int64_t energy_env;       /* DDP_ENERGY: 0 reads no energy counters */
  int64_t energy_period_ms; /* DDP_ENERGY_PERIOD_MS: the sampler's period */
  int64_t gemm_sm_target;   /* DDP_GEMM_SM_TARGET (gemm.c) */
  int64_t nccl_mem_arenas;  /* DDP_NCCL_MEM_ARENAS: the arenas from ncclMemAlloc (memory.c), -1 when unset */
  int prep_backward;        /* while preparing: the instruction lies between FORWARD_END and BACKWARD_END */
  struct cx_p2p *p2p;       /* the copy path's flags and peer mappings (p2p.c), NULL on NCCL's */
  struct cx_peer *peer;     /* nccl.all_reduce = "peer": barrier flags and peer gradient tables (peer.c) */
  struct cx_link_load *link; /* DDP_LINK_LOAD_MB: the synthetic NVLink load (link_load.c), NULL without it */
  void **reg;               /* nccl = { register = true }: [comm (0 world, 1 + group) * ARENA_COUNT + arena] */
  ncclWindow_t *wins;       /* nccl = { register = "window" }: the symmetric windows, indexed as reg */
  cudaEvent_t gfork, *gjoin; /* capture fork/join (per stream) */
  cudaEvent_t lfork, *ljoin; /* ordering around graph launches */
  uint64_t mem_peak;
  cudaEvent_t *trace_ev;     /* --trace: begin/end event per step instruction (2n), created on first use */
  uint32_t trace_n;
  struct cx_tuned *tuned;    /* GEMM algorithms chosen during this load, by key (gemm_tune.c) */
  uint32_t ntuned;
  size_t captuned;
  int gemm_timed;            /* a GEMM was timed at load: its buffers hold scratch and are zeroed again */
} cx;

/* cx_util.c: *ms = the time between ev[0] and ev[1] (both recorded and complete) over iters runs; destroys
 * both events either way. */
int cx_mean_ms(cudaEvent_t ev[2], int iters, double *ms, char *err, size_t errcap);
/* cx_util.c: prefixes err with "<prog> instruction I (<opcode> '<label>'): ". */
int cx_fail_at(const cx *x, const cx_prog *pg, const cx_op *op, char *err, size_t errcap);

#define CX_LT_TRY(call, what)                                                                                  \
  do {                                                                                                         \
    cublasStatus_t cx_st_ = (call);                                                                            \
    if (cx_st_ != CUBLAS_STATUS_SUCCESS)                                                                       \
      return ddp_fail(err, errcap, "%s:%d: %s (%s): %s: %s", __FILE__, __LINE__, #call, (what),                 \
                     cublasLtGetStatusName(cx_st_), cublasLtGetStatusString(cx_st_));                           \
  } while (0)

/* cx_util.c: a hash of this host's name; whether rank `peer`'s GPU (PCI bus id `bus`, host hash peer_host) can
 * be mapped from this one: 1, or 0 with the reason in why (another host, not visible, this GPU, no peer
 * access). */
uint64_t cx_host_hash(void);
/* cx_util.c: this GPU's PCI bus id, a flag buffer of nflags 64-bit words (zeroed, [0] = 1: the constant copied
 * into peers' flags) and the CUDA IPC handles of it and of every non-empty arena, for a rank's card (p2p.c,
 * peer.c); -1 with the failing call in why. */
/* cx_util.c: rank `peer`'s memory behind handle h, mapped here (`what` names it in the error); NULL with the
 * failing call in why. */
void *cx_ipc_open(cudaIpcMemHandle_t h, int peer, const char *what, char *why, size_t cap);
int cx_ipc_mailbox(cx *x, size_t nflags, uint64_t **mailbox, char bus[32], cudaIpcMemHandle_t *mailbox_handle,
                   cudaIpcMemHandle_t arena_handle[ARENA_COUNT], char *why, size_t cap);
int cx_peer_gpu(const cx *x, int peer, uint64_t peer_host, uint64_t my_host, const char *bus, char *why, size_t cap);
/* cx_util.c: the device pointer of buffer operand `slot`, checking that `bytes` from it stay inside its
 * tensor's root and the rank's arena. */
int cx_buffer(const cx *x, const ddp_instr *in, int slot, uint64_t bytes, void **out, char *err, size_t errcap);

/* prepare.c: builds a cx_prog from a program of this rank. */
int cx_prog_prepare(cx *x, cx_prog *pg, const ddp_program *prog, const char *what, char *err, size_t errcap);
void cx_prog_free(cx *x, cx_prog *pg);
/* run.c: the eager replay of ops [begin, end) (with --trace, an event pair around each step instruction,
 * freed by cx_trace_free). */
int cx_run_ops(cx *x, const cx_prog *pg, uint32_t begin, uint32_t end, int64_t step, char *err, size_t errcap);
void cx_trace_free(cx *x);
/* Executions, one per opcode (the table in run.c is built from DDP_OPCODES, so a missing one does
 * not compile). */
typedef int (*cx_exec_fn)(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_KERNEL(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_MEMSET(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_COPY(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_EVENT_RECORD(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_EVENT_WAIT(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_RANGE_PUSH(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_RANGE_POP(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_TIMER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
/* gemm.c */
int cx_exec_GEMM(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
/* comm.c */
int cx_exec_ALL_REDUCE(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_REDUCE_SCATTER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_ALL_GATHER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_ALL_TO_ALL(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_BROADCAST(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
/* p2p.c */
int cx_exec_SEND(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_RECV(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
/* memory.c */
int cx_exec_LOAD_BATCH(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_INIT_TENSOR(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);

/* gemm.c */
int cx_gemm_init(cx *x, char *err, size_t errcap);
int cx_gemm_prepare(cx *x, cx_op *op, char *err, size_t errcap);
void cx_gemm_free(cx_gemm *g);
void cx_gemm_fini(cx *x);
/* gemm_tune.c: sets g->algo from the heuristic's proposals res[0..nres) (timing them, or the
 * stored choice for `key`). 0 when chosen, 1 when no proposal fits (the caller reports), -1 on a CUDA
 * error (in err). */
int cx_gemm_pick(cx *x, cx_gemm *g, const char *key, const cublasLtMatmulHeuristicResult_t *res, int nres,
                 cudaStream_t s, char *err, size_t errcap);
void cx_gemm_tune_free(cx *x);

/* comm.c */
int cx_comm_init(cx *x, const void *nccl_id, char *err, size_t errcap);
int cx_comm_prepare(cx *x, cx_op *op, char *err, size_t errcap);
void cx_comm_fini(cx *x);
/* The exec vtbl's time_collective (exec.h) on the world's communicator. */
int cx_time_collective(ddp_exec *e, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap);
/* The exec vtbl's time_gemm (exec.h): the GEMM through the replay's own descriptors and algorithm choice. */
int cx_time_gemm(ddp_exec *e, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap);
/* One SEND (send = 1) or RECV of a group through NCCL (ncclGroupStart at the group's first, ncclGroupEnd at
 * its last). */
int cx_comm_p2p(cx *x, const cx_op *op, int send, char *err, size_t errcap);
/* Every rank's `bytes` from `mine` into all[rank * bytes] (ncclAllGather through a device buffer, waited). */
int cx_allgather_host(cx *x, const void *mine, void *all, size_t bytes, char *err, size_t errcap);
/* p2p.c: after both programs are prepared, every rank together: the copy path where all can take it, else
 * NCCL; x->base.p2p says which and why. cx_p2p_fini unmaps and frees. */
int cx_p2p_init(cx *x, char *err, size_t errcap);
void cx_p2p_fini(cx *x);
/* peer.c: where the step has PEER_BARRIERs, moved collectives or updates with peers, every rank together maps its peers' flags
 * and gradient arenas (required: every rank's GPU on this host with peer access, else -1 naming why) and
 * points each such update's p[ADAMW_P_PEER_GRADS] at its table; cx_peer_fini unmaps and frees. */
int cx_peer_init(cx *x, char *err, size_t errcap);
void cx_peer_fini(cx *x);
/* link_load.c: DDP_LINK_LOAD_MB (experiments): cx_link_load_init sets up the peer source, the stream and the
 * event (nothing without the knob); cx_link_load_step queues one step's copies before the step is issued
 * (none while the previous step's are in flight); cx_link_load_fini waits, reports and frees. */
int cx_link_load_init(cx *x, char *err, size_t errcap);
int cx_link_load_step(cx *x, char *err, size_t errcap);
void cx_link_load_fini(cx *x);
int cx_exec_PEER_BARRIER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
int cx_exec_PEER_COPY(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap);
/* peer.c: an ALL_TO_ALL or ALL_GATHER with COLL_I_PATH = COLL_PATH_PEER_COPY (nccl.movement), by copy-engine
 * pulls between two barriers; comm.c's executions call it for those. */
int cx_peer_move(cx *x, const cx_op *op, char *err, size_t errcap);
/* Connects every point-to-point peer of the programs' SEND/RECV at load (comm.c explains why). */
int cx_comm_connect_p2p(cx *x, const cx_prog *const *progs, int nprogs, char *err, size_t errcap);
/* Waits for every stream (or one event) to finish; with NCCL work possible, polls NCCL's asynchronous
 * error and gives up after timeout_s, aborting the communicator and naming the peer. */
int cx_wait_streams(cx *x, const char *why, char *err, size_t errcap);
int cx_wait_event(cx *x, cudaEvent_t ev, const char *why, char *err, size_t errcap);
/* NCCL's answer to `call`: 0 on success (an in-progress answer polled with the deadline), else -1 naming it. */
int cx_nccl_call(cx *x, ncclResult_t rc, const char *call, char *err, size_t errcap);

/* host_sum.c: exec.h allreduce_host, allreduce_host_start and allreduce_host_finish; cx_host_sum_fini frees
 * their buffers (at teardown, after the streams were waited for). */
int cx_allreduce_host(ddp_exec *e, double *v, int n, char *err, size_t errcap);
int cx_allreduce_host_start(ddp_exec *e, const double *v, int n, char *err, size_t errcap);
int cx_allreduce_host_finish(ddp_exec *e, double *v, int n, char *err, size_t errcap);
void cx_host_sum_fini(cx *x);
/* Every rank together: *all = whether `ok` holds on every rank (the minimum over the world). */
int cx_all_agree(cx *x, int ok, int *all, char *err, size_t errcap);

/* memory.c */
int cx_arenas_init(cx *x, char *err, size_t errcap);
void cx_arenas_fini(cx *x);
int cx_arenas_zero(cx *x, char *err, size_t errcap); /* back to the zeroed state of cx_arenas_init */
int cx_batch_prepare(cx *x, cx_op *op, char *err, size_t errcap);
void cx_batch_free(cx_batch *b);
int cx_init_prepare(cx *x, cx_op *op, char *err, size_t errcap);
int cx_read(ddp_exec *e, int32_t tensor, void *dst, char *err, size_t errcap);
int cx_write(ddp_exec *e, int32_t tensor, const void *src, char *err, size_t errcap);
int cx_memory(ddp_exec *e, uint64_t *in_use, uint64_t *peak);
void cx_memory_sample(cx *x);

/* graph.c */
int cx_graph_init(cx *x, char *err, size_t errcap);
void cx_graph_plan(cx *x, cx_prog *pg);
int cx_graph_run(cx *x, cx_prog *pg, int64_t step, char *err, size_t errcap);
void cx_graph_free(cx_prog *pg);
void cx_graph_fini(cx *x);
#endif

/* plan/plan.h: the in-memory execution plan shared by ddpc (which builds it) and ddprun (which replays
 * it): schedule summary, tensors placed in arenas, kernel modules (CUBIN), buckets and the per-rank
 * programs. plan_io.c reads and writes it as plan.bin (format in docs/PLAN_FORMAT.md). */
#ifndef DDP_PLAN_H
#define DDP_PLAN_H
#include "dtype.h"
#include "instr.h"
#include "ops.h"
#include "vocab.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define DDP_PLAN_MAGIC "DDPCPLAN"
#define DDP_PLAN_VERSION 6u
#define DDP_MAX_DIMS 4
#define DDP_ALIGN 256u

/* Memory classes: one arena each per rank. */
#define DDP_ARENAS(X) X(PARAM, "params") X(GRAD, "grads") X(OPT, "optimizer") X(ACT, "activations") \
  X(WORK, "workspace") X(IO, "io")
typedef enum {
#define DDP_ARENA_ENUM(id, name) ARENA_##id,
  DDP_ARENAS(DDP_ARENA_ENUM)
#undef DDP_ARENA_ENUM
  ARENA_COUNT
} ddp_arena;
const char *ddp_arena_name(int a);

/* Tensor roles (flags). */
enum {
  TF_PARAM = 1u << 0,      /* fp32 master parameter (checkpointed under its state name) */
  TF_TRAINABLE = 1u << 1,  /* gets a gradient and an update */
  TF_PARAM_COPY = 1u << 2, /* low-precision copy of a parameter read by the GEMMs */
  TF_GRAD = 1u << 3,
  TF_OPT_M = 1u << 4,
  TF_OPT_V = 1u << 5,
  TF_TOKENS = 1u << 6,     /* model inputs filled by LOAD_BATCH */
  TF_TARGETS = 1u << 7,
  TF_LOSS = 1u << 8,       /* scalar f32 loss of the step */
  TF_SCALARS = 1u << 9,    /* optimizer scalars block (ops.h SCALAR_*) */
  TF_PERSISTENT = 1u << 10, /* lives across steps (not reused by liveness) */
  /* A state-dict parameter's name and shape only, owning no memory: the master of a sharded parameter,
   * whose elements live in the ranks' pieces. No instruction and no view may name it. */
  TF_SHAPE_ONLY = 1u << 11,
  /* One rank's piece of a sharded state-dict tensor (with TF_PARAM, TF_OPT_M or TF_OPT_V): a 1-D view of
   * that rank's shard holding elements [piece_first, piece_first + numel) of the flattened parameter
   * `param` (piece_runs > 1: numel / piece_runs elements from each of piece_first + k * piece_stride,
   * k < piece_runs, stored one after the other: a tensor-parallel rank's columns of a row-split weight);
   * only rank piece_rank's memory holds it. */
  TF_PIECE = 1u << 12
};

typedef struct ddp_tensor {
  char *name;        /* unique internal name, e.g. "layers.0.attn.qkv.out" */
  char *state_name;  /* PyTorch state-dict name for parameters and optimizer state, or NULL */
  uint32_t flags;
  uint8_t dtype;
  uint8_t arena;
  uint8_t ndim;
  int64_t shape[DDP_MAX_DIMS];
  int32_t base;      /* tensor this one is a view of (-1: owns its memory) */
  uint64_t view;     /* byte offset inside base */
  uint64_t offset;   /* byte offset inside the arena (resolved by the planner) */
  uint64_t bytes;
  int32_t param;     /* for grads/opt state/copies: the parameter tensor they belong to, else -1 */
  int32_t first_use, last_use; /* step-program instruction indices (rank 0), -1 if unused */
  int32_t piece_rank;  /* TF_PIECE: the rank whose shard holds it (else 0) */
  int64_t piece_first; /* TF_PIECE: its first element in the flattened parameter (else 0) */
  int64_t piece_runs;  /* TF_PIECE: runs of contiguous elements (0 or 1: one contiguous range) */
  int64_t piece_stride; /* TF_PIECE with piece_runs > 1: elements between the starts of two runs, else 0 */
} ddp_tensor;

typedef struct ddp_module {
  char *template_name; /* templates/<name>.cu */
  char *entry;         /* ddp_<entry> */
  char *spec;          /* the -D specialisation, one define per line */
  char hash[17];       /* content hash of source + spec + arch + NVRTC version */
  uint8_t *cubin;
  uint64_t cubin_size;
} ddp_module;

typedef struct ddp_kernel {
  int32_t op;
  int32_t module;
} ddp_kernel;

typedef struct ddp_bucket {
  int32_t *params;  /* parameter tensor ids, in the order their gradients become ready */
  uint32_t nparams;
  uint64_t offset;  /* byte offset of the bucket in the gradient arena */
  uint64_t bytes;
} ddp_bucket;

/* A communicator: an ordered group of world ranks that issue collectives among themselves (COLL_I_COMM).
 * Comm 0 is the world (implicit, never stored); comm c >= 1 is plan->comms[c - 1]. A collective on comm c
 * runs among its members, group rank i being world rank ranks[i] (ALL_GATHER / REDUCE_SCATTER chunks, the
 * BROADCAST root and the reduction order follow the group ranks). SEND/RECV name world ranks always. */
typedef struct ddp_comm {
  int32_t *ranks;
  uint32_t n;
} ddp_comm;

typedef struct ddp_program {
  ddp_instr *v;
  uint32_t n, cap;
} ddp_program;

typedef struct ddp_rank_plan {
  ddp_program init, step;
  uint32_t nevents;
  uint32_t ntimers;
  /* init[init_refresh ..] derives the compute copies from the masters (casts, the ZeRO gathers): run again
   * after a checkpoint replaced the masters. 0: none (the runtime casts unsharded copies itself). */
  uint32_t init_refresh;
  uint64_t arena_bytes[ARENA_COUNT];
} ddp_rank_plan;


/* What a step does (the schedule's `mode`): train = forward, loss, backward, gradient sync, optimizer;
 * forward = forward and loss only (no gradients, no optimizer state, no collectives); forward_backward =
 * forward, loss, backward and gradient sync, no optimizer (parameters never change). */
#define DDP_MODES(X) X(TRAIN, "train") X(FORWARD, "forward") X(FORWARD_BACKWARD, "forward_backward")
typedef enum {
#define DDP_MODE_ENUM(id, name) MODE_##id,
  DDP_MODES(DDP_MODE_ENUM)
#undef DDP_MODE_ENUM
  MODE_COUNT
} ddp_mode;
const char *ddp_mode_name(int m); /* "forward"; "?" when out of range */

/* The schedule summary: every field is written, read and printed through this one table.
 * X(type, name) with type one of I (int64), F (double), S (string). predicted_*: rank 0's step as
 * `ddpc explain` predicts it at compile time with the profile predicted_profile (compiler/explain/
 * predict.c; a phase without its timers is 0); all 0 with the reason in predicted_error when the
 * simulator could not run on the plan. nccl_*: the schedule's nccl = {...} (the communicators' CTA policy,
 * vocab.h; their maximum CTAs, 0 for NCCL's own; 1: the arenas registered with ncclCommRegister). */
#define DDP_META_FIELDS(X)                                                                         \
  X(S, schedule_path) X(S, schedule_source) X(S, arch) X(I, world) X(S, model_name)             \
  X(I, model_kind) X(I, vocab) X(I, context) X(I, d_model) X(I, d_ff) X(I, layers) X(I, heads)   \
  X(F, rope_theta) X(I, mlp_in) X(I, mlp_out) X(I, precision) X(I, act_dtype) X(I, grad_dtype)   \
  X(I, global_batch) X(I, batch_per_rank) X(I, data_kind) X(S, data_path) X(I, data_rows)        \
  X(I, data_seed) X(I, steps) X(I, warmup) X(I, seed) X(I, identical_init) X(I, optimizer)       \
  X(F, lr) X(F, lr_min) X(F, beta1) X(F, beta2) X(F, eps) X(F, weight_decay) X(I, lr_schedule)   \
  X(I, lr_warmup) X(I, lr_cycle) X(F, clip_norm) X(S, parallel) X(I, n_params) X(I, n_trainable) \
  X(F, flops_per_step) X(I, tokens_tensor) X(I, targets_tensor) X(I, loss_tensor)                \
  X(I, scalars_tensor) X(I, attention) X(F, comm_bytes_per_step) X(I, mode) X(I, pipe_stages)            \
  X(I, pipe_replicas) X(I, pipe_microbatches) X(I, pipe_schedule) X(I, pipe_virtual)             \
  X(F, predicted_step_ms) X(F, predicted_forward_ms) X(F, predicted_backward_ms)                   \
  X(F, predicted_optimizer_ms) X(F, predicted_comm_ms) X(F, predicted_exposed_comm_ms)             \
  X(S, predicted_profile) X(S, predicted_error) X(I, nccl_cta_policy) X(I, nccl_max_ctas) X(I, nccl_register) \
  X(I, tensor_parallel) X(I, data_parallel) X(I, low_priority_streams)

typedef struct ddp_meta {
#define DDP_META_DECL_I(name) int64_t name;
#define DDP_META_DECL_F(name) double name;
#define DDP_META_DECL_S(name) char *name;
#define DDP_META_DECL(t, name) DDP_META_DECL_##t(name)
  DDP_META_FIELDS(DDP_META_DECL)
#undef DDP_META_DECL
} ddp_meta;

typedef struct ddp_plan {
  ddp_meta meta;
  ddp_tensor *tensors;
  uint32_t ntensors, cap_tensors;
  ddp_module *modules;
  uint32_t nmodules, cap_modules;
  ddp_kernel *kernels;
  uint32_t nkernels, cap_kernels;
  ddp_bucket *buckets;
  uint32_t nbuckets, cap_buckets;
  char **strings;
  uint32_t nstrings, cap_strings;
  /* ddp_plan_add_string's hash index (plan.c): open addressing over string ids + 1 (0 = empty slot),
   * covering strings[0 .. nindexed); strings added any other way (the reader) are indexed lazily. */
  uint32_t *string_slots;
  uint32_t nslots, nindexed;
  uint32_t nstreams;
  ddp_comm *comms; /* communicators 1 .. ncomms (comm 0, the world, is implicit) */
  uint32_t ncomms, cap_comms;
  ddp_rank_plan *ranks; /* meta.world entries */
  uint32_t file_crc;    /* read from a plan.bin: its CRC32 and size, which the reader checked (0 when built) */
  uint64_t file_bytes;
} ddp_plan;

/* Construction and teardown (plan.c). */
ddp_plan *ddp_plan_new(void);
void ddp_plan_free(ddp_plan *p);
int32_t ddp_plan_add_string(ddp_plan *p, const char *s); /* interned */
const char *ddp_plan_string(const ddp_plan *p, int32_t id); /* "" for -1 */
const char *ddp_plan_tensor_name(const ddp_plan *p, int64_t id); /* "-" for -1, "?" out of range */
int32_t ddp_plan_add_tensor(ddp_plan *p, const ddp_tensor *t); /* copies the strings */
ddp_instr *ddp_program_push(ddp_program *prog, const ddp_instr *in);
void ddp_program_free(ddp_program *prog);
uint64_t ddp_tensor_numel(const ddp_tensor *t);
/* A TF_PIECE tensor's runs: piece_runs, 0 counting as 1 (one contiguous range). Its numel / runs elements each
 * come from piece_first + k * piece_stride, k < runs (a reader-checked plan has numel % runs == 0). */
static inline int64_t ddp_piece_runs(const ddp_tensor *t) { return t->piece_runs > 1 ? t->piece_runs : 1; }
/* One past a piece's last element in the flattened parameter, first + (runs - 1) x stride + its run length
 * (numel / runs); false when first is negative or the sum overflows. */
bool ddp_piece_end(const ddp_tensor *t, uint64_t *end);
ddp_instr ddp_instr_blank(int opcode, int stream); /* all buffers null, kernel/name/layer -1 */
int32_t ddp_plan_find_tensor(const ddp_plan *p, const char *name); /* -1 when absent */
/* Communicators: adds one (ranks copied) and returns its id (>= 1). */
int32_t ddp_plan_add_comm(ddp_plan *p, const int32_t *ranks, uint32_t n);
/* The size of comm `comm` (0: the world), -1 when the plan has no such comm. */
int64_t ddp_plan_comm_size(const ddp_plan *p, int64_t comm);
/* Is the opcode a collective that runs on a communicator (all-reduce, reduce-scatter, all-gather,
 * broadcast, all-to-all, and the peer barrier, which moves no bytes)? Sends and receives name world ranks. */
int ddp_is_group_collective(int opcode);
/* Is the instruction an all-to-all or all-gather moved by copy-engine pulls (COLL_I_PATH, nccl.movement)? */
int ddp_instr_peer_copied(const ddp_instr *in);
/* How many of rank `rank`'s step instructions are (0 for a rank the plan does not have). */
uint32_t ddp_plan_peer_copied(const ddp_plan *p, int64_t rank);
/* The ranks an instruction's footprint is sized by: a group collective's communicator's, else the world
 * (also when the communicator is out of range: the reader refuses that separately). */
int64_t ddp_instr_ranks(const ddp_plan *p, const ddp_instr *in);
/* World rank `rank`'s place in comm `comm` (its group rank), -1 when it is not a member or no such comm. */
int64_t ddp_plan_comm_index(const ddp_plan *p, int64_t comm, int64_t rank);
/* What comm is in a tensor-parallel plan (meta.tensor_parallel = T > 1, data_parallel = D; the numbering of
 * compiler/passes/tensor.c and pipeline.c, read in this one place), with *which (may be NULL):
 *   TENSOR   a tensor group: of data replica *which (without a pipeline: comm 1 + d; with one replica the
 *            world, comm 0), or of pipeline-mesh rank *which = replica x stages + stage
 *   DATA     the data group of tensor rank *which (without a pipeline: comm 1 + D + t)
 *   STAGE    a pipeline stage's replicas at one tensor rank, *which = stage x T + tensor rank
 *   REPLICA  a pipeline replica's stages at one tensor rank, *which = replica x T + tensor rank
 *   NONE     anything else, and every comm of a plan without tensor parallelism. */
enum { COMM_ROLE_NONE = 0, COMM_ROLE_TENSOR, COMM_ROLE_DATA, COMM_ROLE_STAGE, COMM_ROLE_REPLICA };
int ddp_plan_comm_role(const ddp_plan *p, int64_t comm, int64_t *which);
/* ddp_plan_comm_role(...) == COMM_ROLE_TENSOR */
int ddp_plan_tensor_comm(const ddp_plan *p, int64_t comm);
/* The world rank of group rank `i` of comm `comm` (i in range: the caller checks). */
int64_t ddp_plan_comm_member(const ddp_plan *p, int64_t comm, int64_t i);

/* NCCL symmetric windows (plan/windows.c; nccl = { register = "window" }): an arena is allocated and
 * registered in whole DDP_WINDOW_ALIGN units (the cuMem granularity of current GPUs, a multiple of NCCL's
 * NCCL_WIN_REQUIRED_ALIGNMENT), ddp_window_bytes(n) rounds n up to them. ddp_plan_collective_arenas: bit a
 * set when some rank's group collective (init or step) reads or writes arena a (computed once by a caller
 * that asks about several arenas). ddp_plan_window_bytes: the window the executor registers for arena a on
 * communicator comm (0 the world), given coll = ddp_plan_collective_arenas(p): its size when the plan has
 * nccl = { register = "window" } on more than one rank, a collective uses the arena (bit a of coll) and every
 * member of comm holds it at one such size; else 0 (no window: the registration is collective). The one rule
 * the CUDA executor (comm.c) and `ddpc inspect` both follow. */
#define DDP_WINDOW_ALIGN ((uint64_t)2 << 20)
uint64_t ddp_window_bytes(uint64_t n);
uint32_t ddp_plan_collective_arenas(const ddp_plan *p);
uint64_t ddp_plan_window_bytes(const ddp_plan *p, uint32_t coll, int64_t comm, int arena);

/* plan.bin (plan_io.c). Errors: a one-line message in err, return -1; nothing is half-written (the
 * writer writes a temporary file and renames it). */
int ddp_plan_write(const ddp_plan *p, const char *path, char *err, size_t errcap);
ddp_plan *ddp_plan_read(const char *path, char *err, size_t errcap);
/* The same checks on a plan image held in memory (fuzzing, tests); `label` stands for the path in messages. */
ddp_plan *ddp_plan_read_buffer(const void *data, size_t size, const char *label, char *err, size_t errcap);

/* Is this plan runnable here (plan_io_check.c)? Compares the compiled world size with `world` (<= 0:
 * skip) and the plan's arch with `device_arch` ("sm_90"; NULL: skip; a plan without kernels runs on any
 * arch). Returns 0, or -1 with one line in err such as "compiled for 2 ranks, launched with 3" or
 * "compiled for sm_90a, this GPU is sm_80"; the plan holds no path, so callers prefix theirs. */
int ddp_plan_check_launch(const ddp_plan *p, const char *device_arch /* NULL = skip */, int world, char *err,
                          size_t errcap);
#endif

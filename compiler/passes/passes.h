/* compiler/passes/passes.h: the passes stage: every rank's init and step programs (sync.c drives them),
 * the passes it calls, and the helpers they share (rank_program.c: appending instructions, events between
 * streams, timing points, collectives over flat ranges). */
#ifndef DDP_PASSES_H
#define DDP_PASSES_H
#include "layout.h"

typedef struct rank_ctx {
  ddp_builder *b;
  ddp_layout *lay;
  int rank;
  ddp_program *out;
  uint32_t nevents, ntimers;
  int comm; /* the communicator rp_collective issues on (0: the world) */
  int tp;      /* tensor parallelism: this rank's tensor rank (rank is then its data replica) */
  int world_rank; /* the plan's rank whose programs these are (== rank without tensor parallelism) */
  int tp_comm; /* ... and its tensor group's communicator */
} rank_ctx;

ddp_instr *rp_push(rank_ctx *c, ddp_instr in, const char *name);
void rp_timer(rank_ctx *c, int stream, int role);
/* `to` waits for everything issued so far on `from`. */
void rp_order(rank_ctx *c, int from, int to);
uint32_t rp_record(rank_ctx *c, int stream);
void rp_wait(rank_ctx *c, int stream, uint32_t event);
/* A collective over elements [begin, begin+count) of a flat tensor, bracketed by timers on `stream`. */
void rp_collective(rank_ctx *c, int opcode, int stream, int32_t flat, int64_t begin, int64_t count, int redop,
                   int root, const char *name);
/* The reduce half of an all-to-all reduction on the communication stream, without timers: ALL_TO_ALL of
 * `per` elements to each of the W ranks of c->comm from `send` (element offset send_at) into `received`, then
 * SUM_CHUNKS of the W chunks received, averaged, into `out` at element offset out_at (names: a2a_name,
 * sum_name). nccl.reduce_scatter / nccl.all_reduce = "alltoall". */
void rp_alltoall_sum(rank_ctx *c, int32_t send, int64_t send_at, int32_t received, int32_t out, int64_t out_at,
                     int64_t per, int W, const char *a2a_name, const char *sum_name);
void rp_range(rank_ctx *c, int push, int kind, const char *name);

/* Programs for every rank: init (parameter init, zeroing, broadcast, casts) and step (batch, forward,
 * backward with the sync strategy's collectives and events, optimizer). Allocates the plan's ranks. */
int ddp_assemble_programs(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap);
void pass_init_program(rank_ctx *c);                              /* init_program.c */
/* Pieces of init programs (init_program.c): MEMSET of a whole tensor (t < 0: nothing), a CAST of n elements,
 * INIT_TENSOR of unit u's elements [first, first + count) into t at byte offset `at`, the RoPE table. */
void pass_memset(rank_ctx *c, int32_t t);
void pass_cast(rank_ctx *c, int32_t from, int32_t to, int64_t n, const char *name);
void pass_init_unit(rank_ctx *c, int u, int32_t t, uint64_t at, int64_t first, int64_t count, int salt);
/* ... drawing runs of `run` elements `stride` apart in the unit's stream (run 0: contiguous) */
void pass_init_unit_runs(rank_ctx *c, int u, int32_t t, uint64_t at, int64_t first, int64_t count, int salt, int64_t run,
                         int64_t stride);
void pass_init_rope(rank_ctx *c);
/* Tensor parallelism: split unit u's parameters as tensor rank c->tp holds them, drawing the values the whole
 * model's unit holds there (rows: one range; columns: a run per row) into the unit's master. */
void pass_init_unit_tp(rank_ctx *c, int u, int salt);
void pass_opt_scalars(rank_ctx *c, bool sumsq_over_shard);        /* optimizer.c */
void pass_scalars(rank_ctx *c);                                   /* OPT_SCALARS alone */
/* One AdamW/SGD update of n elements: each operand a tensor and an element offset; copy < 0: no compute copy;
 * on `stream` (0, the compute stream, unless given) */
typedef struct pass_upd {
  int64_t n;
  int32_t param, grad, m, v, copy;
  int64_t param_at, grad_at, state_at, copy_at;
  int stream;
} pass_upd;
void pass_update_at(rank_ctx *c, const pass_upd *u, const char *name);
void pass_update(rank_ctx *c, int64_t lo, int64_t hi, int64_t state_base, bool write_copy, const char *name);
void pass_exchange_params(rank_ctx *c);
/* The ZeRO levels (zero.c): the step program, and the all-gather of group g's parameters after an
 * update or at init (zero1/2). */
int pass_zero_step(rank_ctx *c);
void pass_zero_gather_params(rank_ctx *c, int stream, int g, const char *name);
void pass_zero_sumsq(rank_ctx *c);
/* One rank with the optimizer on a side stream during the backward (opt_overlap.c). */
bool pass_opt_overlap_applies(const ddp_builder *b, const ddp_layout *lay);
int pass_opt_overlap_step(rank_ctx *c);
/* Tensor parallelism (tensor.c; nothing without it): the communicators (before any rank); a world rank's
 * data replica (c->rank), tensor rank, tensor and data communicators; the builder's patches of step
 * instruction k for this rank; LOAD_BATCH's share; the gradient norm's partial sums (pass_opt_scalars). */
void pass_tp_prepare(ddp_builder *b);
void pass_tp_rank(rank_ctx *c, int world_rank);
void pass_tp_apply(const rank_ctx *c, uint32_t k, ddp_instr *in);
void pass_tp_load_batch(const rank_ctx *c, ddp_instr *load);
void pass_tp_sumsq(rank_ctx *c);
/* One table of the gradient norm's partial sums: SUMSQ of grads [at, at + n) into table `table` when kind is 1
 * (split units) or 0 (whole units) on tensor rank 0, else MEMSET of it (kind 0 elsewhere: counted once;
 * -1: an unused table) */
void pass_tp_sumsq_table(rank_ctx *c, int table, int32_t grads, int64_t at, int64_t n, int kind, const char *name);
/* ... over given runs of `grads` (a pipeline stage's flat): pass_tp_sumsq's tables and tensor all-reduce */
void pass_tp_sumsq_runs(rank_ctx *c, int32_t grads, int n, const int64_t *lo, const int64_t *hi, const bool *split);
/* ALL_REDUCE(sum) of the norm's partial-sum tables over the tensor group (compute stream) */
void pass_tp_reduce_partials(rank_ctx *c);
/* Pipelines (pipeline.c): every rank's init and step programs; allocates the plan's ranks. */
int pass_pipeline(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap); /* SUMSQ of every group's gradient slice, partials all-reduced */
#endif

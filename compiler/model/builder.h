/* compiler/model/builder.h: the model builder's state (builder.c): tensors and instructions being emitted
 * into the single-rank init and step programs, parameters grouped into allocation units, and the tape that
 * the backward pass (backward.c) walks in reverse. Layer kinds are in layers/layers.h, the models in
 * models.h. */
#ifndef DDP_BUILDER_H
#define DDP_BUILDER_H
#include "err.h"
#include "plan.h"
#include "schedule.h"

/* A state-dict parameter. Several parameters may share one allocation unit (the fused q/k/v weight, the
 * fused w1/w3 weight); gradients become ready per unit. */
typedef struct ddp_model_param {
  int32_t tensor;  /* fp32 master (a view into its unit) */
  int32_t unit;
  int64_t unit_offset; /* elements from the unit's start */
  int64_t numel;
  /* Tensor parallelism: how the state-dict tensor [rows, cols] (full_shape) is split over the tensor ranks
   * (TP_WHOLE: every rank holds all of it) and where it starts in the whole model's unit (elements), so that
   * each rank initialises and checkpoints exactly its part of what one rank would hold. */
  int tp_split;
  int64_t full_shape[2];
  int64_t full_unit_offset;
} ddp_model_param;

/* The split of a state-dict tensor over the tensor ranks: whole, by rows (column-parallel layers, the
 * vocabulary-parallel embedding and head: rank t holds rows [t R/T, (t+1) R/T)), by columns (row-parallel
 * layers: rank t holds columns [t C/T, (t+1) C/T) of every row). */
enum { TP_WHOLE = 0, TP_ROWS = 1, TP_COLS = 2 };

/* A difference between the tensor ranks' step programs, applied when each rank's program is assembled
 * (compiler/passes/sync.c): the builder emits tensor rank 0's program. */
enum {
  TPP_COMM,       /* a collective on the tensor axis: i[COLL_I_COMM] = the rank's tensor communicator */
  TPP_VIEW,       /* p[slot].view += t x value (bytes) */
  TPP_INT,        /* i[slot] += t x value */
  TPP_RANK0_BETA  /* a row-parallel GEMM's residual: only tensor rank 0 adds it (f[GEMM_F_BETA] = 0 elsewhere) */
};
typedef struct ddp_tp_patch {
  uint32_t instr; /* index in the builder's step */
  int kind, slot;
  int64_t value;
} ddp_tp_patch;

typedef struct ddp_unit {
  char name[160];
  int32_t master;  /* fp32 [numel] */
  int32_t copy;    /* GEMM operand copy (bf16) or == master */
  int32_t grad;    /* -1 when frozen */
  int64_t numel;
  bool trainable;
  int64_t flat_offset; /* elements, assigned by the layout pass (trainable units only) */
  int ready;           /* order in which the backward finishes this unit's gradient */
  int init_kind;
  float init_a, init_b;
  int64_t fan_in;
  bool tp_split;       /* holds a state-dict tensor split over the tensor ranks (b_param_tp) */
} ddp_unit;

/* One recorded forward op: enough for its backward. */
typedef struct ddp_node {
  int kind;                 /* LK_* */
  int layer;
  int32_t name;             /* plan string */
  int32_t t[12];            /* tensors: meaning per kind */
  int32_t u[4];             /* units (weights) */
  int64_t i[8];
  float f[4];
} ddp_node;

enum { LK_EMBED, LK_LINEAR, LK_RMSNORM, LK_ROPE, LK_ATTENTION, LK_SWIGLU, LK_XENT, LK_MSE, LK_RELU,
       LK_LAYERNORM, LK_BIAS, LK_ATTENTION_NAIVE, LK_TP_REDUCE, LK_TP_COPY, LK_COUNT };

typedef struct ddp_builder {
  ddp_plan *plan;
  const ddp_schedule *s;
  ddp_program init, step;
  int fdt;      /* masters, statistics, optimizer state: f32 (f64 for the reference gradient check) */
  int act_dt;   /* activations (bf16 in bf16 mode) */
  int res_dt;   /* the residual stream (f32: as under PyTorch autocast) */
  int grad_dt;  /* parameter gradients */
  int64_t rows; /* tokens (or MLP rows) per rank per step */
  int tp;       /* tensor-parallel ranks (the schedule's mesh.tensor; 1: none) */
  ddp_tp_patch *tp_patches;
  int ntp_patches;
  size_t cap_tp_patches;
  bool backward; /* the step has a backward (mode train or forward_backward): gradients, saved tensors */
  /* the streams that carry nothing but updates (and the scalars, events and timers around them), bit s for
   * stream s: one rank's overlapped optimizer's side stream, ZeRO's update stream; the passes that put the
   * updates there set them, and streams.update_priority = "low" makes them the plan's low_priority_streams */
  uint64_t update_streams;
  bool unit_grads_accumulate; /* every write of a parameter gradient adds (pipelines: the step zeroes them) */
  int layer;    /* current layer for tagging, -1 outside */
  ddp_unit *units;
  int nunits;
  size_t cap_units;
  ddp_model_param *params;
  int nparams;
  size_t cap_params;
  ddp_node *tape;
  int ntape;
  size_t cap_tape;
  int32_t *grad_of;   /* activation tensor -> its gradient tensor (-1) */
  uint8_t *grad_done; /* gradient tensor already written once (later writes accumulate) */
  size_t grad_cap;
  int32_t tokens, targets, loss, loss_rows, scalars, rope_freq;
  int ready_counter;
  double flops;       /* model FLOPs per step per rank (forward, + backward when the plan has one) */
  char **names;       /* b_fmt's results, freed with the builder */
  int nnames;
  size_t cap_names;
} ddp_builder;

/* Tensors. */
int32_t b_tensor(ddp_builder *b, const char *name, int dtype, int arena, uint32_t flags, int ndim,
                 const int64_t *shape);
int32_t b_act(ddp_builder *b, const char *name, int dtype, int64_t rows, int64_t cols);
/* A tensor the forward writes only for the backward (attention's lse): an activation, or -1 when the plan
 * has no backward (the kernels skip a null optional output). */
int32_t b_saved(ddp_builder *b, const char *name, int dtype, int ndim, const int64_t *shape);
int32_t b_view(ddp_builder *b, const char *name, int32_t base, uint64_t byte_offset, int dtype, int ndim,
               const int64_t *shape, uint32_t flags);
const ddp_tensor *b_t(const ddp_builder *b, int32_t t);

/* Instructions, appended to the step program (or init with b_emit_init). */
ddp_instr b_kernel(int op);
void b_arg(ddp_instr *in, int slot, int32_t tensor, uint64_t view_bytes, int dtype);
void b_buf(ddp_builder *b, ddp_instr *in, int slot, int32_t tensor); /* tensor's own dtype */
/* Appends `in` (named, when name is given) to prog. */
ddp_instr *b_push(ddp_builder *b, ddp_program *prog, ddp_instr in, const char *name);
ddp_instr *b_emit(ddp_builder *b, ddp_instr in, const char *name);
ddp_instr *b_emit_init(ddp_builder *b, ddp_instr in, const char *name);
void b_range_push(ddp_builder *b, int kind, const char *name);
void b_range_pop(ddp_builder *b);
/* A timing point on the compute stream; its slot is numbered when the rank programs are assembled. */
void b_timer(ddp_builder *b, int role);
/* GEMM: D[M,N] = alpha * op(A) op(B) + beta * C with C == D (row-major, contiguous unless ld given). */
ddp_instr *b_gemm(ddp_builder *b, const char *name, int32_t A, uint64_t a_view, int transA, int64_t lda,
                  int32_t B, uint64_t b_view, int transB, int64_t ldb, int32_t D, uint64_t d_view, int64_t ldd,
                  int64_t M, int64_t N, int64_t K, float beta);
/* Makes `t` available in `dtype`: returns t itself or a CAST of it into a new activation. */
int32_t b_as_dtype(ddp_builder *b, int32_t t, int dtype, const char *name);
/* b_as_dtype for a gradient that an RMSNorm backward just finished: with the schedule's fusion.norm_cast
 * that instruction becomes RMSNORM_BWD_CAST and writes the copy itself (fuse.c); else b_as_dtype. */
int32_t b_cast_grad(ddp_builder *b, int32_t t, int dtype, const char *name);
/* Whether the attention backward on qkv (model width d, heads) applies the inverse RoPE of dq and dk itself
 * (ATTN_BWD_*_ROPE, the schedule's fusion.rope, bf16): then the RoPE node of qkv is marked (i[2] = 1) and
 * its backward emits nothing (fuse.c). */
bool b_fuse_rope_bwd(ddp_builder *b, int32_t qkv, int64_t d, int64_t heads);
/* Does an activation need a gradient (everything but data inputs)? */
bool b_needs_grad(const ddp_builder *b, int32_t t);

/* Parameters. Returns the unit; the state-dict parameters are added with b_param. */
int b_unit(ddp_builder *b, const char *name, int64_t numel, bool trainable, int init_kind, float a, float c,
           int64_t fan_in);
void b_param(ddp_builder *b, int unit, const char *state_name, int64_t offset, int ndim, const int64_t *shape);
/* A 2-D state-dict tensor of full shape [rows, cols] split over the tensor ranks by `split` (TP_*): the unit
 * holds this rank's part at `offset`; the whole tensor starts at full_offset in the whole model's unit. */
void b_param_tp(ddp_builder *b, int unit, const char *state_name, int64_t offset, int64_t rows, int64_t cols,
                int split, int64_t full_offset);
/* Records a per-tensor-rank patch of the step's instruction `instr` (TPP_*). */
void b_tp_patch(ddp_builder *b, uint32_t instr, int kind, int slot, int64_t value);
/* The index of the step's last instruction. */
uint32_t b_last(const ddp_builder *b);
/* The state-dict parameters of each unit, in parameter order: those of unit u are param[at[u] .. at[u + 1]).
 * Built in one pass (b_unit_params_free releases it). */
typedef struct ddp_unit_params {
  int *at, *param;
} ddp_unit_params;
ddp_unit_params b_unit_params(const ddp_builder *b);
void b_unit_params_free(ddp_unit_params *up);

/* Gradients of activations: created on first use; the first writer overwrites, later ones accumulate. */
int32_t b_grad(ddp_builder *b, int32_t t);
int b_grad_acc(ddp_builder *b, int32_t grad); /* returns 0 the first time (overwrite), then 1 */
bool b_has_grad(const ddp_builder *b, int32_t t);
int b_unit_grad_acc(ddp_builder *b, int unit); /* same for a unit's gradient; marks readiness */

ddp_node *b_record(ddp_builder *b, int kind, const char *name);
int32_t b_name(ddp_builder *b, const char *fmt, ...);
/* A formatted name ("%s.dg_part"), owned by the builder until b_free. */
__attribute__((format(printf, 2, 3))) const char *b_fmt(ddp_builder *b, const char *fmt, ...);

/* The index in the step program of the forward's end (its FORWARD_END timer), or step.n when none. */
uint32_t b_forward_end(const ddp_builder *b);
/* For each of nowners owners, the index in the step program of the last instruction with an operand inside a
 * tensor the owner holds (-1: none): owner_of maps every tensor to its owner (-1: none), and an operand's
 * view chain is walked up to the first tensor with one. Freed by the caller. */
int32_t *b_last_touch(const ddp_builder *b, const int32_t *owner_of, int nowners);

/* Backward (backward.c): walks the tape in reverse. */
void b_backward(ddp_builder *b);

/* Partial-table row count for column reductions (dg of norms, bias grads). */
int64_t b_partials(int64_t rows);

/* The model stage: the loss and optimizer-scalar tensors, the model's init + forward + loss, and (when the
 * mode has one) the backward. */
int ddp_model_build(ddp_builder *b, char *err, size_t errcap);

/* The builder's lifetime. */
void b_init(ddp_builder *b, ddp_plan *plan, const ddp_schedule *s, bool f64);
void b_free(ddp_builder *b);
#endif

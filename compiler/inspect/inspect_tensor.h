/* compiler/inspect/inspect_tensor.h: `ddpc inspect`'s tensor-parallel section (inspect_tensor.c): the mesh
 * and its communicators, every split state-dict parameter's pieces, the tensor-parallel collectives per layer
 * and the tensor axis's communication volume next to Megatron-LM's figure. Only for plans with
 * meta.tensor_parallel > 1. */
#ifndef DDP_INSPECT_TENSOR_H
#define DDP_INSPECT_TENSOR_H
#include "plan.h"
#include <jansson.h>
#include <stdio.h>

enum { TP_FORWARD, TP_BACKWARD, TP_OPTIMIZER };
extern const char *const ddp_tp_phase_names[3]; /* "forward", "backward", "optimizer" */

/* One collective of a rank's step between a TP_COMM_BEGIN and a TP_COMM_END timer (timed), or another one on
 * a tensor group (the gradient norm's partial sums under clipping: not a layer's). */
typedef struct ddp_tp_coll {
  uint32_t index;    /* in the step program */
  int timed;         /* between the TP_COMM timers */
  int opcode;        /* I_ALL_REDUCE, I_ALL_GATHER, ... */
  int phase;         /* TP_FORWARD, TP_BACKWARD (after the step's FORWARD_END timer; without one: its name ends
                        in ".bwd"), TP_OPTIMIZER (after the BACKWARD_END timer) */
  int32_t layer;     /* the instruction's layer, -1 outside the transformer blocks */
  const char *name;
  int64_t count;     /* COLL_I_COUNT (for an all-gather: per rank) */
  int dtype;
  int64_t comm;
  uint64_t elements; /* the payload: count, or count x the group's size for an all-gather (what it gathers) */
  uint64_t bytes;    /* elements x the dtype's size */
} ddp_tp_coll;

/* The TP collectives of one rank's step, summed. */
typedef struct ddp_tp_volume {
  int all_reduces, all_gathers, others;
  uint64_t ar_elements, ar_bytes, ag_elements, ag_bytes, ag_sent_elements, other_elements, other_bytes;
  uint64_t elements, bytes; /* all of them */
} ddp_tp_volume;

/* A split state-dict parameter: its shape-only tensor and one piece per tensor rank. */
typedef struct ddp_tp_split {
  int32_t whole;   /* the TF_SHAPE_ONLY tensor */
  int32_t *pieces; /* [T]: tensor rank t's piece, -1 missing */
  int columns;     /* the pieces are strided (one run per row): the weight's input columns (row-parallel) */
} ddp_tp_split;

typedef struct ddp_tp_info {
  int64_t T, D, world;
  int64_t S;      /* pipeline stages (0: no pipeline; world rank (d S + s) T + t) */
  int64_t layers; /* the transformer blocks rank 0 runs (all of them without a pipeline) */
  ddp_tp_coll *colls; /* rank 0's */
  int ncolls;
  ddp_tp_volume *volume; /* [world] */
  ddp_tp_split *splits;
  int nsplits;
  int nwhole;                     /* state-dict parameters whole (replicated) on every rank */
  uint64_t whole_bytes;
  uint64_t *rank_param_bytes;     /* [T]: tensor rank t's pieces + the whole ones */
  uint64_t one_rank_param_bytes;  /* every state-dict parameter whole: what one rank would hold */
  /* Megatron-LM's figure: 2 all-reduces of tokens x d_model per block forward, 2 backward */
  int64_t tokens;                 /* per rank per step: batch_per_rank x context */
  int fwd_dtype, bwd_dtype;       /* f32 (the residual stream), the activation dtype (its gradients) */
  uint64_t tb_fwd_elements, tb_bwd_elements, tb_elements, tb_fwd_bytes, tb_bwd_bytes, tb_bytes;
  uint64_t ex_elements, ex_bytes; /* rank 0's collectives outside the blocks (layer < 0) */
  uint64_t blk_elements, blk_bytes;
} ddp_tp_info;

int ddp_tp_analyse(const ddp_plan *p, ddp_tp_info *ti); /* 0: not a tensor-parallel plan (ti empty) */
void ddp_tp_info_free(ddp_tp_info *ti);
void ddp_insp_tensor(FILE *o, const ddp_plan *p);            /* "== tensor parallelism ==", nothing if T <= 1 */
json_t *ddp_insp_tensor_json(const ddp_plan *p, int *bad);   /* NULL if T <= 1 */
#endif

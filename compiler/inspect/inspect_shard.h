/* compiler/inspect/inspect_shard.h: what `ddpc inspect` says about a sharded plan (ZeRO-1/2/3, FSDP) and
 * every plan's memory per rank against the seeds' formulas, worked out from the plan's own data: the
 * parallel summary, tensor names and flags, the bucket table, rank 0's step program and the liveness and
 * offsets the memory planner resolved (inspect_shard.c; printed by inspect_shard_print.c and
 * inspect_shard_json.c). */
#ifndef DDP_INSPECT_SHARD_H
#define DDP_INSPECT_SHARD_H
#include "explain.h"
#include "plan.h"
#include <stdio.h>

/* One group of the flat order (a row of the bucket table): a ZeRO bucket or an FSDP unit. */
typedef struct ddp_shard_unit {
  uint32_t nparams;
  uint64_t elements;      /* the members' elements (no padding) */
  uint64_t grad_bytes;    /* the group in the gradient dtype: the bucket table's bytes (padding included) */
  uint64_t compute_bytes; /* elements * the compute (activation) dtype's size */
  uint64_t shard_bytes;   /* grad_bytes / world: one rank's slice */
  int32_t gathered;       /* its gathered buffer (unit<k>.gathered, or the first TF_PARAM_COPY activation
                             named for it), -1: none */
} ddp_shard_unit;

/* One ALL_GATHER of rank 0's step program. */
typedef struct ddp_shard_gather {
  uint32_t index;     /* in the step program */
  uint32_t stream;
  int unit;           /* the unit or bucket it gathers (from its name, else its recv buffer's), -1: unknown */
  const char *kind;   /* "unit" or "bucket" (the word before the number), "" when unknown */
  int bwd;            /* its name or buffer ends in ".bwd" (a backward re-gather) */
  int32_t recv;       /* the root tensor it writes, -1 none */
  int64_t consumer;   /* the first compute-stream instruction after it naming a tensor that overlaps the bytes
                         it writes (or, past `via`, the tensor that kernel writes from them), -1 none */
  int64_t via;        /* a kernel of another stream the gathered bytes pass through first (the cast of
                         gathered fp32 masters to the compute dtype), -1 none */
  int next_step;      /* ... found only before it, so in the next step */
  const char *phase;  /* the consumer's phase from the timers: "forward", "backward", "optimizer" or "-" */
} ddp_shard_gather;

typedef struct ddp_shard_info {
  int level;               /* SHARD_* (SHARD_NONE: unsharded) */
  const char *level_from;  /* "meta.parallel" or "tensors" */
  int64_t world;
  ddp_shard_unit *units;   /* the bucket table's groups */
  uint32_t nunits;
  ddp_shard_gather *gathers;
  uint32_t ngathers;
  /* gathered parameter buffers (ddp_gathered_params: transient activations that are TF_PARAM_COPY or
   * written by an ALL_GATHER) */
  unsigned char *gathered; /* per tensor */
  uint32_t ngathered;
  int max_resident;              /* most units whose gathered buffers are live at one instruction (groups
                                    when units_how is "unknown") */
  int max_resident_groups;       /* most groups (unit<g> buffers, forward and backward one group) */
  const char *units_how;         /* "groups" (each group is a unit: one dtype), "layer ranges" (per-block
                                    units split by dtype, joined by the layer range of their first use),
                                    "unknown" */
  int64_t max_resident_at;       /* the first such instruction, -1 none */
  int max_resident_fwd, max_resident_bwd; /* ... before the FORWARD_END timer, and from it on (-1: no timer) */
  int prefetch_fwd, prefetch_bwd; /* meta.parallel's "prefetch=F/B", -1 when absent */
  int reshard;                   /* meta.parallel's "reshard_after_forward=true|false": 1, 0, -1 absent */
  uint64_t peak_gathered_bytes;  /* most bytes of live gathered buffers at one instruction */
  int64_t peak_gathered_at;
  uint64_t gathered_lo, gathered_hi; /* the activation-arena range the planner's offsets give them */
  /* the seeds' formula with this plan's byte widths */
  int c, g, master, m, v;  /* bytes per parameter: compute copy, gradient, fp32 master, AdamW m, v */
  int64_t psi;             /* trainable parameters (meta.n_trainable) */
  double formula_bytes;
  char formula_name[16];   /* "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3" */
  char formula_seed[40];   /* the seeds' form: "(2+(2+12)/N)Ψ" */
  char formula[128];        /* with this plan's widths and N: "(2+(4+12)/2)Ψ" */
} ddp_shard_info;

/* Works out `si` from `p` (never fails; a plan without ranks gives an empty analysis). */
void ddp_shard_analyse(const ddp_plan *p, ddp_shard_info *si);
void ddp_shard_info_free(ddp_shard_info *si);

/* One rank's memory at the predicted peak: the `ddpc explain` classes (compiler/explain/memory.c) with the
 * parameters and gradients split by where they live. */
typedef struct ddp_rank_memory {
  uint64_t cls[MEM_COUNT];
  uint64_t params_copies;   /* persistent low-precision copies in the parameter arena (flat.params.copy) */
  uint64_t params_gathered; /* gathered buffers live at the activation peak */
  uint64_t params_masters;  /* the rest of the parameter class: fp32 masters or master shards */
  uint64_t grads_transient; /* bucket<k>.grads live at the activation peak */
  uint64_t grads_persistent;
  uint64_t total, model_states; /* all classes; parameters + gradients + optimizer state */
} ddp_rank_memory;
void ddp_rank_memory_get(const ddp_plan *p, int rank, ddp_rank_memory *rm);

/* The text sections "== sharding ==" and "== memory per rank ==" (inspect_shard_print.c). */
void ddp_insp_sharding(FILE *o, const ddp_plan *p, const ddp_shard_info *si);
void ddp_insp_memory_per_rank(FILE *o, const ddp_plan *p, const ddp_shard_info *si);
#endif

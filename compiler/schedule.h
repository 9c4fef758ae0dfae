/* compiler/schedule.h: the validated schedule, as the Lua front end hands it to the compiler stages.
 * Everything here has been type- and range-checked; later stages may trust it. */
#ifndef DDP_SCHEDULE_H
#define DDP_SCHEDULE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vocab.h"

#define DDP_NAME_MAX 128
#define DDP_MAX_MLP_LAYERS 32
#define DDP_MAX_EXTRA_PARAMS 8
#define DDP_MAX_STAGES 64 /* pipeline chunks (stages x virtual stages) */
/* Microbatches of a pipeline (per replica): each runs on its own copies of the activation tensors and adds
 * its own instructions, so a million of them (tiny model) took 18-23 GB and minutes to compile. */
#define DDP_MAX_MICROBATCHES 4096

enum { LAYER_LINEAR = 0, LAYER_RELU = 1, LAYER_LAYERNORM = 2 };

typedef struct ddp_mlp_layer {
  int kind;                 /* LAYER_* */
  char name[DDP_NAME_MAX];  /* state-dict prefix, e.g. "fc1" or "ln" */
  int64_t in, out;          /* LINEAR: in -> out; LAYERNORM: in == out == normalized size */
  bool bias;                /* LINEAR: has a bias; LAYERNORM: always has weight and bias */
  bool weight_frozen, bias_frozen;
  int tie_weight_to;        /* index of an earlier LINEAR layer whose weight this one shares, or -1 */
} ddp_mlp_layer;

typedef struct ddp_extra_param {  /* a parameter outside the layers, e.g. ToyModel.no_grad_fixed_param */
  char name[DDP_NAME_MAX];
  int64_t numel;
  double value;
  bool frozen;
} ddp_extra_param;


typedef struct ddp_schedule {
  char path[1024];
  char *source;             /* the schedule file's text (owned) */

  /* model */
  int model_kind;           /* MODEL_TRANSFORMER or MODEL_MLP (plan.h) */
  char model_name[DDP_NAME_MAX];
  int64_t vocab, context, d_model, d_ff, layers, heads;
  double rope_theta;
  int attention;            /* ATTN_FLASH or ATTN_NAIVE */
  int64_t mlp_in, mlp_out;
  int n_mlp_layers;
  ddp_mlp_layer mlp[DDP_MAX_MLP_LAYERS];
  int n_extra;
  ddp_extra_param extra[DDP_MAX_EXTRA_PARAMS];

  /* data */
  int64_t global_batch;     /* sequences (transformer) or rows (MLP) per step over all ranks */
  int data_kind;            /* DATA_* (plan.h) */
  char data_path[1024];     /* DATA_TOKEN_FILE */
  int64_t data_rows;        /* DATA_RANDOM_DENSE: rows in the generated dataset */
  uint64_t data_seed;

  /* precision */
  int precision;            /* PREC_FP32 / PREC_BF16 */
  int grad_dtype;           /* DT_F32 or DT_BF16 */

  /* optimizer */
  int optimizer;            /* OPTIM_ADAMW / OPTIM_SGD */
  double lr, lr_min, beta1, beta2, eps, weight_decay, clip_norm; /* clip_norm 0: off */
  int lr_schedule;          /* LR_CONSTANT, LR_COSINE (with linear warmup) */
  int64_t lr_warmup, lr_cycle;

  /* parallel layout */
  int ranks;
  int sync;                 /* SYNC_* */
  double bucket_mb;
  bool overlap_backward;    /* issue gradient collectives during the backward (individual, bucketed) */
  bool optimizer_overlap;   /* bucketed: each bucket (ZeRO: group) updated on the update stream during the backward */
  bool single_optimizer_overlap; /* one rank: updates on a side stream during the backward (default true) */
  int shard;                /* SHARD_* */
  bool master_group_last;     /* zero1/2 (master_group = "last"): every parameter the step reads as an fp32 master
                               * in one group after the buckets' (else one beside each bucket) */
  bool gather_before_forward; /* zero1/2 (param_gather = "before_forward"): each group's all-gather at the next
                               * step's start, waited for at its first use, instead of after its update */
  /* ZeRO-3 / FSDP (shard == SHARD_ZERO3; fsdp{} in the schedule). The groups ("units") are the buckets:
   * one per transformer block plus the embedding and the head unless bucket_policy is set. */
  int prefetch_forward;     /* all-gathers issued this many units ahead in the forward (>= 0) */
  int prefetch_backward;    /* ... and in the backward */
  bool reshard_after_forward; /* free a unit's gathered parameters after its forward, gather again in the backward */
  int gather_dtype;         /* DT_F32 or DT_BF16: dtype of the parameter all-gather (bf16 only with bf16 precision) */
  /* Pipelines (pipeline{}; stages 0 when the schedule has none). ranks = stages x replicas (x mesh_tensor);
   * rank r is stage r % stages of replica r / stages (with tensor ranks: r / T % stages, r / T / stages). The model's layers (transformer blocks, or the MLP's layers) are cut
   * into stages x virtual chunks; chunk c runs on stage c % stages; the embedding goes with the first chunk,
   * the final norm, head and loss with the last. */
  int stages;               /* pipeline stages (>= 2), 0: no pipeline */
  int replicas;             /* data-parallel replicas of the pipeline (>= 1) */
  int microbatches;         /* per replica per step (>= 1; divides the replica's batch) */
  int pipe_schedule;        /* PIPE_* */
  int virtual_stages;       /* chunks per stage (interleaved: >= 2; else 1) */
  int nsplit;               /* 0: the compiler balances the layers; else stages x virtual_stages counts */
  int64_t split[DDP_MAX_STAGES]; /* layers per chunk, in chunk order, summing to the model's layers */
  /* The device mesh (mesh = {...}; compiler/frontend/mesh.c): ranks = data x tensor x pipeline. World rank
   * r = (d x pipeline + s) x tensor + t for data replica d, pipeline stage s, tensor rank t: the tensor
   * axis is the fastest, so a tensor group is adjacent ranks (one node's NVLink domain). mesh_tensor > 1
   * splits each transformer block Megatron-style (heads and d_ff) and the vocabulary over the tensor ranks. */
  int mesh_data;            /* data-parallel replicas (>= 1): the gradient sync runs among them */
  int mesh_tensor;          /* tensor-parallel ranks (>= 1; 1: none) */
  int mesh_pipeline;        /* pipeline stages (1 without pipeline{}) */
  bool broadcast_init;      /* parameters broadcast from rank 0 after init */
  bool identical_init;      /* every rank initialises with the same seed */
  /* A user bucket policy (a Lua function in the schedule) or NULL: fills bucket_of[i] with the bucket
   * index of params[i] (0-based, buckets issued in increasing index). units[i] names the fused weight that
   * names[i] is part of (its own name where it is not fused; units NULL: every parameter its own unit). */
  int (*bucket_policy)(void *ctx, const char *const *names, const char *const *units, const uint64_t *bytes, int n,
                       int *bucket_of, char *err, size_t errcap);
  void *bucket_policy_ctx;
  char bucket_field[32];    /* the policy's field in messages: "parallel.buckets" or "parallel.units" */

  /* fused kernels (fusion = ...; compiler/frontend/fusion.c): the front end turns them on by default */
  bool fuse_norm_cast;      /* RMSNORM_BWD_CAST instead of RMSNORM_BWD + CAST of the residual gradient */
  bool fuse_rope;           /* ATTN_BWD_*_ROPE instead of ATTN_BWD_* + the backward ROPE (inverse) */
  bool fuse_attn_bwd;       /* ATTN_BWD_FUSED + ATTN_DQ_STORE instead of ATTN_BWD_DKV + ATTN_BWD_DQ (order-free dq) */

  /* NCCL's communicators (nccl = {...}; compiler/frontend/nccl.c) */
  int nccl_cta_policy;      /* NCCL_CTA_* (vocab.h) */
  int nccl_max_ctas;        /* 1..64, 0: NCCL's own */
  int nccl_register;        /* NCCL_REGISTER_*: the arenas as user buffers (ncclCommRegister) or symmetric windows */
  int nccl_reduce_scatter;  /* NCCL_RS_*: the ZeRO levels' reduce-scatter as NCCL's, or an all-to-all and a sum */
  int nccl_all_reduce;      /* NCCL_AR_*: DDP's bucket all-reduce as NCCL's, or all-to-all, sum, all-gather */
  int nccl_movement;        /* NCCL_MOVE_*: the world's all-to-alls and all-gathers by NCCL or by copy-engine pulls */

  /* stream priorities (streams = {...}; compiler/frontend/streams.c) */
  int update_priority;      /* UPDATE_PRIORITY_* (vocab.h): the streams that carry only updates */
  double update_tail;       /* with "low": the fraction of the last-ready update groups kept at high priority */

  /* run */
  int mode;                 /* MODE_TRAIN, MODE_FORWARD or MODE_FORWARD_BACKWARD (plan.h) */
  int64_t steps, warmup;
  uint64_t seed;
} ddp_schedule;

/* The data-parallel ranks outside a pipeline: the mesh's data axis under tensor parallelism, else every rank. */
static inline int ddp_schedule_data_ranks(const ddp_schedule *s) { return s->mesh_tensor > 1 ? s->mesh_data : s->ranks; }

/* Front end (compiler/frontend/). Loads and validates a schedule; `sets` are "path=value" overrides.
 * On error: returns NULL and writes one line "file:line: field ... " into err. */
ddp_schedule *ddp_schedule_load(const char *path, const char *const *sets, int nsets, char *err,
                                size_t errcap);
void ddp_schedule_free(ddp_schedule *s);
/* The CPU seconds each Lua phase of a schedule may use (default 10; the wall-clock limit is 3 times it).
 * Past it the process prints one line naming the schedule and exits with status 1. */
void ddp_schedule_time_limit(double seconds);
#endif

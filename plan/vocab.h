/* plan/vocab.h: the schedule's enumerated concepts, each one X-macro X(ENUM_ID, "name") giving the enum
 * (in order, then a _COUNT) and, in names.c, its NULL-terminated name table, which both the front end's
 * field parser and the inspector use. */
#ifndef DDP_VOCAB_H
#define DDP_VOCAB_H

#define DDP_MODEL_KINDS(X) X(MODEL_TRANSFORMER, "transformer") X(MODEL_MLP, "mlp")
#define DDP_PRECISIONS(X) X(PREC_FP32, "fp32") X(PREC_BF16, "bf16")
#define DDP_DATA_KINDS(X)                                                                                   \
  X(DATA_RANDOM_TOKENS, "random tokens") X(DATA_TOKEN_FILE, "token file") X(DATA_RANDOM_DENSE, "random dense") \
  X(DATA_PATTERN_TOKENS, "pattern tokens")
#define DDP_OPTIMIZERS(X) X(OPTIM_ADAMW, "adamw") X(OPTIM_SGD, "sgd")
#define DDP_LR_SCHEDULES(X) X(LR_CONSTANT, "constant") X(LR_COSINE, "cosine")
/* Gradient synchronisation; a schedule names every mode but "none" (single rank). */
#define DDP_SYNCS(X)                                                                                  \
  X(SYNC_NONE, "none") X(SYNC_NAIVE, "naive") X(SYNC_FLAT, "flat") X(SYNC_INDIVIDUAL, "individual") \
  X(SYNC_BUCKETED, "bucketed")
/* Sharding: "optimizer" is the owner-broadcast sharded optimizer of the seeds; zero1..zero3 shard, per
 * bucket (or FSDP unit), the optimizer state and fp32 masters, then the gradients, then the parameters. */
#define DDP_SHARDS(X) X(SHARD_NONE, "none") X(SHARD_OPTIMIZER, "optimizer") X(SHARD_ZERO1, "zero1") \
  X(SHARD_ZERO2, "zero2") X(SHARD_ZERO3, "zero3")
#define DDP_ATTENTIONS(X) X(ATTN_FLASH, "flash") X(ATTN_NAIVE, "naive")
#define DDP_OVERLAPS(X) X(OVERLAP_BACKWARD, "backward") X(OVERLAP_NONE, "none")
/* Pipeline schedules (pipeline{}): model parallelism with one microbatch in flight, GPipe, 1F1B
 * (PipeDream-flush), interleaved 1F1B (virtual stages), zero bubble (ZB-H1). */
#define DDP_PIPE_SCHEDULES(X) X(PIPE_SEQUENTIAL, "sequential") X(PIPE_GPIPE, "gpipe") X(PIPE_1F1B, "1f1b") \
  X(PIPE_INTERLEAVED, "interleaved") X(PIPE_ZERO_BUBBLE, "zero_bubble")

/* NCCL's CTA policy for the plan's communicators (nccl = { cta_policy = ... }; ncclConfig_t.CTAPolicy). */
#define DDP_NCCL_CTA_POLICIES(X) X(NCCL_CTA_DEFAULT, "default") X(NCCL_CTA_EFFICIENCY, "efficiency") \
  X(NCCL_CTA_ZERO, "zero")

/* How the arenas are registered with NCCL's communicators (nccl = { register = ... }): not at all, as user
 * buffers (ncclCommRegister), or allocated by ncclMemAlloc and registered as symmetric windows
 * (ncclCommWindowRegister). */
#define DDP_NCCL_REGISTERS(X) X(NCCL_REGISTER_NONE, "none") X(NCCL_REGISTER_BUFFERS, "buffers") \
  X(NCCL_REGISTER_WINDOW, "window")

/* How the ZeRO levels reduce-scatter a group's gradients (nccl = { reduce_scatter = ... }): NCCL's
 * reduce-scatter, or an all-to-all of the group into a receive buffer (zero.received) and a sum of the W
 * received chunks into the rank's slice (SUM_CHUNKS): the all-to-all is data movement only, which NCCL 2.28
 * runs on the copy engines with the zero-CTA policy on symmetric windows, where its reduce-scatter takes SMs. */
#define DDP_NCCL_REDUCE_SCATTERS(X) X(NCCL_RS_COLLECTIVE, "nccl") X(NCCL_RS_ALLTOALL, "alltoall")
/* How data parallelism without ZeRO all-reduces its gradient buckets (nccl = { all_reduce = ... }): NCCL's
 * all-reduce, or the same three steps as the all-to-all reduce-scatter plus an in-place all-gather of the
 * summed chunks (both NCCL's copy-engine kind on windows with the zero-CTA policy). */
#define DDP_NCCL_ALL_REDUCES(X) X(NCCL_AR_COLLECTIVE, "nccl") X(NCCL_AR_ALLTOALL, "alltoall") X(NCCL_AR_PEER, "peer") X(NCCL_AR_PEER_COPY, "peer_copy")
/* Who moves the data of the collectives that only move data, the all-to-alls and all-gathers of the world
 * (nccl = { movement = ... }): NCCL, or the copy engines pulling from the peers' memory through CUDA IPC
 * (op_slots.h COLL_I_PATH). */
#define DDP_NCCL_MOVEMENTS(X) X(NCCL_MOVE_COLLECTIVE, "nccl") X(NCCL_MOVE_PEER_COPY, "peer_copy")

/* The priority of the streams that carry only optimizer updates (streams = { update_priority = ... }). */
#define DDP_UPDATE_PRIORITIES(X) X(UPDATE_PRIORITY_EQUAL, "equal") X(UPDATE_PRIORITY_LOW, "low")

#define DDP_VOCAB_ID(id, name) id,
enum { DDP_MODEL_KINDS(DDP_VOCAB_ID) MODEL_COUNT };
enum { DDP_PRECISIONS(DDP_VOCAB_ID) PREC_COUNT };
enum { DDP_DATA_KINDS(DDP_VOCAB_ID) DATA_COUNT };
enum { DDP_OPTIMIZERS(DDP_VOCAB_ID) OPTIM_COUNT };
enum { DDP_LR_SCHEDULES(DDP_VOCAB_ID) LR_COUNT };
enum { DDP_SYNCS(DDP_VOCAB_ID) SYNC_COUNT };
enum { DDP_SHARDS(DDP_VOCAB_ID) SHARD_COUNT };
enum { DDP_ATTENTIONS(DDP_VOCAB_ID) ATTN_COUNT };
enum { DDP_OVERLAPS(DDP_VOCAB_ID) OVERLAP_COUNT };
enum { DDP_PIPE_SCHEDULES(DDP_VOCAB_ID) PIPE_COUNT };
enum { DDP_NCCL_CTA_POLICIES(DDP_VOCAB_ID) NCCL_CTA_COUNT };
enum { DDP_UPDATE_PRIORITIES(DDP_VOCAB_ID) UPDATE_PRIORITY_COUNT };
enum { DDP_NCCL_REGISTERS(DDP_VOCAB_ID) NCCL_REGISTER_COUNT };
enum { DDP_NCCL_REDUCE_SCATTERS(DDP_VOCAB_ID) NCCL_RS_COUNT };
enum { DDP_NCCL_ALL_REDUCES(DDP_VOCAB_ID) NCCL_AR_COUNT };
enum { DDP_NCCL_MOVEMENTS(DDP_VOCAB_ID) NCCL_MOVE_COUNT };
#undef DDP_VOCAB_ID

/* NULL-terminated name tables, indexed by the enum. */
extern const char *const ddp_model_kind_names[], *const ddp_precision_names[], *const ddp_data_kind_names[],
    *const ddp_optimizer_names[], *const ddp_lr_schedule_names[], *const ddp_sync_names[], *const ddp_shard_names[],
    *const ddp_attention_names[], *const ddp_overlap_names[], *const ddp_pipe_schedule_names[],
    *const ddp_nccl_cta_policy_names[], *const ddp_update_priority_names[], *const ddp_nccl_register_names[],
    *const ddp_nccl_reduce_scatter_names[], *const ddp_nccl_all_reduce_names[], *const ddp_nccl_movement_names[];
/* names[i], or "?" when i is outside [0, count). */
const char *ddp_vocab_name(const char *const *names, int count, long long i);
#define ddp_sync_name(s) ddp_vocab_name(ddp_sync_names, SYNC_COUNT, (s))
#endif

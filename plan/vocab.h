/* plan/vocab.h: the schedule's enumerated concepts, each one X-macro X(ID, "name") giving the enum
 * (PREFIX_ID, in order, then PREFIX_COUNT) and, in names.c, its NULL-terminated name table, which both
 * the front end's field parser and the inspector use. */
#ifndef DDP_VOCAB_H
#define DDP_VOCAB_H

#define DDP_MODEL_KINDS(X) X(TRANSFORMER, "transformer") X(MLP, "mlp")
#define DDP_PRECISIONS(X) X(FP32, "fp32") X(BF16, "bf16")
#define DDP_DATA_KINDS(X)                                                                    \
  X(RANDOM_TOKENS, "random tokens") X(TOKEN_FILE, "token file") X(RANDOM_DENSE, "random dense") \
  X(PATTERN_TOKENS, "pattern tokens")
#define DDP_OPTIMIZERS(X) X(ADAMW, "adamw") X(SGD, "sgd")
#define DDP_LR_SCHEDULES(X) X(CONSTANT, "constant") X(COSINE, "cosine")
/* Gradient synchronisation; a schedule names every mode but "none" (single rank). */
#define DDP_SYNCS(X) \
  X(NONE, "none") X(NAIVE, "naive") X(FLAT, "flat") X(INDIVIDUAL, "individual") X(BUCKETED, "bucketed")
#define DDP_SHARDS(X) X(NONE, "none") X(OPTIMIZER, "optimizer") X(ZERO1, "zero1")
#define DDP_ATTENTIONS(X) X(FLASH, "flash") X(NAIVE, "naive")

#define DDP_VOCAB_ENUM(prefix, list)  \
  enum {                              \
    list(DDP_VOCAB_ENUM_##prefix)     \
    prefix##_COUNT                    \
  }
#define DDP_VOCAB_ENUM_MODEL(id, name) MODEL_##id,
#define DDP_VOCAB_ENUM_PREC(id, name) PREC_##id,
#define DDP_VOCAB_ENUM_DATA(id, name) DATA_##id,
#define DDP_VOCAB_ENUM_OPTIM(id, name) OPTIM_##id,
#define DDP_VOCAB_ENUM_LR(id, name) LR_##id,
#define DDP_VOCAB_ENUM_SYNC(id, name) SYNC_##id,
#define DDP_VOCAB_ENUM_SHARD(id, name) SHARD_##id,
#define DDP_VOCAB_ENUM_ATTN(id, name) ATTN_##id,
DDP_VOCAB_ENUM(MODEL, DDP_MODEL_KINDS);
DDP_VOCAB_ENUM(PREC, DDP_PRECISIONS);
DDP_VOCAB_ENUM(DATA, DDP_DATA_KINDS);
DDP_VOCAB_ENUM(OPTIM, DDP_OPTIMIZERS);
DDP_VOCAB_ENUM(LR, DDP_LR_SCHEDULES);
DDP_VOCAB_ENUM(SYNC, DDP_SYNCS);
DDP_VOCAB_ENUM(SHARD, DDP_SHARDS);
DDP_VOCAB_ENUM(ATTN, DDP_ATTENTIONS);

/* NULL-terminated name tables, indexed by the enum. */
extern const char *const ddp_model_kind_names[], *const ddp_precision_names[], *const ddp_data_kind_names[],
    *const ddp_optimizer_names[], *const ddp_lr_schedule_names[], *const ddp_sync_names[], *const ddp_shard_names[],
    *const ddp_attention_names[];
/* names[i], or "?" when i is outside [0, count). */
const char *ddp_vocab_name(const char *const *names, int count, long long i);
#define ddp_sync_name(s) ddp_vocab_name(ddp_sync_names, SYNC_COUNT, (s))
#endif

/* plan/names.c: the name tables of the plan vocabulary (dtypes, kernel ops, opcodes, ranges, init kinds,
 * arenas, timers, step modes, and the schedule vocabulary), every one generated from its X-macro in
 * dtype.h, ops.h, instr.h, plan.h and vocab.h. Lookups by index return "?" when out of range; lookups
 * by name return -1 when unknown. */
#include "plan.h"
#include <string.h>

static const char *name_at(const char *const *table, int count, int i) {
  return (i >= 0 && i < count) ? table[i] : "?";
}

static int index_of(const char *const *table, int count, const char *name) {
  if (!name) return -1;
  for (int i = 0; i < count; i++)
    if (strcmp(table[i], name) == 0) return i;
  return -1;
}

/* dtypes */
#define DT_NAME(id, name, size) name,
#define DT_SIZE(id, name, size) size,
static const char *const dtype_names[DT_COUNT] = {DDP_DTYPES(DT_NAME)};
static const size_t dtype_sizes[DT_COUNT] = {DDP_DTYPES(DT_SIZE)};
#undef DT_NAME
#undef DT_SIZE
size_t ddp_dtype_size(int dt) { return (dt >= 0 && dt < DT_COUNT) ? dtype_sizes[dt] : 0; }
const char *ddp_dtype_name(int dt) { return name_at(dtype_names, DT_COUNT, dt); }
int ddp_dtype_from_name(const char *name) { return index_of(dtype_names, DT_COUNT, name); }

/* kernel ops */
#define OP_ID(id, file, entry, syn) #id,
#define OP_FILE(id, file, entry, syn) file,
#define OP_ENTRY(id, file, entry, syn) #entry,
#define OP_SYN(id, file, entry, syn) syn,
static const char *const op_names[OP_COUNT] = {DDP_KERNEL_OPS(OP_ID)};
static const char *const op_templates[OP_COUNT] = {DDP_KERNEL_OPS(OP_FILE)};
static const char *const op_entries[OP_COUNT] = {DDP_KERNEL_OPS(OP_ENTRY)};
static const char *const op_synopses[OP_COUNT] = {DDP_KERNEL_OPS(OP_SYN)};
#undef OP_ID
#undef OP_FILE
#undef OP_ENTRY
#undef OP_SYN
const char *ddp_op_name(int op) { return name_at(op_names, OP_COUNT, op); }
const char *ddp_op_template(int op) { return name_at(op_templates, OP_COUNT, op); }
const char *ddp_op_entry(int op) { return name_at(op_entries, OP_COUNT, op); }
const char *ddp_op_synopsis(int op) { return name_at(op_synopses, OP_COUNT, op); }
int ddp_op_from_name(const char *name) { return index_of(op_names, OP_COUNT, name); }

/* opcodes, ranges, init kinds */
#define PAIR_NAME(id, name) name,
static const char *const opcode_names[I_COUNT] = {DDP_OPCODES(PAIR_NAME)};
static const char *const range_names[RANGE_COUNT] = {DDP_RANGES(PAIR_NAME)};
static const char *const init_names[INIT_COUNT] = {DDP_INITS(PAIR_NAME)};
static const char *const arena_names[ARENA_COUNT] = {DDP_ARENAS(PAIR_NAME)};
static const char *const timer_names[TIMER_COUNT] = {DDP_TIMERS(PAIR_NAME)};
static const char *const mode_names[MODE_COUNT] = {DDP_MODES(PAIR_NAME)};
#undef PAIR_NAME
const char *ddp_opcode_name(int opcode) { return name_at(opcode_names, I_COUNT, opcode); }
int ddp_opcode_from_name(const char *name) { return index_of(opcode_names, I_COUNT, name); }
const char *ddp_range_name(int r) { return name_at(range_names, RANGE_COUNT, r); }
const char *ddp_init_name(int k) { return name_at(init_names, INIT_COUNT, k); }
int ddp_init_from_name(const char *name) { return index_of(init_names, INIT_COUNT, name); }
const char *ddp_arena_name(int a) { return name_at(arena_names, ARENA_COUNT, a); }
const char *ddp_timer_name(int t) { return name_at(timer_names, TIMER_COUNT, t); }

const char *ddp_stream_name(uint32_t s) {
  return s == STREAM_COMPUTE ? "compute" : s == STREAM_COMM ? "comm" : "aux";
}
const char *ddp_mode_name(int m) { return name_at(mode_names, MODE_COUNT, m); }

/* the schedule vocabulary (vocab.h) */
#define VOCAB_NAME(id, name) name,
const char *const ddp_model_kind_names[] = {DDP_MODEL_KINDS(VOCAB_NAME) NULL};
const char *const ddp_precision_names[] = {DDP_PRECISIONS(VOCAB_NAME) NULL};
const char *const ddp_data_kind_names[] = {DDP_DATA_KINDS(VOCAB_NAME) NULL};
const char *const ddp_optimizer_names[] = {DDP_OPTIMIZERS(VOCAB_NAME) NULL};
const char *const ddp_lr_schedule_names[] = {DDP_LR_SCHEDULES(VOCAB_NAME) NULL};
const char *const ddp_sync_names[] = {DDP_SYNCS(VOCAB_NAME) NULL};
const char *const ddp_shard_names[] = {DDP_SHARDS(VOCAB_NAME) NULL};
const char *const ddp_attention_names[] = {DDP_ATTENTIONS(VOCAB_NAME) NULL};
const char *const ddp_overlap_names[] = {DDP_OVERLAPS(VOCAB_NAME) NULL};
const char *const ddp_pipe_schedule_names[] = {DDP_PIPE_SCHEDULES(VOCAB_NAME) NULL};
const char *const ddp_nccl_cta_policy_names[] = {DDP_NCCL_CTA_POLICIES(VOCAB_NAME) NULL};
const char *const ddp_update_priority_names[] = {DDP_UPDATE_PRIORITIES(VOCAB_NAME) NULL};
const char *const ddp_nccl_register_names[] = {DDP_NCCL_REGISTERS(VOCAB_NAME) NULL};
const char *const ddp_nccl_reduce_scatter_names[] = {DDP_NCCL_REDUCE_SCATTERS(VOCAB_NAME) NULL};
const char *const ddp_nccl_all_reduce_names[] = {DDP_NCCL_ALL_REDUCES(VOCAB_NAME) NULL};
const char *const ddp_nccl_movement_names[] = {DDP_NCCL_MOVEMENTS(VOCAB_NAME) NULL};
#undef VOCAB_NAME
const char *ddp_vocab_name(const char *const *names, int count, long long i) {
  return i >= 0 && i < count ? names[i] : "?";
}

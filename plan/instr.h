/* plan/instr.h: the instruction set of a plan, defined once. The writer, the reader, `ddpc inspect`, the
 * verifier and both executors iterate this table; adding an instruction is one entry here plus its
 * execution in runtime/ref and runtime/cuda (each executor's dispatch table is built from this X-macro,
 * so a missing execution is a compile error).
 *
 * The operand slots of every opcode (p = buffer references, i = integers, f = floats) are named and
 * documented in plan/op_slots.h (GEMM_*, MEMSET_*, COPY_*, EVENT_*, COLL_*, RANGE_PUSH_*, TIMER_*,
 * LOAD_BATCH_*, INIT_TENSOR_*); KERNEL carries op, kernel (kernel table index), grid/block/smem and the
 * kernel op's own slots.
 */
#ifndef DDP_INSTR_H
#define DDP_INSTR_H
#include "ops.h"
#include <stdint.h>

#define DDP_OPCODES(X)                 \
  X(KERNEL, "kernel")                  \
  X(GEMM, "gemm")                      \
  X(MEMSET, "memset")                  \
  X(COPY, "copy")                      \
  X(EVENT_RECORD, "record")            \
  X(EVENT_WAIT, "wait")                \
  X(ALL_REDUCE, "all_reduce")          \
  X(REDUCE_SCATTER, "reduce_scatter")  \
  X(ALL_GATHER, "all_gather")          \
  X(BROADCAST, "broadcast")            \
  X(SEND, "send")                      \
  X(RECV, "recv")                      \
  X(RANGE_PUSH, "range_push")          \
  X(RANGE_POP, "range_pop")            \
  X(TIMER, "timer")                    \
  X(LOAD_BATCH, "load_batch")          \
  X(INIT_TENSOR, "init_tensor")       \
  X(ALL_TO_ALL, "all_to_all")          \
  X(PEER_BARRIER, "peer_barrier")      \
  X(PEER_COPY, "peer_copy")

typedef enum {
#define DDP_OPC_ENUM(id, name) I_##id,
  DDP_OPCODES(DDP_OPC_ENUM)
#undef DDP_OPC_ENUM
  I_COUNT
} ddp_opcode;

typedef enum { REDOP_SUM = 0, REDOP_AVG = 1 } ddp_redop;

#define DDP_RANGES(X) X(STEP, "step") X(FORWARD, "forward") X(BACKWARD, "backward") \
  X(OPTIMIZER, "optimizer") X(LAYER, "layer") X(ATTENTION, "attention") X(COMM, "comm") X(OTHER, "other")
typedef enum {
#define DDP_RANGE_ENUM(id, name) RANGE_##id,
  DDP_RANGES(DDP_RANGE_ENUM)
#undef DDP_RANGE_ENUM
  RANGE_COUNT
} ddp_range;

#define DDP_INITS(X) X(NONE, "none") X(ZEROS, "zeros") X(CONST, "const") \
  X(TRUNC_NORMAL, "trunc_normal") X(UNIFORM, "uniform") X(NORMAL, "normal") X(ROPE_INV_FREQ, "rope_inv_freq")
typedef enum {
#define DDP_INIT_ENUM(id, name) INIT_##id,
  DDP_INITS(DDP_INIT_ENUM)
#undef DDP_INIT_ENUM
  INIT_COUNT
} ddp_init;

/* What a timing point marks. COMM_BEGIN/COMM_END bracket each collective on the communication stream;
 * TP_COMM_BEGIN/TP_COMM_END each tensor-parallel collective, on the compute stream (exposed by nature).
 * MB_FORWARD_BEGIN/END and MB_BACKWARD_BEGIN/END bracket each pipeline microbatch chunk's forward and
 * backward (zero bubble: its input- and weight-gradient parts, each) on the compute stream; where a plan
 * has them, the step's forward and backward times are their sums (plan/step_times.c). */
#define DDP_TIMERS(X) X(STEP_BEGIN, "step_begin") X(FORWARD_END, "forward_end") X(BACKWARD_END, "backward_end") X(COMM_BEGIN, "comm_begin") \
  X(COMM_END, "comm_end") X(OPT_BEGIN, "optimizer_begin") X(STEP_END, "step_end")                           \
  X(MB_FORWARD_BEGIN, "mb_forward_begin") X(MB_FORWARD_END, "mb_forward_end")                               \
  X(MB_BACKWARD_BEGIN, "mb_backward_begin") X(MB_BACKWARD_END, "mb_backward_end")                           \
  X(TP_COMM_BEGIN, "tp_comm_begin") X(TP_COMM_END, "tp_comm_end")
typedef enum {
#define DDP_TIMER_ENUM(id, name) TIMER_##id,
  DDP_TIMERS(DDP_TIMER_ENUM)
#undef DDP_TIMER_ENUM
  TIMER_COUNT
} ddp_timer;
const char *ddp_timer_name(int t);
/* "compute", "comm" for the streams above; "aux" beyond them. */
const char *ddp_stream_name(uint32_t s);

/* Streams every plan has; a plan may name more. */
enum { STREAM_COMPUTE = 0, STREAM_COMM = 1, DDP_DEFAULT_STREAMS = 2 };

/* Sizes both sides agree on: the GEMM workspace tensor the compiler plans and the CUDA executor hands to
 * cuBLASLt (32 MiB, as recommended on Hopper), and the number of partial sums of the gradient-norm
 * reduction (SUMSQ / OPT_SCALARS). */
#define DDP_GEMM_WORKSPACE_BYTES ((int64_t)32 << 20)
#define DDP_SUMSQ_PARTS 1024

/* A buffer operand: a tensor plus a byte offset into it, resolved by the memory planner into an arena and
 * an absolute byte offset, so executors only add the arena's base address. tensor < 0: no buffer. */
typedef struct ddp_bufref {
  int32_t tensor;
  uint32_t arena;
  uint64_t view;   /* byte offset inside the tensor */
  uint64_t offset; /* absolute byte offset inside the arena (tensor offset + view) */
} ddp_bufref;

typedef struct ddp_instr {
  uint16_t opcode;
  uint16_t stream;
  uint16_t op;     /* kernel op (KERNEL) */
  uint16_t flags;
  int32_t kernel;  /* kernel table index (KERNEL), else -1 */
  int32_t name;    /* string table index: op/layer name for ranges, traces and listings, or -1 */
  int32_t layer;   /* model layer index or -1 */
  uint32_t grid[3], block[3], smem;
  uint8_t dt[DDP_MAX_PTRS];
  ddp_bufref p[DDP_MAX_PTRS];
  int64_t i[DDP_MAX_INTS];
  float f[DDP_MAX_FLOATS];
} ddp_instr;

const char *ddp_opcode_name(int opcode);
int ddp_opcode_from_name(const char *name);
const char *ddp_range_name(int r);
const char *ddp_init_name(int k);
int ddp_init_from_name(const char *name);
#endif

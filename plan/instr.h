/* plan/instr.h: the instruction set of a plan, defined once. The writer, the reader, `ddpc inspect`, the
 * verifier and both executors iterate this table; adding an instruction is one entry here plus its
 * execution in runtime/ref and runtime/cuda (each executor's dispatch table is built from this X-macro,
 * so a missing execution is a compile error).
 *
 * Operands, per opcode (p = buffer references, i = integers, f = floats):
 *   KERNEL          op, kernel (kernel table index), grid/block/smem, p/i/f/dt as documented in ops.h
 *   GEMM            D = f0 * op(A) op(B) + f1 * C, row-major. p0 A, p1 B, p2 C (read when f1 != 0),
 *                   p3 D; dt0..dt3; i0 M, i1 N, i2 K, i3 transA, i4 transB, i5 lda, i6 ldb, i7 ldc,
 *                   i8 ldd, i9 batch, i10..i13 batch strides of A, B, C, D (elements); compute in f32.
 *   MEMSET          p0 dst; i0 bytes, i1 byte value
 *   COPY            p0 src, p1 dst; i0 bytes
 *   EVENT_RECORD    i0 event: records on `stream`
 *   EVENT_WAIT      i0 event: `stream` waits for it
 *   ALL_REDUCE      p0 send, p1 recv (may equal), dt0; i0 count, i1 reduction (ddp_redop), i3 comm
 *   REDUCE_SCATTER  p0 send (count*world), p1 recv (count); dt0; i0 count per rank, i1 redop, i3 comm
 *   ALL_GATHER      p0 send (count), p1 recv (count*world); dt0; i0 count per rank, i3 comm
 *   BROADCAST       p0 send, p1 recv; dt0; i0 count, i2 root, i3 comm
 *   SEND / RECV     p0 buffer; dt0; i0 count, i2 peer, i3 comm
 *   RANGE_PUSH      name: a phase or layer range (NVTX, traces); i0 range kind (ddp_range)
 *   RANGE_POP       closes the innermost range on `stream`
 *   TIMER           i0 timer slot, i1 role (ddp_timer): a timing point on `stream` (a CUDA event on the GPU, a
 *                   host clock in the reference), read by the metrics
 *   LOAD_BATCH      p0 inputs, p1 targets: the data source fills them for (step, rank)
 *   INIT_TENSOR     p0 tensor; dt0; i0 init kind (ddp_init), i1 elements, i2 RNG stream id, i3 fan_in;
 *                   f0, f1 parameters (std / bound / constant)
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
  X(INIT_TENSOR, "init_tensor")

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

/* What a timing point marks. COMM_BEGIN/COMM_END bracket each collective on the communication stream. */
#define DDP_TIMERS(X) X(STEP_BEGIN, "step_begin") X(FORWARD_END, "forward_end") X(BACKWARD_END, "backward_end") X(COMM_BEGIN, "comm_begin") \
  X(COMM_END, "comm_end") X(OPT_BEGIN, "optimizer_begin") X(STEP_END, "step_end")
typedef enum {
#define DDP_TIMER_ENUM(id, name) TIMER_##id,
  DDP_TIMERS(DDP_TIMER_ENUM)
#undef DDP_TIMER_ENUM
  TIMER_COUNT
} ddp_timer;
const char *ddp_timer_name(int t);

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

/* plan/access.h: which buffer operands of an instruction it reads and writes, and exactly how many bytes
 * each touches, computed once per op from the op's integer slots and dtypes (plan/op_slots.h). Used by
 * the plan reader (plan_check.c proves every access inside its tensor and arena before anything runs),
 * the compiler's passes (when is a gradient final?), the verifier (is every cross-stream access
 * ordered?) and the liveness planner. */
#ifndef DDP_ACCESS_H
#define DDP_ACCESS_H
#include "plan.h"
#include <stddef.h>

typedef struct ddp_access {
  int slot;
  int write;        /* 1: written (possibly also read), 0: read only */
  uint32_t arena;
  uint64_t begin, end; /* byte range in the arena */
} ddp_access;

/* What an instruction does through one pointer slot. */
typedef struct ddp_slot_use {
  uint8_t used;     /* the instruction reads or writes through this slot */
  uint8_t write;    /* ... and writes */
  uint8_t optional; /* may be null (tensor -1): then it is skipped */
  uint8_t whole;    /* touches its tensor from the view to the end (LOAD_BATCH: the data source fills
                       the meta tokens / targets tensors, whose sizes plan_check proves) */
  uint8_t dtype;    /* elements of this dtype (dt[slot]; dt0 for collectives): it must have a size and
                       equal the tensor's dtype; DT_NONE: untyped bytes (MEMSET, COPY, LOAD_BATCH) */
  uint64_t bytes;   /* bytes touched from the operand's start (its view): the range [0, bytes) covers
                       every element read or written (strided operands: first to last element) */
} ddp_slot_use;

/* Bitmask of the pointer slots a kernel op writes. */
uint32_t ddp_op_write_mask(int op);

/* The exact footprint of every pointer slot of `in` (opcode and kernel op in range, dtypes < DT_COUNT),
 * from its integer slots, dtypes and the world size. Checks every integer slot the footprint depends
 * on: sizes >= 0 (counts, dimensions) or >= 1 (leading dimensions, strides >= the row length), every
 * product free of overflow. Returns 0, or -1 with one phrase naming the slot in why, e.g.
 * "i[6] (ldb) = 3 is less than the row length 8". Unused slots get used = 0. */
int ddp_instr_footprint(const ddp_instr *in, int64_t world, ddp_slot_use use[DDP_MAX_PTRS], char *why,
                        size_t whycap);

/* Fills up to DDP_MAX_PTRS accesses of `in` (resolved offsets required); returns how many: one per used,
 * non-null slot touching at least one byte, [offset, offset + footprint). An instruction whose footprint
 * is invalid (never one the reader accepts) gets the conservative extent: every non-null operand written
 * from its offset to the end of its tensor. */
int ddp_instr_accesses(const ddp_plan *p, int rank, const ddp_instr *in, ddp_access *out);

/* The tensor that owns the memory of t (follows views to the root). */
int32_t ddp_tensor_root(const ddp_plan *p, int32_t t);
/* Does tensor t lie inside tensor of (t == of, or a view chain leading to of)? */
int ddp_tensor_within(const ddp_plan *p, int32_t t, int32_t of);
#endif

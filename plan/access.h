/* plan/access.h: which buffer operands of an instruction it reads and writes, and the byte range each
 * touches in its arena. Used by the compiler's passes (when is a gradient final?), the verifier (is every
 * cross-stream access ordered?) and the liveness planner. */
#ifndef DDP_ACCESS_H
#define DDP_ACCESS_H
#include "plan.h"

typedef struct ddp_access {
  int slot;
  int write;        /* 1: written (possibly also read), 0: read only */
  uint32_t arena;
  uint64_t begin, end; /* byte range in the arena */
} ddp_access;

/* Bitmask of the pointer slots a kernel op writes. */
uint32_t ddp_op_write_mask(int op);
/* Elements a kernel touches through `slot` when the op states it exactly (flat ops over i0 elements),
 * else 0 (the operand's tensor end is used). */
uint64_t ddp_op_slot_elems(const ddp_instr *in, int slot);

/* Fills up to DDP_MAX_PTRS accesses of `in` (resolved offsets required); returns how many. Extents: the
 * exact element count for copies, memsets and collectives; for kernels and GEMMs, from the operand's
 * offset to the end of its tensor (a safe over-approximation). */
int ddp_instr_accesses(const ddp_plan *p, int rank, const ddp_instr *in, ddp_access *out);

/* The tensor that owns the memory of t (follows views to the root). */
int32_t ddp_tensor_root(const ddp_plan *p, int32_t t);
/* Does tensor t lie inside tensor of (t == of, or a view chain leading to of)? */
int ddp_tensor_within(const ddp_plan *p, int32_t t, int32_t of);
#endif

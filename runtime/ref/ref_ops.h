/* runtime/ref/ref_ops.h: the reference (CPU) implementation of every kernel op in plan/ops.h and of GEMM.
 * Plain C, computed in double and rounded to each buffer's dtype on store, deterministic (fixed loop
 * order), single-threaded per call. These are the oracle for the CUDA kernels. */
#ifndef DDP_REF_OPS_H
#define DDP_REF_OPS_H
#include "dtype.h"
#include "ops.h"

typedef void (*ddp_ref_fn)(const ddp_kargs *a, const uint8_t *dt);

#define DDP_REF_DECL(id, file, entry, syn) void ref_##entry(const ddp_kargs *a, const uint8_t *dt);
DDP_KERNEL_OPS(DDP_REF_DECL)
#undef DDP_REF_DECL

/* GEMM with the operand layout of I_GEMM (plan/instr.h): p0 A, p1 B, p2 C, p3 D, ints and floats as there. */
void ref_gemm(const ddp_kargs *a, const uint8_t *dt);

/* Indexed by ddp_op. */
extern const ddp_ref_fn ddp_ref_ops[OP_COUNT];
#endif

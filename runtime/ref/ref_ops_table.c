/* runtime/ref/ref_ops_table.c: the dispatch table from kernel op to reference function, built from the
 * one op list in plan/ops.h (a missing reference function is a link error). */
#include "ref_ops.h"

const ddp_ref_fn ddp_ref_ops[OP_COUNT] = {
#define DDP_REF_ENTRY(id, file, entry, syn) [OP_##id] = ref_##entry,
    DDP_KERNEL_OPS(DDP_REF_ENTRY)
#undef DDP_REF_ENTRY
};

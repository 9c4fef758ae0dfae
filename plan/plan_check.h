/* plan/plan_check.h: private to the plan reader's checks (plan_check.c, plan_check_ranks.c): the
 * validation context, where an instruction is, and the one-line refusal naming it. */
#ifndef DDP_PLAN_CHECK_H
#define DDP_PLAN_CHECK_H
#include "plan_codec.h"

typedef struct vctx {
  const ddp_plan *p;
  const char *path;
  char *err;
  size_t errcap;
} vctx;

/* Where an instruction is, for messages: "rank 1 step instruction 7 (gemm)". */
typedef struct where {
  int64_t rank;
  const char *prog;
  uint32_t index;
  const ddp_instr *in;
} where;

#define IFAIL(w, fmt, ...)                                                                                    \
  ddp_io_fail(c->err, c->errcap, c->path, "invalid: rank %lld %s instruction %u (%s%s%s): " fmt,            \
              (long long)(w)->rank, (w)->prog, (w)->index, ddp_opcode_name((w)->in->opcode),                    \
              (w)->in->opcode == I_KERNEL ? " " : "", (w)->in->opcode == I_KERNEL ? ddp_op_name((w)->in->op) : "", \
              __VA_ARGS__)

/* Cross-rank checks of the init (step = 0) or step program (plan_check_ranks.c). */
int ddp_check_collectives_match(const vctx *c, int step);
int ddp_check_p2p(const vctx *c, int step);
#endif

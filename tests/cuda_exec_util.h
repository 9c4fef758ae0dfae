/* tests/cuda_exec_util.h: building small plans in memory for the CUDA executor tests (tensors laid out
 * back to back, 256-byte aligned, in one arena size shared by every rank), and check helpers. */
#ifndef DDP_TEST_CUDA_EXEC_UTIL_H
#define DDP_TEST_CUDA_EXEC_UTIL_H
#include "plan.h"

extern int cxt_failures;
#define CXT_CHECK(cond, ...)                                   \
  do {                                                         \
    if (!(cond)) {                                             \
      cxt_failures++;                                          \
      fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                            \
      fprintf(stderr, "\n");                                   \
    }                                                          \
  } while (0)

/* A plan of `world` ranks with `nstreams` streams, no kernels, meta.arch "sm_90a". */
ddp_plan *cxt_plan_new(int world, uint32_t nstreams);
/* A [rows, cols] tensor of dtype dt appended to arena `arena` on every rank. */
int32_t cxt_tensor(ddp_plan *p, const char *name, int dt, int arena, int64_t rows, int64_t cols);
/* A buffer operand of tensor t at byte `view`. */
ddp_bufref cxt_ref(const ddp_plan *p, int32_t t, uint64_t view);
/* Appends to rank r's step (or init) program; returns the stored copy. */
ddp_instr *cxt_push(ddp_plan *p, int rank, int init, const ddp_instr *in);
/* One line: no newline inside, not empty. */
int cxt_one_line(const char *s);
#endif

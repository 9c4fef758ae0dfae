/* tests/unit/driver/fake_exec.h: the do-nothing parts of a fake executor for the driver's unit tests
 * (test_run_read.c, test_run_energy.c): a step that runs and syncs at once, writes that go nowhere, no
 * timers and no device memory; a plan for it; and reading back what a run wrote. Each test supplies its own read (and
 * energy). */
#ifndef DDP_FAKE_EXEC_H
#define DDP_FAKE_EXEC_H
#include "exec.h"

int fake_run(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap);
int fake_sync(ddp_exec *x, char *err, size_t errcap);
int fake_write(ddp_exec *x, int32_t tensor, const void *src, char *err, size_t errcap);
int fake_timers(ddp_exec *x, double *ms, char *err, size_t errcap);
int fake_memory(ddp_exec *x, uint64_t *in_use, uint64_t *peak);
/* A training plan of `world` ranks and `steps` steps with no instructions and one tensor, "scalars" (f32,
 * SCALAR_COUNT elements), which is both its loss and its scalars (ddp_plan_free frees it). */
ddp_plan *fake_plan(int world, int64_t steps);
/* The file at path into out (at most cap - 1 bytes, NUL-terminated; "" when it cannot be read), then removes it. */
void fake_take_file(const char *path, char *out, size_t cap);
#endif

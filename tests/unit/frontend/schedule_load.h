/* tests/unit/frontend/schedule_load.h: loading schedules in the front-end tests (test_frontend, test_fsdp,
 * test_pipeline), with the error text of the last load in sched_err. The tests run from $DDP_SOURCE_DIR so
 * that paths, and so messages, are relative to the repository. */
#ifndef DDP_TEST_SCHEDULE_LOAD_H
#define DDP_TEST_SCHEDULE_LOAD_H
#include "schedule.h"

extern char sched_err[4096];

/* The schedule at path with --set overrides; a failed load is a test failure (NULL returned). */
ddp_schedule *load_sets(const char *path, const char *const *sets, int nsets);
ddp_schedule *load(const char *path);
/* The load must fail with one line, exactly `want` (or, if want ends in '*', a line starting with it). */
void expect_err_sets(const char *path, const char *const *sets, int nsets, const char *want);
void expect_err(const char *path, const char *want);
#endif

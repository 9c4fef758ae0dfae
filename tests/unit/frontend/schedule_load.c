/* tests/unit/frontend/schedule_load.c: see schedule_load.h. */
#include "schedule_load.h"
#include <string.h>

#include "check.h"

char sched_err[4096];

ddp_schedule *load_sets(const char *path, const char *const *sets, int nsets) {
  sched_err[0] = 0;
  ddp_schedule *s = ddp_schedule_load(path, sets, nsets, sched_err, sizeof sched_err);
  CHECK(s != NULL, "%s: %s", path, sched_err);
  return s;
}

ddp_schedule *load(const char *path) { return load_sets(path, NULL, 0); }

void expect_err_sets(const char *path, const char *const *sets, int nsets, const char *want) {
  sched_err[0] = 0;
  ddp_schedule *s = ddp_schedule_load(path, sets, nsets, sched_err, sizeof sched_err);
  CHECK(s == NULL, "%s loaded but should fail with: %s", path, want);
  ddp_schedule_free(s);
  CHECK(strchr(sched_err, '\n') == NULL, "%s: error is not one line: %s", path, sched_err);
  size_t n = strlen(want);
  if (n && want[n - 1] == '*')
    CHECK(strncmp(sched_err, want, n - 1) == 0, "%s:\n  got  %s\n  want %s", path, sched_err, want);
  else
    CHECK(strcmp(sched_err, want) == 0, "%s:\n  got  %s\n  want %s", path, sched_err, want);
}

void expect_err(const char *path, const char *want) { expect_err_sets(path, NULL, 0, want); }

/* tests/unit/driver/fake_exec.c: see fake_exec.h. */
#include "fake_exec.h"
#include <stdio.h>

int fake_run(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  (void)x, (void)prog, (void)step, (void)err, (void)errcap;
  return 0;
}
int fake_sync(ddp_exec *x, char *err, size_t errcap) {
  (void)x, (void)err, (void)errcap;
  return 0;
}
int fake_write(ddp_exec *x, int32_t tensor, const void *src, char *err, size_t errcap) {
  (void)x, (void)tensor, (void)src, (void)err, (void)errcap;
  return 0;
}
int fake_timers(ddp_exec *x, double *ms, char *err, size_t errcap) {
  (void)x, (void)ms, (void)err, (void)errcap;
  return 0;
}
int fake_memory(ddp_exec *x, uint64_t *in_use, uint64_t *peak) {
  (void)x;
  *in_use = *peak = 0;
  return 0;
}

void fake_take_file(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(out, 1, cap - 1, f) : 0;
  out[n] = 0;
  if (f) fclose(f);
  remove(path);
}

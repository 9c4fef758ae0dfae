/* tests/unit/driver/fake_exec.c: see fake_exec.h. */
#include "fake_exec.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

ddp_plan *fake_plan(int world, int64_t steps) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = world;
  p->meta.mode = MODE_TRAIN;
  p->meta.steps = steps;
  p->ranks = calloc((size_t)world, sizeof *p->ranks);
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)"scalars";
  t.dtype = DT_F32;
  t.arena = ARENA_IO;
  t.ndim = 1;
  t.shape[0] = SCALAR_COUNT;
  t.base = t.param = -1;
  t.bytes = sizeof(float) * SCALAR_COUNT;
  t.first_use = t.last_use = -1;
  p->meta.loss_tensor = p->meta.scalars_tensor = ddp_plan_add_tensor(p, &t);
  return p;
}

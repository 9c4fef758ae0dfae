/* tests/unit/driver/test_run_read.c: runtime/driver/run.c reads exactly one loss float and SCALAR_COUNT
 * scalar floats whatever tensor the plan's meta names (issue 11: meta.loss_tensor / meta.scalars_tensor
 * pointing at a large tensor overflowed run.c's stack). A hand-built 1-rank plan whose loss and scalars
 * are both a 16 MiB tensor runs one (empty) step through a fake executor; the metrics line must carry the
 * tensor's first element as the loss and element SCALAR_LR as lr. Also: a bf16 tensor is converted, a
 * tensor shorter than SCALAR_COUNT reads zeros past its end, an index out of range is one clear error. */
#include "run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_exec.h"

typedef struct fake {
  ddp_exec x;
  uint8_t *arena;
  uint64_t bytes;
} fake;

static int f_read(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap) {
  (void)err, (void)errcap;
  fake *f = (fake *)x;
  const ddp_tensor *t = &x->plan->tensors[tensor];
  memcpy(dst, f->arena + t->offset, t->bytes); /* the whole tensor, as every executor does */
  return 0;
}
static const ddp_exec_vtbl fake_vtbl = {.name = "fake", .run = fake_run, .sync = fake_sync, .read = f_read,
                                        .write = fake_write, .timers = fake_timers, .memory = fake_memory};

static int32_t add(ddp_plan *p, const char *name, int dt, uint64_t numel) {
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)name;
  t.dtype = (uint8_t)dt;
  t.arena = ARENA_IO;
  t.ndim = 1;
  t.shape[0] = (int64_t)numel;
  t.base = t.param = -1;
  t.bytes = numel * ddp_dtype_size(dt);
  t.first_use = t.last_use = -1;
  return ddp_plan_add_tensor(p, &t);
}

/* Runs one step with meta.loss_tensor = loss, meta.scalars_tensor = sc; returns rc, the metrics in out. */
static int run_one(int dt, uint64_t numel, int64_t loss_override, char *out, size_t outcap, char *err, size_t errcap) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 1;
  p->meta.mode = MODE_TRAIN;
  p->meta.steps = 1;
  p->ranks = calloc(1, sizeof *p->ranks);
  int32_t big = add(p, "big", dt, numel);
  p->meta.loss_tensor = loss_override != -2 ? loss_override : big;
  p->meta.scalars_tensor = big;
  fake f = {.x = {.v = &fake_vtbl, .plan = p, .rank = 0, .world = 1}};
  f.bytes = p->tensors[big].bytes;
  f.arena = calloc(1, f.bytes);
  for (uint64_t i = 0; i < numel; i++) ddp_store(f.arena, dt, (int64_t)i, (double)i + 0.5);
  char metrics[256];
  snprintf(metrics, sizeof metrics, "/tmp/ddp_test_run_read_%ld.jsonl", (long)getpid());
  ddp_run_opts o = {.steps = 1, .metrics_path = metrics, .quiet = true};
  int rc = ddp_run_rank(&f.x, &o, err, errcap);
  fake_take_file(metrics, out, outcap);
  free(f.arena);
  ddp_plan_free(p);
  return rc;
}

int main(void) {
  static char out[8192];
  char err[512] = "", want[64];
  CHECK(run_one(DT_F32, (uint64_t)4 << 20, -2, out, sizeof out, err, sizeof err) == 0, "16 MiB loss tensor: %s", err);
  CHECK_CONTAINS("loss from the first element", out, "\"loss\": 0.5,");
  snprintf(want, sizeof want, "\"lr\": %d.5,", SCALAR_LR);
  CHECK_CONTAINS("lr from element SCALAR_LR", out, want);

  CHECK(run_one(DT_BF16, 1000, -2, out, sizeof out, err, sizeof err) == 0, "bf16 tensor: %s", err);
  CHECK_CONTAINS("bf16 loss converted", out, "\"loss\": 0.5,");

  CHECK(run_one(DT_F32, 1, -2, out, sizeof out, err, sizeof err) == 0, "one-element scalars: %s", err);
  CHECK_CONTAINS("scalars past the end read as 0", out, "\"lr\": 0,");

  CHECK(run_one(DT_F32, 16, 99, out, sizeof out, err, sizeof err) != 0, "a loss index out of range is refused");
  CHECK_CONTAINS("out of range named", err, "tensor index 99 is out of range (1 tensors)");
  return check_report("test_run_read");
}

/* tests/unit/driver/test_run_pipeline.c: runtime/driver/run.c issues the next step before a step's host sum
 * and collects that sum after the next step. A fake executor, rank 0 of 2, logs its calls: R<s> issuing
 * step s, S a sync (the first after the init program), B / F the start and finish of a host sum (A: the whole sum at once, an executor without
 * the two halves). Its step s makes the loss 1 + s, and the fake peer adds 1 to every sum's loss share, so a
 * step's global loss is (1 + s) / 2 + 1; reading the loss after issuing the next step would show in it.
 *  - four steps: S R0 S R1 B S F R2 B S F R3 B S F B F, the metrics lines in order with the global losses;
 *  - the peer asking to stop in the second sum (known after step 3): nothing issued after step 3, its sum
 *    collected at once, the run stopped after step 3 of 5 on every rank alike;
 *  - an executor with only allreduce_host: the same order, each sum whole where the start would be. */
#include "run.h"
#include "stop.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_exec.h"

typedef struct fake {
  ddp_exec x;
  float arena[SCALAR_COUNT];
  char log[512];
  double sum[256]; /* the sum in flight */
  int nsum, sums, stop_at; /* stop_at: the 1-based sum in which the peer asks to stop (0: never) */
} fake;

static void say(fake *f, const char *what) {
  size_t n = strlen(f->log);
  snprintf(f->log + n, sizeof f->log - n, "%s%s", n ? " " : "", what);
}
static int f_run(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  (void)err, (void)errcap;
  fake *f = (fake *)x;
  if (prog != &x->plan->ranks[x->rank].step) return 0; /* the init program */
  char w[24];
  snprintf(w, sizeof w, "R%lld", (long long)step);
  say(f, w);
  f->arena[0] = 1.0f + (float)step;
  return 0;
}
static int f_sync(ddp_exec *x, char *err, size_t errcap) {
  (void)err, (void)errcap;
  say((fake *)x, "S");
  return 0;
}
static int f_read(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap) {
  (void)err, (void)errcap, (void)tensor;
  memcpy(dst, ((fake *)x)->arena, sizeof ((fake *)x)->arena);
  return 0;
}
/* The peer's part of a sum: 1 to the loss share, and its stop request in sum number stop_at. */
static void peer_adds(fake *f, double *v) {
  f->sums++;
  v[0] += 1.0;
  if (f->sums == f->stop_at) v[1] += 1.0;
}
static int f_start(ddp_exec *x, const double *v, int n, char *err, size_t errcap) {
  fake *f = (fake *)x;
  if (f->nsum || n > 256) return snprintf(err, errcap, "a sum started while one is in flight"), -1;
  memcpy(f->sum, v, sizeof *v * (size_t)n);
  f->nsum = n;
  say(f, "B");
  return 0;
}
static int f_finish(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  fake *f = (fake *)x;
  if (f->nsum != n) return snprintf(err, errcap, "finish of %d values, %d in flight", n, f->nsum), -1;
  memcpy(v, f->sum, sizeof *v * (size_t)n);
  f->nsum = 0;
  peer_adds(f, v);
  say(f, "F");
  return 0;
}
static int f_whole(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  (void)n, (void)err, (void)errcap;
  peer_adds((fake *)x, v);
  say((fake *)x, "A");
  return 0;
}
static const ddp_exec_vtbl halves = {.name = "fake", .run = f_run, .sync = f_sync, .read = f_read,
                                     .write = fake_write, .timers = fake_timers, .memory = fake_memory,
                                     .allreduce_host = f_whole, .allreduce_host_start = f_start,
                                     .allreduce_host_finish = f_finish};
static const ddp_exec_vtbl whole = {.name = "fake", .run = f_run, .sync = f_sync, .read = f_read,
                                    .write = fake_write, .timers = fake_timers, .memory = fake_memory,
                                    .allreduce_host = f_whole};

/* `steps` steps of a hand-built plan as rank 0 of 2; the metrics file into out. */
static int run(fake *f, const ddp_exec_vtbl *vt, int steps, char *out, size_t outcap, char *err, size_t errcap) {
  ddp_plan *p = fake_plan(2, steps);
  f->x = (ddp_exec){.v = vt, .plan = p, .rank = 0, .world = 2};
  char metrics[256];
  snprintf(metrics, sizeof metrics, "/tmp/ddp_test_run_pipeline_%ld.jsonl", (long)getpid());
  ddp_run_opts o = {.steps = steps, .metrics_path = metrics, .quiet = true};
  ddp_stop_reset();
  int rc = ddp_run_rank(&f->x, &o, err, errcap);
  fake_take_file(metrics, out, outcap);
  ddp_plan_free(p);
  return rc;
}

/* How many metrics lines out holds, and whether step k's (1-based) says loss `loss`. */
static int lines(const char *out) {
  int n = 0;
  for (const char *c = strstr(out, "{\"step\": "); c; c = strstr(c + 1, "{\"step\": ")) n++;
  return n;
}
static int step_loss(const char *out, int k, const char *loss) {
  char want[96];
  snprintf(want, sizeof want, "{\"step\": %d, \"loss\": %s, ", k, loss);
  return strstr(out, want) != NULL;
}

int main(void) {
  static char out[32768];
  char err[512] = "";
  static fake f;

  memset(&f, 0, sizeof f);
  CHECK(run(&f, &halves, 4, out, sizeof out, err, sizeof err) == 0, "%s", err);
  CHECK(!strcmp(f.log, "S R0 S R1 B S F R2 B S F R3 B S F B F"), "four steps: the calls were %s", f.log);
  CHECK(lines(out) == 4, "four steps: %d metrics lines", lines(out));
  CHECK(step_loss(out, 1, "1.5") && step_loss(out, 2, "2") && step_loss(out, 3, "2.5") && step_loss(out, 4, "3"),
        "four steps: the global losses in order (1.5, 2, 2.5, 3):\n%s", out);
  CHECK(strstr(out, "\"loss_rank0\": 4,") != NULL, "step 4's own loss is 4:\n%s", out);

  memset(&f, 0, sizeof f);
  f.stop_at = 2;
  CHECK(run(&f, &halves, 5, out, sizeof out, err, sizeof err) == 0, "%s", err);
  CHECK(!strcmp(f.log, "S R0 S R1 B S F R2 B S F B F"), "a stop in the second sum: the calls were %s", f.log);
  CHECK(lines(out) == 3 && step_loss(out, 3, "2.5"), "a stop in the second sum: three steps reported:\n%s", out);
  CHECK(ddp_stop_exit_status() == 128 + 15, "the stop is honoured (exit status %d)", ddp_stop_exit_status());
  ddp_stop_reset();

  memset(&f, 0, sizeof f);
  CHECK(run(&f, &whole, 4, out, sizeof out, err, sizeof err) == 0, "%s", err);
  CHECK(!strcmp(f.log, "S R0 S R1 A S R2 A S R3 A S A"), "whole sums: the calls were %s", f.log);
  CHECK(lines(out) == 4 && step_loss(out, 1, "1.5") && step_loss(out, 4, "3"), "whole sums: the losses:\n%s", out);
  return check_report("test_run_pipeline");
}

/* tests/unit/driver/test_run_stop.c: where in a run a stop signal ends it (runtime/driver/run.c with the
 * handlers of stop.h; docs/CHECKPOINTS.md, "SIGTERM and SIGINT"). A fake executor raises SIGTERM while step
 * k of 5 (0-based) is issued. The ranks learn of it from that step's host sum, which is read once the next
 * step is issued, so the run stops after step k + 2 (1-based): its metrics end there and the exit status is
 * 143. Where that is the last step or past it (k = 3, 4) the run ends as it would have, exit 0. (Mutation
 * testing moved the boundary by a step and no test noticed.) */
#include "run.h"
#include "stop.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_exec.h"

static int64_t g_raise_at; /* the step (0-based) during which SIGTERM is raised */

static int f_run(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap) {
  if (prog == &x->plan->ranks[0].step && step == g_raise_at) raise(SIGTERM);
  return fake_run(x, prog, step, err, errcap);
}
static int f_read(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap) {
  (void)err, (void)errcap;
  memset(dst, 0, x->plan->tensors[tensor].bytes); /* a loss of 0: finite */
  return 0;
}
static const ddp_exec_vtbl fake_vtbl = {.name = "fake", .run = f_run, .sync = fake_sync, .read = f_read,
                                        .write = fake_write, .timers = fake_timers, .memory = fake_memory};

/* Lines of step metrics in text (every line with a "step" key). */
static int step_lines(const char *text) {
  int n = 0;
  for (const char *s = text; (s = strstr(s, "{\"step\": ")); s++) n++;
  return n;
}

int main(void) {
  enum { STEPS = 5 };
  ddp_stop_install();
  char metrics[256], out[16384], err[512];
  snprintf(metrics, sizeof metrics, "/tmp/ddp_test_run_stop_%ld.jsonl", (long)getpid());
  for (int k = 0; k < STEPS; k++) {
    ddp_stop_reset();
    g_raise_at = k;
    ddp_plan *p = fake_plan(1, STEPS);
    ddp_exec x = {.v = &fake_vtbl, .plan = p, .rank = 0, .world = 1};
    ddp_run_opts o = {.steps = STEPS, .metrics_path = metrics, .quiet = true};
    err[0] = 0;
    int rc = ddp_run_rank(&x, &o, err, sizeof err);
    fake_take_file(metrics, out, sizeof out);
    CHECK(rc == 0, "SIGTERM in step %d: %s", k, err);
    const int ends = k + 2 >= STEPS; /* the stop would come after the last step */
    CHECK_INT(ends ? "a SIGTERM in the last two steps: every step's line" : "a SIGTERM: lines to the step after it",
              ends ? STEPS : k + 2, step_lines(out));
    CHECK_INT(ends ? "a SIGTERM in the last two steps: exit 0" : "a SIGTERM: exit 143", ends ? 0 : 143,
              ddp_stop_exit_status());
    ddp_plan_free(p);
  }
  return check_report("test_run_stop");
}

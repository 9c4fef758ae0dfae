/* tests/unit/driver/test_step_times_pipe.c: ddp_step_times_from_timers with a pipeline stage's per-microbatch
 * timing points (MB_FORWARD_* / MB_BACKWARD_*, plan/instr.h): forward and backward are the sums of the
 * brackets, not FORWARD_END - STEP_BEGIN; a plan without them keeps the phase times it had; an END without
 * its BEGIN adds nothing. */
#include "check.h"
#include "exec.h"
#include <math.h>
#include <stdlib.h>

static void timer(ddp_plan *p, int role, uint32_t slot) {
  ddp_instr in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[TIMER_I_SLOT] = slot;
  in.i[TIMER_I_ROLE] = role;
  ddp_program_push(&p->ranks[0].step, &in);
  p->ranks[0].ntimers = slot + 1;
}

/* The timers (role, ms) in program order, each its own slot; the step's times. */
static ddp_step_times times(const int *roles, const double *ms, int n) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 1;
  p->ranks = calloc(1, sizeof *p->ranks);
  for (int i = 0; i < n; i++) timer(p, roles[i], (uint32_t)i);
  ddp_step_times t;
  ddp_step_times_from_timers(p, 0, ms, &t);
  ddp_plan_free(p);
  return t;
}

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

int main(void) {
  /* GPipe stage 0, m = 2: F0 0..1, F1 1..2, (wait) B1 5..7, B0 7..9, optimizer 9..10 */
  const int pipe[] = {TIMER_STEP_BEGIN, TIMER_MB_FORWARD_BEGIN, TIMER_MB_FORWARD_END, TIMER_MB_FORWARD_BEGIN,
                      TIMER_MB_FORWARD_END, TIMER_FORWARD_END, TIMER_MB_BACKWARD_BEGIN, TIMER_MB_BACKWARD_END,
                      TIMER_MB_BACKWARD_BEGIN, TIMER_MB_BACKWARD_END, TIMER_BACKWARD_END, TIMER_OPT_BEGIN,
                      TIMER_STEP_END};
  const double pms[] = {0, 0, 1, 1, 2, 2, 5, 7, 7, 9, 9, 9, 10};
  ddp_step_times t = times(pipe, pms, 13);
  CHECK(NEAR(t.forward_ms, 2), "pipeline forward = the microbatch sum 2 ms, got %g", t.forward_ms);
  CHECK(NEAR(t.backward_ms, 4), "pipeline backward = 4 ms (not BACKWARD_END - FORWARD_END = 7), got %g", t.backward_ms);
  CHECK(NEAR(t.optimizer_ms, 1) && NEAR(t.step_ms, 10), "optimizer %g step %g", t.optimizer_ms, t.step_ms);

  /* the same without microbatch points: the phase times as before */
  const int plain[] = {TIMER_STEP_BEGIN, TIMER_FORWARD_END, TIMER_BACKWARD_END, TIMER_OPT_BEGIN, TIMER_STEP_END};
  const double plms[] = {0, 2, 9, 9, 10};
  t = times(plain, plms, 5);
  CHECK(NEAR(t.forward_ms, 2) && NEAR(t.backward_ms, 7), "plain: forward %g backward %g", t.forward_ms, t.backward_ms);

  /* an END without its BEGIN adds nothing; a weight-gradient bracket adds to the backward */
  const int odd[] = {TIMER_STEP_BEGIN, TIMER_MB_BACKWARD_END, TIMER_MB_FORWARD_BEGIN, TIMER_MB_FORWARD_END,
                     TIMER_MB_BACKWARD_BEGIN, TIMER_MB_BACKWARD_END, TIMER_MB_BACKWARD_BEGIN, TIMER_MB_BACKWARD_END,
                     TIMER_STEP_END};
  const double oms[] = {0, 3, 4, 5, 5, 7, 8, 8.5, 9};
  t = times(odd, oms, 9);
  CHECK(NEAR(t.forward_ms, 1) && NEAR(t.backward_ms, 2.5), "odd: forward %g backward %g", t.forward_ms, t.backward_ms);
  CHECK_STR("timer name", ddp_timer_name(TIMER_MB_BACKWARD_END), "mb_backward_end");
  return check_report("test_step_times_pipe");
}

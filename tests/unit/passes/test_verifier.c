/* tests/unit/passes/test_verifier.c: the compile-time race and deadlock checks. A correct 2-rank bucketed plan
 * (overlapping the backward) verifies; deliberately broken copies are refused with a line naming the
 * instructions: a missing event wait (comm reads a gradient still being written), a wait on an event
 * never recorded before, a collective whose size differs between ranks, collectives in another order. */
#include "check.h"
#include "compile.h"
#include "schedule.h"
#include "verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_refused(const ddp_plan *p, const char *what, const char *needle) {
  char err[4096];
  if (!CHECK(ddp_verify(p, err, sizeof err) != 0, "%s: the verifier accepted it", what)) return;
  if (CHECK(strstr(err, needle), "%s: message lacks '%s': %s", what, needle, err))
    printf("refused (%s): %s\n", what, err);
}

static void remove_instr(ddp_program *prog, uint32_t k) {
  memmove(&prog->v[k], &prog->v[k + 1], sizeof(ddp_instr) * (prog->n - k - 1));
  prog->n--;
}

static ddp_program copy_program(const ddp_program *src) {
  ddp_program c = *src;
  c.v = malloc(sizeof(ddp_instr) * src->n);
  memcpy(c.v, src->v, sizeof(ddp_instr) * src->n);
  c.cap = src->n;
  return c;
}

int main(void) {
  char err[4096], path[2048];
  snprintf(path, sizeof path, "%s/schedules/toy_ddp.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".");
  const char *sets[] = {"parallel.overlap=backward"};
  ddp_schedule *s = ddp_schedule_load(path, sets, 1, err, sizeof err);
  if (!CHECK(s, "%s", err)) return check_report("test_verifier");
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  if (!CHECK(p, "compile: %s", err)) return check_report("test_verifier");
  if (!CHECK(ddp_verify(p, err, sizeof err) == 0, "the correct plan was refused: %s", err))
    return check_report("test_verifier");
  ddp_program *step0 = &p->ranks[0].step, saved = copy_program(step0);
  int collectives = 0;
  for (uint32_t k = 0; k < step0->n; k++) collectives += step0->v[k].opcode == I_ALL_REDUCE;
  if (!CHECK(collectives >= 2, "expected several bucket all-reduces, found %d", collectives))
    return check_report("test_verifier");

  /* 1. the comm stream's first wait removed: its all-reduce races with the backward */
  for (uint32_t k = 0; k < step0->n; k++)
    if (step0->v[k].opcode == I_EVENT_WAIT && step0->v[k].stream == STREAM_COMM) {
      remove_instr(step0, k);
      break;
    }
  expect_refused(p, "missing wait", "unordered access across streams");
  ddp_program_free(step0);
  *step0 = copy_program(&saved);

  /* 2. a wait moved before its record */
  for (uint32_t k = 0; k < step0->n; k++)
    if (step0->v[k].opcode == I_EVENT_RECORD) {
      ddp_instr rec = step0->v[k], wait = step0->v[k + 1];
      if (wait.opcode != I_EVENT_WAIT) continue;
      step0->v[k] = wait;
      step0->v[k + 1] = rec;
      break;
    }
  expect_refused(p, "wait before record", "before any record");
  ddp_program_free(step0);
  *step0 = copy_program(&saved);

  /* 3. rank 1 all-reduces a different size */
  ddp_program *step1 = &p->ranks[1].step, saved1 = copy_program(step1);
  for (uint32_t k = 0; k < step1->n; k++)
    if (step1->v[k].opcode == I_ALL_REDUCE) {
      step1->v[k].i[0] -= 1;
      break;
    }
  expect_refused(p, "size mismatch", "differs between rank 0");
  ddp_program_free(step1);
  *step1 = copy_program(&saved1);

  /* 4. rank 1 issues its first two collectives in the other order */
  int first = -1;
  for (uint32_t k = 0; k < step1->n; k++)
    if (step1->v[k].opcode == I_ALL_REDUCE) {
      if (first < 0) {
        first = (int)k;
      } else {
        ddp_instr t = step1->v[first];
        step1->v[first] = step1->v[k];
        step1->v[k] = t;
        break;
      }
    }
  expect_refused(p, "order mismatch", "differs between rank 0");
  ddp_program_free(step1);
  *step1 = saved1;
  ddp_program_free(&saved);
  ddp_plan_free(p);
  ddp_schedule_free(s);
  if (!check_failed) printf("verifier: correct plan accepted, 4 broken plans refused\n");
  return check_report("test_verifier");
}

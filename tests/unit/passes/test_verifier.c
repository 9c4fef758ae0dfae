/* tests/unit/passes/test_verifier.c: the compile-time race and deadlock checks. A correct 2-rank bucketed plan
 * (overlapping the backward) verifies; deliberately broken copies are refused with a line naming the
 * instructions: a missing event wait (comm reads a gradient still being written), a wait on an event
 * never recorded before, a collective whose size differs between ranks, collectives in another order.
 * nccl.all_reduce = "peer" (updates reading every rank's gradient, peer.c): the plan verifies and passes the
 * reader; refused: an update not ordered after its bucket's barrier (the first bucket's, and a later one's,
 * which then reads before another rank's gradient is final), the step's end not waiting for the last barrier,
 * a gradient range that differs between ranks; and the reader refuses peers other than the world size; with
 * "peer_copy", a copy not ordered after its bucket's barrier. */
#include "check.h"
#include "compile.h"
#include "schedule.h"
#include "verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Index of the `nth` update with peers in prog (-1: none), and of the wait on its stream just before it. */
static int nth_update(const ddp_program *prog, int nth, int *wait) {
  int seen = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode != I_KERNEL || in->op != OP_ADAMW || in->i[ADAMW_I_PEERS] <= 0 || seen++ < nth) continue;
    *wait = -1;
    for (int j = (int)k - 1; j >= 0 && *wait < 0; j--)
      if (prog->v[j].stream == in->stream && prog->v[j].opcode == I_EVENT_WAIT) *wait = j;
    return (int)k;
  }
  return -1;
}

/* Index of the `nth` PEER_COPY (-1: none), and of the wait on its stream just before it. */
static int nth_copy(const ddp_program *prog, int nth, int *wait) {
  int seen = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    if (prog->v[k].opcode != I_PEER_COPY || seen++ < nth) continue;
    *wait = -1;
    for (int j = (int)k - 1; j >= 0 && *wait < 0; j--)
      if (prog->v[j].stream == prog->v[k].stream && prog->v[j].opcode == I_EVENT_WAIT) *wait = j;
    return (int)k;
  }
  return -1;
}

static ddp_plan *peer_plan(const char *mode, ddp_schedule **s) {
  char err[4096], path[2048], set[64];
  snprintf(path, sizeof path, "%s/schedules/tiny_ddp.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".");
  snprintf(set, sizeof set, "nccl.all_reduce=%s", mode);
  const char *sets[] = {"parallel.optimizer_overlap=true", set, "parallel.bucket_mb=0.01"};
  *s = ddp_schedule_load(path, sets, 3, err, sizeof err);
  if (!CHECK(*s, "%s", err)) return NULL;
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(*s, &o, err, sizeof err);
  CHECK(p, "compile (%s): %s", mode, err);
  return p;
}

/* "peer_copy": the plan verifies; a copy not ordered after its bucket's barrier is refused */
static void peer_copy_plans(void) {
  char err[4096];
  ddp_schedule *s = NULL;
  ddp_plan *p = peer_plan("peer_copy", &s);
  if (p && CHECK(ddp_verify(p, err, sizeof err) == 0, "the correct peer_copy plan was refused: %s", err)) {
    ddp_program *step0 = &p->ranks[0].step;
    int wait = -1, k = nth_copy(step0, 2, &wait);
    if (CHECK(k >= 0 && wait >= 0, "no third peer copy, or no wait before it")) {
      remove_instr(step0, (uint32_t)wait);
      expect_refused(p, "peer copy before its barrier", "writes its gradient until peer barrier");
    }
  }
  ddp_plan_free(p);
  ddp_schedule_free(s);
}

static void peer_plans(void) {
  char err[4096];
  ddp_schedule *s = NULL;
  ddp_plan *p = peer_plan("peer", &s);
  if (!p) {
    ddp_schedule_free(s);
    return;
  }
  CHECK(ddp_verify(p, err, sizeof err) == 0, "the correct peer plan was refused: %s", err);
  ddp_program *step0 = &p->ranks[0].step, saved = copy_program(step0);
  int wait = -1, u = nth_update(step0, 2, &wait);
  if (!CHECK(u >= 0 && wait >= 0, "no third update with peers, or no wait before it")) return;

  char out[2100];
  snprintf(out, sizeof out, "/tmp/test_verifier_peer_%d.bin", (int)getpid());
  if (CHECK(ddp_plan_write(p, out, err, sizeof err) == 0, "write: %s", err)) {
    ddp_plan *q = ddp_plan_read(out, err, sizeof err);
    CHECK(q, "the reader refuses the peer plan: %s", err);
    ddp_plan_free(q);
    step0->v[u].i[ADAMW_I_PEERS] = 3; /* on a world of 2 */
    CHECK(ddp_plan_write(p, out, err, sizeof err) == 0, "write: %s", err);
    q = ddp_plan_read(out, err, sizeof err);
    if (CHECK(!q, "the reader accepted an update with 3 peers on 2 ranks") &&
        CHECK(strstr(err, "(peers) = 3, must be 0 or the world size 2"), "reader message: %s", err))
      printf("refused (peers 3 of 2): %s\n", err);
    ddp_plan_free(q);
    step0->v[u].i[ADAMW_I_PEERS] = 2;
    remove(out);
  }

  /* the third update no longer waits for its bucket's barrier: it reads after an earlier one only */
  remove_instr(step0, (uint32_t)wait);
  expect_refused(p, "peer update before its barrier", "writes its gradient until peer barrier");
  ddp_program_free(step0);
  *step0 = copy_program(&saved);
  /* the first update's wait: no barrier before it at all */
  u = nth_update(step0, 0, &wait);
  if (CHECK(u >= 0 && wait >= 0, "no first update with a wait")) {
    remove_instr(step0, (uint32_t)wait);
    expect_refused(p, "peer update before any barrier", "before any peer barrier");
  }
  ddp_program_free(step0);
  *step0 = copy_program(&saved);
  /* the compute stream's last wait (for the update stream, after the last barrier) removed: the next step's
   * backward may overwrite a gradient a peer still reads */
  for (int k = (int)step0->n - 1, done = 0; k >= 0 && !done; k--) {
    if (step0->v[k].opcode != I_EVENT_WAIT || step0->v[k].stream != STREAM_COMPUTE) continue;
    for (int j = k - 1; j >= 0 && !done; j--) /* its record: on the update stream? */
      if (step0->v[j].opcode == I_EVENT_RECORD && step0->v[j].i[EVENT_I_EVENT] == step0->v[k].i[EVENT_I_EVENT]) {
        if (step0->v[j].stream == STREAM_COMPUTE + 2) remove_instr(step0, (uint32_t)k), done = 1;
        break;
      }
  }
  expect_refused(p, "step end before the last barrier", "not ordered after this step's last peer barrier");
  ddp_program_free(step0);
  *step0 = copy_program(&saved);
  /* rank 1's first update names a shorter range */
  ddp_program *step1 = &p->ranks[1].step;
  u = nth_update(step1, 0, &wait);
  if (CHECK(u >= 0, "no update on rank 1")) {
    step1->v[u].i[ADAMW_I_N] -= 4;
    expect_refused(p, "peer ranges differ", "names different gradient ranges");
    step1->v[u].i[ADAMW_I_N] += 4;
  }
  ddp_program_free(&saved);
  ddp_plan_free(p);
  ddp_schedule_free(s);
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
  peer_plans();
  peer_copy_plans();
  if (!check_failed) printf("verifier: correct plans accepted, 9 broken plans refused\n");
  return check_report("test_verifier");
}

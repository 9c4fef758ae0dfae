/* tests/unit/ref/test_p2p.c: SEND/RECV on the reference executor, ranks as threads (issue 13). Hand-built
 * plans (tests/fixtures/p2p_plan.h) on 2 and 3 ranks, every byte of every buffer checked after two steps:
 *   - a ring (f32 forward, bf16 backward, one group), a pairwise exchange both ways (one group, SENDs first:
 *     must not deadlock, as ncclGroupStart/End), several messages between the same pair in FIFO order
 *     (other groupings on the two sides, interleaved senders, a message of 0 elements);
 *   - the same exchange NOT grouped (split by a change of stream, or by another instruction), and a ring
 *     with every rank sending first in groups of its own: the plan reader accepts such a plan (it proves
 *     pairs, not progress: checked on the synthetic fixture plan) and the executor fails every rank within
 *     seconds with one line naming what each waits for, instead of hanging; the ungrouped chain that can
 *     progress (rank 0 sends first, the others receive first) runs;
 *   - a deadlock across kinds (all-reduce before a SEND on one rank, after its RECV on the other) and a
 *     rank that finished while another still waits on it: the same line;
 *   - count and dtype mismatches: both ranks fail with one line naming both instructions, nothing copied;
 *     a third rank waiting in a group gets "collective aborted";
 *   - a peer that fails (ddp_ref_comm_abort) fails the waiting rank promptly;
 *   - a world of one rank, and a rank sending to itself: refused with one line.
 * alarm() bounds the whole test: a hang fails it. */
#include "check.h"
#include "p2p_plan.h"
#include "plan_fixture.h"
#include "test_files.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_cases(int W) {
  p2p_case cases[8];
  int n = p2p_cases(W, cases, 8);
  CHECK_INT("cases", 3, n);
  for (int c = 0; c < n; c++) {
    p2p_job jobs[P2P_MAXW];
    p2p_run_threads(cases[c].p, 200, -1, jobs); /* many steps: races between posting and taking show */
    for (int r = 0; r < W; r++) {
      if (!CHECK(jobs[r].rc == 0, "%s W=%d rank %d: %s", cases[c].name, W, r, jobs[r].err)) continue;
      CHECK_INT(cases[c].name, 0, p2p_check(&cases[c], r, jobs[r].out));
    }
    int msgs = 0;
    for (int i = 0; i < cases[c].nx; i++) msgs += cases[c].x[i].count > 0;
    printf("ok: %s on %d ranks: %d messages, every byte of %d buffers checked\n", cases[c].name, W, msgs, W * P2P_NT);
    p2p_case_free(&cases[c]);
  }
}

/* Every rank fails within seconds with the deadlock line holding every needle. */
static void expect_deadlock(const char *what, ddp_plan *p, const char *n1, const char *n2) {
  p2p_job jobs[P2P_MAXW];
  double t = p2p_run_threads(p, 1, -1, jobs);
  int W = (int)p->meta.world, failed = 0;
  for (int r = 0; r < W; r++) {
    if (!jobs[r].rc) continue;
    failed++;
    CHECK_CONTAINS(what, jobs[r].err, "point-to-point deadlock, no rank can move");
    CHECK_CONTAINS(what, jobs[r].err, "consecutive SEND/RECV on one stream form one group");
    if (n1) CHECK_CONTAINS(what, jobs[r].err, n1);
    if (n2) CHECK_CONTAINS(what, jobs[r].err, n2);
    CHECK(!strchr(jobs[r].err, '\n'), "%s: one line", what);
  }
  CHECK(failed >= 1, "%s: no rank failed", what);
  CHECK(t < 10, "%s: took %.1f s", what, t);
  printf("ok: %s: %d rank(s) failed in %.3f s: %s\n", what, failed, t, jobs[W - 1].rc ? jobs[W - 1].err : jobs[0].err);
  ddp_plan_free(p);
}

static void test_deadlocks(void) {
  p2p_job jobs[P2P_MAXW];
  ddp_plan *p = p2p_exchange(0);
  p2p_run_threads(p, 2, -1, jobs);
  p2p_case c = {.name = "exchange grouped"};
  p2p_expect_copy(&c, 0, 2, 1, 0, 64);
  p2p_expect_copy(&c, 1, 2, 0, 0, 64);
  for (int r = 0; r < 2; r++)
    if (CHECK(jobs[r].rc == 0, "grouped exchange rank %d: %s", r, jobs[r].err)) CHECK_INT("grouped", 0, p2p_check(&c, r, jobs[r].out));
  ddp_plan_free(p);
  expect_deadlock("exchange split by a stream", p2p_exchange(1),
                  "rank 0 step instruction 0 (send \"pp.send.act.mb0\", 64 x f32 to rank 1) waits (group of 1)",
                  "rank 1 step instruction 0 (send \"pp.send.act.mb0\", 64 x f32 to rank 0) waits (group of 1)");
  expect_deadlock("exchange split by an instruction", p2p_exchange(2), "rank 0 step instruction 0 (send",
                  "rank 1 step instruction 0 (send");
  /* a ring of 3, every rank sending first in a group of its own */
  p = p2p_plan_new(3);
  for (int r = 0; r < 3; r++) {
    p2p_push(p, r, I_SEND, (r + 1) % 3, 0, 16, STREAM_COMM, NULL);
    p2p_push_other(p, r);
    p2p_push(p, r, I_RECV, (r + 2) % 3, 2, 16, STREAM_COMM, NULL);
  }
  expect_deadlock("ungrouped ring of 3", p, "rank 2 step instruction 0 (send, 16 x f32 to rank 0)", NULL);
  /* the same ring, but ranks 1 and 2 receive first: a chain that completes */
  p = p2p_plan_new(3);
  c = (p2p_case){.name = "ungrouped chain"};
  for (int r = 0; r < 3; r++) {
    if (r) p2p_push(p, r, I_RECV, (r + 2) % 3, 2, 16, STREAM_COMM, NULL), p2p_push_other(p, r);
    p2p_push(p, r, I_SEND, (r + 1) % 3, 0, 16, STREAM_COMM, NULL);
    if (!r) p2p_push_other(p, r), p2p_push(p, r, I_RECV, 2, 2, 16, STREAM_COMM, NULL);
    p2p_expect_copy(&c, r, 2, (r + 2) % 3, 0, 16);
  }
  p2p_run_threads(p, 2, -1, jobs);
  for (int r = 0; r < 3; r++)
    if (CHECK(jobs[r].rc == 0, "chain rank %d: %s", r, jobs[r].err)) CHECK_INT("chain", 0, p2p_check(&c, r, jobs[r].out));
  ddp_plan_free(p);
  /* across kinds: rank 0 all-reduces before its SEND, rank 1 after its RECV */
  p = p2p_plan_new(2);
  p2p_push_allreduce(p, 0, 4, 8);
  p2p_push(p, 0, I_SEND, 1, 0, 8, STREAM_COMM, NULL);
  p2p_push(p, 1, I_RECV, 0, 2, 8, STREAM_COMM, NULL);
  p2p_push_allreduce(p, 1, 4, 8);
  expect_deadlock("all-reduce against a receive", p, "rank 0 waits in a collective",
                  "rank 1 step instruction 0 (recv, 8 x f32 from rank 0) waits (group of 1)");
  /* rank 2 waits on rank 0, which has nothing to send and finishes (a hand-built plan; the reader refuses it) */
  p = p2p_plan_new(3);
  p2p_push(p, 2, I_RECV, 0, 2, 5, STREAM_COMM, NULL);
  expect_deadlock("a receive from a rank that finished", p, "rank 0 has finished",
                  "rank 2 step instruction 0 (recv, 5 x f32 from rank 0)");
}

/* The reader proves pairs, not progress: the fixture plan (rank 0 SEND+RECV, rank 1 RECV+SEND, one group
 * each) with rank 1 sending first and both RECVs on another stream is read without complaint. */
static void test_reader(void) {
  char err[1024] = "";
  ddp_plan *p = fixture_plan();
  p2p_ungroup(p);
  const char *path = tmp_path("ungrouped.bin");
  CHECK(ddp_plan_write(p, path, err, sizeof err) == 0, "%s", err);
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  CHECK(q != NULL, "the reader refuses the ungrouped exchange: %s", err);
  if (q) printf("ok: the plan reader accepts an exchange that deadlocks (it proves pairs, not progress)\n");
  ddp_plan_free(q);
  ddp_plan_free(p);
}

static void test_mismatch(void) {
  p2p_job jobs[P2P_MAXW];
  /* dtype: f32 buf 0 sent, received as bf16 into buf 1; then a third rank's send to rank 0 */
  ddp_plan *p = p2p_plan_new(3);
  p2p_push(p, 0, I_SEND, 1, 0, 8, STREAM_COMM, "a");
  p2p_push_other(p, 0);
  p2p_push(p, 0, I_RECV, 2, 2, 8, STREAM_COMM, NULL);
  p2p_push(p, 1, I_RECV, 0, 1, 8, STREAM_COMM, "b");
  p2p_push(p, 2, I_SEND, 0, 0, 8, STREAM_COMM, NULL);
  p2p_run_threads(p, 1, -1, jobs);
  const char *line = "point-to-point mismatch: rank 0 step instruction 0 (send \"a\", 8 x f32 to rank 1) pairs with "
                     "rank 1 step instruction 0 (recv \"b\", 8 x bf16 from rank 0): count and dtype must agree";
  CHECK_STR("dtype mismatch, sender", line, jobs[0].err);
  CHECK_STR("dtype mismatch, receiver", line, jobs[1].err);
  CHECK(jobs[0].rc && jobs[1].rc && jobs[2].rc);
  CHECK_CONTAINS("third rank", jobs[2].err, "collective aborted: rank 1 failed");
  printf("ok: %s\n", jobs[1].err);
  ddp_plan_free(p);
  /* count, two ranks; nothing copied */
  p = p2p_plan_new(2);
  p2p_push(p, 0, I_SEND, 1, 0, 8, STREAM_COMM, NULL);
  p2p_push(p, 1, I_RECV, 0, 2, 9, STREAM_COMM, NULL);
  p2p_run_threads(p, 1, -1, jobs);
  CHECK_STR("count mismatch, same line on both", jobs[0].err, jobs[1].err);
  CHECK_CONTAINS("count mismatch", jobs[1].err, "(send, 8 x f32 to rank 1) pairs with rank 1 step instruction 0 "
                                                "(recv, 9 x f32 from rank 0)");
  ddp_plan_free(p);
}

static void test_refusals(void) {
  p2p_job jobs[P2P_MAXW];
  /* a failed peer */
  ddp_plan *p = p2p_exchange(0);
  double t = p2p_run_threads(p, 1, 1, jobs);
  CHECK(jobs[0].rc == -1);
  CHECK_STR("failed peer", "collective aborted: rank 1 failed", jobs[0].err);
  CHECK(t < 5, "failed peer: %.1f s", t);
  ddp_plan_free(p);
  /* one rank */
  p = p2p_plan_new(1);
  p2p_push(p, 0, I_SEND, 0, 0, 4, STREAM_COMM, NULL);
  p2p_run_threads(p, 1, -1, jobs);
  CHECK_STR("world of one", "reference executor: rank 0 step instruction 0: send to rank 0 in a world of 1 rank (a plan "
                            "cannot send to itself)", jobs[0].err);
  ddp_plan_free(p);
  /* to itself, in a world of two */
  p = p2p_plan_new(2);
  p2p_push(p, 0, I_RECV, 0, 0, 4, STREAM_COMM, NULL);
  p2p_run_threads(p, 1, -1, jobs);
  CHECK_STR("to itself", "rank 0 step instruction 0 (recv, 4 x f32 from rank 0): a rank cannot send to itself (world of 2)",
            jobs[0].err);
  ddp_plan_free(p);
}

int main(void) {
  alarm(120); /* a hang is a failure */
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_p2p.XXXXXX");
  if (!mkdtemp(tmpdir)) return fprintf(stderr, "mkdtemp failed\n"), 1;
  test_cases(2);
  test_cases(3);
  test_deadlocks();
  test_reader();
  test_mismatch();
  test_refusals();
  remove(tmp_path("ungrouped.bin"));
  rmdir(tmpdir);
  return check_report("test_p2p");
}

/* tests/unit/explain/test_predict.c: the prediction ddpc stores in a plan's meta (compiler/explain/
 * predict.c) on hand-made plans with a profile whose arithmetic is exact (no launch overhead, 1 TFLOP/s,
 * collectives 0.1 ms + bytes at 1 GB/s): a one-rank plan with every timer (step 4.25 ms: forward 2,
 * backward 2, optimizer 0.25); two ranks, one slower, meeting at an all-reduce (step 5.1, communication and
 * exposed 1.1 ms, phases 0 without timers); a deadlock, which stores zeros and the reason and which
 * `ddpc inspect` reports; and, on the synthetic plan of tests/fixtures/plan_fixture.c, the fields equal to
 * the simulator's rank 0 and surviving plan.bin's writer and reader. */
#include "check.h"
#include "explain.h"
#include "inspect.h"
#include "plan_fixture.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int near(double want, double got) { return fabs(want - got) <= 1e-12 + 1e-12 * fabs(want); }
#define CHECK_T(what, want, got) CHECK(near(want, got), "%s: want %.15g, got %.15g", what, (double)(want), (double)(got))

static ddp_profile test_profile(void) {
  ddp_profile pr;
  memset(&pr, 0, sizeof pr);
  snprintf(pr.name, sizeof pr.name, "exact test profile");
  pr.hbm_gbps = 1;
  pr.gemm_tflops_16 = pr.gemm_tflops_32 = pr.attention_tflops = 1;
  pr.gemm_small_dim = pr.gemm_small_scale = 1;
  for (int k = 0; k < COST_COLL_COUNT; k++) pr.coll[k] = (ddp_coll_cost){100, 1};
  return pr;
}

static ddp_plan *new_plan(int world) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = world;
  p->nstreams = 2;
  p->ranks = calloc((size_t)world, sizeof *p->ranks);
  for (int r = 0; r < world; r++) p->ranks[r].nevents = 4;
  return p;
}
static void gemm(ddp_plan *p, int r, int64_t m, int64_t n, int64_t k) { /* 2*m*n*k FLOP at 1 TFLOP/s */
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[GEMM_I_M] = m, in.i[GEMM_I_N] = n, in.i[GEMM_I_K] = k, in.i[GEMM_I_BATCH] = 1;
  ddp_program_push(&p->ranks[r].step, &in);
}
static void timer(ddp_plan *p, int role) {
  ddp_instr in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[TIMER_I_SLOT] = role, in.i[TIMER_I_ROLE] = role;
  ddp_program_push(&p->ranks[0].step, &in);
}
static void all_reduce(ddp_plan *p, int r, int64_t count) {
  ddp_instr in = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMPUTE);
  in.dt[0] = DT_F32;
  in.i[COLL_I_COUNT] = count;
  ddp_program_push(&p->ranks[r].step, &in);
}

/* The inspect listing of p, in a malloc'd string. */
static char *inspect_text(const ddp_plan *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  ddp_inspect(p, -1, f);
  fclose(f);
  return buf;
}

static void test_phases(const ddp_profile *pr) {
  ddp_plan *p = new_plan(1);
  p->ranks[0].ntimers = TIMER_COUNT;
  timer(p, TIMER_STEP_BEGIN);
  gemm(p, 0, 1000, 1000, 1000);
  timer(p, TIMER_FORWARD_END);
  gemm(p, 0, 1000, 1000, 1000);
  timer(p, TIMER_BACKWARD_END);
  timer(p, TIMER_OPT_BEGIN);
  gemm(p, 0, 500, 500, 500);
  timer(p, TIMER_STEP_END);
  ddp_predict_meta(p, pr);
  const ddp_meta *m = &p->meta;
  CHECK_T("step", 4.25, m->predicted_step_ms);
  CHECK_T("forward", 2, m->predicted_forward_ms);
  CHECK_T("backward", 2, m->predicted_backward_ms);
  CHECK_T("optimizer", 0.25, m->predicted_optimizer_ms);
  CHECK_T("comm", 0, m->predicted_comm_ms);
  CHECK_T("exposed", 0, m->predicted_exposed_comm_ms);
  CHECK_STR("profile", "exact test profile", m->predicted_profile);
  CHECK(m->predicted_error == NULL, "an error on a good plan: %s", m->predicted_error);
  char *text = inspect_text(p);
  CHECK_CONTAINS("inspect", text, "predicted_step_ms      4.25\n");
  CHECK_CONTAINS("inspect", text, "predicted_profile      exact test profile\n");
  CHECK_CONTAINS("inspect", text, "predicted_error        -\n");
  free(text);
  ddp_plan_free(p);
}

static void test_two_ranks(const ddp_profile *pr) {
  ddp_plan *p = new_plan(2);
  gemm(p, 0, 1000, 1000, 1000); /* 2 ms */
  gemm(p, 1, 1000, 1000, 2000); /* 4 ms: rank 0 waits for rank 1 at the all-reduce */
  for (int r = 0; r < 2; r++) all_reduce(p, r, 250000); /* 1 MB: 0.1 + 1 ms */
  ddp_predict_meta(p, pr);
  const ddp_meta *m = &p->meta;
  CHECK_T("step", 5.1, m->predicted_step_ms);
  CHECK_T("comm", 1.1, m->predicted_comm_ms);
  CHECK_T("exposed", 1.1, m->predicted_exposed_comm_ms);
  CHECK(m->predicted_forward_ms == 0 && m->predicted_backward_ms == 0 && m->predicted_optimizer_ms == 0,
        "phases without timers: %g %g %g", m->predicted_forward_ms, m->predicted_backward_ms, m->predicted_optimizer_ms);
  /* A rank whose collective never meets the others': zeros, the reason, and inspect says so; a second
   * prediction on the same plan replaces the first's fields. */
  ddp_instr ag = ddp_instr_blank(I_ALL_GATHER, STREAM_COMPUTE);
  ddp_program_push(&p->ranks[0].step, &ag);
  ddp_predict_meta(p, pr);
  CHECK(m->predicted_step_ms == 0 && m->predicted_comm_ms == 0 && m->predicted_exposed_comm_ms == 0,
        "a deadlocked plan's prediction: %g %g %g", m->predicted_step_ms, m->predicted_comm_ms, m->predicted_exposed_comm_ms);
  CHECK_CONTAINS("error", m->predicted_error ? m->predicted_error : "(null)", "never meets its partners");
  CHECK_STR("profile still named", "exact test profile", m->predicted_profile);
  char *text = inspect_text(p);
  CHECK_CONTAINS("inspect", text, "predicted_step_ms      0 (no prediction: see predicted_error)\n");
  CHECK_CONTAINS("inspect", text, "predicted_error        rank 0: step instruction 2 (all_gather) never meets its partners");
  free(text);
  ddp_plan_free(p);
  /* a plan without a prediction (an older ddpc's) */
  p = new_plan(1);
  text = inspect_text(p);
  CHECK_CONTAINS("inspect", text, "predicted_step_ms      0 (no prediction: the plan was compiled without one)\n");
  free(text);
  ddp_plan_free(p);
}

/* The synthetic plan of tests/fixtures/plan_fixture.c: its prediction is ddp_explain_sim's rank 0, and
 * plan.bin keeps the fields (every meta field goes through DDP_META_FIELDS). */
static void test_round_trip(const ddp_profile *pr) {
  ddp_plan *p = fixture_plan();
  ddp_predict_meta(p, pr);
  const ddp_meta *m = &p->meta;
  char err[512] = "";
  ddp_sim *s = ddp_explain_sim(p, pr, err, sizeof err);
  CHECK(s != NULL, "%s", err);
  if (s) {
    CHECK(m->predicted_step_ms == s->ranks[0].step_s * 1e3 && m->predicted_step_ms > 0, "step %g", m->predicted_step_ms);
    CHECK(m->predicted_comm_ms == s->ranks[0].comm_s * 1e3, "comm %g", m->predicted_comm_ms);
    CHECK(m->predicted_exposed_comm_ms == s->ranks[0].exposed_s * 1e3, "exposed %g", m->predicted_exposed_comm_ms);
  }
  ddp_sim_free(s);
  char path[] = "/tmp/ddp_test_predict_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd >= 0) close(fd);
  int wrc = ddp_plan_write(p, path, err, sizeof err);
  CHECK(wrc == 0, "write: %s", err);
  ddp_plan *q = wrc == 0 ? ddp_plan_read(path, err, sizeof err) : NULL;
  CHECK(q != NULL, "read back: %s", err);
  if (q) {
    const ddp_meta *n = &q->meta;
    CHECK(n->predicted_step_ms == m->predicted_step_ms && n->predicted_forward_ms == m->predicted_forward_ms &&
              n->predicted_backward_ms == m->predicted_backward_ms &&
              n->predicted_optimizer_ms == m->predicted_optimizer_ms && n->predicted_comm_ms == m->predicted_comm_ms &&
              n->predicted_exposed_comm_ms == m->predicted_exposed_comm_ms,
          "read back: step %g", n->predicted_step_ms);
    CHECK_STR("read back profile", m->predicted_profile, n->predicted_profile);
    CHECK(n->predicted_error == NULL, "read back: an error appeared");
    ddp_plan_free(q);
  }
  remove(path);
  ddp_plan_free(p);
}

int main(void) {
  ddp_profile pr = test_profile();
  test_phases(&pr);
  test_two_ranks(&pr);
  test_round_trip(&pr);
  return check_report("test_predict");
}

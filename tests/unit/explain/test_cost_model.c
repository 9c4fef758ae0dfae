/* tests/unit/explain/test_cost_model.c: the cost model fixes of issue 16 on hand-made plans, with a profile
 * whose numbers make the arithmetic exact (no launch overhead, 1 TFLOP/s, 1 GB/s, collectives 0.1 ms +
 * bytes / 1 GB/s): (1) an AdamW update's read-modify-write operands (parameter, both moments) count their
 * bytes twice, the gradient and the copy once; an accumulating kernel's output twice, a plain one's once;
 * (2) kernels of two streams share the device: a side-stream kernel ready while the compute stream runs
 * waits for it (the single-GPU optimizer overlap is no longer free); (3) a kernel backfills a gap the
 * device has before a later kernel (a stream waiting on a collective); (4) compute beside a running
 * collective runs at 1 - collective_share of its rate, also in the run with free collectives (so the loss
 * is compute, not exposed communication); (5) collective_share in a profile file: optional (the built-in
 * default's when left out), range-checked; (6) a bf16 GEMM priced from the profile's gemm_by_shape table:
 * interpolated in log space between the grid's shapes (exact for a power law), scaled beyond the grid and by
 * gemm_table_scale,
 * the flat throughput for another layout, a missing corner or f32 inputs; the table's bad entries refused;
 * (7) tensor-parallel all-reduces (compiler/passes/tensor.c): on the compute stream, on two tensor groups
 * of a 4-rank world, each timed with its group's ring factor, the groups independent, and a collective
 * never slowing its own stream's work (in the run with free collectives too: all of it is exposed); (8) an
 * all-gather or all-to-all that NCCL runs on the copy engines (symmetric windows, zero-CTA policy) slows
 * the compute beside it by copy_engine_share, every other collective by collective_share. */
#include "check.h"
#include "explain.h"
#include "profile_fixture.h"
#include "work.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS 1e-3
static int near(double want, double got) { return fabs(want - got) <= 1e-12 + 1e-12 * fabs(want); }
#define CHECK_T(what, want, got) CHECK(near(want, got), "%s: want %.15g, got %.15g", what, (double)(want), (double)(got))

static ddp_profile test_profile(void) {
  ddp_profile pr;
  memset(&pr, 0, sizeof pr);
  snprintf(pr.name, sizeof pr.name, "test");
  pr.hbm_gbps = 1;
  pr.gemm_tflops_16 = pr.gemm_tflops_32 = pr.attention_tflops = 1;
  pr.gemm_small_dim = 1;
  pr.gemm_small_scale = 1;
  pr.gemm_table_scale = 1;
  for (int k = 0; k < COST_COLL_COUNT; k++) pr.coll[k] = (ddp_coll_cost){100, 1};
  return pr;
}

static ddp_plan *new_plan(int world, uint32_t nstreams) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = world;
  p->nstreams = nstreams;
  p->ranks = calloc((size_t)world, sizeof *p->ranks);
  for (int r = 0; r < world; r++) p->ranks[r].nevents = 4;
  return p;
}

static void gemm(ddp_plan *p, int stream, int64_t m, int64_t n, int64_t k) {
  ddp_instr in = ddp_instr_blank(I_GEMM, stream);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[GEMM_I_M] = m, in.i[GEMM_I_N] = n, in.i[GEMM_I_K] = k, in.i[GEMM_I_BATCH] = 1;
  ddp_program_push(&p->ranks[0].step, &in);
}
static void event(ddp_plan *p, int opcode, int stream, int e) {
  ddp_instr in = ddp_instr_blank(opcode, stream);
  in.i[EVENT_I_EVENT] = e;
  ddp_program_push(&p->ranks[0].step, &in);
}

/* An ADAMW of n f32 parameters with a bf16 gradient and a bf16 copy; every operand points at tensor 0
 * (the cost model needs only the operands' presence and footprints). */
static ddp_instr adamw(int64_t n) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_ADAMW;
  in.dt[ADAMW_P_PARAM] = in.dt[ADAMW_P_M] = in.dt[ADAMW_P_V] = in.dt[ADAMW_P_SCALARS] = DT_F32;
  in.dt[ADAMW_P_GRAD] = in.dt[ADAMW_P_COPY] = DT_BF16;
  for (int k = ADAMW_P_PARAM; k <= ADAMW_P_SCALARS; k++) in.p[k].tensor = 0;
  in.i[ADAMW_I_N] = n;
  return in;
}

static void test_rmw_bytes(const ddp_profile *pr) {
  ddp_plan *p = new_plan(1, 2);
  const int64_t n = 1000;
  ddp_instr in = adamw(n);
  /* param 4n read + 4n written, grad 2n, m and v 8n each, copy 2n, scalars 8 floats = 28n + 32 (the old
   * count, each operand once: 18n + 32) */
  CHECK_T("adamw bytes", 28.0 * n + 32, ddp_instr_bytes_moved(p, &in));
  int comm = 0;
  CHECK_T("adamw time at 1 GB/s", (28.0 * n + 32) * 1e-9, ddp_instr_cost(p, &in, pr, &comm));
  in.p[ADAMW_P_COPY].tensor = -1; /* no copy */
  CHECK_T("adamw bytes without a copy", 26.0 * n + 32, ddp_instr_bytes_moved(p, &in));

  ddp_instr r = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE); /* REDUCE_ROWS in[P,D] -> out[D], (+)= when ACC */
  r.op = OP_REDUCE_ROWS;
  r.dt[REDUCE_ROWS_P_IN] = r.dt[REDUCE_ROWS_P_OUT] = DT_F32;
  r.p[REDUCE_ROWS_P_IN].tensor = r.p[REDUCE_ROWS_P_OUT].tensor = 0;
  r.i[REDUCE_ROWS_I_P] = 10, r.i[REDUCE_ROWS_I_D] = 100;
  CHECK_T("reduce_rows bytes (overwrite)", 4.0 * 1000 + 4 * 100, ddp_instr_bytes_moved(p, &r));
  r.i[REDUCE_ROWS_I_ACC] = 1;
  CHECK_T("reduce_rows bytes (accumulate)", 4.0 * 1000 + 8 * 100, ddp_instr_bytes_moved(p, &r));
  ddp_work w;
  ddp_instr_work(p, &r, &w);
  CHECK_INT("reduce_rows is memory-bound work", WORK_MEMORY, w.kind);
  ddp_plan_free(p);
}

/* compute: A (2 ms), record e0, C (1 ms); side stream: wait e0, B (0.5 ms). B is ready at 2 ms but the
 * device runs C until 3 ms: B runs 3 .. 3.5 ms (the old model ran it beside C, ending the step at 3 ms). */
static void test_streams_share_device(const ddp_profile *pr) {
  ddp_plan *p = new_plan(1, 2);
  gemm(p, STREAM_COMPUTE, 1000, 1000, 1000);
  event(p, I_EVENT_RECORD, STREAM_COMPUTE, 0);
  gemm(p, STREAM_COMPUTE, 500, 1000, 1000);
  event(p, I_EVENT_WAIT, 1, 0);
  gemm(p, 1, 250, 1000, 1000);
  char err[256] = "";
  ddp_sim *s = ddp_explain_sim(p, pr, err, sizeof err);
  if (CHECK(s != NULL, "%s", err)) {
    const ddp_sim_rank *sr = &s->ranks[0];
    CHECK_T("A", 2 * MS, sr->in[0].end);
    CHECK_T("C start", 2 * MS, sr->in[2].start);
    CHECK_T("C end", 3 * MS, sr->in[2].end);
    CHECK_T("B start (after C)", 3 * MS, sr->in[4].start);
    CHECK_T("B end", 3.5 * MS, sr->in[4].end);
    CHECK_T("step", 3.5 * MS, sr->step_s);
    CHECK_T("stream 1 busy", 0.5 * MS, sr->busy_s[1]);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* One rank: stream 1 all-reduces (world 1: 0.1 ms of latency) and records e1; the compute stream waits for
 * it and runs A (1 ms): 0.1 .. 1.1 ms. A kernel K on stream 2 (0.05 ms), later in the program but ready at
 * 0, fills the device's idle 0 .. 0.1 ms: it runs 0 .. 0.05 ms and the step stays 1.1 ms. */
static void test_backfill(const ddp_profile *pr) {
  ddp_plan *p = new_plan(1, 3);
  ddp_instr ar = ddp_instr_blank(I_ALL_REDUCE, 1);
  ar.dt[0] = DT_F32;
  ar.i[COLL_I_COUNT] = 1000;
  ddp_program_push(&p->ranks[0].step, &ar);
  event(p, I_EVENT_RECORD, 1, 1);
  event(p, I_EVENT_WAIT, STREAM_COMPUTE, 1);
  gemm(p, STREAM_COMPUTE, 500, 1000, 1000);
  gemm(p, 2, 250, 250, 400);
  char err[256] = "";
  ddp_sim *s = ddp_explain_sim(p, pr, err, sizeof err);
  if (CHECK(s != NULL, "%s", err)) {
    const ddp_sim_rank *sr = &s->ranks[0];
    CHECK_T("all-reduce", 0.1 * MS, sr->in[0].end);
    CHECK_T("A start", 0.1 * MS, sr->in[3].start);
    CHECK_T("A end", 1.1 * MS, sr->in[3].end);
    CHECK_T("K start (backfilled)", 0, sr->in[4].start);
    CHECK_T("K end", 0.05 * MS, sr->in[4].end);
    CHECK_T("step", 1.1 * MS, sr->step_s);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* Each rank of p: a collective of `count` f32 elements on stream 1, then a 2 ms f32 GEMM (1000^3 at 1
 * TFLOP/s) on the compute stream. */
static void coll_beside_gemm(ddp_plan *p, int opcode, int64_t count) {
  for (int r = 0; r < p->meta.world; r++) {
    ddp_instr co = ddp_instr_blank(opcode, 1);
    co.dt[0] = co.dt[1] = DT_F32;
    co.i[COLL_I_COUNT] = count;
    ddp_program_push(&p->ranks[r].step, &co);
    ddp_instr g = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
    g.dt[0] = g.dt[1] = g.dt[2] = g.dt[3] = DT_F32;
    g.i[GEMM_I_M] = 1000, g.i[GEMM_I_N] = 1000, g.i[GEMM_I_K] = 1000, g.i[GEMM_I_BATCH] = 1;
    ddp_program_push(&p->ranks[r].step, &g);
  }
}

/* Two ranks, share 0.5: stream 1 all-reduces 1 MB (0.1 ms + 1 ms: 0 .. 1.1 ms), the compute stream runs a
 * GEMM of 2 ms from 0: 0.55 ms of its work fits in 0 .. 1.1 ms at half rate, the other 1.45 ms after: it
 * ends at 2.55 ms, in both runs, so nothing is exposed. */
static void test_interference(const ddp_profile *base) {
  ddp_profile pr = *base;
  pr.collective_share = 0.5;
  ddp_plan *p = new_plan(2, 2);
  coll_beside_gemm(p, I_ALL_REDUCE, 250000);
  char err[256] = "";
  ddp_sim *s = ddp_explain_sim(p, &pr, err, sizeof err);
  if (CHECK(s != NULL, "%s", err)) {
    const ddp_sim_rank *sr = &s->ranks[1];
    CHECK_T("all-reduce end", 1.1 * MS, sr->in[0].end);
    CHECK_T("GEMM start", 0, sr->in[1].start);
    CHECK_T("GEMM end (slowed)", 2.55 * MS, sr->in[1].end);
    CHECK_T("step", 2.55 * MS, sr->step_s);
    CHECK_T("exposed", 0, sr->exposed_s);
    CHECK_T("compute busy (its cost)", 2 * MS, sr->busy_s[STREAM_COMPUTE]);
  }
  ddp_sim_free(s);
  pr.collective_share = 0;
  s = ddp_explain_sim(p, &pr, err, sizeof err);
  if (CHECK(s != NULL, "%s", err)) CHECK_T("share 0: the GEMM alone", 2 * MS, s->ranks[0].in[1].end);
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* Copy-engine collectives: two ranks, collective_share 0.5, copy_engine_share 0.25; stream 1 runs one
 * collective of 1 MB over [0, E), the compute stream a 2 ms GEMM from 0, which does E x (1 - share) of its
 * work inside the collective and the rest after: it ends at 2 ms + E x share. An all-gather or all-to-all
 * of a plan on symmetric windows with the zero-CTA policy takes the copy engines' share; the same on plain
 * arenas, or with the default policy, and an all-reduce (which NCCL never puts on the copy engines) take
 * collective_share. */
static void test_copy_engines(const ddp_profile *base) {
  ddp_profile pr = *base;
  pr.collective_share = 0.5;
  pr.copy_engine_share = 0.25;
  static const struct {
    int opcode, reg, cta;
    double share;
    const char *what;
  } cases[] = {
      {I_ALL_GATHER, NCCL_REGISTER_WINDOW, NCCL_CTA_ZERO, 0.25, "all-gather, windows + zero CTA"},
      {I_ALL_TO_ALL, NCCL_REGISTER_WINDOW, NCCL_CTA_ZERO, 0.25, "all-to-all, windows + zero CTA"},
      {I_ALL_GATHER, NCCL_REGISTER_NONE, NCCL_CTA_ZERO, 0.5, "all-gather, cudaMalloc'd arenas"},
      {I_ALL_TO_ALL, NCCL_REGISTER_WINDOW, NCCL_CTA_DEFAULT, 0.5, "all-to-all, windows, default policy"},
      {I_ALL_REDUCE, NCCL_REGISTER_WINDOW, NCCL_CTA_ZERO, 0.5, "all-reduce, windows + zero CTA"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ddp_plan *p = new_plan(2, 2);
    p->meta.nccl_register = cases[c].reg;
    p->meta.nccl_cta_policy = cases[c].cta;
    coll_beside_gemm(p, cases[c].opcode, 125000);
    char err[256] = "";
    ddp_sim *s = ddp_explain_sim(p, &pr, err, sizeof err);
    if (CHECK(s != NULL, "%s: %s", cases[c].what, err)) {
      const ddp_sim_rank *sr = &s->ranks[0];
      double e = sr->in[0].end;
      CHECK(e > 0.1 * MS && e < 2 * MS, "%s: the collective ends at %g s", cases[c].what, e);
      CHECK(near(2 * MS + e * cases[c].share, sr->in[1].end), "%s: GEMM end: want %.15g, got %.15g", cases[c].what,
            2 * MS + e * cases[c].share, sr->in[1].end);
    }
    ddp_sim_free(s);
    ddp_plan_free(p);
  }
}

/* Four ranks in two tensor groups (comm 1 = ranks 0, 1; comm 2 = ranks 2, 3), share 0.5, every rank on
 * the compute stream: GEMM A (group 1: 1 ms, group 2: 2 ms), an all-reduce of 1 MB on its tensor group (2
 * ranks: 2(n-1)/n = 1, 0.1 ms + 1 ms; the world's 4 ranks would make it 1.6 ms), GEMM B (1 ms). Group 1:
 * A 0 .. 1, all-reduce 1 .. 2.1 (not waiting for group 2), B 2.1 .. 3.1; group 2: A 0 .. 2, all-reduce
 * 2 .. 3.1, B 3.1 .. 4.1. With free collectives B follows A at once at its full rate (the all-reduce's
 * interval must not slow its own stream: with the bug B ran at half rate in 1 .. 2.1 and ended at 2.55
 * ms), so the all-reduce is exposed whole: 1.1 ms. */
static void test_tensor_groups(const ddp_profile *base) {
  ddp_profile pr = *base;
  pr.collective_share = 0.5;
  ddp_plan *p = new_plan(4, 2);
  int32_t g1[2] = {0, 1}, g2[2] = {2, 3};
  CHECK_INT("comm 1", 1, ddp_plan_add_comm(p, g1, 2));
  CHECK_INT("comm 2", 2, ddp_plan_add_comm(p, g2, 2));
  for (int r = 0; r < 4; r++) {
    ddp_instr a = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
    a.dt[0] = a.dt[1] = a.dt[2] = a.dt[3] = DT_F32;
    a.i[GEMM_I_M] = 1000, a.i[GEMM_I_N] = 1000, a.i[GEMM_I_K] = 500 * (r < 2 ? 1 : 2), a.i[GEMM_I_BATCH] = 1;
    ddp_program_push(&p->ranks[r].step, &a);
    ddp_instr ar = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMPUTE);
    ar.dt[0] = DT_F32;
    ar.i[COLL_I_COUNT] = 250000;
    ar.i[COLL_I_COMM] = r < 2 ? 1 : 2;
    ddp_program_push(&p->ranks[r].step, &ar);
    ddp_instr b = a;
    b.i[GEMM_I_K] = 500;
    ddp_program_push(&p->ranks[r].step, &b);
  }
  char err[256] = "";
  ddp_sim *s = ddp_explain_sim(p, &pr, err, sizeof err);
  if (CHECK(s != NULL, "%s", err)) {
    for (int r = 0; r < 4; r++) {
      const ddp_sim_rank *sr = &s->ranks[r];
      double a = r < 2 ? 1 * MS : 2 * MS;
      CHECK_T("all-reduce start (its group only)", a, sr->in[1].start);
      CHECK_T("all-reduce end (the group's ring factor)", a + 1.1 * MS, sr->in[1].end);
      CHECK_T("B start", a + 1.1 * MS, sr->in[2].start);
      CHECK_T("B end (not slowed: the all-reduce is over)", a + 2.1 * MS, sr->in[2].end);
      CHECK_T("step", a + 2.1 * MS, sr->step_s);
      CHECK_T("communication", 1.1 * MS, sr->comm_s);
      CHECK_T("exposed: all of it (B not slowed by its own stream's free all-reduce)", 1.1 * MS, sr->exposed_s);
    }
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

static void test_share_field(void) {
  const char *base = PROFILE_JSON_WITH("%s");
  char json[2048], err[256] = "";
  ddp_profile pr, def;
  ddp_profile_default(&def);
  snprintf(json, sizeof json, base, "");
  CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) == 0, "%s", err);
  CHECK_T("collective_share left out: the default's", def.collective_share, pr.collective_share);
  CHECK_T("copy_engine_share left out: the default's", def.copy_engine_share, pr.copy_engine_share);
  static const struct {
    const char *key, *given, *bad, *bad_line;
    double want;
  } shares[] = {
      {"collective_share", "0.3", "1", "p.json: collective_share: must be a number >= 0 and <= 0.99 (got 1)", 0.3},
      {"copy_engine_share", "0.05", "-0.1", "p.json: copy_engine_share: must be a number >= 0 and <= 0.99 (got -0.1)",
       0.05},
  };
  for (size_t k = 0; k < sizeof shares / sizeof shares[0]; k++) {
    char field[64];
    snprintf(field, sizeof field, "\"%s\": %s, ", shares[k].key, shares[k].given);
    snprintf(json, sizeof json, base, field);
    CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) == 0, "%s", err);
    CHECK_T(shares[k].key, shares[k].want, k == 0 ? pr.collective_share : pr.copy_engine_share);
    snprintf(field, sizeof field, "\"%s\": %s, ", shares[k].key, shares[k].bad);
    snprintf(json, sizeof json, base, field);
    CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) != 0);
    CHECK_STR("out of range", shares[k].bad_line, err);
  }

  /* a calibrated profile: figures may be left out (the default's, listed in the name); its record of the
   * measurement is type-checked, each bad field one line */
  const char *cal = "{\"name\": \"cal\", \"defaults\": \"built-in\", \"hbm_gbps\": 3000, \"device\": \"d\", "
                    "\"date\": \"2026\", \"version\": \"v\", \"plan\": {}, \"fit\": {}, \"samples\": [], "
                    "\"collectives\": {\"all_reduce\": {\"alpha_us\": 5, \"busbw_gbps\": 100}}%s}";
  snprintf(json, sizeof json, cal, "");
  if (CHECK(ddp_profile_parse(json, strlen(json), "c.json", &pr, err, sizeof err) == 0, "%s", err)) {
    CHECK_T("measured", 3000, pr.hbm_gbps);
    CHECK_T("defaulted", def.gemm_tflops_16, pr.gemm_tflops_16);
    CHECK_T("measured collective", 100, pr.coll[COST_ALL_REDUCE].busbw_gbps);
    CHECK_T("defaulted collective", def.coll[COST_ALL_GATHER].busbw_gbps, pr.coll[COST_ALL_GATHER].busbw_gbps);
    CHECK_STR("name", "cal; built-in default for: launch_us, gemm_tflops_16, gemm_tflops_32, gemm_small_dim, "
              "gemm_small_scale, attention_tflops, collective_share, copy_engine_share, power, collectives.reduce_scatter, "
              "collectives.all_gather, collectives.broadcast, collectives.send_recv", pr.name);
  }
  static const char *const bad[][2] = {
      {", \"device\": 1", "c.json: line 1: duplicate object key near '\"device\"'"},
      {", \"attention_by_shape\": {}", "c.json: attention_by_shape: must be an array of at most 32 objects"},
      {", \"attention_by_shape\": [{\"t\": 512, \"dh\": 64}]", "c.json: attention_by_shape[0].tflops: missing (a number)"},
      {", \"attention_by_shape\": [{\"t\": 512, \"dh\": 64, \"tflops\": 9, \"x\": 1}]",
       "c.json: attention_by_shape[0].x: unknown field"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    snprintf(json, sizeof json, cal, bad[k][0]);
    CHECK(ddp_profile_parse(json, strlen(json), "c.json", &pr, err, sizeof err) != 0, "%s", bad[k][0]);
    CHECK_STR(bad[k][0], bad[k][1], err);
  }
  static const char *const swaps[][3] = {
      {"\"plan\": {}", "\"plan\": []", "c.json: plan: must be an object"},
      {"\"fit\": {}", "\"fit\": 3", "c.json: fit: must be an object"},
      {"\"samples\": []", "\"samples\": {}", "c.json: samples: must be an array"},
      {"\"date\": \"2026\"", "\"date\": 2026", "c.json: date: must be a string"},
      {"\"version\": \"v\"", "\"version\": null", "c.json: version: must be a string"},
      {"\"defaults\": \"built-in\"", "\"defaults\": \"mine\"",
       "c.json: defaults: must be the string \"built-in\" (the figures left out are the built-in default's)"},
  };
  for (size_t k = 0; k < sizeof swaps / sizeof swaps[0]; k++) {
    snprintf(json, sizeof json, cal, "");
    char *at = strstr(json, swaps[k][0]), out[2048];
    if (!CHECK(at != NULL, "%s", swaps[k][0])) continue;
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - json), json, swaps[k][1], at + strlen(swaps[k][0]));
    CHECK(ddp_profile_parse(out, strlen(out), "c.json", &pr, err, sizeof err) != 0, "%s", swaps[k][1]);
    CHECK_STR(swaps[k][1], swaps[k][2], err);
  }
}

/* An attention forward of B 2, H 4, T 64, Dh 16, causal: 2 * (2*2*4*64*64*16) / 2 = 1048576 FLOP: at 1 TFLOP/s
 * (attention_tflops) 1.048576 us; with an attention_by_shape entry of exactly T 64, Dh 16 at 2 TFLOP/s half
 * that; an entry of another shape is not used. Its operands are null, so its bytes are 0. */
static void test_attention_shape(const ddp_profile *base) {
  ddp_profile pr = *base;
  ddp_plan *p = new_plan(1, 2);
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_ATTN_FWD;
  in.i[ATTN_I_B] = 2, in.i[ATTN_I_H] = 4, in.i[ATTN_I_T] = 64, in.i[ATTN_I_DH] = 16, in.i[ATTN_I_CAUSAL] = 1;
  in.i[ATTN_I_QSTRIDE] = in.i[ATTN_I_KSTRIDE] = in.i[ATTN_I_VSTRIDE] = in.i[ATTN_I_OSTRIDE] = 64;
  int comm = 0;
  CHECK_T("attention_tflops", 1048576e-12, ddp_instr_cost(p, &in, &pr, &comm));
  pr.attn_shape[0].t = 128, pr.attn_shape[0].dh = 16, pr.attn_shape[0].tflops = 4;
  pr.attn_shape[1].t = 64, pr.attn_shape[1].dh = 16, pr.attn_shape[1].tflops = 2;
  pr.nattn_shapes = 2;
  CHECK_T("the entry of its shape", 1048576e-12 / 2, ddp_instr_cost(p, &in, &pr, &comm));
  pr.nattn_shapes = 1;
  CHECK_T("no entry of its shape", 1048576e-12, ddp_instr_cost(p, &in, &pr, &comm));
  ddp_plan_free(p);
}

/* A 2 x 2 x 2 grid (M, N, K each 256 or 1024) of layout (0, 1) at us = M N K / 1e6, a power law, so the
 * interpolation in log space is exact inside; no launch overhead, 1 TFLOP/s flat. */
static void test_gemm_table(const ddp_profile *base) {
  ddp_profile pr = *base;
  ddp_plan *p = new_plan(1, 2);
  int e = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++) {
        double m = a ? 1024 : 256, n = b ? 1024 : 256, k = c ? 1024 : 256;
        pr.gemm_shape[e].m = m, pr.gemm_shape[e].n = n, pr.gemm_shape[e].k = k;
        pr.gemm_shape[e].ta = 0, pr.gemm_shape[e].tb = 1, pr.gemm_shape[e].us = m * n * k / 1e6;
        e++;
      }
  pr.ngemm_shapes = e;
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_BF16;
  in.i[GEMM_I_TRANS_A] = 0, in.i[GEMM_I_TRANS_B] = 1, in.i[GEMM_I_BATCH] = 1;
  int comm = 0;
  const int64_t shapes[][4] = {
      {512, 512, 512, 0}, {256, 1024, 512, 0}, {1024, 1024, 1024, 0}, /* inside: M N K / 1e6 us */
      {4096, 256, 256, 1},                                              /* beyond: scaled with M */
      {128, 64, 256, 2},                                                /* below: the smallest's */
  };
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    in.i[GEMM_I_M] = shapes[k][0], in.i[GEMM_I_N] = shapes[k][1], in.i[GEMM_I_K] = shapes[k][2];
    double want = shapes[k][3] == 2 ? 256.0 * 256 * 256 / 1e6 : (double)shapes[k][0] * shapes[k][1] * shapes[k][2] / 1e6;
    char what[64];
    snprintf(what, sizeof what, "table %lld x %lld x %lld", (long long)shapes[k][0], (long long)shapes[k][1],
             (long long)shapes[k][2]);
    CHECK(fabs(ddp_instr_cost(p, &in, &pr, &comm) - want * 1e-6) <= 1e-9 * want * 1e-6, "%s: want %.9g us, got %.9g",
          what, want, ddp_instr_cost(p, &in, &pr, &comm) * 1e6);
  }
  in.i[GEMM_I_M] = in.i[GEMM_I_N] = in.i[GEMM_I_K] = 512;
  in.i[GEMM_I_BATCH] = 3;
  CHECK_T("batch 3: three times one", 3 * 134.217728e-6, ddp_instr_cost(p, &in, &pr, &comm));
  in.i[GEMM_I_BATCH] = 1;
  pr.gemm_table_scale = 1.25;
  CHECK_T("gemm_table_scale 1.25", 1.25 * 134.217728e-6, ddp_instr_cost(p, &in, &pr, &comm));
  pr.gemm_table_scale = 1;
  const double flat = 2.0 * 512 * 512 * 512 / 1e12;
  in.i[GEMM_I_TRANS_B] = 0;
  CHECK_T("another layout: the flat throughput", flat, ddp_instr_cost(p, &in, &pr, &comm));
  in.i[GEMM_I_TRANS_B] = 1;
  in.dt[0] = in.dt[1] = DT_F32;
  CHECK_T("f32 inputs: the flat throughput", flat, ddp_instr_cost(p, &in, &pr, &comm));
  in.dt[0] = in.dt[1] = DT_BF16;
  pr.ngemm_shapes = 7; /* (1024, 1024, 1024) gone: the cell around 512^3 lacks a corner */
  CHECK_T("a missing corner: the flat throughput", flat, ddp_instr_cost(p, &in, &pr, &comm));
  ddp_plan_free(p);

  char err[400];
  const char *cal = "{\"name\": \"cal\", \"defaults\": \"built-in\", \"gemm_by_shape\": %s}";
  static const char *const bad[][2] = {
      {"{}", "g.json: gemm_by_shape: must be an array of at most 1024 objects"},
      {"[{\"m\": 256, \"n\": 256, \"k\": 256, \"ta\": 0, \"tb\": 1}]", "g.json: gemm_by_shape[0].us: missing (a number)"},
      {"[{\"m\": 256, \"n\": 256, \"k\": 256, \"ta\": 2, \"tb\": 1, \"us\": 3}]",
       "g.json: gemm_by_shape[0].ta: must be a number >= 0 and <= 1 (got 2)"},
      {"[{\"m\": 256, \"n\": 256, \"k\": 256, \"ta\": 0.5, \"tb\": 1, \"us\": 3}]",
       "g.json: gemm_by_shape[0]: ta and tb must be 0 or 1"},
      {"[{\"m\": 0, \"n\": 256, \"k\": 256, \"ta\": 0, \"tb\": 1, \"us\": 3}]",
       "g.json: gemm_by_shape[0].m: must be a number >= 1 and <= 1e+09 (got 0)"},
      {"[{\"m\": 256, \"n\": 256, \"k\": 256, \"ta\": 0, \"tb\": 1, \"us\": 3, \"x\": 1}]",
       "g.json: gemm_by_shape[0].x: unknown field"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char json[1024];
    snprintf(json, sizeof json, cal, bad[k][0]);
    CHECK(ddp_profile_parse(json, strlen(json), "g.json", &pr, err, sizeof err) != 0, "%s", bad[k][0]);
    CHECK_STR(bad[k][0], bad[k][1], err);
  }
  char json[1024];
  snprintf(json, sizeof json, cal, "[{\"m\": 256, \"n\": 512, \"k\": 1024, \"ta\": 1, \"tb\": 0, \"us\": 3.5}]");
  if (CHECK(ddp_profile_parse(json, strlen(json), "g.json", &pr, err, sizeof err) == 0, "%s", err)) {
    CHECK(pr.ngemm_shapes == 1 && pr.gemm_shape[0].ta == 1 && pr.gemm_shape[0].tb == 0 && pr.gemm_shape[0].us == 3.5,
          "parsed entry: %d entries, ta %d tb %d us %g", pr.ngemm_shapes, pr.gemm_shape[0].ta, pr.gemm_shape[0].tb,
          pr.gemm_shape[0].us);
  }
}

int main(void) {
  ddp_profile pr = test_profile();
  test_gemm_table(&pr);
  test_attention_shape(&pr);
  test_rmw_bytes(&pr);
  test_streams_share_device(&pr);
  test_backfill(&pr);
  test_interference(&pr);
  test_tensor_groups(&pr);
  test_copy_engines(&pr);
  test_share_field();
  return check_report("test_cost_model");
}

/* tests/unit/explain/test_sim.c: the `ddpc explain` model on hand-made plans with a profile whose numbers
 * make the arithmetic exact (no launch overhead, 1 TFLOP/s, 1 GB/s): two streams and one event; a kernel
 * split around another stream's (the device's free time across gaps); a bucket
 * chain of three GEMMs each followed by its bucket's all-reduce; two ranks where one is slower (the
 * collective barrier delays the other); the collective ring factors; the memory classes; and the
 * profile parser (a good file, every bad field refused with one line); the peer paths and the moved
 * collectives (nccl.movement) priced on the copy engines. */
#include "check.h"
#include "explain.h"
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
  pr.launch_us = 0;
  pr.hbm_gbps = 1;
  pr.gemm_tflops_16 = pr.gemm_tflops_32 = pr.attention_tflops = 1;
  pr.gemm_small_dim = 1;
  pr.gemm_small_scale = 1;
  for (int k = 0; k < COST_COLL_COUNT; k++) pr.coll[k] = (ddp_coll_cost){100, 1}; /* 0.1 ms + bytes / 1 GB/s */
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

/* An f32 GEMM of m*n*k: 2*m*n*k FLOP at 1 TFLOP/s. */
static void gemm(ddp_plan *p, int r, int stream, int64_t m, int64_t n, int64_t k) {
  ddp_instr in = ddp_instr_blank(I_GEMM, stream);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[GEMM_I_M] = m, in.i[GEMM_I_N] = n, in.i[GEMM_I_K] = k, in.i[GEMM_I_BATCH] = 1;
  ddp_program_push(&p->ranks[r].step, &in);
}
static void event(ddp_plan *p, int r, int opcode, int stream, int e) {
  ddp_instr in = ddp_instr_blank(opcode, stream);
  in.i[EVENT_I_EVENT] = e;
  ddp_program_push(&p->ranks[r].step, &in);
}
/* A collective of `count` f32 elements. */
static void coll(ddp_plan *p, int r, int opcode, int stream, int64_t count) {
  ddp_instr in = ddp_instr_blank(opcode, stream);
  in.dt[0] = DT_F32;
  in.i[COLL_I_COUNT] = count;
  ddp_program_push(&p->ranks[r].step, &in);
}

/* A SEND or RECV of `count` f32 elements to or from `peer`. */
static void p2p(ddp_plan *p, int r, int opcode, int peer, int64_t count) {
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMPUTE);
  in.dt[0] = DT_F32;
  in.i[COLL_I_COUNT] = count, in.i[COLL_I_PEER] = peer;
  ddp_program_push(&p->ranks[r].step, &in);
}

static ddp_sim *sim(const ddp_plan *p, const ddp_profile *pr) {
  char err[256] = "";
  ddp_sim *s = ddp_explain_sim(p, pr, err, sizeof err);
  CHECK(s != NULL, "%s", err);
  return s;
}

/* (1) compute: A (2 ms), record e0, B (0.25 ms); comm: wait e0, all-reduce of 1 MB (2(n-1)/n = 1 for two
 * ranks: 1 ms + 0.1 ms). The all-reduce runs 2 .. 3.1 ms; the step ends at 3.1 ms; without communication
 * cost it ends with B at 2.25 ms, so 0.85 ms is exposed of 1.1 ms: overlap 0.25 / 1.1. */
static void test_two_streams(const ddp_profile *pr) {
  ddp_plan *p = new_plan(2);
  for (int r = 0; r < 2; r++) {
    gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
    event(p, r, I_EVENT_RECORD, STREAM_COMPUTE, 0);
    gemm(p, r, STREAM_COMPUTE, 500, 500, 500);
    event(p, r, I_EVENT_WAIT, STREAM_COMM, 0);
    coll(p, r, I_ALL_REDUCE, STREAM_COMM, 250000);
  }
  ddp_sim *s = sim(p, pr);
  if (s) {
    for (int r = 0; r < 2; r++) {
      const ddp_sim_rank *sr = &s->ranks[r];
      CHECK_T("A end", 2 * MS, sr->in[0].end);
      CHECK_T("B", 2.25 * MS, sr->in[2].end);
      CHECK_T("all-reduce start", 2 * MS, sr->in[4].start);
      CHECK_T("all-reduce end", 3.1 * MS, sr->in[4].end);
      CHECK_T("step", 3.1 * MS, sr->step_s);
      CHECK_T("compute busy", 2.25 * MS, sr->busy_s[STREAM_COMPUTE]);
      CHECK_T("comm busy", 1.1 * MS, sr->busy_s[STREAM_COMM]);
      CHECK_T("comm compute part", 0, sr->compute_s[STREAM_COMM]);
      CHECK_T("communication", 1.1 * MS, sr->comm_s);
      CHECK_T("exposed", 0.85 * MS, sr->exposed_s);
      CHECK_T("overlap", 0.25 / 1.1, 1 - sr->exposed_s / sr->comm_s);
    }
    int rk[8];
    int64_t ix[8];
    size_t n = ddp_sim_critical_path(p, s, 0, rk, ix, 8);
    CHECK_INT("critical path length (all-reduce, wait, A)", 3, n);
    if (n == 3) {
      CHECK_INT("path[0]", 4, ix[0]);
      CHECK_INT("path[1] (the wait)", 3, ix[1]);
      CHECK_INT("path[2] (A, through the event)", 0, ix[2]);
      CHECK_INT("the wait's dependency", DEP_EVENT, s->ranks[0].in[3].dep);
    }
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* (1b) a kernel takes the device's free time across gaps: compute A (2 ms), record e0; comm: wait e0, the
 * all-reduce (2 .. 3.1 ms), record e1; a third stream: wait e1, K (0.25 ms: 3.1 .. 3.35); then compute B
 * (2 ms, ready at 2). B runs 2 .. 3.1 and 3.35 .. 4.25 around K; a B that waited for a gap holding it whole
 * would have run 3.35 .. 5.35 and left 2 .. 3.1 idle. */
static void test_split_kernel(const ddp_profile *pr) {
  ddp_plan *p = new_plan(2);
  p->nstreams = 3;
  for (int r = 0; r < 2; r++) {
    gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
    event(p, r, I_EVENT_RECORD, STREAM_COMPUTE, 0);
    event(p, r, I_EVENT_WAIT, STREAM_COMM, 0);
    coll(p, r, I_ALL_REDUCE, STREAM_COMM, 250000);
    event(p, r, I_EVENT_RECORD, STREAM_COMM, 1);
    event(p, r, I_EVENT_WAIT, 2, 1);
    gemm(p, r, 2, 500, 500, 500);
    gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
  }
  ddp_sim *s = sim(p, pr);
  if (s) {
    const ddp_sim_rank *sr = &s->ranks[0];
    CHECK_T("all-reduce end", 3.1 * MS, sr->in[3].end);
    CHECK_T("K start", 3.1 * MS, sr->in[6].start);
    CHECK_T("K end", 3.35 * MS, sr->in[6].end);
    CHECK_T("B start", 2 * MS, sr->in[7].start);
    CHECK_T("B end", 4.25 * MS, sr->in[7].end);
    CHECK_T("step", 4.25 * MS, sr->step_s);
    CHECK_T("compute busy (B at its cost, not its wall time)", 4 * MS, sr->busy_s[STREAM_COMPUTE]);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* (2) three backward GEMMs of 2 ms, each followed by the all-reduce of its bucket (3 MB: 3 ms + 0.1 ms)
 * on the comm stream, in the compiler's interleaved order. The all-reduces queue on the comm stream:
 * 2 .. 5.1, 5.1 .. 8.2, 8.2 .. 11.3 ms; the compute stream ends at 6 ms. */
static void test_bucket_chain(const ddp_profile *pr) {
  ddp_plan *p = new_plan(2);
  for (int r = 0; r < 2; r++)
    for (int b = 0; b < 3; b++) {
      gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
      event(p, r, I_EVENT_RECORD, STREAM_COMPUTE, b);
      event(p, r, I_EVENT_WAIT, STREAM_COMM, b);
      coll(p, r, I_ALL_REDUCE, STREAM_COMM, 750000);
    }
  ddp_sim *s = sim(p, pr);
  if (s) {
    const double ar[3][2] = {{2, 5.1}, {5.1, 8.2}, {8.2, 11.3}};
    for (int r = 0; r < 2; r++) {
      const ddp_sim_rank *sr = &s->ranks[r];
      for (int b = 0; b < 3; b++) {
        CHECK_T("gemm start", 2.0 * b * MS, sr->in[4 * b].start);
        CHECK_T("gemm end", 2.0 * (b + 1) * MS, sr->in[4 * b].end);
        CHECK_T("all-reduce start", ar[b][0] * MS, sr->in[4 * b + 3].start);
        CHECK_T("all-reduce end", ar[b][1] * MS, sr->in[4 * b + 3].end);
      }
      CHECK_T("step", 11.3 * MS, sr->step_s);
      CHECK_T("communication", 9.3 * MS, sr->comm_s);
      CHECK_T("exposed", 5.3 * MS, sr->exposed_s);
      CHECK_T("overlap", 4.0 / 9.3, 1 - sr->exposed_s / sr->comm_s);
    }
    CHECK_INT("2nd all-reduce waits for the 1st (stream order)", DEP_STREAM, s->ranks[0].in[7].dep);
    CHECK_INT("... its wait found the event already passed", DEP_STREAM, s->ranks[0].in[6].dep);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* (3) rank 1's GEMM takes 4 ms, rank 0's 2 ms; then an all-reduce on the compute stream. Both start it at
 * 4 ms (the barrier), so rank 0 waits 2 ms; rank 0's critical path runs through rank 1's GEMM. */
static void test_slow_rank(const ddp_profile *pr) {
  ddp_plan *p = new_plan(2);
  gemm(p, 0, STREAM_COMPUTE, 1000, 1000, 1000);
  gemm(p, 1, STREAM_COMPUTE, 1000, 1000, 2000);
  for (int r = 0; r < 2; r++) coll(p, r, I_ALL_REDUCE, STREAM_COMPUTE, 250000);
  ddp_sim *s = sim(p, pr);
  if (s) {
    for (int r = 0; r < 2; r++) {
      CHECK_T("all-reduce start (the slow rank's arrival)", 4 * MS, s->ranks[r].in[1].start);
      CHECK_T("step", 5.1 * MS, s->ranks[r].step_s);
      CHECK_T("exposed", 1.1 * MS, s->ranks[r].exposed_s);
    }
    CHECK_T("rank 0's GEMM", 2 * MS, s->ranks[0].in[0].end);
    CHECK_INT("rank 0 waited on the collective", DEP_COLLECTIVE, s->ranks[0].in[1].dep);
    CHECK_INT("... for rank 1", 1, s->ranks[0].in[1].dep_rank);
    int rk[8];
    int64_t ix[8];
    size_t n = ddp_sim_critical_path(p, s, 0, rk, ix, 8);
    CHECK_INT("rank 0's path length", 2, n);
    if (n == 2) CHECK(rk[1] == 1 && ix[1] == 0, "path[1] = rank %d #%lld, want rank 1 #0", rk[1], (long long)ix[1]);
  }
  ddp_sim_free(s);
  /* A rank whose collectives never meet the others' is refused with one line. */
  ddp_program_push(&p->ranks[0].step, &(ddp_instr){0});
  p->ranks[0].step.v[2] = ddp_instr_blank(I_ALL_GATHER, STREAM_COMPUTE);
  char err[256] = "";
  ddp_sim *bad = ddp_simulate(p, pr, 0, err, sizeof err);
  CHECK(bad == NULL, "an unmatched all-gather was simulated");
  CHECK_CONTAINS("deadlock", err, "rank 0: step instruction 2 (all_gather) never meets its partners");
  ddp_sim_free(bad);
  ddp_plan_free(p);
}

/* Phases from the timers, as ddprun's metrics: STEP_BEGIN, GEMM 2 ms, FORWARD_END, GEMM 2 ms, BACKWARD_END,
 * OPT_BEGIN, GEMM 0.25 ms, STEP_END: forward 2, backward 2, optimizer 0.25 ms; a plan without timers: -1. */
static void timer(ddp_plan *p, int role) {
  ddp_instr in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[TIMER_I_SLOT] = role, in.i[TIMER_I_ROLE] = role;
  ddp_program_push(&p->ranks[0].step, &in);
}
static void test_phases(const ddp_profile *pr) {
  ddp_plan *p = new_plan(1);
  timer(p, TIMER_STEP_BEGIN);
  gemm(p, 0, STREAM_COMPUTE, 1000, 1000, 1000);
  timer(p, TIMER_FORWARD_END);
  gemm(p, 0, STREAM_COMPUTE, 1000, 1000, 1000);
  timer(p, TIMER_BACKWARD_END);
  timer(p, TIMER_OPT_BEGIN);
  gemm(p, 0, STREAM_COMPUTE, 500, 500, 500);
  timer(p, TIMER_STEP_END);
  ddp_sim *s = sim(p, pr);
  if (s) {
    double f, b, o;
    ddp_sim_phases(p, s, 0, &f, &b, &o);
    CHECK_T("forward", 2 * MS, f);
    CHECK_T("backward", 2 * MS, b);
    CHECK_T("optimizer", 0.25 * MS, o);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
  p = new_plan(1);
  gemm(p, 0, STREAM_COMPUTE, 1000, 1000, 1000);
  s = sim(p, pr);
  if (s) {
    double f, b, o;
    ddp_sim_phases(p, s, 0, &f, &b, &o);
    CHECK(f == -1 && b == -1 && o == -1, "no timers: %g %g %g", f, b, o);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* Ring factors on 4 ranks, 1 MB per rank: all-reduce 2*3/4 of 1 MB, reduce-scatter and all-gather 3/4 of
 * the 4 MB whole, broadcast 1 MB; events, ranges and timers are free. */
static void test_costs(const ddp_profile *pr) {
  ddp_plan *p = new_plan(4);
  ddp_instr in = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMM);
  in.dt[0] = DT_F32;
  in.i[COLL_I_COUNT] = 250000;
  int comm = 0;
  CHECK_T("all-reduce", 0.1 * MS + 1.5 * MS, ddp_instr_cost(p, &in, pr, &comm));
  CHECK(comm == 1);
  in.opcode = I_REDUCE_SCATTER;
  CHECK_T("reduce-scatter", 0.1 * MS + 3 * MS, ddp_instr_cost(p, &in, pr, &comm));
  in.opcode = I_ALL_GATHER;
  CHECK_T("all-gather", 0.1 * MS + 3 * MS, ddp_instr_cost(p, &in, pr, &comm));
  in.opcode = I_BROADCAST;
  CHECK_T("broadcast", 0.1 * MS + 1 * MS, ddp_instr_cost(p, &in, pr, &comm));
  const int free_ops[] = {I_EVENT_RECORD, I_EVENT_WAIT, I_RANGE_PUSH, I_RANGE_POP, I_TIMER};
  for (size_t k = 0; k < sizeof free_ops / sizeof free_ops[0]; k++) {
    ddp_instr f = ddp_instr_blank(free_ops[k], STREAM_COMPUTE);
    CHECK_T(ddp_opcode_name(free_ops[k]), 0, ddp_instr_cost(p, &f, pr, &comm));
    CHECK(comm == 0);
  }
  /* bf16 GEMMs use the 16-bit throughput; a small one runs at the small fraction */
  ddp_profile q = *pr;
  q.gemm_tflops_16 = 4, q.gemm_small_dim = 600, q.gemm_small_scale = 0.5;
  ddp_instr g = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  g.dt[0] = g.dt[1] = g.dt[2] = g.dt[3] = DT_BF16;
  g.i[GEMM_I_M] = g.i[GEMM_I_N] = g.i[GEMM_I_K] = 1000, g.i[GEMM_I_BATCH] = 2;
  CHECK_T("bf16 GEMM", 1 * MS, ddp_instr_cost(p, &g, &q, &comm));
  g.i[GEMM_I_K] = 500;
  CHECK_T("small bf16 GEMM", 1 * MS, ddp_instr_cost(p, &g, &q, &comm));
  /* a memset of 1 MB: its bytes at 1 GB/s plus the launch */
  q.launch_us = 5;
  ddp_instr m = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
  ddp_tensor t = {.name = "buf", .dtype = DT_F32, .arena = ARENA_WORK, .ndim = 1, .shape = {250000}, .base = -1,
                  .bytes = 1000000, .param = -1};
  int32_t id = ddp_plan_add_tensor(p, &t);
  m.p[MEMSET_P_DST] = (ddp_bufref){id, ARENA_WORK, 0, 0};
  m.i[MEMSET_I_BYTES] = 1000000;
  CHECK_T("memset", 1 * MS + 5e-6, ddp_instr_cost(p, &m, &q, &comm));
  ddp_plan_free(p);
}

/* Memory classes: the arenas, with a persistent workspace tensor that an all-gather writes moved to the
 * communication buffers; gradients reduced in place stay gradients; the classes sum to the arenas. */
static void test_memory(void) {
  ddp_plan *p = new_plan(1);
  const uint64_t arenas[ARENA_COUNT] = {[ARENA_PARAM] = 1000, [ARENA_GRAD] = 2000, [ARENA_OPT] = 3000,
                                        [ARENA_ACT] = 4000, [ARENA_WORK] = 5000, [ARENA_IO] = 600};
  memcpy(p->ranks[0].arena_bytes, arenas, sizeof arenas);
  ddp_tensor g = {.name = "grads", .flags = TF_GRAD | TF_PERSISTENT, .dtype = DT_F32, .arena = ARENA_GRAD, .ndim = 1,
                  .shape = {500}, .base = -1, .bytes = 2000, .param = -1};
  ddp_tensor b = {.name = "gather", .flags = TF_PERSISTENT, .dtype = DT_F32, .arena = ARENA_WORK, .ndim = 1,
                  .shape = {256}, .base = -1, .bytes = 1024, .param = -1};
  int32_t gi = ddp_plan_add_tensor(p, &g), bi = ddp_plan_add_tensor(p, &b);
  ddp_instr in = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMM);
  in.p[0] = in.p[1] = (ddp_bufref){gi, ARENA_GRAD, 0, 0};
  ddp_program_push(&p->ranks[0].step, &in);
  in = ddp_instr_blank(I_ALL_GATHER, STREAM_COMM);
  in.p[0] = (ddp_bufref){gi, ARENA_GRAD, 0, 0};
  in.p[1] = (ddp_bufref){bi, ARENA_WORK, 0, 0};
  ddp_program_push(&p->ranks[0].step, &in);
  uint64_t mc[MEM_COUNT], sum = 0;
  ddp_memory_classes(p, 0, mc);
  CHECK_INT("parameters", 1000, mc[MEM_PARAMS]);
  CHECK_INT("gradients", 2000, mc[MEM_GRADS]);
  CHECK_INT("optimizer", 3000, mc[MEM_OPT]);
  CHECK_INT("activations", 4000, mc[MEM_ACT]);
  CHECK_INT("communication buffers", 1024, mc[MEM_COMM]);
  CHECK_INT("workspace", 5000 - 1024, mc[MEM_WORK]);
  CHECK_INT("io", 600, mc[MEM_IO]);
  for (int c = 0; c < MEM_COUNT; c++) sum += mc[c];
  CHECK_INT("sum", 15600, sum);
  ddp_plan_free(p);
}

static const char *good =
    "{\"name\": \"lab\", \"launch_us\": 3, \"hbm_gbps\": 3000, \"gemm_tflops_16\": 600, \"gemm_tflops_32\": 40,\n"
    " \"gemm_small_dim\": 512, \"gemm_small_scale\": 0.25, \"attention_tflops\": 200,\n"
    " \"collectives\": {\"all_reduce\": {\"alpha_us\": 11, \"busbw_gbps\": 250},\n"
    "  \"reduce_scatter\": {\"alpha_us\": 12, \"busbw_gbps\": 260}, \"all_gather\": {\"alpha_us\": 13, \"busbw_gbps\": 270},\n"
    "  \"broadcast\": {\"alpha_us\": 14, \"busbw_gbps\": 280}, \"send_recv\": {\"alpha_us\": 15, \"busbw_gbps\": 290}}}";

/* good with the first `from` replaced by `to` */
static char *mutate(const char *from, const char *to) {
  const char *at = strstr(good, from);
  if (!at) return NULL;
  size_t n = strlen(good) - strlen(from) + strlen(to) + 1;
  char *s = malloc(n);
  snprintf(s, n, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
  return s;
}

static void test_parser(void) {
  ddp_profile pr;
  char err[512] = "";
  if (CHECK(ddp_profile_parse(good, strlen(good), "lab.json", &pr, err, sizeof err) == 0, "%s", err)) {
    CHECK_STR("name", "lab", pr.name);
    CHECK(pr.launch_us == 3 && pr.hbm_gbps == 3000 && pr.gemm_tflops_16 == 600 && pr.gemm_tflops_32 == 40);
    CHECK(pr.gemm_small_dim == 512 && pr.gemm_small_scale == 0.25 && pr.attention_tflops == 200);
    for (int k = 0; k < COST_COLL_COUNT; k++)
      CHECK(pr.coll[k].alpha_us == 11 + k && pr.coll[k].busbw_gbps == 250 + 10 * k, "%s", ddp_cost_coll_name(k));
  }
  static const struct { const char *from, *to, *want; } bad[] = {
      {"\"name\": \"lab\"", "\"name\": \"\"", "lab.json: name: must be a non-empty string"},
      {"\"name\": \"lab\", ", "", "lab.json: name: missing"},
      {"\"launch_us\": 3", "\"launch_us\": -1", "lab.json: launch_us: must be a number >= 0"},
      {"\"hbm_gbps\": 3000", "\"hbm_gbps\": 0", "lab.json: hbm_gbps: must be a number > 0 and <= 1e+301 (got 0)"},
      {"\"hbm_gbps\": 3000, ", "", "lab.json: hbm_gbps: missing (a number)"},
      {"\"gemm_tflops_16\": 600", "\"gemm_tflops_16\": \"fast\"", "lab.json: gemm_tflops_16: must be a number"},
      {"\"gemm_tflops_32\": 40", "\"gemm_tflops_32\": -40", "lab.json: gemm_tflops_32: must be a number > 0"},
      {"\"gemm_small_dim\": 512", "\"gemm_small_dim\": 0", "lab.json: gemm_small_dim: must be a number >= 1"},
      {"\"gemm_small_scale\": 0.25", "\"gemm_small_scale\": 1.5", "lab.json: gemm_small_scale: must be a number > 0 and <= 1"},
      {"\"attention_tflops\": 200,", "", "lab.json: attention_tflops: missing"},
      {"\"launch_us\": 3", "\"launch_us\": 3, \"turbo\": 1", "lab.json: turbo: unknown field"},
      {"\"busbw_gbps\": 250", "\"busbw_gbps\": 0", "lab.json: collectives.all_reduce.busbw_gbps: must be a number > 0"},
      {"\"alpha_us\": 12", "\"alpha_us\": null", "lab.json: collectives.reduce_scatter.alpha_us: must be a number"},
      {"\"alpha_us\": 13, ", "", "lab.json: collectives.all_gather.alpha_us: missing"},
      {"\"alpha_us\": 14", "\"alpha_us\": 14, \"beta\": 2", "lab.json: collectives.broadcast.beta: unknown field"},
      {", \"send_recv\": {\"alpha_us\": 15, \"busbw_gbps\": 290}", "", "lab.json: collectives.send_recv: missing"},
      {"\"send_recv\"", "\"allreduce\"", "lab.json: collectives.allreduce: unknown field"},
      {"\"collectives\": {", "\"collectives\": 7, \"x\": {", "lab.json: x: unknown field"},
      {"\"launch_us\": 3,", "\"launch_us\": 3,,", "lab.json: line 1:"},
      {"\"launch_us\": 3", "\"launch_us\": 3, \"launch_us\": 4", "lab.json: line 1:"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char *s = mutate(bad[k].from, bad[k].to);
    if (!CHECK(s != NULL, "case %zu: '%s' not in the good profile", k, bad[k].from)) continue;
    ddp_profile keep = pr;
    err[0] = 0;
    CHECK(ddp_profile_parse(s, strlen(s), "lab.json", &pr, err, sizeof err) != 0, "case %zu accepted", k);
    CHECK_CONTAINS("one clear line", err, bad[k].want);
    CHECK(!strchr(err, '\n'), "case %zu: more than one line: %s", k, err);
    CHECK(memcmp(&keep, &pr, sizeof pr) == 0, "case %zu changed the profile", k);
    free(s);
  }
  /* docs/profiles/default_h100_h200.json is the built-in default, field for field */
  const char *src = getenv("DDP_SOURCE_DIR");
  if (CHECK(src != NULL, "DDP_SOURCE_DIR is not set")) {
    char path[4096];
    ddp_profile def, file;
    ddp_profile_default(&def);
    memset(&file, 0, sizeof file);
    snprintf(path, sizeof path, "%s/docs/profiles/default_h100_h200.json", src);
    if (CHECK(ddp_profile_read(path, &file, err, sizeof err) == 0, "%s", err))
      CHECK(memcmp(&def, &file, sizeof def) == 0, "%s differs from ddp_profile_default", path);
    /* the calibrated 2 x H200 profile of docs/EXPLAIN.md ("GEMMs by shape") still reads, table and scale */
    snprintf(path, sizeof path, "%s/docs/profiles/h200_x2_2026-11-24.json", src);
    if (CHECK(ddp_profile_read(path, &file, err, sizeof err) == 0, "%s", err))
      CHECK(file.ngemm_shapes == 648 && file.gemm_table_scale > 1 && file.gemm_table_scale < 1.3,
            "%s: %d GEMM shapes, scale %g", path, file.ngemm_shapes, file.gemm_table_scale);
    /* the one-GPU H200 profile of 2026-11-28 (the Hopper attention kernels; docs/PERFORMANCE.md) reads too,
     * with its measured attention shape */
    snprintf(path, sizeof path, "%s/docs/profiles/h200_2026-11-28.json", src);
    if (CHECK(ddp_profile_read(path, &file, err, sizeof err) == 0, "%s", err))
      CHECK(file.ngemm_shapes == 648 && file.nattn_shapes == 1 && file.attn_shape[0].t == 512 &&
                file.attn_shape[0].dh == 64 && file.attn_shape[0].tflops > 200,
            "%s: %d GEMM shapes, %d attention shapes", path, file.ngemm_shapes, file.nattn_shapes);
  }
  err[0] = 0;
  CHECK(ddp_profile_read("/nonexistent/prof.json", &pr, err, sizeof err) != 0);
  CHECK_CONTAINS("missing file", err, "/nonexistent/prof.json");
}

/* (5) a send posted long before its receive: rank 0 sends then runs a 2 ms GEMM; rank 1 runs a 4 ms GEMM
 * then receives. A send of 1 MB (up to NCCL's buffering, 16 MiB) runs at once (0.1 ms + 1 MB at 1 GB/s:
 * 0 .. 1.1 ms), rank 0's GEMM follows (1.1 .. 3.1 ms) and the receive runs from 4 ms (to 5.1); a send of 32
 * MiB waits for its receive (rendezvous: both 4 .. 4.1 + 33.554432 ms), and rank 0's GEMM after it. */
static void test_p2p(const ddp_profile *pr) {
  for (int big = 0; big < 2; big++) {
    int64_t count = big ? (int64_t)8 << 20 : 250000; /* 32 MiB or 1 MB of f32 */
    double c = 0.1e-3 + 4.0 * (double)count / 1e9;
    ddp_plan *p = new_plan(2);
    p2p(p, 0, I_SEND, 1, count);
    gemm(p, 0, STREAM_COMPUTE, 1000, 1000, 1000); /* 2 ms */
    gemm(p, 1, STREAM_COMPUTE, 1000, 1000, 2000); /* 4 ms */
    p2p(p, 1, I_RECV, 0, count);
    ddp_sim *s = sim(p, pr);
    if (s) {
      const ddp_sim_instr *snd = &s->ranks[0].in[0], *g0 = &s->ranks[0].in[1], *rcv = &s->ranks[1].in[1];
      CHECK_T(big ? "rendezvous send start" : "eager send start", big ? 4e-3 : 0, snd->start);
      CHECK_T("send end", (big ? 4e-3 : 0) + c, snd->end);
      CHECK_T("rank 0's GEMM after the send", (big ? 4e-3 : 0) + c, g0->start);
      CHECK_T("receive start", 4e-3, rcv->start);
      CHECK_T("receive end", 4e-3 + c, rcv->end);
    }
    ddp_sim_free(s);
    ddp_plan_free(p);
  }
}

/* The profile of (7) and (8): an SM collective takes half the compute's rate beside it, the copy engines a
 * tenth. */
static ddp_profile with_shares(const ddp_profile *base) {
  ddp_profile pr = *base;
  pr.collective_share = 0.5;
  pr.copy_engine_share = 0.1;
  return pr;
}

/* Rank r's compute A (2 ms), record e0, and the communication stream waiting for it. */
static void a_then_comm(ddp_plan *p, int r) {
  gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
  event(p, r, I_EVENT_RECORD, STREAM_COMPUTE, 0);
  event(p, r, I_EVENT_WAIT, STREAM_COMM, 0);
}

/* (7) nccl.all_reduce = "peer_copy": compute A (2 ms), record e0, B (2 ms); comm: wait e0, PEER_BARRIER (no
 * bytes: the send_recv alpha, 0.1 ms), PEER_COPY of 1 MB from the other rank (1 ms + 0.1 ms). With
 * collective_share 0.5 and copy_engine_share 0.1 the barrier slows nothing (flags, no kernel) and the copy
 * slows B by a tenth: B does 0.1 ms of work in 2 .. 2.1, 0.99 in 2.1 .. 3.2, the last 0.91 alone: 4.11 ms. */
static void test_peer(const ddp_profile *base) {
  const ddp_profile pr = with_shares(base);
  ddp_plan *p = new_plan(2);
  for (int r = 0; r < 2; r++) {
    a_then_comm(p, r);
    coll(p, r, I_PEER_BARRIER, STREAM_COMM, 0);
    coll(p, r, I_PEER_COPY, STREAM_COMM, 250000);
    gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
  }
  ddp_sim *s = sim(p, &pr);
  if (s) {
    const ddp_sim_rank *sr = &s->ranks[0];
    CHECK_T("barrier end", 2.1 * MS, sr->in[3].end);
    CHECK_T("copy end", 3.2 * MS, sr->in[4].end);
    CHECK_T("B end (slowed by the copy only)", 4.11 * MS, sr->in[5].end);
  }
  ddp_sim_free(s);
  ddp_plan_free(p);
}

/* (8) nccl.movement = "peer_copy": compute A (2 ms), record e0, B (2 ms); comm: wait e0, ALL_GATHER of 1 MB
 * per rank (2 ranks: 1 MB on the wire, 1 ms + 0.1 ms, 2 .. 3.1). NCCL's (path 0, no windows) takes SMs: with
 * collective_share 0.5 B does 0.55 ms of work beside it and the last 1.45 alone, 4.55 ms; moved by copy-engine
 * pulls (path 1) it slows B by copy_engine_share 0.1: 0.99 beside it, 1.01 alone, 4.11 ms. */
static void test_moved(const ddp_profile *base) {
  const ddp_profile pr = with_shares(base);
  for (int path = 0; path < 2; path++) {
    ddp_plan *p = new_plan(2);
    for (int r = 0; r < 2; r++) {
      a_then_comm(p, r);
      coll(p, r, I_ALL_GATHER, STREAM_COMM, 250000);
      p->ranks[r].step.v[p->ranks[r].step.n - 1].i[COLL_I_PATH] = path;
      gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
    }
    CHECK_INT("on the copy engines", path, ddp_coll_on_copy_engines(p, &p->ranks[0].step.v[3]));
    ddp_sim *s = sim(p, &pr);
    if (s) {
      CHECK_T("all-gather end", 3.1 * MS, s->ranks[0].in[3].end);
      CHECK_T(path ? "B end (slowed by the copy engines' share)" : "B end (slowed by the SM collective's share)",
              (path ? 4.11 : 4.55) * MS, s->ranks[0].in[4].end);
    }
    ddp_sim_free(s);
    ddp_plan_free(p);
  }
}

/* (9) flat DDP: compute A (2 ms), record e0; comm: wait e0, all-reduce of 1 MB (2 .. 3.1 ms), record e1;
 * compute: wait e1, the update U (2 ms: 3.1 .. 5.1). Nothing overlaps the all-reduce, so all 1.1 ms of it
 * are exposed, with collective_share 0.5 too: in the run without communication cost the all-reduce still
 * occupies 2 .. 3.1 (to slow the work beside it), but U waits for it and must not be slowed by it, else
 * that run ends at 4.65 instead of 4 and only 0.45 ms read as exposed (overlap 0.59 where there is none).
 * A kernel on a third stream that did not wait for it (V, 2 ms ready at 2) is still slowed. */
static void test_waited(const ddp_profile *base) {
  const ddp_profile pr = with_shares(base);
  for (int third = 0; third < 2; third++) {
    ddp_plan *p = new_plan(2);
    p->nstreams = 3;
    for (int r = 0; r < 2; r++) {
      a_then_comm(p, r);
      coll(p, r, I_ALL_REDUCE, STREAM_COMM, 250000);
      event(p, r, I_EVENT_RECORD, STREAM_COMM, 1);
      event(p, r, I_EVENT_WAIT, STREAM_COMPUTE, 1);
      gemm(p, r, STREAM_COMPUTE, 1000, 1000, 1000);
      if (third) {
        event(p, r, I_EVENT_WAIT, 2, 0);
        gemm(p, r, 2, 1000, 1000, 1000);
      }
    }
    ddp_sim *s = sim(p, &pr);
    if (s) {
      const ddp_sim_rank *sr = &s->ranks[0];
      if (!third) {
        CHECK_T("U end", 5.1 * MS, sr->in[6].end);
        CHECK_T("step", 5.1 * MS, sr->step_s);
        CHECK_T("exposed: the whole all-reduce", 1.1 * MS, sr->exposed_s);
      } else { /* V (stream 2, ready at 2) runs beside the all-reduce at half rate: 0.55 ms of work by 3.1, U
                * takes the device 3.1 .. 5.1, V's last 1.45 ms run 5.1 .. 6.55 (6.0 if it were not slowed) */
        CHECK_T("V end", 6.55 * MS, sr->in[8].end);
      }
    }
    ddp_sim_free(s);
    ddp_plan_free(p);
  }
}

int main(void) {
  ddp_profile pr = test_profile();
  test_waited(&pr);
  test_peer(&pr);
  test_moved(&pr);
  test_p2p(&pr);
  test_two_streams(&pr);
  test_split_kernel(&pr);
  test_bucket_chain(&pr);
  test_slow_rank(&pr);
  test_phases(&pr);
  test_costs(&pr);
  test_memory();
  test_parser();
  return check_report("test_sim");
}

/* tests/unit/explain/test_energy.c: the power model of `ddpc explain` (compiler/explain/energy.c) on a
 * hand-made plan whose prices make the arithmetic exact, and its profile field. (1) A rank's joules: bf16
 * GEMM FLOPs at j_per_tflop, f32 GEMM and attention FLOPs at j_per_tflop_fp32, a memory-bound kernel's
 * bytes (an AdamW: read-modify-write operands twice) at j_per_gb_hbm, an all-reduce's ring traffic at
 * j_per_gb_nccl, an all-gather on symmetric windows with the zero-CTA policy at j_per_gb_copy_engine (the
 * same all-gather on plain arenas at j_per_gb_nccl), a receive not at all (its sender pays); the floor is
 * joules / (limit - idle). (2) A profile without a power model (limit 0) has no energy. The predicted step
 * is the larger of the simulated step and the floor. (3) "power" in a profile file: optional (the built-in
 * default's when left out), every field range-checked, unknown fields refused, idle below the limit; each
 * bad value one line naming it. */
#include "check.h"
#include "explain.h"
#include "profile_fixture.h"
#include "work.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int near(double want, double got) { return fabs(want - got) <= 1e-12 + 1e-12 * fabs(want); }
#define CHECK_T(what, want, got) CHECK(near(want, got), "%s: want %.15g, got %.15g", what, (double)(want), (double)(got))

static ddp_profile power_profile(void) {
  ddp_profile pr;
  ddp_profile_default(&pr);
  pr.power.limit_w = 1000, pr.power.idle_w = 100;
  pr.power.j_per_tflop = 2, pr.power.j_per_tflop_fp32 = 11, pr.power.j_per_gb_hbm = 3;
  pr.power.j_per_gb_copy_engine = 5, pr.power.j_per_gb_nccl = 7;
  return pr;
}

static void push_coll(ddp_plan *p, int opcode, int64_t count) {
  ddp_instr co = ddp_instr_blank(opcode, 1);
  co.dt[0] = co.dt[1] = DT_F32;
  co.i[COLL_I_COUNT] = count;
  ddp_program_push(&p->ranks[0].step, &co);
}

/* Rank 0 of 2: a 1000^3 f32 GEMM and a 1000^3 bf16 one (0.002 TFLOP each), an f32 attention forward of
 * 1 x 1 x 100 x 100 x 10 (4e5 FLOPs: 4e-7 TFLOP), an AdamW of 1000 parameters (28 * 1000 + 32 bytes), an
 * all-reduce of 1e6 f32 (2(n-1)/n = 1: 4e6 bytes sent), an all-gather of 1e6 f32 per rank ((n-1)/n of 2
 * ranks' 8e6 bytes: 4e6 sent) and a receive of 1e6 f32. */
static ddp_plan *energy_plan(int reg, int cta) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 2;
  p->meta.nccl_register = reg;
  p->meta.nccl_cta_policy = cta;
  p->nstreams = 2;
  p->ranks = calloc(2, sizeof *p->ranks);
  ddp_instr g = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  g.dt[0] = g.dt[1] = g.dt[2] = g.dt[3] = DT_F32;
  g.i[GEMM_I_M] = 1000, g.i[GEMM_I_N] = 1000, g.i[GEMM_I_K] = 1000, g.i[GEMM_I_BATCH] = 1;
  ddp_program_push(&p->ranks[0].step, &g);
  g.dt[0] = g.dt[1] = g.dt[2] = DT_BF16;
  ddp_program_push(&p->ranks[0].step, &g);
  ddp_instr at = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  at.op = OP_ATTN_FWD;
  at.dt[ATTN_P_Q] = at.dt[ATTN_P_K] = at.dt[ATTN_P_V] = at.dt[ATTN_P_O] = DT_F32;
  at.i[ATTN_I_B] = 1, at.i[ATTN_I_H] = 1, at.i[ATTN_I_T] = 100, at.i[ATTN_I_DH] = 10, at.i[ATTN_I_CAUSAL] = 0;
  ddp_program_push(&p->ranks[0].step, &at);
  ddp_instr a = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  a.op = OP_ADAMW;
  a.dt[ADAMW_P_PARAM] = a.dt[ADAMW_P_M] = a.dt[ADAMW_P_V] = a.dt[ADAMW_P_SCALARS] = DT_F32;
  a.dt[ADAMW_P_GRAD] = a.dt[ADAMW_P_COPY] = DT_BF16;
  for (int k = ADAMW_P_PARAM; k <= ADAMW_P_SCALARS; k++) a.p[k].tensor = 0;
  a.i[ADAMW_I_N] = 1000;
  ddp_program_push(&p->ranks[0].step, &a);
  push_coll(p, I_ALL_REDUCE, 1000000);
  push_coll(p, I_ALL_GATHER, 1000000);
  push_coll(p, I_RECV, 1000000);
  return p;
}

static void test_rank_energy(void) {
  ddp_profile pr = power_profile();
  static const struct {
    int reg, cta;
    double gather_j_per_gb;
    const char *what;
  } cases[] = {
      {NCCL_REGISTER_WINDOW, NCCL_CTA_ZERO, 5, "windows + zero CTA: the all-gather on the copy engines"},
      {NCCL_REGISTER_NONE, NCCL_CTA_DEFAULT, 7, "plain arenas: the all-gather in NCCL's kernels"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ddp_plan *p = energy_plan(cases[c].reg, cases[c].cta);
    ddp_step_energy e;
    if (CHECK(ddp_rank_energy(p, &pr, 0, &e) == 0, "%s: no energy", cases[c].what)) {
      const double hbm_gb = (28.0 * 1000 + 32) / 1e9, link_j = 0.004 * 7 + 0.004 * cases[c].gather_j_per_gb;
      const double compute_j = 0.002 * 2 + 0.0020004 * 11;
      CHECK_T(cases[c].what, 0.0040004, e.tflop);
      CHECK_T(cases[c].what, 0.0020004, e.tflop_fp32);
      CHECK_T(cases[c].what, compute_j, e.compute_j);
      CHECK_T(cases[c].what, hbm_gb, e.hbm_gb);
      CHECK_T(cases[c].what, 3 * hbm_gb, e.memory_j);
      CHECK_T(cases[c].what, 0.008, e.link_gb); /* the receive is its sender's */
      CHECK_T(cases[c].what, link_j, e.link_j);
      CHECK_T(cases[c].what, compute_j + 3 * hbm_gb + link_j, e.j);
      CHECK_T(cases[c].what, e.j / 900, e.floor_s);
    }
    ddp_plan_free(p);
  }
  ddp_plan *p = energy_plan(NCCL_REGISTER_NONE, NCCL_CTA_DEFAULT);
  ddp_step_energy e;
  pr.power.limit_w = 0;
  CHECK(ddp_rank_energy(p, &pr, 0, &e) != 0, "limit 0: the power model is off");
  ddp_plan_free(p);
}

/* The predicted step: the larger of the simulated step and the floor; the simulated step without a model. */
static void test_rank_step(void) {
  ddp_profile pr = power_profile();
  ddp_plan *p = energy_plan(NCCL_REGISTER_NONE, NCCL_CTA_DEFAULT);
  ddp_step_energy e;
  int fb = -1;
  if (CHECK(ddp_rank_energy(p, &pr, 0, &e) == 0, "no energy")) {
    CHECK_T("simulated step below the floor: the floor", e.floor_s, ddp_rank_step_s(p, &pr, 0, 0.5 * e.floor_s, &fb));
    CHECK(fb == 1, "below the floor: not said to be the floor (%d)", fb);
    CHECK_T("simulated step above the floor: the simulated step", 2 * e.floor_s,
            ddp_rank_step_s(p, &pr, 0, 2 * e.floor_s, &fb));
    CHECK(fb == 0, "above the floor: said to be the floor (%d)", fb);
  }
  pr.power.limit_w = 0;
  CHECK_T("no power model: the simulated step", 1e-9, ddp_rank_step_s(p, &pr, 0, 1e-9, &fb));
  CHECK(fb == 0, "no power model: said to be the floor (%d)", fb);
  ddp_plan_free(p);
}

static void test_power_field(void) {
  const char *base = PROFILE_JSON_WITH("%s");
  const char *full = "\"power\": {\"limit_w\": 600, \"idle_w\": 90, \"j_per_tflop\": 1.5, \"j_per_tflop_fp32\": 9, "
                     "\"j_per_gb_hbm\": 0.2, "
                     "\"j_per_gb_copy_engine\": 0.5, \"j_per_gb_nccl\": 0.6%s}, ";
  char json[2048], field[512], err[256] = "";
  ddp_profile pr, def;
  ddp_profile_default(&def);
  snprintf(json, sizeof json, base, "");
  if (CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) == 0, "%s", err)) {
    CHECK_T("left out: the default's limit", def.power.limit_w, pr.power.limit_w);
    CHECK_T("left out: the default's J/GB on the copy engines", def.power.j_per_gb_copy_engine,
            pr.power.j_per_gb_copy_engine);
  }
  CHECK(def.power.limit_w > 0 && def.power.idle_w < def.power.limit_w, "the built-in default has a power model");
  snprintf(field, sizeof field, full, "");
  snprintf(json, sizeof json, base, field);
  if (CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) == 0, "%s", err)) {
    CHECK_T("limit_w", 600, pr.power.limit_w);
    CHECK_T("idle_w", 90, pr.power.idle_w);
    CHECK_T("j_per_tflop", 1.5, pr.power.j_per_tflop);
    CHECK_T("j_per_tflop_fp32", 9, pr.power.j_per_tflop_fp32);
    CHECK_T("j_per_gb_hbm", 0.2, pr.power.j_per_gb_hbm);
    CHECK_T("j_per_gb_copy_engine", 0.5, pr.power.j_per_gb_copy_engine);
    CHECK_T("j_per_gb_nccl", 0.6, pr.power.j_per_gb_nccl);
  }
  snprintf(json, sizeof json, base,
           "\"power\": {\"limit_w\": 0, \"idle_w\": 0, \"j_per_tflop\": 0, \"j_per_tflop_fp32\": 0, \"j_per_gb_hbm\": 0, "
           "\"j_per_gb_copy_engine\": 0, \"j_per_gb_nccl\": 0}, ");
  if (CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) == 0, "%s", err))
    CHECK_T("limit_w 0: the model off", 0, pr.power.limit_w);
  static const char *const bad[][2] = {
      {"\"power\": 3, ", "p.json: power: must be an object"},
      {"\"power\": {\"limit_w\": 700}, ", "p.json: power.idle_w: missing (a number)"},
      {"\"power\": {\"limit_w\": 700, \"idle_w\": 100, \"j_per_tflop\": 1, \"j_per_gb_hbm\": 1, "
       "\"j_per_gb_copy_engine\": 1, \"j_per_gb_nccl\": 1}, ",
       "p.json: power.j_per_tflop_fp32: missing (a number)"},
      {"\"power\": {\"limit_w\": 700, \"idle_w\": 100, \"j_per_tflop\": 1, \"j_per_tflop_fp32\": 1, "
       "\"j_per_gb_hbm\": 1, \"j_per_gb_copy_engine\": 1, \"j_per_gb_nccl\": \"x\"}, ",
       "p.json: power.j_per_gb_nccl: must be a number"},
      {"\"power\": {\"limit_w\": -1, \"idle_w\": 100, \"j_per_tflop\": 1, \"j_per_tflop_fp32\": 1, "
       "\"j_per_gb_hbm\": 1, \"j_per_gb_copy_engine\": 1, \"j_per_gb_nccl\": 1}, ",
       "p.json: power.limit_w: must be a number >= 0 and <= 100000 (got -1)"},
      {"\"power\": {\"limit_w\": 700, \"idle_w\": 700, \"j_per_tflop\": 1, \"j_per_tflop_fp32\": 1, "
       "\"j_per_gb_hbm\": 1, \"j_per_gb_copy_engine\": 1, \"j_per_gb_nccl\": 1}, ",
       "p.json: power.idle_w: must be below power.limit_w (got 700 >= 700)"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    snprintf(json, sizeof json, base, bad[k][0]);
    CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) != 0, "%s", bad[k][0]);
    CHECK_STR(bad[k][0], bad[k][1], err);
  }
  snprintf(field, sizeof field, full, ", \"watts\": 1");
  snprintf(json, sizeof json, base, field);
  CHECK(ddp_profile_parse(json, strlen(json), "p.json", &pr, err, sizeof err) != 0, "an unknown power field");
  CHECK_STR("unknown power field", "p.json: power.watts: unknown field", err);
}

int main(void) {
  test_rank_energy();
  test_rank_step();
  test_power_field();
  return check_report("test_energy");
}

/* tests/fuzz/fuzz_profile.c: fuzz target of the device profile reader of `ddpc explain` and `ddpc
 * --profile` (compiler/explain/profile.c). The input is a whole profile file for ddp_profile_parse. A
 * refusal must be one non-empty line. A profile the reader accepts must keep the ranges it promises
 * (every rate positive and finite, the shares in [0, 0.99], the tables within their sizes, the power
 * model's idle below its limit), parse to the same profile again, and price a small plan (a GEMM, an
 * attention forward, a memory-bound kernel, an all-reduce and a copy-engine all-gather) to finite,
 * non-negative seconds and joules, and a predicted step no shorter than the simulated one. */
#include "explain.h"
#include "fuzz_util.h"
#include "work.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void want(int ok, const char *what) {
  if (!ok) fuzz_die("ddp_profile_parse", what);
}

static int finite_pos(double x) { return isfinite(x) && x > 0; }

/* Rank 0 of 2 on symmetric windows with the zero-CTA policy. */
static ddp_plan *small_plan(void) {
  ddp_plan *p = ddp_plan_new();
  if (!p) fuzz_die("ddp_plan_new", "out of memory");
  p->meta.world = 2;
  p->meta.nccl_register = NCCL_REGISTER_WINDOW;
  p->meta.nccl_cta_policy = NCCL_CTA_ZERO;
  p->nstreams = 2;
  p->ranks = calloc(2, sizeof *p->ranks);
  if (!p->ranks) fuzz_die("calloc", "out of memory");
  ddp_instr g = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  g.dt[0] = g.dt[1] = g.dt[2] = g.dt[3] = DT_BF16;
  g.i[GEMM_I_M] = 2048, g.i[GEMM_I_N] = 1600, g.i[GEMM_I_K] = 6400, g.i[GEMM_I_BATCH] = 1;
  ddp_program_push(&p->ranks[0].step, &g);
  ddp_instr a = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  a.op = OP_ATTN_FWD;
  a.i[ATTN_I_B] = 4, a.i[ATTN_I_H] = 25, a.i[ATTN_I_T] = 512, a.i[ATTN_I_DH] = 64, a.i[ATTN_I_CAUSAL] = 1;
  ddp_program_push(&p->ranks[0].step, &a);
  ddp_instr m = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  m.op = OP_ADAMW;
  m.dt[ADAMW_P_PARAM] = m.dt[ADAMW_P_M] = m.dt[ADAMW_P_V] = m.dt[ADAMW_P_SCALARS] = DT_F32;
  m.dt[ADAMW_P_GRAD] = m.dt[ADAMW_P_COPY] = DT_BF16;
  for (int k = ADAMW_P_PARAM; k <= ADAMW_P_SCALARS; k++) m.p[k].tensor = 0;
  m.i[ADAMW_I_N] = 1 << 20;
  ddp_program_push(&p->ranks[0].step, &m);
  static const int colls[2] = {I_ALL_REDUCE, I_ALL_GATHER};
  for (int k = 0; k < 2; k++) {
    ddp_instr c = ddp_instr_blank(colls[k], 1);
    c.dt[0] = c.dt[1] = DT_F32;
    c.i[COLL_I_COUNT] = 1 << 20;
    ddp_program_push(&p->ranks[0].step, &c);
  }
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ddp_plan *plan;
  if (!plan) plan = small_plan();
  char err[1024] = "";
  ddp_profile pr;
  if (ddp_profile_parse((const char *)data, size, "fuzz.json", &pr, err, sizeof err) != 0) {
    fuzz_check_message("ddp_profile_parse", err);
    return 0;
  }
  want(pr.name[0] != 0 && memchr(pr.name, 0, sizeof pr.name) != NULL, "a name, terminated");
  want(isfinite(pr.launch_us) && pr.launch_us >= 0, "launch_us");
  want(finite_pos(pr.hbm_gbps) && finite_pos(pr.gemm_tflops_16) && finite_pos(pr.gemm_tflops_32) &&
           finite_pos(pr.attention_tflops), "a rate not positive and finite");
  want(pr.gemm_small_scale > 0 && pr.gemm_small_scale <= 1 && pr.gemm_small_dim >= 1, "gemm_small_*");
  want(pr.collective_share >= 0 && pr.collective_share <= 0.99 && pr.copy_engine_share >= 0 &&
           pr.copy_engine_share <= 0.99, "a share out of [0, 0.99]");
  want(pr.nattn_shapes >= 0 && pr.nattn_shapes <= DDP_PROFILE_ATTN_SHAPES && pr.ngemm_shapes >= 0 &&
           pr.ngemm_shapes <= DDP_PROFILE_GEMM_SHAPES, "a table past its size");
  for (int k = 0; k < COST_COLL_COUNT; k++)
    want(isfinite(pr.coll[k].alpha_us) && pr.coll[k].alpha_us >= 0 && finite_pos(pr.coll[k].busbw_gbps), "a collective");
  want(pr.power.limit_w >= 0 && (pr.power.limit_w == 0 || pr.power.idle_w < pr.power.limit_w), "the power limit");
  ddp_profile again;
  want(ddp_profile_parse((const char *)data, size, "fuzz.json", &again, err, sizeof err) == 0 &&
           memcmp(&pr, &again, sizeof pr) == 0, "the same text parses to another profile");
  const ddp_program *prog = &plan->ranks[0].step;
  for (uint32_t k = 0; k < prog->n; k++) {
    int comm = 0;
    double t = ddp_instr_cost(plan, &prog->v[k], &pr, &comm);
    want(isfinite(t) && t >= 0, "an instruction priced to a time not finite or negative");
  }
  ddp_step_energy e;
  if (ddp_rank_energy(plan, &pr, 0, &e) == 0)
    want(isfinite(e.j) && e.j >= 0 && isfinite(e.floor_s) && e.floor_s >= 0, "energy not finite or negative");
  else
    want(pr.power.limit_w == 0, "no energy with a power limit");
  int floor_bound = -1;
  double step = ddp_rank_step_s(plan, &pr, 0, 1e-3, &floor_bound);
  want(isfinite(step) && step >= 1e-3 && floor_bound == (step > 1e-3), "the predicted step: not the larger of the two");
  return 0;
}

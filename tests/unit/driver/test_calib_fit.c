/* tests/unit/driver/test_calib_fit.c: the fits of `ddprun --calibrate` (runtime/bench/calib_fit.c) on a
 * hand-made 2-rank plan whose per-instruction times are made from known figures (launch 5 us, HBM 2000
 * GB/s, bf16 GEMMs 400 TFLOP/s large and 100 small, f32 GEMMs 40, attention 150 TFLOP/s, all-reduce alpha
 * 15 us and busbw 120 GB/s): every figure comes back; a collective of one size only, and a kind the plan
 * lacks, stay unmeasured with their reason; the least-squares line, the medians (rows with unrecorded
 * entries), a fit with a negative intercept (refitted through 0), the calibration plan check, and a plan
 * with no memory-bound kernels (one line); collective_share from compute timed beside collectives at 70% of
 * the rates of the same work alone (0.3), the rates themselves fitted from the work alone only. */
#include "calibrate.h"
#include "check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rel(double want, double got) { return fabs(want - got) <= 1e-9 * fabs(want) + 1e-15; }
#define CHECK_R(what, want, got) CHECK(rel(want, got), "%s: want %.12g, got %.12g", what, (double)(want), (double)(got))

#define LAUNCH 5e-6
#define HBM 2000e9

static ddp_plan *plan2(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 2;
  p->nstreams = 2;
  p->ranks = calloc(2, sizeof *p->ranks);
  return p;
}

/* Pushes `in` on rank 0 and its made-up time into t[]. */
static void push(ddp_plan *p, const ddp_instr *in, double *t, double secs) {
  t[p->ranks[0].step.n] = secs;
  ddp_program_push(&p->ranks[0].step, in);
}

static void add(ddp_plan *p, double *t, int64_t n) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_ADD;
  in.dt[ADD_P_A] = in.dt[ADD_P_B] = in.dt[ADD_P_OUT] = DT_F32;
  in.p[ADD_P_A].tensor = in.p[ADD_P_B].tensor = in.p[ADD_P_OUT].tensor = 0;
  in.i[ADD_I_N] = n;
  push(p, &in, t, LAUNCH + 12.0 * (double)n / HBM);
}

static void gemm(ddp_plan *p, double *t, int dt, int64_t m, int64_t n, int64_t k, double tflops) {
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = dt;
  in.i[GEMM_I_M] = m, in.i[GEMM_I_N] = n, in.i[GEMM_I_K] = k, in.i[GEMM_I_BATCH] = 1;
  push(p, &in, t, LAUNCH + 2.0 * (double)m * (double)n * (double)k / (tflops * 1e12));
}

static void attention(ddp_plan *p, double *t, int64_t T, int64_t dh) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_ATTN_FWD;
  in.i[ATTN_I_B] = 4, in.i[ATTN_I_T] = T, in.i[ATTN_I_H] = 8, in.i[ATTN_I_DH] = dh, in.i[ATTN_I_CAUSAL] = 1;
  double flops = 2 * (2.0 * 4 * 8 * (double)T * (double)T * (double)dh) * 0.5;
  push(p, &in, t, LAUNCH + flops / 150e12);
}

static void coll(ddp_plan *p, double *t, int opcode, int64_t count, double alpha, double busbw) {
  ddp_instr in = ddp_instr_blank(opcode, 1);
  in.dt[0] = DT_F32;
  in.i[COLL_I_COUNT] = count;
  double wire = opcode == I_ALL_REDUCE ? 4.0 * (double)count /* 2(n-1)/n = 1 */ : 0.5 * 2 * 4.0 * (double)count;
  push(p, &in, t, alpha + wire / busbw);
}

static void test_fit(void) {
  ddp_plan *p = plan2();
  double t[64];
  for (int k = 0; k < 64; k++) t[k] = -1;
  add(p, t, 1000), add(p, t, 100000), add(p, t, 10000000);
  gemm(p, t, DT_BF16, 4096, 4096, 2048, 400), gemm(p, t, DT_BF16, 2048, 8192, 2048, 400);
  gemm(p, t, DT_BF16, 4096, 256, 2048, 100);
  gemm(p, t, DT_F32, 2048, 2048, 2048, 40);
  attention(p, t, 512, 64), attention(p, t, 512, 64);
  coll(p, t, I_ALL_REDUCE, 1000, 15e-6, 120e9), coll(p, t, I_ALL_REDUCE, 1000000, 15e-6, 120e9);
  coll(p, t, I_ALL_REDUCE, 50000000, 15e-6, 120e9);
  coll(p, t, I_REDUCE_SCATTER, 1000000, 15e-6, 120e9);
  ddp_instr ev = ddp_instr_blank(I_EVENT_RECORD, 0);
  push(p, &ev, t, 0);
  gemm(p, t, DT_BF16, 4096, 4096, 4096, 1); /* never recorded: ignored */
  t[p->ranks[0].step.n - 1] = -1;
  ddp_calib_fit f;
  char err[300] = "";
  if (CHECK(ddp_calib_fit_run(p, 0, t, NULL, NULL, 0, &f, err, sizeof err) == 0, "%s", err)) {
    CHECK_R("launch_us", 5, f.fig[CAL_LAUNCH].v);
    CHECK_R("hbm_gbps", 2000, f.fig[CAL_HBM].v);
    CHECK_INT("memory samples", 3, f.fig[CAL_HBM].samples);
    CHECK_R("gemm_tflops_16", 400, f.fig[CAL_GEMM16].v);
    CHECK_INT("16-bit large GEMMs", 2, f.fig[CAL_GEMM16].samples);
    CHECK_R("gemm_tflops_32", 40, f.fig[CAL_GEMM32].v);
    CHECK_R("gemm_small_scale", 0.25, f.fig[CAL_SMALL_SCALE].v);
    CHECK_R("attention_tflops", 150, f.fig[CAL_ATTENTION].v);
    CHECK_R("attention T", 512, f.attn_t);
    CHECK_R("attention dh", 64, f.attn_dh);
    CHECK(f.alpha[COST_ALL_REDUCE].measured);
    CHECK_R("all_reduce alpha_us", 15, f.alpha[COST_ALL_REDUCE].v);
    CHECK_R("all_reduce busbw_gbps", 120, f.busbw[COST_ALL_REDUCE].v);
    CHECK_INT("all_reduce samples", 3, f.alpha[COST_ALL_REDUCE].samples);
    CHECK(!f.alpha[COST_REDUCE_SCATTER].measured);
    CHECK_CONTAINS("one size", f.alpha[COST_REDUCE_SCATTER].why, "only one size");
    CHECK(!f.alpha[COST_ALL_GATHER].measured);
    CHECK_CONTAINS("absent kind", f.alpha[COST_ALL_GATHER].why, "no such collective");
  }
  ddp_plan_free(p);
}

/* Small kernels faster than the line through the large ones: the intercept is negative, so launch_us is 0
 * and the bandwidth is the slope through the origin. */
/* The collective sweep (points timed alone) wins over the plan's instructions of a kind, and is fitted
 * exactly; a kind only the plan has keeps the plan's fit. */
static void test_sweep(void) {
  ddp_plan *p = plan2();
  double t[16];
  for (int k = 0; k < 16; k++) t[k] = -1;
  add(p, t, 1000), add(p, t, 100000);
  /* the plan's all-reduces ran slow (beside the backward): alpha 200 us, 50 GB/s */
  coll(p, t, I_ALL_REDUCE, 1000, 200e-6, 50e9), coll(p, t, I_ALL_REDUCE, 1000000, 200e-6, 50e9);
  coll(p, t, I_REDUCE_SCATTER, 1000, 30e-6, 80e9), coll(p, t, I_REDUCE_SCATTER, 1000000, 30e-6, 80e9);
  ddp_calib_point sw[4];
  double wire[4] = {65536, 1048576, 8388608, 67108864};
  for (int k = 0; k < 4; k++) sw[k] = (ddp_calib_point){COST_ALL_REDUCE, wire[k], 12e-6 + wire[k] / 300e9};
  ddp_calib_fit f;
  char err[300] = "";
  if (CHECK(ddp_calib_fit_run(p, 0, t, NULL, sw, 4, &f, err, sizeof err) == 0, "%s", err)) {
    CHECK_R("all_reduce alpha_us from the sweep", 12, f.alpha[COST_ALL_REDUCE].v);
    CHECK_R("all_reduce busbw_gbps from the sweep", 300, f.busbw[COST_ALL_REDUCE].v);
    CHECK_INT("all_reduce sweep points", 4, f.alpha[COST_ALL_REDUCE].samples);
    CHECK_CONTAINS("sweep note", f.alpha[COST_ALL_REDUCE].why, "timed alone");
    CHECK_R("reduce_scatter alpha_us from the plan", 30, f.alpha[COST_REDUCE_SCATTER].v);
    CHECK_R("reduce_scatter busbw_gbps from the plan", 80, f.busbw[COST_REDUCE_SCATTER].v);
  }
  ddp_plan_free(p);
}

static void test_negative_intercept(void) {
  ddp_plan *p = plan2();
  double t[8];
  add(p, t, 1000), add(p, t, 1000000);
  t[0] = 0, t[1] = 12e6 / HBM;
  ddp_calib_fit f;
  char err[300] = "";
  if (CHECK(ddp_calib_fit_run(p, 0, t, NULL, NULL, 0, &f, err, sizeof err) == 0, "%s", err)) {
    CHECK_R("launch_us", 1e-15, f.fig[CAL_LAUNCH].v + 1e-15);
    double sxy = 12e3 * 0 + 12e6 * t[1], sxx = 12e3 * 12e3 + 12e6 * 12e6;
    CHECK_R("hbm_gbps through 0", sxx / sxy / 1e9, f.fig[CAL_HBM].v);
    CHECK(!f.fig[CAL_GEMM16].measured);
    CHECK_CONTAINS("no GEMM", f.fig[CAL_GEMM16].why, "no GEMM");
  }
  ddp_plan_free(p);
}

static void test_line_medians_plan(void) {
  double x[4] = {1, 2, 3, 4}, y[4] = {3, 5, 7, 9}, a = 0, b = 0;
  CHECK_INT("distinct", 2, ddp_fit_line(x, y, 4, &a, &b));
  CHECK_R("intercept", 1, a);
  CHECK_R("slope", 2, b);
  double same[3] = {5, 5, 5};
  CHECK_INT("one x", 1, ddp_fit_line(same, y, 3, &a, &b));
  CHECK_INT("none", 0, ddp_fit_line(x, y, 0, &a, &b));

  double rows[3 * 3] = {1, -1, 5, 3, -1, 7, 2, -1, 6}; /* 3 steps of 3 instructions; the 2nd never timed */
  ddp_calib_rows c = {.s = rows, .n = 3, .rows = 3, .cap = 3};
  double med[3];
  ddp_calib_medians(&c, med, NULL);
  CHECK_R("median 0", 2, med[0]);
  CHECK(med[1] < 0);
  CHECK_R("median 2", 6, med[2]);
  c.rows = 2;
  ddp_calib_medians(&c, med, NULL);
  CHECK_R("median of two", 2, med[0]);

  ddp_plan *p = plan2();
  char err[300] = "";
  p->meta.model_name = strdup("xl");
  CHECK(ddp_calib_check_plan(p, err, sizeof err) != 0);
  CHECK_CONTAINS("message", err, "not a calibration plan (its model is 'xl'");
  free(p->meta.model_name);
  p->meta.model_name = strdup(DDP_CALIB_MODEL);
  CHECK(ddp_calib_check_plan(p, err, sizeof err) == 0, "%s", err);
  /* no memory-bound kernel: nothing to fit the launch overhead and bandwidth from */
  double t[4];
  gemm(p, t, DT_BF16, 4096, 4096, 4096, 400);
  ddp_calib_fit f;
  CHECK(ddp_calib_fit_run(p, 0, t, NULL, NULL, 0, &f, err, sizeof err) != 0);
  CHECK_CONTAINS("no memory kernels", err, "the memory-bound kernels (0 timed): no samples");
  ddp_plan_free(p);
}

static void test_share(void) {
  ddp_plan *p = plan2();
  double t[32], ovl[32];
  for (int k = 0; k < 32; k++) ovl[k] = 0;
  add(p, t, 1000), add(p, t, 100000), add(p, t, 10000000);
  gemm(p, t, DT_BF16, 4096, 4096, 2048, 400), gemm(p, t, DT_BF16, 2048, 8192, 2048, 400);
  /* beside a collective: the same work at 70% of the rate (launch unchanged) */
  gemm(p, t, DT_BF16, 4096, 4096, 2048, 400 * 0.7), gemm(p, t, DT_BF16, 8192, 4096, 4096, 400 * 0.7);
  ovl[5] = ovl[6] = 1;
  add(p, t, 20000000);
  t[7] = LAUNCH + 12.0 * 20000000 / (HBM * 0.7), ovl[7] = 0.95;
  add(p, t, 5000000); /* partly beside (0.5): used for nothing */
  t[8] = 1, ovl[8] = 0.5;
  ddp_calib_fit f;
  char err[300] = "";
  if (CHECK(ddp_calib_fit_run(p, 0, t, ovl, NULL, 0, &f, err, sizeof err) == 0, "%s", err)) {
    CHECK_R("launch_us (alone only)", 5, f.fig[CAL_LAUNCH].v);
    CHECK_R("hbm_gbps (alone only)", 2000, f.fig[CAL_HBM].v);
    CHECK_R("gemm_tflops_16 (alone only)", 400, f.fig[CAL_GEMM16].v);
    CHECK_INT("GEMMs alone", 2, f.fig[CAL_GEMM16].samples);
    CHECK(f.fig[CAL_SHARE].measured);
    CHECK_R("collective_share", 0.3, f.fig[CAL_SHARE].v);
    CHECK_INT("beside", 3, f.fig[CAL_SHARE].samples);
  }
  /* no overlaps given: not measured */
  t[8] = -1;
  if (CHECK(ddp_calib_fit_run(p, 0, t, NULL, NULL, 0, &f, err, sizeof err) == 0, "%s", err))
    CHECK_CONTAINS("no overlaps", f.fig[CAL_SHARE].why, "no overlaps recorded");
  ddp_plan_free(p);

  double rows[2 * 2] = {1, 2, 3, 4}, o[2 * 2] = {0.2, 1, 0.4, 1}, med[2], om[2];
  ddp_calib_rows c = {.s = rows, .o = o, .n = 2, .rows = 2, .cap = 2};
  ddp_calib_medians(&c, med, om);
  CHECK_R("overlap median", 0.3, om[0]);
  CHECK_R("overlap median 2", 1, om[1]);
}

int main(void) {
  test_share();
  test_fit();
  test_sweep();
  test_negative_intercept();
  test_line_medians_plan();
  return check_report("test_calib_fit");
}

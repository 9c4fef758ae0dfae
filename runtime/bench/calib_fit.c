/* runtime/bench/calib_fit.c: the fits of `ddprun --calibrate` (calibrate.h), pure arithmetic on a plan and
 * its per-instruction medians; every quantity is the cost model's own (plan/work.h), so a profile fitted
 * here prices the calibration plan's instructions as measured:
 *   memory-bound work   t = launch + bytes / HBM, least squares over every kernel, memset and copy priced
 *                       by bytes (LOAD_BATCH and INIT_TENSOR excluded: host data, not HBM): launch_us is
 *                       the intercept (0 when the fit's is negative, the slope then refitted through 0),
 *                       hbm_gbps the inverse slope; launch_us is then lowered by the cost of the two events
 *                       a traced instruction carries (ddp_calib_launch_untraced), since a plan's steps run
 *                       untraced;
 *   GEMMs               per class (16-bit or wider inputs; "small" when the smallest of M, N, K is below
 *                       DDP_CALIB_SMALL_DIM), throughput = sum of FLOPs / sum of (t - launch);
 *                       gemm_small_scale = small / large throughput of one input width (16-bit first);
 *   attention           sum of FLOPs / sum of (t - launch) over the attention kernels;
 *   collectives         per kind, t = alpha + wire bytes / busbw by least squares over the kind's
 *                       points of the collective sweep (calib_sweep.c: timed alone) when there are
 *                       any, else over the plan's instructions of the kind (alpha 0 and the slope
 *                       through 0 when the intercept is negative); at least two distinct sizes needed;
 *   collective_share    the compute (GEMMs, attention, memory-bound kernels) that ran beside a collective
 *                       (overlap >= DDP_CALIB_ALONGSIDE): 1 - sum of its time alone at the rates above
 *                       (fitted from the instructions that ran alone) / sum of its measured time, both
 *                       less the launch overhead; clamped to [0, 0.99].
 * An instruction "ran alone" when less than DDP_CALIB_ALONE of its interval overlapped a collective. */
#include "calibrate.h"
#include "err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fig_names[CAL_NFIG] = {"launch_us", "hbm_gbps", "gemm_tflops_16", "gemm_tflops_32",
                                                "gemm_small_scale", "attention_tflops", "collective_share"};
const char *ddp_calib_fig_name(int f) { return f >= 0 && f < CAL_NFIG ? fig_names[f] : "?"; }

int ddp_fit_line(const double *x, const double *y, size_t n, double *a, double *b) {
  int distinct = 0;
  double x0 = 0;
  for (size_t i = 0; i < n && distinct < 2; i++) {
    if (distinct == 0) x0 = x[i], distinct = 1;
    else if (x[i] != x0) distinct = 2;
  }
  if (distinct < 2) return distinct;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= (double)n, my /= (double)n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  *b = sxy / sxx;
  *a = my - *b * mx;
  return 2;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of column k of rows (n values each) over the rows where `valid` (the durations) is >= 0. */
static double median_col(const double *rows, const double *valid, size_t n, size_t nrows, size_t k, double *col) {
  size_t m = 0;
  for (size_t r = 0; r < nrows; r++)
    if (valid[r * n + k] >= 0) col[m++] = rows[r * n + k];
  if (!m) return -1;
  qsort(col, m, sizeof *col, cmp_double);
  return m % 2 ? col[m / 2] : 0.5 * (col[m / 2 - 1] + col[m / 2]);
}

void ddp_calib_medians(const ddp_calib_rows *c, double *out, double *ovl) {
  double *col = ddp_xcalloc(c->rows + 1, sizeof *col);
  for (size_t k = 0; k < c->n; k++) {
    out[k] = median_col(c->s, c->s, c->n, c->rows, k, col);
    if (ovl) ovl[k] = c->o ? median_col(c->o, c->s, c->n, c->rows, k, col) : 0;
  }
  free(col);
}

int ddp_calib_check_plan(const ddp_plan *p, char *err, size_t errcap) {
  const char *name = p->meta.model_name ? p->meta.model_name : "";
  if (strcmp(name, DDP_CALIB_MODEL))
    return ddp_fail(err, errcap,
                    "not a calibration plan (its model is '%.100s', a calibration plan's is '%s': compile "
                    "schedules/calibrate.lua)", name, DDP_CALIB_MODEL);
  return 0;
}

/* y = a + x / rate with a >= 0: least squares, or through the origin when the intercept is negative.
 * Returns 0 with *a, *rate (x per second), or -1 with the reason. */
static int fit_alpha_rate(const double *x, const double *y, size_t n, double *a, double *rate, char *why,
                          size_t whycap) {
  double ia = 0, ib = 0;
  int d = ddp_fit_line(x, y, n, &ia, &ib);
  if (d < 2) return ddp_fail(why, whycap, "%s", n ? "only one size measured (the fit needs two)" : "no samples");
  if (ia < 0) { /* through the origin */
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) sxy += x[i] * y[i], sxx += x[i] * x[i];
    ia = 0, ib = sxy / sxx;
  }
  if (!(ib > 0) || !isfinite(ib)) return ddp_fail(why, whycap, "time does not grow with size (slope %.3g s per unit)", ib);
  *a = ia, *rate = 1 / ib;
  return 0;
}

static void unmeasured(ddp_calib_fig *f, const char *why) {
  f->measured = 0;
  snprintf(f->why, sizeof f->why, "%s", why);
}

/* Is instruction k (of work kind `kind`) one the rates are fitted from: timed, and alone when any
 * instruction of that kind was (*any_alone[kind]). */
static int rate_sample(const double *median_s, const double *ovl, size_t k, int any_alone) {
  if (median_s[k] < 0) return 0;
  return !any_alone || !ovl || ovl[k] < DDP_CALIB_ALONE;
}

static int memory_sample(const ddp_instr *in, const ddp_work *w) {
  return w->kind == WORK_MEMORY && w->bytes > 0 && in->opcode != I_LOAD_BATCH && in->opcode != I_INIT_TENSOR;
}

int ddp_calib_fit_run(const ddp_plan *p, int rank, const double *median_s, const double *ovl,
                      const ddp_calib_point *sweep, size_t nsweep, ddp_calib_fit *f, char *err, size_t errcap) {
  memset(f, 0, sizeof *f);
  const ddp_program *prog = &p->ranks[rank].step;
  size_t n = prog->n;
  size_t cap = (n > nsweep ? n : nsweep) + 1; /* the points of one fit: the plan's instructions or the sweep's */
  double *x = ddp_xcalloc(cap, sizeof *x), *y = ddp_xcalloc(cap, sizeof *y);
  size_t m = 0;
  /* which kinds of work have instructions that ran alone */
  int alone[WORK_COLL + 1] = {0};
  for (size_t k = 0; k < n; k++) {
    ddp_work w;
    ddp_instr_work(p, &prog->v[k], &w);
    if (median_s[k] >= 0 && (!ovl || ovl[k] < DDP_CALIB_ALONE) && (w.kind != WORK_MEMORY || memory_sample(&prog->v[k], &w)))
      alone[w.kind] = 1;
  }
  /* memory-bound work */
  for (size_t k = 0; k < n; k++) {
    const ddp_instr *in = &prog->v[k];
    ddp_work w;
    ddp_instr_work(p, in, &w);
    if (!memory_sample(in, &w) || !rate_sample(median_s, ovl, k, alone[WORK_MEMORY])) continue;
    x[m] = w.bytes, y[m] = median_s[k], m++;
  }
  double launch = 0, rate = 0;
  char why[200];
  if (fit_alpha_rate(x, y, m, &launch, &rate, why, sizeof why)) {
    free(x), free(y);
    return ddp_fail(err, errcap, "the memory-bound kernels (%zu timed): %s: no launch overhead or bandwidth to fit",
                    m, why);
  }
  f->fig[CAL_LAUNCH] = (ddp_calib_fig){launch * 1e6, 1, (int)m, ""};
  f->fig[CAL_HBM] = (ddp_calib_fig){rate / 1e9, 1, (int)m, ""};
  /* GEMMs by class [16-bit?][small?], attention */
  double gf[2][2] = {{0}}, gt[2][2] = {{0}}, af = 0, at = 0;
  int gn[2][2] = {{0}}, an = 0;
  f->attn_t = f->attn_dh = 0;
  for (size_t k = 0; k < n; k++) {
    const ddp_instr *in = &prog->v[k];
    ddp_work w;
    ddp_instr_work(p, in, &w);
    if ((w.kind != WORK_GEMM && w.kind != WORK_ATTENTION) || !rate_sample(median_s, ovl, k, alone[w.kind])) continue;
    double t = median_s[k] - launch;
    if (t <= 0) t = 1e-9; /* faster than the launch overhead: counts as (almost) free compute */
    if (w.kind == WORK_GEMM && w.flops > 0) {
      int c16 = w.gemm16, small = w.gemm_min_dim < DDP_CALIB_SMALL_DIM;
      gf[c16][small] += w.flops, gt[c16][small] += t, gn[c16][small]++;
    } else if (w.kind == WORK_ATTENTION) {
      if (an == 0) f->attn_t = (double)in->i[ATTN_I_T], f->attn_dh = (double)in->i[ATTN_I_DH];
      af += w.flops, at += t, an++;
    }
  }
  for (int c16 = 0; c16 < 2; c16++) {
    ddp_calib_fig *g = &f->fig[c16 ? CAL_GEMM16 : CAL_GEMM32];
    if (gn[c16][0]) *g = (ddp_calib_fig){gf[c16][0] / gt[c16][0] / 1e12, 1, gn[c16][0], ""};
    else
      unmeasured(g, gn[c16][1] ? "only small GEMMs of this input width (smallest dimension below 1024)"
                                : "no GEMM of this input width in the plan");
  }
  int scale_from = gn[1][0] && gn[1][1] ? 1 : gn[0][0] && gn[0][1] ? 0 : -1;
  if (scale_from >= 0) {
    double s = (gf[scale_from][1] / gt[scale_from][1]) / (gf[scale_from][0] / gt[scale_from][0]);
    f->fig[CAL_SMALL_SCALE] = (ddp_calib_fig){s > 1 ? 1 : s, 1, gn[scale_from][1], ""};
    if (s > 1) snprintf(f->fig[CAL_SMALL_SCALE].why, sizeof f->fig[CAL_SMALL_SCALE].why,
                        "measured %.3f, capped at 1 (the profile's range)", s);
  } else {
    unmeasured(&f->fig[CAL_SMALL_SCALE], "no input width with both small and large GEMMs");
  }
  if (an) f->fig[CAL_ATTENTION] = (ddp_calib_fig){af / at / 1e12, 1, an, ""};
  else unmeasured(&f->fig[CAL_ATTENTION], "no attention kernel in the plan");
  /* the share: compute beside collectives against its time alone at the fitted rates */
  double alone_t = 0, beside_t = 0;
  int nb = 0;
  for (size_t k = 0; ovl && k < n; k++) {
    const ddp_instr *in = &prog->v[k];
    ddp_work w;
    ddp_instr_work(p, in, &w);
    if (median_s[k] < 0 || ovl[k] < DDP_CALIB_ALONGSIDE) continue;
    double rate_t = -1; /* its time alone, less the launch */
    if (w.kind == WORK_GEMM && w.flops > 0) {
      const ddp_calib_fig *g = &f->fig[w.gemm16 ? CAL_GEMM16 : CAL_GEMM32];
      int small = w.gemm_min_dim < DDP_CALIB_SMALL_DIM;
      if (g->measured && (!small || f->fig[CAL_SMALL_SCALE].measured))
        rate_t = w.flops / (g->v * 1e12 * (small ? f->fig[CAL_SMALL_SCALE].v : 1));
    } else if (w.kind == WORK_ATTENTION && f->fig[CAL_ATTENTION].measured) {
      rate_t = w.flops / (f->fig[CAL_ATTENTION].v * 1e12);
    } else if (memory_sample(in, &w)) {
      rate_t = w.bytes / (f->fig[CAL_HBM].v * 1e9);
    }
    if (rate_t < 0) continue;
    double t = median_s[k] - launch;
    alone_t += rate_t, beside_t += t > 1e-9 ? t : 1e-9, nb++;
  }
  if (nb && beside_t > 0) {
    double sh = 1 - alone_t / beside_t;
    f->fig[CAL_SHARE] = (ddp_calib_fig){sh < 0 ? 0 : sh > 0.99 ? 0.99 : sh, 1, nb, ""};
    if (sh < 0 || sh > 0.99)
      snprintf(f->fig[CAL_SHARE].why, sizeof f->fig[CAL_SHARE].why, "measured %.3f, clamped to [0, 0.99]", sh);
  } else {
    unmeasured(&f->fig[CAL_SHARE], ovl ? "no compute ran beside a collective" : "no overlaps recorded");
  }
  /* collectives */
  for (int kind = 0; kind < COST_COLL_COUNT; kind++) {
    m = 0;
    for (size_t j = 0; j < nsweep; j++)
      if (sweep[j].kind == kind && sweep[j].s > 0) {
        x[m] = sweep[j].wire_bytes, y[m] = sweep[j].s, m++;
      }
    int swept = m > 0;
    for (size_t k = 0; !swept && k < n; k++) {
      ddp_work w;
      ddp_instr_work(p, &prog->v[k], &w);
      if (w.kind != WORK_COLL || w.coll_kind != kind || median_s[k] < 0) continue;
      x[m] = w.wire_bytes, y[m] = median_s[k], m++;
    }
    double a = 0, r = 0;
    if (m == 0) {
      unmeasured(&f->alpha[kind], p->meta.world > 1 ? "no such collective in the plan" : "one rank: no collectives");
      unmeasured(&f->busbw[kind], f->alpha[kind].why);
    } else if (fit_alpha_rate(x, y, m, &a, &r, why, sizeof why)) {
      unmeasured(&f->alpha[kind], why);
      unmeasured(&f->busbw[kind], why);
    } else {
      f->alpha[kind] = (ddp_calib_fig){a * 1e6, 1, (int)m, ""};
      f->busbw[kind] = (ddp_calib_fig){r / 1e9, 1, (int)m, ""};
      if (swept) snprintf(f->alpha[kind].why, sizeof f->alpha[kind].why, "timed alone (the collective sweep)");
    }
  }
  free(x), free(y);
  return 0;
}

/* The median of n step times (one column of n rows). */
static double median_of(const double *v, size_t n) {
  double *col = ddp_xcalloc(n + 1, sizeof *col);
  const double m = median_col(v, v, 1, n, 0, col);
  free(col);
  return m;
}

void ddp_calib_launch_untraced(const ddp_plan *p, int rank, const double *median_s, const ddp_calib_rows *c,
                               ddp_calib_fit *f) {
  ddp_calib_fig *l = &f->fig[CAL_LAUNCH];
  f->launch_traced_us = l->v;
  f->untraced_n = 0;
  if (!l->measured || c->nstep[0] < 2 || c->nstep[1] < 2) return;
  const ddp_program *prog = &p->ranks[rank].step;
  int n = 0;
  for (size_t k = 0; k < prog->n; k++) {
    ddp_work w;
    ddp_instr_work(p, &prog->v[k], &w);
    if (median_s[k] >= 0 && (w.kind == WORK_GEMM || w.kind == WORK_ATTENTION || w.kind == WORK_MEMORY)) n++;
  }
  if (n == 0) return;
  f->step_traced_ms = median_of(c->step_ms[1], c->nstep[1]);
  f->step_untraced_ms = median_of(c->step_ms[0], c->nstep[0]);
  f->untraced_n = n;
  double v = l->v - (f->step_traced_ms - f->step_untraced_ms) * 1e3 / n;
  l->v = v < 0 ? 0 : v > l->v ? l->v : v;
}

/* tests/unit/ref/test_ref_optimizer.c: SUMSQ, OPT_SCALARS, ADAMW and SGD reference kernels against hand-written
 * steps: the chunked sum of squares, the cosine schedule with warmup at warmup / mid / end / after,
 * global-norm clipping on and off, two AdamW steps with weight decay (f64 state tight, f32 state and a
 * bf16 parameter copy to f32 precision), SGD with clipping, determinism. */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

static void test_sumsq(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "sumsq partials", seed);
  double *x = gc_rand(&r, 10, -2, 2);
  for (int P = 4; P <= 6; P += 2) {
    double part[6], want[6] = {0};
    for (int c = 0; c < 6; c++) part[c] = 99;
    const int rows = (10 + P - 1) / P;
    for (int i = 0; i < 10; i++) want[i / rows] += x[i] * x[i];
    gc_call k;
    gc_call_init(&k);
    k.a.p[0] = x, k.a.p[1] = part, k.a.i[0] = 10, k.a.i[1] = P;
    ref_sumsq(&k.a, k.dt);
    char what[64];
    snprintf(what, sizeof what, "P=%d chunks of %d (empty chunks 0)", P, rows);
    gc_expect_close(what, part, want, (size_t)P, 1e-15, 1e-300);
  }
  free(x);
}

/* One OPT_SCALARS call on an f64 scalars block. */
static void opt_scalars(double *sc, double *part, int64_t P, int cosine, int clip, double lr_max, double lr_min,
                        double max_norm) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = part, k.a.p[1] = sc, k.a.i[0] = P, k.a.i[1] = cosine, k.a.i[2] = 10, k.a.i[3] = 100, k.a.i[4] = clip;
  k.a.f[0] = (float)lr_max, k.a.f[1] = (float)lr_min, k.a.f[2] = (float)max_norm;
  ref_opt_scalars(&k.a, k.dt);
}

static void test_schedule(void) {
  gc_rng r;
  gc_case(&r, "opt_scalars cosine schedule (warmup 10, cycle 100; no random data)", 0);
  const double mx = (float)1e-3, mn = (float)1e-4;
  const struct {
    double it, want;
    const char *what;
  } pts[] = {{0, 0, "it=0 (first step)"},
             {5, 0.5 * mx, "it=5 warmup"},
             {10, mx, "it=10 end of warmup"},
             {55, mn + 0.5 * (1 + cos(PI * 0.5)) * (mx - mn), "it=55 mid"},
             {77, mn + 0.5 * (1 + cos(PI * 67.0 / 90.0)) * (mx - mn), "it=77"},
             {100, mn, "it=100 end of cycle"},
             {150, mn, "it=150 after"}};
  for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
    double sc[SCALAR_COUNT] = {pts[i].it}, got[2], want[2] = {pts[i].it + 1, pts[i].want};
    opt_scalars(sc, NULL, 0, 1, 0, mx, mn, 1.0);
    got[0] = sc[SCALAR_STEP], got[1] = sc[SCALAR_LR];
    gc_expect_close(pts[i].what, got, want, 2, 1e-15, 1e-300);
  }
  double sc[SCALAR_COUNT] = {41}, want = mx;
  opt_scalars(sc, NULL, 0, 0, 0, mx, mn, 1.0);
  gc_expect_close("constant schedule = lr max", &sc[SCALAR_LR], &want, 1, 0, 1e-300);
  float scf[SCALAR_COUNT] = {6};
  gc_call k;
  gc_call_init(&k);
  k.a.p[1] = scf, k.dt[1] = DT_F32, k.a.f[0] = 1.0f;
  ref_opt_scalars(&k.a, k.dt);
  gc_expect("f32 scalars: t 6 -> 7", scf[SCALAR_STEP] == 7.0f);
}

static void test_clip(void) {
  gc_rng r;
  gc_case(&r, "opt_scalars global-norm clipping (no random data)", 0);
  double part[3] = {9, 16, 0}; /* norm 5 */
  struct {
    int clip;
    double max_norm, want_scale;
    const char *what;
  } cs[] = {{1, 1.0, 1.0 / (5 + 1e-6), "clip on, norm 5 > 1: scale 1/(5+1e-6)"},
            {0, 1.0, 1.0, "clip off: scale 1"},
            {1, 8.0, 1.0, "clip on, norm 5 < 8: scale 1"}};
  for (int i = 0; i < 3; i++) {
    double sc[SCALAR_COUNT] = {0}, got[2], want[2] = {5.0, cs[i].want_scale};
    opt_scalars(sc, part, 3, 0, cs[i].clip, 1e-3, 0, cs[i].max_norm);
    got[0] = sc[SCALAR_GRAD_NORM], got[1] = sc[SCALAR_CLIP_SCALE];
    gc_expect_close(cs[i].what, got, want, 2, 1e-15, 1e-300);
  }
  double sc[SCALAR_COUNT] = {0};
  opt_scalars(sc, NULL, 3, 0, 1, 1e-3, 0, 1.0);
  gc_expect("no partials: norm 0, scale 1", sc[SCALAR_GRAD_NORM] == 0 && sc[SCALAR_CLIP_SCALE] == 1);
}

enum { PN = 7 };
static const double B1 = (float)0.9, B2 = (float)0.95, AEPS = (float)1e-8, WD = (float)0.1;

/* The cs336 AdamW step, written out independently. */
static void adamw_by_hand(double *p, double *m, double *v, const double *grad, double t, double lr, double clip) {
  for (int i = 0; i < PN; i++) {
    const double g = grad[i] * clip;
    m[i] = B1 * m[i] + (1 - B1) * g;
    v[i] = B2 * v[i] + (1 - B2) * g * g;
    const double lr_t = lr * sqrt(1 - pow(B2, t)) / (1 - pow(B1, t));
    p[i] = p[i] - lr_t * m[i] / (sqrt(v[i]) + AEPS);
    p[i] = p[i] - lr * WD * p[i];
  }
}

static void adamw(void *p, void *g, void *m, void *v, void *copy, double *sc, int dtp, int dtcopy) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = p, k.a.p[1] = g, k.a.p[2] = m, k.a.p[3] = v, k.a.p[4] = copy, k.a.p[5] = sc, k.a.i[0] = PN;
  k.dt[0] = k.dt[1] = k.dt[2] = k.dt[3] = (uint8_t)dtp, k.dt[4] = (uint8_t)dtcopy;
  k.a.f[0] = (float)B1, k.a.f[1] = (float)B2, k.a.f[2] = (float)AEPS, k.a.f[3] = (float)WD;
  ref_adamw(&k.a, k.dt);
}

static void test_adamw(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "adamw two steps with weight decay and clipping", seed);
  double *p = gc_rand(&r, PN, -1, 1), *g1 = gc_rand(&r, PN, -2, 2), *g2 = gc_rand(&r, PN, -2, 2);
  double *hp = gc_copy(p, PN), *p2 = gc_copy(p, PN), hm[PN] = {0}, hv[PN] = {0}, m[PN] = {0}, v[PN] = {0};
  float pf[PN], gf1[PN], gf2[PN], mf[PN] = {0}, vf[PN] = {0};
  uint16_t copy[PN];
  for (int i = 0; i < PN; i++) pf[i] = (float)p[i], gf1[i] = (float)g1[i], gf2[i] = (float)g2[i];
  double sc[SCALAR_COUNT] = {0};
  for (int step = 1; step <= 2; step++) {
    double *g = step == 1 ? g1 : g2, part = gc_dot(g, g, PN);
    opt_scalars(sc, &part, 1, 0, 1, 1e-2, 0, 2.0); /* max norm 2: clipping active */
    const double want_clip = sqrt(part) > 2 ? 2 / (sqrt(part) + 1e-6) : 1;
    gc_expect("clip scale as expected", sc[SCALAR_CLIP_SCALE] == want_clip && sc[SCALAR_STEP] == step);
    adamw(p, g, m, v, NULL, sc, DT_F64, DT_F64);
    adamw(pf, step == 1 ? gf1 : gf2, mf, vf, copy, sc, DT_F32, DT_BF16);
    adamw_by_hand(hp, hm, hv, g, sc[SCALAR_STEP], sc[SCALAR_LR], sc[SCALAR_CLIP_SCALE]);
  }
  gc_expect_close("f64 param after 2 steps vs hand-written", p, hp, PN, 1e-15, 1e-300);
  gc_expect_close("f64 m vs hand-written", m, hm, PN, 1e-15, 1e-300);
  gc_expect_close("f64 v vs hand-written", v, hv, PN, 1e-15, 1e-300);
  double pd[PN], cd[PN], want_c[PN];
  for (int i = 0; i < PN; i++)
    pd[i] = pf[i], cd[i] = ddp_bf16_to_f32(copy[i]), want_c[i] = ddp_bf16_to_f32(ddp_f32_to_bf16(pf[i]));
  gc_expect_close("f32 param after 2 steps vs hand-written", pd, hp, PN, 1e-6, 1e-300);
  gc_expect_close("bf16 copy = bf16(param)", cd, want_c, PN, 0, 1e-300);

  /* Determinism: replaying both steps from the same start gives identical bits. */
  double m2[PN] = {0}, v2[PN] = {0}, sc2[SCALAR_COUNT] = {0};
  for (int step = 1; step <= 2; step++) {
    double *g = step == 1 ? g1 : g2, part = gc_dot(g, g, PN);
    opt_scalars(sc2, &part, 1, 0, 1, 1e-2, 0, 2.0);
    adamw(p2, g, m2, v2, NULL, sc2, DT_F64, DT_F64);
  }
  gc_expect_bits("replay identical", p2, p, PN * sizeof(double));
  free(p), free(g1), free(g2), free(hp), free(p2);
}

static void test_sgd(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "sgd with clip scale and a bf16 copy", seed);
  double *p = gc_rand(&r, PN, -1, 1), *g = gc_rand(&r, PN, -1, 1), want[PN], cd[PN], wc[PN];
  uint16_t copy[PN];
  double sc[SCALAR_COUNT] = {3, 0.05, 4.0, 0.5};
  for (int i = 0; i < PN; i++) want[i] = p[i] - 0.05 * g[i] * 0.5;
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = p, k.a.p[1] = g, k.a.p[2] = copy, k.a.p[3] = sc, k.dt[2] = DT_BF16, k.a.i[0] = PN;
  ref_sgd(&k.a, k.dt);
  gc_expect_close("p -= lr * grad * clip", p, want, PN, 1e-15, 1e-300);
  for (int i = 0; i < PN; i++) cd[i] = ddp_bf16_to_f32(copy[i]), wc[i] = ddp_bf16_to_f32(ddp_f32_to_bf16((float)p[i]));
  gc_expect_close("bf16 copy = bf16(param)", cd, wc, PN, 0, 1e-300);
  k.a.p[2] = NULL;
  ref_sgd(&k.a, k.dt);
  for (int i = 0; i < PN; i++) want[i] -= 0.05 * g[i] * 0.5;
  gc_expect_close("null copy allowed", p, want, PN, 1e-15, 1e-300);
  free(p), free(g);
}

int main(void) {
  test_sumsq(501);
  test_schedule();
  test_clip();
  test_adamw(502);
  test_sgd(503);
  return gc_finish("test_ref_optimizer");
}

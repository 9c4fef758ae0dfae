/* tests/unit/ref/test_ref_attention.c: ROPE, ATTN_FWD / ATTN_BWD_PREP / ATTN_BWD_DKV / ATTN_BWD_DQ and the naive
 * attention softmax pair: forward values against direct formulas (RoPE with the f32 angle, attention
 * against a full T x T softmax), gradients against finite differences of L = sum(out * R) with packed
 * (strided) q/k/v rows at odd sizes, causal and not, bf16 inputs against the f64 reference,
 * determinism. */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RoPE ---- */
enum { RB = 2, RT = 5, RH = 3, RD = 8, RSTRIDE = 3 * RH * RD + 4 };
#define RN (RB * RT * RSTRIDE)

typedef struct rope_ctx {
  double *x, *work, *R;
  float *inv;
} rope_ctx;

static void rope(double *x, float *inv, int inverse) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = x, k.a.p[1] = inv, k.dt[1] = DT_F32;
  k.a.i[0] = RB, k.a.i[1] = RT, k.a.i[2] = RH, k.a.i[3] = RD, k.a.i[4] = RSTRIDE, k.a.i[5] = inverse;
  ref_rope(&k.a, k.dt);
}

static double rope_loss(void *ctx) {
  rope_ctx *c = ctx;
  memcpy(c->work, c->x, RN * sizeof(double));
  rope(c->work, c->inv, 0);
  return gc_dot(c->work, c->R, RN);
}

static void test_rope(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "rope", seed);
  float inv[RD / 2];
  for (int m = 0; m < RD / 2; m++) inv[m] = (float)pow(10000.0, -2.0 * m / RD);
  rope_ctx c = {gc_rand(&r, RN, -1, 1), gc_zeros(RN), gc_rand(&r, RN, -1, 1), inv};
  double *want = gc_copy(c.x, RN), *y = gc_copy(c.x, RN);
  for (int b = 0; b < RB; b++)
    for (int t = 0; t < RT; t++)
      for (int h = 0; h < RH; h++)
        for (int m = 0; m < RD / 2; m++) {
          const int i = (b * RT + t) * RSTRIDE + h * RD + 2 * m;
          const float ang = (float)t * inv[m];
          want[i] = c.x[i] * cos(ang) - c.x[i + 1] * sin(ang);
          want[i + 1] = c.x[i] * sin(ang) + c.x[i + 1] * cos(ang);
        }
  rope(y, inv, 0);
  gc_expect_close("forward vs direct formula (f32 angle, strided rows, padding untouched)", y, want, RN, 1e-15,
                  1e-300);
  rope(y, inv, 1);
  gc_expect_close("inverse(forward(x)) = x", y, c.x, RN, 1e-15, 1e-300);
  double *g = gc_copy(c.R, RN);
  rope(g, inv, 1);
  gc_fd_check("dx = inverse rope of dy vs finite differences", rope_loss, &c, c.x, RN, g, 1e-6);
  free(want), free(y), free(g), free(c.x), free(c.work), free(c.R);
}

/* ---- fused attention ---- */
enum { AB = 2, AT = 7, AH = 2, AD = 16, QKV = 3 * AH * AD, OS = AH * AD + 3 };
#define QKVN (AB * AT * QKV)
#define ON (AB * AT * OS)
#define LN (AB * AH * AT)

typedef struct attn_ctx {
  double *qkv, *o, *lse, *R;
  int causal;
} attn_ctx;

static void attn_args(gc_call *k, void *qkv, size_t esize, int causal) {
  gc_call_init(k);
  k->a.p[0] = qkv, k->a.p[1] = (char *)qkv + AH * AD * esize, k->a.p[2] = (char *)qkv + 2 * AH * AD * esize;
  k->a.i[0] = AB, k->a.i[1] = AT, k->a.i[2] = AH, k->a.i[3] = AD;
  k->a.i[4] = k->a.i[5] = k->a.i[6] = QKV, k->a.i[7] = OS, k->a.i[8] = causal;
  k->a.f[0] = (float)(1.0 / sqrt(AD));
}

static void attn_fwd(attn_ctx *c) {
  gc_call k;
  attn_args(&k, c->qkv, sizeof(double), c->causal);
  k.a.p[3] = c->o, k.a.p[4] = c->lse;
  ref_attn_fwd(&k.a, k.dt);
}

static double attn_loss(void *ctx) {
  attn_ctx *c = ctx;
  attn_fwd(c);
  return gc_dot(c->o, c->R, ON);
}

/* PREP + DKV + DQ with do = R into dqkv (same packed layout as qkv). */
static void attn_bwd(attn_ctx *c, double *dqkv, double *delta) {
  gc_call k;
  attn_args(&k, c->qkv, sizeof(double), c->causal);
  k.a.p[0] = c->o, k.a.p[1] = c->R, k.a.p[2] = delta;
  ref_attn_bwd_prep(&k.a, k.dt);
  attn_args(&k, c->qkv, sizeof(double), c->causal);
  k.a.p[4] = c->lse, k.a.p[5] = c->R, k.a.p[6] = delta;
  k.a.p[7] = dqkv + AH * AD, k.a.p[8] = dqkv + 2 * AH * AD;
  ref_attn_bwd_dkv(&k.a, k.dt);
  k.a.p[7] = k.a.p[8] = NULL, k.a.p[9] = dqkv;
  ref_attn_bwd_dq(&k.a, k.dt);
}

/* Full T x T softmax attention from the packed qkv (any scale), into o [.., OS] and lse. */
static void attn_naive(const double *qkv, int causal, double *o, double *lse) {
  const double scale = (float)(1.0 / sqrt(AD));
  for (int b = 0; b < AB; b++)
    for (int h = 0; h < AH; h++) {
      double S[AT][AT], P[AT][AT];
      for (int t = 0; t < AT; t++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < AT; j++) {
          double s = 0;
          for (int i = 0; i < AD; i++)
            s += qkv[(b * AT + t) * QKV + h * AD + i] * qkv[(b * AT + j) * QKV + AH * AD + h * AD + i];
          S[t][j] = causal && j > t ? -INFINITY : s * scale;
          mx = fmax(mx, S[t][j]);
        }
        for (int j = 0; j < AT; j++) sum += exp(S[t][j] - mx);
        for (int j = 0; j < AT; j++) P[t][j] = exp(S[t][j] - mx) / sum;
        lse[(b * AH + h) * AT + t] = mx + log(sum);
        for (int i = 0; i < AD; i++) {
          double acc = 0;
          for (int j = 0; j < AT; j++) acc += P[t][j] * qkv[(b * AT + j) * QKV + 2 * AH * AD + h * AD + i];
          o[(b * AT + t) * OS + h * AD + i] = acc;
        }
      }
    }
}

static void test_attention(int causal, uint64_t seed) {
  gc_rng r;
  gc_case(&r, causal ? "attention causal (B=2 T=7 H=2 Dh=16)" : "attention non-causal (B=2 T=7 H=2 Dh=16)", seed);
  attn_ctx c = {gc_rand(&r, QKVN, -1.5, 1.5), gc_zeros(ON), gc_zeros(LN), gc_rand(&r, ON, -1, 1), causal};
  for (int n = 0; n < AB * AT; n++)
    for (int j = AH * AD; j < OS; j++) c.R[n * OS + j] = 0; /* o's padding is not an output */
  double *wo = gc_zeros(ON), *wl = gc_zeros(LN);
  attn_naive(c.qkv, causal, wo, wl);
  attn_fwd(&c);
  gc_expect_close("o vs naive T x T softmax attention", c.o, wo, ON, 1e-14, 1e-300);
  gc_expect_close("lse vs naive", c.lse, wl, LN, 1e-14, 1e-300);

  double *dqkv = gc_zeros(QKVN), *delta = gc_zeros(LN);
  attn_bwd(&c, dqkv, delta);
  /* One check per operand (dq, dk, dv are interleaved column blocks of the packed buffer). */
  const char *names[3] = {"dq (prep + dq) vs finite differences", "dk (prep + dkv) vs finite differences",
                          "dv (prep + dkv) vs finite differences"};
  for (int part = 0; part < 3; part++) {
    size_t idx[AB * AT * AH * AD], n = 0;
    for (int row = 0; row < AB * AT; row++)
      for (int j = part * AH * AD; j < (part + 1) * AH * AD; j++) idx[n++] = (size_t)(row * QKV + j);
    gc_fd_check_at(names[part], attn_loss, &c, c.qkv, idx, n, dqkv, 1e-6);
  }
  attn_fwd(&c);

  /* Determinism. */
  double *o1 = gc_copy(c.o, ON), *d2 = gc_zeros(QKVN), *delta2 = gc_zeros(LN);
  attn_fwd(&c);
  gc_expect_bits("forward deterministic", c.o, o1, ON * sizeof(double));
  attn_bwd(&c, d2, delta2);
  gc_expect_bits("backward deterministic", d2, dqkv, QKVN * sizeof(double));

  /* bf16 q/k/v/o (lse f32) against the f64 reference of the unrounded inputs. */
  uint16_t *qb = calloc(QKVN, 2), *ob = calloc(ON, 2);
  float lf[LN];
  double ogot[ON], lgot[LN];
  for (int i = 0; i < QKVN; i++) qb[i] = ddp_f32_to_bf16((float)c.qkv[i]);
  gc_call k;
  attn_args(&k, qb, 2, causal);
  k.dt[0] = k.dt[1] = k.dt[2] = k.dt[3] = DT_BF16, k.dt[4] = DT_F32;
  k.a.p[3] = ob, k.a.p[4] = lf;
  ref_attn_fwd(&k.a, k.dt);
  for (int i = 0; i < ON; i++) ogot[i] = ddp_bf16_to_f32(ob[i]);
  for (int i = 0; i < LN; i++) lgot[i] = lf[i];
  gc_expect_close("bf16 o vs f64 reference (abs, |o| <= 1.5)", ogot, wo, ON, 1e-2, 1.0);
  gc_expect_close("bf16 lse vs f64 reference", lgot, wl, LN, 1e-2, 1.0);
  free(qb), free(ob), free(o1), free(d2), free(delta2);
  free(dqkv), free(delta), free(wo), free(wl), free(c.qkv), free(c.o), free(c.lse), free(c.R);
}

/* ---- naive softmax pair ---- */
enum { NB = 2, NT = 6, NH = 3 };
#define SN (NB * NH * NT * NT)

typedef struct naive_ctx {
  double *raw, *p, *lse, *R;
  int causal;
  double scale;
} naive_ctx;

static void naive_fwd(naive_ctx *c) {
  memcpy(c->p, c->raw, SN * sizeof(double));
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->p, k.a.p[1] = c->lse, k.a.i[0] = NB, k.a.i[1] = NT, k.a.i[2] = NH, k.a.i[8] = c->causal;
  k.a.f[0] = (float)c->scale;
  ref_attn_naive_softmax(&k.a, k.dt);
}

static double naive_loss(void *ctx) {
  naive_ctx *c = ctx;
  naive_fwd(c);
  return gc_dot(c->p, c->R, SN);
}

static void test_naive(int causal, uint64_t seed) {
  gc_rng r;
  gc_case(&r, causal ? "attention naive softmax causal" : "attention naive softmax non-causal", seed);
  naive_ctx c = {gc_rand(&r, SN, -3, 3), gc_zeros(SN), gc_zeros(NB * NH * NT), gc_rand(&r, SN, -1, 1), causal,
                 (float)0.37};
  naive_fwd(&c);
  double *want = gc_zeros(SN), *wl = gc_zeros(NB * NH * NT);
  for (int row = 0; row < NB * NH * NT; row++) {
    const int t = row % NT, nk = causal ? t + 1 : NT;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < nk; j++) mx = fmax(mx, c.raw[row * NT + j] * c.scale);
    for (int j = 0; j < nk; j++) sum += exp(c.raw[row * NT + j] * c.scale - mx);
    for (int j = 0; j < nk; j++) want[row * NT + j] = exp(c.raw[row * NT + j] * c.scale - mx) / sum;
    wl[row] = mx + log(sum);
  }
  gc_expect_close("probs vs direct softmax (masked = 0)", c.p, want, SN, 1e-15, 1e-300);
  gc_expect_close("lse vs direct", c.lse, wl, NB * NH * NT, 1e-15, 1e-300);
  double *g = gc_copy(c.R, SN);
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c.p, k.a.p[1] = g, k.a.i[0] = NB, k.a.i[1] = NT, k.a.i[2] = NH, k.a.f[0] = (float)c.scale;
  ref_attn_naive_softmax_bwd(&k.a, k.dt);
  gc_fd_check("dscores (raw) vs finite differences", naive_loss, &c, c.raw, SN, g, 1e-6);
  free(want), free(wl), free(g), free(c.raw), free(c.p), free(c.lse), free(c.R);
}

int main(void) {
  test_rope(201);
  test_attention(1, 202);
  test_attention(0, 203);
  test_naive(1, 204);
  test_naive(0, 205);
  return gc_finish("test_ref_attention");
}

/* tests/unit/ref/test_ref_loss.c: XENT, MSE, SWIGLU, EMBED_FWD/BWD and the elementwise ops (RELU, BIAS_ADD, CAST,
 * ADD, SCALE) reference kernels: forward values against direct formulas, gradients against finite
 * differences (XENT's dlogits against the mean loss, the others against L = sum(out * R)), in-place
 * aliasing, acc flags, determinism. */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cross-entropy ---- */
enum { XN = 5, XV = 11 };
typedef struct xent_ctx {
  double *logits, *loss;
  int32_t *tgt;
} xent_ctx;

static void xent(double *logits, int32_t *tgt, double *loss, double *dlogits, double scale) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = logits, k.a.p[1] = tgt, k.a.p[2] = loss, k.a.p[3] = dlogits, k.dt[1] = DT_I32;
  k.a.i[0] = XN, k.a.i[1] = XV, k.a.f[0] = (float)scale;
  ref_xent(&k.a, k.dt);
}

static double xent_mean_loss(void *ctx) {
  xent_ctx *c = ctx;
  xent(c->logits, c->tgt, c->loss, NULL, 0);
  double s = 0;
  for (int n = 0; n < XN; n++) s += c->loss[n];
  return s / XN;
}

static void test_xent(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "cross-entropy", seed);
  int32_t tgt[XN];
  for (int n = 0; n < XN; n++) tgt[n] = (int32_t)gc_uniform(&r, 0, XV);
  xent_ctx c = {gc_rand(&r, XN * XV, -3, 3), gc_zeros(XN), tgt};
  double want[XN], *dl = gc_zeros(XN * XV);
  for (int n = 0; n < XN; n++) {
    double s = 0;
    for (int v = 0; v < XV; v++) s += exp(c.logits[n * XV + v]);
    want[n] = -(c.logits[n * XV + tgt[n]] - log(s)); /* -log_softmax[target] */
  }
  const float scale = 1.0f / XN; /* exact enough: compared against the derivative of the mean */
  xent(c.logits, tgt, c.loss, dl, scale);
  gc_expect_close("loss_rows vs -log_softmax[target]", c.loss, want, XN, 1e-14, 1e-300);
  for (int i = 0; i < XN * XV; i++) dl[i] *= (1.0 / XN) / scale;
  gc_fd_check("dlogits (scale 1/N) vs finite differences of the mean loss", xent_mean_loss, &c, c.logits, XN * XV,
              dl, 1e-6);
  xent(c.logits, tgt, c.loss, dl, scale);
  double *inplace = gc_copy(c.logits, XN * XV), *loss2 = gc_zeros(XN);
  xent(inplace, tgt, loss2, inplace, scale);
  gc_expect_bits("dlogits aliasing logits = separate buffer", inplace, dl, XN * XV * sizeof(double));
  gc_expect_bits("loss with aliasing", loss2, c.loss, XN * sizeof(double));
  double *shift = gc_copy(c.logits, XN * XV);
  for (int i = 0; i < XN * XV; i++) shift[i] += 1000.0;
  xent(shift, tgt, loss2, NULL, scale);
  gc_expect_close("logits + 1000: same loss (max subtraction)", loss2, want, XN, 1e-12, 1e-300);
  free(inplace), free(loss2), free(shift), free(dl), free(c.logits), free(c.loss);
}

/* ---- MSE ---- */
enum { MN = 4, MM = 6 };
typedef struct mse_ctx {
  double *pred, *tgt, *loss;
} mse_ctx;

static void mse(mse_ctx *c, double *dpred, double scale) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->pred, k.a.p[1] = c->tgt, k.a.p[2] = c->loss, k.a.p[3] = dpred;
  k.a.i[0] = MN, k.a.i[1] = MM, k.a.f[0] = (float)scale;
  ref_mse(&k.a, k.dt);
}

static const double MSE_W = 0.25; /* L = MSE_W * sum(loss_rows), so dpred uses scale 2 * MSE_W */

static double mse_loss(void *ctx) {
  mse_ctx *c = ctx;
  mse(c, NULL, 0);
  double s = 0;
  for (int n = 0; n < MN; n++) s += c->loss[n];
  return MSE_W * s;
}

static void test_mse(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "mse", seed);
  mse_ctx c = {gc_rand(&r, MN * MM, -2, 2), gc_rand(&r, MN * MM, -2, 2), gc_zeros(MN)};
  double *dp = gc_zeros(MN * MM), want[MN];
  mse(&c, dp, 2 * MSE_W);
  for (int n = 0; n < MN; n++) {
    want[n] = 0;
    for (int j = 0; j < MM; j++) want[n] += pow(c.pred[n * MM + j] - c.tgt[n * MM + j], 2);
  }
  gc_expect_close("loss_rows vs sum (pred-target)^2", c.loss, want, MN, 1e-15, 1e-300);
  gc_fd_check("dpred (scale 2w) vs finite differences of w*sum(loss_rows)", mse_loss, &c, c.pred, MN * MM, dp, 1e-6);
  free(dp), free(c.pred), free(c.tgt), free(c.loss);
}

/* ---- SwiGLU ---- */
enum { SN_ = 5, SF = 7 };
typedef struct swiglu_ctx {
  double *ab, *h, *R;
} swiglu_ctx;

static double swiglu_loss(void *ctx) {
  swiglu_ctx *c = ctx;
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->ab, k.a.p[1] = c->h, k.a.i[0] = SN_, k.a.i[1] = SF;
  ref_swiglu_fwd(&k.a, k.dt);
  return gc_dot(c->h, c->R, SN_ * SF);
}

static void swiglu_bwd(double *ab, double *dh, double *dab) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = ab, k.a.p[1] = dh, k.a.p[2] = dab, k.a.i[0] = SN_, k.a.i[1] = SF;
  ref_swiglu_bwd(&k.a, k.dt);
}

static void test_swiglu(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "swiglu", seed);
  swiglu_ctx c = {gc_rand(&r, SN_ * 2 * SF, -4, 4), gc_zeros(SN_ * SF), gc_rand(&r, SN_ * SF, -1, 1)};
  double want[SN_ * SF], *dab = gc_zeros(SN_ * 2 * SF);
  swiglu_loss(&c);
  for (int n = 0; n < SN_; n++)
    for (int j = 0; j < SF; j++) {
      const double x = c.ab[n * 2 * SF + j], y = c.ab[n * 2 * SF + SF + j];
      want[n * SF + j] = x / (1 + exp(-x)) * y;
    }
  gc_expect_close("h vs silu(a)*b", c.h, want, SN_ * SF, 1e-15, 1e-300);
  swiglu_bwd(c.ab, c.R, dab);
  gc_fd_check("dab vs finite differences", swiglu_loss, &c, c.ab, SN_ * 2 * SF, dab, 1e-6);
  double *alias = gc_copy(c.ab, SN_ * 2 * SF);
  swiglu_bwd(alias, c.R, alias);
  gc_expect_bits("dab aliasing ab = separate buffer", alias, dab, SN_ * 2 * SF * sizeof(double));
  free(alias), free(dab), free(c.ab), free(c.h), free(c.R);
}

/* ---- embedding ---- */
enum { EN = 9, EV = 6, ED = 5 };
typedef struct embed_ctx {
  int32_t *tok;
  double *table, *out, *R;
} embed_ctx;

static double embed_loss(void *ctx) {
  embed_ctx *c = ctx;
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->tok, k.a.p[1] = c->table, k.a.p[2] = c->out, k.dt[0] = DT_I32;
  k.a.i[0] = EN, k.a.i[1] = ED, k.a.i[2] = EV;
  ref_embed_fwd(&k.a, k.dt);
  return gc_dot(c->out, c->R, EN * ED);
}

static void embed_bwd(embed_ctx *c, double *dtable, int acc) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->tok, k.a.p[1] = c->R, k.a.p[2] = dtable, k.dt[0] = DT_I32;
  k.a.i[0] = EN, k.a.i[1] = ED, k.a.i[2] = EV, k.a.i[3] = acc;
  ref_embed_bwd(&k.a, k.dt);
}

static void test_embedding(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "embedding", seed);
  int32_t tok[EN] = {3, 0, 3, 5, 1, 3, 0, 5, 1}; /* repeats; rows 2 and 4 never hit */
  embed_ctx c = {tok, gc_rand(&r, EV * ED, -1, 1), gc_zeros(EN * ED), gc_rand(&r, EN * ED, -1, 1)};
  double want[EN * ED];
  embed_loss(&c);
  for (int n = 0; n < EN; n++)
    for (int j = 0; j < ED; j++) want[n * ED + j] = c.table[tok[n] * ED + j];
  gc_expect_close("out = table[tokens]", c.out, want, EN * ED, 0, 1e-300);
  double *dt = gc_rand(&r, EV * ED, 50, 60); /* garbage: acc=0 must overwrite, unhit rows 0 */
  embed_bwd(&c, dt, 0);
  gc_fd_check("dtable vs finite differences (unhit rows 0)", embed_loss, &c, c.table, EV * ED, dt, 1e-6);
  double *base = gc_rand(&r, EV * ED, -1, 1), *acc = gc_copy(base, EV * ED), wacc[EV * ED];
  for (int i = 0; i < EV * ED; i++) wacc[i] = base[i];
  for (int n = 0; n < EN; n++) /* in token order, as the kernel documents */
    for (int j = 0; j < ED; j++) wacc[tok[n] * ED + j] += c.R[n * ED + j];
  embed_bwd(&c, acc, 1);
  gc_expect_close("acc=1 adds into dtable", acc, wacc, EV * ED, 1e-15, 1e-300);
  double *dt2 = gc_zeros(EV * ED);
  embed_bwd(&c, dt2, 0);
  gc_expect_bits("backward deterministic", dt2, dt, EV * ED * sizeof(double));
  free(dt), free(base), free(acc), free(dt2), free(c.table), free(c.out), free(c.R);
}

/* ---- elementwise ---- */
enum { EL = 40, BN = 6, BM = 7 };
typedef struct relu_ctx {
  double *x, *y, *R;
} relu_ctx;

static double relu_loss(void *ctx) {
  relu_ctx *c = ctx;
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->x, k.a.p[1] = c->y, k.a.i[0] = EL;
  ref_relu_fwd(&k.a, k.dt);
  return gc_dot(c->y, c->R, EL);
}

static void relu_bwd(relu_ctx *c, double *dx, int acc) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->y, k.a.p[1] = c->R, k.a.p[2] = dx, k.a.i[0] = EL, k.a.i[1] = acc;
  ref_relu_bwd(&k.a, k.dt);
}

typedef struct bias_ctx {
  double *x, *b, *y, *R;
} bias_ctx;

static double bias_loss(void *ctx) {
  bias_ctx *c = ctx;
  memcpy(c->y, c->x, BN * BM * sizeof(double));
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = c->y, k.a.p[1] = c->b, k.a.i[0] = BN, k.a.i[1] = BM;
  ref_bias_add(&k.a, k.dt);
  return gc_dot(c->y, c->R, BN * BM);
}

static void test_elementwise(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "relu / bias_add / cast / add / scale", seed);
  relu_ctx c = {gc_rand(&r, EL, -1, 1), gc_zeros(EL), gc_rand(&r, EL, -1, 1)};
  for (int i = 0; i < EL; i++) c.x[i] += c.x[i] < 0 ? -0.05 : 0.05; /* keep finite differences off the kink */
  double want[EL], *dx = gc_zeros(EL);
  relu_loss(&c);
  for (int i = 0; i < EL; i++) want[i] = c.x[i] > 0 ? c.x[i] : 0;
  gc_expect_close("relu y = max(x, 0)", c.y, want, EL, 0, 1e-300);
  relu_bwd(&c, dx, 0);
  gc_fd_check("relu dx vs finite differences", relu_loss, &c, c.x, EL, dx, 1e-6);
  double *base = gc_rand(&r, EL, -1, 1), *dxa = gc_copy(base, EL);
  relu_bwd(&c, dxa, 1);
  for (int i = 0; i < EL; i++) want[i] = base[i] + dx[i];
  gc_expect_bits("relu_bwd acc=1 adds", dxa, want, EL * sizeof(double));

  bias_ctx bc = {gc_rand(&r, BN * BM, -1, 1), gc_rand(&r, BM, -1, 1), gc_zeros(BN * BM), gc_rand(&r, BN * BM, -1, 1)};
  double db[BM];
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = bc.R, k.a.p[1] = db, k.a.i[0] = BN, k.a.i[1] = BM, k.a.f[0] = 1.0f;
  ref_reduce_rows(&k.a, k.dt);
  gc_fd_check("bias_add db = reduce_rows(dy) vs finite differences", bias_loss, &bc, bc.b, BM, db, 1e-6);
  bias_loss(&bc);
  double wy[BN * BM];
  for (int i = 0; i < BN * BM; i++) wy[i] = bc.x[i] + bc.b[i % BM];
  gc_expect_close("bias_add y = x + b", bc.y, wy, BN * BM, 0, 1e-300);

  double src[4] = {1.0 + 0x1p-30, -3.5, 1e-3, 257.0}, out[4], sum[4], w[4];
  float f[4];
  uint16_t h[4];
  gc_call_init(&k);
  k.a.p[0] = src, k.a.p[1] = f, k.dt[1] = DT_F32, k.a.i[0] = 4;
  ref_cast(&k.a, k.dt);
  k.a.p[0] = f, k.dt[0] = DT_F32, k.a.p[1] = h, k.dt[1] = DT_BF16;
  ref_cast(&k.a, k.dt);
  for (int i = 0; i < 4; i++) out[i] = ddp_bf16_to_f32(h[i]), w[i] = ddp_bf16_to_f32(ddp_f32_to_bf16((float)src[i]));
  gc_expect_close("cast f64 -> f32 -> bf16 rounds to nearest", out, w, 4, 0, 1e-300);
  gc_call_init(&k);
  k.a.p[0] = src, k.a.p[1] = out, k.a.p[2] = sum, k.a.i[0] = 4;
  ref_add(&k.a, k.dt);
  for (int i = 0; i < 4; i++) w[i] = src[i] + out[i];
  gc_expect_close("add", sum, w, 4, 0, 1e-300);
  gc_call_init(&k);
  k.a.p[0] = sum, k.a.i[0] = 4, k.a.f[0] = -0.5f;
  ref_scale(&k.a, k.dt);
  for (int i = 0; i < 4; i++) w[i] *= -0.5;
  gc_expect_close("scale in place", sum, w, 4, 0, 1e-300);
  free(base), free(dxa), free(dx), free(c.x), free(c.y), free(c.R);
  free(bc.x), free(bc.b), free(bc.y), free(bc.R);
}

int main(void) {
  test_xent(301);
  test_mse(302);
  test_swiglu(303);
  test_embedding(304);
  test_elementwise(305);
  return gc_finish("test_ref_loss");
}

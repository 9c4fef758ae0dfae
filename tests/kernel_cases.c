/* tests/kernel_cases.c: test-case construction for every kernel op (see kernel_cases.h). Shape fields:
 *   EMBED_*: a N, b D, c V (flag: acc)         RMSNORM_* / LAYERNORM_*: a N, b D, c P (flag: acc)
 *   REDUCE_ROWS: a P, b D (flag: acc)          SUM: a n (flag: acc)      ROPE: a B, b T, c H, d Dh (flag: inverse)
 *   ATTN_*: a B*H (B = 2 when even), b T, c Dh (flag: causal); q/k/v carry a row stride wider than H*Dh
 *   SWIGLU_*: a N, b F      XENT: a N, b V (flag: dlogits aliases logits)      MSE: a N, b M
 *   SUMSQ: a n, b P         OPT_SCALARS: a P (flag: cosine schedule)  ADAMW / SGD: a n (flag: bf16 copy)
 *   CAST / ADD / SCALE / RELU_*: a n (flag: acc for RELU_BWD)  BIAS_ADD: a N, b M
 *   ATTN_NAIVE_*: a B*H, b T (flag: causal) */
#include "kernel_cases.h"
#include "plan.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static void slot(kc_case *c, int k, int64_t n, int dt, int role, int init, float a, float b) {
  c->buf[k] = (kc_buf){.n = n, .dt = (uint8_t)dt, .role = (uint8_t)role, .init = (uint8_t)init, .alias = -1, .a = a, .b = b};
  c->in.dt[k] = (uint8_t)dt;
}

/* One builder per op family: fills c->in.i / c->in.f and the slots of c for op, and the shape text. */
enum { F32 = DT_F32, I32 = DT_I32, SHAPE = 96 };

static void embed(int op, int act, kc_shape s, kc_case *c, char *shape) {
  const int64_t N = s.a, D = s.b, V = s.c;
  int64_t *I = c->in.i;
  I[EMBED_FWD_I_N] = N, I[EMBED_FWD_I_D] = D, I[EMBED_FWD_I_V] = V;
  slot(c, EMBED_FWD_P_TOKENS, N, I32, KC_IN, KC_INT, 0, (float)V);
  if (op == OP_EMBED_FWD) {
    slot(c, EMBED_FWD_P_TABLE, V * D, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, EMBED_FWD_P_OUT, N * D, act, KC_OUT, 0, 0, 0);
  } else {
    I[EMBED_BWD_I_ACC] = s.flag;
    slot(c, EMBED_BWD_P_DOUT, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, EMBED_BWD_P_DTABLE, V * D, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
  }
  snprintf(shape, SHAPE, "N=%lld D=%lld V=%lld%s", (long long)N, (long long)D, (long long)V, s.flag ? " acc" : "");
}

static void norm(int op, int act, kc_shape s, kc_case *c, char *shape) {
  const int64_t N = s.a, D = s.b, P = s.c > 0 ? s.c : 1;
  int64_t *I = c->in.i;
  I[RMSNORM_FWD_I_N] = N, I[RMSNORM_FWD_I_D] = D; /* the same slots in all four ops */
  c->in.f[RMSNORM_FWD_F_EPS] = 1e-5f;
  if (op == OP_RMSNORM_FWD) {
    slot(c, RMSNORM_FWD_P_X, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, RMSNORM_FWD_P_G, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
    slot(c, RMSNORM_FWD_P_Y, N * D, act, KC_OUT, 0, 0, 0);
    slot(c, RMSNORM_FWD_P_RSTD, N, F32, KC_OUT, 0, 0, 0);
  } else if (op == OP_RMSNORM_BWD) {
    I[RMSNORM_BWD_I_ACC] = s.flag, I[RMSNORM_BWD_I_P] = P;
    slot(c, RMSNORM_BWD_P_X, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, RMSNORM_BWD_P_G, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
    slot(c, RMSNORM_BWD_P_DY, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, RMSNORM_BWD_P_RSTD, N, F32, KC_IN, KC_UNIFORM, 0.5f, 2.f);
    slot(c, RMSNORM_BWD_P_DX, N * D, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
    slot(c, RMSNORM_BWD_P_DG_PART, P * D, F32, KC_OUT, 0, 0, 0);
  } else if (op == OP_LAYERNORM_FWD) {
    slot(c, LAYERNORM_FWD_P_X, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, LAYERNORM_FWD_P_W, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
    slot(c, LAYERNORM_FWD_P_B, D, F32, KC_IN, KC_NORMAL, 0.1f, 0);
    slot(c, LAYERNORM_FWD_P_Y, N * D, act, KC_OUT, 0, 0, 0);
    slot(c, LAYERNORM_FWD_P_MEAN, N, F32, KC_OUT, 0, 0, 0);
    slot(c, LAYERNORM_FWD_P_RSTD, N, F32, KC_OUT, 0, 0, 0);
  } else {
    I[LAYERNORM_BWD_I_ACC] = s.flag, I[LAYERNORM_BWD_I_P] = P;
    slot(c, LAYERNORM_BWD_P_X, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, LAYERNORM_BWD_P_W, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
    slot(c, LAYERNORM_BWD_P_DY, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, LAYERNORM_BWD_P_MEAN, N, F32, KC_IN, KC_NORMAL, 0.1f, 0);
    slot(c, LAYERNORM_BWD_P_RSTD, N, F32, KC_IN, KC_UNIFORM, 0.5f, 2.f);
    slot(c, LAYERNORM_BWD_P_DX, N * D, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
    slot(c, LAYERNORM_BWD_P_DW_PART, P * D, F32, KC_OUT, 0, 0, 0);
    slot(c, LAYERNORM_BWD_P_DB_PART, P * D, F32, KC_OUT, 0, 0, 0);
  }
  if (op == OP_RMSNORM_BWD || op == OP_LAYERNORM_BWD)
    snprintf(shape, SHAPE, "N=%lld D=%lld P=%lld%s", (long long)N, (long long)D, (long long)P, s.flag ? " acc" : "");
  else
    snprintf(shape, SHAPE, "N=%lld D=%lld", (long long)N, (long long)D);
}

static void reduce(int op, int act, kc_shape s, kc_case *c, char *shape) {
  (void)act;
  int64_t *I = c->in.i;
  if (op == OP_REDUCE_ROWS) {
    I[REDUCE_ROWS_I_P] = s.a, I[REDUCE_ROWS_I_D] = s.b, I[REDUCE_ROWS_I_ACC] = s.flag;
    c->in.f[REDUCE_ROWS_F_SCALE] = 0.5f;
    slot(c, REDUCE_ROWS_P_IN, s.a * s.b, F32, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, REDUCE_ROWS_P_OUT, s.b, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, SHAPE, "P=%lld D=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " acc" : "");
  } else {
    I[SUM_I_N] = s.a, I[SUM_I_ACC] = s.flag;
    c->in.f[SUM_F_SCALE] = 1.f / (float)s.a;
    slot(c, SUM_P_IN, s.a, F32, KC_IN, KC_UNIFORM, 0.f, 10.f);
    slot(c, SUM_P_OUT, 1, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, SHAPE, "n=%lld%s", (long long)s.a, s.flag ? " acc" : "");
  }
}

static void rope(int op, int act, kc_shape s, kc_case *c, char *shape) {
  (void)op;
  const int64_t B = s.a, T = s.b, H = s.c, Dh = s.d, st = 3 * H * Dh; /* q inside a fused qkv row */
  int64_t *I = c->in.i;
  I[ROPE_I_B] = B, I[ROPE_I_T] = T, I[ROPE_I_H] = H, I[ROPE_I_DH] = Dh, I[ROPE_I_STRIDE] = st;
  I[ROPE_I_INVERSE] = s.flag;
  slot(c, ROPE_P_X, B * T * st, act, KC_INOUT, KC_NORMAL, 1.f, 0);
  slot(c, ROPE_P_INV_FREQ, Dh / 2, F32, KC_IN, KC_INV_FREQ, 10000.f, (float)Dh);
  snprintf(shape, SHAPE, "B=%lld T=%lld H=%lld Dh=%lld%s", (long long)B, (long long)T, (long long)H, (long long)Dh,
           s.flag ? " inverse" : "");
}

static void attn(int op, int act, kc_shape s, kc_case *c, char *shape) {
  const int64_t BH = s.a, B = BH % 2 == 0 ? 2 : 1, H = BH / B, T = s.b, Dh = s.c;
  const int64_t sq = H * Dh + 8, sk = H * Dh + 16, sv = H * Dh + 8, so = H * Dh; /* padded rows */
  int64_t *I = c->in.i;
  I[ATTN_I_B] = B, I[ATTN_I_T] = T, I[ATTN_I_H] = H, I[ATTN_I_DH] = Dh;
  I[ATTN_I_QSTRIDE] = sq, I[ATTN_I_KSTRIDE] = sk, I[ATTN_I_VSTRIDE] = sv, I[ATTN_I_OSTRIDE] = so;
  I[ATTN_I_CAUSAL] = s.flag;
  c->in.f[ATTN_F_SCALE] = 1.f / sqrtf((float)Dh);
  if (op == OP_ATTN_BWD_PREP) {
    slot(c, ATTN_BWD_PREP_P_O, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ATTN_BWD_PREP_P_DO, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ATTN_BWD_PREP_P_DELTA, B * H * T, F32, KC_OUT, 0, 0, 0);
  } else {
    slot(c, ATTN_P_Q, B * T * sq, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ATTN_P_K, B * T * sk, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ATTN_P_V, B * T * sv, act, KC_IN, KC_NORMAL, 1.f, 0);
    if (op == OP_ATTN_FWD) {
      slot(c, ATTN_P_O, B * T * so, act, KC_OUT, 0, 0, 0);
      slot(c, ATTN_P_LSE, B * H * T, F32, KC_OUT, 0, 0, 0);
    } else {
      c->needs_fwd = 1;
      slot(c, ATTN_P_LSE, B * H * T, F32, KC_IN, KC_CONST, 0, 0);
      slot(c, ATTN_P_DO, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, ATTN_P_DELTA, B * H * T, F32, KC_IN, KC_CONST, 0, 0);
      if (op == OP_ATTN_BWD_DKV) {
        slot(c, ATTN_P_DK, B * T * sk, act, KC_OUT, 0, 0, 0);
        slot(c, ATTN_P_DV, B * T * sv, act, KC_OUT, 0, 0, 0);
      } else {
        slot(c, ATTN_P_DQ, B * T * sq, act, KC_OUT, 0, 0, 0);
      }
    }
  }
  snprintf(shape, SHAPE, "B=%lld H=%lld T=%lld Dh=%lld%s", (long long)B, (long long)H, (long long)T, (long long)Dh,
           s.flag ? " causal" : "");
}

static void swiglu(int op, int act, kc_shape s, kc_case *c, char *shape) {
  c->in.i[SWIGLU_FWD_I_N] = s.a, c->in.i[SWIGLU_FWD_I_F] = s.b; /* the same slots in both ops */
  slot(c, SWIGLU_FWD_P_AB, s.a * 2 * s.b, act, KC_IN, KC_NORMAL, 2.f, 0);
  if (op == OP_SWIGLU_FWD) {
    slot(c, SWIGLU_FWD_P_H, s.a * s.b, act, KC_OUT, 0, 0, 0);
  } else {
    slot(c, SWIGLU_BWD_P_DH, s.a * s.b, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, SWIGLU_BWD_P_DAB, s.a * 2 * s.b, act, KC_OUT, 0, 0, 0);
  }
  snprintf(shape, SHAPE, "N=%lld F=%lld", (long long)s.a, (long long)s.b);
}

static void loss(int op, int act, kc_shape s, kc_case *c, char *shape) {
  int64_t *I = c->in.i;
  if (op == OP_XENT) {
    I[XENT_I_N] = s.a, I[XENT_I_V] = s.b;
    c->in.f[XENT_F_SCALE] = 1.f / (float)s.a;
    slot(c, XENT_P_LOGITS, s.a * s.b, act, s.flag ? KC_INOUT : KC_IN, KC_NORMAL, 2.f, 0);
    slot(c, XENT_P_TARGETS, s.a, I32, KC_IN, KC_INT, 0, (float)s.b);
    slot(c, XENT_P_LOSS_ROWS, s.a, F32, KC_OUT, 0, 0, 0);
    slot(c, XENT_P_DLOGITS, s.a * s.b, act, KC_OUT, 0, 0, 0);
    if (s.flag) c->buf[XENT_P_DLOGITS].alias = XENT_P_LOGITS, c->buf[XENT_P_DLOGITS].role = KC_INOUT;
    snprintf(shape, SHAPE, "N=%lld V=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " in-place" : "");
  } else {
    I[MSE_I_N] = s.a, I[MSE_I_M] = s.b;
    c->in.f[MSE_F_SCALE] = 2.f / (float)(s.a * s.b);
    slot(c, MSE_P_PRED, s.a * s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, MSE_P_TARGET, s.a * s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, MSE_P_LOSS_ROWS, s.a, F32, KC_OUT, 0, 0, 0);
    slot(c, MSE_P_DPRED, s.a * s.b, act, KC_OUT, 0, 0, 0);
    snprintf(shape, SHAPE, "N=%lld M=%lld", (long long)s.a, (long long)s.b);
  }
}

static void optimizer(int op, int act, kc_shape s, kc_case *c, char *shape) {
  int64_t *I = c->in.i;
  float *F = c->in.f;
  switch (op) {
  case OP_SUMSQ:
    I[SUMSQ_I_N] = s.a, I[SUMSQ_I_P] = s.b;
    slot(c, SUMSQ_P_X, s.a, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, SUMSQ_P_PART, s.b, F32, KC_OUT, 0, 0, 0);
    snprintf(shape, SHAPE, "n=%lld P=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_OPT_SCALARS:
    I[OPT_SCALARS_I_P] = s.a, I[OPT_SCALARS_I_SCHEDULE] = s.flag, I[OPT_SCALARS_I_WARMUP] = 10;
    I[OPT_SCALARS_I_CYCLE] = 100, I[OPT_SCALARS_I_CLIP] = 1;
    F[OPT_SCALARS_F_LR_MAX] = 1e-3f, F[OPT_SCALARS_F_LR_MIN] = 1e-4f, F[OPT_SCALARS_F_MAX_NORM] = 1.f;
    slot(c, OPT_SCALARS_P_PART, s.a, F32, KC_IN, KC_UNIFORM, 0.f, 0.01f);
    slot(c, OPT_SCALARS_P_SCALARS, SCALAR_COUNT, F32, KC_INOUT, KC_SCALARS, (float)s.b, 0.f);
    snprintf(shape, SHAPE, "P=%lld t0=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " cosine" : "");
    break;
  case OP_ADAMW:
    I[ADAMW_I_N] = s.a;
    F[ADAMW_F_B1] = 0.9f, F[ADAMW_F_B2] = 0.95f, F[ADAMW_F_EPS] = 1e-8f, F[ADAMW_F_WD] = 0.1f;
    slot(c, ADAMW_P_PARAM, s.a, F32, KC_INOUT, KC_NORMAL, 0.02f, 0);
    slot(c, ADAMW_P_GRAD, s.a, act, KC_IN, KC_NORMAL, 0.01f, 0);
    slot(c, ADAMW_P_M, s.a, F32, KC_INOUT, KC_NORMAL, 0.001f, 0);
    slot(c, ADAMW_P_V, s.a, F32, KC_INOUT, KC_UNIFORM, 0.f, 1e-4f);
    if (s.flag) slot(c, ADAMW_P_COPY, s.a, DT_BF16, KC_OUT, 0, 0, 0);
    slot(c, ADAMW_P_SCALARS, SCALAR_COUNT, F32, KC_IN, KC_SCALARS, 5.f, 1e-3f);
    snprintf(shape, SHAPE, "n=%lld%s", (long long)s.a, s.flag ? " +bf16 copy" : "");
    break;
  default: /* OP_SGD */
    I[SGD_I_N] = s.a;
    slot(c, SGD_P_PARAM, s.a, F32, KC_INOUT, KC_NORMAL, 0.02f, 0);
    slot(c, SGD_P_GRAD, s.a, act, KC_IN, KC_NORMAL, 0.01f, 0);
    if (s.flag) slot(c, SGD_P_COPY, s.a, DT_BF16, KC_OUT, 0, 0, 0);
    slot(c, SGD_P_SCALARS, SCALAR_COUNT, F32, KC_IN, KC_SCALARS, 5.f, 1e-2f);
    snprintf(shape, SHAPE, "n=%lld%s", (long long)s.a, s.flag ? " +bf16 copy" : "");
  }
}

static void elementwise(int op, int act, kc_shape s, kc_case *c, char *shape) {
  int64_t *I = c->in.i;
  I[CAST_I_N] = s.a; /* n, or BIAS_ADD's N: slot 0 in every elementwise op */
  snprintf(shape, SHAPE, "n=%lld", (long long)s.a);
  switch (op) {
  case OP_CAST:
    slot(c, CAST_P_IN, s.a, s.flag ? act : F32, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, CAST_P_OUT, s.a, s.flag ? F32 : act, KC_OUT, 0, 0, 0);
    snprintf(shape, SHAPE, "n=%lld %s", (long long)s.a, s.flag ? "act->f32" : "f32->act");
    break;
  case OP_ADD:
    slot(c, ADD_P_A, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ADD_P_B, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, ADD_P_OUT, s.a, act, KC_OUT, 0, 0, 0);
    break;
  case OP_SCALE:
    c->in.f[SCALE_F_S] = 0.37f;
    slot(c, SCALE_P_X, s.a, act, KC_INOUT, KC_NORMAL, 1.f, 0);
    break;
  case OP_BIAS_ADD:
    I[BIAS_ADD_I_M] = s.b;
    slot(c, BIAS_ADD_P_Y, s.a * s.b, act, KC_INOUT, KC_NORMAL, 1.f, 0);
    slot(c, BIAS_ADD_P_B, s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    snprintf(shape, SHAPE, "N=%lld M=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_RELU_FWD:
    slot(c, RELU_FWD_P_X, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, RELU_FWD_P_Y, s.a, act, KC_OUT, 0, 0, 0);
    break;
  default: /* OP_RELU_BWD */
    I[RELU_BWD_I_ACC] = s.flag;
    slot(c, RELU_BWD_P_Y, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, RELU_BWD_P_DY, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, RELU_BWD_P_DX, s.a, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, SHAPE, "n=%lld%s", (long long)s.a, s.flag ? " acc" : "");
  }
}

static void attn_naive(int op, int act, kc_shape s, kc_case *c, char *shape) {
  (void)act;
  const int64_t BH = s.a, B = BH % 2 == 0 ? 2 : 1, H = BH / B, T = s.b;
  int64_t *I = c->in.i;
  I[ATTN_NAIVE_SOFTMAX_I_B] = B, I[ATTN_NAIVE_SOFTMAX_I_T] = T, I[ATTN_NAIVE_SOFTMAX_I_H] = H;
  I[ATTN_NAIVE_SOFTMAX_I_CAUSAL] = s.flag;
  c->in.f[ATTN_NAIVE_SOFTMAX_F_SCALE] = 0.125f;
  if (op == OP_ATTN_NAIVE_SOFTMAX) {
    slot(c, ATTN_NAIVE_SOFTMAX_P_SCORES, BH * T * T, F32, KC_INOUT, KC_NORMAL, 8.f, 0);
    slot(c, ATTN_NAIVE_SOFTMAX_P_LSE, BH * T, F32, KC_OUT, 0, 0, 0);
  } else {
    slot(c, ATTN_NAIVE_SOFTMAX_BWD_P_PROBS, BH * T * T, F32, KC_IN, KC_PROBS, (float)T, 0);
    slot(c, ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS, BH * T * T, F32, KC_INOUT, KC_NORMAL, 1.f, 0);
  }
  snprintf(shape, SHAPE, "B=%lld H=%lld T=%lld%s", (long long)B, (long long)H, (long long)T, s.flag ? " causal" : "");
}

typedef void (*kc_builder)(int op, int act, kc_shape s, kc_case *c, char *shape);

static kc_builder builder_of(int op) {
  switch (op) {
  case OP_EMBED_FWD: case OP_EMBED_BWD: return embed;
  case OP_RMSNORM_FWD: case OP_RMSNORM_BWD: case OP_LAYERNORM_FWD: case OP_LAYERNORM_BWD: return norm;
  case OP_REDUCE_ROWS: case OP_SUM: return reduce;
  case OP_ROPE: return rope;
  case OP_ATTN_FWD: case OP_ATTN_BWD_PREP: case OP_ATTN_BWD_DKV: case OP_ATTN_BWD_DQ: return attn;
  case OP_SWIGLU_FWD: case OP_SWIGLU_BWD: return swiglu;
  case OP_XENT: case OP_MSE: return loss;
  case OP_SUMSQ: case OP_OPT_SCALARS: case OP_ADAMW: case OP_SGD: return optimizer;
  case OP_CAST: case OP_ADD: case OP_SCALE: case OP_BIAS_ADD: case OP_RELU_FWD: case OP_RELU_BWD: return elementwise;
  case OP_ATTN_NAIVE_SOFTMAX: case OP_ATTN_NAIVE_SOFTMAX_BWD: return attn_naive;
  default: return NULL;
  }
}

int kc_make(int op, int act, kc_shape s, kc_case *c) {
  memset(c, 0, sizeof *c);
  c->in = ddp_instr_blank(I_KERNEL, 0);
  c->in.op = (uint16_t)op;
  kc_builder build = builder_of(op);
  if (!build) return -1;
  char shape[SHAPE] = "";
  build(op, act, s, c, shape);
  snprintf(c->label, sizeof c->label, "%-22s %-4s %s", ddp_op_name(op), ddp_dtype_name(act), shape);
  return 0;
}

#define SH(...) \
  do {          \
    if (n < cap) out[n++] = (kc_shape){__VA_ARGS__}; \
  } while (0)

int kc_shapes(int op, kc_shape *out, int cap, int quick) {
  int n = 0;
  switch (op) {
  case OP_EMBED_FWD:
    SH(.a = 4096, .b = 1600, .c = 10000);
    SH(.a = 7, .b = 13, .c = 5);
    break;
  case OP_EMBED_BWD:
    SH(.a = 4096, .b = 1600, .c = 10000);
    SH(.a = 300, .b = 13, .c = 5, .flag = 1);
    SH(.a = 1000, .b = 257, .c = 50257);
    break;
  case OP_RMSNORM_FWD:
  case OP_LAYERNORM_FWD: {
    const int64_t D[] = {64, 1600, 4096, 1000, 1001, 8192};
    for (int i = 0; i < 6; i++)
      if (!quick || i < 4) SH(.a = i == 5 ? 64 : 333, .b = D[i]);
    break;
  }
  case OP_RMSNORM_BWD:
  case OP_LAYERNORM_BWD: {
    const int64_t D[] = {64, 1600, 4096, 1000, 1001};
    for (int i = 0; i < 5; i++)
      if (!quick || i < 3) SH(.a = 333, .b = D[i], .c = i == 4 ? 1000 : 37, .flag = i == 3);
    break;
  }
  case OP_REDUCE_ROWS:
    SH(.a = 528, .b = 1600);
    SH(.a = 3, .b = 1001, .flag = 1);
    break;
  case OP_SUM:
    SH(.a = 4096);
    SH(.a = 77, .flag = 1);
    break;
  case OP_ROPE:
    SH(.a = 2, .b = 129, .c = 3, .d = 64);
    SH(.a = 1, .b = 1000, .c = 2, .d = 128, .flag = 1);
    SH(.a = 3, .b = 7, .c = 1, .d = 18);
    break;
  case OP_ATTN_FWD:
  case OP_ATTN_BWD_PREP:
  case OP_ATTN_BWD_DKV:
  case OP_ATTN_BWD_DQ: {
    const int64_t Dh[] = {16, 32, 64, 128};
    const int64_t T[] = {1, 7, 64, 129, 1000};
    for (int d = 0; d < 4; d++)
      for (int t = 0; t < 5; t++)
        for (int bh = 0; bh < 2; bh++)
          for (int causal = 0; causal < 2; causal++) {
            if (T[t] == 1000 && (bh == 1 || d == 0)) continue; /* the CPU reference is O(T^2 Dh) */
            if (quick && (T[t] == 1000 || bh == 1)) continue;
            if (op == OP_ATTN_BWD_PREP && causal) continue;
            SH(.a = bh ? 6 : 1, .b = T[t], .c = Dh[d], .flag = causal);
          }
    SH(.a = 6, .b = 129, .c = 18, .flag = 1); /* odd head dims: padded to 32 / 96 */
    SH(.a = 2, .b = 77, .c = 80, .flag = 0);
    break;
  }
  case OP_SWIGLU_FWD:
  case OP_SWIGLU_BWD:
    SH(.a = 512, .b = 6400);
    SH(.a = 7, .b = 13);
    break;
  case OP_XENT:
    SH(.a = 64, .b = 10000);
    SH(.a = 16, .b = 50257, .flag = 1);
    SH(.a = 5, .b = 7);
    break;
  case OP_MSE:
    SH(.a = 128, .b = 10);
    SH(.a = 33, .b = 1000);
    break;
  case OP_SUMSQ:
    SH(.a = 1 << 20, .b = 528);
    SH(.a = 1001, .b = 7);
    break;
  case OP_OPT_SCALARS:
    SH(.a = 528, .b = 0);
    SH(.a = 7, .b = 50, .flag = 1);
    break;
  case OP_ADAMW:
  case OP_SGD:
    SH(.a = 1 << 20);
    SH(.a = 1001, .flag = 1);
    break;
  case OP_CAST:
    SH(.a = 1 << 20);
    SH(.a = 1001, .flag = 1);
    break;
  case OP_ADD:
  case OP_SCALE:
  case OP_RELU_FWD:
    SH(.a = 1 << 20);
    SH(.a = 1001);
    break;
  case OP_RELU_BWD:
    SH(.a = 1 << 20);
    SH(.a = 1001, .flag = 1);
    break;
  case OP_BIAS_ADD:
    SH(.a = 512, .b = 1024);
    SH(.a = 7, .b = 13);
    break;
  case OP_ATTN_NAIVE_SOFTMAX:
    SH(.a = 2, .b = 257, .flag = 1);
    SH(.a = 1, .b = 1000, .flag = 0);
    SH(.a = 1, .b = 7, .flag = 1);
    break;
  case OP_ATTN_NAIVE_SOFTMAX_BWD:
    SH(.a = 2, .b = 257);
    SH(.a = 1, .b = 7);
    break;
  default:
    break;
  }
  return n;
}

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

int kc_make(int op, int act, kc_shape s, kc_case *c) {
  memset(c, 0, sizeof *c);
  c->in = ddp_instr_blank(I_KERNEL, 0);
  c->in.op = (uint16_t)op;
  int64_t *I = c->in.i;
  float *F = c->in.f;
  const int F32 = DT_F32, I32 = DT_I32;
  const char *an = ddp_dtype_name(act);
  char shape[96] = "";
  switch (op) {
  case OP_EMBED_FWD:
  case OP_EMBED_BWD: {
    const int64_t N = s.a, D = s.b, V = s.c;
    I[0] = N, I[1] = D, I[2] = V;
    slot(c, 0, N, I32, KC_IN, KC_INT, 0, (float)V);
    if (op == OP_EMBED_FWD) {
      slot(c, 1, V * D, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 2, N * D, act, KC_OUT, 0, 0, 0);
    } else {
      I[3] = s.flag;
      slot(c, 1, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
      slot(c, 2, V * D, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
    }
    snprintf(shape, sizeof shape, "N=%lld D=%lld V=%lld%s", (long long)N, (long long)D, (long long)V, s.flag ? " acc" : "");
    break;
  }
  case OP_RMSNORM_FWD:
  case OP_RMSNORM_BWD:
  case OP_LAYERNORM_FWD:
  case OP_LAYERNORM_BWD: {
    const int64_t N = s.a, D = s.b, P = s.c > 0 ? s.c : 1;
    I[0] = N, I[1] = D;
    F[0] = 1e-5f;
    const int ln = op == OP_LAYERNORM_FWD || op == OP_LAYERNORM_BWD;
    if (op == OP_RMSNORM_FWD) {
      slot(c, 0, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
      slot(c, 2, N * D, act, KC_OUT, 0, 0, 0);
      slot(c, 3, N, F32, KC_OUT, 0, 0, 0);
    } else if (op == OP_RMSNORM_BWD) {
      I[2] = s.flag, I[3] = P;
      slot(c, 0, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
      slot(c, 2, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
      slot(c, 3, N, F32, KC_IN, KC_UNIFORM, 0.5f, 2.f);
      slot(c, 4, N * D, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
      slot(c, 5, P * D, F32, KC_OUT, 0, 0, 0);
    } else if (op == OP_LAYERNORM_FWD) {
      slot(c, 0, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
      slot(c, 2, D, F32, KC_IN, KC_NORMAL, 0.1f, 0);
      slot(c, 3, N * D, act, KC_OUT, 0, 0, 0);
      slot(c, 4, N, F32, KC_OUT, 0, 0, 0);
      slot(c, 5, N, F32, KC_OUT, 0, 0, 0);
    } else {
      I[2] = s.flag, I[3] = P;
      slot(c, 0, N * D, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, D, F32, KC_IN, KC_UNIFORM, 0.5f, 1.5f);
      slot(c, 2, N * D, act, KC_IN, KC_NORMAL, 0.02f, 0);
      slot(c, 3, N, F32, KC_IN, KC_NORMAL, 0.1f, 0);
      slot(c, 4, N, F32, KC_IN, KC_UNIFORM, 0.5f, 2.f);
      slot(c, 5, N * D, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 0.01f, 0);
      slot(c, 6, P * D, F32, KC_OUT, 0, 0, 0);
      slot(c, 7, P * D, F32, KC_OUT, 0, 0, 0);
    }
    (void)ln;
    if (op == OP_RMSNORM_BWD || op == OP_LAYERNORM_BWD)
      snprintf(shape, sizeof shape, "N=%lld D=%lld P=%lld%s", (long long)N, (long long)D, (long long)P, s.flag ? " acc" : "");
    else
      snprintf(shape, sizeof shape, "N=%lld D=%lld", (long long)N, (long long)D);
    break;
  }
  case OP_REDUCE_ROWS:
    I[0] = s.a, I[1] = s.b, I[2] = s.flag;
    F[0] = 0.5f;
    slot(c, 0, s.a * s.b, F32, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.b, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, sizeof shape, "P=%lld D=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " acc" : "");
    break;
  case OP_SUM:
    I[0] = s.a, I[1] = s.flag;
    F[0] = 1.f / (float)s.a;
    slot(c, 0, s.a, F32, KC_IN, KC_UNIFORM, 0.f, 10.f);
    slot(c, 1, 1, F32, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, sizeof shape, "n=%lld%s", (long long)s.a, s.flag ? " acc" : "");
    break;
  case OP_ROPE: {
    const int64_t B = s.a, T = s.b, H = s.c, Dh = s.d, st = 3 * H * Dh; /* q inside a fused qkv row */
    I[0] = B, I[1] = T, I[2] = H, I[3] = Dh, I[4] = st, I[5] = s.flag;
    slot(c, 0, B * T * st, act, KC_INOUT, KC_NORMAL, 1.f, 0);
    slot(c, 1, Dh / 2, F32, KC_IN, KC_INV_FREQ, 10000.f, (float)Dh);
    snprintf(shape, sizeof shape, "B=%lld T=%lld H=%lld Dh=%lld%s", (long long)B, (long long)T, (long long)H, (long long)Dh,
             s.flag ? " inverse" : "");
    break;
  }
  case OP_ATTN_FWD:
  case OP_ATTN_BWD_PREP:
  case OP_ATTN_BWD_DKV:
  case OP_ATTN_BWD_DQ: {
    const int64_t BH = s.a, B = BH % 2 == 0 ? 2 : 1, H = BH / B, T = s.b, Dh = s.c;
    const int64_t sq = H * Dh + 8, sk = H * Dh + 16, sv = H * Dh + 8, so = H * Dh; /* padded rows */
    I[0] = B, I[1] = T, I[2] = H, I[3] = Dh, I[4] = sq, I[5] = sk, I[6] = sv, I[7] = so, I[8] = s.flag;
    F[0] = 1.f / sqrtf((float)Dh);
    if (op == OP_ATTN_BWD_PREP) {
      slot(c, 0, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 2, B * H * T, F32, KC_OUT, 0, 0, 0);
    } else {
      slot(c, 0, B * T * sq, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 1, B * T * sk, act, KC_IN, KC_NORMAL, 1.f, 0);
      slot(c, 2, B * T * sv, act, KC_IN, KC_NORMAL, 1.f, 0);
      if (op == OP_ATTN_FWD) {
        slot(c, 3, B * T * so, act, KC_OUT, 0, 0, 0);
        slot(c, 4, B * H * T, F32, KC_OUT, 0, 0, 0);
      } else {
        c->needs_fwd = 1;
        slot(c, 4, B * H * T, F32, KC_IN, KC_CONST, 0, 0);
        slot(c, 5, B * T * so, act, KC_IN, KC_NORMAL, 1.f, 0);
        slot(c, 6, B * H * T, F32, KC_IN, KC_CONST, 0, 0);
        if (op == OP_ATTN_BWD_DKV) {
          slot(c, 7, B * T * sk, act, KC_OUT, 0, 0, 0);
          slot(c, 8, B * T * sv, act, KC_OUT, 0, 0, 0);
        } else {
          slot(c, 9, B * T * sq, act, KC_OUT, 0, 0, 0);
        }
      }
    }
    snprintf(shape, sizeof shape, "B=%lld H=%lld T=%lld Dh=%lld%s", (long long)B, (long long)H, (long long)T, (long long)Dh,
             s.flag ? " causal" : "");
    break;
  }
  case OP_SWIGLU_FWD:
  case OP_SWIGLU_BWD:
    I[0] = s.a, I[1] = s.b;
    slot(c, 0, s.a * 2 * s.b, act, KC_IN, KC_NORMAL, 2.f, 0);
    if (op == OP_SWIGLU_FWD) {
      slot(c, 1, s.a * s.b, act, KC_OUT, 0, 0, 0);
    } else {
      slot(c, 1, s.a * s.b, act, KC_IN, KC_NORMAL, 0.02f, 0);
      slot(c, 2, s.a * 2 * s.b, act, KC_OUT, 0, 0, 0);
    }
    snprintf(shape, sizeof shape, "N=%lld F=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_XENT:
    I[0] = s.a, I[1] = s.b;
    F[0] = 1.f / (float)s.a;
    slot(c, 0, s.a * s.b, act, s.flag ? KC_INOUT : KC_IN, KC_NORMAL, 2.f, 0);
    slot(c, 1, s.a, I32, KC_IN, KC_INT, 0, (float)s.b);
    slot(c, 2, s.a, F32, KC_OUT, 0, 0, 0);
    slot(c, 3, s.a * s.b, act, KC_OUT, 0, 0, 0);
    if (s.flag) c->buf[3].alias = 0, c->buf[3].role = KC_INOUT;
    snprintf(shape, sizeof shape, "N=%lld V=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " in-place" : "");
    break;
  case OP_MSE:
    I[0] = s.a, I[1] = s.b;
    F[0] = 2.f / (float)(s.a * s.b);
    slot(c, 0, s.a * s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.a * s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 2, s.a, F32, KC_OUT, 0, 0, 0);
    slot(c, 3, s.a * s.b, act, KC_OUT, 0, 0, 0);
    snprintf(shape, sizeof shape, "N=%lld M=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_SUMSQ:
    I[0] = s.a, I[1] = s.b;
    slot(c, 0, s.a, act, KC_IN, KC_NORMAL, 0.02f, 0);
    slot(c, 1, s.b, F32, KC_OUT, 0, 0, 0);
    snprintf(shape, sizeof shape, "n=%lld P=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_OPT_SCALARS:
    I[0] = s.a, I[1] = s.flag, I[2] = 10, I[3] = 100, I[4] = 1;
    F[0] = 1e-3f, F[1] = 1e-4f, F[2] = 1.f;
    slot(c, 0, s.a, F32, KC_IN, KC_UNIFORM, 0.f, 0.01f);
    slot(c, 1, SCALAR_COUNT, F32, KC_INOUT, KC_SCALARS, (float)s.b, 0.f);
    snprintf(shape, sizeof shape, "P=%lld t0=%lld%s", (long long)s.a, (long long)s.b, s.flag ? " cosine" : "");
    break;
  case OP_ADAMW:
    I[0] = s.a;
    F[0] = 0.9f, F[1] = 0.95f, F[2] = 1e-8f, F[3] = 0.1f;
    slot(c, 0, s.a, F32, KC_INOUT, KC_NORMAL, 0.02f, 0);
    slot(c, 1, s.a, act, KC_IN, KC_NORMAL, 0.01f, 0);
    slot(c, 2, s.a, F32, KC_INOUT, KC_NORMAL, 0.001f, 0);
    slot(c, 3, s.a, F32, KC_INOUT, KC_UNIFORM, 0.f, 1e-4f);
    if (s.flag) slot(c, 4, s.a, DT_BF16, KC_OUT, 0, 0, 0);
    slot(c, 5, SCALAR_COUNT, F32, KC_IN, KC_SCALARS, 5.f, 1e-3f);
    snprintf(shape, sizeof shape, "n=%lld%s", (long long)s.a, s.flag ? " +bf16 copy" : "");
    break;
  case OP_SGD:
    I[0] = s.a;
    slot(c, 0, s.a, F32, KC_INOUT, KC_NORMAL, 0.02f, 0);
    slot(c, 1, s.a, act, KC_IN, KC_NORMAL, 0.01f, 0);
    if (s.flag) slot(c, 2, s.a, DT_BF16, KC_OUT, 0, 0, 0);
    slot(c, 3, SCALAR_COUNT, F32, KC_IN, KC_SCALARS, 5.f, 1e-2f);
    snprintf(shape, sizeof shape, "n=%lld%s", (long long)s.a, s.flag ? " +bf16 copy" : "");
    break;
  case OP_CAST:
    I[0] = s.a;
    slot(c, 0, s.a, s.flag ? act : F32, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.a, s.flag ? F32 : act, KC_OUT, 0, 0, 0);
    snprintf(shape, sizeof shape, "n=%lld %s", (long long)s.a, s.flag ? "act->f32" : "f32->act");
    break;
  case OP_ADD:
    I[0] = s.a;
    slot(c, 0, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 2, s.a, act, KC_OUT, 0, 0, 0);
    snprintf(shape, sizeof shape, "n=%lld", (long long)s.a);
    break;
  case OP_SCALE:
    I[0] = s.a;
    F[0] = 0.37f;
    slot(c, 0, s.a, act, KC_INOUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, sizeof shape, "n=%lld", (long long)s.a);
    break;
  case OP_BIAS_ADD:
    I[0] = s.a, I[1] = s.b;
    slot(c, 0, s.a * s.b, act, KC_INOUT, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.b, act, KC_IN, KC_NORMAL, 1.f, 0);
    snprintf(shape, sizeof shape, "N=%lld M=%lld", (long long)s.a, (long long)s.b);
    break;
  case OP_RELU_FWD:
    I[0] = s.a;
    slot(c, 0, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.a, act, KC_OUT, 0, 0, 0);
    snprintf(shape, sizeof shape, "n=%lld", (long long)s.a);
    break;
  case OP_RELU_BWD:
    I[0] = s.a, I[1] = s.flag;
    slot(c, 0, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 1, s.a, act, KC_IN, KC_NORMAL, 1.f, 0);
    slot(c, 2, s.a, act, s.flag ? KC_INOUT : KC_OUT, KC_NORMAL, 1.f, 0);
    snprintf(shape, sizeof shape, "n=%lld%s", (long long)s.a, s.flag ? " acc" : "");
    break;
  case OP_ATTN_NAIVE_SOFTMAX:
  case OP_ATTN_NAIVE_SOFTMAX_BWD: {
    const int64_t BH = s.a, B = BH % 2 == 0 ? 2 : 1, H = BH / B, T = s.b;
    I[0] = B, I[1] = T, I[2] = H, I[8] = s.flag;
    F[0] = 0.125f;
    if (op == OP_ATTN_NAIVE_SOFTMAX) {
      slot(c, 0, BH * T * T, F32, KC_INOUT, KC_NORMAL, 8.f, 0);
      slot(c, 1, BH * T, F32, KC_OUT, 0, 0, 0);
    } else {
      slot(c, 0, BH * T * T, F32, KC_IN, KC_PROBS, (float)T, 0);
      slot(c, 1, BH * T * T, F32, KC_INOUT, KC_NORMAL, 1.f, 0);
    }
    snprintf(shape, sizeof shape, "B=%lld H=%lld T=%lld%s", (long long)B, (long long)H, (long long)T, s.flag ? " causal" : "");
    break;
  }
  default:
    return -1;
  }
  snprintf(c->label, sizeof c->label, "%-22s %-4s %s", ddp_op_name(op), an, shape);
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

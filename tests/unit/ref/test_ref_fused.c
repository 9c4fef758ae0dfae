/* tests/unit/ref/test_ref_fused.c: the fused reference kernels against the unfused pair they replace, on
 * fresh random inputs: RMSNORM_BWD_CAST == RMSNORM_BWD then CAST(dx -> dx_cast), bit for bit (dx, dg_part,
 * dx_cast), for acc 0 and 1, dx f32 with dx_cast bf16 / f32, dx bf16 with dx_cast f32, several shapes;
 * ATTN_BWD_DKV_ROPE / ATTN_BWD_DQ_ROPE in f64 against the unfused op and the rotation written out here
 * (x0' = x0 cos + x1 sin, x1' = x1 cos - x0 sin, angle fl32(t * inv_freq[m])), dv and the padding
 * columns untouched; and the footprints (plan/footprint.c): dx_cast N*D elements written, dx required;
 * inv_freq Dh/2 elements read. */
#include "access.h"
#include "check.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double unif(void) { /* xorshift64, [-1, 1) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void *filled(int dt, int64_t n, double lo, double hi) {
  void *p = malloc((size_t)n * ddp_dtype_size(dt));
  if (!p) abort();
  for (int64_t i = 0; i < n; i++) ddp_store(p, dt, i, lo + (hi - lo) * (unif() + 1.0) / 2.0);
  return p;
}
static void *copy_of(const void *p, int dt, int64_t n) {
  size_t bytes = (size_t)n * ddp_dtype_size(dt);
  void *q = malloc(bytes);
  if (!q) abort();
  memcpy(q, p, bytes);
  return q;
}

/* One case: N rows of D, P chunks, dx of dtype xdt, dx_cast of cdt, dy of ydt. */
static void one(int64_t N, int64_t D, int64_t P, int acc, int xdt, int cdt, int ydt) {
  char what[128];
  snprintf(what, sizeof what, "N=%lld D=%lld P=%lld acc=%d dx %s cast %s dy %s", (long long)N, (long long)D,
           (long long)P, acc, ddp_dtype_name(xdt), ddp_dtype_name(cdt), ddp_dtype_name(ydt));
  void *x = filled(DT_F32, N * D, -2, 2), *g = filled(DT_F32, D, 0.5, 1.5), *dy = filled(ydt, N * D, -0.05, 0.05);
  void *rstd = filled(DT_F32, N, 0.5, 2.0), *dx0 = filled(xdt, N * D, -0.01, 0.01);
  void *dx_a = copy_of(dx0, xdt, N * D), *dx_b = copy_of(dx0, xdt, N * D);
  void *part_a = filled(DT_F32, P * D, 9, 9), *part_b = filled(DT_F32, P * D, 7, 7);
  void *cast_a = filled(cdt, N * D, 5, 5), *cast_b = filled(cdt, N * D, 3, 3);
  ddp_kargs k = {0};
  uint8_t dt[DDP_MAX_PTRS] = {0};
  k.p[RMSNORM_BWD_P_X] = x, k.p[RMSNORM_BWD_P_G] = g, k.p[RMSNORM_BWD_P_DY] = dy, k.p[RMSNORM_BWD_P_RSTD] = rstd;
  dt[RMSNORM_BWD_P_X] = DT_F32, dt[RMSNORM_BWD_P_G] = DT_F32, dt[RMSNORM_BWD_P_DY] = (uint8_t)ydt;
  dt[RMSNORM_BWD_P_RSTD] = DT_F32, dt[RMSNORM_BWD_P_DX] = (uint8_t)xdt, dt[RMSNORM_BWD_P_DG_PART] = DT_F32;
  dt[RMSNORM_BWD_CAST_P_DX_CAST] = (uint8_t)cdt;
  k.i[RMSNORM_BWD_I_N] = N, k.i[RMSNORM_BWD_I_D] = D, k.i[RMSNORM_BWD_I_ACC] = acc, k.i[RMSNORM_BWD_I_P] = P;
  /* unfused: RMSNORM_BWD, then CAST */
  k.p[RMSNORM_BWD_P_DX] = dx_a, k.p[RMSNORM_BWD_P_DG_PART] = part_a;
  ref_rmsnorm_bwd(&k, dt);
  ddp_kargs c = {0};
  uint8_t cdts[DDP_MAX_PTRS] = {0};
  c.p[CAST_P_IN] = dx_a, c.p[CAST_P_OUT] = cast_a, c.i[CAST_I_N] = N * D;
  cdts[CAST_P_IN] = (uint8_t)xdt, cdts[CAST_P_OUT] = (uint8_t)cdt;
  ref_cast(&c, cdts);
  /* fused */
  k.p[RMSNORM_BWD_P_DX] = dx_b, k.p[RMSNORM_BWD_P_DG_PART] = part_b, k.p[RMSNORM_BWD_CAST_P_DX_CAST] = cast_b;
  ref_rmsnorm_bwd_cast(&k, dt);
  CHECK(!memcmp(dx_a, dx_b, (size_t)(N * D) * ddp_dtype_size(xdt)), "%s: dx differs", what);
  CHECK(!memcmp(part_a, part_b, (size_t)(P * D) * 4), "%s: dg_part differs", what);
  CHECK(!memcmp(cast_a, cast_b, (size_t)(N * D) * ddp_dtype_size(cdt)), "%s: dx_cast differs", what);
  CHECK(memcmp(dx0, dx_b, (size_t)(N * D) * ddp_dtype_size(xdt)), "%s: dx not written", what);
  /* dx_cast is dx as stored, rounded: every element */
  int64_t bad = 0;
  for (int64_t i = 0; i < N * D; i++) {
    double want = ddp_load(dx_b, xdt, i);
    void *tmp = filled(cdt, 1, 0, 0);
    ddp_store(tmp, cdt, 0, want);
    if (ddp_load(cast_b, cdt, i) != ddp_load(tmp, cdt, 0)) bad++;
    free(tmp);
  }
  CHECK(bad == 0, "%s: %lld elements of dx_cast are not dx rounded", what, (long long)bad);
  void *bufs[] = {x, g, dy, rstd, dx0, dx_a, dx_b, part_a, part_b, cast_a, cast_b};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

static void footprint(void) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, 0);
  in.op = OP_RMSNORM_BWD_CAST;
  for (int k = 0; k <= RMSNORM_BWD_CAST_P_DX_CAST; k++) in.dt[k] = DT_F32;
  in.dt[RMSNORM_BWD_P_DY] = in.dt[RMSNORM_BWD_CAST_P_DX_CAST] = DT_BF16;
  in.i[RMSNORM_BWD_I_N] = 333, in.i[RMSNORM_BWD_I_D] = 1600, in.i[RMSNORM_BWD_I_ACC] = 1, in.i[RMSNORM_BWD_I_P] = 37;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160] = "";
  CHECK_INT("footprint", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  const ddp_slot_use *u = &use[RMSNORM_BWD_CAST_P_DX_CAST];
  CHECK(u->used && u->write && !u->optional && u->bytes == 333ull * 1600 * 2, "dx_cast: used %d write %d opt %d bytes %llu",
        u->used, u->write, u->optional, (unsigned long long)u->bytes);
  u = &use[RMSNORM_BWD_P_DX];
  CHECK(u->used && u->write && !u->optional && u->bytes == 333ull * 1600 * 4, "dx: used %d write %d opt %d", u->used,
        u->write, u->optional);
  CHECK(use[RMSNORM_BWD_P_DG_PART].bytes == 37ull * 1600 * 4, "dg_part bytes %llu",
        (unsigned long long)use[RMSNORM_BWD_P_DG_PART].bytes);
  in.i[RMSNORM_BWD_I_D] = -1;
  CHECK_INT("negative D", -1, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK_CONTAINS("negative D", why, "(D)");
  CHECK_STR("op name", "RMSNORM_BWD_CAST", ddp_op_name(OP_RMSNORM_BWD_CAST));
  CHECK_STR("op entry", "rmsnorm_bwd_cast", ddp_op_entry(OP_RMSNORM_BWD_CAST));
}

/* Attention backward with the fused inverse RoPE, f64, against the unfused op rotated here. */
static void attn_rope(int op, int64_t B, int64_t H, int64_t T, int64_t Dh, int causal) {
  char what[128];
  snprintf(what, sizeof what, "%s B=%lld H=%lld T=%lld Dh=%lld%s", ddp_op_name(op), (long long)B, (long long)H,
           (long long)T, (long long)Dh, causal ? " causal" : "");
  const int64_t st = 3 * H * Dh, so = H * Dh, rows = B * T, bht = B * H * T; /* q, k, v in one qkv row */
  double *qkv = filled(DT_F64, rows * st, -1, 1), *o = filled(DT_F64, rows * so, 0, 0);
  double *dout = filled(DT_F64, rows * so, -1, 1), *lse = filled(DT_F64, bht, 0, 0), *delta = filled(DT_F64, bht, 0, 0);
  double *inv = filled(DT_F64, Dh / 2, 0, 0);
  for (int64_t m = 0; m < Dh / 2; m++) inv[m] = (float)pow(10000.0, -2.0 * (double)m / (double)Dh);
  ddp_kargs k = {0};
  uint8_t dt[DDP_MAX_PTRS];
  memset(dt, DT_F64, sizeof dt);
  k.i[ATTN_I_B] = B, k.i[ATTN_I_T] = T, k.i[ATTN_I_H] = H, k.i[ATTN_I_DH] = Dh;
  k.i[ATTN_I_QSTRIDE] = k.i[ATTN_I_KSTRIDE] = k.i[ATTN_I_VSTRIDE] = st, k.i[ATTN_I_OSTRIDE] = so;
  k.i[ATTN_I_CAUSAL] = causal;
  k.f[ATTN_F_SCALE] = 1.f / sqrtf((float)Dh);
  k.p[ATTN_P_Q] = qkv, k.p[ATTN_P_K] = qkv + H * Dh, k.p[ATTN_P_V] = qkv + 2 * H * Dh, k.p[ATTN_P_O] = o;
  k.p[ATTN_P_LSE] = lse, k.p[ATTN_P_DO] = dout, k.p[ATTN_P_DELTA] = delta;
  ref_attn_fwd(&k, dt);
  ref_attn_bwd_prep(&(ddp_kargs){.p = {o, dout, delta}, .i = {B, T, H, Dh, st, st, st, so, causal}}, dt);
  k.p[ATTN_P_O] = NULL;
  double *d_a = filled(DT_F64, rows * st, 7, 7), *d_b = filled(DT_F64, rows * st, 7, 7); /* dqkv, padding 7 */
  const int dkv = op == OP_ATTN_BWD_DKV_ROPE;
  ddp_kargs u = k;
  if (dkv) u.p[ATTN_P_DK] = d_a + H * Dh, u.p[ATTN_P_DV] = d_a + 2 * H * Dh;
  else u.p[ATTN_P_DQ] = d_a;
  if (dkv) ref_attn_bwd_dkv(&u, dt);
  else ref_attn_bwd_dq(&u, dt);
  ddp_kargs f = k;
  if (dkv) f.p[ATTN_P_DK] = d_b + H * Dh, f.p[ATTN_P_DV] = d_b + 2 * H * Dh;
  else f.p[ATTN_P_DQ] = d_b;
  f.p[ATTN_P_INV_FREQ] = inv;
  if (dkv) ref_attn_bwd_dkv_rope(&f, dt);
  else ref_attn_bwd_dq_rope(&f, dt);
  const int64_t c0 = dkv ? H * Dh : 0; /* the rotated columns: dk or dq */
  double worst = 0;
  int64_t other = 0;
  for (int64_t r = 0; r < rows; r++) {
    const double t = (double)(r % T);
    for (int64_t c = 0; c < st; c++) {
      const double *ua = d_a + r * st, *fb = d_b + r * st;
      if (c < c0 || c >= c0 + H * Dh) { /* dv, or not written: equal */
        other += ua[c] != fb[c];
        continue;
      }
      const int64_t j = (c - c0) % Dh, m = j / 2, p = c - (j & 1); /* the pair (p, p + 1) */
      const double ang = (double)((float)t * (float)inv[m]), cs = cos(ang), sn = sin(ang);
      const double want = (j & 1) ? ua[p + 1] * cs - ua[p] * sn : ua[p] * cs + ua[p + 1] * sn;
      const double e = fabs(fb[c] - want);
      if (e > worst) worst = e;
    }
  }
  CHECK(worst < 1e-12, "%s: rotated output off by %.3g", what, worst);
  CHECK(other == 0, "%s: %lld elements outside the rotated output differ", what, (long long)other);
  double *bufs[] = {qkv, o, dout, lse, delta, inv, d_a, d_b};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

static void attn_footprint(void) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, 0);
  in.op = OP_ATTN_BWD_DQ_ROPE;
  for (int k = 0; k <= ATTN_P_INV_FREQ; k++) in.dt[k] = DT_BF16;
  in.dt[ATTN_P_LSE] = in.dt[ATTN_P_DELTA] = in.dt[ATTN_P_INV_FREQ] = DT_F32;
  in.i[ATTN_I_B] = 2, in.i[ATTN_I_T] = 64, in.i[ATTN_I_H] = 3, in.i[ATTN_I_DH] = 64;
  in.i[ATTN_I_QSTRIDE] = in.i[ATTN_I_KSTRIDE] = in.i[ATTN_I_VSTRIDE] = 3 * 3 * 64, in.i[ATTN_I_OSTRIDE] = 3 * 64;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160] = "";
  CHECK_INT("attn footprint", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK(use[ATTN_P_INV_FREQ].used && !use[ATTN_P_INV_FREQ].write && use[ATTN_P_INV_FREQ].bytes == 32 * 4,
        "inv_freq: used %d write %d bytes %llu", use[ATTN_P_INV_FREQ].used, use[ATTN_P_INV_FREQ].write,
        (unsigned long long)use[ATTN_P_INV_FREQ].bytes);
  CHECK(use[ATTN_P_DQ].write && !use[ATTN_P_DK].used, "dq written, dk unused");
  in.op = OP_ATTN_BWD_DKV_ROPE;
  CHECK_INT("attn footprint dkv", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK(use[ATTN_P_DK].write && use[ATTN_P_DV].write && !use[ATTN_P_DQ].used && use[ATTN_P_INV_FREQ].used,
        "dkv: dk, dv written, inv_freq read");
}

int main(void) {
  const int64_t shapes[][3] = {{7, 12, 3}, {37, 64, 5}, {33, 19, 40}, {1, 1600, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int acc = 0; acc < 2; acc++) {
      one(shapes[s][0], shapes[s][1], shapes[s][2], acc, DT_F32, DT_BF16, DT_BF16);
      one(shapes[s][0], shapes[s][1], shapes[s][2], acc, DT_F32, DT_F32, DT_F32);
      one(shapes[s][0], shapes[s][1], shapes[s][2], acc, DT_BF16, DT_F32, DT_BF16);
    }
  footprint();
  for (int op = OP_ATTN_BWD_DKV_ROPE; op <= OP_ATTN_BWD_DQ_ROPE; op++) {
    attn_rope(op, 2, 3, 17, 16, 1);
    attn_rope(op, 1, 2, 9, 32, 0);
  }
  attn_footprint();
  return check_report("ref_ops_fused");
}

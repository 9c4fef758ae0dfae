/* tests/unit/ref/test_ref_attn_fused.c: the fused attention backward in the reference executor
 * (ATTN_BWD_PREP with its dq accumulator, ATTN_BWD_FUSED, ATTN_DQ_STORE; plan/op_slots.h) against the
 * split pair ATTN_BWD_DKV + ATTN_BWD_DQ on fresh random f32 inputs: dk and dv bit for bit; dq through the
 * f32 accumulator bit for bit (a double rounded to f32 once either way); an accumulator that did not start
 * at zero ends at start + dq; the prep zeroes every element of the accumulator; the tile layout (64-row
 * tiles, 8-column chunks, the head dim rounded up to 64) leaves the padding at zero; and the footprints:
 * dq_acc's size, written by the prep and the fused op, read by the store, optional in the prep. */
#include "access.h"
#include "check.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float unif(void) { /* xorshift64, [-1, 1) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *filled(int64_t n, float scale) {
  float *p = malloc((size_t)n * sizeof *p);
  if (!p) abort();
  for (int64_t i = 0; i < n; i++) p[i] = scale * unif();
  return p;
}

static int64_t acc_elems(int64_t B, int64_t H, int64_t T, int64_t Dh) {
  return B * H * ((T + 63) / 64 * 64) * ((Dh + 63) / 64 * 64);
}

static void one(int64_t B, int64_t H, int64_t T, int64_t Dh, int causal) {
  char what[96];
  snprintf(what, sizeof what, "B=%lld H=%lld T=%lld Dh=%lld%s", (long long)B, (long long)H, (long long)T,
           (long long)Dh, causal ? " causal" : "");
  const int64_t st = 3 * H * Dh + 8, so = H * Dh, rows = B * T, bht = B * H * T, na = acc_elems(B, H, T, Dh);
  float *qkv = filled(rows * st, 1.f), *o = filled(rows * so, 0.f), *dout = filled(rows * so, 1.f);
  float *lse = filled(bht, 0.f), *delta = filled(bht, 0.f), *acc = filled(na, 7.f);
  uint8_t dt[DDP_MAX_PTRS];
  memset(dt, DT_F32, sizeof dt);
  ddp_kargs k = {0};
  k.i[ATTN_I_B] = B, k.i[ATTN_I_T] = T, k.i[ATTN_I_H] = H, k.i[ATTN_I_DH] = Dh;
  k.i[ATTN_I_QSTRIDE] = k.i[ATTN_I_KSTRIDE] = k.i[ATTN_I_VSTRIDE] = st, k.i[ATTN_I_OSTRIDE] = so;
  k.i[ATTN_I_CAUSAL] = causal;
  k.f[ATTN_F_SCALE] = 1.f / sqrtf((float)Dh);
  k.p[ATTN_P_Q] = qkv, k.p[ATTN_P_K] = qkv + H * Dh, k.p[ATTN_P_V] = qkv + 2 * H * Dh, k.p[ATTN_P_O] = o;
  k.p[ATTN_P_LSE] = lse, k.p[ATTN_P_DO] = dout, k.p[ATTN_P_DELTA] = delta;
  ref_attn_fwd(&k, dt);
  ddp_kargs prep = k;
  memset(prep.p, 0, sizeof prep.p);
  prep.p[ATTN_BWD_PREP_P_O] = o, prep.p[ATTN_BWD_PREP_P_DO] = dout, prep.p[ATTN_BWD_PREP_P_DELTA] = delta;
  prep.p[ATTN_BWD_PREP_P_DQACC] = acc;
  ref_attn_bwd_prep(&prep, dt);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < na; i++) nonzero += acc[i] != 0.f;
  CHECK(nonzero == 0, "%s: the prep left %lld of %lld accumulator elements non-zero", what, (long long)nonzero,
        (long long)na);
  k.p[ATTN_P_O] = NULL;
  /* the split pair into dqkv a, the fused op and the store into dqkv b (both start at 5: padding kept) */
  float *da = filled(rows * st, 0.f), *db = filled(rows * st, 0.f);
  for (int64_t i = 0; i < rows * st; i++) da[i] = db[i] = 5.f;
  ddp_kargs s = k;
  s.p[ATTN_P_DQ] = da, s.p[ATTN_P_DK] = da + H * Dh, s.p[ATTN_P_DV] = da + 2 * H * Dh;
  ref_attn_bwd_dkv(&s, dt);
  ref_attn_bwd_dq(&s, dt);
  ddp_kargs f = k;
  f.p[ATTN_P_DK] = db + H * Dh, f.p[ATTN_P_DV] = db + 2 * H * Dh, f.p[ATTN_P_DQACC] = acc;
  ref_attn_bwd_fused(&f, dt);
  ddp_kargs w = k;
  w.p[ATTN_P_DQ] = db, w.p[ATTN_P_DQACC] = acc;
  ref_attn_dq_store(&w, dt);
  CHECK(memcmp(da, db, (size_t)(rows * st) * sizeof *da) == 0, "%s: fused + store differ from DKV + DQ", what);
  /* the layout: element (b, t, h, j) of dq at its tile position; everything else zero */
  const int64_t tiles = (T + 63) / 64, chunks = (Dh + 63) / 64 * 8;
  int64_t misplaced = 0, padding = 0, seen = 0;
  for (int64_t x = 0; x < na; x++) {
    const int64_t j8 = x % 8, r = (x / 8) % 64, c = (x / 512) % chunks, tile = (x / (512 * chunks)) % tiles,
                  bh = x / (512 * chunks * tiles);
    const int64_t t = tile * 64 + r, j = c * 8 + j8, b = bh / H, h = bh % H;
    if (t >= T || j >= Dh) {
      padding += acc[x] != 0.f;
      continue;
    }
    seen++;
    misplaced += acc[x] != da[(b * T + t) * st + h * Dh + j];
  }
  CHECK(seen == rows * H * Dh && misplaced == 0 && padding == 0,
        "%s: accumulator layout: %lld of %lld elements misplaced, %lld padding elements non-zero", what,
        (long long)misplaced, (long long)seen, (long long)padding);
  /* accumulation: a second fused pass adds dq again */
  float *before = malloc((size_t)na * sizeof *before);
  if (!before) abort();
  memcpy(before, acc, (size_t)na * sizeof *acc);
  ref_attn_bwd_fused(&f, dt);
  int64_t wrong = 0;
  for (int64_t x = 0; x < na; x++) wrong += acc[x] != (float)((double)before[x] + (double)before[x]);
  CHECK(wrong == 0, "%s: a second pass did not add dq to the accumulator (%lld elements)", what, (long long)wrong);
  float *bufs[] = {qkv, o, dout, lse, delta, acc, da, db, before};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

static void footprints(void) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, 0);
  for (int k = 0; k < DDP_MAX_PTRS; k++) in.dt[k] = DT_BF16;
  in.dt[ATTN_P_LSE] = in.dt[ATTN_P_DELTA] = in.dt[ATTN_P_DQACC] = DT_F32;
  in.i[ATTN_I_B] = 2, in.i[ATTN_I_T] = 65, in.i[ATTN_I_H] = 3, in.i[ATTN_I_DH] = 40;
  in.i[ATTN_I_QSTRIDE] = in.i[ATTN_I_KSTRIDE] = in.i[ATTN_I_VSTRIDE] = 3 * 3 * 40, in.i[ATTN_I_OSTRIDE] = 3 * 40;
  const uint64_t acc_bytes = (uint64_t)acc_elems(2, 3, 65, 40) * 4; /* 2 x 3 x 128 rows x 64 columns */
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160] = "";
  in.op = OP_ATTN_BWD_FUSED;
  CHECK_INT("fused footprint", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK(use[ATTN_P_DQACC].used && use[ATTN_P_DQACC].write && !use[ATTN_P_DQACC].optional &&
            use[ATTN_P_DQACC].bytes == acc_bytes && use[ATTN_P_DK].write && use[ATTN_P_DV].write && !use[ATTN_P_DQ].used,
        "fused: dq_acc used %d write %d bytes %llu (want %llu), dk/dv written, dq unused", use[ATTN_P_DQACC].used,
        use[ATTN_P_DQACC].write, (unsigned long long)use[ATTN_P_DQACC].bytes, (unsigned long long)acc_bytes);
  in.op = OP_ATTN_DQ_STORE;
  CHECK_INT("store footprint", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK(use[ATTN_P_DQACC].used && !use[ATTN_P_DQACC].write && use[ATTN_P_DQ].write && !use[ATTN_P_Q].used &&
            !use[ATTN_P_K].used,
        "store: reads dq_acc only, writes dq");
  in.op = OP_ATTN_BWD_PREP;
  in.dt[ATTN_BWD_PREP_P_O] = in.dt[ATTN_BWD_PREP_P_DO] = DT_BF16;
  in.dt[ATTN_BWD_PREP_P_DELTA] = in.dt[ATTN_BWD_PREP_P_DQACC] = DT_F32;
  CHECK_INT("prep footprint", 0, ddp_instr_footprint(&in, 1, use, why, sizeof why));
  CHECK(use[ATTN_BWD_PREP_P_DQACC].optional && use[ATTN_BWD_PREP_P_DQACC].write &&
            use[ATTN_BWD_PREP_P_DQACC].bytes == acc_bytes,
        "prep: dq_acc optional and written");
  CHECK_STR("op name", "ATTN_BWD_FUSED", ddp_op_name(OP_ATTN_BWD_FUSED));
  CHECK_STR("op entry", "attn_dq_store", ddp_op_entry(OP_ATTN_DQ_STORE));
}

int main(void) {
  one(1, 1, 1, 64, 1);
  one(2, 3, 70, 40, 1);
  one(1, 2, 129, 64, 0);
  one(2, 1, 64, 128, 1);
  footprints();
  return check_report("ref_attn_fused");
}

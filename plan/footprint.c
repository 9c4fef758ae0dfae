/* plan/footprint.c: the exact footprint of every instruction (ddp_instr_footprint, see access.h). One
 * extent function per kernel op, named ext_<entry> after the op's entry in DDP_KERNEL_OPS (plan/ops.h), so
 * a new op without one is a compile error; one per instruction family (GEMM, MEMSET, COPY, collectives,
 * LOAD_BATCH, INIT_TENSOR). Each reads the op's integer slots by their plan/op_slots.h names, checks them
 * (sizes >= 0, strides >= the row length, no overflow) and states, per pointer slot, the elements touched
 * from its start. Used by the plan reader (plan_check.c) and, through ddp_instr_accesses, the verifier. */
#include "access.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
/* ---- footprint context: integer slots read with checks, elements per pointer slot ---- */

typedef struct fp {
  const ddp_instr *in;
  ddp_slot_use *use;
  char *why;
  size_t whycap;
  int bad;
  int big;              /* the integer slot with the largest value read so far (named in overflows) */
  const char *big_name;
  int64_t world;        /* the plan's world size (collectives, ADAMW's peers) */
} fp;

__attribute__((format(printf, 2, 3))) static void fail(fp *f, const char *fmt, ...) {
  if (f->bad++) return; /* the first reason wins */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->why, f->whycap, fmt, ap);
  va_end(ap);
}

static void note(fp *f, int k, const char *name) {
  if (f->big < 0 || f->in->i[k] > f->in->i[f->big]) f->big = k, f->big_name = name;
}

/* Integer slot k (named `name` in messages) that must be >= min. */
static int64_t get(fp *f, int k, const char *name, int64_t min) {
  int64_t v = f->in->i[k];
  note(f, k, name);
  if (v < min) {
    fail(f, "i[%d] (%s) = %lld, must be >= %lld", k, name, (long long)v, (long long)min);
    return min;
  }
  return v;
}

static void overflow(fp *f, int64_t a, char op, int64_t b) {
  if (f->big >= 0)
    fail(f, "i[%d] (%s) = %lld: size %lld %c %lld overflows", f->big, f->big_name, (long long)f->in->i[f->big],
         (long long)a, op, (long long)b);
  else
    fail(f, "size %lld %c %lld overflows", (long long)a, op, (long long)b);
}

static int64_t mul(fp *f, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) {
    overflow(f, a, 'x', b);
    return 0;
  }
  return r;
}

static int64_t add(fp *f, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    overflow(f, a, '+', b);
    return 0;
  }
  return r;
}

/* The slot touches `elems` elements of dtype dt from its start. */
static void slot_dt(fp *f, int s, int64_t elems, int optional, int dt) {
  ddp_slot_use *u = &f->use[s];
  u->used = 1;
  u->write = f->in->opcode == I_KERNEL ? (uint8_t)((ddp_op_write_mask(f->in->op) >> s) & 1u) : 0; /* else: below */
  u->optional = (uint8_t)optional;
  u->dtype = (uint8_t)dt;
  uint64_t es = ddp_dtype_size(dt), bytes;
  /* Elements of no size (dt[s] none or unknown) would bound nothing: an INIT_TENSOR of 1.4e14 elements typed
   * none passed as 0 bytes and the reference executor drew every value (the plan fuzzer, 2026-11-23;
   * tests/fuzz/regress/plan/init_elements_untyped.bin). */
  if (elems > 0 && es == 0 && f->in->p[s].tensor >= 0) { /* (a null optional slot touches nothing) */
    fail(f, "p[%d]: %lld elements of dtype %s, which has no element size", s, (long long)elems, ddp_dtype_name(dt));
    es = 1;
  }
  if (__builtin_mul_overflow((uint64_t)elems, es, &bytes)) {
    fail(f, "p[%d]: %lld elements of %llu bytes overflow", s, (long long)elems, (unsigned long long)es);
    bytes = 0;
  }
  u->bytes = bytes;
}
/* ... of its own dtype dt[s]. */
static void slot(fp *f, int s, int64_t elems, int optional) { slot_dt(f, s, elems, optional, f->in->dt[s]); }
#define REQ 0
#define OPT 1

/* Rows of `rows` x `len` elements `stride` apart (stride >= len): first to last element. */
static int64_t strided(fp *f, int64_t rows, int64_t len, int64_t stride) {
  if (rows == 0 || len == 0) return 0;
  return add(f, mul(f, rows - 1, stride), len);
}

/* Stride slot k of a row of `len` elements: at least the row length and at least 1. */
static int64_t stride_of(fp *f, int k, const char *name, int64_t len) {
  int64_t v = f->in->i[k];
  note(f, k, name);
  if (v < 1 || v < len) {
    fail(f, "i[%d] (%s) = %lld, must be >= the row length %lld and >= 1", k, name, (long long)v, (long long)len);
    return len < 1 ? 1 : len;
  }
  return v;
}

/* Partial tables: P < 1 counts as 1 chunk (ref_parts, templates). */
static int64_t parts(int64_t P) { return P < 1 ? 1 : P; }

/* ---- kernel ops (ext_<entry>) ----
 * Every op of two or more dimensions takes each of them >= 1: with all of them non-zero each one is bounded
 * by an operand's proven size. A zero would leave the others free while no byte is touched: an empty
 * attention (B = 0) with T = 2^40 made the reference kernel size a T x Dh scratch row, an empty RoPE
 * (Dh = 0) loop over B*T*H heads for hours. The compiler never emits an empty kernel; one-dimension ops
 * (n = 0: nothing to do) stay allowed. */

/* The vocabulary-parallel embedding (partial = 1): the table holds rows [vfirst, vfirst + V); partial must
 * be 0 or 1 and vfirst >= 0 (vfirst + V fits in int64). partial = 0 ignores vfirst. */
static void vocab_part(fp *f, int k_partial, int k_vfirst, int64_t V) {
  const int64_t partial = f->in->i[k_partial];
  if (partial != 0 && partial != 1) {
    fail(f, "i[%d] (partial) = %lld, must be 0 or 1", k_partial, (long long)partial);
    return;
  }
  if (partial) add(f, get(f, k_vfirst, "vfirst", 0), V);
}
static void ext_embed_fwd(fp *f) {
  int64_t N = get(f, EMBED_FWD_I_N, "N", 1), D = get(f, EMBED_FWD_I_D, "D", 1), V = get(f, EMBED_FWD_I_V, "V", 1);
  vocab_part(f, EMBED_FWD_I_PARTIAL, EMBED_FWD_I_VFIRST, V);
  slot(f, EMBED_FWD_P_TOKENS, N, REQ);
  slot(f, EMBED_FWD_P_TABLE, mul(f, V, D), REQ);
  slot(f, EMBED_FWD_P_OUT, mul(f, N, D), REQ);
}
static void ext_embed_bwd(fp *f) {
  int64_t N = get(f, EMBED_BWD_I_N, "N", 1), D = get(f, EMBED_BWD_I_D, "D", 1), V = get(f, EMBED_BWD_I_V, "V", 1);
  vocab_part(f, EMBED_BWD_I_PARTIAL, EMBED_BWD_I_VFIRST, V);
  slot(f, EMBED_BWD_P_TOKENS, N, REQ);
  slot(f, EMBED_BWD_P_DOUT, mul(f, N, D), REQ);
  slot(f, EMBED_BWD_P_DTABLE, mul(f, V, D), REQ);
}
static void ext_rmsnorm_fwd(fp *f) {
  int64_t N = get(f, RMSNORM_FWD_I_N, "N", 1), D = get(f, RMSNORM_FWD_I_D, "D", 1);
  slot(f, RMSNORM_FWD_P_X, mul(f, N, D), REQ);
  slot(f, RMSNORM_FWD_P_G, D, REQ);
  slot(f, RMSNORM_FWD_P_Y, mul(f, N, D), REQ);
  slot(f, RMSNORM_FWD_P_RSTD, N, OPT);
}
static void ext_rmsnorm_bwd(fp *f) {
  int64_t N = get(f, RMSNORM_BWD_I_N, "N", 1), D = get(f, RMSNORM_BWD_I_D, "D", 1),
          P = parts(f->in->i[RMSNORM_BWD_I_P]);
  slot(f, RMSNORM_BWD_P_X, mul(f, N, D), REQ);
  slot(f, RMSNORM_BWD_P_G, D, REQ);
  slot(f, RMSNORM_BWD_P_DY, mul(f, N, D), REQ);
  slot(f, RMSNORM_BWD_P_RSTD, N, REQ);
  slot(f, RMSNORM_BWD_P_DX, mul(f, N, D), OPT);
  slot(f, RMSNORM_BWD_P_DG_PART, mul(f, P, D), OPT);
}
static void ext_rmsnorm_bwd_cast(fp *f) {
  ext_rmsnorm_bwd(f);
  const int64_t N = f->in->i[RMSNORM_BWD_I_N] < 0 ? 0 : f->in->i[RMSNORM_BWD_I_N],
                D = f->in->i[RMSNORM_BWD_I_D] < 0 ? 0 : f->in->i[RMSNORM_BWD_I_D]; /* checked by ext_rmsnorm_bwd */
  f->use[RMSNORM_BWD_P_DX].optional = REQ; /* the cast reads the new dx back */
  slot(f, RMSNORM_BWD_CAST_P_DX_CAST, mul(f, N, D), REQ);
}
static void ext_reduce_rows(fp *f) {
  int64_t P = get(f, REDUCE_ROWS_I_P, "P", 1), D = get(f, REDUCE_ROWS_I_D, "D", 1);
  slot(f, REDUCE_ROWS_P_IN, mul(f, P, D), REQ);
  slot(f, REDUCE_ROWS_P_OUT, D, REQ);
}
static void ext_sum(fp *f) {
  slot(f, SUM_P_IN, get(f, SUM_I_N, "n", 0), REQ);
  slot(f, SUM_P_OUT, 1, REQ);
}
static void ext_rope(fp *f) {
  int64_t B = get(f, ROPE_I_B, "B", 1), T = get(f, ROPE_I_T, "T", 1), H = get(f, ROPE_I_H, "H", 1),
          Dh = get(f, ROPE_I_DH, "Dh", 1);
  int64_t len = mul(f, H, Dh), stride = stride_of(f, ROPE_I_STRIDE, "stride", len);
  slot(f, ROPE_P_X, strided(f, mul(f, B, T), len, stride), REQ);
  slot(f, ROPE_P_INV_FREQ, Dh / 2, REQ);
}

/* Attention geometry: rows B*T of H*Dh elements, each operand with its stride. */
typedef struct attn { int64_t rows, len, bht, sq, sk, sv, so; } attn;
static attn attn_of(fp *f) {
  attn a;
  int64_t B = get(f, ATTN_I_B, "B", 1), T = get(f, ATTN_I_T, "T", 1), H = get(f, ATTN_I_H, "H", 1),
          Dh = get(f, ATTN_I_DH, "Dh", 1);
  a.rows = mul(f, B, T);
  a.len = mul(f, H, Dh);
  a.bht = mul(f, a.rows, H);
  a.sq = strided(f, a.rows, a.len, stride_of(f, ATTN_I_QSTRIDE, "qstride", a.len));
  a.sk = strided(f, a.rows, a.len, stride_of(f, ATTN_I_KSTRIDE, "kstride", a.len));
  a.sv = strided(f, a.rows, a.len, stride_of(f, ATTN_I_VSTRIDE, "vstride", a.len));
  a.so = strided(f, a.rows, a.len, stride_of(f, ATTN_I_OSTRIDE, "ostride", a.len));
  return a;
}
static void attn_inputs(fp *f, const attn *a) {
  slot(f, ATTN_P_Q, a->sq, REQ);
  slot(f, ATTN_P_K, a->sk, REQ);
  slot(f, ATTN_P_V, a->sv, REQ);
}
static void ext_attn_fwd(fp *f) {
  attn a = attn_of(f);
  attn_inputs(f, &a);
  slot(f, ATTN_P_O, a.so, REQ);
  slot(f, ATTN_P_LSE, a.bht, OPT);
}
/* ATTN_BWD_FUSED's dq accumulator: B*H tiles of ceil(T/64) x 64 rows x Dh rounded up to 64 (op_slots.h). */
static int64_t dq_acc_elems(fp *f) {
  const ddp_instr *in = f->in;
  int64_t B = in->i[ATTN_I_B], T = in->i[ATTN_I_T], H = in->i[ATTN_I_H], Dh = in->i[ATTN_I_DH];
  if (B < 1 || T < 1 || H < 1 || Dh < 1) return 0; /* attn_of has failed already */
  return mul(f, mul(f, B, H), mul(f, add(f, T, 63) / 64 * 64, add(f, Dh, 63) / 64 * 64));
}
static void ext_attn_bwd_prep(fp *f) {
  attn a = attn_of(f);
  slot(f, ATTN_BWD_PREP_P_O, a.so, REQ);
  slot(f, ATTN_BWD_PREP_P_DO, a.so, REQ);
  slot(f, ATTN_BWD_PREP_P_DELTA, a.bht, REQ);
  slot(f, ATTN_BWD_PREP_P_DQACC, dq_acc_elems(f), OPT);
}
static void attn_bwd_inputs(fp *f, const attn *a) {
  attn_inputs(f, a);
  slot(f, ATTN_P_LSE, a->bht, REQ);
  slot(f, ATTN_P_DO, a->so, REQ);
  slot(f, ATTN_P_DELTA, a->bht, REQ);
}
static void ext_attn_bwd_dkv(fp *f) {
  attn a = attn_of(f);
  attn_bwd_inputs(f, &a);
  slot(f, ATTN_P_DK, a.sk, REQ);
  slot(f, ATTN_P_DV, a.sv, REQ);
}
static void ext_attn_bwd_dq(fp *f) {
  attn a = attn_of(f);
  attn_bwd_inputs(f, &a);
  slot(f, ATTN_P_DQ, a.sq, REQ);
}
static void ext_attn_bwd_dkv_rope(fp *f) {
  ext_attn_bwd_dkv(f);
  slot(f, ATTN_P_INV_FREQ, f->in->i[ATTN_I_DH] < 0 ? 0 : f->in->i[ATTN_I_DH] / 2, REQ); /* Dh checked above */
}
static void ext_attn_bwd_dq_rope(fp *f) {
  ext_attn_bwd_dq(f);
  slot(f, ATTN_P_INV_FREQ, f->in->i[ATTN_I_DH] < 0 ? 0 : f->in->i[ATTN_I_DH] / 2, REQ);
}
static void ext_attn_bwd_fused(fp *f) {
  ext_attn_bwd_dkv(f);
  slot(f, ATTN_P_DQACC, dq_acc_elems(f), REQ);
}
static void ext_attn_dq_store(fp *f) {
  attn a = attn_of(f);
  slot(f, ATTN_P_DQ, a.sq, REQ);
  slot(f, ATTN_P_DQACC, dq_acc_elems(f), REQ);
}
static void ext_swiglu_fwd(fp *f) {
  int64_t N = get(f, SWIGLU_FWD_I_N, "N", 1), F = get(f, SWIGLU_FWD_I_F, "F", 1);
  slot(f, SWIGLU_FWD_P_AB, mul(f, N, mul(f, 2, F)), REQ);
  slot(f, SWIGLU_FWD_P_H, mul(f, N, F), REQ);
}
static void ext_swiglu_bwd(fp *f) {
  int64_t N = get(f, SWIGLU_BWD_I_N, "N", 1), F = get(f, SWIGLU_BWD_I_F, "F", 1);
  slot(f, SWIGLU_BWD_P_AB, mul(f, N, mul(f, 2, F)), REQ);
  slot(f, SWIGLU_BWD_P_DH, mul(f, N, F), REQ);
  slot(f, SWIGLU_BWD_P_DAB, mul(f, N, mul(f, 2, F)), REQ);
}
static void ext_xent(fp *f) {
  int64_t N = get(f, XENT_I_N, "N", 1), V = get(f, XENT_I_V, "V", 1);
  slot(f, XENT_P_LOGITS, mul(f, N, V), REQ);
  slot(f, XENT_P_TARGETS, N, REQ);
  slot(f, XENT_P_LOSS_ROWS, N, OPT);
  slot(f, XENT_P_DLOGITS, mul(f, N, V), OPT);
}
static void ext_xent_vp_stats(fp *f) {
  int64_t N = get(f, XENT_VP_STATS_I_N, "N", 1), V = get(f, XENT_VP_STATS_I_V, "V", 1);
  add(f, get(f, XENT_VP_STATS_I_VFIRST, "vfirst", 0), V);
  slot(f, XENT_VP_STATS_P_LOGITS, mul(f, N, V), REQ);
  slot(f, XENT_VP_STATS_P_TARGETS, N, REQ);
  slot(f, XENT_VP_STATS_P_STATS, mul(f, N, 2), REQ);
}
static void ext_xent_vp(fp *f) {
  int64_t N = get(f, XENT_VP_I_N, "N", 1), V = get(f, XENT_VP_I_V, "V", 1),
          vfirst = get(f, XENT_VP_I_VFIRST, "vfirst", 0), P = get(f, XENT_VP_I_PARTS, "parts", 1),
          vtotal = get(f, XENT_VP_I_VTOTAL, "vtotal", 1);
  if (!f->bad && add(f, vfirst, V) > vtotal)
    fail(f, "i[%d] (vfirst) + i[%d] (V) = %lld exceeds i[%d] (vtotal) = %lld", XENT_VP_I_VFIRST, XENT_VP_I_V,
         (long long)(vfirst + V), XENT_VP_I_VTOTAL, (long long)vtotal);
  slot(f, XENT_VP_P_LOGITS, mul(f, N, V), REQ);
  slot(f, XENT_VP_P_TARGETS, N, REQ);
  slot(f, XENT_VP_P_STATS, mul(f, mul(f, P, N), 2), REQ);
  slot(f, XENT_VP_P_LOSS_ROWS, N, OPT);
  slot(f, XENT_VP_P_DLOGITS, mul(f, N, V), OPT);
}
static void ext_mse(fp *f) {
  int64_t N = get(f, MSE_I_N, "N", 1), M = get(f, MSE_I_M, "M", 1);
  slot(f, MSE_P_PRED, mul(f, N, M), REQ);
  slot(f, MSE_P_TARGET, mul(f, N, M), REQ);
  slot(f, MSE_P_LOSS_ROWS, N, OPT);
  slot(f, MSE_P_DPRED, mul(f, N, M), OPT);
}
static void ext_sumsq(fp *f) {
  slot(f, SUMSQ_P_X, get(f, SUMSQ_I_N, "n", 0), REQ);
  slot(f, SUMSQ_P_PART, parts(f->in->i[SUMSQ_I_P]), REQ);
}
static void ext_opt_scalars(fp *f) {
  slot(f, OPT_SCALARS_P_PART, get(f, OPT_SCALARS_I_P, "P", 0), OPT);
  slot(f, OPT_SCALARS_P_SCALARS, SCALAR_COUNT, REQ);
}
static void ext_adamw(fp *f) {
  int64_t n = get(f, ADAMW_I_N, "n", 0);
  slot(f, ADAMW_P_PARAM, n, REQ);
  slot(f, ADAMW_P_GRAD, n, REQ);
  slot(f, ADAMW_P_M, n, REQ);
  slot(f, ADAMW_P_V, n, REQ);
  slot(f, ADAMW_P_COPY, n, OPT);
  slot(f, ADAMW_P_SCALARS, SCALAR_COUNT, REQ);
  int64_t peers = get(f, ADAMW_I_PEERS, "peers", 0);
  if (peers != 0 && peers != f->world)
    fail(f, "i[%d] (peers) = %lld, must be 0 or the world size %lld", ADAMW_I_PEERS, (long long)peers,
         (long long)f->world);
  if (peers > 0 && f->world < 2) fail(f, "i[%d] (peers) = %lld on a world of one rank", ADAMW_I_PEERS, (long long)peers);
  if (f->in->p[ADAMW_P_RECEIVED].tensor >= 0) { /* the other ranks' gradients, copied here (peer_copy) */
    if (peers < 2) fail(f, "p[%d] (received) names a tensor, i[%d] (peers) = %lld", ADAMW_P_RECEIVED, ADAMW_I_PEERS,
                        (long long)peers);
    else if (f->in->dt[ADAMW_P_RECEIVED] != f->in->dt[ADAMW_P_GRAD])
      fail(f, "p[%d] (received) is %s, the gradient %s", ADAMW_P_RECEIVED, ddp_dtype_name(f->in->dt[ADAMW_P_RECEIVED]),
           ddp_dtype_name(f->in->dt[ADAMW_P_GRAD]));
    else slot(f, ADAMW_P_RECEIVED, mul(f, peers - 1, n), REQ);
  }
  if (f->in->p[ADAMW_P_PEER_GRADS].tensor >= 0)
    fail(f, "p[%d] (the peers' gradients) names a tensor; the executor fills it, the plan leaves it null",
         ADAMW_P_PEER_GRADS);
}
static void ext_sgd(fp *f) {
  int64_t n = get(f, SGD_I_N, "n", 0);
  slot(f, SGD_P_PARAM, n, REQ);
  slot(f, SGD_P_GRAD, n, REQ);
  slot(f, SGD_P_COPY, n, OPT);
  slot(f, SGD_P_SCALARS, SCALAR_COUNT, REQ);
}
static void ext_cast(fp *f) {
  int64_t n = get(f, CAST_I_N, "n", 0);
  slot(f, CAST_P_IN, n, REQ);
  slot(f, CAST_P_OUT, n, REQ);
}
static void ext_add(fp *f) {
  int64_t n = get(f, ADD_I_N, "n", 0);
  slot(f, ADD_P_A, n, REQ);
  slot(f, ADD_P_B, n, REQ);
  slot(f, ADD_P_OUT, n, REQ);
}
/* in: P >= 1 chunks of n elements. n = 0 leaves P unbounded but touches nothing and runs nothing (both
 * kernels loop over n outside the chunks). */
static void ext_sum_chunks(fp *f) {
  int64_t n = get(f, SUM_CHUNKS_I_N, "n", 0), P = get(f, SUM_CHUNKS_I_P, "P", 1);
  slot(f, SUM_CHUNKS_P_IN, mul(f, P, n), REQ);
  slot(f, SUM_CHUNKS_P_OUT, n, REQ);
}
static void ext_scale(fp *f) { slot(f, SCALE_P_X, get(f, SCALE_I_N, "n", 0), REQ); }
static void ext_bias_add(fp *f) {
  int64_t N = get(f, BIAS_ADD_I_N, "N", 1), M = get(f, BIAS_ADD_I_M, "M", 1);
  slot(f, BIAS_ADD_P_Y, mul(f, N, M), REQ);
  slot(f, BIAS_ADD_P_B, M, REQ);
}
static void ext_relu_fwd(fp *f) {
  int64_t n = get(f, RELU_FWD_I_N, "n", 0);
  slot(f, RELU_FWD_P_X, n, REQ);
  slot(f, RELU_FWD_P_Y, n, REQ);
}
static void ext_relu_bwd(fp *f) {
  int64_t n = get(f, RELU_BWD_I_N, "n", 0);
  slot(f, RELU_BWD_P_Y, n, REQ);
  slot(f, RELU_BWD_P_DY, n, REQ);
  slot(f, RELU_BWD_P_DX, n, REQ);
}
static void ext_layernorm_fwd(fp *f) {
  int64_t N = get(f, LAYERNORM_FWD_I_N, "N", 1), D = get(f, LAYERNORM_FWD_I_D, "D", 1);
  slot(f, LAYERNORM_FWD_P_X, mul(f, N, D), REQ);
  slot(f, LAYERNORM_FWD_P_W, D, OPT);
  slot(f, LAYERNORM_FWD_P_B, D, OPT);
  slot(f, LAYERNORM_FWD_P_Y, mul(f, N, D), REQ);
  slot(f, LAYERNORM_FWD_P_MEAN, N, OPT);
  slot(f, LAYERNORM_FWD_P_RSTD, N, OPT);
}
static void ext_layernorm_bwd(fp *f) {
  int64_t N = get(f, LAYERNORM_BWD_I_N, "N", 1), D = get(f, LAYERNORM_BWD_I_D, "D", 1),
          P = parts(f->in->i[LAYERNORM_BWD_I_P]);
  slot(f, LAYERNORM_BWD_P_X, mul(f, N, D), REQ);
  slot(f, LAYERNORM_BWD_P_W, D, OPT);
  slot(f, LAYERNORM_BWD_P_DY, mul(f, N, D), REQ);
  slot(f, LAYERNORM_BWD_P_MEAN, N, REQ);
  slot(f, LAYERNORM_BWD_P_RSTD, N, REQ);
  slot(f, LAYERNORM_BWD_P_DX, mul(f, N, D), OPT);
  slot(f, LAYERNORM_BWD_P_DW_PART, mul(f, P, D), OPT);
  slot(f, LAYERNORM_BWD_P_DB_PART, mul(f, P, D), OPT);
}
static void ext_attn_naive_softmax(fp *f) {
  int64_t B = get(f, ATTN_NAIVE_SOFTMAX_I_B, "B", 1), T = get(f, ATTN_NAIVE_SOFTMAX_I_T, "T", 1),
          H = get(f, ATTN_NAIVE_SOFTMAX_I_H, "H", 1), bht = mul(f, mul(f, B, H), T);
  slot(f, ATTN_NAIVE_SOFTMAX_P_SCORES, mul(f, bht, T), REQ);
  slot(f, ATTN_NAIVE_SOFTMAX_P_LSE, bht, OPT);
}
static void ext_attn_naive_softmax_bwd(fp *f) {
  int64_t B = get(f, ATTN_NAIVE_SOFTMAX_BWD_I_B, "B", 1), T = get(f, ATTN_NAIVE_SOFTMAX_BWD_I_T, "T", 1),
          H = get(f, ATTN_NAIVE_SOFTMAX_BWD_I_H, "H", 1), n = mul(f, mul(f, mul(f, B, H), T), T);
  slot(f, ATTN_NAIVE_SOFTMAX_BWD_P_PROBS, n, REQ);
  slot(f, ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS, n, REQ);
}

typedef void (*extent_fn)(fp *);
static const extent_fn kernel_extents[OP_COUNT] = {
#define DDP_OP_EXTENT(id, file, entry, synopsis) [OP_##id] = ext_##entry,
    DDP_KERNEL_OPS(DDP_OP_EXTENT)
#undef DDP_OP_EXTENT
};

/* ---- instructions ---- */

/* One GEMM operand: rows x cols (row-major, leading dimension ld >= cols) per batch entry, `stride`
 * elements between batch entries; k names its ld and stride slots. */
static void gemm_operand(fp *f, int s, int64_t rows, int64_t cols, int ld_slot, const char *ld_name, int stride_slot,
                         const char *stride_name, int64_t batch) {
  int64_t ld = stride_of(f, ld_slot, ld_name, cols);
  int64_t one = strided(f, rows, cols, ld);
  /* Inputs may repeat across the batch (stride 0); the output's entries start at distinct elements
   * (stride >= 1; they may interleave, as the naive attention's heads do), which bounds the batch by D's
   * size: a batch of 2^62 entries over one matrix would run for ever. */
  int64_t stride = batch > 1 ? get(f, stride_slot, stride_name, s == GEMM_P_D && one > 0 ? 1 : 0) : 0;
  slot(f, s, one ? add(f, mul(f, batch - 1, stride), one) : 0, REQ);
}

static void ext_gemm(fp *f) {
  const ddp_instr *in = f->in;
  int64_t M = get(f, GEMM_I_M, "M", 0), N = get(f, GEMM_I_N, "N", 0), K = get(f, GEMM_I_K, "K", 0);
  int64_t batch = in->i[GEMM_I_BATCH] < 1 ? 1 : in->i[GEMM_I_BATCH]; /* < 1: one (ref_gemm, cuBLASLt) */
  note(f, GEMM_I_BATCH, "batch");
  int ta = in->i[GEMM_I_TRANS_A] != 0, tb = in->i[GEMM_I_TRANS_B] != 0;
  /* A is M x K (K x M when transposed), B is K x N (N x K); nothing is read when the product is empty. */
  int64_t mk = M && N ? K : 0, mn = N && M ? 1 : 0;
  gemm_operand(f, GEMM_P_A, ta ? mk : (mk ? M : 0), ta ? M : mk, GEMM_I_LDA, "lda", GEMM_I_STRIDE_A, "stride_a", batch);
  gemm_operand(f, GEMM_P_B, tb ? (mk ? N : 0) : mk, tb ? mk : N, GEMM_I_LDB, "ldb", GEMM_I_STRIDE_B, "stride_b", batch);
  if (in->f[GEMM_F_BETA] != 0.0f)
    gemm_operand(f, GEMM_P_C, mn ? M : 0, N, GEMM_I_LDC, "ldc", GEMM_I_STRIDE_C, "stride_c", batch);
  gemm_operand(f, GEMM_P_D, mn ? M : 0, N, GEMM_I_LDD, "ldd", GEMM_I_STRIDE_D, "stride_d", batch);
  f->use[GEMM_P_D].write = 1;
}

/* Untyped byte ranges (MEMSET, COPY). */
static void bytes_slot(fp *f, int s, int64_t bytes, int write) {
  f->use[s] = (ddp_slot_use){.used = 1, .write = (uint8_t)write, .dtype = DT_NONE, .bytes = (uint64_t)bytes};
}

/* Collectives: one dtype, dt0, for every buffer. */
static void ext_coll(fp *f, int64_t world) {
  const ddp_instr *in = f->in;
  const int dt = in->dt[COLL_P_SEND];
  int64_t count = get(f, COLL_I_COUNT, "count", 0), all = mul(f, count, world);
  switch (in->opcode) {
  case I_ALL_REDUCE:
  case I_BROADCAST:
    slot_dt(f, COLL_P_SEND, count, REQ, dt);
    slot_dt(f, COLL_P_RECV, count, REQ, dt);
    break;
  case I_REDUCE_SCATTER:
    slot_dt(f, COLL_P_SEND, all, REQ, dt);
    slot_dt(f, COLL_P_RECV, count, REQ, dt);
    break;
  case I_ALL_TO_ALL: /* count elements to and from each rank */
    slot_dt(f, COLL_P_SEND, all, REQ, dt);
    slot_dt(f, COLL_P_RECV, all, REQ, dt);
    break;
  case I_ALL_GATHER:
    slot_dt(f, COLL_P_SEND, count, REQ, dt);
    slot_dt(f, COLL_P_RECV, all, REQ, dt);
    break;
  case I_PEER_COPY: /* this rank's range; the other ranks' same range, in rank order */
    slot_dt(f, COLL_P_SEND, count, REQ, dt);
    slot_dt(f, COLL_P_RECV, mul(f, count, world - 1), REQ, dt);
    break;
  case I_PEER_BARRIER: /* no buffer */
    if (count != 0) fail(f, "i[%d] (count) = %lld, a peer barrier moves no bytes (0)", COLL_I_COUNT, (long long)count);
    return;
  default: /* SEND, RECV */
    slot_dt(f, COLL_P_BUF, count, REQ, dt);
    break;
  }
  f->use[COLL_P_RECV].write = in->opcode != I_SEND && in->opcode != I_RECV;
  f->use[COLL_P_BUF].write = in->opcode == I_RECV;
}

int ddp_instr_footprint(const ddp_instr *in, int64_t world, ddp_slot_use use[DDP_MAX_PTRS], char *why,
                        size_t whycap) {
  memset(use, 0, DDP_MAX_PTRS * sizeof *use);
  fp f = {in, use, why, whycap, 0, -1, NULL, world};
  if (why && whycap) why[0] = '\0';
  switch (in->opcode) {
  case I_KERNEL:
    if (in->op >= OP_COUNT) {
      fail(&f, "kernel op %u (have %d)", in->op, OP_COUNT);
      break;
    }
    kernel_extents[in->op](&f);
    break;
  case I_GEMM: ext_gemm(&f); break;
  case I_MEMSET: bytes_slot(&f, MEMSET_P_DST, get(&f, MEMSET_I_BYTES, "bytes", 0), 1); break;
  case I_COPY: {
    int64_t n = get(&f, COPY_I_BYTES, "bytes", 0);
    bytes_slot(&f, COPY_P_SRC, n, 0);
    bytes_slot(&f, COPY_P_DST, n, 1);
    break;
  }
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST:
  case I_SEND:
  case I_RECV:
  case I_PEER_BARRIER:
  case I_PEER_COPY: ext_coll(&f, world); break;
  case I_LOAD_BATCH: /* the data source fills whole tensors: plan_check proves them the batch's size */
    if (get(&f, LOAD_BATCH_I_PARTS, "parts", 0) > 0 && get(&f, LOAD_BATCH_I_PART, "part", 0) >= in->i[LOAD_BATCH_I_PARTS])
      fail(&f, "i[0] (part) = %lld, must be below parts = %lld", (long long)in->i[LOAD_BATCH_I_PART],
           (long long)in->i[LOAD_BATCH_I_PARTS]);
    bytes_slot(&f, LOAD_BATCH_P_INPUTS, 0, 1);
    bytes_slot(&f, LOAD_BATCH_P_TARGETS, 0, 1);
    use[LOAD_BATCH_P_INPUTS].whole = use[LOAD_BATCH_P_TARGETS].whole = 1;
    break;
  case I_INIT_TENSOR:
    slot(&f, INIT_TENSOR_P_TENSOR, get(&f, INIT_TENSOR_I_ELEMENTS, "elements", 0), REQ);
    get(&f, INIT_TENSOR_I_FIRST, "first", 0);
    use[INIT_TENSOR_P_TENSOR].write = 1;
    break;
  default: break; /* events, ranges, timers: no buffers */
  }
  return f.bad ? -1 : 0;
}

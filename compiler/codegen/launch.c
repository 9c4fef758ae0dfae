/* compiler/codegen/launch.c: the launch geometry (grid, block, dynamic shared memory) and the template
 * specialisation of one KERNEL instruction. The spec is a few "#define" lines: DDP_T<k> (the C++ type of
 * every pointer slot the op uses: float, __nv_bfloat16, int) plus the compile-time constants a template
 * needs for register tiling (block size, vector width, row layout, padded head dim, tile sizes). Shapes
 * stay run-time integers, so one module serves every shape of a dtype/layout class and an XL plan needs
 * only a few dozen modules. Unsupported combinations are refused with one line naming op and reason.
 *
 * Partial tables (RMSNORM_BWD, RMSNORM_BWD_CAST, LAYERNORM_BWD, SUMSQ): the kernels run one block per chunk, grid = P
 * (the instruction's i3 / i1, chosen by the compiler). Recommended P: 4 x the SM count (528 on H100/H200
 * SXM with 132 SMs), at most N: enough blocks to fill every SM several times, a table small next to the
 * activations (P*D*4 bytes), folded by one REDUCE_ROWS. */
#include "codegen.h"
#include "err.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_GRID_X 2147483647LL
#define MAX_GRID_YZ 65535LL

static int fail(char *err, size_t errcap, const ddp_instr *in, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ddp_fail(err, errcap, "kernel %s: %s", ddp_op_name(in->op), msg);
}

static void spec_add(ddp_launch *launch, const char *fmt, ...) {
  size_t n = strlen(launch->spec);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(launch->spec + n, sizeof launch->spec - n, fmt, ap);
  va_end(ap);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }
static int64_t pow2ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

static void geom(ddp_launch *launch, int64_t gx, int64_t gy, int64_t block, int64_t smem) {
  launch->grid[0] = (uint32_t)clamp64(gx, 1, MAX_GRID_X);
  launch->grid[1] = (uint32_t)clamp64(gy, 1, MAX_GRID_YZ);
  launch->grid[2] = 1;
  launch->block[0] = (uint32_t)block;
  launch->block[1] = launch->block[2] = 1;
  launch->smem = (uint32_t)smem;
}

/* The pointer slots each op reads or writes (bit k = p[k]), from plan/op_slots.h. */
#define SLOT(k) (1u << (k))
#define UPTO(k) ((2u << (k)) - 1) /* slots 0..k */
static unsigned op_slots(int op) {
  switch (op) {
  case OP_EMBED_FWD: case OP_EMBED_BWD: return UPTO(EMBED_FWD_P_OUT);
  case OP_RMSNORM_FWD: return UPTO(RMSNORM_FWD_P_RSTD);
  case OP_RMSNORM_BWD: return UPTO(RMSNORM_BWD_P_DG_PART);
  case OP_RMSNORM_BWD_CAST: return UPTO(RMSNORM_BWD_CAST_P_DX_CAST);
  case OP_REDUCE_ROWS: case OP_SUM: return UPTO(SUM_P_OUT);
  case OP_ROPE: return UPTO(ROPE_P_INV_FREQ);
  case OP_ATTN_FWD: return UPTO(ATTN_P_LSE);
  case OP_ATTN_BWD_PREP: return UPTO(ATTN_BWD_PREP_P_DQACC);
  case OP_ATTN_BWD_DKV: return UPTO(ATTN_P_DV) & ~SLOT(ATTN_P_O);
  case OP_ATTN_BWD_FUSED: return (UPTO(ATTN_P_DV) & ~SLOT(ATTN_P_O)) | SLOT(ATTN_P_DQACC);
  case OP_ATTN_DQ_STORE: return SLOT(ATTN_P_DQ) | SLOT(ATTN_P_DQACC);
  case OP_ATTN_BWD_DQ: return (UPTO(ATTN_P_DELTA) & ~SLOT(ATTN_P_O)) | SLOT(ATTN_P_DQ);
  case OP_ATTN_BWD_DKV_ROPE: return (UPTO(ATTN_P_DV) & ~SLOT(ATTN_P_O)) | SLOT(ATTN_P_INV_FREQ);
  case OP_ATTN_BWD_DQ_ROPE: return (UPTO(ATTN_P_DELTA) & ~SLOT(ATTN_P_O)) | SLOT(ATTN_P_DQ) | SLOT(ATTN_P_INV_FREQ);
  case OP_SWIGLU_FWD: return UPTO(SWIGLU_FWD_P_H);
  case OP_SWIGLU_BWD: return UPTO(SWIGLU_BWD_P_DAB);
  case OP_XENT: case OP_MSE: return UPTO(XENT_P_DLOGITS);
  case OP_XENT_VP_STATS: return UPTO(XENT_VP_STATS_P_STATS);
  case OP_XENT_VP: return UPTO(XENT_VP_P_DLOGITS);
  case OP_SUMSQ: case OP_OPT_SCALARS: return UPTO(SUMSQ_P_PART);
  case OP_ADAMW: return UPTO(ADAMW_P_SCALARS);
  case OP_SGD: return UPTO(SGD_P_SCALARS);
  case OP_CAST: return UPTO(CAST_P_OUT);
  case OP_ADD: return UPTO(ADD_P_OUT);
  case OP_SUM_CHUNKS: return UPTO(SUM_CHUNKS_P_OUT);
  case OP_SCALE: return UPTO(SCALE_P_X);
  case OP_BIAS_ADD: return UPTO(BIAS_ADD_P_B);
  case OP_RELU_FWD: return UPTO(RELU_FWD_P_Y);
  case OP_RELU_BWD: return UPTO(RELU_BWD_P_DX);
  case OP_LAYERNORM_FWD: return UPTO(LAYERNORM_FWD_P_RSTD);
  case OP_LAYERNORM_BWD: return UPTO(LAYERNORM_BWD_P_DB_PART);
  case OP_ATTN_NAIVE_SOFTMAX: case OP_ATTN_NAIVE_SOFTMAX_BWD: return UPTO(ATTN_NAIVE_SOFTMAX_P_LSE);
  default: return 0;
  }
}

/* Slots that must be f32 (statistics, partial tables, scalars, master state) or i32 (tokens, targets). */
static unsigned op_f32_slots(int op) {
  switch (op) {
  case OP_RMSNORM_FWD: return SLOT(RMSNORM_FWD_P_RSTD);
  case OP_RMSNORM_BWD: case OP_RMSNORM_BWD_CAST: return SLOT(RMSNORM_BWD_P_RSTD) | SLOT(RMSNORM_BWD_P_DG_PART);
  case OP_REDUCE_ROWS: return SLOT(REDUCE_ROWS_P_IN);
  case OP_ROPE: return SLOT(ROPE_P_INV_FREQ);
  case OP_ATTN_FWD: return SLOT(ATTN_P_LSE);
  case OP_ATTN_BWD_PREP: return SLOT(ATTN_BWD_PREP_P_DELTA) | SLOT(ATTN_BWD_PREP_P_DQACC);
  case OP_ATTN_BWD_DKV: case OP_ATTN_BWD_DQ: return SLOT(ATTN_P_LSE) | SLOT(ATTN_P_DELTA);
  case OP_ATTN_BWD_FUSED: return SLOT(ATTN_P_LSE) | SLOT(ATTN_P_DELTA) | SLOT(ATTN_P_DQACC);
  case OP_ATTN_DQ_STORE: return SLOT(ATTN_P_DQACC);
  case OP_ATTN_BWD_DKV_ROPE: case OP_ATTN_BWD_DQ_ROPE:
    return SLOT(ATTN_P_LSE) | SLOT(ATTN_P_DELTA) | SLOT(ATTN_P_INV_FREQ);
  case OP_XENT: case OP_MSE: return SLOT(XENT_P_LOSS_ROWS);
  case OP_XENT_VP_STATS: return SLOT(XENT_VP_STATS_P_STATS);
  case OP_XENT_VP: return SLOT(XENT_VP_P_STATS) | SLOT(XENT_VP_P_LOSS_ROWS);
  case OP_SUMSQ: return SLOT(SUMSQ_P_PART);
  case OP_OPT_SCALARS: return SLOT(OPT_SCALARS_P_PART) | SLOT(OPT_SCALARS_P_SCALARS);
  case OP_ADAMW: return SLOT(ADAMW_P_PARAM) | SLOT(ADAMW_P_M) | SLOT(ADAMW_P_V) | SLOT(ADAMW_P_SCALARS);
  case OP_SGD: return SLOT(SGD_P_PARAM) | SLOT(SGD_P_SCALARS);
  case OP_LAYERNORM_FWD: return SLOT(LAYERNORM_FWD_P_MEAN) | SLOT(LAYERNORM_FWD_P_RSTD);
  case OP_LAYERNORM_BWD:
    return SLOT(LAYERNORM_BWD_P_MEAN) | SLOT(LAYERNORM_BWD_P_RSTD) | SLOT(LAYERNORM_BWD_P_DW_PART) |
           SLOT(LAYERNORM_BWD_P_DB_PART);
  case OP_ATTN_NAIVE_SOFTMAX: return SLOT(ATTN_NAIVE_SOFTMAX_P_LSE);
  default: return 0;
  }
}
static unsigned op_i32_slots(int op) {
  switch (op) {
  case OP_EMBED_FWD: case OP_EMBED_BWD: return SLOT(EMBED_FWD_P_TOKENS);
  case OP_XENT: return SLOT(XENT_P_TARGETS);
  case OP_XENT_VP_STATS: return SLOT(XENT_VP_STATS_P_TARGETS);
  case OP_XENT_VP: return SLOT(XENT_VP_P_TARGETS);
  default: return 0;
  }
}

static const char *ctype(int dt) {
  switch (dt) {
  case DT_F32: return "float";
  case DT_BF16: return "__nv_bfloat16";
  case DT_I32: return "int";
  default: return NULL;
  }
}

static int types(const ddp_instr *in, ddp_launch *launch, char *err, size_t errcap) {
  const unsigned used = op_slots(in->op), f32 = op_f32_slots(in->op), i32 = op_i32_slots(in->op);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    if (!(used >> k & 1)) continue;
    const int dt = in->dt[k];
    if (dt == DT_NONE) continue; /* a null optional slot */
    const char *t = ctype(dt);
    if (!t) return fail(err, errcap, in, "p%d has dtype %s, which has no GPU kernel (f32, bf16, i32 only)", k, ddp_dtype_name(dt));
    if ((f32 >> k & 1) && dt != DT_F32) return fail(err, errcap, in, "p%d must be f32, got %s", k, ddp_dtype_name(dt));
    if ((i32 >> k & 1) && dt != DT_I32) return fail(err, errcap, in, "p%d must be i32, got %s", k, ddp_dtype_name(dt));
    if (!(i32 >> k & 1) && dt == DT_I32) return fail(err, errcap, in, "p%d must be a float type, got i32", k);
    spec_add(launch, "#define DDP_T%d %s\n", k, t);
  }
  return 0;
}

/* 16-byte packs: elements per pack for the narrowest of the used float slots. */
static int vec_width(const ddp_instr *in, unsigned slots) {
  int w = 4;
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if ((slots >> k & 1) && in->dt[k] == DT_BF16) w = 8;
  return w;
}

/* Row-in-registers layout (templates/rows.cuh) for rows of D elements of dtype dt. */
static int rows_layout(const ddp_instr *in, ddp_launch *launch, int64_t D, int dt, int64_t *rpb, char *err, size_t errcap) {
  if (D < 1) return fail(err, errcap, in, "row length D = %lld must be >= 1", (long long)D);
  const int64_t vec = dt == DT_BF16 ? 8 : 4;
  const int64_t V = D % vec == 0 ? vec : (D % 4 == 0 ? 4 : (D % 2 == 0 ? 2 : 1));
  const int64_t nv = cdiv(D, V);
  int64_t block, group, vpt;
  if (nv <= 128) { /* small rows: a warp (or part of one) per row, several rows per block */
    group = clamp64(pow2ceil(cdiv(nv, 4)), 1, 32);
    vpt = cdiv(nv, group);
    block = 256;
  } else { /* one block per row: 4 packs per thread up to 256 threads, then up to 8 packs, then wider */
    vpt = 4;
    block = cdiv(cdiv(nv, vpt), 32) * 32;
    if (block > 256) {
      vpt = clamp64(cdiv(nv, 256), 4, 8);
      block = clamp64(cdiv(cdiv(nv, vpt), 32) * 32, 32, 1024);
    }
    vpt = cdiv(nv, block);
    group = block;
  }
  if (vpt * V > 64)
    return fail(err, errcap, in, "row length D = %lld is too long for a register-resident row (max %lld)",
                (long long)D, (long long)(1024 * 64));
  spec_add(launch, "#define DDP_BLOCK %lld\n#define DDP_GROUP %lld\n#define DDP_VEC %lld\n#define DDP_VPT %lld\n",
           (long long)block, (long long)group, (long long)V, (long long)vpt);
  *rpb = block / group;
  launch->block[0] = (uint32_t)block;
  return 0;
}

/* The cross-entropy kernels (XENT, XENT_VP_STATS, XENT_VP; templates/cross_entropy.cu): one block per row
 * (grid-stride past 2^20 rows), 16-byte packs of the logits' dtype, up to 4 packs a thread, 32..1024 threads. */
static void row_softmax(ddp_launch *launch, int dt_logits, int64_t N, int64_t V) {
  const int vec = dt_logits == DT_BF16 ? 8 : 4;
  const int64_t block = clamp64(cdiv(cdiv(V, vec * 4), 32) * 32, 32, 1024);
  spec_add(launch, "#define DDP_BLOCK %lld\n#define DDP_VEC %d\n", (long long)block, vec);
  geom(launch, clamp64(N, 1, 1 << 20), 1, block, 0);
}

/* The TMA attention kernels' grid (templates/attention_tma.cu's `work`): their B H ceil(T / bm) work tiles in
 * x, blocks of `threads` (the consumers plus the producer warpgroup). */
static int tma_geom(ddp_launch *launch, const ddp_instr *in, int64_t bm, int64_t threads, int64_t smem, char *err,
                    size_t errcap) {
  const int64_t tiles = in->i[ATTN_I_B] * in->i[ATTN_I_H] * cdiv(in->i[ATTN_I_T], bm);
  if (tiles > MAX_GRID_X) return fail(err, errcap, in, "B*H*ceil(T/%lld) = %lld blocks is too many", (long long)bm, (long long)tiles);
  geom(launch, tiles, 1, threads, smem);
  return 0;
}

/* Tuning aid for benchmarks: DDP_TUNE_<FWD|DKV|DQ>_<MT|BN|MINB|WARPS> (the bf16 attention tiles) and
 * DDP_TUNE_ADAMW_<VEC|UNROLL|GRID> (the AdamW kernel's shape), validated by base/param.h and passed in the
 * options; the values land in the spec or the grid, so cached modules stay correct. */
static int64_t tuned(const ddp_codegen_opts *o, int param, int64_t v) {
  return o && o->tune[param - PARAM_TUNE_FWD_MT] ? o->tune[param - PARAM_TUNE_FWD_MT] : v;
}

static int attention(const ddp_instr *in, const char *arch, const ddp_codegen_opts *o, ddp_launch *launch,
                     char *err, size_t errcap) {
  const int64_t B = in->i[ATTN_I_B], T = in->i[ATTN_I_T], H = in->i[ATTN_I_H], Dh = in->i[ATTN_I_DH];
  if (B < 1 || T < 1 || H < 1) return fail(err, errcap, in, "B=%lld T=%lld H=%lld must all be >= 1", (long long)B, (long long)T, (long long)H);
  if (Dh < 16 || Dh > 128 || Dh % 2)
    return fail(err, errcap, in, "head dim %lld not supported (even, 16..128)", (long long)Dh);
  /* the fused inverse-RoPE variants have the layout and tiles of their op; bf16 (tensor-core) path only */
  const int op = in->op == OP_ATTN_BWD_DKV_ROPE ? OP_ATTN_BWD_DKV : in->op == OP_ATTN_BWD_DQ_ROPE ? OP_ATTN_BWD_DQ : in->op;
  if (op != in->op && in->dt[ATTN_P_Q] != DT_BF16)
    return fail(err, errcap, in, "the fused inverse RoPE has only the bf16 tensor-core path (got %s; the compiler "
                "emits ATTN_BWD_DKV / ATTN_BWD_DQ + ROPE there)", ddp_dtype_name(in->dt[ATTN_P_Q]));
  const int64_t rows = B * T * H;
  if (op == OP_ATTN_BWD_PREP) {
    if (in->dt[ATTN_BWD_PREP_P_O] != in->dt[ATTN_BWD_PREP_P_DO])
      return fail(err, errcap, in, "o and do must have one dtype");
    geom(launch, clamp64(cdiv(rows, 32), 1, 1 << 20), 1, 256, 0); /* 32 rows per block packed, 8 scalar (grid-stride) */
    return 0;
  }
  /* q, k, v, (o | do): one dtype, which picks the path */
  const int act = in->dt[ATTN_P_Q];
  const int chk[] = {ATTN_P_Q, ATTN_P_K, ATTN_P_V, op == OP_ATTN_FWD ? ATTN_P_O : ATTN_P_DO};
  for (int c = 0; c < 4; c++)
    if (in->dt[chk[c]] != act)
      return fail(err, errcap, in, "q, k, v and %s must share one dtype (got %s and %s)", op == OP_ATTN_FWD ? "o" : "do",
                  ddp_dtype_name(act), ddp_dtype_name(in->dt[chk[c]]));
  if (act != DT_BF16 && act != DT_F32) return fail(err, errcap, in, "activation dtype %s not supported (f32, bf16)", ddp_dtype_name(act));
  const int64_t HD = (Dh + 15) / 16 * 16;
  const int mma = act == DT_BF16;
  if (!mma) launch->tpl = "attention_f32";
  if (mma) {
    int num = 0;
    if (sscanf(arch, "sm_%d", &num) != 1 || num < 80)
      return fail(err, errcap, in, "the bf16 tensor-core path needs sm_80 or newer (target %s)", arch);
  }
  int64_t warps = 4, bm, bn, smem, mt = 1, minb = 1, nbuf = 0;
  /* DDP_TUNE_<op>_{MT,BN,MINB,WARPS}: four consecutive knobs from t */
  const int t = op == OP_ATTN_FWD ? PARAM_TUNE_FWD_MT : op == OP_ATTN_BWD_DKV ? PARAM_TUNE_DKV_MT : PARAM_TUNE_DQ_MT;
  /* Hopper: templates/attention_wgmma.cu for the forward and the unfused backward at head dims 64 and 128 on
   * sm_90a: two warpgroups of 64 rows (queries; keys for dK/dV), streamed tiles in three stages (two for dQ)
   * in the 128-byte-swizzle layout plus 1 KiB to align them; 64-row streamed tiles except the forward at
   * head dim 128 (128). Measured on an H200 (causal, 16 heads, T 16384, docs/PERFORMANCE.md) against the
   * mma.sync kernels: head dim 64 forward 2.09 ms against 2.63, dK/dV 3.58 against 4.68, dQ 1.89 at two
   * blocks per SM (128 registers; 2.45 at one) against 3.10; head dim 128 forward + backward 12.6-12.9
   * against 24.6-24.7; the XL step (T 512) 67.9 / 68.7 against 69.0 / 70.1 ms (two calls).
   * DDP_TUNE_{FWD,DKV,DQ}_WGMMA=2 keeps the mma.sync kernel for one of them. */
  const int unfused = op == in->op; /* not the fused inverse-RoPE backward */
  const int wg_param = op == OP_ATTN_FWD ? PARAM_TUNE_FWD_WGMMA : op == OP_ATTN_BWD_DKV ? PARAM_TUNE_DKV_WGMMA : PARAM_TUNE_DQ_WGMMA;
  const int64_t wgk = tuned(o, wg_param, 1);
  int tma = 0, persistent = 0;
  if (mma && unfused && (HD == 64 || HD == 128) && strcmp(arch, "sm_90a") == 0 && wgk != 2) {
    launch->tpl = "attention_wgmma";
    warps = tuned(o, t + 3, 8), bm = 16 * warps;
    /* the backward holds two score tiles and two accumulators: 64-row streamed tiles only */
    bn = op == OP_ATTN_FWD && tuned(o, t + 1, HD == 128 ? 128 : 64) == 128 ? 128 : 64;
    minb = tuned(o, t + 2, op == OP_ATTN_BWD_DQ && HD == 64 && warps == 8 ? 2 : 1); /* dQ d64: 2 blocks/SM */
    nbuf = op == OP_ATTN_BWD_DQ ? 2 : op == OP_ATTN_FWD ? tuned(o, PARAM_TUNE_FWD_NBUF, 3) : 3; /* stages (the template says why) */
    /* The FlashAttention-3 structure (templates/attention_tma.cu): a producer warpgroup loading by TMA, two
     * or three consumer warpgroups of 64 rows, one block per SM. Tensor maps need the head dim and the row
     * strides in multiples of 8 elements (16 bytes) and coordinates in 32 bits. Measured on an H200
     * (docs/PERFORMANCE.md "Warp-specialised attention"), causal, 16 heads, T 16384, against the cp.async
     * kernels: forward 1.51 ms against 2.09-2.19 at d 64 (three consumers, 128-key tiles, three stages),
     * 2.03-2.25 against 3.61 at d 128; dK/dV 2.34 against 3.60, dQ 1.56 against 1.90 at d 64. At T 512
     * (the XL step, 100 heads x 4 blocks) one block per tile lost to the cp.async kernels' two blocks per SM
     * in the forward (2.2 against 1.8 ms a step) and dQ (2.0 against 1.8); dK/dV still won (3.3 against 3.7).
     * Persistent (attention_tma.cu's `work`): one block per multiprocessor walks the work tiles, its producer
     * loading the next tile while the consumers finish one. With the accumulators stored 16 bytes at a time
     * (wgmma.cuh), at T 512 (B 4, H 25, d 64; 2026-11-28, docs/PERFORMANCE.md "Stores and persistent
     * blocks") it takes the forward to 19.7-20.1 us against 21.3 for the cp.async one, dQ (two consumers) to
     * 19.9-20.4 against 21.0-21.1, dK/dV to 27.3-28.8 against 33.7 with one block per tile; on the
     * leaderboard (T 16384) it is within 1% at d 64, and at d 128 dK/dV is 3% slower (3.60-3.63 ms against
     * 3.49-3.50). So: the TMA kernels where tensor maps are allowed (the forward from T 512), persistent except
     * dK/dV at d 128 from T 1024, two consumers below T 1024. DDP_TUNE_ATTN_PERSISTENT=1 / 2 forces persistent / one
     * block per tile (2 also returns the forward and dQ below T 1024 to the cp.async kernels: the choice
     * before); DDP_TUNE_*_WGMMA=3 / 4 forces cp.async / TMA. */
    const int maps_ok = Dh % 8 == 0 && in->i[ATTN_I_QSTRIDE] % 8 == 0 && in->i[ATTN_I_KSTRIDE] % 8 == 0 &&
                        in->i[ATTN_I_VSTRIDE] % 8 == 0 && (op == OP_ATTN_FWD || in->i[ATTN_I_OSTRIDE] % 8 == 0) &&
                        T < ((int64_t)1 << 31) && B * H < ((int64_t)1 << 31);
    const int64_t pknob = tuned(o, PARAM_TUNE_ATTN_PERSISTENT, 0);
    const int short_t = T < 1024;
    /* the forward below T 512 stays on the cp.async kernel (two blocks per SM): 6.1 / 9.6 us at T 128 / 256
     * against 6.7 / 10.9 persistent (B 4, H 25, d 64) */
    const int want_tma = op == OP_ATTN_BWD_DKV || !short_t || (pknob != 2 && (op != OP_ATTN_FWD || T >= 512 || pknob == 1));
    if (maps_ok && (wgk == 4 || (wgk == 1 && want_tma))) {
      tma = 1;
      persistent = pknob ? pknob == 1 : !(op == OP_ATTN_BWD_DKV && HD == 128 && !short_t);
      launch->tpl = "attention_tma";
      minb = 1;
      if (op == OP_ATTN_FWD) {
        warps = 4 * tuned(o, PARAM_TUNE_FWD_CONSUMERS, short_t ? 2 : 3);
        nbuf = tuned(o, PARAM_TUNE_FWD_NBUF, 3);
        bn = tuned(o, t + 1, 128) == 128 ? 128 : 64;
      } else { /* dK/dV holds two accumulators and two score tiles: two consumers of 240 registers */
        warps = op == OP_ATTN_BWD_DQ ? 4 * tuned(o, PARAM_TUNE_DQ_CONSUMERS, HD == 64 && !short_t ? 3 : 2) : 8;
        nbuf = 3;
        /* dK/dV at d 64 on long sequences: 128-query tiles (2.11 against 2.36 ms at T 16384, call 6 of
         * docs/PERFORMANCE.md, though ptxas spills 28 bytes); at d 128 they spill more and are slower */
        bn = tuned(o, t + 1, op == OP_ATTN_BWD_DKV && HD == 64 && T >= 1024 ? 128 : 64) == 128 ? 128 : 64;
      }
      bm = 16 * warps;
      /* a persistent block counts the streamed tiles it has walked in 32 bits (attention_tma.cu); where the
       * whole work's could reach 2^31 (a block may be given all of it: DDP_PERSISTENT_BLOCKS=1), one block
       * per tile instead */
      if ((double)(B * H) * (double)cdiv(T, bm) * (double)cdiv(T, bn) >= 2147483648.0) persistent = 0;
      const int64_t fixed = (op == OP_ATTN_FWD ? bm : 2 * bm) * HD * 2, per_stage = 2 * bn * HD * 2 + (op == OP_ATTN_BWD_DKV ? 8 * bn : 0);
      while (nbuf > 2 && fixed + nbuf * per_stage + 1024 > 227 * 1024) nbuf--; /* three d128 stages may not fit */
    }
    smem = (op == OP_ATTN_FWD ? bm : 2 * bm) * HD * 2 + 2 * nbuf * bn * HD * 2 + (op == OP_ATTN_BWD_DKV ? 8 * nbuf * bn : 0) + 1024;
  } else if (mma) {
    const int64_t ld = HD + 8;
    /* m16 tiles per warp (fragment reuse) and streamed-tile rows, within 255 registers (no spills) */
    /* measured on H200 (16 heads, T 16384, d 64, causal): forward 8 warps x 16 rows with <= 128 registers
     * (2 blocks/SM) 2.64 ms against 2.86 for 4 warps x 32 rows; backward 32 rows (keys) per warp with
     * 32-row streamed tiles 4.69 + 3.14 ms against 6.14 + 4.21 for 16 rows and 64-row tiles */
    if (op == OP_ATTN_FWD) {
      bn = 64;
      if (HD <= 64) warps = 8, mt = 1, minb = 2;
    } else {
      mt = HD <= 64 ? 2 : 1, bn = 32;
    }
    mt = tuned(o, t, mt), bn = tuned(o, t + 1, bn), minb = tuned(o, t + 2, minb), warps = tuned(o, t + 3, warps);
    bm = 16 * mt * warps;
    if (op == OP_ATTN_FWD) smem = (bm + 4 * bn) * ld * 2;
    else if (op == OP_ATTN_BWD_DKV) smem = (2 * bm + 4 * bn) * ld * 2 + 4 * bn * 4;
    else smem = (2 * bm + 4 * bn) * ld * 2;
  } else {
    const int64_t ldf = HD + 4, tq = 64, ldp = tq + 4;
    bm = bn = tq;
    if (op == OP_ATTN_FWD) smem = (3 * tq * ldf + tq * ldp) * 4;
    else if (op == OP_ATTN_BWD_DKV) smem = (4 * tq * ldf + 2 * tq * ldp + 2 * tq) * 4;
    else smem = (4 * tq * ldf + tq * ldp) * 4;
  }
  if (cdiv(T, bm) > MAX_GRID_YZ) return fail(err, errcap, in, "T = %lld is too long (max %lld)", (long long)T, (long long)(bm * MAX_GRID_YZ));
  if (B * H > MAX_GRID_X) return fail(err, errcap, in, "B*H = %lld is too large", (long long)(B * H));
  spec_add(launch, "#define DDP_HEAD_DIM %lld\n#define DDP_ATTN_MMA %d\n#define DDP_WARPS %lld\n#define DDP_BM %lld\n"
              "#define DDP_BN %lld\n#define DDP_SMEM %lld\n",
           (long long)HD, mma, (long long)warps, (long long)bm, (long long)bn, (long long)smem);
  spec_add(launch, "#define DDP_MT %lld\n", (long long)mt);
  if (nbuf) spec_add(launch, "#define DDP_NBUF %lld\n", (long long)nbuf);
  if (minb > 1) spec_add(launch, "#define DDP_MINB %lld\n", (long long)minb);
  if (tma) {
    /* the TMA kernels number their work tiles in one grid dimension (attention_tma.cu's `work`), plus the
     * producer warpgroup; under DDP_PERSISTENT the runtime launches at most one block per multiprocessor */
    spec_add(launch, "#define DDP_TMA 1\n");
    if (persistent) spec_add(launch, "#define DDP_PERSISTENT 1\n");
    return tma_geom(launch, in, bm, 32 * warps + 128, smem, err, errcap);
  }
  geom(launch, B * H, cdiv(T, bm), 32 * warps, smem);
  return 0;
}

/* ATTN_BWD_FUSED (templates/attention_tma.cu): the TMA dK/dV kernel that also adds dq into the f32 tile
 * accumulator, on sm_90a for bf16 at head dims 64 and 128 where tensor maps are allowed (the compiler emits
 * it only there; anything else is refused, naming what is missing). Two consumer warpgroups of 64 keys,
 * 64-query tiles, three stages at d 64 and two at d 128 (what fits beside the dS and staging buffers); on
 * the leaderboard configuration (causal, 16 heads, T 16384) it takes 3.17 ms at d 64 against 3.76 for
 * ATTN_BWD_DKV + ATTN_BWD_DQ, and 6.3-6.5 against 6.4-6.9 at d 128. */
static int attention_fused(const ddp_instr *in, const char *arch, const ddp_codegen_opts *o, ddp_launch *launch,
                           char *err, size_t errcap) {
  const int64_t B = in->i[ATTN_I_B], T = in->i[ATTN_I_T], H = in->i[ATTN_I_H], Dh = in->i[ATTN_I_DH];
  if (B < 1 || T < 1 || H < 1) return fail(err, errcap, in, "B=%lld T=%lld H=%lld must all be >= 1", (long long)B, (long long)T, (long long)H);
  const int chk[] = {ATTN_P_Q, ATTN_P_K, ATTN_P_V, ATTN_P_DO, ATTN_P_DK, ATTN_P_DV};
  for (int c = 0; c < 6; c++)
    if (in->dt[chk[c]] != DT_BF16)
      return fail(err, errcap, in, "the fused attention backward is bf16 only (p%d is %s)", chk[c], ddp_dtype_name(in->dt[chk[c]]));
  const int64_t HD = (Dh + 15) / 16 * 16;
  if (Dh < 1 || Dh % 8 || (HD != 64 && HD != 128))
    return fail(err, errcap, in, "the fused attention backward needs a head dim of 56, 64, 120 or 128 (got %lld)", (long long)Dh);
  if (strcmp(arch, "sm_90a") != 0)
    return fail(err, errcap, in, "the fused attention backward needs sm_90a (wgmma and TMA; target %s)", arch);
  if (in->i[ATTN_I_QSTRIDE] % 8 || in->i[ATTN_I_KSTRIDE] % 8 || in->i[ATTN_I_VSTRIDE] % 8 || in->i[ATTN_I_OSTRIDE] % 8 ||
      T >= ((int64_t)1 << 31) || B * H >= ((int64_t)1 << 31))
    return fail(err, errcap, in, "the fused attention backward needs row strides in multiples of 8 elements and T, B*H < 2^31");
  /* d 64: the warpgroups take turns, one computing all of a tile's dQ while the other goes on (3.17-3.18 ms
   * against 3.28-3.29 with half the columns each, T 16384, call 4 of docs/PERFORMANCE.md "The fused
   * attention backward"); d 128 has not the registers for it. DDP_TUNE_FUSED_SPLIT=1 halves the columns. */
  const int turns = HD == 64 && tuned(o, PARAM_TUNE_FUSED_SPLIT, 2) == 2;
  const int64_t warps = 8, bm = 128, bn = 64, nq = turns ? HD : HD / 2;
  int64_t nbuf = 3;
  const int64_t fixed = 2 * bm * HD * 2 + 4 * bm * bn + 1024 * nq + 1024, per_stage = 2 * bn * HD * 2 + 8 * bn;
  while (nbuf > 2 && fixed + nbuf * per_stage > 227 * 1024 - 256) nbuf--; /* 256 bytes for the static barriers */
  const int64_t smem = fixed + nbuf * per_stage;
  if (cdiv(T, bm) > MAX_GRID_YZ) return fail(err, errcap, in, "T = %lld is too long (max %lld)", (long long)T, (long long)(bm * MAX_GRID_YZ));
  if (B * H > MAX_GRID_X) return fail(err, errcap, in, "B*H = %lld is too large", (long long)(B * H));
  spec_add(launch, "#define DDP_HEAD_DIM %lld\n#define DDP_ATTN_MMA 1\n#define DDP_WARPS %lld\n#define DDP_BM %lld\n"
              "#define DDP_BN %lld\n#define DDP_SMEM %lld\n#define DDP_NBUF %lld\n#define DDP_TMA 1\n",
           (long long)HD, (long long)warps, (long long)bm, (long long)bn, (long long)smem, (long long)nbuf);
  if (turns) spec_add(launch, "#define DDP_DQ_TURNS 1\n");
  launch->tpl = "attention_tma";
  return tma_geom(launch, in, bm, 32 * warps + 128, smem, err, errcap); /* one work tile per block */
}

int ddp_kernel_launch(const ddp_instr *in, const char *arch, const ddp_codegen_opts *o, ddp_launch *out, char *err,
                      size_t errcap) {
  memset(out, 0, sizeof *out);
  if (in->op >= OP_COUNT) return ddp_fail(err, errcap, "kernel op %u is unknown", (unsigned)in->op);
  out->tpl = ddp_op_template(in->op);
  if (!arch) arch = "sm_90a";
  if (types(in, out, err, errcap)) return -1;
  const int64_t *I = in->i;
  const int op = in->op;
  int64_t rpb = 1;
  for (int k = 0; k < 4; k++)
    if (I[k] < 0) return fail(err, errcap, in, "i%d = %lld is negative", k, (long long)I[k]);
  switch (op) {
  case OP_EMBED_FWD:
    spec_add(out, "#define DDP_BLOCK 256\n");
    geom(out, clamp64(I[EMBED_FWD_I_N], 1, 1 << 20), 1, 256, 0);
    break;
  case OP_EMBED_BWD: {
    const int64_t gx = cdiv(I[EMBED_BWD_I_D], 128);
    const int64_t gy = clamp64(cdiv(1056, gx < 1 ? 1 : gx), 1, clamp64(I[EMBED_BWD_I_V], 1, MAX_GRID_YZ));
    spec_add(out, "#define DDP_BLOCK 128\n");
    geom(out, gx, gy, 128, 0);
    break;
  }
  case OP_RMSNORM_FWD:
  case OP_LAYERNORM_FWD:
    if (rows_layout(in, out, I[RMSNORM_FWD_I_D], in->dt[RMSNORM_FWD_P_X], &rpb, err, errcap)) return -1;
    geom(out, clamp64(cdiv(I[RMSNORM_FWD_I_N], rpb), 1, 1 << 30), 1, out->block[0], 0);
    break;
  case OP_RMSNORM_BWD:
  case OP_RMSNORM_BWD_CAST:
  case OP_LAYERNORM_BWD:
    if (rows_layout(in, out, I[RMSNORM_BWD_I_D], in->dt[RMSNORM_BWD_P_X], &rpb, err, errcap)) return -1;
    geom(out, I[RMSNORM_BWD_I_P] < 1 ? 1 : I[RMSNORM_BWD_I_P], 1, out->block[0], 0);
    break;
  case OP_REDUCE_ROWS:
    spec_add(out, "#define DDP_ROWS 32\n"); /* 1024 threads per 32 columns: ~P/256 dependent loads each */
    geom(out, cdiv(I[REDUCE_ROWS_I_D], 32), 1, 32 * 32, 0);
    break;
  case OP_SUM:
  case OP_OPT_SCALARS:
    spec_add(out, "#define DDP_BLOCK %d\n", op == OP_SUM ? 1024 : 256);
    geom(out, 1, 1, op == OP_SUM ? 1024 : 256, 0);
    break;
  case OP_ROPE:
    if (I[ROPE_I_DH] % 2 || I[ROPE_I_DH] < 2 || I[ROPE_I_DH] > 256)
      return fail(err, errcap, in, "head dim %lld must be even and in 2..256", (long long)I[ROPE_I_DH]);
    spec_add(out, "#define DDP_BLOCK 256\n");
    geom(out, clamp64(I[ROPE_I_B] * I[ROPE_I_T], 1, 1 << 20), 1, 256, 0); /* a block per (b, t) row */
    break;
  case OP_ATTN_FWD:
  case OP_ATTN_BWD_PREP:
  case OP_ATTN_BWD_DKV:
  case OP_ATTN_BWD_DQ:
  case OP_ATTN_BWD_DKV_ROPE:
  case OP_ATTN_BWD_DQ_ROPE:
    if (attention(in, arch, o, out, err, errcap)) return -1;
    break;
  case OP_ATTN_BWD_FUSED:
    if (attention_fused(in, arch, o, out, err, errcap)) return -1;
    break;
  case OP_ATTN_DQ_STORE: {
    const int64_t B = I[ATTN_I_B], T = I[ATTN_I_T], H = I[ATTN_I_H], Dh = I[ATTN_I_DH];
    if (B < 1 || T < 1 || H < 1 || Dh < 1)
      return fail(err, errcap, in, "B=%lld T=%lld H=%lld Dh=%lld must all be >= 1", (long long)B, (long long)T, (long long)H, (long long)Dh);
    /* a thread per (row, 8-column chunk) of a head (y), grid-stride past 2^16 blocks and 65535 heads */
    if (T * cdiv(Dh, 64) * 8 >= ((int64_t)1 << 31))
      return fail(err, errcap, in, "T = %lld x %lld column chunks is too long (2^31)", (long long)T, (long long)(cdiv(Dh, 64) * 8));
    geom(out, clamp64(cdiv(T * cdiv(Dh, 64) * 8, 256), 1, 1 << 16), clamp64(B * H, 1, MAX_GRID_YZ), 256, 0);
    break;
  }
  case OP_SWIGLU_FWD:
  case OP_SWIGLU_BWD: { /* flat packs, two per thread per iteration (templates/swiglu.cu) */
    const int vec = vec_width(in, op_slots(op));
    spec_add(out, "#define DDP_BLOCK 256\n#define DDP_VEC %d\n", vec);
    geom(out, clamp64(cdiv(cdiv(I[SWIGLU_FWD_I_N] * I[SWIGLU_FWD_I_F], vec), 2 * 256), 1, 1 << 20), 1, 256, 0);
    break;
  }
  case OP_BIAS_ADD: {
    const int vec = vec_width(in, op_slots(op));
    spec_add(out, "#define DDP_BLOCK 256\n#define DDP_VEC %d\n", vec);
    geom(out, cdiv(cdiv(I[BIAS_ADD_I_M], vec), 256), clamp64(I[BIAS_ADD_I_N], 1, MAX_GRID_YZ), 256, 0);
    break;
  }
  case OP_XENT: row_softmax(out, in->dt[XENT_P_LOGITS], I[XENT_I_N], I[XENT_I_V]); break;
  case OP_XENT_VP_STATS:
    row_softmax(out, in->dt[XENT_VP_STATS_P_LOGITS], I[XENT_VP_STATS_I_N], I[XENT_VP_STATS_I_V]);
    break;
  case OP_XENT_VP: row_softmax(out, in->dt[XENT_VP_P_LOGITS], I[XENT_VP_I_N], I[XENT_VP_I_V]); break;
  case OP_MSE:
    spec_add(out, "#define DDP_BLOCK 256\n");
    geom(out, clamp64(cdiv(I[MSE_I_N], 8), 1, 1 << 20), 1, 256, 0);
    break;
  case OP_SUMSQ:
    spec_add(out, "#define DDP_BLOCK 256\n");
    geom(out, I[SUMSQ_I_P] < 1 ? 1 : I[SUMSQ_I_P], 1, 256, 0);
    break;
  case OP_ADAMW: { /* DDP_TUNE_ADAMW_{VEC,UNROLL,GRID}: benchmark overrides (see tuned) */
    /* Four f32 per pack, four packs per thread in flight: 15.2 ms against 17.3 for 8 x 1 on the XL step's
     * 2.0e9 parameters (H200, tests/bench/device_grid.sh, 2026-11-22) */
    int64_t vec = 4, unroll = 4, grid = 0;
    vec = tuned(o, PARAM_TUNE_ADAMW_VEC, vec), unroll = tuned(o, PARAM_TUNE_ADAMW_UNROLL, unroll);
    grid = tuned(o, PARAM_TUNE_ADAMW_GRID, grid);
    const int64_t max_grid = tuned(o, PARAM_TUNE_ADAMW_MAX_GRID, 4096);
    if (vec != 4 && vec != 8) return fail(err, errcap, in, "DDP_TUNE_ADAMW_VEC must be 4 or 8");
    /* with peers (nccl.all_reduce = "peer" / "peer_copy") each pack also holds the other ranks' gradients in registers */
    const int64_t peers = I[ADAMW_I_PEERS];
    if (peers > 2 && unroll > 8 / peers) unroll = peers > 8 ? 1 : 8 / peers;
    spec_add(out, "#define DDP_BLOCK 256\n#define DDP_VEC %lld\n#define DDP_UNROLL %lld\n", (long long)vec,
             (long long)unroll);
    if (peers > 0) spec_add(out, "#define DDP_PEERS %lld\n", (long long)peers);
    geom(out, grid ? grid : clamp64(cdiv(cdiv(I[ADAMW_I_N], vec * unroll), 256), 1, max_grid), 1, 256, 0);
    break;
  }
  case OP_SGD:
  case OP_CAST:
  case OP_ADD:
  case OP_SCALE:
  case OP_RELU_FWD:
  case OP_RELU_BWD: {
    const int vec = vec_width(in, op_slots(op));
    spec_add(out, "#define DDP_BLOCK 256\n#define DDP_VEC %d\n", vec);
    geom(out, clamp64(cdiv(cdiv(I[SGD_I_N], vec), 256), 1, 4096), 1, 256, 0);
    break;
  }
  case OP_SUM_CHUNKS: { /* ADD's grid over the n outputs; each thread walks the P chunks in order */
    if (I[SUM_CHUNKS_I_P] < 1) return fail(err, errcap, in, "P = %lld chunks, must be >= 1", (long long)I[SUM_CHUNKS_I_P]);
    const int vec = vec_width(in, op_slots(op));
    spec_add(out, "#define DDP_BLOCK 256\n#define DDP_VEC %d\n", vec);
    geom(out, clamp64(cdiv(cdiv(I[SUM_CHUNKS_I_N], vec), 256), 1, 4096), 1, 256, 0);
    break;
  }
  case OP_ATTN_NAIVE_SOFTMAX:
  case OP_ATTN_NAIVE_SOFTMAX_BWD: {
    const int64_t block = clamp64(cdiv(cdiv(I[ATTN_NAIVE_SOFTMAX_I_T], 4), 32) * 32, 32, 1024);
    spec_add(out, "#define DDP_BLOCK %lld\n", (long long)block);
    geom(out, clamp64(I[ATTN_NAIVE_SOFTMAX_I_B] * I[ATTN_NAIVE_SOFTMAX_I_T] * I[ATTN_NAIVE_SOFTMAX_I_H], 1, 1 << 20), 1,
         block, 0);
    break;
  }
  default:
    return fail(err, errcap, in, "no launch rule");
  }
  if (strlen(out->spec) >= sizeof out->spec - 1) return fail(err, errcap, in, "specialisation too long");
  return 0;
}

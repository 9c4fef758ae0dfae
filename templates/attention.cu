// templates/attention.cu: FlashAttention-2 forward and backward (plan/ops.h ATTN_FWD, ATTN_BWD_PREP,
// ATTN_BWD_DKV, ATTN_BWD_DQ), reference runtime/ref/ref_attention.c (ref_attn_fwd, ref_attn_bwd_prep,
// ref_attn_bwd_dkv, ref_attn_bwd_dq). Element (b,t,h,j) of q at q[(b*T+t)*i4 + h*Dh + j] (k: i5, v: i6,
// o and do: i7; dq: i4, dk: i5, dv: i6).
//   forward:  s = scale q.k over visible keys (j <= t when causal), lse = logsumexp(s) (natural log),
//             o = softmax(s) v. Online softmax in the log2 domain (exp2, scale*log2e prescaled).
//   backward: delta = rowsum(do*o) (PREP); P = exp(s - lse) recomputed; dV = P^T dO, dP = dO V^T,
//             dS = P (dP - delta), dK = scale dS^T Q (DKV: grid over key blocks, loop over query blocks),
//             dQ = scale dS K (DQ: grid over query blocks, loop over key blocks). Deterministic, no atomics,
//             no T x T matrix in memory. Causal: fully masked tiles are skipped; the heavy blocks are
//             launched first (grid.x = B*H, grid.y = block index ordered heavy to light).
// Two code paths, chosen by the specialisation:
//   DDP_ATTN_MMA 1: bf16 q/k/v/o/do; tensor cores (mma.sync m16n8k16 bf16 -> f32) fed by ldmatrix from
//                   padded shared tiles (row pitch HD+8: conflict-free), K/V (or Q/dO) tiles double
//                   buffered with cp.async (16-byte, zero-fill past T and Dh; plain loads when a row is
//                   not 16-byte aligned). Each warp owns DDP_MT m16 tiles (16*MT rows) of the block's
//                   tile, so each K/V (Q/dO) fragment read from shared memory feeds MT mma instructions.
//   DDP_ATTN_MMA 0: f32 everything; plain FFMA (no TF32) on 64x64 tiles, 128 threads, each thread a 4x8
//                   register micro-tile of the scores and 4 rows x HD/8 columns of the output tile.
// Spec: DDP_HEAD_DIM (head dim padded to a multiple of 16; Dh itself is i3 at run time), DDP_ATTN_MMA,
// DDP_WARPS, DDP_MT (m16 tiles per warp, bf16 path), DDP_MINB (blocks per SM asked of the register
// allocator, bf16 path), DDP_BM (rows of the block's own tile: queries for FWD/DQ, keys for DKV), DDP_BN
// (rows of the streamed tiles), DDP_SMEM (dynamic shared bytes, checked against the layout below).
// Types: T0 q, T1 k, T2 v, T3 o, T4 lse (f32), T5 do, T6 delta (f32), T7 dk, T8 dv, T9 dq; PREP: T0 o,
// T1 do, T2 delta.
#include "common.cuh"

#ifndef DDP_HEAD_DIM
#define DDP_HEAD_DIM 64
#endif
#ifndef DDP_ATTN_MMA
#define DDP_ATTN_MMA 1
#endif
#ifndef DDP_WARPS
#define DDP_WARPS 4
#endif
#ifndef DDP_BM
#define DDP_BM 64
#endif
#ifndef DDP_BN
#define DDP_BN 64
#endif
#ifndef DDP_SMEM
#define DDP_SMEM 0
#endif
#ifndef DDP_MT
#define DDP_MT 1
#endif
#ifndef DDP_MINB
#define DDP_MINB 1
#endif

namespace attn {
constexpr int HD = DDP_HEAD_DIM, NW = DDP_WARPS, NTH = 32 * DDP_WARPS, BM = DDP_BM, BN = DDP_BN;
static_assert(HD % 16 == 0 && HD >= 16 && HD <= 256, "DDP_HEAD_DIM: a multiple of 16");

struct dims {
  long long B, T, H, Dh, sq, sk, sv, so;
  bool causal;
  float scale;
};
__device__ __forceinline__ dims dims_of(const ddp_kargs &a) {
  dims d;
  d.B = a.i[ATTN_I_B];
  d.T = a.i[ATTN_I_T];
  d.H = a.i[ATTN_I_H];
  d.Dh = a.i[ATTN_I_DH];
  d.sq = a.i[ATTN_I_QSTRIDE];
  d.sk = a.i[ATTN_I_KSTRIDE];
  d.sv = a.i[ATTN_I_VSTRIDE];
  d.so = a.i[ATTN_I_OSTRIDE];
  d.causal = a.i[ATTN_I_CAUSAL] != 0;
  d.scale = a.f[ATTN_F_SCALE];
  return d;
}
// Offset of element (b, 0, h, 0) of a tensor with row stride st.
__device__ __forceinline__ long long head_base(const dims &d, long long st, long long bh) {
  const long long b = bh / d.H, h = bh % d.H;
  return b * d.T * st + h * d.Dh;
}
}  // namespace attn

// ================================ PREP: delta = rowsum(do * o) ===================================
// Eight threads per row with 16-byte packed loads where the head dim and strides allow (32 rows per
// block), else a warp per row with scalar loads (8 rows per block); grid-stride over rows either way.
#ifdef DDP_ENTRY_attn_bwd_prep
extern "C" __global__ void __launch_bounds__(256) ddp_attn_bwd_prep(const ddp_kargs a) {
  using namespace attn;
  const dims d = dims_of(a);
  const T0 *o = (const T0 *)a.p[ATTN_BWD_PREP_P_O];
  const T1 *dout = (const T1 *)a.p[ATTN_BWD_PREP_P_DO];
  float *delta = (float *)a.p[ATTN_BWD_PREP_P_DELTA];
  const long long rows = d.B * d.T * d.H;
  constexpr int W = 16 / (int)sizeof(T0);
  const bool vec = sizeof(T0) == sizeof(T1) && d.Dh % W == 0 && ddp_pack_ok<T0, W>(o) && ddp_pack_ok<T1, W>(dout) &&
                   (d.so * (long long)sizeof(T0)) % 16 == 0;
  if (vec) {
    const int sub = threadIdx.x & 7, npk = (int)(d.Dh / W);
    /* r0 is the warp's first row (warp-uniform, so the shuffles below see all 32 lanes) */
    for (long long r0 = (long long)blockIdx.x * 32 + (threadIdx.x >> 5) * 4; r0 < rows; r0 += (long long)gridDim.x * 32) {
      const long long r = r0 + ((threadIdx.x >> 3) & 3);
      const bool live = r < rows;
      const long long h = r % d.H, bt = r / d.H, t = bt % d.T, b = bt / d.T;
      const long long off = bt * d.so + h * d.Dh;
      float s = 0.f;
      for (int k = sub; live && k < npk; k += 8) {
        float vo[W], vd[W];
        ddp_load_n<T0, W>(o, off + (long long)k * W, vo, true);
        ddp_load_n<T1, W>(dout, off + (long long)k * W, vd, true);
#pragma unroll
        for (int e = 0; e < W; e++) s = fmaf(vo[e], vd[e], s);
      }
      s += __shfl_xor_sync(0xffffffffu, s, 4);
      s += __shfl_xor_sync(0xffffffffu, s, 2);
      s += __shfl_xor_sync(0xffffffffu, s, 1);
      if (live && sub == 0) delta[(b * d.H + h) * d.T + t] = s;
    }
    return;
  }
  const int lane = threadIdx.x & 31;
  for (long long r = (long long)blockIdx.x * 8 + (threadIdx.x >> 5); r < rows; r += (long long)gridDim.x * 8) {
    const long long h = r % d.H, bt = r / d.H, t = bt % d.T, b = bt / d.T;
    const long long off = bt * d.so + h * d.Dh;
    float s = 0.f;
    for (long long j = lane; j < d.Dh; j += 32) s = fmaf(ddp_f(o[off + j]), ddp_f(dout[off + j]), s);
    s = ddp_warp_sum(s);
    if (lane == 0) delta[(b * d.H + h) * d.T + t] = s;
  }
}
#endif

#if DDP_ATTN_MMA
// ================================ tensor-core (bf16) path =========================================
namespace attn {
constexpr int LD = HD + 8;  // smem row pitch (elements): 16-byte shift per row, ldmatrix conflict-free
constexpr int KS = HD / 16; // k-steps over the head dim
constexpr int DT = HD / 8;  // 8-column tiles over the head dim

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldsm4(unsigned (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm4t(unsigned (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
// d += a (16x16, row) * b (16x8, col), f32 accumulate.
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ float ex2(float x) {  // 2^x, MUFU.EX2 (rel. error ~2^-22); ex2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned *>(&v);
}

// Fragment addresses (lane-dependent), tile t row-major with pitch LD:
// A operand 16x16 at (r0, k0) of a [row][k] tile.
__device__ __forceinline__ const bf16 *a_addr(const bf16 *t, int r0, int k0, int lane) {
  return t + (r0 + (lane & 15)) * LD + k0 + (lane >> 4) * 8;
}
// B operands of n-tiles n0 and n0+8 at k-step k0, from a [n][k] tile (non-transposed ldmatrix):
// regs {b0,b1} of n0, {b0,b1} of n0+8.
__device__ __forceinline__ const bf16 *bnk_addr(const bf16 *t, int n0, int k0, int lane) {
  return t + (n0 + (lane & 7) + ((lane >> 4) << 3)) * LD + k0 + ((lane >> 3) & 1) * 8;
}
// Same from a [k][n] tile (transposed ldmatrix).
__device__ __forceinline__ const bf16 *bkn_addr(const bf16 *t, int k0, int n0, int lane) {
  return t + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + n0 + (lane >> 4) * 8;
}

// acc[NT][4] (a 16 x 8*NT C tile) += A (16 x 16*KSTEPS, frags from smem tile `at` rows r0) * B^T where
// B is the [n][k] tile `bt` (n = 0 .. 8*NT).
template <int NT, int KSTEPS>
__device__ __forceinline__ void mma_abt(float (&acc)[NT][4], const bf16 *at, int r0, const bf16 *bt, int lane) {
#pragma unroll
  for (int kk = 0; kk < KSTEPS; kk++) {
    unsigned af[4];
    ldsm4(af, a_addr(at, r0, kk * 16, lane));
#pragma unroll
    for (int np = 0; np < NT / 2; np++) {
      unsigned bf[4];
      ldsm4(bf, bnk_addr(bt, np * 16, kk * 16, lane));
      mma(acc[2 * np], af, bf[0], bf[1]);
      mma(acc[2 * np + 1], af, bf[2], bf[3]);
    }
  }
}
// Same with A from registers af[KSTEPS][4].
template <int NT, int KSTEPS>
__device__ __forceinline__ void mma_rbt(float (&acc)[NT][4], const unsigned (&af)[KSTEPS][4], const bf16 *bt, int lane) {
#pragma unroll
  for (int kk = 0; kk < KSTEPS; kk++)
#pragma unroll
    for (int np = 0; np < NT / 2; np++) {
      unsigned bf[4];
      ldsm4(bf, bnk_addr(bt, np * 16, kk * 16, lane));
      mma(acc[2 * np], af[kk], bf[0], bf[1]);
      mma(acc[2 * np + 1], af[kk], bf[2], bf[3]);
    }
}
// acc[DT][4] (16 x HD) += P (16 x 16*KN from the C-layout registers p[2*KN][4], rounded to bf16) * B
// where B is the [k][n] tile `bt` (k = 0 .. 16*KN, n = 0 .. HD).
template <int KN>
__device__ __forceinline__ void mma_pb(float (&acc)[DT][4], const float (&p)[2 * KN][4], const bf16 *bt, int lane) {
#pragma unroll
  for (int kk = 0; kk < KN; kk++) {
    unsigned af[4];
    af[0] = pack2(p[2 * kk][0], p[2 * kk][1]);
    af[1] = pack2(p[2 * kk][2], p[2 * kk][3]);
    af[2] = pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    af[3] = pack2(p[2 * kk + 1][2], p[2 * kk + 1][3]);
#pragma unroll
    for (int dp = 0; dp < DT / 2; dp++) {
      unsigned bf[4];
      ldsm4t(bf, bkn_addr(bt, kk * 16, dp * 16, lane));
      mma(acc[2 * dp], af, bf[0], bf[1]);
      mma(acc[2 * dp + 1], af, bf[2], bf[3]);
    }
  }
}

// Rows [r0, r0+ROWS) x columns [0, HD) of a head (elements at base + row*st + col) into dst[ROWS][LD];
// zeros past T and Dh. async: 16-byte cp.async (needs Dh % 8 == 0, st % 8 == 0, base 16-byte aligned).
template <int ROWS>
__device__ __forceinline__ void load_tile(bf16 *dst, const bf16 *base, long long st, long long r0, long long T,
                                          int Dh, bool async) {
  constexpr int CPR = HD / 8;
  for (int idx = threadIdx.x; idx < ROWS * CPR; idx += NTH) {
    const int r = idx / CPR, c = (idx % CPR) * 8;
    const long long row = r0 + r;
    bf16 *d = dst + r * LD + c;
    if (async) {
      const bool ok = row < T && c < Dh;
      cp_async16(d, ok ? base + row * st + c : base, ok ? 16 : 0);
    } else {
#pragma unroll
      for (int e = 0; e < 8; e++) d[e] = (row < T && c + e < Dh) ? base[row * st + c + e] : __float2bfloat16_rn(0.f);
    }
  }
}
__device__ __forceinline__ bool async_ok(const void *p, long long st, long long Dh) {
  return Dh % 8 == 0 && st % 8 == 0 && ((unsigned long long)p % 16) == 0;
}
// Writes a 16 x HD C tile (rows r0 + g, r0 + g + 8) to a head, rows < T and columns < Dh, times s.
template <class T>
__device__ __forceinline__ void store_rows(T *base, long long st, long long r0, long long Tn, int Dh,
                                           const float (&acc)[DT][4], float s, int lane) {
  const int g = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int dt = 0; dt < DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const long long row = r0 + g + (e >= 2 ? 8 : 0);
      const int col = dt * 8 + tq * 2 + (e & 1);
      if (row < Tn && col < Dh) base[row * st + col] = ddp_to<T>(acc[dt][e] * s);
    }
}
}  // namespace attn

// ---------------------------------------- forward (mma) ------------------------------------------
// Each warp owns MT m16 tiles (16*MT query rows) so that every K/V fragment read from shared memory feeds
// MT tensor-core instructions. Scores stay in raw units; p = 2^(s*scale*log2e - m*scale*log2e) is one FFMA
// and one MUFU.EX2 per element.
#ifdef DDP_ENTRY_attn_fwd
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_fwd(const ddp_kargs a) {
  using namespace attn;
  constexpr int MT = DDP_MT;
  static_assert(BM == 16 * MT * NW, "forward: MT m16 tiles per warp");
  static_assert(BN % 16 == 0, "DDP_BN: a multiple of 16");
  constexpr int NT = BN / 8;
  static_assert((BM + 4 * BN) * LD * 2 == DDP_SMEM, "DDP_SMEM does not match the forward layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16 *Qs = (bf16 *)smem_raw, *Ks = Qs + BM * LD, *Vs = Ks + 2 * BN * LD;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x;
  const int Dh = (int)d.Dh;
  const int nqb = (int)((T + BM - 1) / BM);
  const int qb = d.causal ? nqb - 1 - (int)blockIdx.y : (int)blockIdx.y;
  const long long q0 = (long long)qb * BM;
  const bf16 *qh = (const bf16 *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const bf16 *kh = (const bf16 *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const bf16 *vh = (const bf16 *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  T3 *oh = (T3 *)a.p[ATTN_P_O] + head_base(d, d.so, bh);
  float *lse = (float *)a.p[ATTN_P_LSE];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const bool aq = async_ok(qh, d.sq, Dh), ak = async_ok(kh, d.sk, Dh), av = async_ok(vh, d.sv, Dh);
  const long long kend = d.causal ? (q0 + BM < T ? q0 + BM : T) : T;
  const int nkt = (int)((kend + BN - 1) / BN);

  load_tile<BM>(Qs, qh, d.sq, q0, T, Dh, aq);
  cp_commit();
  load_tile<BN>(Ks, kh, d.sk, 0, T, Dh, ak);
  load_tile<BN>(Vs, vh, d.sv, 0, T, Dh, av);
  cp_commit();
  cp_wait<1>();
  __syncthreads();
  unsigned qf[MT][KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < KS; kk++) ldsm4(qf[mt][kk], a_addr(Qs, (warp * MT + mt) * 16, kk * 16, lane));

  float acc[MT][DT][4];
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
#pragma unroll
    for (int i = 0; i < DT; i++) acc[mt][i][0] = acc[mt][i][1] = acc[mt][i][2] = acc[mt][i][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }
  const float sl2 = d.scale * DDP_LOG2E;
  const long long wrow0 = q0 + warp * MT * 16 + g;  // row of (mt, e<2) is wrow0 + 16*mt (+8 for e>=2)

  for (int j = 0; j < nkt; j++) {
    const int buf = j & 1;
    if (j + 1 < nkt) {
      load_tile<BN>(Ks + (buf ^ 1) * BN * LD, kh, d.sk, (long long)(j + 1) * BN, T, Dh, ak);
      load_tile<BN>(Vs + (buf ^ 1) * BN * LD, vh, d.sv, (long long)(j + 1) * BN, T, Dh, av);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const bf16 *kt = Ks + buf * BN * LD, *vt = Vs + buf * BN * LD;
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < NT; i++) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KS; kk++)
#pragma unroll
      for (int np = 0; np < NT / 2; np++) {
        unsigned bf[4];
        ldsm4(bf, bnk_addr(kt, np * 16, kk * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(s[mt][2 * np], qf[mt][kk], bf[0], bf[1]);
          mma(s[mt][2 * np + 1], qf[mt][kk], bf[2], bf[3]);
        }
      }
    const long long k0 = (long long)j * BN;
    const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          float x = s[mt][nt][e];
          if (need) {
            const long long col = k0 + nt * 8 + tq * 2 + (e & 1), row = wrow0 + 16 * mt + (e >= 2 ? 8 : 0);
            if (col >= T || (d.causal && col > row)) x = -INFINITY;
          }
          s[mt][nt][e] = x;
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
      float mb[2], alpha[2], ls[2] = {0.f, 0.f};
#pragma unroll
      for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(DDP_FULL, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(DDP_FULL, mx[r], 2));
        const float mn = fmaxf(m[mt][r], mx[r]);
        mb[r] = mn == -INFINITY ? 0.f : mn * sl2;  // the max in the log2 domain
        alpha[r] = ex2(m[mt][r] * sl2 - mb[r]);    // m = -inf: 0
        m[mt][r] = mn;
      }
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float p = ex2(fmaf(s[mt][nt][e], sl2, -mb[e >> 1]));
          s[mt][nt][e] = p;
          ls[e >> 1] += p;
        }
#pragma unroll
      for (int r = 0; r < 2; r++) l[mt][r] = l[mt][r] * alpha[r] + ls[r];
#pragma unroll
      for (int i = 0; i < DT; i++) {
        acc[mt][i][0] *= alpha[0];
        acc[mt][i][1] *= alpha[0];
        acc[mt][i][2] *= alpha[1];
        acc[mt][i][3] *= alpha[1];
      }
    }
    // O += P V
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      unsigned af[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        af[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        af[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        af[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        af[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < DT / 2; dp++) {
        unsigned bf[4];
        ldsm4t(bf, bkn_addr(vt, kk * 16, dp * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(acc[mt][2 * dp], af[mt], bf[0], bf[1]);
          mma(acc[mt][2 * dp + 1], af[mt], bf[2], bf[3]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float lr = l[mt][r];
      lr += __shfl_xor_sync(DDP_FULL, lr, 1);
      lr += __shfl_xor_sync(DDP_FULL, lr, 2);
      inv[r] = lr > 0.f ? 1.f / lr : 0.f;
      const long long row = wrow0 + 16 * mt + 8 * r;
      if (tq == 0 && row < T && lse) lse[bh * T + row] = m[mt][r] * d.scale + logf(lr);
    }
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const long long row = wrow0 + 16 * mt + (e >= 2 ? 8 : 0);
        const int col = dt * 8 + tq * 2;
        const float v0 = acc[mt][dt][e] * inv[e >> 1], v1 = acc[mt][dt][e + 1] * inv[e >> 1];
        if (row < T) {
          if (col < Dh) oh[row * d.so + col] = ddp_to<T3>(v0);
          if (col + 1 < Dh) oh[row * d.so + col + 1] = ddp_to<T3>(v1);
        }
      }
  }
}
#endif

// ---------------------------------------- dK, dV (mma) -------------------------------------------
// Block: BM = 16*MT*NW keys (each warp 16*MT of them); loop over query tiles of BN rows (from the
// diagonal when causal). Per tile: S^T = K Q^T, P^T = 2^(S^T*scale*log2e - lse*log2e), dV += P^T dO,
// dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q. Q/dO tiles and their lse/delta double buffered.
#ifdef DDP_ENTRY_attn_bwd_dkv
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_bwd_dkv(const ddp_kargs a) {
  using namespace attn;
  constexpr int MT = DDP_MT;
  static_assert(BM == 16 * MT * NW, "dkv: MT m16 key tiles per warp");
  static_assert(BN % 16 == 0, "DDP_BN: a multiple of 16");
  constexpr int NQ = BN / 8;
  static_assert((2 * BM + 4 * BN) * LD * 2 + 4 * BN * 4 == DDP_SMEM, "DDP_SMEM does not match the dkv layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16 *Ks = (bf16 *)smem_raw, *Vs = Ks + BM * LD, *Qs = Vs + BM * LD, *Os = Qs + 2 * BN * LD;
  float *L2s = (float *)(Os + 2 * BN * LD), *Dls = L2s + 2 * BN;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x;
  const int Dh = (int)d.Dh;
  const long long k0 = (long long)blockIdx.y * BM;  // heavy (small k0) first when causal
  const bf16 *qh = (const bf16 *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const bf16 *kh = (const bf16 *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const bf16 *vh = (const bf16 *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  const float *lse = (const float *)a.p[ATTN_P_LSE] + bh * T;
  const bf16 *doh = (const bf16 *)a.p[ATTN_P_DO] + head_base(d, d.so, bh);
  const float *delta = (const float *)a.p[ATTN_P_DELTA] + bh * T;
  T7 *dkh = (T7 *)a.p[ATTN_P_DK] + head_base(d, d.sk, bh);
  T8 *dvh = (T8 *)a.p[ATTN_P_DV] + head_base(d, d.sv, bh);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const bool aq = async_ok(qh, d.sq, Dh), ak = async_ok(kh, d.sk, Dh), av = async_ok(vh, d.sv, Dh),
             ao = async_ok(doh, d.so, Dh);
  const int qt0 = d.causal ? (int)(k0 / BN) : 0, nqt = (int)((T + BN - 1) / BN);
  auto load_stats = [&](int buf, long long q0) {
    for (int i = threadIdx.x; i < BN; i += NTH) {
      const long long q = q0 + i;
      L2s[buf * BN + i] = q < T ? lse[q] * DDP_LOG2E : INFINITY;
      Dls[buf * BN + i] = q < T ? delta[q] : 0.f;
    }
  };
  load_tile<BM>(Ks, kh, d.sk, k0, T, Dh, ak);
  load_tile<BM>(Vs, vh, d.sv, k0, T, Dh, av);
  cp_commit();
  load_tile<BN>(Qs, qh, d.sq, (long long)qt0 * BN, T, Dh, aq);
  load_tile<BN>(Os, doh, d.so, (long long)qt0 * BN, T, Dh, ao);
  cp_commit();
  load_stats(0, (long long)qt0 * BN);

  float dk[MT][DT][4], dv[MT][DT][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int i = 0; i < DT; i++)
#pragma unroll
      for (int e = 0; e < 4; e++) dk[mt][i][e] = dv[mt][i][e] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;
  const long long krow0 = k0 + warp * MT * 16 + g;

  for (int qt = qt0; qt < nqt; qt++) {
    const int buf = (qt - qt0) & 1;
    if (qt + 1 < nqt) {
      const long long nq0 = (long long)(qt + 1) * BN;
      load_tile<BN>(Qs + (buf ^ 1) * BN * LD, qh, d.sq, nq0, T, Dh, aq);
      load_tile<BN>(Os + (buf ^ 1) * BN * LD, doh, d.so, nq0, T, Dh, ao);
      cp_commit();
      load_stats(buf ^ 1, nq0);
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const bf16 *qt_s = Qs + buf * BN * LD, *ot_s = Os + buf * BN * LD;
    const float *l2 = L2s + buf * BN, *dl = Dls + buf * BN;
    const long long q0 = (long long)qt * BN;
    const bool need = d.causal && k0 + BM - 1 > q0;
    float s[MT][NQ][4], dp[MT][NQ][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < NQ; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[mt][i][e] = dp[mt][i][e] = 0.f;
    // S^T = K Q^T and dP^T = V dO^T (rows = keys, columns = queries)
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
      unsigned ka[MT][4], va[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        ldsm4(ka[mt], a_addr(Ks, (warp * MT + mt) * 16, kk * 16, lane));
        ldsm4(va[mt], a_addr(Vs, (warp * MT + mt) * 16, kk * 16, lane));
      }
#pragma unroll
      for (int np = 0; np < NQ / 2; np++) {
        unsigned qb_[4], ob[4];
        ldsm4(qb_, bnk_addr(qt_s, np * 16, kk * 16, lane));
        ldsm4(ob, bnk_addr(ot_s, np * 16, kk * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(s[mt][2 * np], ka[mt], qb_[0], qb_[1]);
          mma(s[mt][2 * np + 1], ka[mt], qb_[2], qb_[3]);
          mma(dp[mt][2 * np], va[mt], ob[0], ob[1]);
          mma(dp[mt][2 * np + 1], va[mt], ob[2], ob[3]);
        }
      }
    }
    // P^T and dS^T
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NQ; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int qc = nt * 8 + tq * 2 + (e & 1);
          float p = ex2(fmaf(s[mt][nt][e], sl2, -l2[qc]));
          if (need && krow0 + 16 * mt + (e >= 2 ? 8 : 0) > q0 + qc) p = 0.f;
          s[mt][nt][e] = p;
          dp[mt][nt][e] = p * (dp[mt][nt][e] - dl[qc]);
        }
    // dV += P^T dO, dK += dS^T Q
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      unsigned pa[MT][4], sa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        pa[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        sa[mt][0] = pack2(dp[mt][2 * kk][0], dp[mt][2 * kk][1]);
        sa[mt][1] = pack2(dp[mt][2 * kk][2], dp[mt][2 * kk][3]);
        sa[mt][2] = pack2(dp[mt][2 * kk + 1][0], dp[mt][2 * kk + 1][1]);
        sa[mt][3] = pack2(dp[mt][2 * kk + 1][2], dp[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dd = 0; dd < DT / 2; dd++) {
        unsigned ob[4], qb_[4];
        ldsm4t(ob, bkn_addr(ot_s, kk * 16, dd * 16, lane));
        ldsm4t(qb_, bkn_addr(qt_s, kk * 16, dd * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(dv[mt][2 * dd], pa[mt], ob[0], ob[1]);
          mma(dv[mt][2 * dd + 1], pa[mt], ob[2], ob[3]);
          mma(dk[mt][2 * dd], sa[mt], qb_[0], qb_[1]);
          mma(dk[mt][2 * dd + 1], sa[mt], qb_[2], qb_[3]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    store_rows(dkh, d.sk, k0 + (warp * MT + mt) * 16, T, Dh, dk[mt], d.scale, lane);
    store_rows(dvh, d.sv, k0 + (warp * MT + mt) * 16, T, Dh, dv[mt], 1.f, lane);
  }
}
#endif

// ---------------------------------------- dQ (mma) -----------------------------------------------
// Block: BM = 16*MT*NW query rows (Q and dO fragments kept in registers); loop over key tiles of BN
// (up to the diagonal when causal): S = Q K^T, dP = dO V^T, dS = P (dP - delta), dQ += dS K.
#ifdef DDP_ENTRY_attn_bwd_dq
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_bwd_dq(const ddp_kargs a) {
  using namespace attn;
  constexpr int MT = DDP_MT;
  static_assert(BM == 16 * MT * NW, "dq: MT m16 tiles per warp");
  static_assert(BN % 16 == 0, "DDP_BN: a multiple of 16");
  constexpr int NT = BN / 8;
  static_assert((2 * BM + 4 * BN) * LD * 2 == DDP_SMEM, "DDP_SMEM does not match the dq layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16 *Qs = (bf16 *)smem_raw, *Os = Qs + BM * LD, *Ks = Os + BM * LD, *Vs = Ks + 2 * BN * LD;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x;
  const int Dh = (int)d.Dh;
  const int nqb = (int)((T + BM - 1) / BM);
  const int qb = d.causal ? nqb - 1 - (int)blockIdx.y : (int)blockIdx.y;
  const long long q0 = (long long)qb * BM;
  const bf16 *qh = (const bf16 *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const bf16 *kh = (const bf16 *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const bf16 *vh = (const bf16 *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  const float *lse = (const float *)a.p[ATTN_P_LSE] + bh * T;
  const bf16 *doh = (const bf16 *)a.p[ATTN_P_DO] + head_base(d, d.so, bh);
  const float *delta = (const float *)a.p[ATTN_P_DELTA] + bh * T;
  T9 *dqh = (T9 *)a.p[ATTN_P_DQ] + head_base(d, d.sq, bh);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const bool aq = async_ok(qh, d.sq, Dh), ak = async_ok(kh, d.sk, Dh), av = async_ok(vh, d.sv, Dh),
             ao = async_ok(doh, d.so, Dh);
  const long long kend = d.causal ? (q0 + BM < T ? q0 + BM : T) : T;
  const int nkt = (int)((kend + BN - 1) / BN);

  load_tile<BM>(Qs, qh, d.sq, q0, T, Dh, aq);
  load_tile<BM>(Os, doh, d.so, q0, T, Dh, ao);
  cp_commit();
  load_tile<BN>(Ks, kh, d.sk, 0, T, Dh, ak);
  load_tile<BN>(Vs, vh, d.sv, 0, T, Dh, av);
  cp_commit();
  const long long wrow0 = q0 + warp * MT * 16 + g;
  float l2[MT][2], dl[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const long long row = wrow0 + 16 * mt + 8 * r;
      l2[mt][r] = row < T ? lse[row] * DDP_LOG2E : INFINITY;
      dl[mt][r] = row < T ? delta[row] : 0.f;
    }
  cp_wait<1>();
  __syncthreads();
  unsigned qf[MT][KS][4], of[MT][KS][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
      ldsm4(qf[mt][kk], a_addr(Qs, (warp * MT + mt) * 16, kk * 16, lane));
      ldsm4(of[mt][kk], a_addr(Os, (warp * MT + mt) * 16, kk * 16, lane));
    }
  float dq[MT][DT][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int i = 0; i < DT; i++) dq[mt][i][0] = dq[mt][i][1] = dq[mt][i][2] = dq[mt][i][3] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;

  for (int j = 0; j < nkt; j++) {
    const int buf = j & 1;
    if (j + 1 < nkt) {
      load_tile<BN>(Ks + (buf ^ 1) * BN * LD, kh, d.sk, (long long)(j + 1) * BN, T, Dh, ak);
      load_tile<BN>(Vs + (buf ^ 1) * BN * LD, vh, d.sv, (long long)(j + 1) * BN, T, Dh, av);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    __syncthreads();
    const bf16 *kt = Ks + buf * BN * LD, *vt = Vs + buf * BN * LD;
    const long long k0 = (long long)j * BN;
    const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0);
    float s[MT][NT][4], dp[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < NT; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[mt][i][e] = dp[mt][i][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KS; kk++)
#pragma unroll
      for (int np = 0; np < NT / 2; np++) {
        unsigned kb[4], vb[4];
        ldsm4(kb, bnk_addr(kt, np * 16, kk * 16, lane));
        ldsm4(vb, bnk_addr(vt, np * 16, kk * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(s[mt][2 * np], qf[mt][kk], kb[0], kb[1]);
          mma(s[mt][2 * np + 1], qf[mt][kk], kb[2], kb[3]);
          mma(dp[mt][2 * np], of[mt][kk], vb[0], vb[1]);
          mma(dp[mt][2 * np + 1], of[mt][kk], vb[2], vb[3]);
        }
      }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          float p = ex2(fmaf(s[mt][nt][e], sl2, -l2[mt][e >> 1]));
          if (need) {
            const long long col = k0 + nt * 8 + tq * 2 + (e & 1), row = wrow0 + 16 * mt + (e >= 2 ? 8 : 0);
            if (col >= T || (d.causal && col > row)) p = 0.f;
          }
          s[mt][nt][e] = p * (dp[mt][nt][e] - dl[mt][e >> 1]);  // dS
        }
    // dQ += dS K
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      unsigned sa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        sa[mt][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        sa[mt][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        sa[mt][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        sa[mt][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dd = 0; dd < DT / 2; dd++) {
        unsigned kb[4];
        ldsm4t(kb, bkn_addr(kt, kk * 16, dd * 16, lane));
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma(dq[mt][2 * dd], sa[mt], kb[0], kb[1]);
          mma(dq[mt][2 * dd + 1], sa[mt], kb[2], kb[3]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int mt = 0; mt < MT; mt++) store_rows(dqh, d.sq, q0 + (warp * MT + mt) * 16, T, Dh, dq[mt], d.scale, lane);
}
#endif

#else  // !DDP_ATTN_MMA
// ================================ f32 FFMA path ===================================================
// 64 x 64 tiles, 128 threads, register micro-tiles: thread (rg = tid/8, kg = tid%8) owns rows 4rg..4rg+3
// and columns kg + 8j (j < 8) of a score tile, and rows 4rg.. x columns 4kg + 32jj (.. +3) of an output
// tile. Shared tiles have a pitch of HD+4 floats (16-byte aligned rows, conflict-free float4 reads).
namespace attn {
constexpr int TQ = 64;           // tile rows (queries and keys)
constexpr int LDF = HD + 4;      // pitch of [64][HD] tiles
constexpr int LDP = TQ + 4;      // pitch of the transposed probability tiles
constexpr int NJ = (HD + 31) / 32; // float4 output columns per thread: 4kg + 32jj
static_assert(BM == TQ && BN == TQ && NTH == 128, "f32 attention: 64x64 tiles, 128 threads");

__device__ __forceinline__ void load_tile_f(float *dst, const float *base, long long st, long long r0, long long T,
                                            long long Dh, bool vec) {
  if (vec) {  // Dh % 4 == 0, st % 4 == 0, base 16-byte aligned
    for (int idx = threadIdx.x; idx < TQ * HD / 4; idx += NTH) {
      const int r = idx / (HD / 4), c = (idx % (HD / 4)) * 4;
      const long long row = r0 + r;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row < T && c < Dh) v = *reinterpret_cast<const float4 *>(base + row * st + c);
      *reinterpret_cast<float4 *>(dst + r * LDF + c) = v;
    }
  } else {
    for (int idx = threadIdx.x; idx < TQ * HD; idx += NTH) {
      const int r = idx / HD, c = idx % HD;
      const long long row = r0 + r;
      dst[r * LDF + c] = (row < T && c < Dh) ? base[row * st + c] : 0.f;
    }
  }
}
__device__ __forceinline__ bool vec_ok_f(const void *p, long long st, long long Dh) {
  return Dh % 4 == 0 && st % 4 == 0 && ((unsigned long long)p % 16) == 0;
}
// acc[i][j] += A[4rg+i] . B[kg+8j] over HD (A, B: [64][LDF] tiles)
__device__ __forceinline__ void tile_abt(float (&acc)[4][8], const float *A, const float *B) {
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
#pragma unroll 2
  for (int c = 0; c < HD; c += 4) {
    float4 x[4], y[8];
#pragma unroll
    for (int i = 0; i < 4; i++) x[i] = *reinterpret_cast<const float4 *>(A + (rg * 4 + i) * LDF + c);
#pragma unroll
    for (int j = 0; j < 8; j++) y[j] = *reinterpret_cast<const float4 *>(B + (kg + 8 * j) * LDF + c);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) {
        acc[i][j] = fmaf(x[i].x, y[j].x, acc[i][j]);
        acc[i][j] = fmaf(x[i].y, y[j].y, acc[i][j]);
        acc[i][j] = fmaf(x[i].z, y[j].z, acc[i][j]);
        acc[i][j] = fmaf(x[i].w, y[j].w, acc[i][j]);
      }
  }
}
// Pt[(kg+8j)][4rg+i] = v[i][j]: the score tile transposed, as the reduction operand of tile_pv.
__device__ __forceinline__ void store_t(float *Pt, const float (&v)[4][8]) {
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
#pragma unroll
  for (int j = 0; j < 8; j++)
    *reinterpret_cast<float4 *>(Pt + (kg + 8 * j) * LDP + rg * 4) = make_float4(v[0][j], v[1][j], v[2][j], v[3][j]);
}
// o[i][jj] += sum_k Pt[k][4rg+i] * V[k][4kg + 32jj ..]
__device__ __forceinline__ void tile_pv(float4 (&o)[4][NJ], const float *Pt, const float *V) {
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
#pragma unroll 4
  for (int k = 0; k < TQ; k++) {
    const float4 p = *reinterpret_cast<const float4 *>(Pt + k * LDP + rg * 4);
    const float pr[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int jj = 0; jj < NJ; jj++) {
      if (HD % 32 != 0 && jj == NJ - 1 && kg >= 4) continue;  // past HD
      const float4 v = *reinterpret_cast<const float4 *>(V + k * LDF + kg * 4 + 32 * jj);
#pragma unroll
      for (int i = 0; i < 4; i++) {
        o[i][jj].x = fmaf(pr[i], v.x, o[i][jj].x);
        o[i][jj].y = fmaf(pr[i], v.y, o[i][jj].y);
        o[i][jj].z = fmaf(pr[i], v.z, o[i][jj].z);
        o[i][jj].w = fmaf(pr[i], v.w, o[i][jj].w);
      }
    }
  }
}
__device__ __forceinline__ void zero(float4 (&o)[4][NJ]) {
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int jj = 0; jj < NJ; jj++) o[i][jj] = make_float4(0.f, 0.f, 0.f, 0.f);
}
__device__ __forceinline__ void zero(float (&s)[4][8]) {
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 8; j++) s[i][j] = 0.f;
}
// Writes rows r0 + 4rg + i (< T), columns < Dh of an output tile, times s.
template <class T>
__device__ __forceinline__ void store_out(T *base, long long st, long long r0, long long Tn, long long Dh,
                                          const float4 (&o)[4][NJ], float s) {
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const long long row = r0 + rg * 4 + i;
    if (row >= Tn) continue;
#pragma unroll
    for (int jj = 0; jj < NJ; jj++) {
      const int c = kg * 4 + 32 * jj;
      const float v[4] = {o[i][jj].x, o[i][jj].y, o[i][jj].z, o[i][jj].w};
#pragma unroll
      for (int e = 0; e < 4; e++)
        if (c + e < Dh) base[row * st + c + e] = ddp_to<T>(v[e] * s);
    }
  }
}
}  // namespace attn

#ifdef DDP_ENTRY_attn_fwd
extern "C" __global__ void __launch_bounds__(128) ddp_attn_fwd(const ddp_kargs a) {
  using namespace attn;
  static_assert((3 * TQ * LDF + TQ * LDP) * 4 == DDP_SMEM, "DDP_SMEM does not match the f32 forward layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float *Qs = (float *)smem_raw, *Ks = Qs + TQ * LDF, *Vs = Ks + TQ * LDF, *Pt = Vs + TQ * LDF;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x;
  const int nqb = (int)((T + TQ - 1) / TQ);
  const long long q0 = (long long)(d.causal ? nqb - 1 - (int)blockIdx.y : (int)blockIdx.y) * TQ;
  const float *qh = (const float *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const float *kh = (const float *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const float *vh = (const float *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  T3 *oh = (T3 *)a.p[ATTN_P_O] + head_base(d, d.so, bh);
  float *lse = (float *)a.p[ATTN_P_LSE];
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
  const long long kend = d.causal ? (q0 + TQ < T ? q0 + TQ : T) : T;
  const bool vq = vec_ok_f(qh, d.sq, d.Dh), vk = vec_ok_f(kh, d.sk, d.Dh), vv = vec_ok_f(vh, d.sv, d.Dh);
  load_tile_f(Qs, qh, d.sq, q0, T, d.Dh, vq);
  float4 o[4][NJ];
  zero(o);
  float m[4], l[4];
#pragma unroll
  for (int i = 0; i < 4; i++) m[i] = -INFINITY, l[i] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;
  for (long long k0 = 0; k0 < kend; k0 += TQ) {
    __syncthreads();
    load_tile_f(Ks, kh, d.sk, k0, T, d.Dh, vk);
    load_tile_f(Vs, vh, d.sv, k0, T, d.Dh, vv);
    __syncthreads();
    float s[4][8];
    zero(s);
    tile_abt(s, Qs, Ks);
    const bool need = k0 + TQ > T || (d.causal && k0 + TQ - 1 > q0);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const long long row = q0 + rg * 4 + i;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const long long col = k0 + kg + 8 * j;
        float x = s[i][j] * sl2;
        if (need && (col >= T || (d.causal && col > row))) x = -INFINITY;
        s[i][j] = x;
        mx = fmaxf(mx, x);
      }
      mx = fmaxf(mx, __shfl_xor_sync(DDP_FULL, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(DDP_FULL, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(DDP_FULL, mx, 4));
      const float mn = fmaxf(m[i], mx), mu = mn == -INFINITY ? 0.f : mn, alpha = exp2f(m[i] - mu);
      m[i] = mn;
      float ls = 0.f;
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const float p = exp2f(s[i][j] - mu);
        s[i][j] = p;
        ls += p;
      }
      l[i] = l[i] * alpha + ls;
#pragma unroll
      for (int jj = 0; jj < NJ; jj++) o[i][jj].x *= alpha, o[i][jj].y *= alpha, o[i][jj].z *= alpha, o[i][jj].w *= alpha;
    }
    store_t(Pt, s);
    __syncthreads();
    tile_pv(o, Pt, Vs);
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    float li = l[i];
    li += __shfl_xor_sync(DDP_FULL, li, 1);
    li += __shfl_xor_sync(DDP_FULL, li, 2);
    li += __shfl_xor_sync(DDP_FULL, li, 4);
    const float inv = li > 0.f ? 1.f / li : 0.f;
#pragma unroll
    for (int jj = 0; jj < NJ; jj++) o[i][jj].x *= inv, o[i][jj].y *= inv, o[i][jj].z *= inv, o[i][jj].w *= inv;
    const long long row = q0 + rg * 4 + i;
    if (kg == 0 && row < T && lse) lse[bh * T + row] = (m[i] + log2f(li)) * DDP_LN2;
  }
  store_out(oh, d.so, q0, T, d.Dh, o, 1.f);
}
#endif

#ifdef DDP_ENTRY_attn_bwd_dkv
extern "C" __global__ void __launch_bounds__(128) ddp_attn_bwd_dkv(const ddp_kargs a) {
  using namespace attn;
  static_assert((4 * TQ * LDF + 2 * TQ * LDP + 2 * TQ) * 4 == DDP_SMEM, "DDP_SMEM does not match the f32 dkv layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float *Ks = (float *)smem_raw, *Vs = Ks + TQ * LDF, *Qs = Vs + TQ * LDF, *Os = Qs + TQ * LDF;
  float *Pt = Os + TQ * LDF, *St = Pt + TQ * LDP, *L2s = St + TQ * LDP, *Dls = L2s + TQ;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x, k0 = (long long)blockIdx.y * TQ;
  const float *qh = (const float *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const float *kh = (const float *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const float *vh = (const float *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  const float *lse = (const float *)a.p[ATTN_P_LSE] + bh * T;
  const float *doh = (const float *)a.p[ATTN_P_DO] + head_base(d, d.so, bh);
  const float *delta = (const float *)a.p[ATTN_P_DELTA] + bh * T;
  T7 *dkh = (T7 *)a.p[ATTN_P_DK] + head_base(d, d.sk, bh);
  T8 *dvh = (T8 *)a.p[ATTN_P_DV] + head_base(d, d.sv, bh);
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
  const bool vq = vec_ok_f(qh, d.sq, d.Dh), vk = vec_ok_f(kh, d.sk, d.Dh), vv = vec_ok_f(vh, d.sv, d.Dh),
             vo = vec_ok_f(doh, d.so, d.Dh);
  load_tile_f(Ks, kh, d.sk, k0, T, d.Dh, vk);
  load_tile_f(Vs, vh, d.sv, k0, T, d.Dh, vv);
  float4 dk[4][NJ], dv[4][NJ];
  zero(dk);
  zero(dv);
  const float sl2 = d.scale * DDP_LOG2E;
  for (long long q0 = d.causal ? k0 : 0; q0 < T; q0 += TQ) {
    __syncthreads();
    load_tile_f(Qs, qh, d.sq, q0, T, d.Dh, vq);
    load_tile_f(Os, doh, d.so, q0, T, d.Dh, vo);
    if (threadIdx.x < TQ) {
      const long long q = q0 + threadIdx.x;
      L2s[threadIdx.x] = q < T ? lse[q] * DDP_LOG2E : INFINITY;
      Dls[threadIdx.x] = q < T ? delta[q] : 0.f;
    }
    __syncthreads();
    float s[4][8], dp[4][8];
    zero(s);
    zero(dp);
    tile_abt(s, Ks, Qs);   // S^T: rows keys, columns queries
    tile_abt(dp, Vs, Os);  // dP^T
    const bool need = d.causal && k0 + TQ - 1 > q0;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const int qc = kg + 8 * j;
        float p = exp2f(s[i][j] * sl2 - L2s[qc]);
        if (need && k0 + rg * 4 + i > q0 + qc) p = 0.f;
        s[i][j] = p;
        dp[i][j] = p * (dp[i][j] - Dls[qc]);
      }
    store_t(Pt, s);
    store_t(St, dp);
    __syncthreads();
    tile_pv(dv, Pt, Os);  // dV += P^T dO
    tile_pv(dk, St, Qs);  // dK += dS^T Q
  }
  store_out(dkh, d.sk, k0, T, d.Dh, dk, d.scale);
  store_out(dvh, d.sv, k0, T, d.Dh, dv, 1.f);
}
#endif

#ifdef DDP_ENTRY_attn_bwd_dq
extern "C" __global__ void __launch_bounds__(128) ddp_attn_bwd_dq(const ddp_kargs a) {
  using namespace attn;
  static_assert((4 * TQ * LDF + TQ * LDP) * 4 == DDP_SMEM, "DDP_SMEM does not match the f32 dq layout");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float *Qs = (float *)smem_raw, *Os = Qs + TQ * LDF, *Ks = Os + TQ * LDF, *Vs = Ks + TQ * LDF, *St = Vs + TQ * LDF;
  const dims d = dims_of(a);
  const long long T = d.T, bh = blockIdx.x;
  const int nqb = (int)((T + TQ - 1) / TQ);
  const long long q0 = (long long)(d.causal ? nqb - 1 - (int)blockIdx.y : (int)blockIdx.y) * TQ;
  const float *qh = (const float *)a.p[ATTN_P_Q] + head_base(d, d.sq, bh);
  const float *kh = (const float *)a.p[ATTN_P_K] + head_base(d, d.sk, bh);
  const float *vh = (const float *)a.p[ATTN_P_V] + head_base(d, d.sv, bh);
  const float *lse = (const float *)a.p[ATTN_P_LSE] + bh * T;
  const float *doh = (const float *)a.p[ATTN_P_DO] + head_base(d, d.so, bh);
  const float *delta = (const float *)a.p[ATTN_P_DELTA] + bh * T;
  T9 *dqh = (T9 *)a.p[ATTN_P_DQ] + head_base(d, d.sq, bh);
  const int rg = threadIdx.x >> 3, kg = threadIdx.x & 7;
  const long long kend = d.causal ? (q0 + TQ < T ? q0 + TQ : T) : T;
  const bool vq = vec_ok_f(qh, d.sq, d.Dh), vk = vec_ok_f(kh, d.sk, d.Dh), vv = vec_ok_f(vh, d.sv, d.Dh),
             vo = vec_ok_f(doh, d.so, d.Dh);
  load_tile_f(Qs, qh, d.sq, q0, T, d.Dh, vq);
  load_tile_f(Os, doh, d.so, q0, T, d.Dh, vo);
  float l2[4], dl[4];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const long long row = q0 + rg * 4 + i;
    l2[i] = row < T ? lse[row] * DDP_LOG2E : INFINITY;
    dl[i] = row < T ? delta[row] : 0.f;
  }
  float4 dq[4][NJ];
  zero(dq);
  const float sl2 = d.scale * DDP_LOG2E;
  for (long long k0 = 0; k0 < kend; k0 += TQ) {
    __syncthreads();
    load_tile_f(Ks, kh, d.sk, k0, T, d.Dh, vk);
    load_tile_f(Vs, vh, d.sv, k0, T, d.Dh, vv);
    __syncthreads();
    float s[4][8], dp[4][8];
    zero(s);
    zero(dp);
    tile_abt(s, Qs, Ks);
    tile_abt(dp, Os, Vs);
    const bool need = k0 + TQ > T || (d.causal && k0 + TQ - 1 > q0);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const long long col = k0 + kg + 8 * j, row = q0 + rg * 4 + i;
        float p = exp2f(s[i][j] * sl2 - l2[i]);
        if (need && (col >= T || (d.causal && col > row))) p = 0.f;
        s[i][j] = p * (dp[i][j] - dl[i]);
      }
    store_t(St, s);
    __syncthreads();
    tile_pv(dq, St, Ks);  // dQ += dS K
  }
  store_out(dqh, d.sq, q0, T, d.Dh, dq, d.scale);
}
#endif
#endif  // DDP_ATTN_MMA

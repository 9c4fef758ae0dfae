// templates/attention_mma.cu: FlashAttention-2 on tensor cores (bf16 q/k/v/o/do, f32 accumulation) for
// ATTN_FWD, ATTN_BWD_DKV and ATTN_BWD_DQ, and the fused ATTN_BWD_DKV_ROPE / ATTN_BWD_DQ_ROPE (the same
// kernels, storing dk / dq through store_rows_rope); ATTN_BWD_PREP and the shared layout are in attention.cuh.
#include "attention.cuh"
#if defined(DDP_ATTN_MMA) && !DDP_ATTN_MMA
#error "attention_mma.cu is the DDP_ATTN_MMA 1 (bf16) path"
#endif

// ================================ tensor-core (bf16) path =========================================
namespace attn {
constexpr int LD = HD + 8;  // smem row pitch (elements): 16-byte shift per row, ldmatrix conflict-free
constexpr int KS = HD / 16; // k-steps over the head dim
constexpr int DT = HD / 8;  // 8-column tiles over the head dim

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
// acc[mt] (16 x HD) += P[mt] (16 x 16*KN from the C-layout registers p[mt][2*KN][4], rounded to bf16) * B
// for each of the warp's MT m16 tiles, where B is the [k][n] tile `bt` (k = 0 .. 16*KN, n = 0 .. HD):
// O += P V in the forward, dQ += dS K in the backward. Each B fragment feeds MT mma instructions.
template <int MT, int KN>
__device__ __forceinline__ void mma_pb(float (&acc)[MT][DT][4], const float (&p)[MT][2 * KN][4], const bf16 *bt,
                                       int lane) {
#pragma unroll
  for (int kk = 0; kk < KN; kk++) {
    unsigned af[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      af[mt][0] = pack2(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      af[mt][1] = pack2(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      af[mt][2] = pack2(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      af[mt][3] = pack2(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < DT / 2; dp++) {
      unsigned bf[4];
      ldsm4t(bf, bkn_addr(bt, kk * 16, dp * 16, lane));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma(acc[mt][2 * dp], af[mt], bf[0], bf[1]);
        mma(acc[mt][2 * dp + 1], af[mt], bf[2], bf[3]);
      }
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
// store_rows fused with the inverse RoPE (ATTN_BWD_*_ROPE): the pair (col, col+1) = (2m, 2m+1) a thread
// holds (e = 0, 1 and e = 2, 3) rotates by -fl32(row * inv[m]) before rounding, as ROPE (templates/rope.cu)
// with inverse = 1: x0' = x0 c + x1 s, x1' = x1 c - x0 s. The row is the position t (base is the head of
// one sequence); Dh is even, so col < Dh covers col + 1.
template <class T>
__device__ __forceinline__ void store_rows_rope(T *base, long long st, long long r0, long long Tn, int Dh,
                                                const float (&acc)[DT][4], float s, int lane, const float *inv) {
  const int g = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int dt = 0; dt < DT; dt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const long long row = r0 + g + 8 * h;
      const int col = dt * 8 + tq * 2;
      if (row < Tn && col < Dh) {
        float sn, cs;
        sincosf((float)row * inv[col >> 1], &sn, &cs);
        const float x0 = acc[dt][2 * h] * s, x1 = acc[dt][2 * h + 1] * s;
        base[row * st + col] = ddp_to<T>(x0 * cs + x1 * sn);
        base[row * st + col + 1] = ddp_to<T>(x1 * cs - x0 * sn);
      }
    }
}
}  // namespace attn

// ---------------------------------------- forward (mma) ------------------------------------------
// Each warp owns MT m16 tiles (16*MT query rows) so that every K/V fragment read from shared memory feeds
// MT tensor-core instructions. Scores stay in raw units; p = 2^(s*scale*log2e - m*scale*log2e) is one FFMA
// and one MUFU.EX2 per element.
#ifdef DDP_ENTRY_attn_fwd
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
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
    mma_pb<MT, BN / 16>(acc, s, vt, lane);  // O += P V
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
#if defined(DDP_ENTRY_attn_bwd_dkv) || defined(DDP_ENTRY_attn_bwd_dkv_rope)
#ifdef DDP_ENTRY_attn_bwd_dkv_rope  // ATTN_BWD_DKV_ROPE: dk rotated back as it is stored (store_rows_rope)
#define DDP_DKV_ENTRY ddp_attn_bwd_dkv_rope
constexpr bool kRopeDk = true;
#else
#define DDP_DKV_ENTRY ddp_attn_bwd_dkv
constexpr bool kRopeDk = false;
#endif
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) DDP_DKV_ENTRY(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
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
    if constexpr (kRopeDk)
      store_rows_rope(dkh, d.sk, k0 + (warp * MT + mt) * 16, T, Dh, dk[mt], d.scale, lane,
                      (const float *)a.p[ATTN_P_INV_FREQ]);
    else
      store_rows(dkh, d.sk, k0 + (warp * MT + mt) * 16, T, Dh, dk[mt], d.scale, lane);
    store_rows(dvh, d.sv, k0 + (warp * MT + mt) * 16, T, Dh, dv[mt], 1.f, lane);
  }
}
#endif

// ---------------------------------------- dQ (mma) -----------------------------------------------
// Block: BM = 16*MT*NW query rows (Q and dO fragments kept in registers); loop over key tiles of BN
// (up to the diagonal when causal): S = Q K^T, dP = dO V^T, dS = P (dP - delta), dQ += dS K.
#if defined(DDP_ENTRY_attn_bwd_dq) || defined(DDP_ENTRY_attn_bwd_dq_rope)
#ifdef DDP_ENTRY_attn_bwd_dq_rope  // ATTN_BWD_DQ_ROPE: dq rotated back as it is stored (store_rows_rope)
#define DDP_DQ_ENTRY ddp_attn_bwd_dq_rope
constexpr bool kRopeDq = true;
#else
#define DDP_DQ_ENTRY ddp_attn_bwd_dq
constexpr bool kRopeDq = false;
#endif
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) DDP_DQ_ENTRY(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
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
    mma_pb<MT, BN / 16>(dq, s, kt, lane);  // dQ += dS K
    __syncthreads();
  }
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    if constexpr (kRopeDq)
      store_rows_rope(dqh, d.sq, q0 + (warp * MT + mt) * 16, T, Dh, dq[mt], d.scale, lane,
                      (const float *)a.p[ATTN_P_INV_FREQ]);
    else
      store_rows(dqh, d.sq, q0 + (warp * MT + mt) * 16, T, Dh, dq[mt], d.scale, lane);
  }
}
#endif

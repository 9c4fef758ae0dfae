// templates/attention.cuh: what the two FlashAttention-2 implementations share: the spec defaults, the
// dims of an ATTN_* argument block and the backward's PREP kernel (delta = rowsum(do*o)). The forward and
// backward themselves: attention_mma.cu (bf16, tensor cores) and attention_f32.cu (f32, FFMA); codegen
// (compiler/codegen/launch.c) picks the file by the activation dtype, the same choice as DDP_ATTN_MMA.
// Ops (plan/op_slots.h) ATTN_FWD, ATTN_BWD_PREP, ATTN_BWD_DKV, ATTN_BWD_DQ; reference
// runtime/ref/ref_attention.c (ref_attn_fwd, ref_attn_bwd_prep, ref_attn_bwd_dkv, ref_attn_bwd_dq).
// Element (b,t,h,j) of q at q[(b*T+t)*QSTRIDE + h*Dh + j] (k: KSTRIDE, v: VSTRIDE, o and do: OSTRIDE;
// dq: QSTRIDE, dk: KSTRIDE, dv: VSTRIDE).
//   forward:  s = scale q.k over visible keys (j <= t when causal), lse = logsumexp(s) (natural log),
//             o = softmax(s) v. Online softmax in the log2 domain (exp2, scale*log2e prescaled).
//   backward: delta = rowsum(do*o) (PREP); P = exp(s - lse) recomputed; dV = P^T dO, dP = dO V^T,
//             dS = P (dP - delta), dK = scale dS^T Q (DKV: grid over key blocks, loop over query blocks),
//             dQ = scale dS K (DQ: grid over query blocks, loop over key blocks). Deterministic, no atomics,
//             no T x T matrix in memory. Causal: fully masked tiles are skipped; the heavy blocks are
//             launched first (grid.x = B*H, grid.y = block index ordered heavy to light; attention_tma.cu
//             numbers its work tiles heavy first in grid.x alone, and its persistent blocks walk them).
// Four code paths: on sm_90a with head dims 64 and 128, attention_tma.cu (bf16, Hopper wgmma in warp-
// specialised, mostly persistent blocks fed by TMA) and attention_wgmma.cu (the same products fed by
// cp.async, where the tensors allow no tensor map or DDP_TUNE_* asks for it); otherwise
// two, chosen by the activation dtype (DDP_ATTN_MMA in the specialisation says which):
//   DDP_ATTN_MMA 1 (attention_mma.cu): bf16 q/k/v/o/do; tensor cores (mma.sync m16n8k16 bf16 -> f32)
//     fed by ldmatrix from padded shared tiles (row pitch HD+8: conflict-free), K/V (or Q/dO) tiles double
//     buffered with cp.async (16-byte, zero-fill past T and Dh; plain loads when a row is not 16-byte
//     aligned). Each warp owns DDP_MT m16 tiles (16*MT rows) of the block's tile, so each K/V (Q/dO)
//     fragment read from shared memory feeds MT mma instructions.
//   DDP_ATTN_MMA 0 (attention_f32.cu): f32 everything; plain FFMA (no TF32) on 64x64 tiles, 128 threads,
//     each thread a 4x8 register micro-tile of the scores and 4 rows x HD/8 columns of the output tile.
// Spec: DDP_HEAD_DIM (head dim padded to a multiple of 16; Dh itself is ATTN_I_DH at run time),
// DDP_ATTN_MMA, DDP_WARPS, DDP_MT (m16 tiles per warp, bf16 path), DDP_MINB (blocks per SM asked of the
// register allocator, bf16 path), DDP_BM (rows of the block's own tile: queries for FWD/DQ, keys for DKV),
// DDP_BN (rows of the streamed tiles), DDP_SMEM (dynamic shared bytes, checked against the layout below).
// Types: T0 q, T1 k, T2 v, T3 o, T4 lse (f32), T5 do, T6 delta (f32), T7 dk, T8 dv, T9 dq; PREP: T0 o,
// T1 do, T2 delta.
#pragma once
#include "common.cuh"

#ifndef DDP_HEAD_DIM
#define DDP_HEAD_DIM 64
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
// What both bf16 tensor-core paths (attention_mma.cu, attention_wgmma.cu) use: shared addresses, 16-byte
// cp.async with zero fill (src-size 0), 2^x on MUFU.EX2 (rel. error ~2^-22; ex2(-inf) = 0), two floats
// rounded into a bf16x2 register, and whether a head's rows allow 16-byte copies.
__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned *>(&v);
}
__device__ __forceinline__ bool async_ok(const void *p, long long st, long long Dh) {
  return Dh % 8 == 0 && st % 8 == 0 && ((unsigned long long)p % 16) == 0;
}
// Offset of element (b, 0, h, 0) of a tensor with row stride st.
__device__ __forceinline__ long long head_base(const dims &d, long long st, long long bh) {
  const long long b = bh / d.H, h = bh % d.H;
  return b * d.T * st + h * d.Dh;
}
// The fused backward's f32 dq accumulator (plan/op_slots.h, ATTN_P_DQACC): per (b, h), ceil(T / 64) tiles of
// 64 rows x HA columns (Dh rounded up to 64), each in 8-column chunks of 64 rows.
__device__ __forceinline__ long long dq_acc_cols(const dims &d) { return (d.Dh + 63) / 64 * 64; }
__device__ __forceinline__ long long dq_acc_elems(const dims &d) { return d.B * d.H * ((d.T + 63) / 64) * 64 * dq_acc_cols(d); }
}  // namespace attn

// ================================ PREP: delta = rowsum(do * o) ===================================
// Eight threads per row with 16-byte packed loads where the head dim and strides allow (32 rows per
// block), else a warp per row with scalar loads (8 rows per block); grid-stride over rows either way.
#ifdef DDP_ENTRY_attn_bwd_prep
extern "C" __global__ void __launch_bounds__(256) ddp_attn_bwd_prep(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace attn;
  const dims d = dims_of(a);
  const T0 *o = (const T0 *)a.p[ATTN_BWD_PREP_P_O];
  const T1 *dout = (const T1 *)a.p[ATTN_BWD_PREP_P_DO];
  float *delta = (float *)a.p[ATTN_BWD_PREP_P_DELTA];
  const long long rows = d.B * d.T * d.H;
  if (float4 *acc = (float4 *)a.p[ATTN_BWD_PREP_P_DQACC]) {  // the fused backward's dq accumulator: zeros
    const long long n4 = attn::dq_acc_elems(d) / 4;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
      acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
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

// ============================ DQ_STORE: dq = (T9) dq_acc ============================================
// ATTN_DQ_STORE after the fused backward: one thread per (row, 8-column chunk) of the head blockIdx.y (and
// every gridDim.y-th head after it), consecutive threads on a row's consecutive chunks, so a warp writes
// whole rows of dq (one 16-byte pack per thread where the head dim and the row stride allow) and reads
// whole 32-byte sectors of dq_acc. 32-bit index arithmetic within a head (64-bit divisions per element
// made the first version run at half the bandwidth).
#ifdef DDP_ENTRY_attn_dq_store
extern "C" __global__ void __launch_bounds__(256) ddp_attn_dq_store(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace attn;
  const dims d = dims_of(a);
  const float *acc = (const float *)a.p[ATTN_P_DQACC];
  T9 *dq = (T9 *)a.p[ATTN_P_DQ];
  const int nch = (int)(dq_acc_cols(d) / 8), Dh = (int)d.Dh;
  const long long nt = (d.T + 63) / 64;
  const unsigned n = (unsigned)d.T * (unsigned)nch;  // (row, chunk) of one head; launch.c keeps T * nch < 2^31
  const bool vec = d.Dh % 8 == 0 && d.sq % 8 == 0 && ddp_pack_ok<T9, 8>(dq);
  for (long long bh = blockIdx.y; bh < d.B * d.H; bh += gridDim.y) {
    const float *acc_h = acc + bh * nt * 64 * (nch * 8);
    T9 *dq_h = dq + head_base(d, d.sq, bh);
    for (unsigned x = blockIdx.x * blockDim.x + threadIdx.x; x < n; x += gridDim.x * blockDim.x) {
      const unsigned t = x / (unsigned)nch, c = x - t * (unsigned)nch;
      if ((int)c * 8 >= Dh) continue;
      const float *src = acc_h + (((t >> 6) * (unsigned)nch + c) * 64u + (t & 63u)) * 8u;
      const float4 lo = *(const float4 *)src, hi = *(const float4 *)(src + 4);
      const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      const long long row = (long long)t * d.sq;
      ddp_store_nb<T9, 8>(dq_h, row + c * 8, row + Dh, v, vec);
    }
  }
}
#endif

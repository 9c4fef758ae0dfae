// templates/wgmma.cuh: the Hopper tensor-core pieces both wgmma attention files share
// (attention_wgmma.cu, loads by cp.async; attention_tma.cu, loads by the TMA unit in warp-specialised
// blocks): the wgmma instructions (m64n32k16, m64n64k16 and m64n128k16, bf16 -> f32), shared-memory matrix descriptors
// of the 128-byte-swizzle layout, the fences and waits around them, the swizzled tile layout and its
// cp.async loader, and the attention building blocks on top: S = A B^T over the head dim, P packed as the
// A operand, O += P V, the accumulator store, and the consumer steps both files' forwards and dQ kernels
// share (a key tile of the online softmax and its end; a key tile of dQ). The tile layout and the operand conventions are described
// at the top of attention_wgmma.cu.
#pragma once
#include "attention.cuh"

namespace wg {
using namespace attn;
constexpr int NWG = NW / 4;  // warpgroups, 64 query rows each
constexpr int CB = HD / 64;  // 128-byte column blocks of the head dim
static_assert(HD == 64 || HD == 128, "attention_wgmma: head dim 64 or 128");
static_assert(NW % 4 == 0 && BM == 64 * NWG, "attention_wgmma: DDP_BM = 64 rows per warpgroup");
static_assert(BN == 64 || BN == 128, "attention_wgmma: DDP_BN 64 or 128");
constexpr int ABYTES = BM * HD * 2, BBYTES = BN * HD * 2;  // a resident (BM-row) and a streamed (BN-row) tile
// Streamed tiles rotate through NBUF stages. With three, tile j+1 loads into the stage tile j-2 used, which
// every warpgroup left before the barrier of iteration j-1, so an iteration needs one barrier (after its
// tile landed) and a warpgroup may run up to one iteration ahead of the other (its softmax then overlaps the
// other's tensor-core work); with two, a second barrier ends each iteration. Measured on an H200 (d 64,
// T 16384): three stages for the forward and dK/dV (2.09 / 3.58 ms against 2.08 / 3.70); two for dQ, whose
// third stage costs 18 registers and so its second block per SM (1.89 ms at two blocks against 2.32 at one).
// DDP_NBUF in the spec (launch.c).
#ifndef DDP_NBUF
#define DDP_NBUF 3
#endif
constexpr int NBUF = DDP_NBUF;
static_assert(NBUF == 2 || NBUF == 3, "attention_wgmma: DDP_NBUF 2 or 3");
// The end of an iteration: with two stages every warpgroup must be done with this one before the next
// iteration's prefetch overwrites it.
__device__ __forceinline__ void stage_done() {
  if constexpr (NBUF == 2) __syncthreads();
}

__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving reads or writes of accumulator registers across wgmma fences and waits.
template <int N> __device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}
// Shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte units), 128-byte
// swizzle (mode 1 in bits 62-63). The tiles' 1024-byte alignment keeps the base offset (bits 49-51) 0. Built
// from two words: the low one (address, leading offset) once per tile, then moved along the tile by adding
// offset / 16 (the address field never carries: shared memory is under 2^18 bytes), the high one constant.
__device__ __forceinline__ unsigned desc_lo(unsigned addr, unsigned lbo) {
  return ((addr & 0x3ffffu) >> 4) | (((lbo >> 4) & 0x3fffu) << 16);
}
template <unsigned SBO> __device__ __forceinline__ unsigned long long desc(unsigned lo) {
  return (unsigned long long)lo | ((unsigned long long)(((SBO >> 4) & 0x3fffu) | (1u << 30)) << 32);
}
// Byte offset of row r's 16-byte chunk c (c < HD/8) in a ROWS-row swizzled tile.
template <int ROWS> __device__ __forceinline__ unsigned swz(int r, int c) {
  return (unsigned)((c >> 3) * ROWS * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}
// Rows [r0, r0 + ROWS) x columns [0, HD) of a head (element (row, col) at base[row * st + col]) into the
// swizzled tile dst; zeros past T and Dh. async: 16-byte cp.async (Dh % 8 == 0, st % 8 == 0, base aligned).
// Each thread copies the same chunk column c of rows r, r + NTH/CPR, ...: the shared offsets and the row
// offsets within the tile are per-thread constants, only the tile's first row moves.
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned char *dst, const bf16 *base, long long st, long long r0, long long T,
                                          int Dh, bool async) {
  constexpr int CPR = HD / 8, RSTEP = NTH / CPR;
  static_assert(NTH % CPR == 0, "load_tile: whole rows per pass");
  const int c = threadIdx.x % CPR, rt = threadIdx.x / CPR;
  const bf16 *src = base + (r0 + rt) * st + c * 8;
  const long long left = T - r0 - rt;  // rows of this thread's column still inside the sequence: row r < left
  const bool col_ok = c * 8 < Dh;
#pragma unroll
  for (int k = 0; k < ROWS / RSTEP; k++) {
    const int r = rt + k * RSTEP;
    unsigned char *d = dst + swz<ROWS>(r, c);
    const bool ok = col_ok && k * RSTEP < left;
    if (async) {
      cp_async16(d, ok ? src + (long long)k * RSTEP * st : base, ok ? 16 : 0);
    } else {
      bf16 *e = (bf16 *)d;
#pragma unroll
      for (int q = 0; q < 8; q++)
        e[q] = (k * RSTEP < left && c * 8 + q < Dh) ? src[(long long)k * RSTEP * st + q] : __float2bfloat16_rn(0.f);
    }
  }
}

// ------------------------------ wgmma instructions (m64nNk16, bf16 -> f32) ------------------------------
// d (64 x 64, f32) = (acc ? d : 0) + A (64 x 16, smem desc da, K-major) * B^T (64 x 16, smem desc db, K-major)
__device__ __forceinline__ void wgmma_ss(float (&d)[32], unsigned long long da, unsigned long long db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(acc));
}
// d (64 x 128, f32) = (acc ? d : 0) + A (64 x 16, smem desc da, K-major) * B^T (128 x 16, smem desc db, K-major)
__device__ __forceinline__ void wgmma_ss(float (&d)[64], unsigned long long da, unsigned long long db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(acc));
}
// d (64 x 64, f32) += A (64 x 16, bf16 registers a) * B (16 x 64, smem desc db, MN-major: transposed)
__device__ __forceinline__ void wgmma_rs_n64_t(float (&d)[32], const unsigned (&a)[4], unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
      "}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "n"(1));
}

// d (64 x 32, f32) = (acc ? d : 0) + A (64 x 16, smem desc da, MN-major) * B (16 x 32, smem desc db, MN-major):
// both operands transposed (the fused backward's dQ = dS K, dS stored keys-major, K rows = keys).
__device__ __forceinline__ void wgmma_ss_tt(float (&d)[16], unsigned long long da, unsigned long long db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15"
      "}, %16, %17, p, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(acc));
}
// d (64 x 64, f32) = (acc ? d : 0) + A (64 x 16, MN-major) * B (16 x 64, MN-major), as above.
__device__ __forceinline__ void wgmma_ss_tt(float (&d)[32], unsigned long long da, unsigned long long db, int acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
      "}, %32, %33, p, 1, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(acc));
}

// S (64 x BN) = A B^T over the head dim: HD/16 k steps, each one wgmma. A: the warpgroup's 64 rows of a
// resident BM-row tile (aaddr includes the warpgroup's offset); B: a streamed BN-row tile. Q K^T in the
// forward and dQ (S, and dP = dO V^T), K Q^T and V dO^T in dK/dV.
__device__ __forceinline__ void scores(float (&s)[BN / 2], unsigned qaddr, unsigned kaddr) {
  const unsigned qlo = desc_lo(qaddr, 16), klo = desc_lo(kaddr, 16);
#pragma unroll
  for (int kk = 0; kk < HD / 16; kk++) {
    const unsigned off = ((unsigned)(kk & 3) * 32u) >> 4;
    const unsigned long long da = desc<1024>(qlo + ((unsigned)(kk >> 2) * BM * 128u >> 4) + off);
    const unsigned long long db = desc<1024>(klo + ((unsigned)(kk >> 2) * BN * 128u >> 4) + off);
    wgmma_ss(s, da, db, kk > 0);  // m64n64k16 or m64n128k16 by the size of s
  }
}
// P (64 x BN) as bf16 A fragments, one set of 4 registers per 16-key k step, from the scores' registers.
__device__ __forceinline__ void pack_p(unsigned (&pa)[BN / 16][4], const float (&s)[BN / 2]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) {
    pa[kk][0] = pack2(s[8 * kk], s[8 * kk + 1]);
    pa[kk][1] = pack2(s[8 * kk + 2], s[8 * kk + 3]);
    pa[kk][2] = pack2(s[8 * kk + 4], s[8 * kk + 5]);
    pa[kk][3] = pack2(s[8 * kk + 6], s[8 * kk + 7]);
  }
}
// O[cb] (64 x 64 each) += P (64 x BN, packed registers) V (BN x HD, a streamed tile read MN-major): BN/16
// k steps, one wgmma per column block. P V in the forward, dS K in dQ, P^T dO and dS^T Q in dK/dV. The
// fragments are packed before the fence, so no register is written between the instructions.
__device__ __forceinline__ void pv(float (&o)[CB][32], const unsigned (&pa)[BN / 16][4], unsigned vaddr) {
  const unsigned vlo = desc_lo(vaddr, BN * 128u);
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
      wgmma_rs_n64_t(o[cb], pa[kk], desc<1024>(vlo + (((unsigned)cb * BN * 128u + (unsigned)kk * 16u * 128u) >> 4)));
}
// O += P V as one wgmma group, waited for, with P packed from the registers of p (the forward's P V, dQ's
// dS K).
__device__ __forceinline__ void pv_waited(float (&o)[CB][32], const float (&p)[BN / 2], unsigned vaddr) {
  unsigned pa[BN / 16][4];
  pack_p(pa, p);
#pragma unroll
  for (int cb = 0; cb < CB; cb++) reg_fence(o[cb]);
  wg_fence();
  pv(o, pa, vaddr);
  wg_commit();
  wg_wait<0>();
#pragma unroll
  for (int cb = 0; cb < CB; cb++) reg_fence(o[cb]);
}
// S = A B^T as one wgmma group, waited for (the forward's scores).
__device__ __forceinline__ void scores_waited(float (&s)[BN / 2], unsigned a, unsigned b) {
  wg_fence();
  scores(s, a, b);
  wg_commit();
  wg_wait<0>();
  reg_fence(s);
}
// S = A B^T and P = C D^T as one wgmma group, waited for (the backward's scores and dP, both from the tile).
__device__ __forceinline__ void scores2_waited(float (&s)[BN / 2], unsigned a, unsigned b, float (&p)[BN / 2],
                                               unsigned c, unsigned d) {
  wg_fence();
  scores(s, a, b);
  scores(p, c, d);
  wg_commit();
  wg_wait<0>();
  reg_fence(s);
  reg_fence(p);
}
// A 64-bit difference clamped into [lo, hi] as an int, for the per-tile mask limits.
__device__ __forceinline__ int clamp_int(long long v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }
// Column (within its 8-wide group's tile) of accumulator element i, less the thread's 2 tq: 8 (i / 4) + (i % 2).
__device__ __forceinline__ constexpr int acc_col(int i) { return (i >> 2) * 8 + (i & 1); }

// Stores rows (row0, row0 + 8) of a warpgroup's 64 x HD accumulator (acc[cb][4 nt + e]: row + 8 (e >> 1),
// column 64 cb + 8 nt + 2 tq + (e & 1)) times s, rows < T and columns < Dh.
template <class TO>
__device__ __forceinline__ void store_acc(TO *base, long long st, long long row0, long long T, int Dh,
                                          const float (&acc)[CB][32], float s, int tq) {
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i += 2) {
      const long long row = row0 + ((i & 2) ? 8 : 0);
      const int col = cb * 64 + (i >> 2) * 8 + tq * 2;
      if (row < T) {
        if (col < Dh) base[row * st + col] = ddp_to<TO>(acc[cb][i] * s);
        if (col + 1 < Dh) base[row * st + col + 1] = ddp_to<TO>(acc[cb][i + 1] * s);
      }
    }
}
// bf16 (a bf16 pointer picks this overload; store_acc<bf16> the one above) where rows allow 16-byte stores
// (Dh and st multiples of 8, base 16-byte aligned): the four threads of
// a quad (lanes 4 g .. 4 g + 3) first trade their column pairs in two shuffle rounds, so that lane tq holds
// the 8 columns of groups tq and tq + 4 of each of its two rows whole, then store them 16 bytes at a time:
// four stores a thread per 64 columns instead of 32 two-byte ones. (Measured on an H200 at the XL step's
// shape: the two-byte stores and the wait for them to drain took about a third of the forward's samples.)
//  - Round 1 (lanes tq, tq ^ 1): a lane keeps the column groups of its parity, n = 2k + (tq & 1), and
//    takes its neighbour's pair of each: 8 bytes, columns 4 (tq >> 1) .. + 3 of group n.
//  - Round 2 (lanes tq, tq ^ 2): of those it keeps k = 2m + (tq >> 1), which is group 4 m + tq, and takes
//    the other half of it: 16 bytes, the half with tq >> 1 = 0 first.
__device__ __forceinline__ void store_acc(bf16 *base, long long st, long long row0, long long T, int Dh,
                                          const float (&acc)[CB][32], float s, int tq) {
  if (Dh % 8 != 0 || st % 8 != 0 || ((unsigned long long)base & 15u) != 0) {
    store_acc<bf16>(base, st, row0, T, Dh, acc, s, tq);
    return;
  }
  const bool odd = tq & 1, hb = tq & 2;
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int h = 0; h < 2; h++) {  // rows row0 + 8 h
      unsigned x[8];
#pragma unroll
      for (int n = 0; n < 8; n++) x[n] = pack2(acc[cb][4 * n + 2 * h] * s, acc[cb][4 * n + 2 * h + 1] * s);
      unsigned a[4][2];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const unsigned mine = odd ? x[2 * k + 1] : x[2 * k];
        const unsigned got = __shfl_xor_sync(DDP_FULL, odd ? x[2 * k] : x[2 * k + 1], 1);
        a[k][0] = odd ? got : mine;
        a[k][1] = odd ? mine : got;
      }
      const long long row = row0 + 8 * h;
#pragma unroll
      for (int m = 0; m < 2; m++) {
        const unsigned k0 = hb ? a[2 * m + 1][0] : a[2 * m][0], k1 = hb ? a[2 * m + 1][1] : a[2 * m][1];
        const unsigned g0 = __shfl_xor_sync(DDP_FULL, hb ? a[2 * m][0] : a[2 * m + 1][0], 2);
        const unsigned g1 = __shfl_xor_sync(DDP_FULL, hb ? a[2 * m][1] : a[2 * m + 1][1], 2);
        const int col = cb * 64 + (4 * m + tq) * 8;
        if (row < T && col < Dh)
          *reinterpret_cast<uint4 *>(base + row * st + col) = hb ? make_uint4(g0, g1, k0, k1) : make_uint4(k0, k1, g0, g1);
      }
    }
}

// ---- the forward's online softmax (both files' forwards): a consumer thread's rows are row0 and row0 + 8 ----
// One key tile (keys k0 .. k0 + BN - 1, V at vaddr) with its scores in s: the rows' running max m and sum l
// move on, o is rescaled where a max moved (most tiles move none), then o += P V. Keys past T and above the
// diagonal are masked (to -inf) only on a tile that reaches them (need): a branch per tile, not a predicate
// per element (with the predicate the ALU pipe was the forward's busiest, docs/PERFORMANCE.md).
__device__ __forceinline__ void fwd_tile(float (&o)[CB][32], float (&m)[2], float (&l)[2], float (&s)[BN / 2], float sl2,
                                         bool need, bool causal, long long T, long long k0, long long row0, int tq,
                                         unsigned vaddr) {
  float mx[2] = {-INFINITY, -INFINITY};
  if (need) {  // masked is column k0 + 2 tq + acc_col(i) at or past T, or past the row
    const int lim_t = clamp_int(T - k0 - 2 * tq, -1, BN), lim_c = causal ? clamp_int(row0 - k0 - 2 * tq, -16, BN) : BN;
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      float x = s[i];
      if (acc_col(i) >= lim_t || acc_col(i) > lim_c + ((i & 2) ? 8 : 0)) x = -INFINITY;
      s[i] = x;
      mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], x);
    }
  } else {
#pragma unroll
    for (int i = 0; i < BN / 2; i++) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
  }
  float mb[2], alpha[2], ls[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; r++) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(DDP_FULL, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(DDP_FULL, mx[r], 2));
    const float mn = fmaxf(m[r], mx[r]);
    mb[r] = mn == -INFINITY ? 0.f : mn * sl2;
    alpha[r] = ex2(m[r] * sl2 - mb[r]);
    m[r] = mn;
  }
#pragma unroll
  for (int i = 0; i < BN / 2; i++) {
    const float p = ex2(fmaf(s[i], sl2, -mb[(i >> 1) & 1]));
    s[i] = p;
    ls[(i >> 1) & 1] += p;
  }
#pragma unroll
  for (int r = 0; r < 2; r++) l[r] = l[r] * alpha[r] + ls[r];
  if (__any_sync(DDP_FULL, alpha[0] != 1.f || alpha[1] != 1.f))  // most tiles move no row's max
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
      for (int i = 0; i < 32; i++) o[cb][i] *= alpha[(i >> 1) & 1];
  pv_waited(o, s, vaddr);
}
// The end of a query tile: o divided by the rows' sums, the rows' lse (natural log; where lse is not null,
// at lse[head + row], head = the head's first row) written by the quad's first thread, o stored at oh.
template <class TO>
__device__ __forceinline__ void fwd_store(float (&o)[CB][32], const float (&m)[2], const float (&l)[2], float scale,
                                          float *lse, long long head, TO *oh, long long so, long long row0, long long T,
                                          int Dh, int tq) {
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float lr = l[r];
    lr += __shfl_xor_sync(DDP_FULL, lr, 1);
    lr += __shfl_xor_sync(DDP_FULL, lr, 2);
    inv[r] = lr > 0.f ? 1.f / lr : 0.f;
    const long long row = row0 + 8 * r;
    if (tq == 0 && row < T && lse) lse[head + row] = m[r] * scale + logf(lr);
  }
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i++) o[cb][i] *= inv[(i >> 1) & 1];
  store_acc(oh, so, row0, T, Dh, o, 1.f, tq);
}

// ---- dQ, query-major (both files' dQ kernels): a consumer thread's rows are row0 and row0 + 8 ----
// Their softmax statistics: lse in log2 units and delta (a row past T: lse +inf, so P = 0, and delta 0).
__device__ __forceinline__ void dq_row_stats(float (&l2)[2], float (&dl)[2], const float *lse, const float *delta,
                                             long long row0, long long T) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const long long row = row0 + 8 * r;
    l2[r] = row < T ? lse[row] * DDP_LOG2E : INFINITY;
    dl[r] = row < T ? delta[row] : 0.f;
  }
}
// One key tile (keys k0 .. k0 + BN - 1, K at kaddr) with its S and dP in s and dp: dS = P (dP - delta) with
// P = 2^(S scale log2e - lse log2e), then dq += dS K (dS the register A operand, K read MN-major). P is 0 at
// keys past T and above the diagonal; only a tile that reaches them (need) tests for it, by a branch per
// tile, not a predicate per element.
__device__ __forceinline__ void dq_tile(float (&dq)[CB][32], float (&s)[BN / 2], const float (&dp)[BN / 2],
                                        const float (&l2)[2], const float (&dl)[2], float sl2, bool need, bool causal,
                                        long long T, long long k0, long long row0, int tq, unsigned kaddr) {
  if (need) {
    const int lim_t = clamp_int(T - k0 - 2 * tq, -1, BN), lim_c = causal ? clamp_int(row0 - k0 - 2 * tq, -16, BN) : BN;
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int r = (i >> 1) & 1;
      float p = ex2(fmaf(s[i], sl2, -l2[r]));
      if (acc_col(i) >= lim_t || acc_col(i) > lim_c + 8 * r) p = 0.f;
      s[i] = p * (dp[i] - dl[r]);  // dS
    }
  } else {
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int r = (i >> 1) & 1;
      s[i] = ex2(fmaf(s[i], sl2, -l2[r])) * (dp[i] - dl[r]);  // dS
    }
  }
  pv_waited(dq, s, kaddr);
}
// One query tile (queries q0 .. q0 + BN - 1; Q at qaddr, dO at oaddr, their lse log2e and delta at l2 and dl)
// for the thread's keys krow0 and krow0 + 8, with S^T and dP^T in s and dp: P = 2^(S scale log2e - lse log2e)
// and dS = P (dP - delta), then dv += P dO and dk += dS Q, waited. P is 0 above the diagonal; only a tile
// that reaches it (need) tests for it, by a branch per tile, not a predicate per element.
__device__ __forceinline__ void dkv_tile(float (&dv)[CB][32], float (&dk)[CB][32], float (&s)[BN / 2], float (&dp)[BN / 2],
                                         const float *l2, const float *dl, float sl2, bool need, long long krow0,
                                         long long q0, int tq, unsigned qaddr, unsigned oaddr) {
  if (need) {  // query q0 + 2 tq + acc_col(i) before the key krow0 (+ 8)
    const int lim = clamp_int(krow0 - q0 - 2 * tq, -16, BN + 16);
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int qc = acc_col(i) + tq * 2;
      float p = ex2(fmaf(s[i], sl2, -l2[qc]));
      if (acc_col(i) < lim + ((i & 2) ? 8 : 0)) p = 0.f;
      s[i] = p;
      dp[i] = p * (dp[i] - dl[qc]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int qc = acc_col(i) + tq * 2;
      const float p = ex2(fmaf(s[i], sl2, -l2[qc]));
      s[i] = p;
      dp[i] = p * (dp[i] - dl[qc]);
    }
  }
  unsigned pa[BN / 16][4], sa[BN / 16][4];
  pack_p(pa, s);
  pack_p(sa, dp);
#pragma unroll
  for (int cb = 0; cb < CB; cb++) reg_fence(dv[cb]), reg_fence(dk[cb]);
  wg_fence();
  pv(dv, pa, oaddr);
  pv(dk, sa, qaddr);
  wg_commit();
  wg_wait<0>();
#pragma unroll
  for (int cb = 0; cb < CB; cb++) reg_fence(dv[cb]), reg_fence(dk[cb]);
}
}  // namespace wg

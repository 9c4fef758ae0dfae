// templates/attention_tma.cu: ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ and the fused ATTN_BWD_FUSED on Hopper
// (sm_90a) in the FlashAttention-3 structure: warp specialisation, TMA loads and register reallocation. Same semantics, arguments and determinism as
// attention_wgmma.cu (whose wgmma building blocks, wgmma.cuh, it uses); compiler/codegen/launch.c picks it
// for bf16 at head dims 64 and 128 on sm_90a where the tensors allow tensor maps (head dim and row strides
// multiples of 8 elements), and the runtime (runtime/cuda/tma.c) encodes the maps and passes them as the
// kernel's second parameter (DDP_TMA in the spec says so).
//
// Block: one producer warpgroup and DDP_WARPS / 4 consumer warpgroups of 64 query rows each (BM rows). The
// grid is one-dimensional over work tiles (a query block of a head; a key block in dK/dV); with
// DDP_PERSISTENT a block walks several of them (`work` below says in which order), and its producer loads
// the next tile's K/V and resident tiles while the consumers finish the current one.
//  - The producer gives its registers to the consumers (setmaxnreg) and one of its threads issues every load:
//    the block's Q tile once, then each K/V tile of BN keys into one of NBUF stages, after the consumers have
//    released that stage. Each load is a TMA box of 64 head-dim columns (128 bytes) x rows, written in the
//    128-byte-swizzle layout that the wgmma descriptors read; rows past T and columns past Dh arrive as zeros.
//  - Tile arrival and stage release are mbarriers: full[s] completes when the stage's K and V bytes have
//    landed (expect_tx), empty[s] when every consumer warp has finished the P V product that read it;
//    resident / resident_free do the same for the resident tiles, once per work tile.
//  - The consumers run the forward of attention_wgmma.cu on the stage: S = Q K^T (wgmma, both operands in
//    shared memory), the online softmax in registers, O += P V with P as the register A operand. No
//    consumer thread computes an address or waits on a block-wide barrier.
// Tensor maps (ddp_tmaps, tma.cuh), each four-dimensional (Dh, H, T, B) over the tensor's (b, t, h, j)
// layout (attention.cuh), so a box never crosses into the next sequence; resident tiles have BM-row boxes,
// streamed ones BN-row boxes; maps 0 and 1 are the resident tiles, 2 and 3 the streamed ones: forward m[0]
// Q, m[2] K, m[3] V (m[1] unused); dK/dV m[0] K, m[1] V, m[2] Q, m[3] dO; dQ m[0] Q, m[1] dO, m[2] K, m[3] V.
//
// The backward kernels (ATTN_BWD_DKV, ATTN_BWD_DQ) are attention_wgmma.cu's, fed the same way: the resident
// pair once, the streamed pair per stage. In dK/dV the producer's first warp also copies each query tile's
// lse (log2 units) and delta into the stage next to it and arrives on full[s] lane by lane, so a stage is
// complete when its bytes and those 32 arrivals are in.
//
// Spec (launch.c): DDP_TMA 1, DDP_PERSISTENT 1 (forward, dK/dV and dQ unless DDP_TUNE_ATTN_PERSISTENT=2: it
// tells the runtime to launch at most one block per multiprocessor; the kernels walk any grid), DDP_HEAD_DIM
// 64 | 128, DDP_WARPS (consumer warps, 8 or 12), DDP_BM = 16 DDP_WARPS, DDP_BN 64 | 128, DDP_NBUF 2 | 3,
// DDP_SMEM = (BM + 2 NBUF BN) HD 2 + 1024 (1 KiB to align the tiles to 1024 bytes). The block has
// 32 DDP_WARPS + 128 threads; the mbarriers are static shared memory.
#include "tma.cuh"
#include "wgmma.cuh"

namespace ws {
using namespace wg;
// Registers per thread after the reallocation: the consumers share the 64 K-register file (one block per
// SM) with what the producer keeps: 24 / 240 with two consumer warpgroups, 32 / 160 with three.
constexpr int PRODUCER_REGS = NWG == 2 ? 24 : 32, CONSUMER_REGS = NWG == 2 ? 240 : 160;
// dK/dV's producer warp walks its work tiles copying lse and delta with 64-bit addresses: 24 registers
// spill there (64 bytes), 40 do not, and its consumers keep 232 (40 x 128 + 232 x 256 <= 64 K), as in the
// fused backward.
constexpr int KEY_MAJOR_PRODUCER_REGS = 40, KEY_MAJOR_CONSUMER_REGS = 232;
static_assert(NWG == 2 || NWG == 3, "attention_tma: two or three consumer warpgroups");
static_assert(BM <= 256 && BN <= 256, "attention_tma: a TMA box has at most 256 rows");
// The block's barriers: a resident tile's arrival and its release, then full[NBUF] and empty[NBUF] of the
// streamed stages. The stage barriers count streamed tiles over all of the block's work tiles (i below is
// that running count), so their phases carry on from one work tile to the next.
struct bars {
  unsigned resident, resident_free, full0, empty0;
  __device__ __forceinline__ unsigned full(int s) const { return full0 + 8u * (unsigned)s; }
  __device__ __forceinline__ unsigned empty(int s) const { return empty0 + 8u * (unsigned)s; }
  // The producer, before loading the i-th streamed tile: its stage's previous tile has been released.
  __device__ __forceinline__ void wait_free(int i) const {
    if (i >= NBUF) tma::mbar_wait(empty(i % NBUF), ((i / NBUF) - 1) & 1);
  }
  // A consumer, before reading the i-th streamed tile: it has landed.
  __device__ __forceinline__ void wait_full(int i) const { tma::mbar_wait(full(i % NBUF), (i / NBUF) & 1); }
};
// Thread 0 initialises them: `full_count` arrivals (plus the bytes) complete a stage; every consumer warp
// releases a stage, and the resident tiles once it has issued its last product that reads them.
__device__ __forceinline__ bars init_bars(unsigned long long *mem, unsigned full_count) {
  bars b{smem_u32(&mem[0]), smem_u32(&mem[1]), smem_u32(&mem[2]), smem_u32(&mem[2 + NBUF])};
  if (threadIdx.x == 0) {
    tma::mbar_init(b.resident, 1);
    tma::mbar_init(b.resident_free, NW);
    for (int s = 0; s < NBUF; s++) {
      tma::mbar_init(b.full(s), full_count);
      tma::mbar_init(b.empty(s), NW);
    }
    tma::mbar_init_fence();
  }
  __syncthreads();
  return b;
}
constexpr int NBARS = 2 + 2 * NBUF;  // the unsigned long longs of static shared memory `bars` takes
// The block's work tiles. The kernel's work is n tiles, one resident tile each (a query block: forward,
// dQ; a key block: dK/dV), numbered block index major and head minor with the heavy blocks first under
// causal masking, the order of the one-tile-per-block grid (B H, blocks) this replaces. Without
// DDP_PERSISTENT the grid has n blocks and block c does tile c. With it (launch.c) the runtime launches at
// most one block per multiprocessor (runtime/cuda/kernels.c) and block c of G does tiles c, 2G - 1 - c,
// 2G + c, 4G - 1 - c, ...: a snake, so a block that drew a heavy tile in one round draws a light one in the
// next, and the producer loads a block's next tile while its consumers finish the last one.
// (32-bit: launch.c keeps the tile count under 2^31, and so T and B H, and makes a kernel persistent only
// where all its streamed tiles number under 2^31, so a block's running count `it` cannot overflow; the
// consumers' registers are tight.)
struct work {
  int n;
  // The block's r-th tile, or -1 past its last.
  __device__ __forceinline__ int tile(int r) const {
    const int G = (int)gridDim.x, c = (int)blockIdx.x;
    const long long t = (long long)r * G + ((r & 1) ? G - 1 - c : c);
    return t < n ? (int)t : -1;
  }
};
__device__ __forceinline__ work work_of(const dims &d, long long blocks_per_head) {
  return {(int)(d.B * d.H * blocks_per_head)};
}
// A consumer warp has issued and finished its last product that reads the resident tiles of this work tile.
__device__ __forceinline__ void release_resident(const bars &b) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) tma::mbar_arrive(b.resident_free);
}
// The resident tiles (map 0 into x and, for the backward kernels, map 1 into y; BM rows from row r0) on
// the resident barrier.
__device__ __forceinline__ void load_resident(const ddp_tmaps &tm, const bars &b, unsigned char *x, unsigned char *y,
                                              int h, int r0, int bi) {
  tma::mbar_expect_tx(b.resident, (y ? 2 : 1) * ABYTES);
  for (int cb = 0; cb < CB; cb++) {
    tma::load_4d(smem_u32(x) + cb * BM * 128, &tm.m[0], b.resident, cb * 64, h, r0, bi);
    if (y) tma::load_4d(smem_u32(y) + cb * BM * 128, &tm.m[1], b.resident, cb * 64, h, r0, bi);
  }
}
// Stage s's two streamed tiles (maps 2 and 3, BN rows from row r0), announced on full(s).
__device__ __forceinline__ void load_stage2(const ddp_tmaps &tm, const bars &b, int s, unsigned char *x,
                                            unsigned char *y, int h, int r0, int bi) {
  tma::mbar_expect_tx(b.full(s), 2 * BBYTES);
  for (int cb = 0; cb < CB; cb++) {
    tma::load_4d(smem_u32(x + s * BBYTES) + cb * BN * 128, &tm.m[2], b.full(s), cb * 64, h, r0, bi);
    tma::load_4d(smem_u32(y + s * BBYTES) + cb * BN * 128, &tm.m[3], b.full(s), cb * 64, h, r0, bi);
  }
}
// A query-major work tile (forward, dQ): its head, its query block (reversed under causal, so the longest run
// first), the block's first row and how many key tiles it visits.
struct qspan {
  int bh, q0, nkt;
};
__device__ __forceinline__ qspan query_span(const dims &d, int t) {
  const int T = (int)d.T, nqb = (T + BM - 1) / BM, bhs = (int)(d.B * d.H), blk = t / bhs;
  const int q0 = (d.causal ? nqb - 1 - blk : blk) * BM;
  const int kend = d.causal ? min(q0 + BM, T) : T;
  return {t % bhs, q0, (kend + BN - 1) / BN};
}
// Its producer warpgroup: gives its registers away; one thread loads, for each of the block's work tiles, the
// resident tiles (x, and y unless null) and each key tile's K and V into its stage as the consumers release
// it. A work tile's first K/V stage goes before its resident tiles, which wait until the consumers have
// issued their last product over the previous ones; so both load while the previous tile's last softmax,
// P V and stores run.
__device__ __forceinline__ void produce_query_major(const ddp_tmaps &tm, const bars &bb, const dims &d, const work &w,
                                                    unsigned char *x, unsigned char *y, unsigned char *Ks,
                                                    unsigned char *Vs) {
  tma::regs_dec<PRODUCER_REGS>();
  if (threadIdx.x != 0) return;
  int it = 0;  // streamed tiles issued so far
  for (int r = 0;; r++) {
    const int t = w.tile(r);
    if (t < 0) break;
    const qspan q = query_span(d, t);
    const int b = q.bh / (int)d.H, h = q.bh % (int)d.H;
    for (int j = 0; j < q.nkt; j++) {
      bb.wait_free(it + j);
      load_stage2(tm, bb, (it + j) % NBUF, Ks, Vs, h, j * BN, b);
      if (j == 0) {
        if (r > 0) tma::mbar_wait(bb.resident_free, (r - 1) & 1);
        load_resident(tm, bb, x, y, h, q.q0, b);
      }
    }
    it += q.nkt;
  }
}
// A key-major work tile (dK/dV, the fused backward): its head, its key block (heavy, small k0, first under
// causal), and its query tiles qt0 .. nqt - 1.
struct kspan {
  int bh, k0, qt0, nqt;
};
__device__ __forceinline__ kspan key_span(const dims &d, int t) {
  const int bhs = (int)(d.B * d.H), k0 = t / bhs * BM;
  return {t % bhs, k0, d.causal ? k0 / BN : 0, (int)((d.T + BN - 1) / BN)};
}
// The first warp of a key-major block's producer warpgroup, for one work tile whose first streamed tile is
// the block's it-th and which is the block's r-th: the resident K and V (after the first stage, and for r > 0
// once the consumers have released the previous work tile's), then each query tile's Q and dO into its
// stage as the consumers release it, with the tile's lse (log2 units) and delta copied lane by lane next to
// them; each lane arrives on full(s) after its copies.
__device__ __forceinline__ void produce_key_major(const ddp_tmaps &tm, const bars &bb, const ddp_kargs &a, const dims &d,
                                                  const kspan &k, int it, int r, unsigned char *Ks, unsigned char *Vs,
                                                  unsigned char *Qs, unsigned char *Os, float *L2s, float *Dls) {
  const long long T = d.T;
  const int b = k.bh / (int)d.H, h = k.bh % (int)d.H, lane = threadIdx.x;
  const float *lse = (const float *)a.p[ATTN_P_LSE] + (long long)k.bh * T, *delta = (const float *)a.p[ATTN_P_DELTA] + (long long)k.bh * T;
  for (int qt = k.qt0; qt < k.nqt; qt++) {
    const int i = it + qt - k.qt0, s = i % NBUF;
    bb.wait_free(i);
    const long long q0 = (long long)qt * BN;
    if (lane == 0) load_stage2(tm, bb, s, Qs, Os, h, (int)q0, b);
    for (int rr = lane; rr < BN; rr += 32) {
      const long long q = q0 + rr;
      L2s[s * BN + rr] = q < T ? lse[q] * DDP_LOG2E : INFINITY;
      Dls[s * BN + rr] = q < T ? delta[q] : 0.f;
    }
    tma::mbar_arrive(bb.full(s));
    if (qt == k.qt0 && lane == 0) {
      if (r > 0) tma::mbar_wait(bb.resident_free, (r - 1) & 1);
      load_resident(tm, bb, Ks, Vs, h, k.k0, b);
    }
  }
}
// A consumer warp is done reading stage s.
__device__ __forceinline__ void release(const bars &b, int s) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0) tma::mbar_arrive(b.empty(s));
}
}  // namespace ws

#ifdef DDP_ENTRY_attn_fwd
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS + 128, 1)
    ddp_attn_fwd(const ddp_kargs a, const __grid_constant__ ddp_tmaps tm) {
  DDP_GRID_DEPENDENCY();
  using namespace ws;
  constexpr int QBYTES = ABYTES, KVBYTES = BBYTES;
  static_assert(QBYTES + 2 * NBUF * KVBYTES + 1024 == DDP_SMEM, "DDP_SMEM does not match the TMA forward layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long barmem[NBARS];
  unsigned char *Qs = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Ks = Qs + QBYTES, *Vs = Ks + NBUF * KVBYTES;
  const dims d = dims_of(a);
  const long long T = d.T;
  const int Dh = (int)d.Dh;
  const work w = work_of(d, (T + BM - 1) / BM);
  const bars bb = init_bars(barmem, 1);

  if (threadIdx.x < 128) {  // the producer warpgroup
    produce_query_major(tm, bb, d, w, Qs, nullptr, Ks, Vs);
    return;
  }

  tma::regs_inc<CONSUMER_REGS>();
  float *lse = (float *)a.p[ATTN_P_LSE];
  const int wgi = (threadIdx.x >> 7) - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
            tq = lane & 3;
  const float sl2 = d.scale * DDP_LOG2E;
  const unsigned qaddr = smem_u32(Qs) + (unsigned)wgi * 64u * 128u;
  int it = 0;  // streamed tiles consumed so far
  for (int r = 0;; r++) {
    const int t = w.tile(r);
    if (t < 0) break;
    const qspan q = query_span(d, t);
    const long long q0 = q.q0, bh = q.bh;
    const int nkt = q.nkt;
    float o[CB][32];
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
      for (int i = 0; i < 32; i++) o[cb][i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    const long long row0 = q0 + wgi * 64 + warp * 16 + g;  // the thread's rows: row0 and row0 + 8
    tma::mbar_wait(bb.resident, r & 1);

    for (int j = 0; j < nkt; j++) {
      const int s = (it + j) % NBUF;
      bb.wait_full(it + j);
      float sc[BN / 2];
      scores_waited(sc, qaddr, smem_u32(Ks + s * KVBYTES));
      if (j == nkt - 1) release_resident(bb);

      const long long k0 = (long long)j * BN;
      const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0 + wgi * 64);
      fwd_tile(o, m, l, sc, sl2, need, d.causal, T, k0, row0, tq, smem_u32(Vs + s * KVBYTES));
      release(bb, s);
    }
    it += nkt;
    fwd_store(o, m, l, d.scale, lse, bh * T, (T3 *)a.p[ATTN_P_O] + head_base(d, d.so, bh), d.so, row0, T, Dh, tq);
  }
}
#endif

// ---------------------------------------- dK, dV -------------------------------------------------
// attention_wgmma.cu's dK/dV (keys resident, query tiles streamed from the diagonal when causal) with K, V
// by TMA once, Q and dO by TMA per stage, and the stage's lse and delta copied by the producer's first warp.
// Smem: K, V (BM rows), Q, dO (NBUF x BN rows each), lse and delta (NBUF x BN floats each):
// DDP_SMEM = (2 BM + 2 NBUF BN) HD 2 + 8 NBUF BN + 1024.
#ifdef DDP_ENTRY_attn_bwd_dkv
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS + 128, 1)
    ddp_attn_bwd_dkv(const ddp_kargs a, const __grid_constant__ ddp_tmaps tm) {
  DDP_GRID_DEPENDENCY();
  using namespace ws;
  static_assert(2 * ABYTES + 2 * NBUF * BBYTES + 8 * NBUF * BN + 1024 == DDP_SMEM, "DDP_SMEM does not match the TMA dK/dV layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long barmem[NBARS];
  unsigned char *Ks = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Vs = Ks + ABYTES, *Qs = Vs + ABYTES, *Os = Qs + NBUF * BBYTES;
  float *L2s = (float *)(Os + NBUF * BBYTES), *Dls = L2s + NBUF * BN;
  const dims d = dims_of(a);
  const long long T = d.T;
  const int Dh = (int)d.Dh;
  const work w = work_of(d, (T + BM - 1) / BM);
  const bars bb = init_bars(barmem, 33);  // the bytes and lane 0's announcement, then 32 lanes' statistics

  if (threadIdx.x < 128) {  // the producer warpgroup; its first warp works
    tma::regs_dec<KEY_MAJOR_PRODUCER_REGS>();
    if (threadIdx.x < 32) {
      int it = 0;
      for (int r = 0;; r++) {
        const int t = w.tile(r);
        if (t < 0) break;
        const kspan k = key_span(d, t);
        produce_key_major(tm, bb, a, d, k, it, r, Ks, Vs, Qs, Os, L2s, Dls);
        it += k.nqt - k.qt0;
      }
    }
    return;
  }

  tma::regs_inc<KEY_MAJOR_CONSUMER_REGS>();
  const int wgi = (threadIdx.x >> 7) - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
            tq = lane & 3;
  const float sl2 = d.scale * DDP_LOG2E;
  const unsigned kaddr = smem_u32(Ks) + (unsigned)wgi * 64u * 128u, vaddr = smem_u32(Vs) + (unsigned)wgi * 64u * 128u;
  int it = 0;  // streamed tiles consumed so far
  for (int r = 0;; r++) {
    const int t = w.tile(r);
    if (t < 0) break;
    const kspan k = key_span(d, t);
    const long long k0 = k.k0;
    float dk[CB][32], dv[CB][32];
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
      for (int i = 0; i < 32; i++) dk[cb][i] = dv[cb][i] = 0.f;
    const long long krow0 = k0 + wgi * 64 + warp * 16 + g;  // the thread's keys: krow0 and krow0 + 8
    tma::mbar_wait(bb.resident, r & 1);

    for (int qt = k.qt0; qt < k.nqt; qt++) {
      const int i = it + qt - k.qt0, s = i % NBUF;
      bb.wait_full(i);
      const unsigned qb_ = smem_u32(Qs + s * BBYTES), ob = smem_u32(Os + s * BBYTES);
      const float *l2 = L2s + s * BN, *dl = Dls + s * BN;
      const long long q0 = (long long)qt * BN;
      const bool need = d.causal && k0 + BM - 1 > q0;
      float sc[BN / 2], dp[BN / 2];
      scores2_waited(sc, kaddr, qb_, dp, vaddr, ob);
      if (qt == k.nqt - 1) release_resident(bb);
      dkv_tile(dv, dk, sc, dp, l2, dl, sl2, need, krow0, q0, tq, qb_, ob);
      release(bb, s);
    }
    it += k.nqt - k.qt0;
    store_acc((T7 *)a.p[ATTN_P_DK] + head_base(d, d.sk, k.bh), d.sk, krow0, T, Dh, dk, d.scale, tq);
    store_acc((T8 *)a.p[ATTN_P_DV] + head_base(d, d.sv, k.bh), d.sv, krow0, T, Dh, dv, 1.f, tq);
  }
}
#endif

// ------------------------------- dK, dV and dQ in one pass ---------------------------------------------
// ATTN_BWD_FUSED: the dK/dV kernel above, which also adds each query tile's share of dQ into the f32
// accumulator dq_acc (plan/op_slots.h: 64-row tiles, 8-column chunks, element (t, j) of a tile at
// ((j / 8) 64 + t % 64) 8 + j % 8), so S and dP are computed once instead of once per kernel (five products
// instead of seven). Per query tile, after the dV and dK products are issued:
//  - each consumer warpgroup stores its 64 keys' rows of dS^T (bf16, keys x queries) into one of two dS
//    buffers in the 128-byte swizzle, and both warpgroups meet at a named barrier;
//  - warpgroup w computes columns [NQ w, NQ w + NQ) (NQ = HD / 2) of the tile's dQ = scale dS K over all
//    BM keys, both operands read from shared memory transposed (MN-major), or (DDP_DQ_TURNS) all columns
//    of every other tile;
//  - it writes the piece (f32) into its staging buffer in the accumulator's chunk order, which makes the
//    piece one contiguous range of dq_acc, and arrives on the buffer's mbarrier; the producer warpgroup's
//    second warp adds the range into dq_acc by a bulk reduction (cp.reduce.async.bulk .add.f32) and, once
//    the TMA unit has read the buffer, releases it on a second mbarrier. Two staging buffers per
//    warpgroup, so a consumer waits for a buffer only if the reduction of two tiles back is still reading.
// The additions of different key blocks to one dQ tile meet in L2 in no fixed order, so dq_acc (and dQ) may
// differ in the last bits from run to run: the one non-deterministic kernel, chosen only when the schedule
// asks for it (compiler/model/layers/attention.c). ATTN_BWD_PREP zeroes dq_acc; ATTN_DQ_STORE writes dQ.
// Query tiles of 64 rows (BN; 128 would not fit the staging buffers). Smem: K, V (BM rows), Q, dO (NBUF x
// BN rows), two dS buffers (BM x BN bf16), four staging buffers (64 x NQ f32), lse and delta (NBUF x BN
// floats): DDP_SMEM = (2 BM + 2 NBUF BN) HD 2 + 4 BM BN + 1024 NQ + 8 NBUF BN + 1024 (d 64: three stages,
// 150016 bytes, 182784 taking turns; d 128: two, 231424).
#ifdef DDP_ENTRY_attn_bwd_fused
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS + 128, 1)
    ddp_attn_bwd_fused(const ddp_kargs a, const __grid_constant__ ddp_tmaps tm) {
  DDP_GRID_DEPENDENCY();
  using namespace ws;
  static_assert(NWG == 2 && BN == 64, "attention_tma: the fused backward has two consumer warpgroups, 64-query tiles");
#ifndef DDP_DQ_TURNS
#define DDP_DQ_TURNS 0
#endif
  // DDP_DQ_TURNS 1 (head dim 64, launch.c's default there): the warpgroups take turns, warpgroup (i & 1)
  // computing all columns of tile i's dQ; the other only hands over its dS rows (bar.arrive) and goes on,
  // so the two drift apart instead of meeting at every tile (3.17 against 3.28 ms on an H200, T 16384).
  // Otherwise each computes half the columns of every tile.
  constexpr bool TURNS = DDP_DQ_TURNS;
  static_assert(!TURNS || HD == 64, "attention_tma: the fused backward takes turns at head dim 64 only");
  constexpr int NQ = TURNS ? HD : HD / 2;  // dQ columns a warpgroup computes
  constexpr int DSBYTES = BM * BN * 2, STBYTES = 64 * NQ * 4;
  // the producer's second warp keeps 64-bit addresses for the reductions: 40 registers (24 spill), the
  // consumers 232 (40 x 128 + 232 x 256 <= 64 K), as in dK/dV
  constexpr int FUSED_PRODUCER_REGS = KEY_MAJOR_PRODUCER_REGS, FUSED_CONSUMER_REGS = KEY_MAJOR_CONSUMER_REGS;
  static_assert(2 * ABYTES + 2 * NBUF * BBYTES + 2 * DSBYTES + 4 * STBYTES + 8 * NBUF * BN + 1024 == DDP_SMEM,
                "DDP_SMEM does not match the fused backward's layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long barmem[NBARS];
  unsigned char *Ks = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Vs = Ks + ABYTES, *Qs = Vs + ABYTES, *Os = Qs + NBUF * BBYTES, *DSs = Os + NBUF * BBYTES;
  float *Sts = (float *)(DSs + 2 * DSBYTES);
  float *L2s = Sts + 4 * STBYTES / 4, *Dls = L2s + NBUF * BN;
  const dims d = dims_of(a);
  const long long T = d.T;
  const int Dh = (int)d.Dh;
  // one work tile per block (no DDP_PERSISTENT: launch.c); heavy (small k0) first when causal
  const kspan ks = key_span(d, blockIdx.x);
  const long long bh = ks.bh, k0 = ks.k0;
  const int qt0 = ks.qt0, nqt = ks.nqt;
  // staging buffer (w, b): dq_full when warpgroup w's 128 threads have written it, dq_empty when its
  // reduction has read it. Tile i goes to buffer b = i & 1 of both warpgroups (use i / 2 of the buffer), or
  // when they take turns to buffer (i / 2) & 1 of warpgroup i & 1 (use i / 4).
  __shared__ __align__(8) unsigned long long dqbar[8];
  const unsigned dq_full0 = smem_u32(&dqbar[0]), dq_empty0 = smem_u32(&dqbar[4]);
  if (threadIdx.x == 0)
    for (int k = 0; k < 4; k++) tma::mbar_init(dq_full0 + 8u * k, 128), tma::mbar_init(dq_empty0 + 8u * k, 1);
  const bars bb = init_bars(barmem, 33);  // the bytes and lane 0's announcement, then 32 lanes' statistics
  // The warpgroups' pieces of each dQ tile: columns [NQ w, NQ w + NQ) (all of them when taking turns), one
  // contiguous range of dq_acc each.
  const long long ntile = (T + 63) / 64;
  float *const acc_head = (float *)a.p[ATTN_P_DQACC] + bh * ntile * 64 * HD;

  if (threadIdx.x < 128) {  // the producer warpgroup: loads as in dK/dV (warp 0), the reductions (warp 1)
    tma::regs_dec<FUSED_PRODUCER_REGS>();
    if (threadIdx.x == 32) {
      for (int qt = qt0; qt < nqt; qt++) {
        const int i = qt - qt0, b = TURNS ? (i >> 1) & 1 : i & 1, use = TURNS ? i >> 2 : i >> 1;
        for (int w = TURNS ? (i & 1) : 0; w < (TURNS ? (i & 1) + 1 : 2); w++) {
          tma::mbar_wait(dq_full0 + 8u * (2 * w + b), use & 1);
          tma::bulk_reduce_add_f32(acc_head + (long long)qt * 64 * HD + (TURNS ? 0 : w * NQ * 64),
                                   smem_u32(Sts + (2 * w + b) * (STBYTES / 4)), STBYTES);
          tma::bulk_commit();
          tma::bulk_wait_read<0>();
          tma::mbar_arrive(dq_empty0 + 8u * (2 * w + b));
        }
      }
      tma::bulk_wait<0>();
    }
    if (threadIdx.x < 32) produce_key_major(tm, bb, a, d, ks, 0, 0, Ks, Vs, Qs, Os, L2s, Dls);
    return;
  }

  tma::regs_inc<FUSED_CONSUMER_REGS>();
  T7 *dkh = (T7 *)a.p[ATTN_P_DK] + head_base(d, d.sk, bh);
  T8 *dvh = (T8 *)a.p[ATTN_P_DV] + head_base(d, d.sv, bh);
  const int wgi = (threadIdx.x >> 7) - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
            tq = lane & 3;
  float dk[CB][32], dv[CB][32];
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i++) dk[cb][i] = dv[cb][i] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;
  const long long krow0 = k0 + wgi * 64 + warp * 16 + g;  // the thread's keys: krow0 and krow0 + 8
  const int kr = wgi * 64 + warp * 16 + g;                // their rows in the block's dS^T
  const unsigned kaddr = smem_u32(Ks) + (unsigned)wgi * 64u * 128u, vaddr = smem_u32(Vs) + (unsigned)wgi * 64u * 128u;
  // dQ's operands: dS (all BM keys) and K (keys x head dim, MN-major) from column NQ wgi (a 64-column block
  // or half of one), or all of it when the warpgroups take turns
  const unsigned kq = smem_u32(Ks) + (TURNS ? 0u : NQ == 64 ? (unsigned)wgi * BM * 128u : (unsigned)wgi * 64u);
  // Each iteration ends with the next tile's S and dP on the tensor cores while this tile's dQ is staged and
  // reduced (at head dim 128 the registers do not allow it: there the scores follow the staging); nothing
  // is in flight across the loop's back edge, where ptxas would serialise the wgmmas.
  constexpr bool PIPELINE = HD == 64;
  float dq[NQ / 2];
  auto stage_dq = [&](int i) {  // tile qt0 + i: times scale into the staging buffer, for the reducer
    const int b = TURNS ? (i >> 1) & 1 : i & 1, use = TURNS ? i >> 2 : i >> 1;
    if (use > 0) tma::mbar_wait(dq_empty0 + 8u * (2 * wgi + b), (use - 1) & 1);
    float *st = Sts + (wgi * 2 + b) * (STBYTES / 4);
#pragma unroll
    for (int e = 0; e < NQ / 2; e += 2) {  // rows warp 16 + g (+ 8), columns 8 (e / 4) + 2 tq (+ 1)
      const int row = warp * 16 + g + ((e & 2) ? 8 : 0);
      *(float2 *)(st + ((e >> 2) * 64 + row) * 8 + 2 * tq) = make_float2(dq[e] * d.scale, dq[e + 1] * d.scale);
    }
    fence_async_smem();
    tma::mbar_arrive(dq_full0 + 8u * (2 * wgi + b));
  };
  float sc[BN / 2], dp[BN / 2];
  auto issue_scores = [&](int i) {  // S^T = K Q^T and dP^T = V dO^T of tile qt0 + i, one wgmma group
    bb.wait_full(i);
    const int s = i % NBUF;
    wg_fence();
    scores(sc, kaddr, smem_u32(Qs + s * BBYTES));
    scores(dp, vaddr, smem_u32(Os + s * BBYTES));
    wg_commit();
  };
  tma::mbar_wait(bb.resident, 0);
  if (PIPELINE && qt0 < nqt) issue_scores(0);
  wg_wait<0>();

  for (int qt = qt0; qt < nqt; qt++) {
    const int i = qt - qt0, s = i % NBUF;
    if (!PIPELINE) {
      issue_scores(i);
      wg_wait<0>();
    }
    const unsigned qb_ = smem_u32(Qs + s * BBYTES), ob = smem_u32(Os + s * BBYTES);
    unsigned char *ds = DSs + (i & 1) * DSBYTES;
    const float *l2 = L2s + s * BN, *dl = Dls + s * BN;
    const long long q0 = (long long)qt * BN;
    const bool need = d.causal && k0 + BM - 1 > q0;
    reg_fence(sc);
    reg_fence(dp);
    // masked (causal, the diagonal tiles only: a branch, not a predicate per element): query q0 + 2 tq +
    // acc_col(e) before the key krow0 (+ 8)
    // (elements e, e + 1 are the columns qc, qc + 1: their lse and delta are one 8-byte load each)
    if (need) {
      const int lim = clamp_int(krow0 - q0 - 2 * tq, -16, BN + 16);
#pragma unroll
      for (int e = 0; e < BN / 2; e += 2) {
        const int qc = acc_col(e) + tq * 2;
        const float2 lv = *(const float2 *)(l2 + qc), dv2 = *(const float2 *)(dl + qc);
        float p0 = ex2(fmaf(sc[e], sl2, -lv.x)), p1 = ex2(fmaf(sc[e + 1], sl2, -lv.y));
        if (acc_col(e) < lim + ((e & 2) ? 8 : 0)) p0 = 0.f;
        if (acc_col(e + 1) < lim + ((e & 2) ? 8 : 0)) p1 = 0.f;
        sc[e] = p0, sc[e + 1] = p1;
        dp[e] = p0 * (dp[e] - dv2.x), dp[e + 1] = p1 * (dp[e + 1] - dv2.y);
      }
    } else {
#pragma unroll
      for (int e = 0; e < BN / 2; e += 2) {
        const int qc = acc_col(e) + tq * 2;
        const float2 lv = *(const float2 *)(l2 + qc), dv2 = *(const float2 *)(dl + qc);
        const float p0 = ex2(fmaf(sc[e], sl2, -lv.x)), p1 = ex2(fmaf(sc[e + 1], sl2, -lv.y));
        sc[e] = p0, sc[e + 1] = p1;
        dp[e] = p0 * (dp[e] - dv2.x), dp[e + 1] = p1 * (dp[e + 1] - dv2.y);
      }
    }
    unsigned pa[BN / 16][4], sa[BN / 16][4];
    pack_p(pa, sc);
    pack_p(sa, dp);
#pragma unroll
    for (int cb = 0; cb < CB; cb++) reg_fence(dv[cb]), reg_fence(dk[cb]);
    wg_fence();
    pv(dv, pa, ob);
    pv(dk, sa, qb_);
    wg_commit();
    // dS^T rows kr, kr + 8 into the swizzled keys x queries tile (query chunk 2 kk, 2 kk + 1) while those run;
    // taking turns, the buffer was last read by the other warpgroup's dQ of tile i - 2
    if (TURNS && (i & 1) != wgi && i >= 2) tma::named_sync(3 + (i & 1), 256);
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      *(unsigned *)(ds + swz<BM>(kr, 2 * kk) + 4 * tq) = sa[kk][0];
      *(unsigned *)(ds + swz<BM>(kr + 8, 2 * kk) + 4 * tq) = sa[kk][1];
      *(unsigned *)(ds + swz<BM>(kr, 2 * kk + 1) + 4 * tq) = sa[kk][2];
      *(unsigned *)(ds + swz<BM>(kr + 8, 2 * kk + 1) + 4 * tq) = sa[kk][3];
    }
    fence_async_smem();
    // dQ of the tile: both warpgroups' dS rows must be in. Taking turns, the other warpgroup hands its rows
    // over (bar.arrive on FULL(b)) and goes on; the one computing dQ says when it is done reading (EMPTY(b))
    const bool mine = !TURNS || (i & 1) == wgi;
    if (!TURNS) tma::named_sync(1, 256);
    else if (mine) tma::named_sync(1 + (i & 1), 256);
    else tma::named_arrive(1 + (i & 1), 256);
    if (mine) {
      const unsigned alo = desc_lo(smem_u32(ds), BM * 128u), blo = desc_lo(kq, BM * 128u);
      reg_fence(dq);
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < BM / 16; kk++)
        wgmma_ss_tt(dq, desc<1024>(alo + ((unsigned)kk * 16u * 128u >> 4)), desc<1024>(blo + ((unsigned)kk * 16u * 128u >> 4)), kk > 0);
      wg_commit();
      wg_wait<1>();  // dV and dK are done with the stage: release it while dQ runs
    } else {
      wg_wait<0>();
    }
#pragma unroll
    for (int cb = 0; cb < CB; cb++) reg_fence(dv[cb]), reg_fence(dk[cb]);
    release(bb, s);
    if (PIPELINE && qt + 1 < nqt) {  // the next tile's scores run while this tile's dQ (done) is staged
      issue_scores(i + 1);
      if (mine) wg_wait<1>();
    } else {
      wg_wait<0>();
    }
    if (!mine) {  // taking turns, not this warpgroup's tile
      wg_wait<0>();
      continue;
    }
    reg_fence(dq);
    if (TURNS && i + 2 < nqt - qt0) tma::named_arrive(3 + (i & 1), 256);  // dS buffer (i & 1) read
    stage_dq(i);
    if (PIPELINE) wg_wait<0>();
  }
  store_acc(dkh, d.sk, krow0, T, Dh, dk, d.scale, tq);
  store_acc(dvh, d.sv, krow0, T, Dh, dv, 1.f, tq);
}
#endif

// ---------------------------------------- dQ -----------------------------------------------------
// attention_wgmma.cu's dQ (queries resident, key tiles streamed up to the diagonal when causal) with Q, dO by
// TMA once and K, V by TMA per stage; each consumer thread reads its two rows' lse and delta itself.
// Smem: Q, dO (BM rows), K, V (NBUF x BN rows each): DDP_SMEM = (2 BM + 2 NBUF BN) HD 2 + 1024.
#ifdef DDP_ENTRY_attn_bwd_dq
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS + 128, 1)
    ddp_attn_bwd_dq(const ddp_kargs a, const __grid_constant__ ddp_tmaps tm) {
  DDP_GRID_DEPENDENCY();
  using namespace ws;
  static_assert(2 * ABYTES + 2 * NBUF * BBYTES + 1024 == DDP_SMEM, "DDP_SMEM does not match the TMA dQ layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long barmem[NBARS];
  unsigned char *Qs = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Os = Qs + ABYTES, *Ks = Os + ABYTES, *Vs = Ks + NBUF * BBYTES;
  const dims d = dims_of(a);
  const long long T = d.T;
  const int Dh = (int)d.Dh;
  const work w = work_of(d, (T + BM - 1) / BM);
  const bars bb = init_bars(barmem, 1);

  if (threadIdx.x < 128) {  // the producer warpgroup
    produce_query_major(tm, bb, d, w, Qs, Os, Ks, Vs);
    return;
  }

  tma::regs_inc<CONSUMER_REGS>();
  const int wgi = (threadIdx.x >> 7) - 1, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2,
            tq = lane & 3;
  const float sl2 = d.scale * DDP_LOG2E;
  const unsigned qaddr = smem_u32(Qs) + (unsigned)wgi * 64u * 128u, oaddr = smem_u32(Os) + (unsigned)wgi * 64u * 128u;
  int it = 0;  // streamed tiles consumed so far
  for (int r = 0;; r++) {
    const int t = w.tile(r);
    if (t < 0) break;
    const qspan q = query_span(d, t);
    const long long q0 = q.q0, bh = q.bh;
    const int nkt = q.nkt;
    const float *lse = (const float *)a.p[ATTN_P_LSE] + bh * T, *delta = (const float *)a.p[ATTN_P_DELTA] + bh * T;
    const long long row0 = q0 + wgi * 64 + warp * 16 + g;  // the thread's rows: row0 and row0 + 8
    float l2[2], dl[2];
    dq_row_stats(l2, dl, lse, delta, row0, T);
    float dq[CB][32];
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
      for (int i = 0; i < 32; i++) dq[cb][i] = 0.f;
    tma::mbar_wait(bb.resident, r & 1);

    for (int j = 0; j < nkt; j++) {
      const int s = (it + j) % NBUF;
      bb.wait_full(it + j);
      const unsigned kb = smem_u32(Ks + s * BBYTES), vb = smem_u32(Vs + s * BBYTES);
      const long long k0 = (long long)j * BN;
      const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0 + wgi * 64);
      float sc[BN / 2], dp[BN / 2];
      scores2_waited(sc, qaddr, kb, dp, oaddr, vb);
      if (j == nkt - 1) release_resident(bb);
      dq_tile(dq, sc, dp, l2, dl, sl2, need, d.causal, T, k0, row0, tq, kb);
      release(bb, s);
    }
    it += nkt;
    store_acc((T9 *)a.p[ATTN_P_DQ] + head_base(d, d.sq, bh), d.sq, row0, T, Dh, dq, d.scale, tq);
  }
}
#endif

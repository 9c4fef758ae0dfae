// templates/attention_wgmma.cu: ATTN_FWD, ATTN_BWD_DKV and ATTN_BWD_DQ on Hopper (sm_90a) tensor cores:
// wgmma.mma_async, each warpgroup (128 threads) owning 64 rows of the block's tile (queries; keys in dK/dV).
// Selected by compiler/codegen/launch.c for bf16 activations, head dims 64 and 128 (DDP_HEAD_DIM) and a
// sm_90a target; the Ampere kernels (attention_mma.cu) stay for other GPUs and head dims and for the fused
// inverse-RoPE backward, and DDP_TUNE_{FWD,DKV,DQ}_WGMMA=2 picks them on Hopper too. Same semantics,
// arguments and determinism (no atomics) as attention_mma.cu; ATTN_BWD_PREP stays in attention.cuh.
//
// Forward, per block: BM = 64 * (DDP_WARPS / 4) query rows, streamed K/V tiles of BN keys (64 or 128), in NBUF
// stages (tile j+1 loads while tile j computes); the backward kernels below say their own layout. Shared
// tiles are in wgmma's 128-byte-swizzle layout: a 64-column (128-byte) block of the head dim at a time, row
// r's 16-byte chunk c stored at chunk c ^ (r % 8), 8-row groups 1024 bytes apart, so one descriptor per
// 16-wide k step reads them with no bank conflict. Both products take their B operand straight from shared
// memory: S = Q K^T with Q (A) and K (B) K-major; O += P V with P (A) from the registers that hold the scores
// (the accumulator layout of wgmma is its A-fragment layout, as with mma.sync) and V as an MN-major
// (transposed) B. Scores stay in raw units; the online softmax runs in the log2 domain, as attention_mma.cu.
// Loads are 16-byte cp.async with zero fill past T and Dh (plain loads where a row is not 16-byte aligned);
// shared writes are made visible to the tensor cores' async proxy (fence.proxy.async) before the barrier that
// publishes them.
//
// The warp-specialised versions with TMA loads (attention_tma.cu) take over wherever the tensors allow tensor
// maps (launch.c says when); this file keeps the rest, and the benchmarks' variants.
// Not here: overlapping the next tile's scores with this tile's softmax. A three-stage version that issued the next
// scores before the softmax (FlashAttention-3's intra-warpgroup overlap) measured slower on an H200 (d 64, T
// 16384: 3.31 ms against 2.52 for this one then): it needs 30 more registers a thread, which halves the
// blocks per SM, and ptxas serialises the wgmma pipeline when the scores' accumulators are read while the P V
// group is still open.
//
// Spec (launch.c): DDP_HEAD_DIM 64 | 128, DDP_WARPS 4 | 8, DDP_BM = 16 * DDP_WARPS, DDP_BN 64 | 128, DDP_MINB
// (blocks per SM asked of the register allocator), DDP_NBUF, DDP_SMEM (forward (BM + 2 NBUF BN) HD 2 + 1024: 1 KiB of slack
// to align the tiles to 1024 bytes; the backward kernels' sums are next to them).
#include "wgmma.cuh"


// ---------------------------------------- forward ------------------------------------------------
#ifdef DDP_ENTRY_attn_fwd
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace wg;
  constexpr int QBYTES = ABYTES, KVBYTES = BBYTES;
  static_assert(QBYTES + 2 * NBUF * KVBYTES + 1024 == DDP_SMEM, "DDP_SMEM does not match the wgmma forward layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char *Qs = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Ks = Qs + QBYTES, *Vs = Ks + NBUF * KVBYTES;
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
  const int wgi = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const bool aq = async_ok(qh, d.sq, Dh), ak = async_ok(kh, d.sk, Dh), av = async_ok(vh, d.sv, Dh);
  const long long kend = d.causal ? (q0 + BM < T ? q0 + BM : T) : T;
  const int nkt = (int)((kend + BN - 1) / BN);

  load_tile<BM>(Qs, qh, d.sq, q0, T, Dh, aq);
  load_tile<BN>(Ks, kh, d.sk, 0, T, Dh, ak);
  load_tile<BN>(Vs, vh, d.sv, 0, T, Dh, av);
  cp_commit();

  float o[CB][32];
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i++) o[cb][i] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float sl2 = d.scale * DDP_LOG2E;
  const long long row0 = q0 + wgi * 64 + warp * 16 + g;  // the thread's rows: row0 and row0 + 8
  const unsigned qaddr = smem_u32(Qs) + (unsigned)wgi * 64u * 128u;

  for (int j = 0; j < nkt; j++) {
    const int buf = j % NBUF, nxt = (j + 1) % NBUF;
    if (j + 1 < nkt) {  // tile j+1 loads while tile j computes
      load_tile<BN>(Ks + nxt * KVBYTES, kh, d.sk, (long long)(j + 1) * BN, T, Dh, ak);
      load_tile<BN>(Vs + nxt * KVBYTES, vh, d.sv, (long long)(j + 1) * BN, T, Dh, av);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    fence_async_smem();
    __syncthreads();
    float s[BN / 2];
    scores_waited(s, qaddr, smem_u32(Ks + buf * KVBYTES));

    const long long k0 = (long long)j * BN;
    const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0 + wgi * 64);
    fwd_tile(o, m, l, s, sl2, need, d.causal, T, k0, row0, tq, smem_u32(Vs + buf * KVBYTES));
    stage_done();
  }

  fwd_store(o, m, l, d.scale, lse, bh * T, oh, d.so, row0, T, Dh, tq);
}
#endif

// ---------------------------------------- dK, dV -------------------------------------------------
// Block: BM = 64 keys per warpgroup, K and V resident; loop over query tiles of BN rows (from the diagonal
// when causal), Q and dO in NBUF stages with their lse (log2 units) and delta. Per tile, per warpgroup:
// S^T = K Q^T and dP^T = V dO^T (two wgmma groups of one commit), P^T = 2^(S^T scale log2e - lse log2e)
// (0 above the diagonal), dS^T = P^T (dP^T - delta); then dV += P^T dO and dK += dS^T Q with P^T and dS^T
// as register A operands and dO, Q read MN-major. dK is stored times scale. Smem: K, V (BM rows), Q, dO (2 x
// BN rows each), lse and delta (NBUF x BN floats each): DDP_SMEM = (2 BM + 2 NBUF BN) HD 2 + 8 NBUF BN + 1024.
#ifdef DDP_ENTRY_attn_bwd_dkv
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_bwd_dkv(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace wg;
  static_assert(2 * ABYTES + 2 * NBUF * BBYTES + 8 * NBUF * BN + 1024 == DDP_SMEM, "DDP_SMEM does not match the wgmma dK/dV layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char *Ks = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Vs = Ks + ABYTES, *Qs = Vs + ABYTES, *Os = Qs + NBUF * BBYTES;
  float *L2s = (float *)(Os + NBUF * BBYTES), *Dls = L2s + NBUF * BN;
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
  const int wgi = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
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
  load_tile<BN>(Qs, qh, d.sq, (long long)qt0 * BN, T, Dh, aq);
  load_tile<BN>(Os, doh, d.so, (long long)qt0 * BN, T, Dh, ao);
  cp_commit();
  load_stats(0, (long long)qt0 * BN);

  float dk[CB][32], dv[CB][32];
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i++) dk[cb][i] = dv[cb][i] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;
  const long long krow0 = k0 + wgi * 64 + warp * 16 + g;  // the thread's keys: krow0 and krow0 + 8
  const unsigned kaddr = smem_u32(Ks) + (unsigned)wgi * 64u * 128u, vaddr = smem_u32(Vs) + (unsigned)wgi * 64u * 128u;

  for (int qt = qt0; qt < nqt; qt++) {
    const int buf = (qt - qt0) % NBUF, nxt = (qt - qt0 + 1) % NBUF;
    if (qt + 1 < nqt) {
      const long long nq0 = (long long)(qt + 1) * BN;
      load_tile<BN>(Qs + nxt * BBYTES, qh, d.sq, nq0, T, Dh, aq);
      load_tile<BN>(Os + nxt * BBYTES, doh, d.so, nq0, T, Dh, ao);
      cp_commit();
      load_stats(nxt, nq0);
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    fence_async_smem();
    __syncthreads();
    const unsigned qb_ = smem_u32(Qs + buf * BBYTES), ob = smem_u32(Os + buf * BBYTES);
    const float *l2 = L2s + buf * BN, *dl = Dls + buf * BN;
    const long long q0 = (long long)qt * BN;
    const bool need = d.causal && k0 + BM - 1 > q0;
    float s[BN / 2], dp[BN / 2];
    scores2_waited(s, kaddr, qb_, dp, vaddr, ob);
    dkv_tile(dv, dk, s, dp, l2, dl, sl2, need, krow0, q0, tq, qb_, ob);
    stage_done();
  }
  store_acc(dkh, d.sk, krow0, T, Dh, dk, d.scale, tq);
  store_acc(dvh, d.sv, krow0, T, Dh, dv, 1.f, tq);
}
#endif

// ---------------------------------------- dQ -----------------------------------------------------
// Block: BM = 64 query rows per warpgroup, Q and dO resident, each thread's two rows' lse (log2 units) and
// delta in registers; loop over key tiles of BN (up to the diagonal when causal), K and V in NBUF stages:
// S = Q K^T and dP = dO V^T (one commit), dS = P (dP - delta) with P = 2^(S scale log2e - lse log2e) (0 past
// T and above the diagonal), dQ += dS K with dS as the register A operand and K read MN-major; dQ is stored
// times scale. Smem: Q, dO (BM rows), K, V (NBUF x BN rows each): DDP_SMEM = (2 BM + 2 NBUF BN) HD 2 + 1024.
#ifdef DDP_ENTRY_attn_bwd_dq
extern "C" __global__ void __launch_bounds__(32 * DDP_WARPS, DDP_MINB) ddp_attn_bwd_dq(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace wg;
  static_assert(2 * ABYTES + 2 * NBUF * BBYTES + 1024 == DDP_SMEM, "DDP_SMEM does not match the wgmma dQ layout");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char *Qs = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
  unsigned char *Os = Qs + ABYTES, *Ks = Os + ABYTES, *Vs = Ks + NBUF * BBYTES;
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
  const int wgi = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, tq = lane & 3;
  const bool aq = async_ok(qh, d.sq, Dh), ak = async_ok(kh, d.sk, Dh), av = async_ok(vh, d.sv, Dh),
             ao = async_ok(doh, d.so, Dh);
  const long long kend = d.causal ? (q0 + BM < T ? q0 + BM : T) : T;
  const int nkt = (int)((kend + BN - 1) / BN);

  load_tile<BM>(Qs, qh, d.sq, q0, T, Dh, aq);
  load_tile<BM>(Os, doh, d.so, q0, T, Dh, ao);
  load_tile<BN>(Ks, kh, d.sk, 0, T, Dh, ak);
  load_tile<BN>(Vs, vh, d.sv, 0, T, Dh, av);
  cp_commit();
  const long long row0 = q0 + wgi * 64 + warp * 16 + g;  // the thread's rows: row0 and row0 + 8
  float l2[2], dl[2];
  dq_row_stats(l2, dl, lse, delta, row0, T);
  float dq[CB][32];
#pragma unroll
  for (int cb = 0; cb < CB; cb++)
#pragma unroll
    for (int i = 0; i < 32; i++) dq[cb][i] = 0.f;
  const float sl2 = d.scale * DDP_LOG2E;
  const unsigned qaddr = smem_u32(Qs) + (unsigned)wgi * 64u * 128u, oaddr = smem_u32(Os) + (unsigned)wgi * 64u * 128u;

  for (int j = 0; j < nkt; j++) {
    const int buf = j % NBUF, nxt = (j + 1) % NBUF;
    if (j + 1 < nkt) {
      load_tile<BN>(Ks + nxt * BBYTES, kh, d.sk, (long long)(j + 1) * BN, T, Dh, ak);
      load_tile<BN>(Vs + nxt * BBYTES, vh, d.sv, (long long)(j + 1) * BN, T, Dh, av);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
    fence_async_smem();
    __syncthreads();
    const unsigned kb = smem_u32(Ks + buf * BBYTES), vb = smem_u32(Vs + buf * BBYTES);
    const long long k0 = (long long)j * BN;
    const bool need = k0 + BN > T || (d.causal && k0 + BN - 1 > q0 + wgi * 64);
    float s[BN / 2], dp[BN / 2];
    scores2_waited(s, qaddr, kb, dp, oaddr, vb);
    dq_tile(dq, s, dp, l2, dl, sl2, need, d.causal, T, k0, row0, tq, kb);
    stage_done();
  }
  store_acc(dqh, d.sq, row0, T, Dh, dq, d.scale, tq);
}
#endif

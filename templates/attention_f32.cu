// templates/attention_f32.cu: FlashAttention-2 in f32 FFMA (no TF32) for ATTN_FWD, ATTN_BWD_DKV and
// ATTN_BWD_DQ; ATTN_BWD_PREP and the shared layout are in attention.cuh.
#include "attention.cuh"
#if defined(DDP_ATTN_MMA) && DDP_ATTN_MMA
#error "attention_f32.cu is the DDP_ATTN_MMA 0 (f32) path"
#endif

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
  DDP_GRID_DEPENDENCY();
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
  DDP_GRID_DEPENDENCY();
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
  DDP_GRID_DEPENDENCY();
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

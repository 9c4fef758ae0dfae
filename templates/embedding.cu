// templates/embedding.cu: token embedding (plan/ops.h EMBED_FWD / EMBED_BWD), reference
// runtime/ref/ref_embedding.c (ref_embed_fwd, ref_embed_bwd).
//   forward:  out[n,:] = table[tok[n],:]; a token outside [0, V) gives a NaN row (as the reference)
//   backward: dtable[v,:] (+)= sum over n with tok[n] = v of dout[n,:], in token order n ascending
// partial = 1 (the vocabulary-parallel embedding of tensor parallelism): the table holds vocabulary rows
// [vfirst, vfirst + V), a token t reads / accumulates local row t - vfirst, and a token outside them gives a
// ZERO row in the forward (another rank holds it; the ranks' rows are summed) and is skipped in the
// backward. partial = 0 is vfirst = 0 with NaN rows, the code path unchanged (one subtraction of 0).
// The backward is deterministic without atomics: block (x, y) owns columns [x*BLOCK, (x+1)*BLOCK) of the
// vocabulary rows [y*R, (y+1)*R) (R = ceil(V/gridDim.y)); it zeroes them (acc = 0), then scans every
// token in order and each thread adds its column of the matching rows, so each table element is summed
// by one thread in token order. Tokens are staged through shared memory in chunks.
// Types: T0 tokens (int), fwd T1 table, T2 out; bwd T1 dout, T2 dtable. Spec: DDP_BLOCK.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif

#ifdef DDP_ENTRY_embed_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_embed_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const int *tok = (const int *)a.p[EMBED_FWD_P_TOKENS];
  const T1 *table = (const T1 *)a.p[EMBED_FWD_P_TABLE];
  T2 *out = (T2 *)a.p[EMBED_FWD_P_OUT];
  const long long N = a.i[EMBED_FWD_I_N], D = a.i[EMBED_FWD_I_D], V = a.i[EMBED_FWD_I_V];
  const bool partial = a.i[EMBED_FWD_I_PARTIAL] != 0;
  const long long vf = partial ? a.i[EMBED_FWD_I_VFIRST] : 0;
  const float miss = partial ? 0.f : __int_as_float(0x7fc00000);  // another rank's token : an invalid one
  constexpr int W = 4;
  const bool vec = D % W == 0 && ddp_pack_ok<T1, W>(table) && ddp_pack_ok<T2, W>(out);
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    const long long t = (long long)tok[n] - vf;
    const bool ok = t >= 0 && t < V;
    for (long long c = (long long)threadIdx.x * W; c < D; c += (long long)blockDim.x * W) {
      float v[W];
      if (ok) {
        ddp_load_nb<T1, W>(table + t * D, c, D, v, vec);
      } else {
#pragma unroll
        for (int e = 0; e < W; e++) v[e] = miss;
      }
      ddp_store_nb<T2, W>(out + n * D, c, D, v, vec);
    }
  }
}
#endif

#ifdef DDP_ENTRY_embed_bwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_embed_bwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const int *tok = (const int *)a.p[EMBED_BWD_P_TOKENS];
  const T1 *dout = (const T1 *)a.p[EMBED_BWD_P_DOUT];
  T2 *dtab = (T2 *)a.p[EMBED_BWD_P_DTABLE];
  const long long N = a.i[EMBED_BWD_I_N], D = a.i[EMBED_BWD_I_D], V = a.i[EMBED_BWD_I_V];
  const bool acc = a.i[EMBED_BWD_I_ACC] != 0;
  const long long vf = a.i[EMBED_BWD_I_PARTIAL] ? a.i[EMBED_BWD_I_VFIRST] : 0;  // tokens [vf, vf + V) are ours
  const long long c = (long long)blockIdx.x * DDP_BLOCK + threadIdx.x;
  const long long R = (V + gridDim.y - 1) / gridDim.y;
  const long long v0 = (long long)blockIdx.y * R, v1 = v0 + R < V ? v0 + R : V;
  if (v0 >= v1) return;
  const bool col = c < D;
  if (!acc && col)
    for (long long v = v0; v < v1; v++) dtab[v * D + c] = ddp_to<T2>(0.f);
  __shared__ int hit[DDP_BLOCK];  // token index n of the matching rows of this chunk, in order
  __shared__ int nhit;
  for (long long base = 0; base < N; base += DDP_BLOCK) {
    const long long n = base + threadIdx.x;
    const long long t = n < N ? (long long)tok[n] - vf : -1;  // local row; v0 >= 0, so -1 never matches
    const bool m = t >= v0 && t < v1;
    // ordered compaction: warp ballots, then a prefix over the warps (fixed order)
    const unsigned bal = __ballot_sync(DDP_FULL, m);
    __shared__ int wcount[DDP_BLOCK / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) wcount[w] = __popc(bal);
    __syncthreads();
    if (threadIdx.x == 0) {
      int s = 0;
      for (int i = 0; i < DDP_BLOCK / 32; i++) {
        const int k = wcount[i];
        wcount[i] = s;
        s += k;
      }
      nhit = s;
    }
    __syncthreads();
    if (m) hit[wcount[w] + __popc(bal & ((1u << lane) - 1u))] = (int)(n - base);
    __syncthreads();
    const int cnt = nhit;
    if (col)
      for (int i = 0; i < cnt; i++) {
        const long long nn = base + hit[i];
        const long long v = (long long)tok[nn] - vf;
        const long long o = v * D + c;
        dtab[o] = ddp_to<T2>(ddp_f(dtab[o]) + ddp_f(dout[nn * D + c]));
      }
    __syncthreads();
  }
}
#endif

// templates/rows.cuh: the row-per-group layout shared by the normalisation kernels (rmsnorm, layernorm).
// A row of D elements is held in registers by a group of DDP_GROUP threads (a power of two <= 32, or the
// whole block), each owning DDP_VPT packs of DDP_VEC consecutive elements: pack k of lane l starts at
// column (l + k*DDP_GROUP)*DDP_VEC. DDP_BLOCK/DDP_GROUP rows are processed at once per block.
// Specialisation (compiler/kernel_launch.c): DDP_BLOCK, DDP_GROUP, DDP_VEC, DDP_VPT.
#pragma once
#include "common.cuh"

#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif
#ifndef DDP_GROUP
#define DDP_GROUP 256
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif
#ifndef DDP_VPT
#define DDP_VPT 4
#endif

namespace rows {
constexpr int G = DDP_GROUP, V = DDP_VEC, K = DDP_VPT, RPB = DDP_BLOCK / DDP_GROUP;
static_assert(G == DDP_BLOCK || (G <= 32 && (G & (G - 1)) == 0), "DDP_GROUP: power of two <= 32, or the block");
static_assert(DDP_BLOCK % G == 0, "DDP_BLOCK must be a multiple of DDP_GROUP");

__device__ __forceinline__ int lane() { return threadIdx.x % G; }
__device__ __forceinline__ int group() { return threadIdx.x / G; }
__device__ __forceinline__ long long col(int k) { return (long long)(lane() + k * G) * V; }

// Sum over the row's group (every member gets it). sh: >= 32 floats, used only when G is the block.
__device__ __forceinline__ float sum(float v, float *sh) {
  if constexpr (G == DDP_BLOCK && G > 32) {
    return ddp_block_sum(v, sh);
  } else {
    return ddp_group_sum<(G > 32 ? 32 : G)>(v);
  }
}

template <class T> __device__ __forceinline__ bool vec_ok(const T *p, long long D) {
  return p == nullptr || (D % V == 0 && ddp_pack_ok<T, V>(p));
}

// row[k][e] = p[off + col(k) + e] for columns < D, else 0.
template <class T>
__device__ __forceinline__ void load(const T *p, long long off, long long D, float (&r)[K][V], bool vec) {
#pragma unroll
  for (int k = 0; k < K; k++) {
    const long long c = col(k);
    if (c < D) {
      ddp_load_nb<T, V>(p + off, c, D, r[k], vec);
    } else {
#pragma unroll
      for (int e = 0; e < V; e++) r[k][e] = 0.f;
    }
  }
}
// Load or a constant when p is null.
template <class T>
__device__ __forceinline__ void load_or(const T *p, long long D, float fill, float (&r)[K][V], bool vec) {
  if (p) {
    load(p, 0, D, r, vec);
  } else {
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
      for (int e = 0; e < V; e++) r[k][e] = col(k) + e < D ? fill : 0.f;
  }
}
// p[off + col] (+)= r for columns < D.
template <class T>
__device__ __forceinline__ void store(T *p, long long off, long long D, float (&r)[K][V], bool vec, bool acc) {
#pragma unroll
  for (int k = 0; k < K; k++) {
    const long long c = col(k);
    if (c < D) {
      if (acc) {
        float o[V];
        ddp_load_nb<T, V>(p + off, c, D, o, vec);
#pragma unroll
        for (int e = 0; e < V; e++) o[e] += r[k][e];
        ddp_store_nb<T, V>(p + off, c, D, o, vec);
      } else {
        ddp_store_nb<T, V>(p + off, c, D, r[k], vec);
      }
    }
  }
}

// Partial-table chunk c of N rows split into P chunks of ceil(N/P) rows: [lo, hi).
__device__ __forceinline__ void chunk(long long N, long long P, long long c, long long &lo, long long &hi) {
  if (P < 1) P = 1;
  const long long r = (N + P - 1) / P;
  lo = c * r < N ? c * r : N;
  hi = lo + r < N ? lo + r : N;
}

// Adds every group's acc[][] (in group order) and writes the block's sum to out[0..D) (f32 table row).
// sh: G*K*V floats. With one group per block the registers go straight out.
__device__ __forceinline__ void write_partial(float *out, long long D, float (&acc)[K][V], float *sh) {
  if (out == nullptr) return;
  if constexpr (RPB == 1) {
    store(out, 0, D, acc, ddp_pack_ok<float, V>(out) && D % V == 0, false);
  } else {
    for (int g = 0; g < RPB; g++) {
      if (group() == g) {
#pragma unroll
        for (int k = 0; k < K; k++)
#pragma unroll
          for (int e = 0; e < V; e++) {
            const int s = (lane() + k * G) * V + e;
            sh[s] = g == 0 ? acc[k][e] : sh[s] + acc[k][e];
          }
      }
      __syncthreads();
    }
    for (long long c = threadIdx.x; c < D; c += blockDim.x) out[c] = sh[c];
    __syncthreads();
  }
}
}  // namespace rows

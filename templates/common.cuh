// templates/common.cuh: what every kernel template shares. The ddp_kargs mirror of plan/ops.h (same
// layout: 12 pointers, 16 int64, 8 floats = 256 bytes, passed by value), the slot types (DDP_T<k> come
// from the specialisation written by compiler/kernel_launch.c; unused slots default to float), element
// conversions to and from float for float / __nv_bfloat16 / int, packed (vector) loads and stores of
// N elements, and deterministic warp/block reductions (fixed order: same input, same bits).
#pragma once
#include "op_slots.h" // plan/op_slots.h: the named argument slots (NVRTC gets -I<templates>/../plan)
#include <cuda_bf16.h>

// Programmatic dependent launch (runtime/cuda/kernels.c, DDP_PDL): the first statement of every kernel.
// It waits until the grid before it on the stream has completed and its writes are visible (a no-op when
// the launch asked for no overlap), then lets the grid after it be scheduled, whose blocks wait in turn. So
// a launch may overlap the previous kernel's tail, and nothing reads or writes memory before it is safe.
// tests/e2e/test_grid_dependency.sh checks that every kernel starts with it; the runtime overlaps only
// kernels of a module that exports ddp_grid_dependency, which a CUBIN built before the wait, or for a GPU
// older than sm_90 (no such launches), does not.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DDP_GRID_DEPENDENCY()                                   \
  do {                                                          \
    asm volatile("griddepcontrol.wait;\n" ::: "memory");          \
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); \
  } while (0)
extern "C" __device__ const int ddp_grid_dependency = 1;
#else
#define DDP_GRID_DEPENDENCY() \
  do {                        \
  } while (0)
#endif

struct ddp_kargs {
  void *p[12];
  long long i[16];
  float f[8];
};
static_assert(sizeof(ddp_kargs) == 256, "ddp_kargs must mirror plan/ops.h");

#ifndef DDP_T0
#define DDP_T0 float
#endif
#ifndef DDP_T1
#define DDP_T1 float
#endif
#ifndef DDP_T2
#define DDP_T2 float
#endif
#ifndef DDP_T3
#define DDP_T3 float
#endif
#ifndef DDP_T4
#define DDP_T4 float
#endif
#ifndef DDP_T5
#define DDP_T5 float
#endif
#ifndef DDP_T6
#define DDP_T6 float
#endif
#ifndef DDP_T7
#define DDP_T7 float
#endif
#ifndef DDP_T8
#define DDP_T8 float
#endif
#ifndef DDP_T9
#define DDP_T9 float
#endif
typedef DDP_T0 T0;
typedef DDP_T1 T1;
typedef DDP_T2 T2;
typedef DDP_T3 T3;
typedef DDP_T4 T4;
typedef DDP_T5 T5;
typedef DDP_T6 T6;
typedef DDP_T7 T7;
typedef DDP_T8 T8;
typedef DDP_T9 T9;

typedef __nv_bfloat16 bf16;
#define DDP_FULL 0xffffffffu
#define DDP_LOG2E 1.4426950408889634f
#define DDP_LN2 0.6931471805599453f
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#define DDP_NAN __int_as_float(0x7fc00000)

// ---- element conversions -------------------------------------------------------------------------
__device__ __forceinline__ float ddp_f(float x) { return x; }
__device__ __forceinline__ float ddp_f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float ddp_f(int x) { return (float)x; }
template <class T> __device__ __forceinline__ T ddp_to(float x);
template <> __device__ __forceinline__ float ddp_to<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 ddp_to<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ int ddp_to<int>(float x) { return (int)x; }

template <class T> __device__ __forceinline__ float ddp_ld(const T *p, long long i) { return ddp_f(p[i]); }
template <class T> __device__ __forceinline__ void ddp_st(T *p, long long i, float v) { p[i] = ddp_to<T>(v); }

// ---- packed access: N consecutive elements as one (up to 16-byte) access -------------------------
template <class T, int N> struct ddp_pack_align {
  static constexpr int bytes = (int)sizeof(T) * N;
  static constexpr int value = bytes >= 16 ? 16 : bytes >= 8 ? 8 : bytes >= 4 ? 4 : (int)sizeof(T);
};
template <class T, int N> struct alignas(ddp_pack_align<T, N>::value) ddp_pack {
  T v[N];
};

// Is p (as an element pointer) aligned for ddp_pack<T,N>?
template <class T, int N> __device__ __forceinline__ bool ddp_pack_ok(const void *p) {
  return ((unsigned long long)p % ddp_pack_align<T, N>::value) == 0;
}

// Loads elements [i, i+N) of p into out[] as float; `vec` selects the packed path (caller checked
// alignment of p and that i is a multiple of N).
template <class T, int N>
__device__ __forceinline__ void ddp_load_n(const T *p, long long i, float (&out)[N], bool vec) {
  if (vec) {
    ddp_pack<T, N> k = *reinterpret_cast<const ddp_pack<T, N> *>(p + i);
#pragma unroll
    for (int e = 0; e < N; e++) out[e] = ddp_f(k.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < N; e++) out[e] = ddp_f(p[i + e]);
  }
}
template <class T, int N>
__device__ __forceinline__ void ddp_store_n(T *p, long long i, const float (&in)[N], bool vec) {
  if (vec) {
    ddp_pack<T, N> k;
#pragma unroll
    for (int e = 0; e < N; e++) k.v[e] = ddp_to<T>(in[e]);
    *reinterpret_cast<ddp_pack<T, N> *>(p + i) = k;
  } else {
#pragma unroll
    for (int e = 0; e < N; e++) p[i + e] = ddp_to<T>(in[e]);
  }
}
// Bounded variants: elements at or past `end` are neither read (0 returned) nor written.
template <class T, int N>
__device__ __forceinline__ void ddp_load_nb(const T *p, long long i, long long end, float (&out)[N], bool vec) {
  if (vec && i + N <= end) {
    ddp_load_n<T, N>(p, i, out, true);
  } else {
#pragma unroll
    for (int e = 0; e < N; e++) out[e] = i + e < end ? ddp_f(p[i + e]) : 0.f;
  }
}
template <class T, int N>
__device__ __forceinline__ void ddp_store_nb(T *p, long long i, long long end, const float (&in)[N], bool vec) {
  if (vec && i + N <= end) {
    ddp_store_n<T, N>(p, i, in, true);
  } else {
#pragma unroll
    for (int e = 0; e < N; e++)
      if (i + e < end) p[i + e] = ddp_to<T>(in[e]);
  }
}

// ---- reductions (deterministic) ------------------------------------------------------------------
__device__ __forceinline__ float ddp_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(DDP_FULL, v, o);
  return v;
}
__device__ __forceinline__ float ddp_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(DDP_FULL, v, o));
  return v;
}
// Sum over groups of W consecutive lanes (W a power of two <= 32): every lane gets its group's sum.
template <int W> __device__ __forceinline__ float ddp_group_sum(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(DDP_FULL, v, o);
  return v;
}
// Block-wide sum; every thread gets the total. sh: >= 32 floats of shared memory, reusable right after.
__device__ __forceinline__ float ddp_block_sum(float v, float *sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = ddp_warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  float r = lane < nw ? sh[lane] : 0.f;
  return ddp_warp_sum(r);
}
__device__ __forceinline__ float ddp_block_max(float v, float *sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = ddp_warp_max(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  float r = lane < nw ? sh[lane] : -INFINITY;
  return ddp_warp_max(r);
}
// Online softmax statistics (running max m, sum s of exp(x - m)), merged associatively.
__device__ __forceinline__ void ddp_ms_merge(float &m, float &s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty
  s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
  m = mn;
}
__device__ __forceinline__ void ddp_warp_ms(float &m, float &s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(DDP_FULL, m, o), s2 = __shfl_xor_sync(DDP_FULL, s, o);
    ddp_ms_merge(m, s, m2, s2);
  }
}
// sh: >= 64 floats.
__device__ __forceinline__ void ddp_block_ms(float &m, float &s, float *sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  ddp_warp_ms(m, s);
  __syncthreads();
  if (lane == 0) {
    sh[w] = m;
    sh[32 + w] = s;
  }
  __syncthreads();
  m = lane < nw ? sh[lane] : -INFINITY;
  s = lane < nw ? sh[32 + lane] : 0.f;
  ddp_warp_ms(m, s);
}

// Grid-stride helpers.
__device__ __forceinline__ long long ddp_gtid() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long ddp_gstride() { return (long long)gridDim.x * blockDim.x; }

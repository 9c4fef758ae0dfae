// templates/swiglu.cu: SwiGLU gate on the fused projection ab = [a | b] of shape [N, 2F]
// (plan/ops.h SWIGLU_FWD / SWIGLU_BWD), reference runtime/ref/ref_swiglu.c (ref_swiglu_fwd/_bwd).
//   forward:  h = silu(a) * b, silu(a) = a * sigmoid(a)
//   backward: da = dh * b * s * (1 + a*(1-s)), db = dh * silu(a), s = sigmoid(a) (dab may alias ab)
// Grid: x over packs of DDP_VEC columns, y over rows (grid-stride). Types: fwd T0 ab, T1 h;
// bwd T0 ab, T1 dh, T2 dab. Spec: DDP_BLOCK, DDP_VEC.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif

__device__ __forceinline__ float sigm(float x) { return 1.f / (1.f + __expf(-x)); }

#ifdef DDP_ENTRY_swiglu_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_swiglu_fwd(const ddp_kargs a) {
  const T0 *ab = (const T0 *)a.p[0];
  T1 *h = (T1 *)a.p[1];
  const long long N = a.i[0], F = a.i[1];
  constexpr int W = DDP_VEC;
  const bool vec = F % W == 0 && ddp_pack_ok<T0, W>(ab) && ddp_pack_ok<T1, W>(h);
  for (long long n = blockIdx.y; n < N; n += gridDim.y)
    for (long long c = ((long long)blockIdx.x * DDP_BLOCK + threadIdx.x) * W; c < F;
         c += (long long)gridDim.x * DDP_BLOCK * W) {
      float va[W], vb[W], o[W];
      ddp_load_nb<T0, W>(ab + n * 2 * F, c, F, va, vec);
      ddp_load_nb<T0, W>(ab + n * 2 * F + F, c, F, vb, vec);
#pragma unroll
      for (int e = 0; e < W; e++) o[e] = va[e] * sigm(va[e]) * vb[e];
      ddp_store_nb<T1, W>(h + n * F, c, F, o, vec);
    }
}
#endif

#ifdef DDP_ENTRY_swiglu_bwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_swiglu_bwd(const ddp_kargs a) {
  const T0 *ab = (const T0 *)a.p[0];
  const T1 *dh = (const T1 *)a.p[1];
  T2 *dab = (T2 *)a.p[2];
  const long long N = a.i[0], F = a.i[1];
  constexpr int W = DDP_VEC;
  const bool vec = F % W == 0 && ddp_pack_ok<T0, W>(ab) && ddp_pack_ok<T1, W>(dh) && ddp_pack_ok<T2, W>(dab);
  for (long long n = blockIdx.y; n < N; n += gridDim.y)
    for (long long c = ((long long)blockIdx.x * DDP_BLOCK + threadIdx.x) * W; c < F;
         c += (long long)gridDim.x * DDP_BLOCK * W) {
      float va[W], vb[W], g[W], da[W], db[W];
      ddp_load_nb<T0, W>(ab + n * 2 * F, c, F, va, vec);
      ddp_load_nb<T0, W>(ab + n * 2 * F + F, c, F, vb, vec);
      ddp_load_nb<T1, W>(dh + n * F, c, F, g, vec);
#pragma unroll
      for (int e = 0; e < W; e++) {
        const float s = sigm(va[e]);
        da[e] = g[e] * vb[e] * s * (1.f + va[e] * (1.f - s));
        db[e] = g[e] * va[e] * s;
      }
      ddp_store_nb<T2, W>(dab + n * 2 * F, c, F, da, vec);
      ddp_store_nb<T2, W>(dab + n * 2 * F + F, c, F, db, vec);
    }
}
#endif

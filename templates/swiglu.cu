// templates/swiglu.cu: SwiGLU gate on the fused projection ab = [a | b] of shape [N, 2F]
// (plan/ops.h SWIGLU_FWD / SWIGLU_BWD), reference runtime/ref/ref_swiglu.c (ref_swiglu_fwd/_bwd).
//   forward:  h = silu(a) * b, silu(a) = a * sigmoid(a)
//   backward: da = dh * b * s * (1 + a*(1-s)), db = dh * silu(a), s = sigmoid(a) (dab may alias ab)
// The [N, F] outputs are walked as one flat range of packs of DDP_VEC elements (a pack never crosses a
// row when F % DDP_VEC == 0; otherwise element by element), grid-stride, two packs per thread per
// iteration with every load issued before any arithmetic, so no block idles on a short row tail.
// Types: fwd T0 ab, T1 h; bwd T0 ab, T1 dh, T2 dab. Spec: DDP_BLOCK, DDP_VEC. 1-D grid.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif

__device__ __forceinline__ float sigm(float x) { return 1.f / (1.f + __expf(-x)); }

namespace swiglu {
constexpr int W = DDP_VEC, U = 2;
// Element i of the flat [N, F] range -> offsets of a (row n, col c) in ab ([N, 2F]) and in h ([N, F]).
__device__ __forceinline__ void at(long long i, long long F, long long &ia, long long &ih) {
  const long long n = i / F, c = i - n * F;
  ia = n * 2 * F + c;
  ih = i;
}
} // namespace swiglu

#ifdef DDP_ENTRY_swiglu_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_swiglu_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace swiglu;
  const T0 *ab = (const T0 *)a.p[SWIGLU_FWD_P_AB];
  T1 *h = (T1 *)a.p[SWIGLU_FWD_P_H];
  const long long N = a.i[SWIGLU_FWD_I_N], F = a.i[SWIGLU_FWD_I_F], total = N * F;
  if (F % W == 0 && ddp_pack_ok<T0, W>(ab) && ddp_pack_ok<T1, W>(h)) {
    const long long packs = total / W, step = ddp_gstride();
    for (long long p = ddp_gtid(); p < packs; p += U * step) {
      float va[U][W], vb[U][W];
      long long ia[U], ih[U];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (p + u * step < packs) {
          at((p + u * step) * W, F, ia[u], ih[u]);
          ddp_load_n<T0, W>(ab, ia[u], va[u], true);
          ddp_load_n<T0, W>(ab + F, ia[u], vb[u], true);
        }
#pragma unroll
      for (int u = 0; u < U; u++)
        if (p + u * step < packs) {
          float o[W];
#pragma unroll
          for (int e = 0; e < W; e++) o[e] = va[u][e] * sigm(va[u][e]) * vb[u][e];
          ddp_store_n<T1, W>(h, ih[u], o, true);
        }
    }
  } else {
    for (long long i = ddp_gtid(); i < total; i += ddp_gstride()) {
      long long ia, ih;
      at(i, F, ia, ih);
      const float x = ddp_f(ab[ia]), y = ddp_f(ab[ia + F]);
      h[ih] = ddp_to<T1>(x * sigm(x) * y);
    }
  }
}
#endif

#ifdef DDP_ENTRY_swiglu_bwd
__device__ __forceinline__ void swiglu_grad(float x, float y, float g, float &da, float &db) {
  const float s = sigm(x);
  da = g * y * s * (1.f + x * (1.f - s));
  db = g * x * s;
}
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_swiglu_bwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  using namespace swiglu;
  const T0 *ab = (const T0 *)a.p[SWIGLU_BWD_P_AB];
  const T1 *dh = (const T1 *)a.p[SWIGLU_BWD_P_DH];
  T2 *dab = (T2 *)a.p[SWIGLU_BWD_P_DAB];
  const long long N = a.i[SWIGLU_BWD_I_N], F = a.i[SWIGLU_BWD_I_F], total = N * F;
  if (F % W == 0 && ddp_pack_ok<T0, W>(ab) && ddp_pack_ok<T1, W>(dh) && ddp_pack_ok<T2, W>(dab)) {
    const long long packs = total / W, step = ddp_gstride();
    for (long long p = ddp_gtid(); p < packs; p += U * step) {
      float va[U][W], vb[U][W], vg[U][W];
      long long ia[U], ih[U];
#pragma unroll
      for (int u = 0; u < U; u++)
        if (p + u * step < packs) {
          at((p + u * step) * W, F, ia[u], ih[u]);
          ddp_load_n<T0, W>(ab, ia[u], va[u], true);
          ddp_load_n<T0, W>(ab + F, ia[u], vb[u], true);
          ddp_load_n<T1, W>(dh, ih[u], vg[u], true);
        }
#pragma unroll
      for (int u = 0; u < U; u++)
        if (p + u * step < packs) {
          float da[W], db[W];
#pragma unroll
          for (int e = 0; e < W; e++) swiglu_grad(va[u][e], vb[u][e], vg[u][e], da[e], db[e]);
          ddp_store_n<T2, W>(dab, ia[u], da, true);
          ddp_store_n<T2, W>(dab + F, ia[u], db, true);
        }
    }
  } else {
    for (long long i = ddp_gtid(); i < total; i += ddp_gstride()) {
      long long ia, ih;
      at(i, F, ia, ih);
      float da, db;
      swiglu_grad(ddp_f(ab[ia]), ddp_f(ab[ia + F]), ddp_f(dh[ih]), da, db);
      dab[ia] = ddp_to<T2>(da);
      dab[ia + F] = ddp_to<T2>(db);
    }
  }
}
#endif

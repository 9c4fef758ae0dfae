// templates/rope.cu: rotary position embedding in place (plan/ops.h ROPE), reference
// runtime/ref/ref_rope.c (ref_rope). Element (b,t,h,j) at x[(b*T+t)*stride + h*Dh + j]; the pair
// (2m, 2m+1) rotates by angle = fl32(t * inv_freq[m]) (negated when inverse):
//   x0' = x0 cos - x1 sin,  x1' = x0 sin + x1 cos.
// One block per (b,t) row (grid-stride over rows): the angle depends on (t, m) only, so the block computes
// the Dh/2 sines and cosines once (sincosf, full range reduction: angles reach T radians) into shared
// memory and applies them to all H heads of the row with 16-byte packed accesses where the row allows.
// Types: T0 x, T1 inv_freq (f32). Spec: DDP_BLOCK. Head dim <= 256.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif

#ifdef DDP_ENTRY_rope
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_rope(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  T0 *x = (T0 *)a.p[ROPE_P_X];
  const T1 *inv = (const T1 *)a.p[ROPE_P_INV_FREQ];
  const long long B = a.i[ROPE_I_B], T = a.i[ROPE_I_T], stride = a.i[ROPE_I_STRIDE];
  const int H = (int)a.i[ROPE_I_H], Dh = (int)a.i[ROPE_I_DH], half = Dh / 2;
  const float sign = a.i[ROPE_I_INVERSE] ? -1.f : 1.f;
  __shared__ float cs[128], sn[128];
  constexpr int W = 16 / (int)sizeof(T0); // elements per 16-byte pack (even)
  const bool vec = Dh % W == 0 && ddp_pack_ok<T0, W>(x) && (stride * (long long)sizeof(T0)) % 16 == 0;
  const int width = H * Dh;
  for (long long row = blockIdx.x; row < B * T; row += gridDim.x) {
    const long long t = row % T;
    __syncthreads(); // the previous row's readers are done with cs/sn
    for (int m = threadIdx.x; m < half; m += DDP_BLOCK) {
      float s, c;
      sincosf((float)t * ddp_f(inv[m]), &s, &c);
      cs[m] = c;
      sn[m] = s * sign;
    }
    __syncthreads();
    T0 *base = x + row * stride;
    if (vec) {
      for (int k = threadIdx.x * W; k < width; k += DDP_BLOCK * W) {
        float v[W];
        ddp_load_n<T0, W>(base, k, v, true);
        const int j0 = k % Dh;
#pragma unroll
        for (int e = 0; e < W; e += 2) {
          const int m = (j0 + e) >> 1;
          const float c = cs[m], s = sn[m], x0 = v[e], x1 = v[e + 1];
          v[e] = x0 * c - x1 * s;
          v[e + 1] = x0 * s + x1 * c;
        }
        ddp_store_n<T0, W>(base, k, v, true);
      }
    } else {
      for (int k = threadIdx.x; k < H * half; k += DDP_BLOCK) {
        const int h = k / half, m = k % half;
        T0 *p = base + h * Dh + 2 * m;
        const float c = cs[m], s = sn[m], x0 = ddp_f(p[0]), x1 = ddp_f(p[1]);
        p[0] = ddp_to<T0>(x0 * c - x1 * s);
        p[1] = ddp_to<T0>(x0 * s + x1 * c);
      }
    }
  }
}
#endif

// templates/rope.cu: rotary position embedding in place (plan/ops.h ROPE), reference
// runtime/ref/ref_rope.c (ref_rope). Element (b,t,h,j) at x[(b*T+t)*stride + h*Dh + j]; the pair
// (2m, 2m+1) rotates by angle = fl32(t * inv_freq[m]) (negated when inverse):
//   x0' = x0 cos - x1 sin,  x1' = x0 sin + x1 cos.
// One thread per pair, grid-stride; sincosf (full range reduction: angles reach T radians).
// Types: T0 x, T1 inv_freq (f32). Spec: DDP_BLOCK.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif

#ifdef DDP_ENTRY_rope
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_rope(const ddp_kargs a) {
  T0 *x = (T0 *)a.p[0];
  const T1 *inv = (const T1 *)a.p[1];
  const long long B = a.i[0], T = a.i[1], H = a.i[2], Dh = a.i[3], stride = a.i[4];
  const float sign = a.i[5] ? -1.f : 1.f;
  const long long half = Dh / 2, total = B * T * H * half;
  for (long long i = ddp_gtid(); i < total; i += ddp_gstride()) {
    const long long m = i % half, r = i / half;  // r = (b*T + t)*H + h
    const long long h = r % H, bt = r / H, t = bt % T;
    const float ang = (float)t * ddp_f(inv[m]);
    float s, c;
    sincosf(ang, &s, &c);
    s *= sign;
    T0 *p = x + bt * stride + h * Dh + 2 * m;
    const float x0 = ddp_f(p[0]), x1 = ddp_f(p[1]);
    p[0] = ddp_to<T0>(x0 * c - x1 * s);
    p[1] = ddp_to<T0>(x0 * s + x1 * c);
  }
}
#endif

// templates/elementwise.cu: elementwise ops (plan/ops.h CAST, ADD, SCALE, BIAS_ADD, RELU_FWD, RELU_BWD,
// SUM_CHUNKS), reference runtime/ref/ref_elementwise.c (ref_cast, ref_add, ref_scale, ref_bias_add,
// ref_relu_fwd, ref_relu_bwd, ref_sum_chunks).
//   CAST out = in; ADD out = a + b; SCALE x *= s; BIAS_ADD y[n,m] += b[m]; RELU_FWD y = max(x, 0) (NaN
//   kept); RELU_BWD dx (+)= y > 0 ? dy : 0; SUM_CHUNKS out[i] = scale * sum_{w<P} in[w*n + i], in f32 in
//   chunk order (the reference's order: same bits). Outputs may alias inputs element for element (SUM_CHUNKS:
//   out must not overlap in).
// Grid-stride over packs of DDP_VEC elements (16-byte accesses when aligned), scalar tail; SUM_CHUNKS
// packs only when every chunk starts aligned (n a multiple of DDP_VEC, in and out aligned).
// Types: the slots in ops.h order (CAST T0 in, T1 out; ADD T0 a, T1 b, T2 out; SCALE T0 x;
// BIAS_ADD T0 y, T1 b; RELU_FWD T0 x, T1 y; RELU_BWD T0 y, T1 dy, T2 dx; SUM_CHUNKS T0 in, T1 out).
// Spec: DDP_BLOCK, DDP_VEC.
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif
constexpr int W = DDP_VEC;
#define DDP_EW_LOOP(n) for (long long i = ddp_gtid() * W; i < (n); i += ddp_gstride() * W)

#ifdef DDP_ENTRY_cast
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_cast(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *in = (const T0 *)a.p[CAST_P_IN];
  T1 *out = (T1 *)a.p[CAST_P_OUT];
  const long long n = a.i[CAST_I_N];
  const bool vec = ddp_pack_ok<T0, W>(in) && ddp_pack_ok<T1, W>(out);
  DDP_EW_LOOP(n) {
    float x[W];
    ddp_load_nb<T0, W>(in, i, n, x, vec);
    ddp_store_nb<T1, W>(out, i, n, x, vec);
  }
}
#endif

#ifdef DDP_ENTRY_add
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_add(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[ADD_P_A];
  const T1 *y = (const T1 *)a.p[ADD_P_B];
  T2 *out = (T2 *)a.p[ADD_P_OUT];
  const long long n = a.i[ADD_I_N];
  const bool vec = ddp_pack_ok<T0, W>(x) && ddp_pack_ok<T1, W>(y) && ddp_pack_ok<T2, W>(out);
  DDP_EW_LOOP(n) {
    float u[W], v[W];
    ddp_load_nb<T0, W>(x, i, n, u, vec);
    ddp_load_nb<T1, W>(y, i, n, v, vec);
#pragma unroll
    for (int e = 0; e < W; e++) u[e] += v[e];
    ddp_store_nb<T2, W>(out, i, n, u, vec);
  }
}
#endif

#ifdef DDP_ENTRY_scale
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_scale(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  T0 *x = (T0 *)a.p[SCALE_P_X];
  const long long n = a.i[SCALE_I_N];
  const float s = a.f[SCALE_F_S];
  const bool vec = ddp_pack_ok<T0, W>(x);
  DDP_EW_LOOP(n) {
    float u[W];
    ddp_load_nb<T0, W>(x, i, n, u, vec);
#pragma unroll
    for (int e = 0; e < W; e++) u[e] *= s;
    ddp_store_nb<T0, W>(x, i, n, u, vec);
  }
}
#endif

#ifdef DDP_ENTRY_bias_add
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_bias_add(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  T0 *y = (T0 *)a.p[BIAS_ADD_P_Y];
  const T1 *b = (const T1 *)a.p[BIAS_ADD_P_B];
  const long long N = a.i[BIAS_ADD_I_N], M = a.i[BIAS_ADD_I_M];
  const bool vec = M % W == 0 && ddp_pack_ok<T0, W>(y) && ddp_pack_ok<T1, W>(b);
  for (long long r = blockIdx.y; r < N; r += gridDim.y)
    for (long long c = ((long long)blockIdx.x * DDP_BLOCK + threadIdx.x) * W; c < M;
         c += (long long)gridDim.x * DDP_BLOCK * W) {
      float u[W], v[W];
      ddp_load_nb<T0, W>(y + r * M, c, M, u, vec);
      ddp_load_nb<T1, W>(b, c, M, v, vec);
#pragma unroll
      for (int e = 0; e < W; e++) u[e] += v[e];
      ddp_store_nb<T0, W>(y + r * M, c, M, u, vec);
    }
}
#endif

#ifdef DDP_ENTRY_relu_fwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_relu_fwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[RELU_FWD_P_X];
  T1 *y = (T1 *)a.p[RELU_FWD_P_Y];
  const long long n = a.i[RELU_FWD_I_N];
  const bool vec = ddp_pack_ok<T0, W>(x) && ddp_pack_ok<T1, W>(y);
  DDP_EW_LOOP(n) {
    float u[W];
    ddp_load_nb<T0, W>(x, i, n, u, vec);
#pragma unroll
    for (int e = 0; e < W; e++) u[e] = u[e] < 0.f ? 0.f : u[e];  // NaN kept
    ddp_store_nb<T1, W>(y, i, n, u, vec);
  }
}
#endif

#ifdef DDP_ENTRY_relu_bwd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_relu_bwd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *y = (const T0 *)a.p[RELU_BWD_P_Y];
  const T1 *dy = (const T1 *)a.p[RELU_BWD_P_DY];
  T2 *dx = (T2 *)a.p[RELU_BWD_P_DX];
  const long long n = a.i[RELU_BWD_I_N];
  const bool acc = a.i[RELU_BWD_I_ACC] != 0;
  const bool vec = ddp_pack_ok<T0, W>(y) && ddp_pack_ok<T1, W>(dy) && ddp_pack_ok<T2, W>(dx);
  DDP_EW_LOOP(n) {
    float u[W], g[W], o[W];
    ddp_load_nb<T0, W>(y, i, n, u, vec);
    ddp_load_nb<T1, W>(dy, i, n, g, vec);
    if (acc) ddp_load_nb<T2, W>(dx, i, n, o, vec);
#pragma unroll
    for (int e = 0; e < W; e++) {
      const float d = u[e] > 0.f ? g[e] : 0.f;
      o[e] = acc ? o[e] + d : d;
    }
    ddp_store_nb<T2, W>(dx, i, n, o, vec);
  }
}
#endif

#ifdef DDP_ENTRY_sum_chunks
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_sum_chunks(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *in = (const T0 *)a.p[SUM_CHUNKS_P_IN];
  T1 *out = (T1 *)a.p[SUM_CHUNKS_P_OUT];
  const long long n = a.i[SUM_CHUNKS_I_N], P = a.i[SUM_CHUNKS_I_P];
  const float s = a.f[SUM_CHUNKS_F_SCALE];
  // chunk w starts at in + w*n: pack-aligned for every w when in is and n is a multiple of the pack
  const bool vec = n % W == 0 && ddp_pack_ok<T0, W>(in) && ddp_pack_ok<T1, W>(out);
  DDP_EW_LOOP(n) {
    float u[W], v[W];
    ddp_load_nb<T0, W>(in, i, n, u, vec);
    for (long long w = 1; w < P; w++) { // fixed order w = 0, 1, ..., P-1
      ddp_load_nb<T0, W>(in + w * n, i, n, v, vec);
#pragma unroll
      for (int e = 0; e < W; e++) u[e] += v[e];
    }
#pragma unroll
    for (int e = 0; e < W; e++) u[e] *= s;
    ddp_store_nb<T1, W>(out, i, n, u, vec);
  }
}
#endif

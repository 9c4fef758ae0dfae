// templates/reduce.cu: deterministic reductions (plan/ops.h REDUCE_ROWS, SUM), reference
// runtime/ref/ref_reduce.c (ref_reduce_rows, ref_sum).
//   REDUCE_ROWS: out[d] (+)= scale * sum_p in[p,d]   (folds a [P, D] partial table)
//   SUM:         out[0] (+)= scale * sum_i in[i]
// REDUCE_ROWS: a block of 32 x DDP_ROWS threads owns 32 columns; thread row r sums the table rows
// r, r + DDP_ROWS, ... and the DDP_ROWS partial sums are added in a fixed order. SUM: one block, fixed
// order. Accumulation in f32. Types: T0 in, T1 out. Spec: DDP_BLOCK (SUM), DDP_ROWS (REDUCE_ROWS).
#include "common.cuh"
#ifndef DDP_BLOCK
#define DDP_BLOCK 1024
#endif
#ifndef DDP_ROWS
#define DDP_ROWS 16
#endif

#ifdef DDP_ENTRY_reduce_rows
extern "C" __global__ void __launch_bounds__(32 * DDP_ROWS) ddp_reduce_rows(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *in = (const T0 *)a.p[REDUCE_ROWS_P_IN];
  T1 *out = (T1 *)a.p[REDUCE_ROWS_P_OUT];
  const long long P = a.i[REDUCE_ROWS_I_P], D = a.i[REDUCE_ROWS_I_D];
  const bool acc = a.i[REDUCE_ROWS_I_ACC] != 0;
  const float scale = a.f[REDUCE_ROWS_F_SCALE];
  __shared__ float part[DDP_ROWS][33];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  for (long long c0 = (long long)blockIdx.x * 32; c0 < D; c0 += (long long)gridDim.x * 32) {
    const long long c = c0 + tx;
    float s[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}; /* eight independent loads in flight */
    if (c < D) {
      long long p = ty;
      for (; p + 7 * DDP_ROWS < P; p += 8 * DDP_ROWS) {
#pragma unroll
        for (int u = 0; u < 8; u++) s[u] += ddp_f(in[(p + u * DDP_ROWS) * D + c]);
      }
      for (; p < P; p += DDP_ROWS) s[0] += ddp_f(in[p * D + c]);
    }
    part[ty][tx] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    __syncthreads();
    if (ty == 0 && c < D) {
      float s = 0.f;
#pragma unroll
      for (int r = 0; r < DDP_ROWS; r++) s += part[r][tx];
      s *= scale;
      out[c] = ddp_to<T1>(acc ? ddp_f(out[c]) + s : s);
    }
    __syncthreads();
  }
}
#endif

#ifdef DDP_ENTRY_sum
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_sum(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *in = (const T0 *)a.p[SUM_P_IN];
  T1 *out = (T1 *)a.p[SUM_P_OUT];
  const long long n = a.i[SUM_I_N];
  const bool acc = a.i[SUM_I_ACC] != 0;
  __shared__ float sh[32];
  float s = 0.f;
  for (long long i = threadIdx.x; i < n; i += DDP_BLOCK) s += ddp_f(in[i]);
  s = ddp_block_sum(s, sh) * a.f[SUM_F_SCALE];
  if (threadIdx.x == 0) out[0] = ddp_to<T1>(acc ? ddp_f(out[0]) + s : s);
}
#endif

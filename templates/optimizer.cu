// templates/optimizer.cu: gradient norm and parameter updates (plan/ops.h SUMSQ, OPT_SCALARS, ADAMW, SGD),
// reference runtime/ref/ref_optimizer.c (ref_sumsq, ref_opt_scalars, ref_adamw, ref_sgd).
//   SUMSQ:       part[c] = sum of x^2 over chunk c (P chunks of ceil(n/P) elements): one block per chunk
//   OPT_SCALARS: t += 1; lr_t (constant, or cosine with linear warmup, for it = t-1); norm = sqrt(sum of
//                the partials) (0 without them); clip = clip && norm > max ? max/(norm+1e-6) : 1.
//                One block; scalar math in double, as the reference.
//   ADAMW:       g = grad*clip; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//                a = lr sqrt(1-b2^t)/(1-b1^t); p -= a m/(sqrt(v)+eps); p -= lr wd p; copy = p
//                With DDP_PEERS = W (nccl.all_reduce = "peer" / "peer_copy"): grad is every rank's, through the
//                table of W pointers in p[ADAMW_P_PEER_GRADS] (rank order, this rank's own among them; the others
//                mapped through CUDA IPC, or their chunks of p[ADAMW_P_RECEIVED]: runtime/cuda/peer.c), and
//                g = ((g_0 + g_1 + ... + g_{W-1}) / W) * clip in f32, every load issued before the sums.
//   SGD:         p -= lr * grad * clip; copy = p
// The updates are grid-stride over packs of DDP_VEC elements (16-byte f32 accesses).
// Types: SUMSQ T0 x, T1 part; OPT_SCALARS T0 part, T1 scalars; ADAMW T0 p, T1 grad, T2 m, T3 v, T4 copy,
// T5 scalars; SGD T0 p, T1 grad, T2 copy, T3 scalars (scalars and partials f32). Spec: DDP_BLOCK, DDP_VEC.
#include "common.cuh"
#ifndef DDP_UNROLL
#define DDP_UNROLL 1
#endif
#ifndef DDP_BLOCK
#define DDP_BLOCK 256
#endif
#ifndef DDP_VEC
#define DDP_VEC 4
#endif

#ifdef DDP_ENTRY_sumsq
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_sumsq(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const T0 *x = (const T0 *)a.p[SUMSQ_P_X];
  float *part = (float *)a.p[SUMSQ_P_PART];
  const long long n = a.i[SUMSQ_I_N], P = a.i[SUMSQ_I_P] < 1 ? 1 : a.i[SUMSQ_I_P];
  const long long R = (n + P - 1) / P;
  __shared__ float sh[32];
  for (long long c = blockIdx.x; c < P; c += gridDim.x) {
    const long long lo = c * R < n ? c * R : n, hi = lo + R < n ? lo + R : n;
    float s0 = 0.f, s1 = 0.f;
    long long i = lo + threadIdx.x;
    for (; i + DDP_BLOCK < hi; i += 2 * DDP_BLOCK) {
      const float u = ddp_f(x[i]), w = ddp_f(x[i + DDP_BLOCK]);
      s0 = fmaf(u, u, s0);
      s1 = fmaf(w, w, s1);
    }
    if (i < hi) {
      const float u = ddp_f(x[i]);
      s0 = fmaf(u, u, s0);
    }
    const float s = ddp_block_sum(s0 + s1, sh);
    if (threadIdx.x == 0) part[c] = s;
  }
}
#endif

#ifdef DDP_ENTRY_opt_scalars
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_opt_scalars(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  const float *part = (const float *)a.p[OPT_SCALARS_P_PART];
  float *sc = (float *)a.p[OPT_SCALARS_P_SCALARS];
  const long long P = a.i[OPT_SCALARS_I_P];
  __shared__ double shd[DDP_BLOCK];
  double s = 0.0;
  if (part)
    for (long long c = threadIdx.x; c < P; c += DDP_BLOCK) s += (double)part[c];
  shd[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sumsq = 0.0;
  for (int k = 0; k < DDP_BLOCK; k++) sumsq += shd[k];
  const double t = (double)sc[SCALAR_STEP] + 1.0, it = t - 1.0;
  const double mx = a.f[OPT_SCALARS_F_LR_MAX], mn = a.f[OPT_SCALARS_F_LR_MIN], warm = (double)a.i[OPT_SCALARS_I_WARMUP],
               cyc = (double)a.i[OPT_SCALARS_I_CYCLE];
  double lr = mx;
  if (a.i[OPT_SCALARS_I_SCHEDULE] == 1) {
    if (it < warm) {
      lr = it / warm * mx;
    } else if (it <= cyc) {
      const double frac = cyc > warm ? (it - warm) / (cyc - warm) : 0.0;
      lr = mn + 0.5 * (1.0 + cos(3.14159265358979323846 * frac)) * (mx - mn);
    } else {
      lr = mn;
    }
  }
  const double norm = sqrt(sumsq), maxn = a.f[OPT_SCALARS_F_MAX_NORM];
  const double clip = a.i[OPT_SCALARS_I_CLIP] && part && norm > maxn ? maxn / (norm + 1e-6) : 1.0;
  sc[SCALAR_STEP] = (float)t;
  sc[SCALAR_LR] = (float)lr;
  sc[SCALAR_GRAD_NORM] = (float)norm;
  sc[SCALAR_CLIP_SCALE] = (float)clip;
}
#endif

#ifdef DDP_ENTRY_adamw
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_adamw(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  float *p = (float *)a.p[ADAMW_P_PARAM];
#ifdef DDP_PEERS
  const T1 *const *peer = (const T1 *const *)a.p[ADAMW_P_PEER_GRADS];
  const T1 *grad = peer[0];
#else
  const T1 *grad = (const T1 *)a.p[ADAMW_P_GRAD];
#endif
  float *m = (float *)a.p[ADAMW_P_M], *v = (float *)a.p[ADAMW_P_V];
  T4 *copy = (T4 *)a.p[ADAMW_P_COPY];
  const float *sc = (const float *)a.p[ADAMW_P_SCALARS];
  const long long n = a.i[ADAMW_I_N];
  const float b1 = a.f[ADAMW_F_B1], b2 = a.f[ADAMW_F_B2], eps = a.f[ADAMW_F_EPS], wd = a.f[ADAMW_F_WD];
  const double t = sc[SCALAR_STEP];
  const float lr = sc[SCALAR_LR], clip = sc[SCALAR_CLIP_SCALE];
  const float alpha = (float)((double)lr * sqrt(1.0 - pow((double)b2, t)) / (1.0 - pow((double)b1, t)));
  const float decay = lr * wd;
  constexpr int W = DDP_VEC;
  bool vec = ddp_pack_ok<float, W>(p) && ddp_pack_ok<T1, W>(grad) && ddp_pack_ok<float, W>(m) &&
             ddp_pack_ok<float, W>(v) && (copy == nullptr || ddp_pack_ok<T4, W>(copy));
#ifdef DDP_PEERS
  constexpr int Q = DDP_PEERS;
#pragma unroll
  for (int q = 1; q < Q; q++) vec = vec && ddp_pack_ok<T1, W>(peer[q]);
#endif
  // DDP_UNROLL packs per thread per iteration, all loads issued before the arithmetic.
  constexpr int U = DDP_UNROLL;
  const long long step = ddp_gstride() * W;
  for (long long i0 = ddp_gtid() * W; i0 < n; i0 += U * step) {
    float pv[U][W], gv[U][W], mv[U][W], vv[U][W];
#ifdef DDP_PEERS
    float gq[U][Q - 1][W];
#endif
#pragma unroll
    for (int u = 0; u < U; u++) {
      const long long i = i0 + u * step;
      if (i < n) {
        ddp_load_nb<float, W>(p, i, n, pv[u], vec);
        ddp_load_nb<T1, W>(grad, i, n, gv[u], vec);
#ifdef DDP_PEERS
#pragma unroll
        for (int q = 1; q < Q; q++) ddp_load_nb<T1, W>(peer[q], i, n, gq[u][q - 1], vec);
#endif
        ddp_load_nb<float, W>(m, i, n, mv[u], vec);
        ddp_load_nb<float, W>(v, i, n, vv[u], vec);
      }
    }
#ifdef DDP_PEERS
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int e = 0; e < W; e++) {
        float sum = gv[u][e];
#pragma unroll
        for (int q = 1; q < Q; q++) sum = __fadd_rn(sum, gq[u][q - 1][e]);
        gv[u][e] = __fdiv_rn(sum, (float)Q);
      }
#endif
#pragma unroll
    for (int u = 0; u < U; u++) {
      const long long i = i0 + u * step;
      if (i >= n) continue;
#pragma unroll
      for (int e = 0; e < W; e++) {
        const float g = gv[u][e] * clip;
        mv[u][e] = b1 * mv[u][e] + (1.f - b1) * g;
        vv[u][e] = b2 * vv[u][e] + (1.f - b2) * g * g;
        pv[u][e] -= alpha * mv[u][e] / (sqrtf(vv[u][e]) + eps);
        pv[u][e] -= decay * pv[u][e];
      }
      ddp_store_nb<float, W>(p, i, n, pv[u], vec);
      ddp_store_nb<float, W>(m, i, n, mv[u], vec);
      ddp_store_nb<float, W>(v, i, n, vv[u], vec);
      if (copy) ddp_store_nb<T4, W>(copy, i, n, pv[u], vec);
    }
  }
}
#endif

#ifdef DDP_ENTRY_sgd
extern "C" __global__ void __launch_bounds__(DDP_BLOCK) ddp_sgd(const ddp_kargs a) {
  DDP_GRID_DEPENDENCY();
  float *p = (float *)a.p[SGD_P_PARAM];
  const T1 *grad = (const T1 *)a.p[SGD_P_GRAD];
  T2 *copy = (T2 *)a.p[SGD_P_COPY];
  const float *sc = (const float *)a.p[SGD_P_SCALARS];
  const long long n = a.i[SGD_I_N];
  const float step = sc[SCALAR_LR] * sc[SCALAR_CLIP_SCALE];
  constexpr int W = DDP_VEC;
  const bool vec = ddp_pack_ok<float, W>(p) && ddp_pack_ok<T1, W>(grad) && (copy == nullptr || ddp_pack_ok<T2, W>(copy));
  for (long long i = ddp_gtid() * W; i < n; i += ddp_gstride() * W) {
    float pv[W], gv[W];
    ddp_load_nb<float, W>(p, i, n, pv, vec);
    ddp_load_nb<T1, W>(grad, i, n, gv, vec);
#pragma unroll
    for (int e = 0; e < W; e++) pv[e] -= step * gv[e];
    ddp_store_nb<float, W>(p, i, n, pv, vec);
    if (copy) ddp_store_nb<T2, W>(copy, i, n, pv, vec);
  }
}
#endif

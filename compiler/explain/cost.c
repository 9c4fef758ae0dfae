/* compiler/explain/cost.c: the predicted time of one instruction from a device profile (docs/EXPLAIN.md),
 * from its work (plan/work.h: FLOPs, bytes moved with read-modify-write operands counted twice, bytes on
 * the wire, the same quantities `ddprun --calibrate` measures rates from):
 *   GEMM          16-bit inputs with the profile's gemm_by_shape table for the GEMM's layout: the time
 *                 interpolated between the grid's shapes (gemm_table_s), no launch added (a table time is
 *                 a GEMM and the gap to the next, back to back); else 2*M*N*K*batch / throughput (16-bit
 *                 or 32-bit inputs; "small" shapes at a fraction)
 *   attention     max(matmul FLOPs / attention throughput, bytes / HBM) (FWD 2, BWD_DKV 4, BWD_DQ 3
 *                 matmul units of 2*B*H*T*T*Dh, halved when causal); the throughput is the profile's
 *                 attention_by_shape entry of exactly this T and head dim, else attention_tflops
 *   other kernels, memset, copy, load_batch, init_tensor: bytes moved / HBM bandwidth
 *   each of the above adds the launch overhead
 *   collectives   alpha + wire bytes / busbw (plan/work.c: the ring factor of the collective's
 *                 communicator's size, the world or its group)
 *   events, ranges, timers: free. */
#include "explain.h"
#include "work.h"
#include <math.h>
#include <string.h>

enum { GRID_MAX = 32 };

/* Inserts v into the sorted set g of n values (at most GRID_MAX; later ones dropped). */
static void grid_add(double *g, int *n, double v) {
  int i = 0;
  while (i < *n && g[i] < v) i++;
  if ((i < *n && g[i] == v) || *n == GRID_MAX) return;
  memmove(g + i + 1, g + i, sizeof *g * (size_t)(*n - i));
  g[i] = v;
  (*n)++;
}

/* Where v falls on the grid g: the lower index *i and the weight *w of the upper point in log space,
 * clamped to the grid's ends; returns v's factor beyond the largest point (1 inside). */
static double grid_place(const double *g, int n, double v, int *i, double *w) {
  double f = 1, c = v;
  if (c > g[n - 1]) f = c / g[n - 1], c = g[n - 1];
  if (c < g[0]) c = g[0];
  *i = 0, *w = 0;
  if (n == 1) return f;
  while (*i < n - 2 && g[*i + 1] < c) (*i)++;
  *w = (log(c) - log(g[*i])) / (log(g[*i + 1]) - log(g[*i]));
  return f;
}

/* The table's seconds for one M x N x K GEMM of layout (ta, tb): log time interpolated linearly in log M,
 * log N, log K between the eight grid shapes around it; a dimension beyond the grid's largest scales the
 * time with it (more tiles of the same kind), one below its smallest costs the smallest's. -1 when the
 * table has no entry of this layout or lacks a corner. */
static double gemm_table_s(const ddp_profile *pr, double M, double N, double K, int ta, int tb) {
  double g[3][GRID_MAX];
  int n[3] = {0, 0, 0};
  for (int e = 0; e < pr->ngemm_shapes; e++)
    if (pr->gemm_shape[e].ta == ta && pr->gemm_shape[e].tb == tb) {
      grid_add(g[0], &n[0], pr->gemm_shape[e].m);
      grid_add(g[1], &n[1], pr->gemm_shape[e].n);
      grid_add(g[2], &n[2], pr->gemm_shape[e].k);
    }
  if (!n[0]) return -1;
  const double v[3] = {M, N, K};
  int lo[3];
  double w[3], f = 1;
  for (int d = 0; d < 3; d++) f *= grid_place(g[d], n[d], v[d], &lo[d], &w[d]);
  double lt = 0;
  for (int corner = 0; corner < 8; corner++) {
    double at[3], wt = 1;
    for (int d = 0; d < 3; d++) {
      int up = (corner >> d) & 1;
      wt *= up ? w[d] : 1 - w[d];
      at[d] = g[d][lo[d] + (up && n[d] > 1)];
    }
    if (wt == 0) continue;
    int hit = -1;
    for (int e = 0; e < pr->ngemm_shapes && hit < 0; e++)
      if (pr->gemm_shape[e].ta == ta && pr->gemm_shape[e].tb == tb && pr->gemm_shape[e].m == at[0] &&
          pr->gemm_shape[e].n == at[1] && pr->gemm_shape[e].k == at[2])
        hit = e;
    if (hit < 0) return -1;
    lt += wt * log(pr->gemm_shape[hit].us);
  }
  return exp(lt) * f * 1e-6;
}

double ddp_instr_cost(const ddp_plan *p, const ddp_instr *in, const ddp_profile *pr, int *is_comm) {
  double launch = pr->launch_us * 1e-6, hbm = pr->hbm_gbps * 1e9;
  ddp_work w;
  ddp_instr_work(p, in, &w);
  *is_comm = w.kind == WORK_COLL;
  switch (w.kind) {
  case WORK_FREE: return 0;
  case WORK_COLL: return pr->coll[w.coll_kind].alpha_us * 1e-6 + w.wire_bytes / (pr->coll[w.coll_kind].busbw_gbps * 1e9);
  case WORK_GEMM: {
    if (w.gemm16 && pr->ngemm_shapes > 0 && in->i[GEMM_I_M] > 0 && in->i[GEMM_I_N] > 0 && in->i[GEMM_I_K] > 0) {
      double t = gemm_table_s(pr, (double)in->i[GEMM_I_M], (double)in->i[GEMM_I_N], (double)in->i[GEMM_I_K],
                              in->i[GEMM_I_TRANS_A] != 0, in->i[GEMM_I_TRANS_B] != 0);
      if (t >= 0) return t * (in->i[GEMM_I_BATCH] > 1 ? (double)in->i[GEMM_I_BATCH] : 1);
    }
    double tf = w.gemm16 ? pr->gemm_tflops_16 : pr->gemm_tflops_32;
    if (w.gemm_min_dim < pr->gemm_small_dim) tf *= pr->gemm_small_scale;
    return launch + w.flops / (tf * 1e12);
  }
  default: break;
  }
  if (w.bytes < 0) return launch;
  double t = w.bytes / hbm;
  if (w.kind == WORK_ATTENTION) {
    double tf = pr->attention_tflops;
    for (int k = 0; k < pr->nattn_shapes; k++)
      if (pr->attn_shape[k].t == (double)in->i[ATTN_I_T] && pr->attn_shape[k].dh == (double)in->i[ATTN_I_DH])
        tf = pr->attn_shape[k].tflops;
    double f = w.flops / (tf * 1e12);
    if (f > t) t = f;
  }
  return launch + t;
}

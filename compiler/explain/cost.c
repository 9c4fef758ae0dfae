/* compiler/explain/cost.c: the predicted time of one instruction from a device profile (docs/EXPLAIN.md),
 * from its work (plan/work.h: FLOPs, bytes moved with read-modify-write operands counted twice, bytes on
 * the wire, the same quantities `ddprun --calibrate` measures rates from):
 *   GEMM          16-bit inputs with the profile's gemm_by_shape table for the GEMM's layout: the table's
 *                 time interpolated at its shape (plan/gemm_table.h) times gemm_table_scale, no launch
 *                 added (a table time is a GEMM and the gap to the next, back to back); else
 *                 2*M*N*K*batch / throughput (16-bit or 32-bit inputs; "small" shapes at a fraction)
 *   attention     max(matmul FLOPs / attention throughput, bytes / HBM) (FWD 2, BWD_DKV 4, BWD_DQ 3,
 *                 BWD_FUSED 5 matmul units of 2*B*H*T*T*Dh, halved when causal); the throughput is the profile's
 *                 attention_by_shape entry of exactly this T and head dim, else attention_tflops
 *   other kernels, memset, copy, load_batch, init_tensor: bytes moved / HBM bandwidth
 *   each of the above adds the launch overhead
 *   collectives   alpha + wire bytes / busbw (plan/work.c: the ring factor of the collective's
 *                 communicator's size, the world or its group)
 *   events, ranges, timers: free. */
#include "explain.h"
#include "gemm_table.h"
#include "work.h"

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
      double us = ddp_gemm_table_us(pr->gemm_shape, pr->ngemm_shapes, (double)in->i[GEMM_I_M], (double)in->i[GEMM_I_N],
                                    (double)in->i[GEMM_I_K], in->i[GEMM_I_TRANS_A] != 0, in->i[GEMM_I_TRANS_B] != 0);
      if (us >= 0) return us * 1e-6 * pr->gemm_table_scale * (in->i[GEMM_I_BATCH] > 1 ? (double)in->i[GEMM_I_BATCH] : 1);
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

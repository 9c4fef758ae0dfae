/* compiler/explain/cost.c: the predicted time of one instruction from a device profile (docs/EXPLAIN.md):
 *   GEMM          2*M*N*K*batch / throughput (16-bit or 32-bit inputs; "small" shapes at a fraction)
 *   attention     max(matmul FLOPs / attention throughput, bytes / HBM) (FWD 2, BWD_DKV 4, BWD_DQ 3
 *                 matmul units of 2*B*H*T*T*Dh, halved when causal)
 *   other kernels, memset, copy, load_batch, init_tensor: bytes moved (plan/access.h footprints of every
 *                 operand, reads and writes) / HBM bandwidth
 *   each of the above adds the launch overhead
 *   collectives   alpha + ring factor * bytes / busbw: all-reduce 2(n-1)/n of the buffer, reduce-scatter
 *                 and all-gather (n-1)/n of the whole (world * count) buffer, broadcast and send/recv 1
 *   events, ranges, timers: free. */
#include "access.h"
#include "explain.h"

static double coll_cost(const ddp_plan *p, const ddp_instr *in, const ddp_profile *pr) {
  double n = p->meta.world > 0 ? (double)p->meta.world : 1.0;
  double bytes = (double)in->i[COLL_I_COUNT] * (double)ddp_dtype_size(in->dt[0]), factor = 1;
  int kind = COST_BROADCAST;
  switch (in->opcode) {
  case I_ALL_REDUCE: kind = COST_ALL_REDUCE, factor = 2 * (n - 1) / n; break;
  case I_REDUCE_SCATTER: kind = COST_REDUCE_SCATTER, bytes *= n, factor = (n - 1) / n; break;
  case I_ALL_GATHER: kind = COST_ALL_GATHER, bytes *= n, factor = (n - 1) / n; break;
  case I_BROADCAST: kind = COST_BROADCAST; break;
  default: kind = COST_SEND_RECV; break;
  }
  return pr->coll[kind].alpha_us * 1e-6 + factor * bytes / (pr->coll[kind].busbw_gbps * 1e9);
}

/* Bytes read and written through every non-null operand; -1 when the footprint is invalid. */
static double bytes_moved(const ddp_plan *p, const ddp_instr *in) {
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160];
  if (ddp_instr_footprint(in, p->meta.world, use, why, sizeof why)) return -1;
  double b = 0;
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (use[k].used && in->p[k].tensor >= 0) b += (double)use[k].bytes;
  return b;
}

static double attention_flops(const ddp_instr *in) {
  double unit = 2.0 * (double)in->i[ATTN_I_B] * (double)in->i[ATTN_I_H] * (double)in->i[ATTN_I_T] *
                (double)in->i[ATTN_I_T] * (double)in->i[ATTN_I_DH];
  if (in->i[ATTN_I_CAUSAL]) unit *= 0.5;
  switch (in->op) {
  case OP_ATTN_FWD: return 2 * unit;
  case OP_ATTN_BWD_DKV: case OP_ATTN_BWD_DKV_ROPE: return 4 * unit;
  case OP_ATTN_BWD_DQ: case OP_ATTN_BWD_DQ_ROPE: return 3 * unit;
  default: return 0;
  }
}

double ddp_instr_cost(const ddp_plan *p, const ddp_instr *in, const ddp_profile *pr, int *is_comm) {
  double launch = pr->launch_us * 1e-6, hbm = pr->hbm_gbps * 1e9;
  *is_comm = 0;
  switch (in->opcode) {
  case I_EVENT_RECORD:
  case I_EVENT_WAIT:
  case I_RANGE_PUSH:
  case I_RANGE_POP:
  case I_TIMER: return 0;
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_BROADCAST:
  case I_SEND:
  case I_RECV: *is_comm = 1; return coll_cost(p, in, pr);
  case I_GEMM: {
    double m = (double)in->i[GEMM_I_M], n = (double)in->i[GEMM_I_N], k = (double)in->i[GEMM_I_K];
    double batch = in->i[GEMM_I_BATCH] > 0 ? (double)in->i[GEMM_I_BATCH] : 1;
    double tf = ddp_dtype_size(in->dt[0]) <= 2 ? pr->gemm_tflops_16 : pr->gemm_tflops_32;
    double smallest = m < n ? (m < k ? m : k) : (n < k ? n : k);
    if (smallest < pr->gemm_small_dim) tf *= pr->gemm_small_scale;
    return launch + 2 * m * n * k * batch / (tf * 1e12);
  }
  default: break;
  }
  double b = bytes_moved(p, in);
  if (b < 0) return launch;
  double t = b / hbm;
  if (in->opcode == I_KERNEL) {
    double f = attention_flops(in) / (pr->attention_tflops * 1e12);
    if (f > t) t = f;
  }
  return launch + t;
}

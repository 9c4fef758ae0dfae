/* plan/work.c: see work.h. Which operands are read as well as written is per op: plan/access.h says only
 * which are written, so the read-modify-write slots are listed here (the in-place kernels, the optimizers'
 * state, and the outputs of the kernels whose ACC integer slot makes them accumulate). */
#include "work.h"
#include "access.h"

#define BIT(s) (1u << (s))

/* The written slots of `in` that it also reads. */
static uint32_t rmw_mask(const ddp_instr *in) {
  if (in->opcode != I_KERNEL) return 0;
  switch (in->op) {
  case OP_ADAMW: return BIT(ADAMW_P_PARAM) | BIT(ADAMW_P_M) | BIT(ADAMW_P_V);
  case OP_SGD: return BIT(SGD_P_PARAM);
  case OP_ROPE: return BIT(ROPE_P_X);
  case OP_SCALE: return BIT(SCALE_P_X);
  case OP_BIAS_ADD: return BIT(BIAS_ADD_P_Y);
  case OP_ATTN_NAIVE_SOFTMAX: return BIT(ATTN_NAIVE_SOFTMAX_P_SCORES);
  case OP_ATTN_NAIVE_SOFTMAX_BWD: return BIT(ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS);
  case OP_ATTN_BWD_FUSED: return BIT(ATTN_P_DQACC); /* dq is added into the accumulator */
  case OP_EMBED_BWD: return in->i[EMBED_BWD_I_ACC] ? BIT(EMBED_BWD_P_DTABLE) : 0;
  case OP_RMSNORM_BWD:
  case OP_RMSNORM_BWD_CAST: return in->i[RMSNORM_BWD_I_ACC] ? BIT(RMSNORM_BWD_P_DX) : 0;
  case OP_REDUCE_ROWS: return in->i[REDUCE_ROWS_I_ACC] ? BIT(REDUCE_ROWS_P_OUT) : 0;
  case OP_SUM: return in->i[SUM_I_ACC] ? BIT(SUM_P_OUT) : 0;
  case OP_RELU_BWD: return in->i[RELU_BWD_I_ACC] ? BIT(RELU_BWD_P_DX) : 0;
  case OP_LAYERNORM_BWD: return in->i[LAYERNORM_BWD_I_ACC] ? BIT(LAYERNORM_BWD_P_DX) : 0;
  default: return 0;
  }
}

double ddp_instr_bytes_moved(const ddp_plan *p, const ddp_instr *in) {
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160];
  if (ddp_instr_footprint(in, ddp_instr_ranks(p, in), use, why, sizeof why)) return -1;
  uint32_t rmw = rmw_mask(in);
  double b = 0;
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (use[k].used && in->p[k].tensor >= 0) b += (double)use[k].bytes * (use[k].write && (rmw & BIT(k)) ? 2 : 1);
  /* an update with peers also reads the other ranks' gradients (over NVLink, counted as bytes moved) */
  if (in->opcode == I_KERNEL && in->op == OP_ADAMW && in->i[ADAMW_I_PEERS] > 1 && in->p[ADAMW_P_RECEIVED].tensor < 0)
    b += (double)use[ADAMW_P_GRAD].bytes * (double)(in->i[ADAMW_I_PEERS] - 1);
  return b;
}

static double attention_flops(const ddp_instr *in) {
  double unit = 2.0 * (double)in->i[ATTN_I_B] * (double)in->i[ATTN_I_H] * (double)in->i[ATTN_I_T] *
                (double)in->i[ATTN_I_T] * (double)in->i[ATTN_I_DH];
  if (in->i[ATTN_I_CAUSAL]) unit *= 0.5;
  switch (in->op) {
  case OP_ATTN_FWD: return 2 * unit;
  case OP_ATTN_BWD_DKV:
  case OP_ATTN_BWD_DKV_ROPE: return 4 * unit;
  case OP_ATTN_BWD_DQ:
  case OP_ATTN_BWD_DQ_ROPE: return 3 * unit;
  case OP_ATTN_BWD_FUSED: return 5 * unit; /* S and dP once, dV, dK, dQ */
  default: return 0;
  }
}

void ddp_instr_work(const ddp_plan *p, const ddp_instr *in, ddp_work *w) {
  *w = (ddp_work){0};
  double n = (double)ddp_instr_ranks(p, in);
  switch (in->opcode) {
  case I_EVENT_RECORD:
  case I_EVENT_WAIT:
  case I_RANGE_PUSH:
  case I_RANGE_POP:
  case I_TIMER: w->kind = WORK_FREE; return;
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST:
  case I_SEND:
  case I_RECV:
  case I_PEER_BARRIER:
  case I_PEER_COPY: {
    double bytes = (double)in->i[COLL_I_COUNT] * (double)ddp_dtype_size(in->dt[0]), factor = 1;
    w->kind = WORK_COLL;
    switch (in->opcode) {
    case I_ALL_REDUCE: w->coll_kind = COST_ALL_REDUCE, factor = 2 * (n - 1) / n; break;
    case I_REDUCE_SCATTER: w->coll_kind = COST_REDUCE_SCATTER, bytes *= n, factor = (n - 1) / n; break;
    /* an all-to-all moves an all-gather's bytes (count to and from each other rank), on the same links and,
     * with the zero-CTA policy, the same copy engines: priced as one (no calibration of its own) */
    case I_ALL_GATHER:
    case I_ALL_TO_ALL: w->coll_kind = COST_ALL_GATHER, bytes *= n, factor = (n - 1) / n; break;
    case I_BROADCAST: w->coll_kind = COST_BROADCAST; break;
    case I_PEER_BARRIER: w->coll_kind = COST_SEND_RECV; break; /* flags between peers: a message's latency */
    case I_PEER_COPY: w->coll_kind = COST_SEND_RECV, bytes *= n - 1; break; /* copies from each other rank */
    default: w->coll_kind = COST_SEND_RECV; break;
    }
    w->wire_bytes = factor * bytes;
    return;
  }
  case I_GEMM: {
    double m = (double)in->i[GEMM_I_M], nn = (double)in->i[GEMM_I_N], k = (double)in->i[GEMM_I_K];
    double batch = in->i[GEMM_I_BATCH] > 0 ? (double)in->i[GEMM_I_BATCH] : 1;
    w->kind = WORK_GEMM;
    w->gemm16 = ddp_dtype_size(in->dt[0]) <= 2;
    w->gemm_min_dim = m < nn ? (m < k ? m : k) : (nn < k ? nn : k);
    w->flops = 2 * m * nn * k * batch;
    return;
  }
  default: break;
  }
  w->bytes = ddp_instr_bytes_moved(p, in);
  w->flops = in->opcode == I_KERNEL ? attention_flops(in) : 0;
  w->kind = w->flops > 0 ? WORK_ATTENTION : WORK_MEMORY;
  if (w->kind == WORK_ATTENTION) w->gemm16 = ddp_dtype_size(in->dt[ATTN_P_Q]) <= 2;
}

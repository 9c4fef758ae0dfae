/* plan/access.c: read/write sets of instructions (see access.h): the per-op write masks, which mirror the
 * output slots of plan/op_slots.h, and the byte ranges the verifier and the passes see, built from the
 * exact footprints of footprint.c. */
#include "access.h"

/* W(a, b, ...): the mask of up to five slots; the padding (-1) adds no bit (it used to pad with slot 0,
 * marking every op's first slot as written). */
#define W(...) (0u __VA_OPT__(| W_(__VA_ARGS__)))
#define W_(...) W_N(__VA_ARGS__, -1, -1, -1, -1, -1)
#define W_B(x) ((x) < 0 ? 0u : 1u << ((x) < 0 ? 0 : (x)))
#define W_N(a, b, c, d, e, ...) (W_B(a) | W_B(b) | W_B(c) | W_B(d) | W_B(e))

static const uint32_t write_masks[OP_COUNT] = {
    [OP_EMBED_FWD] = W(EMBED_FWD_P_OUT),
    [OP_EMBED_BWD] = W(EMBED_BWD_P_DTABLE),
    [OP_RMSNORM_FWD] = W(RMSNORM_FWD_P_Y, RMSNORM_FWD_P_RSTD),
    [OP_RMSNORM_BWD] = W(RMSNORM_BWD_P_DX, RMSNORM_BWD_P_DG_PART),
    [OP_REDUCE_ROWS] = W(REDUCE_ROWS_P_OUT),
    [OP_SUM] = W(SUM_P_OUT),
    [OP_ROPE] = W(ROPE_P_X),
    [OP_ATTN_FWD] = W(ATTN_P_O, ATTN_P_LSE),
    [OP_ATTN_BWD_PREP] = W(ATTN_BWD_PREP_P_DELTA, ATTN_BWD_PREP_P_DQACC),
    [OP_ATTN_BWD_DKV] = W(ATTN_P_DK, ATTN_P_DV),
    [OP_ATTN_BWD_DQ] = W(ATTN_P_DQ),
    [OP_SWIGLU_FWD] = W(SWIGLU_FWD_P_H),
    [OP_SWIGLU_BWD] = W(SWIGLU_BWD_P_DAB),
    [OP_XENT] = W(XENT_P_LOSS_ROWS, XENT_P_DLOGITS),
    [OP_XENT_VP_STATS] = W(XENT_VP_STATS_P_STATS),
    [OP_XENT_VP] = W(XENT_VP_P_LOSS_ROWS, XENT_VP_P_DLOGITS),
    [OP_MSE] = W(MSE_P_LOSS_ROWS, MSE_P_DPRED),
    [OP_SUMSQ] = W(SUMSQ_P_PART),
    [OP_OPT_SCALARS] = W(OPT_SCALARS_P_SCALARS),
    [OP_ADAMW] = W(ADAMW_P_PARAM, ADAMW_P_M, ADAMW_P_V, ADAMW_P_COPY),
    [OP_SGD] = W(SGD_P_PARAM, SGD_P_COPY),
    [OP_CAST] = W(CAST_P_OUT),
    [OP_ADD] = W(ADD_P_OUT),
    [OP_SCALE] = W(SCALE_P_X),
    [OP_BIAS_ADD] = W(BIAS_ADD_P_Y),
    [OP_RELU_FWD] = W(RELU_FWD_P_Y),
    [OP_RELU_BWD] = W(RELU_BWD_P_DX),
    [OP_LAYERNORM_FWD] = W(LAYERNORM_FWD_P_Y, LAYERNORM_FWD_P_MEAN, LAYERNORM_FWD_P_RSTD),
    [OP_LAYERNORM_BWD] = W(LAYERNORM_BWD_P_DX, LAYERNORM_BWD_P_DW_PART, LAYERNORM_BWD_P_DB_PART),
    [OP_ATTN_NAIVE_SOFTMAX] = W(ATTN_NAIVE_SOFTMAX_P_SCORES, ATTN_NAIVE_SOFTMAX_P_LSE),
    [OP_ATTN_NAIVE_SOFTMAX_BWD] = W(ATTN_NAIVE_SOFTMAX_BWD_P_DPROBS),
    [OP_ATTN_BWD_DKV_ROPE] = W(ATTN_P_DK, ATTN_P_DV),
    [OP_ATTN_BWD_DQ_ROPE] = W(ATTN_P_DQ),
    [OP_RMSNORM_BWD_CAST] = W(RMSNORM_BWD_P_DX, RMSNORM_BWD_P_DG_PART, RMSNORM_BWD_CAST_P_DX_CAST),
    [OP_ATTN_BWD_FUSED] = W(ATTN_P_DK, ATTN_P_DV, ATTN_P_DQACC),
    [OP_ATTN_DQ_STORE] = W(ATTN_P_DQ),
    [OP_SUM_CHUNKS] = W(SUM_CHUNKS_P_OUT),
};

uint32_t ddp_op_write_mask(int op) { return op >= 0 && op < OP_COUNT ? write_masks[op] : 0; }

int32_t ddp_tensor_root(const ddp_plan *p, int32_t t) {
  while (t >= 0 && p->tensors[t].base >= 0) t = p->tensors[t].base;
  return t;
}

int ddp_tensor_within(const ddp_plan *p, int32_t t, int32_t of) {
  for (; t >= 0; t = p->tensors[t].base)
    if (t == of) return 1;
  return 0;
}

int ddp_instr_accesses(const ddp_plan *p, int rank, const ddp_instr *in, ddp_access *out) {
  (void)rank;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160];
  int exact = ddp_instr_footprint(in, ddp_instr_ranks(p, in), use, why, sizeof why) == 0;
  int n = 0;
  for (int s = 0; s < DDP_MAX_PTRS; s++) {
    const ddp_bufref *r = &in->p[s];
    if ((exact && !use[s].used) || r->tensor < 0) continue;
    const ddp_tensor *t = &p->tensors[r->tensor];
    uint64_t tensor_end = t->offset + t->bytes;
    uint64_t end = exact && !use[s].whole ? r->offset + use[s].bytes : tensor_end;
    if (end <= r->offset) continue; /* touches nothing */
    int write = exact ? use[s].write : 1; /* an invalid footprint: every buffer, written, to its tensor's end */
    out[n++] = (ddp_access){.slot = s, .write = write, .arena = r->arena, .begin = r->offset, .end = end};
  }
  return n;
}

/* plan/access.c: read/write sets of instructions (see access.h). The per-op write masks mirror the
 * output slots of plan/op_slots.h. */
#include "access.h"

#define W(...) (0u __VA_OPT__(| W_(__VA_ARGS__)))
#define W_(...) W_N(__VA_ARGS__, 0, 0, 0, 0, 0)
#define W_N(a, b, c, d, e, ...) ((1u << (a)) | (1u << (b)) | (1u << (c)) | (1u << (d)) | (1u << (e)))

static const uint32_t write_masks[OP_COUNT] = {
    [OP_EMBED_FWD] = W(EMBED_FWD_P_OUT),
    [OP_EMBED_BWD] = W(EMBED_BWD_P_DTABLE),
    [OP_RMSNORM_FWD] = W(RMSNORM_FWD_P_Y, RMSNORM_FWD_P_RSTD),
    [OP_RMSNORM_BWD] = W(RMSNORM_BWD_P_DX, RMSNORM_BWD_P_DG_PART),
    [OP_REDUCE_ROWS] = W(REDUCE_ROWS_P_OUT),
    [OP_SUM] = W(SUM_P_OUT),
    [OP_ROPE] = W(ROPE_P_X),
    [OP_ATTN_FWD] = W(ATTN_P_O, ATTN_P_LSE),
    [OP_ATTN_BWD_PREP] = W(ATTN_BWD_PREP_P_DELTA),
    [OP_ATTN_BWD_DKV] = W(ATTN_P_DK, ATTN_P_DV),
    [OP_ATTN_BWD_DQ] = W(ATTN_P_DQ),
    [OP_SWIGLU_FWD] = W(SWIGLU_FWD_P_H),
    [OP_SWIGLU_BWD] = W(SWIGLU_BWD_P_DAB),
    [OP_XENT] = W(XENT_P_LOSS_ROWS, XENT_P_DLOGITS),
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
};

uint32_t ddp_op_write_mask(int op) { return op >= 0 && op < OP_COUNT ? write_masks[op] : 0; }

uint64_t ddp_op_slot_elems(const ddp_instr *in, int slot) {
  uint64_t n = (uint64_t)in->i[ADAMW_I_N]; /* n: slot 0 of every op below */
  switch (in->op) {
  case OP_ADAMW: return slot <= ADAMW_P_COPY ? n : 0; /* scalars: to the tensor's end */
  case OP_SGD: return slot <= SGD_P_COPY ? n : 0;
  case OP_SUMSQ: return slot == SUMSQ_P_X ? n : (uint64_t)in->i[SUMSQ_I_P];
  case OP_CAST: case OP_ADD: case OP_SCALE: case OP_RELU_FWD: case OP_RELU_BWD: return n;
  default: return 0;
  }
}

int32_t ddp_tensor_root(const ddp_plan *p, int32_t t) {
  while (t >= 0 && p->tensors[t].base >= 0) t = p->tensors[t].base;
  return t;
}

int ddp_tensor_within(const ddp_plan *p, int32_t t, int32_t of) {
  for (; t >= 0; t = p->tensors[t].base)
    if (t == of) return 1;
  return 0;
}

static int add(const ddp_plan *p, const ddp_instr *in, int slot, int write, uint64_t bytes, ddp_access *out,
               int n) {
  const ddp_bufref *r = &in->p[slot];
  if (r->tensor < 0) return n;
  const ddp_tensor *t = &p->tensors[r->tensor];
  uint64_t tensor_end = t->offset + t->bytes;
  uint64_t end = bytes ? r->offset + bytes : tensor_end;
  out[n] = (ddp_access){.slot = slot, .write = write, .arena = r->arena, .begin = r->offset, .end = end};
  return n + 1;
}

int ddp_instr_accesses(const ddp_plan *p, int rank, const ddp_instr *in, ddp_access *out) {
  int n = 0;
  int64_t world = p->meta.world;
  (void)rank;
  uint64_t es = ddp_dtype_size(in->dt[COLL_P_SEND]);
  uint64_t count = (uint64_t)in->i[COLL_I_COUNT]; /* = MEMSET_I_BYTES, COPY_I_BYTES */
  switch (in->opcode) {
  case I_KERNEL: {
    uint32_t wm = ddp_op_write_mask(in->op);
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      uint64_t elems = ddp_op_slot_elems(in, s);
      n = add(p, in, s, (wm >> s) & 1u, elems * ddp_dtype_size(in->dt[s]), out, n);
    }
    return n;
  }
  case I_GEMM:
    n = add(p, in, GEMM_P_A, 0, 0, out, n);
    n = add(p, in, GEMM_P_B, 0, 0, out, n);
    if (in->f[GEMM_F_BETA] != 0.0f) n = add(p, in, GEMM_P_C, 0, 0, out, n);
    return add(p, in, GEMM_P_D, 1, 0, out, n);
  case I_MEMSET:
    return add(p, in, MEMSET_P_DST, 1, count, out, n);
  case I_COPY:
    n = add(p, in, COPY_P_SRC, 0, count, out, n);
    return add(p, in, COPY_P_DST, 1, count, out, n);
  case I_ALL_REDUCE:
  case I_BROADCAST:
    n = add(p, in, COLL_P_SEND, 0, count * es, out, n);
    return add(p, in, COLL_P_RECV, 1, count * es, out, n);
  case I_REDUCE_SCATTER:
    n = add(p, in, COLL_P_SEND, 0, count * es * (uint64_t)world, out, n);
    return add(p, in, COLL_P_RECV, 1, count * es, out, n);
  case I_ALL_GATHER:
    n = add(p, in, COLL_P_SEND, 0, count * es, out, n);
    return add(p, in, COLL_P_RECV, 1, count * es * (uint64_t)world, out, n);
  case I_SEND:
    return add(p, in, COLL_P_BUF, 0, count * es, out, n);
  case I_RECV:
    return add(p, in, COLL_P_BUF, 1, count * es, out, n);
  case I_LOAD_BATCH:
    n = add(p, in, LOAD_BATCH_P_INPUTS, 1, 0, out, n);
    return add(p, in, LOAD_BATCH_P_TARGETS, 1, 0, out, n);
  case I_INIT_TENSOR:
    return add(p, in, INIT_TENSOR_P_TENSOR, 1, (uint64_t)in->i[INIT_TENSOR_I_ELEMENTS] * es, out, n);
  default:
    return 0;
  }
}

/* plan/access.c: read/write sets of instructions (see access.h). The per-op write masks mirror the
 * output slots documented in ops.h. */
#include "access.h"

#define W(...) (0u __VA_OPT__(| W_(__VA_ARGS__)))
#define W_(...) W_N(__VA_ARGS__, 0, 0, 0, 0, 0)
#define W_N(a, b, c, d, e, ...) ((1u << (a)) | (1u << (b)) | (1u << (c)) | (1u << (d)) | (1u << (e)))

static const uint32_t write_masks[OP_COUNT] = {
    [OP_EMBED_FWD] = W(2),          [OP_EMBED_BWD] = W(2),          [OP_RMSNORM_FWD] = W(2, 3),
    [OP_RMSNORM_BWD] = W(4, 5),     [OP_REDUCE_ROWS] = W(1),        [OP_SUM] = W(1),
    [OP_ROPE] = W(0),               [OP_ATTN_FWD] = W(3, 4),        [OP_ATTN_BWD_PREP] = W(2),
    [OP_ATTN_BWD_DKV] = W(7, 8),    [OP_ATTN_BWD_DQ] = W(9),        [OP_SWIGLU_FWD] = W(1),
    [OP_SWIGLU_BWD] = W(2),         [OP_XENT] = W(2, 3),            [OP_MSE] = W(2, 3),
    [OP_SUMSQ] = W(1),              [OP_OPT_SCALARS] = W(1),        [OP_ADAMW] = W(0, 2, 3, 4),
    [OP_SGD] = W(0, 2),             [OP_CAST] = W(1),               [OP_ADD] = W(2),
    [OP_SCALE] = W(0),              [OP_BIAS_ADD] = W(0),           [OP_RELU_FWD] = W(1),
    [OP_RELU_BWD] = W(2),           [OP_LAYERNORM_FWD] = W(3, 4, 5), [OP_LAYERNORM_BWD] = W(5, 6, 7),
    [OP_ATTN_NAIVE_SOFTMAX] = W(0, 1), [OP_ATTN_NAIVE_SOFTMAX_BWD] = W(1),
};

uint32_t ddp_op_write_mask(int op) { return op >= 0 && op < OP_COUNT ? write_masks[op] : 0; }

uint64_t ddp_op_slot_elems(const ddp_instr *in, int slot) {
  uint64_t n = (uint64_t)in->i[0];
  switch (in->op) {
  case OP_ADAMW: return slot <= 4 ? n : 0;  /* p5 scalars: to the tensor's end */
  case OP_SGD: return slot <= 2 ? n : 0;
  case OP_SUMSQ: return slot == 0 ? n : (uint64_t)in->i[1];
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
  uint64_t es = ddp_dtype_size(in->dt[0]);
  uint64_t count = (uint64_t)in->i[0];
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
    n = add(p, in, 0, 0, 0, out, n);
    n = add(p, in, 1, 0, 0, out, n);
    if (in->f[1] != 0.0f) n = add(p, in, 2, 0, 0, out, n);
    return add(p, in, 3, 1, 0, out, n);
  case I_MEMSET:
    return add(p, in, 0, 1, count, out, n);
  case I_COPY:
    n = add(p, in, 0, 0, count, out, n);
    return add(p, in, 1, 1, count, out, n);
  case I_ALL_REDUCE:
  case I_BROADCAST:
    n = add(p, in, 0, 0, count * es, out, n);
    return add(p, in, 1, 1, count * es, out, n);
  case I_REDUCE_SCATTER:
    n = add(p, in, 0, 0, count * es * (uint64_t)world, out, n);
    return add(p, in, 1, 1, count * es, out, n);
  case I_ALL_GATHER:
    n = add(p, in, 0, 0, count * es, out, n);
    return add(p, in, 1, 1, count * es * (uint64_t)world, out, n);
  case I_SEND:
    return add(p, in, 0, 0, count * es, out, n);
  case I_RECV:
    return add(p, in, 0, 1, count * es, out, n);
  case I_LOAD_BATCH:
    n = add(p, in, 0, 1, 0, out, n);
    return add(p, in, 1, 1, 0, out, n);
  case I_INIT_TENSOR:
    return add(p, in, 0, 1, (uint64_t)in->i[1] * es, out, n);
  default:
    return 0;
  }
}

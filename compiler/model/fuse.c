/* compiler/model/fuse.c: fused kernels the builder emits in place of a pair of passes over the same bytes
 * (the schedule's `fusion` field, compiler/frontend/fusion.c, turns each off).
 *
 * norm_cast: under mixed precision the residual stream's gradient is f32 and the GEMMs of the linear
 * layers that read it (output_proj, w2) take it in bf16, so each of them starts with a CAST of the f32
 * gradient right after the RMSNorm backward that finished it (ln2 for output_proj, ln1 of the block
 * above, or ln_final, for w2). b_cast_grad turns that RMSNORM_BWD into RMSNORM_BWD_CAST, which writes the
 * bf16 copy from its registers: the cast's read of the f32 gradient (4 bytes an element) and one launch
 * are saved, and the values are those of the CAST (the new dx as stored, then rounded).
 *
 * rope: the backward of RoPE is the inverse rotation of dq and dk in place (ROPE inverse = 1 over the q and
 * k columns of dqkv) right after the attention backward wrote them. b_fuse_rope_bwd lets the attention
 * backward emit ATTN_BWD_DKV_ROPE / ATTN_BWD_DQ_ROPE instead, which rotate dk / dq in registers as they store
 * them, and marks the RoPE node so that its backward emits nothing: one read and one write of dq and dk
 * (2 x 2 x N x 2D bytes in bf16) and a launch saved per layer. bf16 only (the tensor-core kernels; f32 keeps
 * the pair); the GPU rounds dq / dk once instead of twice. */
#include "access.h"
#include "models.h"
#include <string.h>

/* Instructions the search looks back over; between the RMSNorm backward and the cast there are only its
 * REDUCE_ROWS and range markers. */
#define FUSE_LOOKBACK 8

static bool touches(const ddp_builder *b, const ddp_instr *in, int32_t root) {
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (in->p[k].tensor >= 0 && ddp_tensor_root(b->plan, in->p[k].tensor) == root) return true;
  return false;
}

/* The RMSNORM_BWD that last wrote all of t (as its dx) with nothing after it touching t's memory, or -1. */
static int64_t norm_bwd_writer(const ddp_builder *b, int32_t t) {
  const int32_t root = ddp_tensor_root(b->plan, t);
  const uint64_t n = ddp_tensor_numel(b_t(b, t));
  for (int64_t k = (int64_t)b->step.n - 1, seen = 0; k >= 0 && seen < FUSE_LOOKBACK; k--, seen++) {
    const ddp_instr *in = &b->step.v[k];
    if (in->stream != STREAM_COMPUTE) return -1;
    if (in->opcode == I_RANGE_PUSH || in->opcode == I_RANGE_POP) continue;
    if (in->opcode == I_KERNEL && in->op == OP_RMSNORM_BWD && in->p[RMSNORM_BWD_P_DX].tensor == t &&
        in->p[RMSNORM_BWD_P_DX].view == 0 && b_t(b, t)->base < 0 &&
        (uint64_t)(in->i[RMSNORM_BWD_I_N] * in->i[RMSNORM_BWD_I_D]) == n) {
      /* a pipeline cuts the step by layer: both halves must stay in one chunk */
      if (b->s->stages > 0 && in->layer != b->layer) return -1;
      return k;
    }
    if (in->opcode != I_KERNEL || touches(b, in, root)) return -1;
  }
  return -1;
}

int32_t b_cast_grad(ddp_builder *b, int32_t t, int dtype, const char *name) {
  const ddp_tensor *tt = b_t(b, t);
  if (tt->dtype == dtype || !b->s->fuse_norm_cast) return b_as_dtype(b, t, dtype, name);
  int64_t k = norm_bwd_writer(b, t);
  if (k < 0) return b_as_dtype(b, t, dtype, name);
  int64_t shape[DDP_MAX_DIMS];
  memcpy(shape, tt->shape, sizeof shape);
  int32_t out = b_tensor(b, name, dtype, ARENA_ACT, 0, tt->ndim, shape); /* tt may move */
  ddp_instr *in = &b->step.v[k];
  in->op = OP_RMSNORM_BWD_CAST;
  b_buf(b, in, RMSNORM_BWD_CAST_P_DX_CAST, out);
  return out;
}

bool b_fuse_rope_bwd(ddp_builder *b, int32_t qkv, int64_t d, int64_t heads) {
  /* the fused attention backward (ATTN_BWD_FUSED) has no inverse-RoPE variant: ROPE runs on its own */
  if (!b->s->fuse_rope || b->s->fuse_attn_bwd || b_t(b, qkv)->dtype != DT_BF16 || b->rope_freq < 0) return false;
  for (int k = b->ntape - 1; k >= 0; k--) {
    ddp_node *n = &b->tape[k];
    if (n->kind != LK_ROPE || n->t[0] != qkv) continue;
    if (n->i[0] != d || n->i[1] != heads || n->i[2]) return false; /* another geometry, or already fused */
    n->i[2] = 1; /* layer_rope_bwd: the attention backward rotated the gradient back */
    return true;
  }
  return false;
}

/* compiler/model/layers/attention.c: RoPE (in place on the q and k columns of the fused qkv activation,
 * adjacent pairs, angle = pos * theta^(-2i/d_head)) and causal multi-head attention (FlashAttention:
 * ATTN_FWD saves the log-sum-exp; the backward is PREP (delta) + DKV + DQ, recomputing P; with the
 * schedule's fusion.rope in bf16, DKV and DQ also apply RoPE's backward: compiler/model/fuse.c). */
#include "layers.h"
#include <math.h>

static void rope_instr(ddp_builder *b, int32_t t, int64_t d, int64_t heads, int inverse, const char *name) {
  const ddp_schedule *s = b->s;
  int64_t dh = d / heads;
  ddp_instr in = b_kernel(OP_ROPE);
  b_buf(b, &in, ROPE_P_X, t);
  b_buf(b, &in, ROPE_P_INV_FREQ, b->rope_freq);
  in.i[ROPE_I_B] = b->rows / s->context;
  in.i[ROPE_I_T] = s->context;
  in.i[ROPE_I_H] = 2 * heads; /* q heads then k heads: the first 2*d columns of a row */
  in.i[ROPE_I_DH] = dh;
  in.i[ROPE_I_STRIDE] = 3 * d;
  in.i[ROPE_I_INVERSE] = inverse;
  b_emit(b, in, name);
}

void layer_rope(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads) {
  rope_instr(b, qkv, d, heads, 0, name);
  ddp_node *n = b_record(b, LK_ROPE, name);
  n->t[0] = qkv;
  n->i[0] = d;
  n->i[1] = heads;
  n->i[2] = 0; /* 1: the attention backward applies this backward (b_fuse_rope_bwd) */
}

void layer_rope_bwd(ddp_builder *b, const ddp_node *n) {
  if (!b_has_grad(b, n->t[0]) || n->i[2]) return;
  rope_instr(b, b_grad(b, n->t[0]), n->i[0], n->i[1], 1, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

static void attn_ints(ddp_builder *b, ddp_instr *in, int64_t d, int64_t heads) {
  in->i[ATTN_I_B] = b->rows / b->s->context;
  in->i[ATTN_I_T] = b->s->context;
  in->i[ATTN_I_H] = heads;
  in->i[ATTN_I_DH] = d / heads;
  in->i[ATTN_I_QSTRIDE] = in->i[ATTN_I_KSTRIDE] = in->i[ATTN_I_VSTRIDE] = 3 * d;
  in->i[ATTN_I_OSTRIDE] = d;
  in->i[ATTN_I_CAUSAL] = 1;
  in->f[ATTN_F_SCALE] = (float)(1.0 / sqrt((double)(d / heads)));
}

int32_t layer_attention(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads) {
  int dt = b_t(b, qkv)->dtype;
  uint64_t es = ddp_dtype_size(dt);
  int64_t B = b->rows / b->s->context, T = b->s->context;
  int32_t o = b_act(b, b_fmt(b, "%s.out", name), dt, b->rows, d);
  int64_t lshape[3] = {B, heads, T};
  int32_t lse = b_saved(b, b_fmt(b, "%s.lse", name), b->fdt, 3, lshape);
  ddp_instr in = b_kernel(OP_ATTN_FWD);
  b_arg(&in, ATTN_P_Q, qkv, 0, dt);
  b_arg(&in, ATTN_P_K, qkv, (uint64_t)d * es, dt);
  b_arg(&in, ATTN_P_V, qkv, 2 * (uint64_t)d * es, dt);
  b_buf(b, &in, ATTN_P_O, o);
  b_buf(b, &in, ATTN_P_LSE, lse);
  attn_ints(b, &in, d, heads);
  b_emit(b, in, name);
  double fwd = 4.0 * (double)B * (double)heads * (double)T * (double)T * (double)(d / heads) * 0.5;
  b->flops += (b->backward ? 3.5 : 1.0) * fwd; /* forward + backward (2.5x forward), causal half */
  ddp_node *n = b_record(b, LK_ATTENTION, name);
  n->t[0] = qkv;
  n->t[1] = o;
  n->t[2] = lse;
  n->i[0] = d;
  n->i[1] = heads;
  return o;
}

void layer_attention_bwd(ddp_builder *b, const ddp_node *n) {
  int32_t qkv = n->t[0], o = n->t[1], lse = n->t[2];
  if (!b_has_grad(b, o)) return;
  int64_t d = n->i[0], heads = n->i[1];
  int64_t B = b->rows / b->s->context, T = b->s->context;
  const char *name = ddp_plan_string(b->plan, n->name);
  int dt = b_t(b, qkv)->dtype;
  uint64_t es = ddp_dtype_size(dt);
  int32_t dout = b_grad(b, o);
  int32_t dqkv = b_grad(b, qkv);
  b_grad_acc(b, dqkv); /* attention writes all of dq, dk, dv */
  int64_t lshape[3] = {B, heads, T};
  int32_t delta = b_tensor(b, b_fmt(b, "%s.delta", name), b->fdt, ARENA_ACT, 0, 3, lshape);
  /* fusion.attention_backward: dk, dv and dq from one pass, dq summed into an f32 accumulator in tiles of
   * 64 rows x the head dim rounded up to 64 (plan/op_slots.h), which the prep zeroes */
  const bool fused = b->s->fuse_attn_bwd;
  int32_t dq_acc = -1;
  if (fused) {
    const int64_t ashape[4] = {B, heads, (T + 63) / 64 * 64, (d / heads + 63) / 64 * 64};
    dq_acc = b_tensor(b, b_fmt(b, "%s.dq_acc", name), DT_F32, ARENA_ACT, 0, 4, ashape);
  }

  ddp_instr prep = b_kernel(OP_ATTN_BWD_PREP);
  b_buf(b, &prep, ATTN_BWD_PREP_P_O, o);
  b_buf(b, &prep, ATTN_BWD_PREP_P_DO, dout);
  b_buf(b, &prep, ATTN_BWD_PREP_P_DELTA, delta);
  if (fused) b_buf(b, &prep, ATTN_BWD_PREP_P_DQACC, dq_acc);
  attn_ints(b, &prep, d, heads);
  b_emit(b, prep, b_fmt(b, "%s.bwd_prep", name));

  const bool rope = b_fuse_rope_bwd(b, qkv, d, heads); /* dk, dq rotated back as they are stored */
  ddp_instr kv = b_kernel(fused ? OP_ATTN_BWD_FUSED : rope ? OP_ATTN_BWD_DKV_ROPE : OP_ATTN_BWD_DKV);
  b_arg(&kv, ATTN_P_Q, qkv, 0, dt);
  b_arg(&kv, ATTN_P_K, qkv, (uint64_t)d * es, dt);
  b_arg(&kv, ATTN_P_V, qkv, 2 * (uint64_t)d * es, dt);
  b_buf(b, &kv, ATTN_P_LSE, lse);
  b_buf(b, &kv, ATTN_P_DO, dout);
  b_buf(b, &kv, ATTN_P_DELTA, delta);
  if (rope) b_buf(b, &kv, ATTN_P_INV_FREQ, b->rope_freq);
  ddp_instr dq = kv;
  b_arg(&kv, ATTN_P_DK, dqkv, (uint64_t)d * es, dt);
  b_arg(&kv, ATTN_P_DV, dqkv, 2 * (uint64_t)d * es, dt);
  if (fused) b_buf(b, &kv, ATTN_P_DQACC, dq_acc);
  attn_ints(b, &kv, d, heads);
  b_emit(b, kv, b_fmt(b, "%s.%s", name, fused ? "bwd_fused" : "bwd_dkv"));

  if (fused) { /* ATTN_DQ_STORE reads only the accumulator */
    dq = b_kernel(OP_ATTN_DQ_STORE);
    b_buf(b, &dq, ATTN_P_DQACC, dq_acc);
  } else {
    dq.op = rope ? OP_ATTN_BWD_DQ_ROPE : OP_ATTN_BWD_DQ;
  }
  b_arg(&dq, ATTN_P_DQ, dqkv, 0, dt);
  attn_ints(b, &dq, d, heads);
  b_emit(b, dq, b_fmt(b, "%s.%s", name, fused ? "dq_store" : "bwd_dq"));
}

/* compiler/model/layers/attention.c: RoPE (in place on the q and k columns of the fused qkv activation,
 * adjacent pairs, angle = pos * theta^(-2i/d_head)) and causal multi-head attention (FlashAttention:
 * ATTN_FWD saves the log-sum-exp; the backward is PREP (delta) + DKV + DQ, recomputing P). */
#include "layers.h"
#include <math.h>

static void rope_instr(ddp_builder *b, int32_t t, int64_t d, int64_t heads, int inverse, const char *name) {
  const ddp_schedule *s = b->s;
  int64_t dh = d / heads;
  ddp_instr in = b_kernel(OP_ROPE);
  b_buf(b, &in, 0, t);
  b_buf(b, &in, 1, b->rope_freq);
  in.i[0] = b->rows / s->context;
  in.i[1] = s->context;
  in.i[2] = 2 * heads; /* q heads then k heads: the first 2*d columns of a row */
  in.i[3] = dh;
  in.i[4] = 3 * d;
  in.i[5] = inverse;
  b_emit(b, in, name);
}

void layer_rope(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads) {
  rope_instr(b, qkv, d, heads, 0, name);
  ddp_node *n = b_record(b, LK_ROPE, name);
  n->t[0] = qkv;
  n->i[0] = d;
  n->i[1] = heads;
}

void layer_rope_bwd(ddp_builder *b, const ddp_node *n) {
  if (!b_has_grad(b, n->t[0])) return;
  rope_instr(b, b_grad(b, n->t[0]), n->i[0], n->i[1], 1, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

static void attn_ints(ddp_builder *b, ddp_instr *in, int64_t d, int64_t heads) {
  in->i[0] = b->rows / b->s->context;
  in->i[1] = b->s->context;
  in->i[2] = heads;
  in->i[3] = d / heads;
  in->i[4] = in->i[5] = in->i[6] = 3 * d;
  in->i[7] = d;
  in->i[8] = 1;
  in->f[0] = (float)(1.0 / sqrt((double)(d / heads)));
}

int32_t layer_attention(ddp_builder *b, const char *name, int32_t qkv, int64_t d, int64_t heads) {
  int dt = b_t(b, qkv)->dtype;
  uint64_t es = ddp_dtype_size(dt);
  int64_t B = b->rows / b->s->context, T = b->s->context;
  int32_t o = b_act(b, b_fmt(b, "%s.out", name), dt, b->rows, d);
  int64_t lshape[3] = {B, heads, T};
  int32_t lse = b_saved(b, b_fmt(b, "%s.lse", name), b->fdt, 3, lshape);
  ddp_instr in = b_kernel(OP_ATTN_FWD);
  b_arg(&in, 0, qkv, 0, dt);
  b_arg(&in, 1, qkv, (uint64_t)d * es, dt);
  b_arg(&in, 2, qkv, 2 * (uint64_t)d * es, dt);
  b_buf(b, &in, 3, o);
  b_buf(b, &in, 4, lse);
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

  ddp_instr prep = b_kernel(OP_ATTN_BWD_PREP);
  b_buf(b, &prep, 0, o);
  b_buf(b, &prep, 1, dout);
  b_buf(b, &prep, 2, delta);
  attn_ints(b, &prep, d, heads);
  b_emit(b, prep, b_fmt(b, "%s.bwd_prep", name));

  ddp_instr kv = b_kernel(OP_ATTN_BWD_DKV);
  b_arg(&kv, 0, qkv, 0, dt);
  b_arg(&kv, 1, qkv, (uint64_t)d * es, dt);
  b_arg(&kv, 2, qkv, 2 * (uint64_t)d * es, dt);
  b_buf(b, &kv, 4, lse);
  b_buf(b, &kv, 5, dout);
  b_buf(b, &kv, 6, delta);
  ddp_instr dq = kv;
  b_arg(&kv, 7, dqkv, (uint64_t)d * es, dt);
  b_arg(&kv, 8, dqkv, 2 * (uint64_t)d * es, dt);
  attn_ints(b, &kv, d, heads);
  b_emit(b, kv, b_fmt(b, "%s.bwd_dkv", name));

  dq.op = OP_ATTN_BWD_DQ;
  b_arg(&dq, 9, dqkv, 0, dt);
  attn_ints(b, &dq, d, heads);
  b_emit(b, dq, b_fmt(b, "%s.bwd_dq", name));
}

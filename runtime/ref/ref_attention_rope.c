/* runtime/ref/ref_attention_rope.c: ATTN_BWD_DKV_ROPE and ATTN_BWD_DQ_ROPE (plan/ops.h), the attention
 * backward fused with the inverse RoPE of its dk / dq: the unfused op (ref_attention.c), then ROPE with
 * inverse = 1 (ref_rope.c) over the output's heads, in place. Exactly the unfused pair's arithmetic, so a
 * fused plan's reference run equals the unfused one bit for bit. */
#include "ref_ops.h"

/* ROPE(inverse) over the H heads of the attention output in slot `out` (row stride `stride`). */
static void rotate_back(const ddp_kargs *a, const uint8_t *dt, int out, int64_t stride) {
  ddp_kargs r = {0};
  uint8_t rdt[DDP_MAX_PTRS] = {0};
  r.p[ROPE_P_X] = a->p[out];
  r.p[ROPE_P_INV_FREQ] = a->p[ATTN_P_INV_FREQ];
  rdt[ROPE_P_X] = dt[out];
  rdt[ROPE_P_INV_FREQ] = dt[ATTN_P_INV_FREQ];
  r.i[ROPE_I_B] = a->i[ATTN_I_B];
  r.i[ROPE_I_T] = a->i[ATTN_I_T];
  r.i[ROPE_I_H] = a->i[ATTN_I_H];
  r.i[ROPE_I_DH] = a->i[ATTN_I_DH];
  r.i[ROPE_I_STRIDE] = stride;
  r.i[ROPE_I_INVERSE] = 1;
  ref_rope(&r, rdt);
}

void ref_attn_bwd_dkv_rope(const ddp_kargs *a, const uint8_t *dt) {
  ref_attn_bwd_dkv(a, dt);
  rotate_back(a, dt, ATTN_P_DK, a->i[ATTN_I_KSTRIDE]);
}

void ref_attn_bwd_dq_rope(const ddp_kargs *a, const uint8_t *dt) {
  ref_attn_bwd_dq(a, dt);
  rotate_back(a, dt, ATTN_P_DQ, a->i[ATTN_I_QSTRIDE]);
}

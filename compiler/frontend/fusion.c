/* compiler/frontend/fusion.c: the schedule's `fusion` field, which fused kernels the compiler may emit
 * (each one replaces a pair of passes over the same bytes; off gives the unfused pair, for comparison):
 *   (no field)                        norm_cast on, rope off (the measured default: below)
 *   fusion = true | false             every fusion on or off (--set fusion=false)
 *   fusion = { rope = true }          one by one; a field left out keeps its default
 * norm_cast: RMSNORM_BWD_CAST, the RMSNorm backward that also writes the bf16 copy of the residual
 * gradient the next GEMMs read, instead of RMSNORM_BWD followed by a CAST (mixed precision only: with
 * one dtype there is no cast to fuse).
 * rope: ATTN_BWD_DKV_ROPE / ATTN_BWD_DQ_ROPE, the attention backward that rotates dk / dq back as it stores
 * them, instead of the attention backward followed by RoPE's backward (ROPE inverse) on dq and dk (bf16
 * only: the tensor-core kernels). Off by default: on the XL step on an H200 it made the step 0.3-0.4 ms
 * slower than norm_cast alone (docs/PERFORMANCE.md, 2026-11-23), the fused attention backward costing more
 * than the ROPE passes it removes.
 * attention_backward: ATTN_BWD_FUSED + ATTN_DQ_STORE, dK, dV and dQ from one computation of S and dP, dQ
 * summed in f32 by bulk reductions whose order is not fixed, instead of ATTN_BWD_DKV + ATTN_BWD_DQ (bf16 at
 * head dims 56, 64, 120, 128 on sm_90a: codegen refuses anything else by name). Since it gives up
 * run-to-run reproducibility it is asked for by name only: `fusion = true` leaves it off. It takes the
 * attention backward's place in `rope` (the ROPE inverse then runs on its own). */
#include "fe.h"

void fe_fusion(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"norm_cast", "rope", "attention_backward", NULL};
  ddp_schedule *s = c->s;
  s->fuse_norm_cast = true;
  s->fuse_rope = false;
  s->fuse_attn_bwd = false;
  int ty = fe_type(c, root, "fusion");
  if (ty == LUA_TNIL) return;
  if (ty == LUA_TBOOLEAN) {
    bool on = false;
    fe_bool(c, root, "fusion", &on);
    s->fuse_norm_cast = s->fuse_rope = on;
    return;
  }
  fe_tab f;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "fusion", &f, "true, false or a table such as { rope = true }"))
    fe_bad(c, root, "fusion", "must be true, false or a table such as { rope = true }");
  fe_known(c, &f, fields);
  fe_bool(c, &f, "norm_cast", &s->fuse_norm_cast);
  fe_bool(c, &f, "rope", &s->fuse_rope);
  fe_bool(c, &f, "attention_backward", &s->fuse_attn_bwd);
  if (!s->fuse_attn_bwd) return;
  /* what the GPU kernel needs (compiler/codegen/launch.c), said here in the schedule's terms */
  const int64_t dh = s->heads > 0 ? s->d_model / s->heads : 0, padded = (dh + 15) / 16 * 16;
  if (s->model_kind != MODEL_TRANSFORMER || s->attention != ATTN_FLASH)
    fe_bad(c, &f, "attention_backward", "needs a transformer with model.attention = \"flash\"");
  else if (s->precision != PREC_BF16)
    fe_bad(c, &f, "attention_backward", "needs precision = \"bf16\" (the fused kernel is bf16 only)");
  else if (dh % 8 || (padded != 64 && padded != 128))
    fe_bad(c, &f, "attention_backward", "needs a head dim of 56, 64, 120 or 128 (model.d_model %lld / heads %lld = %lld)",
           (long long)s->d_model, (long long)s->heads, (long long)dh);
}

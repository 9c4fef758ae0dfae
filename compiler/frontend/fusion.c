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
 * than the ROPE passes it removes. */
#include "fe.h"

void fe_fusion(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"norm_cast", "rope", NULL};
  ddp_schedule *s = c->s;
  s->fuse_norm_cast = true;
  s->fuse_rope = false;
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
}

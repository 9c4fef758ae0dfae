/* compiler/frontend/fusion.c: the schedule's `fusion` field, which fused kernels the compiler may emit
 * (each one replaces a pair of passes over the same bytes; off gives the unfused pair, for comparison):
 *   fusion = true | false             every fusion on (the default) or off (--set fusion=false)
 *   fusion = { norm_cast = false }    one by one; a field left out stays on
 * norm_cast: RMSNORM_BWD_CAST, the RMSNorm backward that also writes the bf16 copy of the residual
 * gradient the next GEMMs read, instead of RMSNORM_BWD followed by a CAST (mixed precision only: with
 * one dtype there is no cast to fuse).
 * rope: ATTN_BWD_DKV_ROPE / ATTN_BWD_DQ_ROPE, the attention backward that rotates dk / dq back as it stores
 * them, instead of the attention backward followed by RoPE's backward (ROPE inverse) on dq and dk (bf16
 * only: the tensor-core kernels). */
#include "fe.h"

void fe_fusion(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"norm_cast", "rope", NULL};
  ddp_schedule *s = c->s;
  s->fuse_norm_cast = s->fuse_rope = true;
  int ty = fe_type(c, root, "fusion");
  if (ty == LUA_TNIL) return;
  if (ty == LUA_TBOOLEAN) {
    bool on = true;
    fe_bool(c, root, "fusion", &on);
    s->fuse_norm_cast = s->fuse_rope = on;
    return;
  }
  fe_tab f;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "fusion", &f, "true, false or a table such as { norm_cast = false }"))
    fe_bad(c, root, "fusion", "must be true, false or a table such as { norm_cast = false }");
  fe_known(c, &f, fields);
  fe_bool(c, &f, "norm_cast", &s->fuse_norm_cast);
  fe_bool(c, &f, "rope", &s->fuse_rope);
}

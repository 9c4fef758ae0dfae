/* compiler/frontend/parallel.c: schedule.parallel, ddp{...} or single() (also when omitted), into the
 * ddp_schedule's parallel layout: ranks, sync mode, buckets (size or Lua function), overlap, sharding,
 * initialisation, gradient dtype. Cross-checks with the optimizer live in convert.c. */
#include "fe.h"
#include "dtype.h"
#include "plan.h"
#include <stdio.h>


static void fe_single(ddp_schedule *s) {
  s->ranks = 1;
  s->sync = SYNC_NONE;
  s->shard = SHARD_NONE;
  s->broadcast_init = true;
  s->prefetch_forward = s->prefetch_backward = 1;
  s->reshard_after_forward = true;
  s->gather_dtype = s->precision == PREC_BF16 ? DT_BF16 : DT_F32;
}

static void fe_ddp(fe_conv *c, const fe_tab *p) {
  static const char *const fields[] = {"ranks", "sync", "bucket_mb", "buckets", "overlap", "optimizer_overlap",
                                       "grad_dtype", "shard", "broadcast", "identical_init", NULL};
  ddp_schedule *s = c->s;
  fe_known(c, p, fields);
  fe_required(c, p, "ranks");
  s->ranks = (int)fe_int_in(c, p, "ranks", 1, 1, 1024);

  int sync = 3; /* bucketed, as torch's DDP */
  fe_enum(c, p, "sync", ddp_sync_names + SYNC_NAIVE, &sync); /* "none" is single() */
  s->sync = SYNC_NAIVE + sync;
  bool bucketed = s->sync == SYNC_BUCKETED;

  bool has_mb = fe_num(c, p, "bucket_mb", &s->bucket_mb, "a positive number (MB)");
  if (has_mb && !bucketed) fe_bad(c, p, "bucket_mb", "only applies with sync = \"bucketed\"");
  if (has_mb && !(s->bucket_mb > 0 && s->bucket_mb <= 1048576))
    fe_bad(c, p, "bucket_mb", "must be a positive number of MB (at most 1048576)");
  int bt = fe_type(c, p, "buckets");
  if (bt != LUA_TNIL) {
    if (bt != LUA_TFUNCTION) fe_bad(c, p, "buckets", "must be a function(params) returning a list of buckets");
    if (!bucketed) fe_bad(c, p, "buckets", "only applies with sync = \"bucketed\"");
    if (has_mb) fe_fail(c, p, "buckets", "and parallel.bucket_mb cannot both be given (the function decides)");
    lua_pushstring(c->L, "buckets");
    lua_rawget(c->L, p->idx);
    c->sb->bucket_ref = luaL_ref(c->L, LUA_REGISTRYINDEX);
    snprintf(c->sb->bucket_where, sizeof c->sb->bucket_where, "%s", p->where);
    s->bucket_policy = fe_bucket_policy;
    s->bucket_policy_ctx = c->sb;
    s->bucket_mb = 0;
  } else if (bucketed && !has_mb)
    s->bucket_mb = 25;

  bool can_overlap = s->sync == SYNC_INDIVIDUAL || bucketed;
  int ov = can_overlap ? OVERLAP_BACKWARD : OVERLAP_NONE;
  if (fe_enum(c, p, "overlap", ddp_overlap_names, &ov) && ov == OVERLAP_BACKWARD && !can_overlap)
    fe_bad(c, p, "overlap", "needs sync = \"individual\" or \"bucketed\" (naive and flat sync after the backward)");
  s->overlap_backward = ov == OVERLAP_BACKWARD;

  s->optimizer_overlap = false;
  if (fe_bool(c, p, "optimizer_overlap", &s->optimizer_overlap) && s->optimizer_overlap &&
      !(bucketed && s->overlap_backward))
    fe_bad(c, p, "optimizer_overlap", "needs sync = \"bucketed\" with overlap = \"backward\"");

  int shard = 0;
  fe_enum(c, p, "shard", ddp_shard_names, &shard);
  s->shard = shard;
  if (s->shard == SHARD_ZERO1 && s->sync != SYNC_FLAT && !bucketed)
    fe_bad(c, p, "shard", "needs sync = \"flat\" or \"bucketed\" when it is \"zero1\" (ZeRO-1 reduce-scatters the "
           "gradients)");
  if (s->shard != SHARD_NONE && s->optimizer_overlap)
    fe_bad(c, p, "optimizer_overlap", "cannot be combined with shard = \"%s\"", ddp_shard_names[shard]);

  s->broadcast_init = true;
  s->identical_init = false;
  fe_bool(c, p, "broadcast", &s->broadcast_init);
  fe_bool(c, p, "identical_init", &s->identical_init);
  if (s->ranks > 1 && !s->broadcast_init && !s->identical_init)
    fe_bad(c, p, "broadcast", "may be false only with identical_init = true (else the ranks start from different "
           "weights)");
}

void fe_parallel(fe_conv *c, const fe_tab *root) {
  fe_tab p;
  fe_single(c->s);
  if (!fe_sub(c, root, "parallel", &p, "ddp{...} or single()")) return;
  int k = fe_kind_of(c->L, p.idx);
  if (k == FE_K_SINGLE) {
    static const char *const none[] = {NULL};
    fe_known(c, &p, none);
  } else if (k == FE_K_DDP)
    fe_ddp(c, &p);
  else
    fe_bad(c, root, "parallel", "must be made by ddp{...} or single()");
}

/* grad_dtype may be given at the top level or in ddp{}; both must agree. */
void fe_grad_dtype(fe_conv *c, const fe_tab *root) {
  int top = -1, in_ddp = -1;
  fe_enum(c, root, "grad_dtype", ddp_precision_names, &top);
  fe_tab p;
  bool have_p = fe_sub(c, root, "parallel", &p, "ddp{...} or single()");
  if (have_p && fe_kind_of(c->L, p.idx) == FE_K_DDP) fe_enum(c, &p, "grad_dtype", ddp_precision_names, &in_ddp);
  if (top >= 0 && in_ddp >= 0 && top != in_ddp)
    fe_bad(c, &p, "grad_dtype", "disagrees with grad_dtype = \"%s\" at the top level", ddp_precision_names[top]);
  int g = top >= 0 ? top : in_ddp >= 0 ? in_ddp : 0;
  c->s->grad_dtype = g == PREC_BF16 ? DT_BF16 : DT_F32;
  if (g == PREC_BF16 && c->s->precision != PREC_BF16) {
    if (in_ddp >= 0) fe_bad(c, &p, "grad_dtype", "may be \"bf16\" only with precision = \"bf16\"");
    fe_bad(c, root, "grad_dtype", "may be \"bf16\" only with precision = \"bf16\"");
  }
}

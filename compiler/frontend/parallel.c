/* compiler/frontend/parallel.c: schedule.parallel, ddp{...}, fsdp{...} or single() (also when omitted), into
 * the ddp_schedule's parallel layout: ranks, sync mode, buckets (size or Lua function), overlap, sharding
 * (optimizer, zero1..zero3), the FSDP options (units, prefetch, resharding, gather dtype), initialisation,
 * gradient dtype (fsdp{}: reduce_dtype). pipeline{...} is read by pipeline.c. Cross-checks with the
 * optimizer live in convert.c. */
#include "fe.h"
#include "dtype.h"
#include "plan.h"
#include <stdio.h>

#define FE_PARALLEL_NEED "ddp{...}, fsdp{...}, pipeline{...} or single()"

static void fe_single(ddp_schedule *s) {
  s->ranks = 1;
  s->sync = SYNC_NONE;
  s->shard = SHARD_NONE;
  s->broadcast_init = true;
  s->prefetch_forward = s->prefetch_backward = 1;
  s->single_optimizer_overlap = true;
  s->reshard_after_forward = true;
  s->gather_dtype = s->precision == PREC_BF16 ? DT_BF16 : DT_F32;
}

/* p.key (a function, already checked) becomes the bucket policy; its errors say parallel.<key> and `noun`. */
static void fe_take_policy(fe_conv *c, const fe_tab *p, const char *key, const char *noun) {
  ddp_schedule *s = c->s;
  lua_pushstring(c->L, key);
  lua_rawget(c->L, p->idx);
  c->sb->bucket_ref = luaL_ref(c->L, LUA_REGISTRYINDEX);
  snprintf(c->sb->bucket_where, sizeof c->sb->bucket_where, "%s", p->where);
  snprintf(c->sb->bucket_field, sizeof c->sb->bucket_field, "parallel.%s", key);
  snprintf(c->sb->bucket_noun, sizeof c->sb->bucket_noun, "%s", noun);
  s->bucket_policy = fe_bucket_policy;
  s->bucket_policy_ctx = c->sb;
  snprintf(s->bucket_field, sizeof s->bucket_field, "parallel.%s", key);
  s->bucket_mb = 0;
}

void fe_init_fields(fe_conv *c, const fe_tab *p, int copies) {
  ddp_schedule *s = c->s;
  s->broadcast_init = true;
  s->identical_init = false;
  fe_bool(c, p, "broadcast", &s->broadcast_init);
  fe_bool(c, p, "identical_init", &s->identical_init);
  if (copies > 1 && !s->broadcast_init && !s->identical_init)
    fe_bad(c, p, "broadcast", "may be false only with identical_init = true (else the ranks start from different "
           "weights)");
}

static void fe_ddp(fe_conv *c, const fe_tab *p) {
  static const char *const fields[] = {"ranks", "sync", "bucket_mb", "buckets", "overlap", "optimizer_overlap",
                                       "grad_dtype", "shard", "param_gather", "master_group", "broadcast",
                                       "identical_init", NULL};
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
    fe_take_policy(c, p, "buckets", "bucket");
  } else if (bucketed && !has_mb)
    s->bucket_mb = 25; /* zero3 without either: 0 below (one unit per block, the compiler's default) */

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
  if ((s->shard == SHARD_ZERO1 || s->shard == SHARD_ZERO2) && s->sync != SYNC_FLAT && !bucketed)
    fe_bad(c, p, "shard", "needs sync = \"flat\" or \"bucketed\" when it is \"%s\" (ZeRO-%c reduce-scatters the "
           "gradients)", ddp_shard_names[shard], ddp_shard_names[shard][4]);
  if (s->shard == SHARD_ZERO3 && !bucketed)
    fe_bad(c, p, "shard", "needs sync = \"bucketed\" when it is \"zero3\" (the buckets are the units whose "
           "parameters are gathered)");
  if (s->shard == SHARD_ZERO3 && bucketed && !has_mb && !s->bucket_policy) s->bucket_mb = 0;
  static const char *const gathers[] = {"after_update", "before_forward", NULL};
  int pg = 0;
  if (fe_enum(c, p, "param_gather", gathers, &pg) && pg == 1 && s->shard != SHARD_ZERO1 && s->shard != SHARD_ZERO2)
    fe_bad(c, p, "param_gather", "may be \"before_forward\" only with shard = \"zero1\" or \"zero2\" (ZeRO-3 gathers "
           "before every use, and without ZeRO nothing is gathered)");
  s->gather_before_forward = pg == 1;
  static const char *const master_groups[] = {"per_bucket", "last", NULL};
  int mg = s->shard == SHARD_ZERO1 || s->shard == SHARD_ZERO2; /* "last" where it applies */
  if (fe_enum(c, p, "master_group", master_groups, &mg) && mg == 1 && s->shard != SHARD_ZERO1 && s->shard != SHARD_ZERO2)
    fe_fail(c, p, "master_group", "may be \"last\" only with shard = \"zero1\" or \"zero2\" (ZeRO-3 gathers each "
           "unit's fp32 parameters with the unit)");
  s->master_group_last = mg == 1;
  if (s->shard == SHARD_OPTIMIZER && s->optimizer_overlap)
    fe_bad(c, p, "optimizer_overlap", "cannot be combined with shard = \"optimizer\" (the owners broadcast after "
           "every update; use shard = \"zero1\", whose groups are updated and all-gathered one by one)");
  fe_init_fields(c, p, s->ranks);
  s->single_optimizer_overlap = s->optimizer_overlap; /* one rank compiles as single(): with this ddp{}'s choice */
}

/* fsdp{...}: ZeRO-3 (parameters, gradients and optimizer state sharded), bucketed, overlapped. */
static void fe_fsdp(fe_conv *c, const fe_tab *p) {
  static const char *const fields[] = {"ranks", "units", "prefetch", "prefetch_forward", "prefetch_backward",
                                       "reshard_after_forward", "gather_dtype", "reduce_dtype", "optimizer_overlap",
                                       "broadcast", "identical_init", NULL};
  ddp_schedule *s = c->s;
  fe_known(c, p, fields);
  fe_required(c, p, "ranks");
  s->ranks = (int)fe_int_in(c, p, "ranks", 1, 1, 1024);
  s->sync = SYNC_BUCKETED;
  s->overlap_backward = true;
  s->optimizer_overlap = false;
  s->shard = SHARD_ZERO3;
  s->bucket_mb = 0; /* one unit per transformer block (plus embedding and head) unless `units` is given */

  int ut = fe_type(c, p, "units");
  if (ut != LUA_TNIL) {
    if (ut != LUA_TFUNCTION) fe_bad(c, p, "units", "must be a function(params) returning a list of units");
    fe_take_policy(c, p, "units", "unit");
  }

  static const char *const depth[] = {"prefetch", "prefetch_forward", "prefetch_backward"};
  int64_t v[3] = {-1, -1, -1};
  for (int i = 0; i < 3; i++)
    if (fe_int(c, p, depth[i], &v[i], "an integer >= 0") && (v[i] < 0 || v[i] > INT32_MAX))
      fe_bad(c, p, depth[i], "must be an integer >= 0%s", v[i] < 0 ? "" : " (and below 2^31)");
  for (int i = 1; i < 3; i++)
    if (v[0] >= 0 && v[i] >= 0)
      fe_fail(c, p, "prefetch", "and parallel.%s cannot both be given (prefetch sets both directions)", depth[i]);
  if (v[0] >= 0) s->prefetch_forward = s->prefetch_backward = (int)v[0];
  if (v[1] >= 0) s->prefetch_forward = (int)v[1];
  if (v[2] >= 0) s->prefetch_backward = (int)v[2];

  fe_bool(c, p, "reshard_after_forward", &s->reshard_after_forward);
  fe_bool(c, p, "optimizer_overlap", &s->optimizer_overlap);
  int g = -1;
  if (fe_enum(c, p, "gather_dtype", ddp_precision_names, &g)) {
    if (g == PREC_BF16 && s->precision != PREC_BF16)
      fe_bad(c, p, "gather_dtype", "may be \"bf16\" only with precision = \"bf16\"");
    s->gather_dtype = g == PREC_BF16 ? DT_BF16 : DT_F32;
  }
  fe_init_fields(c, p, s->ranks);
  s->single_optimizer_overlap = s->optimizer_overlap; /* one rank compiles as single(): with this ddp{}'s choice */
}

void fe_parallel(fe_conv *c, const fe_tab *root) {
  fe_tab p;
  fe_single(c->s);
  if (!fe_sub(c, root, "parallel", &p, FE_PARALLEL_NEED)) return;
  int k = fe_kind_of(c->L, p.idx);
  if (k == FE_K_SINGLE) {
    static const char *const fields[] = {"optimizer_overlap", NULL};
    fe_known(c, &p, fields);
    fe_bool(c, &p, "optimizer_overlap", &c->s->single_optimizer_overlap);
  } else if (k == FE_K_DDP)
    fe_ddp(c, &p);
  else if (k == FE_K_FSDP)
    fe_fsdp(c, &p);
  else if (k == FE_K_PIPELINE)
    fe_pipeline(c, &p);
  else
    fe_bad(c, root, "parallel", "must be made by %s", FE_PARALLEL_NEED);
}

/* grad_dtype may be given at the top level or in ddp{} (fsdp{}: reduce_dtype, the dtype of the gradients
 * and so of their reduce-scatter); both must agree. */
void fe_grad_dtype(fe_conv *c, const fe_tab *root) {
  int top = -1, in_ddp = -1;
  fe_enum(c, root, "grad_dtype", ddp_precision_names, &top);
  fe_tab p;
  const char *key = "grad_dtype";
  bool have_p = fe_sub(c, root, "parallel", &p, FE_PARALLEL_NEED);
  int k = have_p ? fe_kind_of(c->L, p.idx) : -1;
  if (k == FE_K_FSDP) key = "reduce_dtype";
  if (k == FE_K_DDP || k == FE_K_FSDP) fe_enum(c, &p, key, ddp_precision_names, &in_ddp);
  if (top >= 0 && in_ddp >= 0 && top != in_ddp)
    fe_bad(c, &p, key, "disagrees with grad_dtype = \"%s\" at the top level", ddp_precision_names[top]);
  int g = top >= 0 ? top : in_ddp >= 0 ? in_ddp : 0;
  c->s->grad_dtype = g == PREC_BF16 ? DT_BF16 : DT_F32;
  if (g == PREC_BF16 && c->s->precision != PREC_BF16) {
    if (in_ddp >= 0) fe_bad(c, &p, key, "may be \"bf16\" only with precision = \"bf16\"");
    fe_bad(c, root, "grad_dtype", "may be \"bf16\" only with precision = \"bf16\"");
  }
}

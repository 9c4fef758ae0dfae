/* compiler/frontend/convert.c: the table a schedule returns (schedule{...} or a plain table), after any
 * --set overrides, into the ddp_schedule: top-level fields here (steps, warmup, seed, precision, mode),
 * then model, parallel, mesh, data, limits, optimizer, fusion and nccl in the order their cross-checks need. Runs once,
 * inside the sandbox's protected call. */
#include "fe.h"
#include "plan.h"
#include <stdio.h>

void fe_convert(fe_conv *c, int root_idx) {
  static const char *const fields[] = {"model", "data", "precision", "grad_dtype", "optimizer", "parallel",
                                       "steps", "warmup", "seed", "mode", "fusion", "nccl", "mesh", "streams", NULL};
#define FE_MODE_NAME(id, name) name,
  static const char *const modes[] = {DDP_MODES(FE_MODE_NAME) NULL};
#undef FE_MODE_NAME
  lua_State *L = c->L;
  ddp_schedule *s = c->s;
  char got[160];
  int k = fe_kind_of(L, root_idx);
  if (!lua_istable(L, root_idx) || (k >= 0 && k != FE_K_SCHEDULE)) {
    char where[FE_WHERE_MAX];
    if (!fe_where_of(L, root_idx, where, sizeof where)) snprintf(where, sizeof where, "%s", c->sb->path);
    lua_pushfstring(L, "%s: the schedule must return schedule{...}, got %s", where,
                    fe_got(L, root_idx, got, sizeof got));
    lua_error(L);
  }
  fe_tab root;
  fe_tab_root(c, root_idx, &root);
  fe_known(c, &root, fields);

  fe_model(c, &root);
  fe_required(c, &root, "steps");
  s->steps = fe_int_in(c, &root, "steps", 1, 1, INT32_MAX);
  s->warmup = fe_int_in(c, &root, "warmup", 0, 0, INT32_MAX);
  if (s->warmup >= s->steps) fe_bad(c, &root, "warmup", "must be smaller than steps (%lld)", (long long)s->steps);
  int64_t seed = 0;
  if (fe_int(c, &root, "seed", &seed, "a non-negative integer") && seed < 0)
    fe_bad(c, &root, "seed", "must be a non-negative integer");
  s->seed = (uint64_t)seed;
  int prec = 0;
  fe_enum(c, &root, "precision", ddp_precision_names, &prec);
  s->precision = prec == 1 ? PREC_BF16 : PREC_FP32;
  int mode = MODE_TRAIN;
  fe_enum(c, &root, "mode", modes, &mode);
  s->mode = mode;

  fe_parallel(c, &root);
  fe_mesh(c, &root);
  fe_grad_dtype(c, &root);
  fe_data(c, &root);
  fe_model_limits(c, &root);
  fe_optimizer(c, &root);
  fe_fusion(c, &root);
  fe_nccl(c, &root);
  fe_streams(c, &root);
  lua_settop(L, root_idx);
}

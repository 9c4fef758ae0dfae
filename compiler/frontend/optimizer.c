/* compiler/frontend/optimizer.c: schedule.optimizer, adamw{...} (cs336 AdamW, optional cosine schedule
 * with linear warmup and global-norm clipping) or sgd{lr}, into the ddp_schedule's optimizer fields.
 * Needs s->steps (the default cosine cycle). */
#include "fe.h"
#include "plan.h"
#include <stdio.h>

static void fe_positive(fe_conv *c, const fe_tab *t, const char *key, double *v) {
  if (fe_num(c, t, key, v, "a positive number") && !(*v > 0)) fe_bad(c, t, key, "must be a positive number");
}

static void fe_nonneg(fe_conv *c, const fe_tab *t, const char *key, double *v) {
  if (fe_num(c, t, key, v, "a non-negative number") && !(*v >= 0))
    fe_bad(c, t, key, "must be a non-negative number");
}

static void fe_betas(fe_conv *c, const fe_tab *o) {
  static const char *const need = "a list of two numbers {beta1, beta2}";
  fe_tab b;
  int n = fe_list(c, o, "betas", &b, need);
  if (n < 0) return;
  if (n > 2) { /* an element past the second: where it was set (--set optimizer.betas.3=...) or made */
    char key[24], where[FE_WHERE_MAX];
    snprintf(key, sizeof key, "%d", n);
    if (fe_set_of(c->L, b.idx, key, where, sizeof where)) {
      snprintf(key, sizeof key, "[%d]", n);
      fe_fail(c, &b, key, "is one element too many: optimizer.betas must be %s", need);
    }
  }
  if (n != 2) fe_fail(c, o, "betas", "must be %s, got %d element%s", need, n, n == 1 ? "" : "s");
  double v[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    char key[8];
    snprintf(key, sizeof key, "[%d]", i + 1);
    if (!fe_num(c, &b, key, &v[i], "a number in [0, 1)") || !(v[i] >= 0 && v[i] < 1))
      fe_bad(c, &b, key, "must be a number in [0, 1)");
  }
  c->s->beta1 = v[0];
  c->s->beta2 = v[1];
}

static void fe_adamw(fe_conv *c, const fe_tab *o) {
  static const char *const fields[] = {"lr", "betas", "eps", "weight_decay", "schedule", "warmup",
                                       "cycle", "lr_min", "clip", NULL};
  ddp_schedule *s = c->s;
  fe_known(c, o, fields);
  s->optimizer = OPTIM_ADAMW;
  s->lr = 1e-3, s->beta1 = 0.9, s->beta2 = 0.999, s->eps = 1e-8, s->weight_decay = 0.01;
  fe_positive(c, o, "lr", &s->lr);
  fe_betas(c, o);
  fe_positive(c, o, "eps", &s->eps);
  fe_nonneg(c, o, "weight_decay", &s->weight_decay);
  fe_nonneg(c, o, "clip", &s->clip_norm);
  int sched = 0;
  fe_enum(c, o, "schedule", ddp_lr_schedule_names, &sched);
  s->lr_schedule = sched;
  if (sched == LR_CONSTANT) {
    static const char *const cos_only[] = {"warmup", "cycle", "lr_min", NULL};
    for (const char *const *k = cos_only; *k; k++)
      if (fe_has(c, o, *k)) fe_bad(c, o, *k, "only applies with schedule = \"cosine\"");
    return;
  }
  s->lr_cycle = fe_int_in(c, o, "cycle", s->steps, 1, INT32_MAX);
  s->lr_warmup = fe_int_in(c, o, "warmup", 0, 0, INT32_MAX);
  if (s->lr_warmup >= s->lr_cycle)
    fe_bad(c, o, "warmup", "must be smaller than optimizer.cycle (%lld)", (long long)s->lr_cycle);
  fe_nonneg(c, o, "lr_min", &s->lr_min);
  if (s->lr_min > s->lr) fe_bad(c, o, "lr_min", "must not exceed optimizer.lr (%g)", s->lr);
}

void fe_optimizer(fe_conv *c, const fe_tab *root) {
  fe_tab o;
  if (!fe_sub(c, root, "optimizer", &o, "adamw{...} or sgd{...}")) fe_fail(c, root, "optimizer", "is required");
  int k = fe_kind_of(c->L, o.idx);
  if (k == FE_K_ADAMW) {
    fe_adamw(c, &o);
  } else if (k == FE_K_SGD) {
    static const char *const fields[] = {"lr", NULL};
    fe_known(c, &o, fields);
    c->s->optimizer = OPTIM_SGD;
    fe_required(c, &o, "lr");
    fe_positive(c, &o, "lr", &c->s->lr);
  } else {
    fe_bad(c, root, "optimizer", "must be made by adamw{...} or sgd{...}");
  }
  if (c->s->optimizer_overlap && c->s->clip_norm > 0)
    fe_bad(c, &o, "clip", "cannot be used with parallel.optimizer_overlap (clipping needs every gradient first)");
}

/* compiler/frontend/model.c: schedule.model, either transformer{...} (the cs336 language model) or
 * mlp{...} (a list of linear{}, relu(), layernorm{} plus extra param{}s), into ddp_schedule's model
 * fields; and the size limits that need the batch (no tensor of a rank over 2^31-1 elements). */
#include "fe.h"
#include "plan.h"
#include <stdio.h>
#include <string.h>

static int64_t fe_mul(int64_t a, int64_t b) { /* saturating, for size checks */
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static void fe_transformer(fe_conv *c, const fe_tab *m) {
  static const char *const fields[] = {"name", "vocab", "context", "d_model", "d_ff", "layers",
                                       "heads", "rope_theta", "attention", NULL};
  ddp_schedule *s = c->s;
  fe_known(c, m, fields);
  s->model_kind = MODEL_TRANSFORMER;
  snprintf(s->model_name, sizeof s->model_name, "custom");
  fe_str(c, m, "name", s->model_name, sizeof s->model_name, "a string");
  fe_required(c, m, "d_model");
  fe_required(c, m, "d_ff");
  fe_required(c, m, "layers");
  fe_required(c, m, "heads");
  s->d_model = fe_int_in(c, m, "d_model", 0, 1, 65536);
  s->d_ff = fe_int_in(c, m, "d_ff", 0, 1, 1 << 20);
  s->layers = fe_int_in(c, m, "layers", 0, 1, 4096);
  s->heads = fe_int_in(c, m, "heads", 0, 1, 65536);
  s->vocab = fe_int_in(c, m, "vocab", 10000, 1, 1 << 24);
  s->context = fe_int_in(c, m, "context", 512, 1, 1 << 20);
  if (s->d_model % s->heads)
    fe_bad(c, m, "heads", "must divide model.d_model (%lld)", (long long)s->d_model);
  if (fe_mul(3 * s->d_model, s->d_model) > FE_MAX_ELEMS)
    fe_bad(c, m, "d_model", "is too large: the attention's q, k and v weights (3 x %lld x %lld) would exceed 2^31-1 "
           "elements", (long long)s->d_model, (long long)s->d_model);
  if (fe_mul(s->vocab, s->d_model) > FE_MAX_ELEMS)
    fe_bad(c, m, "vocab", "is too large: the embedding (%lld x %lld) would exceed 2^31-1 elements",
           (long long)s->vocab, (long long)s->d_model);
  if (fe_mul(2 * s->d_ff, s->d_model) > FE_MAX_ELEMS)
    fe_bad(c, m, "d_ff", "is too large: the FFN's w1 and w3 weights (2 x %lld x %lld) would exceed 2^31-1 elements",
           (long long)s->d_ff, (long long)s->d_model);
  s->rope_theta = 10000;
  if (fe_num(c, m, "rope_theta", &s->rope_theta, "a positive number") && !(s->rope_theta > 0))
    fe_bad(c, m, "rope_theta", "must be a positive number");
  int a = ATTN_FLASH;
  fe_enum(c, m, "attention", ddp_attention_names, &a);
  s->attention = a == 1 ? ATTN_NAIVE : ATTN_FLASH;
  /* the flash kernels hold a head's row in registers up to 128; the naive path materialises the scores */
  const int64_t dh = s->d_model / s->heads, dh_max = s->attention == ATTN_FLASH ? 128 : 256;
  if (dh % 2 || dh < 16 || dh > dh_max)
    fe_bad(c, m, "heads", "must give an even head dimension in 16..%lld with attention = \"%s\" (d_model %lld / "
           "heads = %lld)", (long long)dh_max, s->attention == ATTN_FLASH ? "flash" : "naive", (long long)s->d_model,
           (long long)dh);
}

static bool fe_name_ok(const char *s) {
  if (!*s || *s == '.') return false;
  for (const char *p = s; *p; p++) {
    bool word = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!word && !(*p == '.' && p[1] && p[1] != '.')) return false;
  }
  return true;
}

/* Reads t.name (or the default) into out, checks its form and that no earlier parameter owner has it. */
static void fe_owner_name(fe_conv *c, const fe_tab *t, char *out, const char *def) {
  snprintf(out, DDP_NAME_MAX, "%s", def);
  fe_str(c, t, "name", out, DDP_NAME_MAX, "a string");
  if (!fe_name_ok(out))
    fe_bad(c, t, "name", "must be letters, digits and _ (dots between parts), as in a state-dict prefix");
  const ddp_schedule *s = c->s;
  for (int j = 0; j < s->n_mlp_layers; j++)
    if (s->mlp[j].kind != LAYER_RELU && strcmp(s->mlp[j].name, out) == 0)
      fe_bad(c, t, "name", "is already the name of model.layers[%d]", j + 1);
  for (int j = 0; j < s->n_extra; j++)
    if (strcmp(s->extra[j].name, out) == 0) fe_bad(c, t, "name", "is already the name of model.params[%d]", j + 1);
}

static void fe_frozen(fe_conv *c, const fe_tab *t, ddp_mlp_layer *l) {
  bool f = false;
  fe_bool(c, t, "frozen", &f);
  l->weight_frozen = l->bias_frozen = f;
  fe_bool(c, t, "weight_frozen", &l->weight_frozen);
  fe_bool(c, t, "bias_frozen", &l->bias_frozen);
}

static void fe_linear(fe_conv *c, const fe_tab *t, ddp_mlp_layer *l, int i) {
  static const char *const fields[] = {"name", "in_features", "out_features", "bias", "frozen",
                                       "weight_frozen", "bias_frozen", "tie", NULL};
  ddp_schedule *s = c->s;
  fe_known(c, t, fields);
  char def[16];
  snprintf(def, sizeof def, "%d", i);
  fe_owner_name(c, t, l->name, def);
  l->kind = LAYER_LINEAR;
  fe_required(c, t, "in_features");
  fe_required(c, t, "out_features");
  l->in = fe_int_in(c, t, "in_features", 0, 1, FE_MAX_ELEMS);
  l->out = fe_int_in(c, t, "out_features", 0, 1, FE_MAX_ELEMS);
  if (fe_mul(l->in, l->out) > FE_MAX_ELEMS)
    fe_bad(c, t, "out_features", "is too large: the weight (%lld x %lld) would exceed 2^31-1 elements",
           (long long)l->out, (long long)l->in);
  l->bias = true;
  fe_bool(c, t, "bias", &l->bias);
  bool wf_given = fe_has(c, t, "weight_frozen") || fe_has(c, t, "frozen");
  fe_frozen(c, t, l);
  if (!l->bias && fe_has(c, t, "bias_frozen") && l->bias_frozen) fe_bad(c, t, "bias_frozen", "needs bias = true");
  if (!l->bias) l->bias_frozen = false;
  l->tie_weight_to = -1;
  char tie[DDP_NAME_MAX];
  if (!fe_str(c, t, "tie", tie, sizeof tie, "the name of an earlier linear{} layer")) return;
  for (int j = 0; j < s->n_mlp_layers; j++)
    if (s->mlp[j].kind == LAYER_LINEAR && strcmp(s->mlp[j].name, tie) == 0) {
      const ddp_mlp_layer *o = &s->mlp[j];
      if (o->in != l->in || o->out != l->out)
        fe_bad(c, t, "tie", "names a layer whose weight is %lld x %lld, but this one's is %lld x %lld",
               (long long)o->out, (long long)o->in, (long long)l->out, (long long)l->in);
      if (wf_given && l->weight_frozen != o->weight_frozen)
        fe_bad(c, t, "tie", "shares the weight of %s, so it cannot be frozen differently", o->name);
      l->weight_frozen = o->weight_frozen;
      l->tie_weight_to = o->tie_weight_to >= 0 ? o->tie_weight_to : j;
      return;
    }
  fe_bad(c, t, "tie", "must name an earlier linear{} layer");
}

static void fe_layernorm(fe_conv *c, const fe_tab *t, ddp_mlp_layer *l, int i) {
  static const char *const fields[] = {"name", "size", "frozen", "weight_frozen", "bias_frozen", NULL};
  fe_known(c, t, fields);
  char def[16];
  snprintf(def, sizeof def, "%d", i);
  fe_owner_name(c, t, l->name, def);
  l->kind = LAYER_LAYERNORM;
  fe_required(c, t, "size");
  l->in = l->out = fe_int_in(c, t, "size", 0, 1, FE_MAX_ELEMS);
  l->bias = true;
  l->tie_weight_to = -1;
  fe_frozen(c, t, l);
}

static void fe_extra_params(fe_conv *c, const fe_tab *m) {
  static const char *const fields[] = {"name", "numel", "value", "frozen", NULL};
  fe_tab list;
  int n = fe_list(c, m, "params", &list, "a list of param{...}");
  if (n > DDP_MAX_EXTRA_PARAMS)
    fe_fail(c, m, "params", "has %d entries, at most %d are supported", n, DDP_MAX_EXTRA_PARAMS);
  for (int i = 1; i <= n; i++) {
    fe_tab p;
    char key[32];
    snprintf(key, sizeof key, "[%d]", i);
    fe_elem(c, &list, i, &p, "a param{...}");
    if (fe_kind_of(c->L, p.idx) != FE_K_PARAM) fe_bad(c, &list, key, "must be made by param{...}");
    fe_known(c, &p, fields);
    ddp_extra_param *e = &c->s->extra[c->s->n_extra];
    fe_required(c, &p, "name");
    fe_owner_name(c, &p, e->name, "");
    fe_required(c, &p, "numel");
    e->numel = fe_int_in(c, &p, "numel", 0, 1, FE_MAX_ELEMS);
    fe_num(c, &p, "value", &e->value, "a number");
    fe_bool(c, &p, "frozen", &e->frozen);
    c->s->n_extra++;
  }
}

static void fe_mlp(fe_conv *c, const fe_tab *m) {
  static const char *const fields[] = {"name", "layers", "params", NULL};
  static const char *const need = "a list of layers made by linear{}, relu() or layernorm{}";
  ddp_schedule *s = c->s;
  fe_known(c, m, fields);
  s->model_kind = MODEL_MLP;
  snprintf(s->model_name, sizeof s->model_name, "mlp");
  fe_str(c, m, "name", s->model_name, sizeof s->model_name, "a string");
  fe_tab list;
  int n = fe_list(c, m, "layers", &list, need);
  if (n < 0) fe_fail(c, m, "layers", "is required");
  if (n == 0) fe_fail(c, m, "layers", "must hold at least one layer");
  if (n > DDP_MAX_MLP_LAYERS) fe_fail(c, m, "layers", "has %d layers, at most %d are supported", n, DDP_MAX_MLP_LAYERS);
  int64_t cur = -1;
  for (int i = 1; i <= n; i++) {
    fe_tab t;
    char key[32];
    snprintf(key, sizeof key, "[%d]", i);
    fe_elem(c, &list, i, &t, need);
    int k = fe_kind_of(c->L, t.idx);
    ddp_mlp_layer *l = &s->mlp[s->n_mlp_layers];
    memset(l, 0, sizeof *l);
    if (k == FE_K_LINEAR) fe_linear(c, &t, l, i - 1);
    else if (k == FE_K_LAYERNORM) fe_layernorm(c, &t, l, i - 1);
    else if (k == FE_K_RELU) {
      static const char *const rf[] = {"name", NULL};
      fe_known(c, &t, rf);
      l->kind = LAYER_RELU;
      snprintf(l->name, sizeof l->name, "relu");
      fe_str(c, &t, "name", l->name, sizeof l->name, "a string");
      l->tie_weight_to = -1;
      if (cur < 0) fe_fail(c, &list, key, "cannot be first: the first layer must be linear{} or layernorm{}");
      l->in = l->out = cur;
    } else
      fe_bad(c, &list, key, "must be made by linear{...}, relu() or layernorm{...}");
    if (cur >= 0 && l->in != cur)
      fe_bad(c, &t, k == FE_K_LINEAR ? "in_features" : "size", "must match the previous layer's output size (%lld)",
             (long long)cur);
    if (cur < 0) s->mlp_in = l->in;
    cur = l->out;
    s->n_mlp_layers++;
    lua_settop(c->L, list.idx);
  }
  s->mlp_out = cur;
  fe_extra_params(c, m);
  bool trainable = false;
  for (int i = 0; i < s->n_mlp_layers; i++)
    trainable |= s->mlp[i].kind != LAYER_RELU && /* a layernorm always has its bias */
                 (!s->mlp[i].weight_frozen ||
                  ((s->mlp[i].bias || s->mlp[i].kind == LAYER_LAYERNORM) && !s->mlp[i].bias_frozen));
  for (int i = 0; i < s->n_extra; i++) trainable |= !s->extra[i].frozen;
  if (!trainable) fe_fail(c, m, "layers", "has no trainable parameter: every weight and bias is frozen");
}

void fe_model(fe_conv *c, const fe_tab *root) {
  fe_tab m;
  if (!fe_sub(c, root, "model", &m, "a model made by transformer{...}, mlp{...} or models.*()"))
    fe_fail(c, root, "model", "is required");
  int k = fe_kind_of(c->L, m.idx);
  if (k == FE_K_TRANSFORMER) fe_transformer(c, &m);
  else if (k == FE_K_MLP) fe_mlp(c, &m);
  else fe_bad(c, root, "model", "must be made by transformer{...}, mlp{...} or models.*()");
}

/* After data and parallel: what one rank holds at once (a pipeline: one microbatch) must stay under 2^31-1
 * elements per tensor. */
void fe_model_limits(fe_conv *c, const fe_tab *root) {
  const ddp_schedule *s = c->s;
  fe_tab data, model;
  fe_sub(c, root, "data", &data, "a table");
  fe_sub(c, root, "model", &model, "a table");
  int64_t b = s->stages ? s->global_batch / ((int64_t)s->replicas * s->microbatches) : s->global_batch / ddp_schedule_data_ranks(s);
  if (s->model_kind == MODEL_TRANSFORMER) {
    const int64_t tp = s->mesh_tensor > 1 ? s->mesh_tensor : 1; /* the widths a tensor rank holds */
    const struct { int64_t width; const char *what; } t[] = {
        {3 * s->d_model / tp, "the attention's q, k and v"},
        {2 * s->d_ff / tp, "the FFN's w1 and w3 outputs"},
        {s->vocab / tp, "the logits"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
      if (fe_mul(fe_mul(b, s->context), t[i].width) > FE_MAX_ELEMS)
        fe_bad(c, &data, "global_batch", "is too large: %s on each rank (%lld sequences x context %lld x %lld) "
               "would exceed 2^31-1 elements", t[i].what, (long long)b, (long long)s->context, (long long)t[i].width);
    if (s->attention == ATTN_NAIVE && fe_mul(fe_mul(b, s->heads), fe_mul(s->context, s->context)) > FE_MAX_ELEMS)
      fe_bad(c, &model, "context", "is too large for attention = \"naive\": the scores on each rank (%lld x %lld "
             "heads x context^2) would exceed 2^31-1 elements", (long long)b, (long long)s->heads);
    /* Every rank's program is stored in the plan (about 1.3 KB of compiler memory per instruction): refuse
     * up front what would take minutes and tens of GB to fail. Per rank and microbatch, 40 instructions a
     * layer plus 24 (embedding, loss, transfers): above what ddpc builds for the tiny transformer (tiny.lua,
     * 2 layers: 91; 1F1B 2 x 4096 x 4 layers: 143 a microbatch; zero bubble 4 stages x 64 x 1 layer: 52). */
    const int64_t per_rank_layers = s->stages > 0 ? (s->layers + s->stages - 1) / s->stages : s->layers;
    const int64_t mb = s->stages > 0 ? s->microbatches : 1;
    const int64_t est = fe_mul(fe_mul((int64_t)s->ranks, mb), 40 * per_rank_layers + 24);
    if (est > FE_MAX_PLAN_INSTRS)
      fe_fail(c, root, "parallel", ": the plan would hold about %lld million instructions (%d ranks, %lld layers a "
              "rank, %lld microbatches a step), more than ddpc builds (%d million: every rank's program is stored in "
              "the plan)", (long long)(est / 1000000), s->ranks, (long long)per_rank_layers, (long long)mb,
              FE_MAX_PLAN_INSTRS / 1000000);
  } else {
    int64_t w = s->mlp_in;
    for (int i = 0; i < s->n_mlp_layers; i++)
      if (s->mlp[i].out > w) w = s->mlp[i].out;
    if (fe_mul(b, w) > FE_MAX_ELEMS)
      fe_bad(c, &data, "global_batch", "is too large: activations of %lld rows x width %lld on each rank would "
             "exceed 2^31-1 elements", (long long)b, (long long)w);
    if (fe_mul(s->data_rows, s->mlp_in) > FE_MAX_ELEMS)
      fe_bad(c, &data, "rows", "is too large: the dataset (%lld x %lld inputs) would exceed 2^31-1 elements",
             (long long)s->data_rows, (long long)s->mlp_in);
  }
}

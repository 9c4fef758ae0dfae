/* compiler/model/transformer.c: the cs336 (2025) transformer LM: token embedding, pre-norm blocks
 * x + attn(rms1(x)), x + ffn(rms2(x)) with RoPE attention and SwiGLU, final RMSNorm, untied LM head, mean
 * cross-entropy. q/k/v and w1/w3 weights are stored adjacently (one GEMM each) under their own
 * state-dict names. Init: truncated normal std sqrt(2/(in+out)) cut at 3 std; embedding std 1; norms 1. */
#include "layers.h"
#include "models.h"
#include <math.h>
#include <stdlib.h>

static int linear_unit(ddp_builder *b, const char *unit_name, int64_t out_total, int64_t out_each, int64_t in) {
  double std = sqrt(2.0 / (double)(in + out_each));
  return b_unit(b, unit_name, out_total * in, true, INIT_TRUNC_NORMAL, (float)std, (float)(3.0 * std), in);
}

static void weight_param(ddp_builder *b, int unit, const char *name, int64_t row0, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  b_param(b, unit, name, row0 * cols, 2, shape);
}

static int norm_unit(ddp_builder *b, const char *name, int64_t d) {
  int u = b_unit(b, name, d, true, INIT_CONST, 1.0f, 0.0f, 0);
  int64_t shape[1] = {d};
  b_param(b, u, name, 0, 1, shape);
  return u;
}

int build_transformer(ddp_builder *b, char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  const ddp_schedule *s = b->s;
  int64_t D = s->d_model, F = s->d_ff, V = s->vocab, H = s->heads, N = b->rows;
  const char *nm;
  int64_t shape[2] = {N, 0};
  b->tokens = b_tensor(b, "batch.tokens", DT_I32, ARENA_IO, TF_TOKENS | TF_PERSISTENT, 1, shape);
  b->targets = b_tensor(b, "batch.targets", DT_I32, ARENA_IO, TF_TARGETS | TF_PERSISTENT, 1, shape);
  int64_t fshape[1] = {D / H / 2};
  b->rope_freq = b_tensor(b, "rope.inv_freq", b->fdt, ARENA_IO, TF_PERSISTENT, 1, fshape);

  /* Parameters in model.parameters() order. */
  int emb = b_unit(b, "token_embeddings.weight", V * D, true, INIT_TRUNC_NORMAL, 1.0f, 3.0f, D);
  weight_param(b, emb, "token_embeddings.weight", 0, V, D);
  struct { int ln1, qkv, wo, ln2, w13, w2; } *u = ddp_xcalloc((size_t)s->layers, sizeof *u); /* units per layer */
  for (int64_t l = 0; l < s->layers; l++) {
    u[l].qkv = linear_unit(b, b_fmt(b, "layers.%lld.attn.qkv_proj", (long long)l), 3 * D, D, D);
    const char *qkv_names[3] = {"q_proj", "k_proj", "v_proj"};
    for (int k = 0; k < 3; k++)
      weight_param(b, u[l].qkv, b_fmt(b, "layers.%lld.attn.%s.weight", (long long)l, qkv_names[k]), k * D, D, D);
    nm = b_fmt(b, "layers.%lld.attn.output_proj.weight", (long long)l);
    u[l].wo = linear_unit(b, nm, D, D, D);
    weight_param(b, u[l].wo, nm, 0, D, D);
    u[l].ln1 = norm_unit(b, b_fmt(b, "layers.%lld.ln1.weight", (long long)l), D);
    u[l].w13 = linear_unit(b, b_fmt(b, "layers.%lld.ffn.w13", (long long)l), 2 * F, F, D);
    weight_param(b, u[l].w13, b_fmt(b, "layers.%lld.ffn.w1.weight", (long long)l), 0, F, D);
    nm = b_fmt(b, "layers.%lld.ffn.w2.weight", (long long)l);
    u[l].w2 = linear_unit(b, nm, D, D, F);
    weight_param(b, u[l].w2, nm, 0, D, F);
    weight_param(b, u[l].w13, b_fmt(b, "layers.%lld.ffn.w3.weight", (long long)l), F, F, D);
    u[l].ln2 = norm_unit(b, b_fmt(b, "layers.%lld.ln2.weight", (long long)l), D);
  }
  int lnf = norm_unit(b, "ln_final.weight", D);
  int head = linear_unit(b, "lm_head.weight", V, V, D);
  weight_param(b, head, "lm_head.weight", 0, V, D);

  /* Forward. */
  b_range_push(b, RANGE_FORWARD, "forward");
  int32_t x = layer_embedding(b, "token_embeddings", emb, b->tokens, D);
  for (int64_t l = 0; l < s->layers; l++) {
    b->layer = (int)l;
    const char *p = b_fmt(b, "layers.%lld", (long long)l);
    b_range_push(b, RANGE_LAYER, p);
    int32_t h = layer_rmsnorm(b, b_fmt(b, "%s.ln1", p), u[l].ln1, x, D, b->act_dt);
    int32_t q = layer_linear(b, b_fmt(b, "%s.attn.qkv_proj", p), u[l].qkv, h, D, 3 * D, -1, b->act_dt);
    b_range_push(b, RANGE_ATTENTION, "attention");
    layer_rope(b, b_fmt(b, "%s.attn.rope", p), q, D, H);
    nm = b_fmt(b, "%s.attn.sdpa", p);
    int32_t a = s->attention == ATTN_NAIVE ? layer_attention_naive(b, nm, q, D, H) : layer_attention(b, nm, q, D, H);
    b_range_pop(b);
    x = layer_linear(b, b_fmt(b, "%s.attn.output_proj", p), u[l].wo, a, D, D, x, b->res_dt);
    int32_t h2 = layer_rmsnorm(b, b_fmt(b, "%s.ln2", p), u[l].ln2, x, D, b->act_dt);
    int32_t ab = layer_linear(b, b_fmt(b, "%s.ffn.w13", p), u[l].w13, h2, D, 2 * F, -1, b->act_dt);
    int32_t g = layer_swiglu(b, b_fmt(b, "%s.ffn.swiglu", p), ab, F);
    x = layer_linear(b, b_fmt(b, "%s.ffn.w2", p), u[l].w2, g, F, D, x, b->res_dt);
    b_range_pop(b);
  }
  b->layer = -1;
  int32_t xf = layer_rmsnorm(b, "ln_final", lnf, x, D, b->act_dt);
  int32_t logits = layer_linear(b, "lm_head", head, xf, D, V, -1, b->act_dt);
  layer_cross_entropy(b, logits, b->targets, V);
  b_range_pop(b);
  b_timer(b, TIMER_FORWARD_END);
  free(u);
  return 0;
}

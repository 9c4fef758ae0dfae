/* compiler/model/mlp.c: the seeds' toy MLPs: Linear (optional bias, frozen parts, weights tied to an
 * earlier layer), ReLU and LayerNorm layers over dense f32 inputs, with MSE against dense targets.
 * Init as PyTorch's nn.Linear: weight and bias uniform(-1/sqrt(in), 1/sqrt(in)); LayerNorm 1 and 0. */
#include "layers.h"
#include "err.h"
#include "models.h"
#include <math.h>

int build_mlp(ddp_builder *b, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  int64_t N = b->rows;
  const char *nm;
  int64_t shape[2] = {N, s->mlp_in};
  b->tokens = b_tensor(b, "batch.inputs", b->fdt, ARENA_IO, TF_TOKENS | TF_PERSISTENT, 2, shape);
  shape[1] = s->mlp_out;
  b->targets = b_tensor(b, "batch.targets", b->fdt, ARENA_IO, TF_TARGETS | TF_PERSISTENT, 2, shape);

  int wunit[DDP_MAX_MLP_LAYERS], bunit[DDP_MAX_MLP_LAYERS];
  for (int l = 0; l < s->n_mlp_layers; l++) {
    const ddp_mlp_layer *L = &s->mlp[l];
    wunit[l] = bunit[l] = -1;
    if (L->kind == LAYER_LINEAR) {
      if (L->tie_weight_to >= 0) {
        if (L->tie_weight_to >= l || s->mlp[L->tie_weight_to].kind != LAYER_LINEAR ||
            s->mlp[L->tie_weight_to].in != L->in || s->mlp[L->tie_weight_to].out != L->out) {
          return ddp_fail(err, errcap, "%s: model layer %s: tied weight must name an earlier Linear of the same shape",
                          s->path, L->name);
        }
        wunit[l] = wunit[L->tie_weight_to];
      } else {
        float bound = (float)(1.0 / sqrt((double)L->in));
        nm = b_fmt(b, "%s.weight", L->name);
        wunit[l] = b_unit(b, nm, L->out * L->in, !L->weight_frozen, INIT_UNIFORM, -bound, bound, L->in);
        int64_t ws[2] = {L->out, L->in};
        b_param(b, wunit[l], nm, 0, 2, ws);
      }
      if (L->bias) {
        float bound = (float)(1.0 / sqrt((double)L->in));
        nm = b_fmt(b, "%s.bias", L->name);
        bunit[l] = b_unit(b, nm, L->out, !L->bias_frozen, INIT_UNIFORM, -bound, bound, L->in);
        int64_t bs[1] = {L->out};
        b_param(b, bunit[l], nm, 0, 1, bs);
      }
    } else if (L->kind == LAYER_LAYERNORM) {
      int64_t ds[1] = {L->in};
      nm = b_fmt(b, "%s.weight", L->name);
      wunit[l] = b_unit(b, nm, L->in, !L->weight_frozen, INIT_CONST, 1.0f, 0.0f, 0);
      b_param(b, wunit[l], nm, 0, 1, ds);
      nm = b_fmt(b, "%s.bias", L->name);
      bunit[l] = b_unit(b, nm, L->in, !L->bias_frozen, INIT_CONST, 0.0f, 0.0f, 0);
      b_param(b, bunit[l], nm, 0, 1, ds);
    }
  }
  for (int e = 0; e < s->n_extra; e++) {
    const ddp_extra_param *x = &s->extra[e];
    int u = b_unit(b, x->name, x->numel, !x->frozen, INIT_CONST, (float)x->value, 0.0f, 0);
    int64_t es[1] = {x->numel};
    b_param(b, u, x->name, 0, 1, es);
  }

  b_range_push(b, RANGE_FORWARD, "forward");
  int32_t h = b->tokens;
  int64_t width = s->mlp_in;
  for (int l = 0; l < s->n_mlp_layers; l++) {
    const ddp_mlp_layer *L = &s->mlp[l];
    b->layer = l;
    if (L->kind == LAYER_LINEAR) {
      if (L->in != width) {
        return ddp_fail(err, errcap, "%s: model layer %s: expects %lld inputs, the previous layer gives %lld", s->path,
                        L->name, (long long)L->in, (long long)width);
      }
      h = layer_linear(b, L->name, wunit[l], h, L->in, L->out, -1, l == s->n_mlp_layers - 1 ? b->fdt : b->act_dt);
      if (bunit[l] >= 0) {
        layer_bias(b, b_fmt(b, "%s.bias", L->name), bunit[l], h, L->out);
      }
      width = L->out;
    } else if (L->kind == LAYER_RELU) {
      h = layer_relu(b, b_fmt(b, "relu%d", l), h, width);
    } else {
      if (L->in != width) {
        return ddp_fail(err, errcap, "%s: model layer %s: LayerNorm(%lld) after a layer of width %lld", s->path,
                        L->name, (long long)L->in, (long long)width);
      }
      h = layer_layernorm(b, L->name, wunit[l], bunit[l], h, width);
    }
  }
  b->layer = -1;
  if (width != s->mlp_out) {
    return ddp_fail(err, errcap, "%s: model: the last layer gives %lld outputs, the targets have %lld", s->path,
                    (long long)width, (long long)s->mlp_out);
  }
  if (b_t(b, h)->dtype != b->fdt) {
    return ddp_fail(err, errcap, "%s: model: in bf16 the last layer must be a Linear (its output feeds the f32 loss)",
                    s->path);
  }
  layer_mse(b, h, b->targets, width);
  b_range_pop(b);
  b_timer(b, TIMER_FORWARD_END);
  return 0;
}

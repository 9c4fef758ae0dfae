/* compiler/model/layers/embedding.c: token embedding lookup (table (vocab, d_model), read from the fp32
 * master) and its deterministic backward (tokens accumulated in order into the table's gradient). Under
 * tensor parallelism the table is this rank's rows of the vocabulary (vfirst = t x rows, patched per rank):
 * a token another rank holds gives a zero row, and the ranks' outputs are all-reduced. */
#include "layers.h"

int32_t layer_embedding(ddp_builder *b, const char *name, int unit, int32_t tokens, int64_t d) {
  int64_t rows = b_t(b, tokens)->shape[0];
  int64_t vocab = b->units[unit].numel / d;
  int32_t out = b_act(b, b_fmt(b, "%s.out", name), b->res_dt, rows, d);
  ddp_instr in = b_kernel(OP_EMBED_FWD);
  b_buf(b, &in, EMBED_FWD_P_TOKENS, tokens);
  b_buf(b, &in, EMBED_FWD_P_TABLE, b->units[unit].master);
  b_buf(b, &in, EMBED_FWD_P_OUT, out);
  in.i[EMBED_FWD_I_N] = rows;
  in.i[EMBED_FWD_I_D] = d;
  in.i[EMBED_FWD_I_V] = vocab;
  in.i[EMBED_FWD_I_PARTIAL] = b->tp > 1;
  b_emit(b, in, name);
  if (b->tp > 1) b_tp_patch(b, b_last(b), TPP_INT, EMBED_FWD_I_VFIRST, vocab);
  ddp_node *n = b_record(b, LK_EMBED, name);
  n->t[0] = tokens;
  n->t[1] = out;
  n->u[0] = unit;
  n->i[0] = rows;
  n->i[1] = d;
  n->i[2] = vocab;
  layer_tp_reduce(b, b_fmt(b, "%s.all_reduce", name), out);
  return out;
}

void layer_embedding_bwd(ddp_builder *b, const ddp_node *n) {
  const ddp_unit *u = &b->units[n->u[0]];
  if (!u->trainable || !b_has_grad(b, n->t[1])) return;
  ddp_instr in = b_kernel(OP_EMBED_BWD);
  b_buf(b, &in, EMBED_BWD_P_TOKENS, n->t[0]);
  b_buf(b, &in, EMBED_BWD_P_DOUT, b_grad(b, n->t[1]));
  b_buf(b, &in, EMBED_BWD_P_DTABLE, u->grad);
  in.i[EMBED_BWD_I_N] = n->i[0];
  in.i[EMBED_BWD_I_D] = n->i[1];
  in.i[EMBED_BWD_I_V] = n->i[2];
  in.i[EMBED_BWD_I_ACC] = b_unit_grad_acc(b, n->u[0]);
  in.i[EMBED_BWD_I_PARTIAL] = b->tp > 1;
  b_emit(b, in, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
  if (b->tp > 1) b_tp_patch(b, b_last(b), TPP_INT, EMBED_BWD_I_VFIRST, n->i[2]);
}

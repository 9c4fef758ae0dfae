/* compiler/model/layers/pointwise.c: SwiGLU (h = silu(a) * b on the fused [w1 x | w3 x] activation), ReLU and
 * the bias add of the toy MLPs (y += b in place; the bias gradient is the column sum of dy). */
#include "layers.h"

int32_t layer_swiglu(ddp_builder *b, const char *name, int32_t ab, int64_t dff) {
  int32_t h = b_act(b, b_fmt(b, "%s.out", name), b_t(b, ab)->dtype, b->rows, dff);
  ddp_instr in = b_kernel(OP_SWIGLU_FWD);
  b_buf(b, &in, SWIGLU_FWD_P_AB, ab);
  b_buf(b, &in, SWIGLU_FWD_P_H, h);
  in.i[SWIGLU_FWD_I_N] = b->rows;
  in.i[SWIGLU_FWD_I_F] = dff;
  b_emit(b, in, name);
  ddp_node *n = b_record(b, LK_SWIGLU, name);
  n->t[0] = ab;
  n->t[1] = h;
  n->i[0] = dff;
  return h;
}

void layer_swiglu_bwd(ddp_builder *b, const ddp_node *n) {
  if (!b_has_grad(b, n->t[1])) return;
  int32_t dab = b_grad(b, n->t[0]);
  b_grad_acc(b, dab);
  ddp_instr in = b_kernel(OP_SWIGLU_BWD);
  b_buf(b, &in, SWIGLU_BWD_P_AB, n->t[0]);
  b_buf(b, &in, SWIGLU_BWD_P_DH, b_grad(b, n->t[1]));
  b_buf(b, &in, SWIGLU_BWD_P_DAB, dab);
  in.i[SWIGLU_BWD_I_N] = b->rows;
  in.i[SWIGLU_BWD_I_F] = n->i[0];
  b_emit(b, in, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

int32_t layer_relu(ddp_builder *b, const char *name, int32_t x, int64_t n_cols) {
  int64_t rows = b_t(b, x)->shape[0];
  int32_t y = b_act(b, b_fmt(b, "%s.out", name), b_t(b, x)->dtype, rows, n_cols);
  ddp_instr in = b_kernel(OP_RELU_FWD);
  b_buf(b, &in, RELU_FWD_P_X, x);
  b_buf(b, &in, RELU_FWD_P_Y, y);
  in.i[RELU_FWD_I_N] = rows * n_cols;
  b_emit(b, in, name);
  ddp_node *n = b_record(b, LK_RELU, name);
  n->t[0] = x;
  n->t[1] = y;
  n->i[0] = rows * n_cols;
  return y;
}

void layer_relu_bwd(ddp_builder *b, const ddp_node *n) {
  if (!b_has_grad(b, n->t[1]) || !b_needs_grad(b, n->t[0])) return;
  int32_t dx = b_grad(b, n->t[0]);
  ddp_instr in = b_kernel(OP_RELU_BWD);
  b_buf(b, &in, RELU_BWD_P_Y, n->t[1]);
  b_buf(b, &in, RELU_BWD_P_DY, b_grad(b, n->t[1]));
  b_buf(b, &in, RELU_BWD_P_DX, dx);
  in.i[RELU_BWD_I_N] = n->i[0];
  in.i[RELU_BWD_I_ACC] = b_grad_acc(b, dx);
  b_emit(b, in, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

void layer_bias(ddp_builder *b, const char *name, int unit, int32_t y, int64_t m) {
  int64_t rows = b_t(b, y)->shape[0];
  ddp_instr in = b_kernel(OP_BIAS_ADD);
  b_buf(b, &in, BIAS_ADD_P_Y, y);
  b_buf(b, &in, BIAS_ADD_P_B, b->units[unit].master);
  in.i[BIAS_ADD_I_N] = rows;
  in.i[BIAS_ADD_I_M] = m;
  b_emit(b, in, name);
  ddp_node *n = b_record(b, LK_BIAS, name);
  n->t[0] = y;
  n->u[0] = unit;
  n->i[0] = rows;
  n->i[1] = m;
}

void layer_bias_bwd(ddp_builder *b, const ddp_node *n) {
  const ddp_unit *u = &b->units[n->u[0]];
  if (!u->trainable || !b_has_grad(b, n->t[0])) return;
  ddp_instr in = b_kernel(OP_REDUCE_ROWS);
  b_buf(b, &in, REDUCE_ROWS_P_IN, b_grad(b, n->t[0]));
  b_buf(b, &in, REDUCE_ROWS_P_OUT, u->grad);
  in.i[REDUCE_ROWS_I_P] = n->i[0];
  in.i[REDUCE_ROWS_I_D] = n->i[1];
  in.i[REDUCE_ROWS_I_ACC] = b_unit_grad_acc(b, n->u[0]);
  in.f[REDUCE_ROWS_F_SCALE] = 1.0f;
  b_emit(b, in, b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

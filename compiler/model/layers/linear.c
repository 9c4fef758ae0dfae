/* compiler/model/layers/linear.c: Linear (no bias; weight (out, in) as PyTorch), optionally fused with a
 * residual add through the GEMM's C operand: y = x W^T (+ residual). Backward: dW = dy^T x (first),
 * dx = dy W, and the residual's gradient is dy itself (shared, not copied). */
#include "layers.h"

int32_t layer_linear(ddp_builder *b, const char *name, int unit, int32_t x, int64_t in, int64_t out, int32_t residual,
                     int out_dt) {
  int32_t w = b->units[unit].copy;
  int wdt = b_t(b, w)->dtype;
  int32_t xin = b_as_dtype(b, x, wdt, b_fmt(b, "%s.in.%s", name, ddp_dtype_name(wdt)));
  int64_t rows = b_t(b, x)->shape[0];
  int32_t y = b_act(b, b_fmt(b, "%s.out", name), out_dt, rows, out);
  ddp_instr *g = b_gemm(b, name, xin, 0, 0, in, w, 0, 1, in, y, 0, out, rows, out, in, residual >= 0 ? 1.0f : 0.0f);
  if (residual >= 0) b_arg(g, GEMM_P_C, residual, 0, b_t(b, residual)->dtype);
  ddp_node *n = b_record(b, LK_LINEAR, name);
  n->t[0] = xin;
  n->t[1] = y;
  n->t[2] = residual;
  n->t[3] = x;
  n->u[0] = unit;
  n->i[0] = rows;
  n->i[1] = in;
  n->i[2] = out;
  return y;
}

void layer_linear_bwd(ddp_builder *b, const ddp_node *n) {
  int32_t xin = n->t[0], y = n->t[1], residual = n->t[2], x = n->t[3];
  if (!b_has_grad(b, y)) return;
  const ddp_unit *u = &b->units[n->u[0]];
  int64_t rows = n->i[0], in = n->i[1], out = n->i[2];
  const char *name = ddp_plan_string(b->plan, n->name);
  int32_t dy_orig = b_grad(b, y);
  /* The residual branch passes dy through unchanged: share the tensor when nobody wrote it yet. */
  if (residual >= 0) {
    if (!b_has_grad(b, residual)) {
      b->grad_of[residual] = dy_orig;
    } else {
      int32_t dr = b_grad(b, residual);
      ddp_instr add = b_kernel(OP_ADD);
      b_buf(b, &add, ADD_P_A, dr);
      b_buf(b, &add, ADD_P_B, dy_orig);
      b_buf(b, &add, ADD_P_OUT, dr);
      add.i[ADD_I_N] = (int64_t)ddp_tensor_numel(b_t(b, dr));
      b_emit(b, add, b_fmt(b, "%s.residual.bwd", name));
    }
  }
  int32_t dy = b_cast_grad(b, dy_orig, b_t(b, u->copy)->dtype,
                          b_fmt(b, "%s.dy.%s", name, ddp_dtype_name(b_t(b, u->copy)->dtype)));
  if (u->trainable) {
    int acc = b_unit_grad_acc(b, n->u[0]);
    b_gemm(b, b_fmt(b, "%s.dW", name), dy, 0, 1, out, xin, 0, 0, in, u->grad, 0, in, out, in, rows, acc ? 1.0f : 0.0f);
  }
  if (b_needs_grad(b, x)) {
    int32_t dx = b_grad(b, x);
    int acc = b_grad_acc(b, dx);
    b_gemm(b, b_fmt(b, "%s.dx", name), dy, 0, 0, out, u->copy, 0, 0, in, dx, 0, in, rows, in, out, acc ? 1.0f : 0.0f);
  }
}

/* compiler/model/layers/norms.c: RMSNorm (eps 1e-5, f32 statistics, weight g) and LayerNorm (PyTorch
 * nn.LayerNorm, weight and bias). Backward writes dx (accumulating when the input's gradient already
 * has a writer) and per-chunk partial sums for the weight gradients, reduced by REDUCE_ROWS. The forward
 * writes its statistics (rstd, mean) also in a plan without a backward: the reference normalises with
 * the statistic as stored (rounded to f32), so dropping them would change a forward plan's loss in the
 * last bits against the train plan's; they are tiny and live only during their own instruction. */
#include "layers.h"

static void reduce_into_unit(ddp_builder *b, int unit, int32_t part, int64_t P, int64_t d, const char *name) {
  ddp_unit *u = &b->units[unit];
  if (!u->trainable) return;
  int acc = b_unit_grad_acc(b, unit);
  ddp_instr r = b_kernel(OP_REDUCE_ROWS);
  b_buf(b, &r, REDUCE_ROWS_P_IN, part);
  b_buf(b, &r, REDUCE_ROWS_P_OUT, u->grad);
  r.i[REDUCE_ROWS_I_P] = P;
  r.i[REDUCE_ROWS_I_D] = d;
  r.i[REDUCE_ROWS_I_ACC] = acc;
  r.f[REDUCE_ROWS_F_SCALE] = 1.0f;
  b_emit(b, r, name);
}

int32_t layer_rmsnorm(ddp_builder *b, const char *name, int unit, int32_t x, int64_t d, int out_dt) {
  int64_t rows = b_t(b, x)->shape[0];
  int32_t y = b_act(b, b_fmt(b, "%s.out", name), out_dt, rows, d);
  /* also without a backward: see the top comment */
  int32_t rstd = b_act(b, b_fmt(b, "%s.rstd", name), b->fdt, rows, 0);
  ddp_instr in = b_kernel(OP_RMSNORM_FWD);
  b_buf(b, &in, RMSNORM_FWD_P_X, x);
  b_buf(b, &in, RMSNORM_FWD_P_G, b->units[unit].master);
  b_buf(b, &in, RMSNORM_FWD_P_Y, y);
  b_buf(b, &in, RMSNORM_FWD_P_RSTD, rstd);
  in.i[RMSNORM_FWD_I_N] = rows;
  in.i[RMSNORM_FWD_I_D] = d;
  in.f[RMSNORM_FWD_F_EPS] = 1e-5f;
  b_emit(b, in, name);
  ddp_node *n = b_record(b, LK_RMSNORM, name);
  n->t[0] = x;
  n->t[1] = y;
  n->t[2] = rstd;
  n->u[0] = unit;
  n->i[0] = rows;
  n->i[1] = d;
  return y;
}

void layer_rmsnorm_bwd(ddp_builder *b, const ddp_node *n) {
  int32_t x = n->t[0], y = n->t[1], rstd = n->t[2];
  if (!b_has_grad(b, y)) return;
  int64_t rows = n->i[0], d = n->i[1], P = b_partials(rows);
  const char *name = ddp_plan_string(b->plan, n->name);
  int32_t part = b_act(b, b_fmt(b, "%s.dg_part", name), b->fdt, P, d);
  int32_t dy = b_grad(b, y);
  int32_t dx = b_needs_grad(b, x) ? b_grad(b, x) : -1;
  ddp_instr in = b_kernel(OP_RMSNORM_BWD);
  b_buf(b, &in, RMSNORM_BWD_P_X, x);
  b_buf(b, &in, RMSNORM_BWD_P_G, b->units[n->u[0]].master);
  b_buf(b, &in, RMSNORM_BWD_P_DY, dy);
  b_buf(b, &in, RMSNORM_BWD_P_RSTD, rstd);
  b_buf(b, &in, RMSNORM_BWD_P_DX, dx);
  b_buf(b, &in, RMSNORM_BWD_P_DG_PART, part);
  in.i[RMSNORM_BWD_I_N] = rows;
  in.i[RMSNORM_BWD_I_D] = d;
  in.i[RMSNORM_BWD_I_ACC] = dx >= 0 ? b_grad_acc(b, dx) : 0;
  in.i[RMSNORM_BWD_I_P] = P;
  b_emit(b, in, b_fmt(b, "%s.bwd", name));
  reduce_into_unit(b, n->u[0], part, P, d, b_fmt(b, "%s.dg", name));
}

int32_t layer_layernorm(ddp_builder *b, const char *name, int wunit, int bunit, int32_t x, int64_t d) {
  int64_t rows = b_t(b, x)->shape[0];
  int dt = b_t(b, x)->dtype;
  int32_t y = b_act(b, b_fmt(b, "%s.out", name), dt, rows, d);
  /* also without a backward: see the top comment */
  int32_t mean = b_act(b, b_fmt(b, "%s.mean", name), b->fdt, rows, 0);
  int32_t rstd = b_act(b, b_fmt(b, "%s.rstd", name), b->fdt, rows, 0);
  ddp_instr in = b_kernel(OP_LAYERNORM_FWD);
  b_buf(b, &in, LAYERNORM_FWD_P_X, x);
  b_buf(b, &in, LAYERNORM_FWD_P_W, b->units[wunit].master);
  b_buf(b, &in, LAYERNORM_FWD_P_B, b->units[bunit].master);
  b_buf(b, &in, LAYERNORM_FWD_P_Y, y);
  b_buf(b, &in, LAYERNORM_FWD_P_MEAN, mean);
  b_buf(b, &in, LAYERNORM_FWD_P_RSTD, rstd);
  in.i[LAYERNORM_FWD_I_N] = rows;
  in.i[LAYERNORM_FWD_I_D] = d;
  in.f[LAYERNORM_FWD_F_EPS] = 1e-5f;
  b_emit(b, in, name);
  ddp_node *n = b_record(b, LK_LAYERNORM, name);
  n->t[0] = x;
  n->t[1] = y;
  n->t[2] = mean;
  n->t[3] = rstd;
  n->u[0] = wunit;
  n->u[1] = bunit;
  n->i[0] = rows;
  n->i[1] = d;
  return y;
}

void layer_layernorm_bwd(ddp_builder *b, const ddp_node *n) {
  int32_t x = n->t[0], y = n->t[1], mean = n->t[2], rstd = n->t[3];
  if (!b_has_grad(b, y)) return;
  int64_t rows = n->i[0], d = n->i[1], P = b_partials(rows);
  const char *name = ddp_plan_string(b->plan, n->name);
  int32_t wpart = b_act(b, b_fmt(b, "%s.dw_part", name), b->fdt, P, d);
  int32_t bpart = b_act(b, b_fmt(b, "%s.db_part", name), b->fdt, P, d);
  int32_t dy = b_grad(b, y);
  int32_t dx = b_needs_grad(b, x) ? b_grad(b, x) : -1;
  ddp_instr in = b_kernel(OP_LAYERNORM_BWD);
  b_buf(b, &in, LAYERNORM_BWD_P_X, x);
  b_buf(b, &in, LAYERNORM_BWD_P_W, b->units[n->u[0]].master);
  b_buf(b, &in, LAYERNORM_BWD_P_DY, dy);
  b_buf(b, &in, LAYERNORM_BWD_P_MEAN, mean);
  b_buf(b, &in, LAYERNORM_BWD_P_RSTD, rstd);
  b_buf(b, &in, LAYERNORM_BWD_P_DX, dx);
  b_buf(b, &in, LAYERNORM_BWD_P_DW_PART, wpart);
  b_buf(b, &in, LAYERNORM_BWD_P_DB_PART, bpart);
  in.i[LAYERNORM_BWD_I_N] = rows;
  in.i[LAYERNORM_BWD_I_D] = d;
  in.i[LAYERNORM_BWD_I_ACC] = dx >= 0 ? b_grad_acc(b, dx) : 0;
  in.i[LAYERNORM_BWD_I_P] = P;
  b_emit(b, in, b_fmt(b, "%s.bwd", name));
  reduce_into_unit(b, n->u[0], wpart, P, d, b_fmt(b, "%s.dw", name));
  reduce_into_unit(b, n->u[1], bpart, P, d, b_fmt(b, "%s.db", name));
}

/* compiler/model/layers/losses.c: the losses. Mean cross-entropy over the rank's tokens (XENT writes the
 * per-row loss and the logits' gradient in place) and mean squared error over all elements (MSE). The
 * scalar loss is SUM(loss rows) scaled to the mean; the gradient scale makes DDP's gradient average equal
 * the global-batch mean. Without a backward (mode "forward") no gradient is written. */
#include "layers.h"

static void loss_scalar(ddp_builder *b, int32_t rows_t, int64_t rows, double scale) {
  ddp_instr in = b_kernel(OP_SUM);
  b_buf(b, &in, SUM_P_IN, rows_t);
  b_buf(b, &in, SUM_P_OUT, b->loss);
  in.i[SUM_I_N] = rows;
  in.i[SUM_I_ACC] = 0;
  in.f[SUM_F_SCALE] = (float)scale;
  b_emit(b, in, "loss");
}

void layer_cross_entropy(ddp_builder *b, int32_t logits, int32_t targets, int64_t vocab) {
  int64_t rows = b_t(b, logits)->shape[0];
  b->loss_rows = b_act(b, "loss.rows", b->fdt, rows, 0);
  ddp_instr in = b_kernel(OP_XENT);
  b_buf(b, &in, XENT_P_LOGITS, logits);
  b_buf(b, &in, XENT_P_TARGETS, targets);
  b_buf(b, &in, XENT_P_LOSS_ROWS, b->loss_rows);
  b_buf(b, &in, XENT_P_DLOGITS, b->backward ? logits : -1);
  in.i[XENT_I_N] = rows;
  in.i[XENT_I_V] = vocab;
  in.f[XENT_F_SCALE] = (float)(1.0 / (double)rows);
  b_emit(b, in, "cross_entropy");
  if (b->backward) { /* dlogits overwrote the logits: the logits tensor is now its own gradient. */
    b->grad_of[logits] = logits;
    b->grad_done[logits] = 1;
  }
  loss_scalar(b, b->loss_rows, rows, 1.0 / (double)rows);
}

/* logits -> XENT_VP_STATS(stats[t]) ALL_GATHER(stats) XENT_VP(loss rows, dlogits in place) SUM: the
 * vocabulary-parallel cross-entropy over the tensor ranks' logit columns, never gathering the logits. */
void layer_cross_entropy_vp(ddp_builder *b, int32_t logits, int32_t targets, int64_t vocab_local) {
  int64_t rows = b_t(b, logits)->shape[0], T = b->tp;
  uint64_t slice = (uint64_t)rows * 2 * ddp_dtype_size(b->fdt);
  b->loss_rows = b_act(b, "loss.rows", b->fdt, rows, 0);
  int32_t stats = b_act(b, "loss.vp_stats", b->fdt, T * rows, 2);
  ddp_instr st = b_kernel(OP_XENT_VP_STATS);
  b_buf(b, &st, XENT_VP_STATS_P_LOGITS, logits);
  b_buf(b, &st, XENT_VP_STATS_P_TARGETS, targets);
  b_buf(b, &st, XENT_VP_STATS_P_STATS, stats);
  st.i[XENT_VP_STATS_I_N] = rows;
  st.i[XENT_VP_STATS_I_V] = vocab_local;
  b_emit(b, st, "cross_entropy.stats");
  b_tp_patch(b, b_last(b), TPP_VIEW, XENT_VP_STATS_P_STATS, (int64_t)slice);
  b_tp_patch(b, b_last(b), TPP_INT, XENT_VP_STATS_I_VFIRST, vocab_local);
  uint32_t gather = b_tp_collective(b, I_ALL_GATHER, stats, 0, 0, rows * 2, "cross_entropy.all_gather");
  b_tp_patch(b, gather, TPP_VIEW, COLL_P_SEND, (int64_t)slice);
  ddp_instr in = b_kernel(OP_XENT_VP);
  b_buf(b, &in, XENT_VP_P_LOGITS, logits);
  b_buf(b, &in, XENT_VP_P_TARGETS, targets);
  b_buf(b, &in, XENT_VP_P_STATS, stats);
  b_buf(b, &in, XENT_VP_P_LOSS_ROWS, b->loss_rows);
  b_buf(b, &in, XENT_VP_P_DLOGITS, b->backward ? logits : -1);
  in.i[XENT_VP_I_N] = rows;
  in.i[XENT_VP_I_V] = vocab_local;
  in.i[XENT_VP_I_PARTS] = T;
  in.i[XENT_VP_I_VTOTAL] = vocab_local * T;
  in.f[XENT_VP_F_SCALE] = (float)(1.0 / (double)rows);
  b_emit(b, in, "cross_entropy");
  b_tp_patch(b, b_last(b), TPP_INT, XENT_VP_I_VFIRST, vocab_local);
  if (b->backward) {
    b->grad_of[logits] = logits;
    b->grad_done[logits] = 1;
  }
  loss_scalar(b, b->loss_rows, rows, 1.0 / (double)rows);
}

void layer_mse(ddp_builder *b, int32_t pred, int32_t target, int64_t m) {
  int64_t rows = b_t(b, pred)->shape[0];
  b->loss_rows = b_act(b, "loss.rows", b->fdt, rows, 0);
  int32_t dpred = b->backward ? b_grad(b, pred) : -1;
  if (dpred >= 0) b_grad_acc(b, dpred);
  ddp_instr in = b_kernel(OP_MSE);
  b_buf(b, &in, MSE_P_PRED, pred);
  b_buf(b, &in, MSE_P_TARGET, target);
  b_buf(b, &in, MSE_P_LOSS_ROWS, b->loss_rows);
  b_buf(b, &in, MSE_P_DPRED, dpred);
  in.i[MSE_I_N] = rows;
  in.i[MSE_I_M] = m;
  in.f[MSE_F_SCALE] = (float)(2.0 / ((double)rows * (double)m));
  b_emit(b, in, "mse");
  loss_scalar(b, b->loss_rows, rows, 1.0 / ((double)rows * (double)m));
}

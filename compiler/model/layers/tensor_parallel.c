/* compiler/model/layers/tensor_parallel.c: the two communication points of a Megatron tensor-parallel
 * layer pair (the schedule's mesh.tensor > 1), as tape nodes:
 *   reduce  forward: ALL_REDUCE(sum) of a row-parallel layer's partial output over the tensor ranks (the
 *           output is then the same on every rank); backward: nothing (the gradient of a replicated tensor is
 *           the same on every rank already)
 *   copy    forward: nothing (a replicated input entering column-parallel layers); backward: ALL_REDUCE(sum)
 *           of its gradient, each rank having computed its part through its columns
 * Both run on the compute stream, between TP_COMM timing points: the next layer needs their result. The communicator is the rank's tensor
 * group, filled in per rank (TPP_COMM) when the rank programs are assembled. */
#include "layers.h"

uint32_t b_tp_collective(ddp_builder *b, int opcode, int32_t t, uint64_t send_view, uint64_t recv_view, int64_t count,
                         const char *name) {
  int dt = b_t(b, t)->dtype;
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMPUTE);
  b_arg(&in, COLL_P_SEND, t, send_view, dt);
  b_arg(&in, COLL_P_RECV, t, recv_view, dt);
  in.i[COLL_I_COUNT] = count;
  in.i[COLL_I_REDOP] = REDOP_SUM;
  in.i[COLL_I_ROOT] = 0;
  in.i[COLL_I_COMM] = 0;
  b_timer(b, TIMER_TP_COMM_BEGIN);
  b_emit(b, in, name);
  uint32_t k = b_last(b);
  b_tp_patch(b, k, TPP_COMM, 0, 0);
  b_timer(b, TIMER_TP_COMM_END);
  return k;
}

static void all_reduce(ddp_builder *b, int32_t t, const char *name) {
  b_tp_collective(b, I_ALL_REDUCE, t, 0, 0, (int64_t)ddp_tensor_numel(b_t(b, t)), name);
}

void layer_tp_reduce(ddp_builder *b, const char *name, int32_t t) {
  if (b->tp <= 1) return;
  all_reduce(b, t, name);
  ddp_node *n = b_record(b, LK_TP_REDUCE, name);
  n->t[0] = t;
}

void layer_tp_copy(ddp_builder *b, const char *name, int32_t t) {
  if (b->tp <= 1) return;
  ddp_node *n = b_record(b, LK_TP_COPY, name);
  n->t[0] = t;
}

void layer_tp_copy_bwd(ddp_builder *b, const ddp_node *n) {
  if (!b_has_grad(b, n->t[0])) return;
  all_reduce(b, b_grad(b, n->t[0]), b_fmt(b, "%s.bwd", ddp_plan_string(b->plan, n->name)));
}

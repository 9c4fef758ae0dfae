/* compiler/passes/rank_program.c: the helpers of passes.h that append to one rank's programs. */
#include "passes.h"

ddp_instr *rp_push(rank_ctx *c, ddp_instr in, const char *name) {
  return b_push(c->b, c->out, in, name);
}

void rp_timer(rank_ctx *c, int stream, int role) {
  ddp_instr in = ddp_instr_blank(I_TIMER, (uint16_t)stream);
  in.i[TIMER_I_SLOT] = c->ntimers++;
  in.i[TIMER_I_ROLE] = role;
  rp_push(c, in, NULL);
}

uint32_t rp_record(rank_ctx *c, int stream) {
  ddp_instr in = ddp_instr_blank(I_EVENT_RECORD, (uint16_t)stream);
  in.i[EVENT_I_EVENT] = c->nevents++;
  rp_push(c, in, NULL);
  return (uint32_t)in.i[EVENT_I_EVENT];
}

void rp_wait(rank_ctx *c, int stream, uint32_t event) {
  ddp_instr in = ddp_instr_blank(I_EVENT_WAIT, (uint16_t)stream);
  in.i[EVENT_I_EVENT] = event;
  rp_push(c, in, NULL);
}

/* order(from, to) -> EVENT_RECORD(from) EVENT_WAIT(to) */
void rp_order(rank_ctx *c, int from, int to) { rp_wait(c, to, rp_record(c, from)); }

/* collective -> TIMER(COMM_BEGIN) op(flat range) TIMER(COMM_END), on one stream */
void rp_collective(rank_ctx *c, int opcode, int stream, int32_t flat, int64_t begin, int64_t count, int redop,
                   int root, const char *name) {
  const ddp_tensor *t = b_t(c->b, flat);
  int dt = t->dtype;
  uint64_t es = ddp_dtype_size(dt);
  ddp_instr in = ddp_instr_blank(opcode, (uint16_t)stream);
  int64_t world = c->lay->world;
  uint64_t send = (uint64_t)begin * es, recv = (uint64_t)begin * es;
  if (opcode == I_REDUCE_SCATTER) { /* in place: the rank's chunk of the full buffer */
    send = 0;
    recv = (uint64_t)(c->rank * count) * es;
  } else if (opcode == I_ALL_GATHER) {
    send = (uint64_t)(c->rank * count) * es;
    recv = 0;
  }
  (void)world;
  b_arg(&in, COLL_P_SEND, flat, send, dt);
  b_arg(&in, COLL_P_RECV, flat, recv, dt);
  in.i[COLL_I_COUNT] = count;
  in.i[COLL_I_REDOP] = redop;
  in.i[COLL_I_ROOT] = root;
  in.i[COLL_I_COMM] = c->comm;
  rp_timer(c, stream, TIMER_COMM_BEGIN);
  rp_push(c, in, name);
  rp_timer(c, stream, TIMER_COMM_END);
}

void rp_alltoall_sum(rank_ctx *c, int32_t send, int64_t send_at, int32_t received, int32_t out, int64_t out_at,
                     int64_t per, int W, const char *a2a_name, const char *sum_name) {
  const int dt = b_t(c->b, send)->dtype;
  const uint64_t es = ddp_dtype_size(dt);
  ddp_instr a2a = ddp_instr_blank(I_ALL_TO_ALL, STREAM_COMM);
  b_arg(&a2a, COLL_P_SEND, send, (uint64_t)send_at * es, dt);
  b_arg(&a2a, COLL_P_RECV, received, 0, dt);
  a2a.i[COLL_I_COUNT] = per;
  a2a.i[COLL_I_COMM] = c->comm;
  ddp_instr sum = b_kernel(OP_SUM_CHUNKS);
  sum.stream = STREAM_COMM;
  b_arg(&sum, SUM_CHUNKS_P_IN, received, 0, dt);
  b_arg(&sum, SUM_CHUNKS_P_OUT, out, (uint64_t)out_at * es, dt);
  sum.i[SUM_CHUNKS_I_N] = per;
  sum.i[SUM_CHUNKS_I_P] = W;
  sum.f[SUM_CHUNKS_F_SCALE] = 1.0f / (float)W; /* the average, as REDOP_AVG */
  rp_push(c, a2a, a2a_name);
  rp_push(c, sum, sum_name);
}

void rp_range(rank_ctx *c, int push, int kind, const char *name) {
  ddp_instr in = ddp_instr_blank(push ? I_RANGE_PUSH : I_RANGE_POP, STREAM_COMPUTE);
  in.i[RANGE_PUSH_I_KIND] = kind;
  rp_push(c, in, push ? name : NULL);
}

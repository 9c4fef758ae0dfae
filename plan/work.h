/* plan/work.h: the work of one instruction as the cost model counts it: FLOPs of GEMMs and attention
 * kernels, bytes moved by memory-bound work (every operand read and written, a read-modify-write operand
 * counted twice), bytes on the wire of a collective. The compiler's cost model (compiler/explain/cost.c)
 * divides these by a device profile's rates; `ddprun --calibrate` (runtime/bench/calibrate.c) measures the
 * rates from the same quantities, so the two can never count differently. */
#ifndef DDP_WORK_H
#define DDP_WORK_H
#include "plan.h"

/* The collective kinds a profile prices: all_reduce, reduce_scatter, all_gather, broadcast, send_recv. */
enum { COST_ALL_REDUCE = 0, COST_REDUCE_SCATTER, COST_ALL_GATHER, COST_BROADCAST, COST_SEND_RECV, COST_COLL_COUNT };

/* How an instruction is priced. */
enum {
  WORK_FREE = 0,  /* events, ranges, timers */
  WORK_GEMM,      /* flops at a GEMM throughput (gemm16: 16-bit inputs; small: smallest of M, N, K) */
  WORK_ATTENTION, /* flops at the attention throughput (and bytes at HBM, whichever is longer) */
  WORK_MEMORY,    /* bytes at HBM bandwidth: other kernels, memset, copy, load_batch, init_tensor */
  WORK_COLL       /* coll_kind: alpha + wire_bytes / busbw */
};

typedef struct ddp_work {
  int kind;          /* WORK_* */
  double flops;      /* GEMM: 2*M*N*K*batch; attention: its matmul FLOPs */
  double bytes;      /* memory-bound bytes (reads + writes; -1: the footprint is invalid) */
  int gemm16;        /* GEMM or attention: inputs of 2 bytes or fewer (the tensor cores' path) */
  double gemm_min_dim; /* GEMM: the smallest of M, N, K */
  int coll_kind;     /* WORK_COLL: COST_* */
  double wire_bytes; /* WORK_COLL: ring factor * buffer bytes (all-reduce 2(n-1)/n of the buffer;
                        reduce-scatter, all-gather (n-1)/n of world * count; broadcast, send, recv 1) */
} ddp_work;

/* The work of `in` in a plan of `world` ranks. */
void ddp_instr_work(const ddp_plan *p, const ddp_instr *in, ddp_work *w);
/* Bytes read and written through every non-null operand, a read-modify-write operand twice (the optimizer's
 * parameter and moments, in-place kernels, accumulating outputs); -1 when the footprint is invalid. */
double ddp_instr_bytes_moved(const ddp_plan *p, const ddp_instr *in);
#endif

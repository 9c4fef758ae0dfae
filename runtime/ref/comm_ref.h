/* runtime/ref/comm_ref.h: the in-process collectives of the reference executor: ranks are threads of one
 * process and meet at barriers. Results are deterministic: every element is reduced in rank order
 * 0..W-1 in double and rounded once. If a rank fails, the others' collectives return an error naming it
 * instead of waiting forever. */
#ifndef DDP_REF_COMM_H
#define DDP_REF_COMM_H
#include "plan.h"

typedef struct ddp_ref_comm ddp_ref_comm;

ddp_ref_comm *ddp_ref_comm_new(int world);
void ddp_ref_comm_free(ddp_ref_comm *c);
/* Marks `rank` as failed: every rank waiting in (or later entering) a collective gets an error. */
void ddp_ref_comm_abort(ddp_ref_comm *c, int rank);
/* Executes one collective instruction for `rank` (send/recv already resolved to host pointers). */
int ddp_ref_collective(ddp_ref_comm *c, int rank, const ddp_instr *in, void *send, void *recv, char *err,
                       size_t errcap);
#endif

/* compiler/verify/vclock.h: the happens-before of one rank's program as vector clocks, shared by the race check
 * (verify.c) and the cross-rank proof of the peer reads (peer.c). Each stream advances its own component per
 * instruction; EVENT_RECORD snapshots the recording stream's clock, EVENT_WAIT merges it into the waiting
 * stream's. */
#ifndef DDP_VCLOCK_H
#define DDP_VCLOCK_H
#include "conflicts.h"
#include "plan.h"

/* The clocks of `iters` consecutive replays of prog (rank's): clock[(it * prog->n + k) * DDP_VERIFY_MAX_STREAMS
 * + s], instruction k's own position on its stream being the component of its stream. NULL with one line in
 * err ("plan rank R WHAT: ...") when the plan has more streams than the verifier handles, a wait comes before
 * any record of its event, or an event is out of range. */
uint32_t *ddp_vclock_replay(const ddp_plan *p, int rank, const ddp_program *prog, int iters, const char *what,
                            char *err, size_t errcap);

/* Does instruction a of replay ia happen before (or be) instruction b of replay ib? */
static inline int ddp_vclock_before(const ddp_program *prog, const uint32_t *clock, int ia, uint32_t a, int ib,
                                    uint32_t b) {
  const uint16_t s = prog->v[a].stream;
  return clock[((size_t)ib * prog->n + b) * DDP_VERIFY_MAX_STREAMS + s] >=
         clock[((size_t)ia * prog->n + a) * DDP_VERIFY_MAX_STREAMS + s];
}
#endif

/* compiler/verify/verify.h: the plan verifier. A plan is static, so its safety is proved at compile time:
 *  - every pair of accesses to overlapping bytes from different streams, at least one a write, is ordered
 *    by events (checked over two consecutive replays of the step program, and over init);
 *  - an event is recorded before it is waited on;
 *  - all ranks issue the same collectives in the same order with the same sizes, dtypes, reductions and
 *    roots;
 *  - the point-to-point transfers pair up message by message and cannot deadlock (p2p.c);
 *  - updates that read every rank's gradient read it final and before anyone writes it again (peer.c).
 * On failure: -1 and one line naming the rank, the instructions and the buffer. */
#ifndef DDP_VERIFY_H
#define DDP_VERIFY_H
#include "plan.h"
int ddp_verify(const ddp_plan *p, char *err, size_t errcap);
int ddp_verify_p2p(const ddp_plan *p, char *err, size_t errcap); /* p2p.c */
int ddp_verify_peer(const ddp_plan *p, char *err, size_t errcap); /* peer.c */
#endif

/* runtime/rendezvous.h: hands rank 0's NCCL unique id (an opaque blob) to every other rank over TCP at
 * the master address, with deadlines everywhere so that nothing waits forever. Protocol (docs/LAUNCH.md;
 * integers are big-endian u32):
 *   peer -> rank 0   "DDR1" rank world len                     (16 bytes)
 *   rank 0 -> peer   status n, then n bytes: status 0 = the blob (n = len), 1 = a refusal message
 *   peer -> rank 0   'K' (the blob arrived); then both close
 * Rank 0 listens on every interface at master_port (SO_REUSEADDR, dual-stack when the host has IPv6). */
#ifndef DDP_RENDEZVOUS_H
#define DDP_RENDEZVOUS_H
#include "launch.h"
#include <stddef.h>

#define DDP_RENDEZVOUS_MAX_BLOB (1u << 20)

/* Rank 0: serves blob[len] until every rank 1..world-1 has acknowledged it, or timeout_s passes
 * ("rendezvous: ranks 1, 3 did not arrive within 60 s at 127.0.0.1:29500"). A peer launched with another
 * world size or blob length is refused with a message it reports, and rank 0 fails with the same line.
 * Other ranks: connect to master_addr:master_port (host names through getaddrinfo), retrying while
 * rank 0 is not listening yet, and receive blob[len]; after timeout_s: "rendezvous: rank 2 could not reach
 * rank 0 at 10.0.0.1:29500 within 60 s (last error: Connection refused)". World 1 returns at once.
 * Returns 0, or -1 with one line in err. */
int ddp_rendezvous(const ddp_identity *id, void *blob, size_t len, double timeout_s, char *err, size_t cap);
#endif

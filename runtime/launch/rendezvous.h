/* runtime/rendezvous.h: hands rank 0's NCCL unique id (an opaque blob) to every other rank over TCP at
 * the master address, only to peers that prove they know the job's secret, with deadlines everywhere so
 * that nothing waits forever. Protocol (docs/LAUNCH.md; integers are big-endian u32; K is the job key,
 * M(label, ...) = HMAC-SHA256(K, label || hello || ns || ...)):
 *   peer -> rank 0   "DDR2" rank world len nc[16]                (32 bytes: the hello)
 *   rank 0 -> peer   "DDS2" ns[16]                               (20 bytes)
 *   peer -> rank 0   M("ddp-rdv-client")                         (32 bytes: the peer's proof)
 *   rank 0 -> peer   status n payload[n] M("ddp-rdv-server", status n payload)   status 0: the blob
 *                    encrypted with the stream M("ddp-rdv-stream", block index), 1: a refusal message;
 *                    or status 2 n=0 and nothing more: the peer's proof was wrong
 *   peer -> rank 0   'K' (the blob arrived); then both close
 * K = SHA-256 of DDP_RENDEZVOUS_SECRET (`--nproc` sets a random one), else of the job's identifiers
 * (weaker: docs/LAUNCH.md, threat model). Rank 0 listens only on the addresses master_addr resolves to. */
#ifndef DDP_RENDEZVOUS_H
#define DDP_RENDEZVOUS_H
#include "launch.h"
#include <stddef.h>

#define DDP_RENDEZVOUS_MAX_BLOB (1u << 20)

/* Rank 0: serves blob[len] until every rank 1..world-1 has acknowledged it, or timeout_s passes
 * ("rendezvous: ranks 1, 3 did not arrive within 60 s at 127.0.0.1:29500"). An authenticated peer
 * launched with another world size or blob length is refused with a message it reports, and rank 0 fails
 * with the same line. Connections that do not authenticate, stay idle for 5 s or claim a rank that is
 * already served are closed (one stderr line per kind) and rank 0 goes on.
 * Other ranks: connect to master_addr:master_port (host names through getaddrinfo), retrying while
 * rank 0 is not listening yet, and receive blob[len]; after timeout_s: "rendezvous: rank 2 could not reach
 * rank 0 at 10.0.0.1:29500 within 60 s (last error: Connection refused)". World 1 returns at once.
 * Returns 0, or -1 with one line in err. */
int ddp_rendezvous(const ddp_identity *id, void *blob, size_t len, double timeout_s, char *err, size_t errcap);

/* `ddprun --nproc`: sets DDP_RENDEZVOUS_SECRET to 32 fresh random bytes (hex) in this process's
 * environment, so that the ranks it forks share it. Returns 0, or -1 with one line in err. */
int ddp_rendezvous_new_secret(char *err, size_t errcap);
#endif

/* plan/p2p_slots.h: how the step programs' SEND/RECV pair up between ranks, as the flag slots of the CUDA
 * executor's copy-engine path (runtime/cuda/p2p.c). Message k from rank a to rank b is a's k-th SEND to b
 * and b's k-th RECV from a (the verifier proves they pair, in order and size). Each rank has 1 + nrecv +
 * nsend 64-bit flags: [0] the constant 1 the rank copies into a peer's flag, then AVAIL by its RECVs in
 * program order (the sender sets it: the data is ready), then DONE by its SENDs (the receiver sets it: the
 * data is taken). Pure plan arithmetic, so the CPU tests check the pairing the GPU path relies on. */
#ifndef DDP_P2P_SLOTS_H
#define DDP_P2P_SLOTS_H
#include "plan.h"
#include <stddef.h>
#include <stdint.h>

typedef struct ddp_p2p_slot {
  uint32_t instr;      /* its index in the rank's step program */
  int send;            /* 1: SEND, 0: RECV */
  int peer;            /* world rank */
  uint64_t bytes;      /* 0: no message (COLL_I_COUNT 0): nothing to pair */
  uint32_t local;      /* this rank's flag: a RECV's AVAIL, a SEND's DONE */
  uint32_t remote;     /* the peer's flag it sets: a SEND the receiver's AVAIL, a RECV the sender's DONE */
  uint32_t peer_instr; /* the partner instruction in the peer's step program */
} ddp_p2p_slot;

/* The slots of every SEND/RECV of `rank`'s step, in program order (*out malloc'd, *n of them; *nslots =
 * 1 + nrecv + nsend). -1 with one line in err when a message has no partner or the sizes differ. */
int ddp_p2p_slots(const ddp_plan *p, int rank, ddp_p2p_slot **out, uint32_t *n, uint32_t *nslots, char *err,
                  size_t errcap);
/* How many flags rank r has: 1 + its step's RECVs + its SENDs. */
uint32_t ddp_p2p_nslots(const ddp_plan *p, int rank);
#endif

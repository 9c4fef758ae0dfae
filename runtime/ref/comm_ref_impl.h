/* runtime/ref/comm_ref_impl.h: the threads communicator's state, shared by its two files: comm_ref.c
 * (collectives: barriers) and comm_p2p.c (point-to-point groups and the deadlock detector that watches
 * both), and the description of a SEND/RECV that both backends print (comm_mpi.c sends it over the wire
 * to the peer). Private to runtime/ref/comm_*.c. Every field below the lock is read and written under it. */
#ifndef DDP_REF_COMM_IMPL_H
#define DDP_REF_COMM_IMPL_H
#include "comm_mpi.h"
#include "comm_ref.h"
#include <pthread.h>

/* What a rank is doing, as the deadlock detector sees it. */
enum { RS_RUNNING = 0, RS_BARRIER, RS_P2P, RS_LEFT };

/* One posted SEND, queued on its ordered pair (src, dst) until the receiver claims it. */
typedef struct p2p_msg {
  const ddp_ref_p2p *op;
  int src, dst;
  int claimed, done, bad; /* claimed: taken off the queue by the receiver; done: copied (or refused: bad) */
  struct p2p_msg *next;
} p2p_msg;

/* A rank's group while it waits in ddp_ref_p2p_group. */
typedef struct p2p_group {
  const ddp_ref_p2p *ops;
  int n;
  p2p_msg *msgs;     /* per op; used by the SENDs */
  unsigned char *rdone; /* per op; RECVs received */
} p2p_group;

/* A communicator's rendezvous (threads): its members (world ranks, in group order) meet at its barrier;
 * send/recv hold the members' posted buffers by group rank. Comm 0 (the world) is groups[0]; comm c >= 1
 * is created on its first collective. */
typedef struct ref_group {
  int n;
  int32_t *members;
  int arrived;
  uint64_t generation;
  void **send, **recv;
} ref_group;

struct ddp_ref_comm {
  int world;
  ddp_mpi *mpi; /* processes: the MPI backend (borrowed); NULL: threads */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  ref_group **groups; /* [comm id], ngroups entries, NULL until used */
  int ngroups;
  int failed_rank; /* -1: none */
  double **scratch;
  size_t *scratch_cap;
  /* point-to-point and the deadlock detector (threads) */
  int *state;           /* per rank: RS_* */
  uint64_t *wait_gen;   /* per rank in RS_BARRIER: the generation it waits to end */
  ref_group **wait_group; /* per rank in RS_BARRIER: the communicator whose barrier it is */
  int *wait_comm;         /* per rank in RS_BARRIER: that communicator's id (messages) */
  p2p_group **group;    /* per rank in RS_P2P */
  p2p_msg **qhead, **qtail; /* [src * world + dst]: posted, unclaimed sends in program order */
  int why_all;          /* every rank reports `why` (a deadlock), not "rank N failed" */
  char why[1024];       /* the first failure's line, when comm_p2p.c found it */
};

/* A SEND or RECV as messages name it; also the wire format of comm_mpi.c's descriptor exchange (the same
 * binary on every rank). */
typedef struct ddp_ref_p2p_desc {
  int64_t count;
  int32_t dt, send, rank, peer;
  uint32_t index;
  char prog[8];
  char name[96];
} ddp_ref_p2p_desc;
void ddp_ref_p2p_desc_of(const ddp_ref_p2p *o, int rank, ddp_ref_p2p_desc *d);
/* "rank 1 step instruction 4 (recv "pp.recv.act.mb0", 8 x f32 from rank 0)" */
void ddp_ref_p2p_describe(const ddp_ref_p2p_desc *d, char *b, size_t cap);
/* The mismatch line, the same from both ranks and both backends; returns -1. */
int ddp_ref_p2p_mismatch(const ddp_ref_p2p_desc *send, const ddp_ref_p2p_desc *recv, char *err, size_t errcap);

/* Lock held, `rank` about to wait (its state already set): when no rank can move any more, records the
 * deadlock (failed_rank, why, why_all), wakes everyone and returns 1. */
int ddp_ref_deadlock_check(ddp_ref_comm *c, int rank);
/* The line a rank reports when the comm failed (lock held). */
int ddp_ref_comm_failure(ddp_ref_comm *c, char *err, size_t errcap);
#endif

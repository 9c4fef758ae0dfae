/* runtime/ref/comm_ref.h: the collectives and point-to-point groups (ddp_ref_p2p_group: comm_p2p.c) of
 * the reference executor. Two backends behind one handle:
 * threads (ranks are threads of one process and meet at barriers) and processes (one rank per process,
 * launched by mpirun or srun, bytes moved over MPI: comm_mpi.h). Results are deterministic and the same
 * in both: every element is reduced in rank order 0..W-1 in double (ddp_ref_reduce_elem) and rounded
 * once. If a thread rank fails, the others' collectives return an error naming it instead of waiting
 * forever; a failing process rank ends the job (the dispatcher's MPI_Abort). */
#ifndef DDP_REF_COMM_H
#define DDP_REF_COMM_H
#include "plan.h"

typedef struct ddp_ref_comm ddp_ref_comm;
struct ddp_mpi;

/* Element i of the reduction of src[0..W-1] (rank order, in double; REDOP_AVG divides by W). */
static inline double ddp_ref_reduce_elem(const void *const *src, int W, int dt, int64_t i, int redop) {
  double s = 0;
  for (int q = 0; q < W; q++) s += ddp_load(src[q], dt, i);
  return redop == REDOP_AVG ? s / W : s;
}

/* Threads: `world` ranks of this process. */
ddp_ref_comm *ddp_ref_comm_new(int world);
/* Processes: this process is rank ddp_mpi_rank(m) of ddp_mpi_world(m); the comm borrows m. */
ddp_ref_comm *ddp_ref_comm_new_mpi(struct ddp_mpi *m);
void ddp_ref_comm_free(ddp_ref_comm *c);
/* Marks `rank` as failed: every rank waiting in (or later entering) a collective gets an error (threads;
 * processes: only this process's later collectives). */
void ddp_ref_comm_abort(ddp_ref_comm *c, int rank);
/* Executes one collective instruction for `rank` (send/recv already resolved to host pointers) among
 * every rank (comm 0). */
int ddp_ref_collective(ddp_ref_comm *c, int rank, const ddp_instr *in, void *send, void *recv, char *err,
                       size_t errcap);
/* The same among the n members of communicator `comm` (world ranks in group order; comm 0: the world, n
 * and members ignored): the members rendezvous on the comm's own barrier, reductions run in group-rank
 * order, the root and the gather/scatter chunks are group ranks. `rank` (a world rank) must be a member. */
int ddp_ref_collective_on(ddp_ref_comm *c, int rank, const ddp_instr *in, int comm, int n, const int32_t *members,
                          void *send, void *recv, char *err, size_t errcap);

/* Point-to-point. One SEND or RECV of a group, resolved: `in` gives COLL_I_COUNT elements of
 * dt[COLL_P_BUF] and the peer COLL_I_PEER; buf is this rank's host pointer; prog/index/name say where it
 * is for messages ("step", instruction 12, "pp.send.act.mb0"). */
typedef struct ddp_ref_p2p {
  const ddp_instr *in;
  void *buf;
  const char *prog;
  uint32_t index;
  const char *name; /* "" when unnamed */
} ddp_ref_p2p;

/* Runs one group of SEND/RECV for `rank` (the CUDA executor's NCCL group: consecutive SEND/RECV of one
 * stream): every operation is posted, then all complete together; the k-th SEND from s to d pairs with
 * the k-th RECV on d from s (FIFO per ordered pair), copy semantics (buffers are free again on return).
 * A pair whose count or dtype differ fails both ranks with one line naming both instructions; a failed
 * peer (ddp_ref_comm_abort) fails the wait; ranks that can no longer move (a deadlock: e.g. both sides of
 * an exchange send first in groups of one) all fail with one line naming what each waits for (threads;
 * processes: DDP_MPI_TIMEOUT_S bounds the wait). */
int ddp_ref_p2p_group(ddp_ref_comm *c, int rank, const ddp_ref_p2p *ops, int n, char *err, size_t errcap);

/* Threads: `rank` has finished its work and enters no collective or group any more (so ranks left
 * waiting on it are a deadlock, reported, instead of a hang). Processes: nothing. */
void ddp_ref_comm_leave(ddp_ref_comm *c, int rank);
#endif

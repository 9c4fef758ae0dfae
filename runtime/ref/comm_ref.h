/* runtime/ref/comm_ref.h: the collectives of the reference executor. Two backends behind one handle:
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
/* Executes one collective instruction for `rank` (send/recv already resolved to host pointers). */
int ddp_ref_collective(ddp_ref_comm *c, int rank, const ddp_instr *in, void *send, void *recv, char *err,
                       size_t errcap);
#endif

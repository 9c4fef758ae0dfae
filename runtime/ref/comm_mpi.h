/* runtime/ref/comm_mpi.h: the reference executor's collectives between processes, over Open MPI loaded at
 * run time (dlopen of DDP_MPI_LIBRARY, default "libmpi.so.40"): ddprun links no MPI library and starts
 * where none is installed; only a launch by mpirun or srun (--mpi=pmix) with more than one rank loads it.
 * The backend speaks Open MPI's ABI (handles such as MPI_COMM_WORLD and MPI_BYTE are the addresses of
 * the library's ompi_mpi_* objects, resolved with dlsym); another MPI is refused with one line.
 *
 * Results equal the threads path (comm_ref.c) bit for bit: no MPI reduction is used. An all-reduce moves
 * every rank's slice of the buffer to its owner (MPI_Ialltoallv of bytes), the owner sums each element
 * over ranks 0..W-1 in double with ddp_ref_reduce_elem, rounds once to the dtype, and the rounded slices
 * are gathered (MPI_Iallgatherv); reduce-scatter is the first half of that, all-gather and broadcast move
 * bytes. Every wait is bounded by DDP_MPI_TIMEOUT_S (nonblocking calls polled with MPI_Test).
 *
 * Point-to-point groups (ddp_mpi_p2p_group): two rounds of MPI_Isend/MPI_Irecv, each completed together
 * (the MPI_Waitall of the group, polled with MPI_Test under the deadline). Round 1: every SEND and every
 * RECV sends its descriptor (comm_ref_impl.h ddp_ref_p2p_desc) to its peer and receives the peer's
 * matching one (tags: a SEND's descriptor, a RECV's descriptor), so both ranks of a pair see both
 * instructions and refuse a count or dtype mismatch with the same line before any payload moves; it also
 * makes a SEND complete only once its RECV is posted, as in the threads backend (an exchange whose sides
 * both SEND first in groups of their own times out instead of passing by luck of MPI's eager buffers).
 * Round 2: the payloads (a third tag). MPI keeps messages of one (source, tag) in order: the k-th SEND
 * from s to d meets the k-th RECV on d from s. */
#ifndef DDP_COMM_MPI_H
#define DDP_COMM_MPI_H
#include "plan.h"
#include <stddef.h>

typedef struct ddp_mpi ddp_mpi;

/* Loads the library and initialises MPI (MPI_Init_thread, FUNNELED: only the calling thread talks MPI).
 * Returns NULL with one line in err (library absent, not Open MPI, MPI_Init failed). */
ddp_mpi *ddp_mpi_open(char *err, size_t errcap);
int ddp_mpi_rank(const ddp_mpi *m);
int ddp_mpi_world(const ddp_mpi *m);
/* One collective instruction for this process's rank (I_ALL_REDUCE, I_REDUCE_SCATTER, I_ALL_GATHER,
 * I_BROADCAST; others are refused), with the semantics of ddp_ref_collective. */
int ddp_mpi_collective(ddp_mpi *m, const ddp_instr *in, void *send, void *recv, char *err, size_t errcap);
/* The same among the n members of communicator `comm` (world ranks in group order; 0: the world). */
int ddp_mpi_collective_on(ddp_mpi *m, const ddp_instr *in, int comm, int n, const int32_t *members, void *send,
                          void *recv, char *err, size_t errcap);
/* One group of SEND/RECV (comm_ref.h ddp_ref_p2p_group; already checked there) for this process's rank. */
struct ddp_ref_p2p;
int ddp_mpi_p2p_group(ddp_mpi *m, const struct ddp_ref_p2p *ops, int n, char *err, size_t errcap);
/* Ends every rank of the job (MPI_Abort with `code`); used after this rank printed why. */
_Noreturn void ddp_mpi_abort(ddp_mpi *m, int code);
/* MPI_Finalize and unload. NULL is ignored. */
void ddp_mpi_close(ddp_mpi *m);
#endif

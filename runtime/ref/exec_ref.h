/* runtime/ref/exec_ref.h: the reference executor (`--device ref`): the same plan on the CPU with the plain
 * C kernels of ref_ops.h, ranks as threads sharing a ddp_ref_comm (or one rank per process, the comm over
 * MPI: comm_mpi.h). Deterministic: the same plan and seed give the same bits, threads or processes. */
#ifndef DDP_EXEC_REF_H
#define DDP_EXEC_REF_H
#include "exec.h"
#include "comm_ref.h"

ddp_exec *ddp_exec_ref_new(const ddp_plan *p, int rank, ddp_ref_comm *comm, ddp_data *data, uint64_t seed,
                           char *err, size_t errcap);
#endif

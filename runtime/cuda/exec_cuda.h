/* runtime/cuda/exec_cuda.h: the CUDA executor (`ddprun --device cuda`). One rank's arenas on one GPU, the
 * plan's kernels (CUBIN through the CUDA runtime), GEMMs through cuBLASLt (algorithms chosen once at load),
 * collectives through NCCL, one CUDA stream per plan stream ordered by the plan's events, NVTX ranges.
 * Everything an instruction needs (kernel arguments, GEMM descriptors and algorithms, device pointers) is
 * built once at load; `run` only issues work, it never allocates and never waits for the GPU (LOAD_BATCH
 * waits only for the copy of two batches ago before reusing its pinned buffer).
 *
 * Environment:
 *   DDP_NCCL_TIMEOUT_S  seconds (default 60) NCCL setup or a wait for the streams may take while NCCL work
 *                       is outstanding before the communicator is aborted and the call fails naming a peer
 *                       rank that stopped responding;
 *   DDP_NCCL_BLOCKING=1 diagnostic: a blocking NCCL communicator (setup and first connections then have no
 *                       deadline; the default non-blocking one polls every call that answers ncclInProgress);
 *   DDP_CUDA_GRAPH=1    capture the step program's device work into CUDA graphs on its second run and
 *                       replay them from then on (LOAD_BATCH and INIT_TENSOR stay outside the graphs);
 *   NCCL_NVLS_ENABLE    set to 0 unless already set (NVLink multicast can take a host's GPUs out of service). */
#ifndef DDP_EXEC_CUDA_H
#define DDP_EXEC_CUDA_H
#include "probe.h"
#include "exec.h"
#include <stddef.h>
#include <stdint.h>

#define DDP_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

/* nccl_id: DDP_NCCL_ID_BYTES bytes (an ncclUniqueId) agreed by all ranks, or NULL when world == 1.
 * device: the local GPU. data: the batch source for LOAD_BATCH (may be NULL when the plan has none).
 * seed: the run seed (INIT_TENSOR). Returns NULL with one line in err. */
ddp_exec *ddp_exec_cuda_new(const ddp_plan *p, int rank, int world, int device, const void *nccl_id,
                            ddp_data *data, uint64_t seed, char *err, size_t errcap);
#endif

/* runtime/bench/ce_allreduce.h: a two-GPU all-reduce whose data moves on the copy engines
 * (ce_allreduce.c), for `ddprun --bench interference --paths copy`. */
#ifndef DDP_CE_ALLREDUCE_H
#define DDP_CE_ALLREDUCE_H
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stddef.h>

typedef struct ddp_ce_ar ddp_ce_ar;
/* Both ranks of a world of 2, together: maps the peer's buffer of n floats (n even), a sum buffer and
 * flags through CUDA IPC (handles exchanged over comm); the all-reduces run on stream s. -1 with one line. */
int ddp_ce_ar_open(ddp_ce_ar **out, ncclComm_t comm, int rank, int world, int device, float *buf, size_t n,
                   cudaStream_t s, char *err, size_t errcap);
/* Enqueues one all-reduce (sum) of the buffer on the stream. */
int ddp_ce_ar_run(ddp_ce_ar *a, char *err, size_t errcap);
/* Waits until the peer has taken everything of this rank's last all-reduce, then unmaps and frees. */
void ddp_ce_ar_close(ddp_ce_ar *a);
#endif

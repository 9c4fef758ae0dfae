/* runtime/cuda/memops.h: the driver's stream memory operations (cuStreamWaitValue64 /
 * cuStreamWriteValue64: a stream waits on, or writes, a 64-bit word in device memory without a kernel),
 * reached through the runtime's cudaGetDriverEntryPointByVersion so nothing links libcuda. Used by the
 * CUDA executor's copy-engine messages (p2p.c) and the interference benchmark's copy-engine all-reduce. */
#ifndef DDP_MEMOPS_H
#define DDP_MEMOPS_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ddp_memops {
  void *wait64, *write64; /* the driver's functions, called through ddp_memops_wait / _write */
} ddp_memops;

/* Loads the functions and checks that `device` supports 64-bit stream memory operations; -1 with the
 * reason (a missing entry point, an unsupported GPU) in err. */
int ddp_memops_load(ddp_memops *m, int device, char *err, size_t errcap);
/* On stream s: wait until *word == value (ge = 0) or until (int64_t)(*word - value) >= 0 (ge = 1). */
int ddp_memops_wait(const ddp_memops *m, cudaStream_t s, uint64_t *word, uint64_t value, int ge, char *err,
                    size_t errcap);
/* On stream s: *word = value (word in this GPU's memory or a peer's mapped one). */
int ddp_memops_write(const ddp_memops *m, cudaStream_t s, uint64_t *word, uint64_t value, char *err, size_t errcap);
#endif

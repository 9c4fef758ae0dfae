/* runtime/cuda/green.h: SM partitions for streams (CUDA green contexts). A partition of n SMs is carved
 * from the device; streams created in it run their kernels on those SMs only, and streams created in the
 * rest (when asked for) on the others. Kernels loaded context-independently (cudaLibraryLoadData, NCCL's,
 * cuBLASLt's) launch into either. Reached through the driver's entry points, so nothing links libcuda. */
#ifndef DDP_GREEN_H
#define DDP_GREEN_H
#include <cuda_runtime_api.h>
#include <stddef.h>

typedef struct ddp_green {
  void *side, *rest; /* CUgreenCtx: the partition of `sms` SMs, and the remaining SMs (NULL unless asked) */
  int sms, rest_sms; /* SMs in each, as the driver rounded them */
  int device_sms;
} ddp_green;

/* Carves at least `sms` SMs of CUDA device `device` (the driver rounds up to its granularity: 8 on
 * Hopper); with_rest also makes a context of the SMs left. One line naming the call on failure. */
int ddp_green_open(ddp_green *g, int device, int sms, int with_rest, char *err, size_t errcap);
/* A non-blocking stream of priority prio in the side partition (rest = 0) or in the rest (rest = 1). */
int ddp_green_stream(const ddp_green *g, int rest, int prio, cudaStream_t *out, char *err, size_t errcap);
/* Destroys the contexts; their streams must be destroyed first. */
void ddp_green_close(ddp_green *g);
#endif

/* runtime/cuda/cuda_check.h: checking CUDA runtime calls without exiting. DDP_CUDA_TRY(call) evaluates a
 * cudaError_t expression; on failure it writes "file:line: call: <error name>: <error string>" into the
 * caller's `err` (capacity `errcap`, both must be in scope) and returns -1 from the enclosing function.
 * DDP_CUDA_CHECK(call, err, cap) is the expression form: 0 on success, -1 with the message on failure. */
#ifndef DDP_CUDA_CHECK_H
#define DDP_CUDA_CHECK_H
#include <cuda_runtime_api.h>
#include "err.h"
#include <stdio.h>

static inline int ddp_cuda_check_at(cudaError_t rc, const char *what, const char *file, int line, char *err,
                                    size_t errcap) {
  if (rc == cudaSuccess) return 0;
  ddp_fail(err, errcap, "%s:%d: %s: %s: %s", file, line, what, cudaGetErrorName(rc), cudaGetErrorString(rc));
  return -1;
}

#define DDP_CUDA_CHECK(call, err, cap) ddp_cuda_check_at((call), #call, __FILE__, __LINE__, (err), (cap))

#define DDP_CUDA_TRY(call)                                                   \
  do {                                                                       \
    if (ddp_cuda_check_at((call), #call, __FILE__, __LINE__, err, errcap)) \
      return -1;                                                             \
  } while (0)
#endif

/* runtime/cuda/driver_entry.c: driver functions by name and version (driver_entry.h). */
#include "driver_entry.h"
#include "err.h"
#include <cuda_runtime_api.h>

int ddp_driver_entry(const char *name, int version, void **fn, char *err, size_t errcap) {
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  *fn = NULL;
  cudaError_t rc = cudaGetDriverEntryPointByVersion(name, fn, (unsigned)version, cudaEnableDefault, &q);
  if (rc != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
    (void)cudaGetLastError();
    return ddp_fail(err, errcap, "%s:%d: cudaGetDriverEntryPointByVersion(%s, %d): %s (query %d)", __FILE__, __LINE__,
                    name, version, cudaGetErrorString(rc), (int)q);
  }
  return 0;
}

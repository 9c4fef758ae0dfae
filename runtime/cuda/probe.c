/* runtime/cuda/probe.c: GPU presence and architecture through the CUDA runtime (see probe.h). */
#include "probe.h"
#include "err.h"
#include <cuda_runtime_api.h>
#include <stdio.h>

int ddp_cuda_probe(int *ndevices, char *err, size_t errcap) {
  int n = 0;
  if (ndevices) *ndevices = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError(); /* clear it: later calls must not see a stale error */
    return ddp_fail(err, errcap, "%s (cudaGetDeviceCount: %s: %s)",
                    rc == cudaErrorNoDevice               ? "no GPU"
                    : rc == cudaErrorInsufficientDriver ? "no CUDA driver found, or it is older than this CUDA runtime"
                                                        : "no CUDA driver found",
                    cudaGetErrorName(rc), cudaGetErrorString(rc));
  }
  if (n < 1) return ddp_fail(err, errcap, "no GPU (cudaGetDeviceCount found 0 devices)");
  if (ndevices) *ndevices = n;
  return 0;
}

int ddp_cuda_device_arch(int device, char *arch, size_t archcap, char *name, size_t namecap, char *err,
                         size_t errcap) {
  struct cudaDeviceProp prop;
  cudaError_t rc = cudaGetDeviceProperties(&prop, device);
  if (rc != cudaSuccess) {
    ddp_fail(err, errcap, "%s:%d: cudaGetDeviceProperties(device %d): %s: %s", __FILE__, __LINE__, device,
             cudaGetErrorName(rc), cudaGetErrorString(rc));
    return -1;
  }
  snprintf(arch, archcap, "sm_%d%d", prop.major, prop.minor);
  if (name && namecap) snprintf(name, namecap, "%s", prop.name);
  return 0;
}

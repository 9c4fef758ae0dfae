/* runtime/cuda/memops.c: stream memory operations through the driver's entry points (memops.h). */
#include "memops.h"
#include "driver_entry.h"
#include "err.h"
#include <cuda.h>
#include <stdio.h>

typedef CUresult (*wait64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
typedef CUresult (*attr_fn)(int *, CUdevice_attribute, CUdevice);

int ddp_memops_load(ddp_memops *m, int device, char *err, size_t errcap) {
  void *attr = NULL;
  m->wait64 = m->write64 = NULL;
  if (ddp_driver_entry("cuStreamWaitValue64", 12000, &m->wait64, err, errcap) ||
      ddp_driver_entry("cuStreamWriteValue64", 12000, &m->write64, err, errcap) ||
      ddp_driver_entry("cuDeviceGetAttribute", 12000, &attr, err, errcap))
    return -1;
  int v = 0;
  CUresult r = ((attr_fn)attr)(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, (CUdevice)device);
  if (r != CUDA_SUCCESS) return ddp_fail(err, errcap, "%s:%d: cuDeviceGetAttribute(64-bit stream memory operations, GPU %d): CUresult %d", __FILE__, __LINE__, device, (int)r);
  if (!v) return ddp_fail(err, errcap, "GPU %d has no 64-bit stream memory operations", device);
  return 0;
}

int ddp_memops_wait(const ddp_memops *m, cudaStream_t s, uint64_t *word, uint64_t value, int ge, char *err,
                    size_t errcap) {
  CUresult r = ((wait64_fn)m->wait64)((CUstream)s, (CUdeviceptr)(uintptr_t)word, value,
                                      ge ? CU_STREAM_WAIT_VALUE_GEQ : CU_STREAM_WAIT_VALUE_EQ);
  if (r != CUDA_SUCCESS) return ddp_fail(err, errcap, "%s:%d: cuStreamWaitValue64(%s %llu): CUresult %d", __FILE__, __LINE__, ge ? ">=" : "==", (unsigned long long)value, (int)r);
  return 0;
}

int ddp_memops_write(const ddp_memops *m, cudaStream_t s, uint64_t *word, uint64_t value, char *err, size_t errcap) {
  CUresult r = ((write64_fn)m->write64)((CUstream)s, (CUdeviceptr)(uintptr_t)word, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) return ddp_fail(err, errcap, "%s:%d: cuStreamWriteValue64(%llu): CUresult %d", __FILE__, __LINE__, (unsigned long long)value, (int)r);
  return 0;
}

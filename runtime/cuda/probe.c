/* runtime/cuda/probe.c: GPU presence and architecture through the CUDA runtime (see probe.h). */
#include "probe.h"
#include "err.h"
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

int ddp_cuda_probe_in_child(int *ndev, char *err, size_t errcap) {
  int fd[2];
  if (pipe(fd) != 0) return ddp_cuda_probe(ndev, err, errcap);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    char msg[600];
    int n = 0, rc = ddp_cuda_probe(&n, msg + 8, sizeof msg - 8);
    memcpy(msg, &rc, 4);
    memcpy(msg + 4, &n, 4);
    ssize_t w = write(fd[1], msg, sizeof msg);
    _exit(w == (ssize_t)sizeof msg ? 0 : 1);
  }
  close(fd[1]);
  char msg[600];
  ssize_t got = 0, r;
  while (got < (ssize_t)sizeof msg && (r = read(fd[0], msg + got, sizeof msg - (size_t)got)) > 0) got += r;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  if (got != (ssize_t)sizeof msg) return ddp_fail(err, errcap, "the GPU probe process failed");
  int rc;
  memcpy(&rc, msg, 4);
  memcpy(ndev, msg + 4, 4);
  msg[sizeof msg - 1] = 0;
  return rc ? ddp_fail(err, errcap, "%.500s", msg + 8) : 0;
}

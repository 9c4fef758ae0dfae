/* runtime/cuda/probe.h: is there a usable GPU, and what is its architecture? Both go through the CUDA
 * runtime only, so they answer cleanly (an error line, no crash) on machines without a driver. */
#ifndef DDP_CUDA_PROBE_H
#define DDP_CUDA_PROBE_H
#include <stddef.h>

/* 0 when at least one GPU is usable (*ndevices set); else -1 with err: "no CUDA driver found
 * (cudaGetDeviceCount: ...)" or "no GPU (...)". ndevices may be NULL. */
int ddp_cuda_probe(int *ndevices, char *err, size_t errcap);

/* ddp_cuda_probe in a child process (fork, the answer through a pipe): a parent that initialised CUDA cannot
 * fork ranks (--nproc) that use it (cudaErrorInitializationError in the children). */
int ddp_cuda_probe_in_child(int *ndevices, char *err, size_t errcap);

/* The device's architecture as the plan names it ("sm_90" for compute capability 9.0) and its name
 * ("NVIDIA H100 80GB HBM3"); name may be NULL. 0, or -1 with one line in err. */
int ddp_cuda_device_arch(int device, char *arch, size_t archcap, char *name, size_t namecap, char *err,
                         size_t errcap);
#endif

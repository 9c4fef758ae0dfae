/* runtime/cuda/kernels.h: plan kernels on the GPU through the CUDA runtime API only (no libcuda link,
 * so ddprun starts where no driver is installed and reports that cleanly). A plan module's CUBIN is loaded
 * with cudaLibraryLoadData, its entry ddp_<entry> found with cudaLibraryGetKernel, and launched with
 * cudaLaunchKernel using the instruction's grid/block/smem and a ddp_kargs passed by value. A kernel whose
 * specialisation says DDP_TMA (templates/attention_tma.cu) also takes its tensor maps (tma.h) by value.
 *
 *   ddp_cuda_kernel k;
 *   if (ddp_cuda_module_load(cubin, size, "rmsnorm_fwd", spec, &k, err, sizeof err)) ...;
 *   if (ddp_cuda_launch(&k, &instr, &kargs, stream, err, sizeof err)) ...;
 *   ddp_cuda_module_unload(&k);
 *
 * All functions return 0, or -1 with a one-line message (call site and CUDA error) in err. */
#ifndef DDP_CUDA_KERNELS_H
#define DDP_CUDA_KERNELS_H
#include "instr.h"
#include "ops.h"
#include "tma.h"
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ddp_cuda_kernel {
  cudaLibrary_t lib;
  cudaKernel_t fn;
  char name[96];      /* "ddp_<entry>" */
  uint32_t smem_max;  /* dynamic shared memory the kernel is currently allowed (48 KB by default) */
  ddp_tma_rows tma;   /* box rows of its tensor maps; zero when it takes none */
  int op;             /* the op whose entry it is, for the maps (-1 when it takes none) */
  uint32_t max_blocks; /* DDP_PERSISTENT kernels (tma.persistent): the multiprocessors of the device it was
                          loaded on, at most one block each, so launches clamp the grid's x to this; 0: no clamp */
  int grid_dependency; /* its module exports ddp_grid_dependency: the kernel starts with DDP_GRID_DEPENDENCY
                          (templates/common.cuh), so a launch may overlap the previous kernel's tail */
} ddp_cuda_kernel;

/* Programmatic dependent launch (DDP_PDL, experiments; off unless set): launches of kernels whose module
 * exports ddp_grid_dependency ask to overlap the previous kernel on the stream. Process-wide; the executor
 * sets it at start-up, benchmarks from their command line. */
void ddp_cuda_set_grid_overlap(int on);

/* DDP_PERSISTENT_BLOCKS (tests; 0, the default: no cap): persistent kernels are launched with at most this
 * many blocks, fewer than the multiprocessors, so each walks more work tiles. Process-wide, like the above. */
void ddp_cuda_set_persistent_blocks(unsigned cap);

/* Loads one CUBIN and finds its kernel; `entry` is the op's entry ("rmsnorm_fwd") or the full name; `spec`
 * is the module's specialisation (NULL for a kernel of no template), which says whether it takes maps. */
int ddp_cuda_module_load(const uint8_t *cubin, size_t size, const char *entry, const char *spec, ddp_cuda_kernel *out,
                         char *err, size_t errcap);

/* Raises the kernel's dynamic shared memory limit to at least `smem` bytes (needed above 48 KB; done
 * automatically by ddp_cuda_launch, exposed so an executor can do it once at load time). */
int ddp_cuda_kernel_reserve_smem(ddp_cuda_kernel *k, uint32_t smem, char *err, size_t errcap);

/* Launches with geometry->grid/block/smem; args is copied by value into the launch, and so are `maps` for a
 * kernel that takes tensor maps (NULL: encoded here from args, as tests and benchmarks launch). Checks the
 * launch (cudaGetLastError) but does not synchronise. */
int ddp_cuda_launch_maps(ddp_cuda_kernel *k, const ddp_instr *geometry, const ddp_kargs *args, const ddp_tmaps *maps,
                         cudaStream_t stream, char *err, size_t errcap);
static inline int ddp_cuda_launch(ddp_cuda_kernel *k, const ddp_instr *geometry, const ddp_kargs *args,
                                  cudaStream_t stream, char *err, size_t errcap) {
  return ddp_cuda_launch_maps(k, geometry, args, NULL, stream, err, errcap);
}

void ddp_cuda_module_unload(ddp_cuda_kernel *k);
#endif

/* runtime/cuda/kernels.c: CUBIN loading and kernel launches through the CUDA runtime API
 * (cudaLibraryLoadData / cudaLibraryGetKernel / cudaLaunchKernel, or cudaLaunchKernelExC with programmatic
 * stream serialisation under DDP_PDL); see kernels.h. */
#include "kernels.h"
#include "err.h"
#include "cuda_check.h"
#include <stdio.h>
#include <string.h>

#define DDP_DEFAULT_SMEM (48u * 1024u)

static int g_grid_overlap;
void ddp_cuda_set_grid_overlap(int on) { g_grid_overlap = on != 0; }
static unsigned g_persistent_cap;
void ddp_cuda_set_persistent_blocks(unsigned cap) { g_persistent_cap = cap; }

int ddp_cuda_module_load(const uint8_t *cubin, size_t size, const char *entry, const char *spec, ddp_cuda_kernel *out,
                         char *err, size_t errcap) {
  memset(out, 0, sizeof *out);
  if (!cubin || size == 0) {
    ddp_fail(err, errcap, "ddp_cuda_module_load(%s): empty CUBIN", entry ? entry : "?");
    return -1;
  }
  snprintf(out->name, sizeof out->name, "%s%s", strncmp(entry, "ddp_", 4) ? "ddp_" : "", entry);
  char why[512];
  if (ddp_tma_spec(spec, &out->tma, why, sizeof why)) {
    ddp_fail(err, errcap, "%s: %s", out->name, why);
    return -1;
  }
  out->op = -1;
  for (int op = 0; op < OP_COUNT && out->tma.resident; op++)
    if (!strcmp(out->name + 4, ddp_op_entry(op))) out->op = op;
  if (out->tma.resident && out->op < 0) {
    ddp_fail(err, errcap, "%s takes tensor maps but is no op's entry", out->name);
    return -1;
  }
  cudaError_t rc = cudaLibraryLoadData(&out->lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
  if (rc != cudaSuccess) {
    ddp_fail(err, errcap, "%s:%d: cudaLibraryLoadData(%s, %zu bytes): %s: %s", __FILE__, __LINE__, out->name, size,
             cudaGetErrorName(rc), cudaGetErrorString(rc));
    out->lib = NULL;
    return -1;
  }
  rc = cudaLibraryGetKernel(&out->fn, out->lib, out->name);
  if (rc != cudaSuccess) {
    ddp_fail(err, errcap, "%s:%d: cudaLibraryGetKernel(%s): %s: %s", __FILE__, __LINE__, out->name,
             cudaGetErrorName(rc), cudaGetErrorString(rc));
    cudaLibraryUnload(out->lib);
    out->lib = NULL;
    return -1;
  }
  out->smem_max = DDP_DEFAULT_SMEM;
  if (out->tma.persistent) { /* one block per multiprocessor: the TMA kernels' launch bounds and registers */
    int dev = 0, sms = 0;
    if ((rc = cudaGetDevice(&dev)) == cudaSuccess) rc = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (rc != cudaSuccess || sms < 1) {
      ddp_fail(err, errcap, "%s:%d: cudaDeviceGetAttribute(MultiProcessorCount) for %s: %s: %s", __FILE__, __LINE__,
               out->name, cudaGetErrorName(rc), cudaGetErrorString(rc));
      cudaLibraryUnload(out->lib);
      out->lib = NULL;
      return -1;
    }
    out->max_blocks = (uint32_t)sms;
  }
  /* A module of the templates since DDP_GRID_DEPENDENCY exports this marker; one built before has not, and
   * its kernels never overlap. The failed lookup's error is cleared so no later check reports it. */
  void *marker = NULL;
  size_t marker_bytes = 0;
  out->grid_dependency = cudaLibraryGetGlobal(&marker, &marker_bytes, out->lib, "ddp_grid_dependency") == cudaSuccess;
  if (!out->grid_dependency) (void)cudaGetLastError();
  return 0;
}

int ddp_cuda_kernel_reserve_smem(ddp_cuda_kernel *k, uint32_t smem, char *err, size_t errcap) {
  if (smem <= k->smem_max) return 0;
  cudaError_t rc = cudaFuncSetAttribute((const void *)k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (rc != cudaSuccess) {
    ddp_fail(err, errcap, "%s:%d: cudaFuncSetAttribute(%s, MaxDynamicSharedMemorySize, %u): %s: %s", __FILE__,
             __LINE__, k->name, smem, cudaGetErrorName(rc), cudaGetErrorString(rc));
    return -1;
  }
  k->smem_max = smem;
  return 0;
}

int ddp_cuda_launch_maps(ddp_cuda_kernel *k, const ddp_instr *g, const ddp_kargs *args, const ddp_tmaps *maps,
                         cudaStream_t stream, char *err, size_t errcap) {
  if (!k->fn) {
    ddp_fail(err, errcap, "ddp_cuda_launch: kernel %s is not loaded", k->name[0] ? k->name : "?");
    return -1;
  }
  if (ddp_cuda_kernel_reserve_smem(k, g->smem, err, errcap)) return -1;
  dim3 grid = {g->grid[0], g->grid[1], g->grid[2] ? g->grid[2] : 1};
  if (k->max_blocks) { /* a persistent kernel walks the rest */
    const unsigned most = g_persistent_cap && g_persistent_cap < k->max_blocks ? g_persistent_cap : k->max_blocks;
    if (grid.x > most) grid.x = most;
  }
  const dim3 block = {g->block[0], g->block[1] ? g->block[1] : 1, g->block[2] ? g->block[2] : 1};
  ddp_tmaps own;
  if (k->tma.resident && !maps) {
    char why[768];
    if (ddp_tma_attention_maps(k->op, args, &k->tma, &own, why, sizeof why)) {
      ddp_fail(err, errcap, "%s: %s", k->name, why);
      return -1;
    }
    maps = &own;
  }
  void *params[2] = {(void *)args, (void *)maps};
  const int overlap = g_grid_overlap && k->grid_dependency;
  cudaError_t rc;
  if (overlap) {
    cudaLaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t cfg = {.gridDim = grid, .blockDim = block, .dynamicSmemBytes = g->smem,
                                    .stream = stream, .attrs = &attr, .numAttrs = 1};
    rc = cudaLaunchKernelExC(&cfg, (const void *)k->fn, params);
  } else {
    rc = cudaLaunchKernel((const void *)k->fn, grid, block, params, g->smem, stream);
  }
  if (rc == cudaSuccess) rc = cudaGetLastError();
  if (rc != cudaSuccess) {
    ddp_fail(err, errcap, "%s:%d: %s(%s, grid %u,%u,%u, block %u,%u,%u, smem %u): %s: %s", __FILE__, __LINE__,
             overlap ? "cudaLaunchKernelExC" : "cudaLaunchKernel", k->name, grid.x, grid.y, grid.z, block.x, block.y,
             block.z, g->smem, cudaGetErrorName(rc), cudaGetErrorString(rc));
    return -1;
  }
  return 0;
}

void ddp_cuda_module_unload(ddp_cuda_kernel *k) {
  if (k->lib) cudaLibraryUnload(k->lib);
  memset(k, 0, sizeof *k);
}

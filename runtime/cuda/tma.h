/* runtime/cuda/tma.h: the tensor maps of the warp-specialised attention kernels (templates/attention_tma.cu,
 * templates/tma.cuh). A kernel whose specialisation says `#define DDP_TMA 1` takes a second parameter, four
 * CUtensorMaps by value; this file encodes them from the kernel's own argument block, through the driver's
 * cuTensorMapEncodeTiled (found with cudaGetDriverEntryPointByVersion, so nothing links libcuda).
 *
 *   ddp_tma_spec(spec, &rows)                            rows of the boxes, from the spec (0: no maps)
 *   ddp_tma_attention_maps(op, &kargs, &rows, &maps, ...)  the maps of one launch
 */
#ifndef DDP_CUDA_TMA_H
#define DDP_CUDA_TMA_H
#include "ops.h"
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Mirrors templates/tma.cuh (struct ddp_tmaps): four 128-byte maps, 64-byte aligned. */
typedef struct ddp_tmaps {
  CUtensorMap m[4];
} ddp_tmaps;

/* Box rows of the maps: `resident` for the block's own tile (BM: queries in the forward), `streamed` for the
 * tiles it loops over (BN). Both 0 when the kernel takes no maps. `persistent`: the specialisation says
 * DDP_PERSISTENT 1, so the kernel walks its work tiles with whatever grid it gets, and is launched with at
 * most one block per multiprocessor (kernels.c). */
typedef struct ddp_tma_rows {
  uint32_t resident, streamed, persistent;
} ddp_tma_rows;

/* Reads DDP_TMA, DDP_BM, DDP_BN and DDP_PERSISTENT from a module's specialisation ("#define NAME VALUE"
 * lines). Returns 0 (rows zero when DDP_TMA is absent), or -1 with a one-line message when DDP_TMA is set
 * without valid rows or DDP_PERSISTENT is not 0 or 1. */
int ddp_tma_spec(const char *spec, ddp_tma_rows *rows, char *err, size_t errcap);

/* The maps of one launch of `op` (maps 0-3; ATTN_FWD: q, -, k, v; ATTN_BWD_DKV and ATTN_BWD_FUSED: k, v, q, do; ATTN_BWD_DQ: q, do, k, v) from
 * its arguments. Returns 0, or -1 with a one-line
 * message naming the tensor and the driver's error (a pointer or a stride the TMA unit cannot take). */
int ddp_tma_attention_maps(int op, const ddp_kargs *args, const ddp_tma_rows *rows, ddp_tmaps *maps, char *err,
                           size_t errcap);
#endif

/* runtime/cuda/driver_entry.h: one CUDA driver function found through the runtime's
 * cudaGetDriverEntryPointByVersion, so that nothing links libcuda and the executables start where no driver
 * is installed. Used by memops.c (stream memory operations) and green.c (green contexts). */
#ifndef DDP_DRIVER_ENTRY_H
#define DDP_DRIVER_ENTRY_H
#include <stddef.h>

/* *fn = the driver's `name` at ABI `version` (12000 = CUDA 12.0); -1 with one line naming it in err. */
int ddp_driver_entry(const char *name, int version, void **fn, char *err, size_t errcap);
#endif

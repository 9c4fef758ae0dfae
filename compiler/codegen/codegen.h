/* compiler/codegen.h: kernel code generation. Every KERNEL instruction of a plan is specialised from its
 * template (templates/<file>.cu) by compiler/kernel_launch.c, compiled by NVRTC into CUBIN for the
 * target arch, cached on disk by content hash ($DDPC_CACHE_DIR, else $XDG_CACHE_HOME/ddpc, else
 * ~/.cache/ddpc) and embedded in the plan. */
#ifndef DDP_CODEGEN_H
#define DDP_CODEGEN_H
#include "plan.h"
#include <stddef.h>
#include <stdint.h>

typedef struct ddp_launch {
  uint32_t grid[3], block[3], smem;
  char spec[2048]; /* "#define NAME VALUE" lines prepended to the template */
} ddp_launch;

/* compiler/kernel_launch.c: the launch geometry and specialisation of one KERNEL instruction (whose
 * op, dt[], i[] and f[] are filled). Returns 0, or -1 with a one-line error. */
int ddp_kernel_launch(const ddp_instr *in, const char *arch, ddp_launch *out, char *err, size_t errcap);

/* Is `arch` a target we generate code for ("sm_90a", "sm_90", "sm_80", ...)? */
int ddp_arch_supported(const char *arch);

/* Compiles templates/<template_name>.cu for `entry` with `spec` prepended; the CUBIN is malloc'd.
 * Uses and fills the on-disk cache. Returns 0, or -1 with the NVRTC log's first error line in err. */
int ddp_nvrtc_compile(const char *template_name, const char *entry, const char *spec, const char *arch,
                      uint8_t **cubin, uint64_t *size, char hash[17], char *err, size_t errcap);

/* Specialises and compiles every KERNEL instruction of every program of the plan (deduplicated, in
 * parallel), filling modules, kernels and each instruction's kernel/grid/block/smem. */
int ddp_codegen(ddp_plan *p, const char *arch, int jobs, char *err, size_t errcap);

/* Where templates are read from: $DDP_TEMPLATE_DIR, else the installed copy, else the source tree's. */
const char *ddp_template_dir(void);
#endif

/* compiler/codegen/codegen.h: kernel code generation. Every KERNEL instruction of a plan is specialised from its
 * template (templates/<file>.cu) by launch.c, compiled by NVRTC into CUBIN for the
 * target arch, cached on disk by content hash ($DDPC_CACHE_DIR, else $XDG_CACHE_HOME/ddpc, else
 * ~/.cache/ddpc) and embedded in the plan. */
#ifndef DDP_CODEGEN_H
#define DDP_CODEGEN_H
#include "param.h"
#include "plan.h"
#include <stddef.h>
#include <stdint.h>

/* The code-generation knobs (template folder, kernel cache, NVRTC log, DDP_TUNE_* tile overrides). A
 * zeroed struct (or NULL) means the built-in choices; main.c fills it from the environment, the stages
 * below never read it themselves. */
#define DDP_TUNE_COUNT (PARAM_TUNE_ADAMW_MAX_GRID - PARAM_TUNE_FWD_MT + 1)
typedef struct ddp_codegen_opts {
  const char *template_dir;     /* NULL: the installed templates, else the ones ddpc was built with */
  char cache_dir[4096];         /* the CUBIN cache folder; "": none (base/cache_dir.h finds it when o is NULL) */
  int nvrtc_log;                /* print NVRTC's whole log when a compile fails */
  int64_t tune[DDP_TUNE_COUNT]; /* indexed PARAM_TUNE_x - PARAM_TUNE_FWD_MT; 0: the built-in choice */
} ddp_codegen_opts;

/* Reads the knobs above from the environment (for main.c and the benchmarks); 0, or -1 with one line. */
int ddp_codegen_opts_from_env(ddp_codegen_opts *o, char *err, size_t errcap);

typedef struct ddp_launch {
  uint32_t grid[3], block[3], smem;
  char spec[2048]; /* "#define NAME VALUE" lines prepended to the template */
  const char *tpl; /* the template file templates/<tpl>.cu: the op's, or attention_f32 for f32 attention */
} ddp_launch;

/* launch.c: the launch geometry and specialisation of one KERNEL instruction (whose
 * op, dt[], i[] and f[] are filled). Returns 0, or -1 with a one-line error. */
int ddp_kernel_launch(const ddp_instr *in, const char *arch, const ddp_codegen_opts *o, ddp_launch *out, char *err,
                      size_t errcap);

/* Is `arch` a target we generate code for ("sm_90a", "sm_90", "sm_80", ...)? */
int ddp_arch_supported(const char *arch);

/* Compiles templates/<template_name>.cu for `entry` with `spec` prepended; the CUBIN is malloc'd.
 * Uses and fills the on-disk cache. Returns 0, or -1 with the NVRTC log's first error line in err. */
int ddp_nvrtc_compile(const char *template_name, const char *entry, const char *spec, const char *arch,
                      const ddp_codegen_opts *o, uint8_t **cubin, uint64_t *size, char hash[17], char *err,
                      size_t errcap);

/* Specialises and compiles every KERNEL instruction of every program of the plan (deduplicated, in
 * parallel), filling modules, kernels and each instruction's kernel/grid/block/smem. */
int ddp_codegen(ddp_plan *p, const char *arch, int jobs, const ddp_codegen_opts *o, char *err, size_t errcap);

#endif

/* compiler/compile.h: the compiler pipeline from a validated schedule to a complete plan: model builder
 * and autodiff, flat layout and buckets, per-rank programs (sync strategy, optimizer), memory planner,
 * verifier, kernel codegen. */
#ifndef DDP_COMPILE_H
#define DDP_COMPILE_H
#include "codegen.h"
#include "explain.h"
#include "plan.h"
#include "schedule.h"

typedef struct ddp_compile_opts {
  const char *arch; /* "sm_90a" */
  int jobs;         /* NVRTC threads */
  int skip_codegen; /* tests of the passes that need no kernels */
  int f64_reference; /* every float tensor in f64, no kernels: the reference executor's gradient checks */
  ddp_codegen_opts codegen; /* zeroed: the built-in choices */
  uint64_t device_memory;   /* bytes a rank may use on its GPU (0: not checked) */
  const ddp_profile *profile; /* the device profile of the stored prediction (NULL: the built-in default) */
} ddp_compile_opts;

ddp_plan *ddp_compile(const ddp_schedule *s, const ddp_compile_opts *o, char *err, size_t errcap);
#endif

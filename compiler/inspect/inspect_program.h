/* compiler/inspect_internal.h: helpers shared by the parts of `ddpc inspect` (inspect.c: tables;
 * inspect_program.c: program listings). */
#ifndef DDP_INSPECT_INTERNAL_H
#define DDP_INSPECT_INTERNAL_H
#include "plan.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The name of tensor `id`: "-" for -1, "?" when out of range. */
const char *ddp_insp_tensor(const ddp_plan *p, int64_t id);
/* "1.50 MiB" into buf. */
const char *ddp_insp_human(char *buf, size_t cap, uint64_t bytes);
/* Lists the init or step program of one rank, grouped per stream (inspect_program.c). */
void ddp_insp_program(FILE *out, const ddp_plan *p, int rank, const char *which, const ddp_program *prog);
/* Lists every kernel op the plan's programs use with its synopsis (plan/ops.h), under "== kernel ops ==". */
void ddp_insp_ops(FILE *out, const ddp_plan *p);
#endif

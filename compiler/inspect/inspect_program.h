/* compiler/inspect/inspect_program.h: the program listings of `ddpc inspect` (inspect_program.c). */
#ifndef DDP_INSPECT_PROGRAM_H
#define DDP_INSPECT_PROGRAM_H
#include "plan.h"
#include <stdio.h>

/* Lists the init or step program of one rank, grouped per stream. */
void ddp_insp_program(FILE *out, const ddp_plan *p, int rank, const char *which, const ddp_program *prog);
/* Lists every kernel op the plan's programs use with its synopsis (plan/ops.h), under "== kernel ops ==". */
void ddp_insp_ops(FILE *out, const ddp_plan *p);
#endif

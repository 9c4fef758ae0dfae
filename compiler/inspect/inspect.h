/* compiler/inspect/inspect.h: `ddpc inspect`, the EXPLAIN of a plan: every part of a plan printed as readable
 * tables under fixed headings (listed at the top of compiler/inspect.c). */
#ifndef DDP_INSPECT_H
#define DDP_INSPECT_H
#include "plan.h"
#include <stdio.h>

/* Prints the summary, tensors, memory, buckets, the init and step programs of `rank` (-1: every rank)
 * and the kernels of `p` to `out`. Returns 0, or -1 when rank is out of range (nothing printed) or
 * `out` reported a write error. */
int ddp_inspect(const ddp_plan *p, int rank /* -1: every rank */, FILE *out);

/* The plan a `ddpc inspect|explain PLAN [--rank R]` command reads: NULL after one line on stderr starting
 * with `prog`, with *status set to DDP_EXIT_FAILURE (unreadable plan) or DDP_EXIT_USAGE (rank >= the plan's
 * world). rank < 0: any. */
ddp_plan *ddp_inspect_open(const char *prog, const char *path, int64_t rank, int *status);
#endif

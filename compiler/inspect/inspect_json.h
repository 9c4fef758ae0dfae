/* compiler/inspect/inspect_json.h: `ddpc inspect --json`: the plan as one JSON document (the schema is at
 * the top of inspect_json.c). */
#ifndef DDP_INSPECT_JSON_H
#define DDP_INSPECT_JSON_H
#include "plan.h"
#include <stddef.h>
#include <stdio.h>

/* Writes the document for `rank`'s programs (-1: every rank's) to `out`; 0, or -1 with one line in err (a
 * rank out of range, out of memory, a write error). */
int ddp_inspect_json(const ddp_plan *p, int rank, FILE *out, char *err, size_t errcap);
#endif

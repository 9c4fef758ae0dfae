/* runtime/driver/trace.h: Chrome trace-event JSON (opens in Perfetto and chrome://tracing) of one step of one
 * rank: one track per stream (compute, comm), every instruction a span named after its plan name (layer
 * and op), with its opcode, kernel op and layer as arguments; timing points as instant events. */
#ifndef DDP_TRACE_H
#define DDP_TRACE_H
#include "exec.h"
#include <stdio.h>
int ddp_trace_write(const ddp_plan *p, int rank, int64_t step, const double *start, const double *end,
                    const char *path, char *err, size_t errcap);
/* The file of `rank`: PATH itself for one rank, else PATH with ".rank<R>" before its extension. */
void ddp_trace_path(const char *path, int rank, int world, char *out, size_t cap);
/* `s` as a JSON string: quoted, with \" and \\ escaped and control characters dropped (also for the metrics). */
void ddp_json_str(FILE *f, const char *s);
#endif

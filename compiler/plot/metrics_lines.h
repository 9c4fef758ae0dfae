/* compiler/plot/metrics_lines.h: the one reader of ddprun's metrics files (JSON lines: one
 * {"event": "run", ...} line, then step lines with "step", and other event lines), shared by `ddpc plot`,
 * `ddpc explain --compare` and `ddpc scaling`. It reads the file, refuses a NUL byte or a line that is not a
 * JSON object (one line naming file:line), and hands each run and step line to the caller. */
#ifndef DDP_METRICS_LINES_H
#define DDP_METRICS_LINES_H
#include <jansson.h>
#include <stddef.h>

typedef struct ddp_metrics_visit {
  /* The run line. Non-NULL: the file must have exactly one, before any step line, and at least one step
   * line; a line that is neither a step nor an event is refused. NULL: only step lines are looked at. */
  int (*run)(json_t *line, int lineno, void *ctx, char *err, size_t errcap);
  int (*step)(json_t *line, int lineno, void *ctx, char *err, size_t errcap); /* each step line */
  void *ctx;
} ddp_metrics_visit;

/* Reads PATH (at most max_bytes) line by line; 0, or -1 with one line in err (the first callback error is
 * returned as it is). */
int ddp_metrics_lines(const char *path, size_t max_bytes, const ddp_metrics_visit *v, char *err, size_t errcap);

#endif

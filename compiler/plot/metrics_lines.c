/* compiler/plot/metrics_lines.c: the metrics-file line reader (metrics_lines.h). */
#include "metrics_lines.h"
#include "err.h"
#include "file.h"
#include <stdlib.h>
#include <string.h>

int ddp_metrics_lines(const char *path, size_t max_bytes, const ddp_metrics_visit *v, char *err, size_t errcap) {
  size_t len = 0;
  char *text = ddp_read_file(path, max_bytes, &len, err, errcap);
  if (!text) return -1;
  if (strlen(text) != len) {
    free(text);
    return ddp_fail(err, errcap, "%s: holds a NUL byte; not a metrics file", path);
  }
  int rc = 0, lineno = 0, have_run = 0, nsteps = 0;
  for (char *line = text, *next; line && *line && rc == 0; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    lineno++;
    if (line[strspn(line, " \t\r")] == '\0') continue;
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    json_t *ev = json_is_object(o) ? json_object_get(o, "event") : NULL;
    if (!json_is_object(o)) {
      rc = ddp_fail(err, errcap, "%s:%d: not a JSON object (%s)", path, lineno, o ? "another JSON value" : je.text);
    } else if (v->run && json_is_string(ev) && !strcmp(json_string_value(ev), "run")) {
      if (have_run) rc = ddp_fail(err, errcap, "%s:%d: a second run line (one run per file)", path, lineno);
      else if ((rc = v->run(o, lineno, v->ctx, err, errcap)) == 0) have_run = 1;
    } else if (json_object_get(o, "step")) {
      if (v->run && !have_run)
        rc = ddp_fail(err, errcap, "%s:%d: a step line before the {\"event\": \"run\"} line", path, lineno);
      else if ((rc = v->step(o, lineno, v->ctx, err, errcap)) == 0) nsteps++;
    } else if (v->run && !ev) {
      rc = ddp_fail(err, errcap, "%s:%d: neither a step line (\"step\") nor an event line (\"event\")", path, lineno);
    }
    json_decref(o);
  }
  free(text);
  if (rc == 0 && v->run && !have_run)
    rc = ddp_fail(err, errcap, "%s: no {\"event\": \"run\"} line; not a ddprun metrics file", path);
  if (rc == 0 && v->run && nsteps == 0) rc = ddp_fail(err, errcap, "%s: no step lines", path);
  return rc;
}

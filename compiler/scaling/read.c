/* compiler/scaling/read.c: the runs of `ddpc scaling fit` (scaling.h). The seeds' isoflops_curves.json:
 * a JSON array of {"parameters": N, "compute_budget": C, "final_loss": L}. An entry may give "metrics":
 * "FILE" (a ddprun --metrics file, relative to the runs file's folder) instead of "final_loss": its loss is
 * the "loss" of the file's last step line. ddprun's metrics lines hold neither the parameter count nor the
 * FLOPs, so those two stay fields of the entry. Every refusal is one line naming the entry and field. */
#include "err.h"
#include "file.h"
#include "metrics_lines.h"
#include "scaling.h"
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RUNS_MAX_BYTES (64u << 20)

/* A run's parameters or compute budget: a number in [1, 1e40] (1e40: beyond any model or budget; a model of
 * 1e-300 parameters or 1e308 gave a fit of inf and NaN). */
static int number_field(json_t *o, const char *name, const char *field, int i, double *out, char *err,
                        size_t errcap) {
  json_t *v = json_object_get(o, field);
  if (!v) return ddp_fail(err, errcap, "%s: run %d: the field \"%s\" is missing", name, i, field);
  if (!json_is_number(v)) return ddp_fail(err, errcap, "%s: run %d: \"%s\" is not a number", name, i, field);
  double x = json_number_value(v);
  if (!(x >= 1 && x <= 1e40))
    return ddp_fail(err, errcap, "%s: run %d: \"%s\" is %g; it must be a number in [1, 1e40]", name, i, field, x);
  *out = x;
  return 0;
}

typedef struct {
  const char *path;
  double *loss;
} loss_ctx;

/* A step line's loss: the last one read is the run's final loss. */
static int on_step(json_t *o, int lineno, void *arg, char *err, size_t errcap) {
  loss_ctx *c = arg;
  json_t *l = json_object_get(o, "loss");
  if (!json_is_number(l) || !isfinite(json_number_value(l)))
    return ddp_fail(err, errcap, "%s:%d: a step line without a finite number \"loss\"", c->path, lineno);
  *c->loss = json_number_value(l);
  return 0;
}

int ddp_scaling_metrics_loss(const char *path, double *loss, char *err, size_t errcap) {
  double last = NAN;
  loss_ctx c = {path, &last};
  const ddp_metrics_visit v = {NULL, on_step, &c};
  if (ddp_metrics_lines(path, RUNS_MAX_BYTES, &v, err, errcap)) return -1;
  if (isnan(last)) return ddp_fail(err, errcap, "%s: no step line (a line with \"step\" and \"loss\")", path);
  *loss = last;
  return 0;
}

int ddp_scaling_parse(const char *text, const char *name, const char *dir, ddp_scaling_run **runs, int *nruns,
                      char *err, size_t errcap) {
  *runs = NULL;
  *nruns = 0;
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  if (!root) return ddp_fail(err, errcap, "%s: line %d: not JSON: %s", name, je.line, je.text);
  if (!json_is_array(root)) {
    json_decref(root);
    return ddp_fail(err, errcap, "%s: not a JSON array of runs ({\"parameters\", \"compute_budget\", "
                                 "\"final_loss\"} objects)", name);
  }
  size_t n = json_array_size(root);
  if (n == 0 || n > 1000000) {
    json_decref(root);
    return ddp_fail(err, errcap, "%s: %zu runs; expected 1 to 1000000", name, n);
  }
  ddp_scaling_run *r = ddp_xcalloc(n, sizeof *r);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    json_t *o = json_array_get(root, i);
    if (!json_is_object(o)) {
      rc = ddp_fail(err, errcap, "%s: run %zu: not an object", name, i);
      break;
    }
    rc = number_field(o, name, "parameters", (int)i, &r[i].params, err, errcap);
    if (rc == 0) rc = number_field(o, name, "compute_budget", (int)i, &r[i].compute, err, errcap);
    if (rc) break;
    json_t *m = json_object_get(o, "metrics");
    if (m && json_object_get(o, "final_loss")) {
      rc = ddp_fail(err, errcap, "%s: run %zu: both \"final_loss\" and \"metrics\"; give one", name, i);
    } else if (m) {
      if (!json_is_string(m) || !json_string_value(m)[0]) {
        rc = ddp_fail(err, errcap, "%s: run %zu: \"metrics\" is not a file name", name, i);
      } else {
        const char *f = json_string_value(m);
        size_t cap = strlen(f) + (dir ? strlen(dir) : 0) + 2;
        char *path = ddp_xmalloc(cap), sub[1024];
        if (f[0] == '/' || !dir) snprintf(path, cap, "%s", f);
        else snprintf(path, cap, "%s/%s", dir, f);
        if (ddp_scaling_metrics_loss(path, &r[i].loss, sub, sizeof sub))
          rc = ddp_fail(err, errcap, "%s: run %zu: \"metrics\": %s", name, i, sub);
        free(path);
      }
    } else {
      json_t *l = json_object_get(o, "final_loss");
      if (!l) rc = ddp_fail(err, errcap, "%s: run %zu: the field \"final_loss\" (or \"metrics\") is missing", name, i);
      else if (!json_is_number(l) || !isfinite(json_number_value(l)))
        rc = ddp_fail(err, errcap, "%s: run %zu: \"final_loss\" is not a finite number", name, i);
      else r[i].loss = json_number_value(l);
    }
  }
  json_decref(root);
  if (rc) {
    free(r);
    return -1;
  }
  *runs = r;
  *nruns = (int)n;
  return 0;
}

int ddp_scaling_read(const char *path, ddp_scaling_run **runs, int *nruns, char *err, size_t errcap) {
  size_t len = 0;
  char *text = ddp_read_file(path, RUNS_MAX_BYTES, &len, err, errcap);
  if (!text) return -1;
  char *copy = ddp_xstrdup(path);
  int rc = ddp_scaling_parse(text, path, dirname(copy), runs, nruns, err, errcap);
  free(copy);
  free(text);
  return rc;
}

/* base/param.c: parsing and validation of the knobs declared in param.h. */
#include "param.h"
#include "err.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *var;
  ddp_param_kind kind;
  double def, lo, hi;
  const char *doc;
} param_row;

static const param_row rows[PARAM_COUNT] = {
#define DDP_PARAM_ROW(id, v, k, d, l, h, doc) [PARAM_##id] = {v, PARAM_##k, d, l, h, doc},
    DDP_PARAMS(DDP_PARAM_ROW)
#undef DDP_PARAM_ROW
};

const char *ddp_param_var(ddp_param id) { return rows[id].var; }

static const char *raw(ddp_param id) {
  const char *v = getenv(rows[id].var);
  return v && *v ? v : NULL;
}

int ddp_param_is_set(ddp_param id) { return raw(id) != NULL; }

const char *ddp_param_path(ddp_param id) { return rows[id].kind == PARAM_PATH ? raw(id) : NULL; }

const char *ddp_param_text(ddp_param id) { return rows[id].kind == PARAM_TEXT ? raw(id) : NULL; }

static int is_pow2(long long x) { return x > 0 && (x & (x - 1)) == 0; }

int ddp_param_int(ddp_param id, int64_t *out, char *err, size_t errcap) {
  const param_row *r = &rows[id];
  const char *v = raw(id);
  *out = (int64_t)r->def;
  if (!v) return 0;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  const long long lo = (long long)r->lo, hi = (long long)r->hi;
  int ok = end && end != v && !*end && errno == 0 && x >= lo && x <= hi;
  if (r->kind == PARAM_POW2) ok = ok && is_pow2(x);
  if (!ok) {
    if (r->kind == PARAM_BOOL) return ddp_fail(err, errcap, "%s='%s' must be 0 or 1", r->var, v);
    return ddp_fail(err, errcap, "%s='%s' must be %s in %lld..%lld", r->var, v,
                    r->kind == PARAM_POW2 ? "a power of two" : "an integer", lo, hi);
  }
  *out = x;
  return 0;
}

int ddp_param_seconds(ddp_param id, double *out, char *err, size_t errcap) {
  const param_row *r = &rows[id];
  const char *v = raw(id);
  *out = r->def;
  if (!v) return 0;
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (!end || end == v || *end || errno || !isfinite(x) || !(x > r->lo) || x > r->hi)
    return ddp_fail(err, errcap, "%s='%s' must be a number of seconds above %g and at most %g", r->var, v,
                    r->lo, r->hi);
  *out = x;
  return 0;
}

int ddp_param_check_all(const char *prefix, char *err, size_t errcap) {
  for (int i = 0; i < PARAM_COUNT; i++) {
    const param_row *r = &rows[i];
    if (!raw((ddp_param)i) || strncmp(r->var, prefix, strlen(prefix))) continue;
    int64_t n;
    double x;
    if ((r->kind == PARAM_BOOL || r->kind == PARAM_INT || r->kind == PARAM_POW2) && ddp_param_int((ddp_param)i, &n, err, errcap))
      return -1;
    if (r->kind == PARAM_SECONDS && ddp_param_seconds((ddp_param)i, &x, err, errcap)) return -1;
  }
  return 0;
}

void ddp_param_print_table(void *file) {
  FILE *f = file;
  fprintf(f, "| variable | value | default | what it does |\n| --- | --- | --- | --- |\n");
  for (int i = 0; i < PARAM_COUNT; i++) {
    const param_row *r = &rows[i];
    char range[64], def[64];
    switch (r->kind) {
    case PARAM_BOOL: snprintf(range, sizeof range, "0 or 1"); break;
    case PARAM_INT: snprintf(range, sizeof range, "integer %lld..%lld", (long long)r->lo, (long long)r->hi); break;
    case PARAM_POW2: snprintf(range, sizeof range, "power of two %lld..%lld", (long long)r->lo, (long long)r->hi); break;
    case PARAM_SECONDS: snprintf(range, sizeof range, "seconds > %g", r->lo); break;
    case PARAM_PATH: snprintf(range, sizeof range, "path"); break;
    case PARAM_TEXT: snprintf(range, sizeof range, "text"); break;
    }
    if (r->kind == PARAM_PATH || r->kind == PARAM_TEXT || (r->def == 0 && r->kind != PARAM_BOOL && r->kind != PARAM_SECONDS))
      snprintf(def, sizeof def, "unset");
    else
      snprintf(def, sizeof def, "%g", r->def);
    fprintf(f, "| `%s` | %s | %s | %s |\n", r->var, range, def, r->doc);
  }
}

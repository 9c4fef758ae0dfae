/* runtime/io/st_read.c: the safetensors reader of safetensors.h. jansson parses the header
 * (JSON_REJECT_DUPLICATES: a repeated tensor or metadata key is refused; the tree stays alive and owns
 * every name and value); then the format's checks: known dtypes, shapes times element sizes equal to the
 * byte spans, spans inside the data section, contiguous and covering it exactly. Names are looked up by
 * binary search over a sorted index, so an 80k-tensor file is read in O(n log n). */
#include "safetensors.h"
#include "dtype.h"
#include "err.h"
#include "bytes.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_DEPTH 64 /* of values under unknown keys */

static const struct {
  const char *name;
  unsigned size;
  int dt;
} st_types[] = {
    {"BOOL", 1, -1},    {"U8", 1, -1},  {"I8", 1, -1},      {"F8_E5M2", 1, -1}, {"F8_E4M3", 1, -1},
    {"F8_E8M0", 1, -1}, {"I16", 2, -1}, {"U16", 2, DT_U16}, {"F16", 2, -1},     {"BF16", 2, DT_BF16},
    {"I32", 4, DT_I32}, {"U32", 4, -1}, {"F32", 4, DT_F32}, {"F64", 8, DT_F64}, {"I64", 8, -1},
    {"U64", 8, -1},     {"C64", 8, -1},
};
#define NTYPES (sizeof st_types / sizeof st_types[0])

const char *ddp_st_dtype_name(int dt) {
  for (size_t k = 0; k < NTYPES; k++)
    if (st_types[k].dt == dt && dt >= 0) return st_types[k].name;
  return NULL;
}

int ddp_st_span_bytes(int ndim, const int64_t *shape, uint64_t size, uint64_t *out) {
  uint64_t n = size;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] < 0) return -1;
    if (shape[d] && n > UINT64_MAX / (uint64_t)shape[d]) return -1;
    n *= (uint64_t)shape[d];
  }
  *out = n;
  return 0;
}

const char *ddp_st_printable(const char *s, char *buf, size_t cap) {
  size_t n = 0, len = strlen(s);
  bool cut = len + 1 > cap && cap > 4;
  size_t keep = cut ? cap - 4 : len;
  for (; n < keep && n + 1 < cap; n++) buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
  if (cut) memcpy(buf + n, "...", 3), n += 3;
  if (cap) buf[n < cap ? n : cap - 1] = 0;
  return buf;
}

/* ---- the header ------------------------------------------------------------------------------------- */

/* One line: "<label>: bad safetensors header: <what>". */
__attribute__((format(printf, 4, 5))) static int hfail(const ddp_st_file *f, char *err, size_t errcap,
                                                       const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ddp_fail(err, errcap, "%s: bad safetensors header: %s", f->label, what); /* one line: ddp_fail */
}

static bool too_deep(json_t *v, int depth) {
  const char *key;
  json_t *x;
  size_t i;
  if (depth > ST_MAX_DEPTH) return true;
  if (json_is_object(v)) json_object_foreach(v, key, x) if (too_deep(x, depth + 1)) return true;
  if (json_is_array(v)) json_array_foreach(v, i, x) if (too_deep(x, depth + 1)) return true;
  return false;
}

/* shape (at most DDP_ST_MAX_DIMS) or data_offsets (exactly 2): non-negative integers into v[*n]. */
static int uints(const ddp_st_file *f, json_t *a, bool shape, const char *nm, uint64_t *v, int *n, char *err,
                 size_t errcap) {
  const char *what = shape ? "a dimension" : "an offset";
  if (!json_is_array(a)) return hfail(f, err, errcap, "tensor '%s': %s must be an array", nm, shape ? "shape" : "data_offsets");
  size_t len = json_array_size(a);
  if (shape && len > DDP_ST_MAX_DIMS) return hfail(f, err, errcap, "tensor '%s': more than %d dimensions", nm, DDP_ST_MAX_DIMS);
  if (!shape && len != 2) return hfail(f, err, errcap, "tensor '%s': data_offsets must hold 2 numbers", nm);
  for (size_t i = 0; i < len; i++) {
    json_t *x = json_array_get(a, i);
    if (!json_is_integer(x)) return hfail(f, err, errcap, "tensor '%s': %s must be an integer", nm, what);
    if (json_integer_value(x) < 0)
      return hfail(f, err, errcap, "tensor '%s': %s must be a non-negative integer", nm, what);
    v[i] = (uint64_t)json_integer_value(x);
  }
  *n = (int)len;
  return 0;
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}; other keys are ignored. */
static int parse_tensor(const ddp_st_file *f, ddp_st_tensor *t, json_t *o, char *err, size_t errcap) {
  char nm[80];
  ddp_st_printable(t->name, nm, sizeof nm);
  if (!json_is_object(o)) return hfail(f, err, errcap, "tensor '%s': expected '{' (dtype, shape, data_offsets)", nm);
  if (too_deep(o, 1)) return hfail(f, err, errcap, "tensor '%s': values nested too deeply", nm);
  json_t *dt = json_object_get(o, "dtype"), *shape = json_object_get(o, "shape");
  json_t *offsets = json_object_get(o, "data_offsets");
  if (!dt) return hfail(f, err, errcap, "tensor '%s' has no \"dtype\"", nm);
  if (!shape) return hfail(f, err, errcap, "tensor '%s' has no \"shape\"", nm);
  if (!offsets) return hfail(f, err, errcap, "tensor '%s' has no \"data_offsets\"", nm);
  if (!json_is_string(dt)) return hfail(f, err, errcap, "tensor '%s': dtype must be a string", nm);
  if (json_string_length(dt) >= sizeof t->dtype_name) return hfail(f, err, errcap, "tensor '%s': unknown dtype", nm);
  snprintf(t->dtype_name, sizeof t->dtype_name, "%s", json_string_value(dt));
  uint64_t v[DDP_ST_MAX_DIMS], off[2];
  int n;
  if (uints(f, shape, true, nm, v, &t->ndim, err, errcap) || uints(f, offsets, false, nm, off, &n, err, errcap))
    return -1;
  for (int d = 0; d < t->ndim; d++) t->shape[d] = (int64_t)v[d];
  t->begin = off[0];
  t->end = off[1];
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const ddp_st_tensor *const *)a)->name, (*(const ddp_st_tensor *const *)b)->name);
}

static int parse_header(ddp_st_file *f, const char *s, size_t n, char *err, size_t errcap) {
  json_error_t je;
  json_t *root = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
  if (!root) return hfail(f, err, errcap, "%s at byte %d", je.text, je.position + 8);
  f->json = root;
  if (!json_is_object(root)) return hfail(f, err, errcap, "expected '{' (the header is one JSON object)");
  json_t *meta = json_object_get(root, "__metadata__"), *v;
  const char *key;
  if (meta && !json_is_null(meta)) {
    if (!json_is_object(meta)) return hfail(f, err, errcap, "__metadata__ must be an object");
    json_object_foreach(meta, key, v) if (!json_is_string(v)) return hfail(f, err, errcap, "__metadata__ values must be strings");
    f->nmeta = (uint32_t)json_object_size(meta);
  }
  size_t nt = json_object_size(root) - (meta != NULL);
  f->tensors = calloc(nt + 1, sizeof *f->tensors);
  f->by_name = calloc(nt + 1, sizeof *f->by_name);
  if (!f->tensors || !f->by_name) return ddp_fail(err, errcap, "%s: out of memory", f->label);
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0) continue;
    ddp_st_tensor *t = &f->tensors[f->ntensors];
    f->by_name[f->ntensors++] = t;
    t->name = key;
    if (parse_tensor(f, t, v, err, errcap)) return -1;
  }
  qsort(f->by_name, f->ntensors, sizeof *f->by_name, by_name);
  return 0;
}

/* ---- the format's checks ------------------------------------------------------------------------------ */

typedef struct span {
  uint64_t begin, end;
  uint32_t idx;
} span;
static int by_offset(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int check_layout(ddp_st_file *f, char *err, size_t errcap) {
  char nm[80], nm2[80];
  for (uint32_t k = 0; k < f->ntensors; k++) {
    ddp_st_tensor *t = &f->tensors[k];
    ddp_st_printable(t->name, nm, sizeof nm);
    unsigned size = 0;
    t->dtype = -1;
    for (size_t j = 0; j < NTYPES; j++)
      if (strcmp(st_types[j].name, t->dtype_name) == 0) size = st_types[j].size, t->dtype = st_types[j].dt;
    if (!size)
      return ddp_fail(err, errcap, "%s: tensor '%s' has unsupported dtype \"%s\"", f->label, nm,
                      ddp_st_printable(t->dtype_name, nm2, sizeof nm2));
    uint64_t want;
    if (ddp_st_span_bytes(t->ndim, t->shape, size, &want))
      return ddp_fail(err, errcap, "%s: tensor '%s': shape is too large", f->label, nm);
    if (t->end < t->begin || t->end > f->data_bytes)
      return ddp_fail(err, errcap,
                      "%s: tensor '%s': data_offsets [%llu, %llu] are out of bounds of the %llu-byte data section",
                      f->label, nm, (unsigned long long)t->begin, (unsigned long long)t->end,
                      (unsigned long long)f->data_bytes);
    if (t->end - t->begin != want)
      return ddp_fail(err, errcap,
                      "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes, dtype %s and its shape need %llu",
                      f->label, nm, (unsigned long long)t->begin, (unsigned long long)t->end,
                      (unsigned long long)(t->end - t->begin), t->dtype_name, (unsigned long long)want);
  }
  span *order = malloc(sizeof *order * (f->ntensors + 1));
  if (!order) return ddp_fail(err, errcap, "%s: out of memory", f->label);
  for (uint32_t k = 0; k < f->ntensors; k++) order[k] = (span){f->tensors[k].begin, f->tensors[k].end, k};
  qsort(order, f->ntensors, sizeof *order, by_offset);
  uint64_t at = 0;
  int rc = 0;
  for (uint32_t k = 0; k < f->ntensors && !rc; k++) {
    const ddp_st_tensor *t = &f->tensors[order[k].idx];
    if (t->begin == at) {
      at = t->end;
      continue;
    }
    ddp_st_printable(t->name, nm, sizeof nm);
    if (k == 0)
      rc = ddp_fail(err, errcap, "%s: tensor '%s' starts at byte %llu, not 0, of the data section", f->label, nm,
                    (unsigned long long)t->begin);
    else
      rc = ddp_fail(err, errcap, "%s: tensors '%s' and '%s' %s (data_offsets end %llu, begin %llu)", f->label,
                    ddp_st_printable(f->tensors[order[k - 1].idx].name, nm2, sizeof nm2), nm,
                    t->begin < at ? "overlap" : "leave a gap", (unsigned long long)at, (unsigned long long)t->begin);
  }
  free(order);
  if (!rc && at != f->data_bytes)
    rc = ddp_fail(err, errcap, "%s: the data section holds %llu bytes, the tensors cover %llu", f->label,
                  (unsigned long long)f->data_bytes, (unsigned long long)at);
  return rc;
}

/* ---- entry points ----------------------------------------------------------------------------------- */

void ddp_st_close(ddp_st_file *f) {
  if (!f) return;
  free(f->tensors);
  free(f->by_name);
  json_decref(f->json);
  if (f->map) munmap(f->map, f->map_bytes);
  free(f->label);
  free(f);
}

ddp_st_file *ddp_st_parse(const void *buf, size_t size, const char *label, char *err, size_t errcap) {
  ddp_st_file *f = calloc(1, sizeof *f);
  if (!f || !(f->label = strdup(label))) {
    ddp_fail(err, errcap, "%s: out of memory", label);
    free(f);
    return NULL;
  }
  const uint8_t *b = buf;
  const uint64_t n = size >= 8 ? ddp_le64(b) : 0;
  if (size < 8)
    ddp_fail(err, errcap, "%s: not a safetensors file: %zu bytes, too few for the 8-byte header length", label, size);
  else if (n == 0 || n > DDP_ST_MAX_HEADER)
    ddp_fail(err, errcap, "%s: not a safetensors file: header length %llu is %s", label, (unsigned long long)n,
             n ? "over the 100 MiB limit" : "zero");
  else if (n > size - 8)
    ddp_fail(err, errcap, "%s: truncated safetensors file: header length %llu runs past the end of the %zu-byte file",
             label, (unsigned long long)n, size);
  else {
    f->data = b + 8 + n;
    f->data_bytes = size - 8 - n;
    if (!parse_header(f, (const char *)b + 8, (size_t)n, err, errcap) && !check_layout(f, err, errcap)) return f;
  }
  ddp_st_close(f);
  return NULL;
}

ddp_st_file *ddp_st_open(const char *path, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO is refused, not waited on */
  if (fd < 0) {
    ddp_fail(err, errcap, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ddp_fail(err, errcap, "%s: cannot open: not a regular file", path);
    close(fd);
    return NULL;
  }
  size_t size = (size_t)st.st_size;
  void *m = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  int e = errno;
  close(fd);
  if (m == MAP_FAILED) {
    ddp_fail(err, errcap, "%s: cannot map: %s", path, strerror(e));
    return NULL;
  }
  static const uint8_t none[1];
  ddp_st_file *f = ddp_st_parse(m ? m : none, size, path, err, errcap);
  if (!f) {
    if (m) munmap(m, size);
    return NULL;
  }
  f->map = m;
  f->map_bytes = size;
  return f;
}

const ddp_st_tensor *ddp_st_find(const ddp_st_file *f, const char *name) {
  ddp_st_tensor key = {.name = name}, *kp = &key, **hit;
  hit = f->ntensors ? bsearch(&kp, f->by_name, f->ntensors, sizeof *f->by_name, by_name) : NULL;
  return hit ? *hit : NULL;
}

const char *ddp_st_meta(const ddp_st_file *f, const char *key) {
  return json_string_value(json_object_get(json_object_get(f->json, "__metadata__"), key));
}

const void *ddp_st_data(const ddp_st_file *f, const ddp_st_tensor *t) { return f->data + t->begin; }

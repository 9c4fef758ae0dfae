/* runtime/safetensors.c: the safetensors reader and writer of safetensors.h. The reader is a small
 * hand-written JSON parser for the header (objects, arrays, strings with every JSON escape, integers;
 * other values are skipped where a key is unknown) followed by the format's checks: known dtypes, shapes
 * times element sizes equal to the byte spans, spans inside the data section, contiguous and covering
 * it exactly. The writer builds the header, pads it with spaces and streams the tensors atomically. */
#include "safetensors.h"
#include "err.h"
#include "dtype.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- dtypes ---------------------------------------------------------------------------------------- */

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

/* numel x size with overflow checks (-1 on overflow). */
static int span_bytes(int ndim, const int64_t *shape, uint64_t size, uint64_t *out) {
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

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, cp = c & 0x07;
  else
    return 0;
  if (n < len) return 0;
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

/* ---- JSON header parser ------------------------------------------------------------------------------ */

typedef struct jp {
  const char *s;
  size_t n, i;
  const char *label;
  char *err;
  size_t errcap;
} jp;

/* One line: "<label>: bad safetensors header: <what> at byte <file offset>". */
static int jfail(jp *p, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(p->err, p->errcap, "%s: bad safetensors header: %s at byte %zu", p->label, what, p->i + 8);
  return -1;
}

static void ws(jp *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

/* Skips whitespace and consumes c. */
static int expect(jp *p, char c) {
  ws(p);
  if (p->i >= p->n) return jfail(p, "unexpected end of the header (expected '%c')", c);
  if (p->s[p->i] != c) return jfail(p, "expected '%c', found '%c'", c, p->s[p->i] < 0x20 ? '?' : p->s[p->i]);
  p->i++;
  return 0;
}

/* Consumes ',' (returns 1: another member follows) or `close` (returns 0). */
static int next_member(jp *p, char close) {
  ws(p);
  if (p->i < p->n && p->s[p->i] == ',') {
    p->i++;
    return 1;
  }
  if (p->i < p->n && p->s[p->i] == close) {
    p->i++;
    return 0;
  }
  if (p->i >= p->n) return jfail(p, "unexpected end of the header (expected ',' or '%c')", close);
  return jfail(p, "expected ',' or '%c', found '%c'", close, p->s[p->i] < 0x20 ? '?' : p->s[p->i]);
}

static int hex4(jp *p, uint32_t *out) {
  if (p->n - p->i < 4) return jfail(p, "truncated \\u escape");
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    char c = p->s[p->i + (size_t)k];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return jfail(p, "bad \\u escape");
    v = v * 16 + (uint32_t)d;
  }
  p->i += 4;
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xc0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* A JSON string, decoded into a new NUL-terminated UTF-8 string (out may be NULL to skip it). */
static int jstring(jp *p, char **out) {
  if (expect(p, '"')) return -1;
  /* Decoded text is never longer than its escaped form: find that form's end to size the copy. */
  size_t end = p->i;
  while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
  char *o = out ? malloc((end < p->n ? end : p->n) - p->i + 1) : NULL;
  size_t k = 0;
  if (out && !o) return jfail(p, "out of memory");
  for (;;) {
    if (p->i >= p->n) {
      free(o);
      return jfail(p, "unterminated string");
    }
    uint8_t c = (uint8_t)p->s[p->i];
    if (c == '"') break;
    if (c < 0x20) {
      free(o);
      return jfail(p, "control character 0x%02x inside a string", c);
    }
    if (c == '\\') {
      if (++p->i >= p->n) {
        free(o);
        return jfail(p, "unterminated string");
      }
      char e = p->s[p->i++];
      const char *simple = strchr("\"\\/bfnrt", e);
      if (e && simple) {
        static const char to[] = "\"\\/\b\f\n\r\t";
        if (o) o[k++] = to[simple - "\"\\/bfnrt"];
        continue;
      }
      if (e != 'u') {
        p->i--;
        free(o);
        return jfail(p, "bad escape '\\%c'", e < 0x20 ? '?' : e);
      }
      uint32_t cp;
      if (hex4(p, &cp)) return free(o), -1;
      if (cp >= 0xdc00 && cp <= 0xdfff) return free(o), jfail(p, "lone low surrogate \\u%04x", cp);
      if (cp >= 0xd800 && cp <= 0xdbff) {
        uint32_t lo;
        if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
          return free(o), jfail(p, "high surrogate \\u%04x without its low half", cp);
        p->i += 2;
        if (hex4(p, &lo)) return free(o), -1;
        if (lo < 0xdc00 || lo > 0xdfff) return free(o), jfail(p, "high surrogate \\u%04x without its low half", cp);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      if (cp == 0) return free(o), jfail(p, "\\u0000 inside a string");
      if (o) k += put_utf8(o + k, cp);
      continue;
    }
    size_t len = utf8_seq((const uint8_t *)p->s + p->i, p->n - p->i);
    if (!len) return free(o), jfail(p, "invalid UTF-8");
    if (o) memcpy(o + k, p->s + p->i, len), k += len;
    p->i += len;
  }
  p->i++;
  if (out) {
    o[k] = 0;
    *out = o;
  }
  return 0;
}

/* A non-negative JSON integer (what shapes and offsets are). */
static int juint(jp *p, const char *what, uint64_t *out) {
  ws(p);
  if (p->i >= p->n) return jfail(p, "unexpected end of the header (expected %s)", what);
  size_t start = p->i;
  if (p->s[p->i] == '-') return jfail(p, "%s must be a non-negative integer", what);
  uint64_t v = 0;
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
    uint64_t d = (uint64_t)(p->s[p->i] - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10) return jfail(p, "%s is too large", what);
    v = v * 10 + d;
    p->i++;
  }
  if (p->i == start) return jfail(p, "expected %s", what);
  if (p->i - start > 1 && p->s[start] == '0') return (p->i = start), jfail(p, "%s has a leading zero", what);
  if (p->i < p->n && (p->s[p->i] == '.' || p->s[p->i] == 'e' || p->s[p->i] == 'E'))
    return jfail(p, "%s must be an integer", what);
  *out = v;
  return 0;
}

/* Skips any JSON value (for keys this reader does not use). */
static int jskip(jp *p, int depth) {
  ws(p);
  if (p->i >= p->n) return jfail(p, "unexpected end of the header (expected a value)");
  if (depth > 64) return jfail(p, "values nested too deeply");
  char c = p->s[p->i];
  if (c == '"') return jstring(p, NULL);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    p->i++;
    ws(p);
    if (p->i < p->n && p->s[p->i] == close) return p->i++, 0;
    for (;;) {
      if (c == '{' && (jstring(p, NULL) || expect(p, ':'))) return -1;
      if (jskip(p, depth + 1)) return -1;
      int more = next_member(p, close);
      if (more <= 0) return more;
    }
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    size_t len = strlen(words[k]);
    if (p->n - p->i >= len && memcmp(p->s + p->i, words[k], len) == 0) return p->i += len, 0;
  }
  /* number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
  size_t at = p->i;
  if (p->s[at] == '-') at++;
  size_t d0 = at;
  while (at < p->n && p->s[at] >= '0' && p->s[at] <= '9') at++;
  if (at == d0 || (at - d0 > 1 && p->s[d0] == '0')) return jfail(p, "expected a value");
  if (at < p->n && p->s[at] == '.') {
    size_t f0 = ++at;
    while (at < p->n && p->s[at] >= '0' && p->s[at] <= '9') at++;
    if (at == f0) return (p->i = at), jfail(p, "bad number");
  }
  if (at < p->n && (p->s[at] == 'e' || p->s[at] == 'E')) {
    at++;
    if (at < p->n && (p->s[at] == '+' || p->s[at] == '-')) at++;
    size_t e0 = at;
    while (at < p->n && p->s[at] >= '0' && p->s[at] <= '9') at++;
    if (at == e0) return (p->i = at), jfail(p, "bad number");
  }
  p->i = at;
  return 0;
}

static bool is_null(jp *p) {
  ws(p);
  if (p->n - p->i >= 4 && memcmp(p->s + p->i, "null", 4) == 0) return p->i += 4, true;
  return false;
}

static int parse_meta(jp *p, ddp_st_file *f) {
  if (f->meta) return jfail(p, "duplicate \"__metadata__\"");
  if (is_null(p)) return 0;
  if (expect(p, '{')) return -1;
  ws(p);
  if (p->i < p->n && p->s[p->i] == '}') return p->i++, 0;
  for (;;) {
    char *kv[2] = {NULL, NULL};
    ws(p);
    size_t at = p->i;
    if (jstring(p, &kv[0]) || expect(p, ':')) return free(kv[0]), -1;
    ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') return free(kv[0]), jfail(p, "__metadata__ values must be strings");
    if (jstring(p, &kv[1])) return free(kv[0]), -1;
    for (uint32_t k = 0; k < f->nmeta; k++)
      if (strcmp(f->meta[2 * k], kv[0]) == 0) {
        char nm[80];
        p->i = at;
        jfail(p, "duplicate __metadata__ key \"%s\"", ddp_st_printable(kv[0], nm, sizeof nm));
        return free(kv[0]), free(kv[1]), -1;
      }
    char **nv = realloc(f->meta, sizeof(char *) * 2 * (f->nmeta + 1));
    if (!nv) return free(kv[0]), free(kv[1]), jfail(p, "out of memory");
    f->meta = nv;
    f->meta[2 * f->nmeta] = kv[0];
    f->meta[2 * f->nmeta + 1] = kv[1];
    f->nmeta++;
    int more = next_member(p, '}');
    if (more <= 0) return more;
  }
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} in any order; other keys are skipped. */
static int parse_tensor(jp *p, ddp_st_tensor *t) {
  char nm[80];
  ddp_st_printable(t->name, nm, sizeof nm);
  bool have_dtype = false, have_shape = false, have_offsets = false;
  if (expect(p, '{')) return -1;
  ws(p);
  if (p->i < p->n && p->s[p->i] == '}')
    p->i++;
  else
    for (;;) {
      char *key = NULL;
      if (jstring(p, &key) || expect(p, ':')) return free(key), -1;
      int rc = 0;
      if (strcmp(key, "dtype") == 0) {
        char *dt = NULL;
        ws(p);
        if (p->i >= p->n || p->s[p->i] != '"')
          rc = jfail(p, "tensor '%s': dtype must be a string", nm);
        else if (!(rc = jstring(p, &dt))) {
          if (strlen(dt) >= sizeof t->dtype_name)
            rc = jfail(p, "tensor '%s': unknown dtype", nm);
          else
            snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dt);
        }
        free(dt);
        have_dtype = true;
      } else if (strcmp(key, "shape") == 0 || strcmp(key, "data_offsets") == 0) {
        bool shape = key[0] == 's';
        uint64_t v[DDP_ST_MAX_DIMS];
        int nv = 0, more = 1;
        if (!(rc = expect(p, '['))) {
          ws(p);
          if (p->i < p->n && p->s[p->i] == ']') p->i++, more = 0;
          while (more > 0) {
            int cap = shape ? DDP_ST_MAX_DIMS : 2;
            if (nv == cap) {
              rc = jfail(
                  p, shape ? "tensor '%s': more than %d dimensions" : "tensor '%s': data_offsets must hold %d numbers",
                  nm, cap);
              break;
            }
            if ((rc = juint(p, shape ? "a dimension" : "an offset", &v[nv++]))) break;
            more = next_member(p, ']');
            if (more < 0) rc = -1;
          }
        }
        if (!rc && shape) {
          t->ndim = nv;
          for (int d = 0; d < nv; d++) t->shape[d] = (int64_t)v[d];
          have_shape = true;
        } else if (!rc) {
          if (nv != 2) rc = jfail(p, "tensor '%s': data_offsets must hold 2 numbers", nm);
          t->begin = nv > 0 ? v[0] : 0;
          t->end = nv > 1 ? v[1] : 0;
          have_offsets = true;
        }
      } else
        rc = jskip(p, 1);
      free(key);
      if (rc) return -1;
      int more = next_member(p, '}');
      if (more <= 0) {
        if (more < 0) return -1;
        break;
      }
    }
  if (!have_dtype) return jfail(p, "tensor '%s' has no \"dtype\"", nm);
  if (!have_shape) return jfail(p, "tensor '%s' has no \"shape\"", nm);
  if (!have_offsets) return jfail(p, "tensor '%s' has no \"data_offsets\"", nm);
  return 0;
}

static int parse_header(jp *p, ddp_st_file *f) {
  uint32_t cap = 0;
  if (expect(p, '{')) return -1;
  ws(p);
  if (p->i < p->n && p->s[p->i] == '}')
    p->i++;
  else
    for (;;) {
      char *key = NULL;
      ws(p);
      size_t at = p->i;
      if (jstring(p, &key) || expect(p, ':')) return free(key), -1;
      if (strcmp(key, "__metadata__") == 0) {
        free(key);
        if (parse_meta(p, f)) return -1;
      } else {
        for (uint32_t k = 0; k < f->ntensors; k++)
          if (strcmp(f->tensors[k].name, key) == 0) {
            char nm[80];
            p->i = at;
            jfail(p, "duplicate tensor '%s'", ddp_st_printable(key, nm, sizeof nm));
            return free(key), -1;
          }
        if (f->ntensors == cap) {
          cap = cap ? 2 * cap : 16;
          ddp_st_tensor *nv = realloc(f->tensors, sizeof *nv * cap);
          if (!nv) return free(key), jfail(p, "out of memory");
          f->tensors = nv;
        }
        ddp_st_tensor *t = &f->tensors[f->ntensors++];
        memset(t, 0, sizeof *t);
        t->name = key;
        if (parse_tensor(p, t)) return -1;
      }
      int more = next_member(p, '}');
      if (more <= 0) {
        if (more < 0) return -1;
        break;
      }
    }
  ws(p);
  if (p->i < p->n) return jfail(p, "unexpected text after the header object");
  return 0;
}

/* ---- format checks ------------------------------------------------------------------------------------ */

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
    if (!size) {
      ddp_fail(err, errcap, "%s: tensor '%s' has unsupported dtype \"%s\"", f->label, nm,
               ddp_st_printable(t->dtype_name, nm2, sizeof nm2));
      return -1;
    }
    uint64_t want;
    if (span_bytes(t->ndim, t->shape, size, &want)) {
      ddp_fail(err, errcap, "%s: tensor '%s': shape is too large", f->label, nm);
      return -1;
    }
    if (t->end < t->begin || t->end > f->data_bytes) {
      ddp_fail(err, errcap,
               "%s: tensor '%s': data_offsets [%llu, %llu] are out of bounds of the %llu-byte data section", f->label,
               nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)f->data_bytes);
      return -1;
    }
    if (t->end - t->begin != want) {
      ddp_fail(err, errcap,
               "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes, dtype %s and its shape need %llu", f->label,
               nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)(t->end - t->begin),
               t->dtype_name, (unsigned long long)want);
      return -1;
    }
  }
  span *order = malloc(sizeof *order * (f->ntensors + 1));
  if (!order) {
    ddp_fail(err, errcap, "%s: out of memory", f->label);
    return -1;
  }
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
      ddp_fail(err, errcap, "%s: tensor '%s' starts at byte %llu, not 0, of the data section", f->label, nm,
               (unsigned long long)t->begin);
    else
      ddp_fail(err, errcap, "%s: tensors '%s' and '%s' %s (data_offsets end %llu, begin %llu)", f->label,
               ddp_st_printable(f->tensors[order[k - 1].idx].name, nm2, sizeof nm2), nm,
               t->begin < at ? "overlap" : "leave a gap", (unsigned long long)at, (unsigned long long)t->begin);
    rc = -1;
  }
  free(order);
  if (!rc && at != f->data_bytes) {
    ddp_fail(err, errcap, "%s: the data section holds %llu bytes, the tensors cover %llu", f->label,
             (unsigned long long)f->data_bytes, (unsigned long long)at);
    rc = -1;
  }
  return rc;
}

/* ---- reader entry points ------------------------------------------------------------------------------ */

void ddp_st_close(ddp_st_file *f) {
  if (!f) return;
  for (uint32_t k = 0; k < f->ntensors; k++) free(f->tensors[k].name);
  free(f->tensors);
  for (uint32_t k = 0; k < 2 * f->nmeta; k++) free(f->meta[k]);
  free(f->meta);
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
  if (size < 8) {
    ddp_fail(err, errcap, "%s: not a safetensors file: %zu bytes, too few for the 8-byte header length", label, size);
    goto fail;
  }
  uint64_t n = 0;
  for (int k = 7; k >= 0; k--) n = (n << 8) | b[k];
  if (n == 0 || n > DDP_ST_MAX_HEADER) {
    ddp_fail(err, errcap, "%s: not a safetensors file: header length %llu is %s", label, (unsigned long long)n,
             n ? "over the 100 MiB limit" : "zero");
    goto fail;
  }
  if (n > size - 8) {
    ddp_fail(err, errcap, "%s: truncated safetensors file: header length %llu runs past the end of the %zu-byte file",
             label, (unsigned long long)n, size);
    goto fail;
  }
  jp p = {.s = (const char *)b + 8, .n = (size_t)n, .label = label, .err = err, .errcap = errcap};
  if (parse_header(&p, f)) goto fail;
  f->data = b + 8 + n;
  f->data_bytes = size - 8 - n;
  if (check_layout(f, err, errcap)) goto fail;
  return f;
fail:
  ddp_st_close(f);
  return NULL;
}

ddp_st_file *ddp_st_open(const char *path, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
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
  void *m = NULL;
  if (size) {
    m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      ddp_fail(err, errcap, "%s: cannot map: %s", path, strerror(errno));
      close(fd);
      return NULL;
    }
  }
  close(fd);
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
  for (uint32_t k = 0; k < f->ntensors; k++)
    if (strcmp(f->tensors[k].name, name) == 0) return &f->tensors[k];
  return NULL;
}

const char *ddp_st_meta(const ddp_st_file *f, const char *key) {
  for (uint32_t k = 0; k < f->nmeta; k++)
    if (strcmp(f->meta[2 * k], key) == 0) return f->meta[2 * k + 1];
  return NULL;
}

const void *ddp_st_data(const ddp_st_file *f, const ddp_st_tensor *t) { return f->data + t->begin; }

/* ---- writer --------------------------------------------------------------------------------------------- */

typedef struct sbuf {
  char *v;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *v = realloc(b->v, cap);
    if (!v) {
      b->oom = true;
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  memcpy(b->v + b->n, s, n);
  b->n += n;
  b->v[b->n] = 0;
}

static void sb_fmt(sbuf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_add(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string; invalid UTF-8 bytes become U+FFFD so every reader accepts the header. */
static void sb_jstr(sbuf *b, const char *s) {
  sb_add(b, "\"", 1);
  const uint8_t *u = (const uint8_t *)s;
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    uint8_t c = u[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      sb_add(b, e, 2);
      i++;
    } else if (c < 0x20) {
      sb_fmt(b, "\\u%04x", c);
      i++;
    } else {
      size_t len = utf8_seq(u + i, n - i);
      if (len)
        sb_add(b, s + i, len), i += len;
      else
        sb_add(b, "\\ufffd", 6), i++;
    }
  }
  sb_add(b, "\"", 1);
}

typedef struct order_key {
  uint64_t size;
  const char *name;
  uint32_t idx;
} order_key;
static int by_size_name(const void *a, const void *b) {
  const order_key *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = EIO;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* DIR/.BASE.tmp.<pid> beside path, and DIR itself. */
static void tmp_paths(const char *path, char *tmp, size_t tcap, char *dir, size_t dcap) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(tmp, tcap, ".%s.tmp.%ld", path, (long)getpid());
    snprintf(dir, dcap, ".");
  } else {
    int dl = (int)(slash - path);
    snprintf(tmp, tcap, "%.*s/.%s.tmp.%ld", dl, path, slash + 1, (long)getpid());
    snprintf(dir, dcap, "%.*s", dl ? dl : 1, dl ? path : "/");
  }
}

/* Builds the header (padded to a multiple of 8) and each entry's data offset in `order`. */
static int build_header(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                        order_key *order, sbuf *h, char *err, size_t errcap) {
  char nm[80];
  for (uint32_t k = 0; k < n; k++) {
    const ddp_st_entry *e = &v[k];
    const char *dn = ddp_st_dtype_name(e->dtype);
    uint64_t bytes = 0;
    if (!e->name || !dn || e->ndim < 0 || e->ndim > DDP_ST_MAX_DIMS ||
        span_bytes(e->ndim, e->shape, ddp_dtype_size(e->dtype), &bytes) || strcmp(e->name, "__metadata__") == 0) {
      ddp_fail(err, errcap, "%s: cannot write tensor '%s': bad name, dtype or shape", path,
               e->name ? ddp_st_printable(e->name, nm, sizeof nm) : "(null)");
      return -1;
    }
    order[k] = (order_key){ddp_dtype_size(e->dtype), e->name, k};
  }
  qsort(order, n, sizeof *order, by_size_name);
  for (uint32_t k = 1; k < n; k++)
    if (strcmp(order[k].name, order[k - 1].name) == 0) {
      ddp_fail(err, errcap, "%s: cannot write: duplicate tensor '%s'", path,
               ddp_st_printable(order[k].name, nm, sizeof nm));
      return -1;
    }
  sb_add(h, "{", 1);
  if (nmeta) {
    sb_add(h, "\"__metadata__\":{", 16);
    for (uint32_t k = 0; k < nmeta; k++) {
      if (k) sb_add(h, ",", 1);
      sb_jstr(h, meta[2 * k] ? meta[2 * k] : "");
      sb_add(h, ":", 1);
      sb_jstr(h, meta[2 * k + 1] ? meta[2 * k + 1] : "");
    }
    sb_add(h, "}", 1);
  }
  uint64_t at = 0;
  for (uint32_t k = 0; k < n; k++) {
    const ddp_st_entry *e = &v[order[k].idx];
    uint64_t bytes = 0;
    span_bytes(e->ndim, e->shape, ddp_dtype_size(e->dtype), &bytes);
    if (k || nmeta) sb_add(h, ",", 1);
    sb_jstr(h, e->name);
    sb_fmt(h, ":{\"dtype\":\"%s\",\"shape\":[", ddp_st_dtype_name(e->dtype));
    for (int d = 0; d < e->ndim; d++) sb_fmt(h, d ? ",%lld" : "%lld", (long long)e->shape[d]);
    sb_fmt(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + bytes));
    at += bytes;
  }
  sb_add(h, "}", 1);
  while (!h->oom && h->n % 8) sb_add(h, " ", 1);
  if (h->oom || h->n > DDP_ST_MAX_HEADER) {
    ddp_fail(err, errcap, "%s: cannot write: header %s", path, h->oom ? "out of memory" : "over 100 MiB");
    return -1;
  }
  return 0;
}

int ddp_st_write(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                 ddp_st_fill_fn fill, void *ctx, char *err, size_t errcap) {
  order_key *order = malloc(sizeof *order * (n + 1));
  sbuf h = {0};
  char tmp[4200], dir[4200];
  void *scratch = NULL;
  int fd = -1, rc = -1;
  tmp[0] = 0;
  if (!order) {
    ddp_fail(err, errcap, "%s: cannot write: out of memory", path);
    return -1;
  }
  if (build_header(path, v, n, meta, nmeta, order, &h, err, errcap)) goto out;
  uint64_t most = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint64_t bytes = 0;
    span_bytes(v[k].ndim, v[k].shape, ddp_dtype_size(v[k].dtype), &bytes);
    if (!v[k].data && bytes > most) most = bytes;
  }
  if (most && (!fill || most > SIZE_MAX || !(scratch = malloc((size_t)most)))) {
    ddp_fail(err, errcap, "%s: cannot write: %s", path, fill ? "out of memory" : "an entry has no data");
    goto out;
  }
  tmp_paths(path, tmp, sizeof tmp, dir, sizeof dir);
  fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    ddp_fail(err, errcap, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    tmp[0] = 0;
    goto out;
  }
  uint8_t len8[8];
  for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)h.n >> (8 * k));
  if (write_all(fd, len8, 8) || write_all(fd, h.v, h.n)) goto io_fail;
  for (uint32_t k = 0; k < n; k++) {
    const ddp_st_entry *e = &v[order[k].idx];
    uint64_t bytes = 0;
    span_bytes(e->ndim, e->shape, ddp_dtype_size(e->dtype), &bytes);
    if (!bytes) continue;
    const void *src = e->data;
    if (!src) {
      if (fill(ctx, order[k].idx, scratch, err, errcap)) goto out;
      src = scratch;
    }
    if (write_all(fd, src, (size_t)bytes)) goto io_fail;
  }
  if (fsync(fd) != 0) goto io_fail;
  if (close(fd) != 0) {
    fd = -1;
    goto io_fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0) {
    ddp_fail(err, errcap, "%s: cannot rename %s onto it: %s", path, tmp, strerror(errno));
    goto out;
  }
  tmp[0] = 0;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd); /* durability of the rename; some file systems refuse, which is harmless */
    close(dfd);
  }
  rc = 0;
  goto out;
io_fail:
  ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno));
out:
  if (fd >= 0) close(fd);
  if (tmp[0]) unlink(tmp);
  free(scratch);
  free(h.v);
  free(order);
  return rc;
}

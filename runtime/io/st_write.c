/* runtime/io/st_write.c: the safetensors writer of safetensors.h. It builds the JSON header by hand (so
 * that invalid UTF-8 in a name or metadata value becomes U+FFFD instead of an error), orders the tensors by
 * element size then name, pads the header with spaces to a multiple of 8 and streams the tensors through
 * base/file.h's atomic write: the destination is the old file or the whole new one. ddp_st_header gives the
 * same header and every tensor's place in the file, for a file that several processes fill. */
#include "safetensors.h"
#include "dtype.h"
#include "err.h"
#include "bytes.h"
#include "file.h"
#include "vec.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
  char *v;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  if (b->oom || (b->oom = ddp_vec_reserve(&b->v, &b->cap, b->n + n + 1, 1) != 0)) return;
  memcpy(b->v + b->n, s, n);
  b->n += n;
  b->v[b->n] = 0;
}

__attribute__((format(printf, 2, 3))) static void sb_fmt(sbuf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_add(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
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

/* A JSON string; invalid UTF-8 bytes become U+FFFD so every reader accepts the header. */
static void sb_jstr(sbuf *b, const char *s) {
  sb_add(b, "\"", 1);
  const uint8_t *u = (const uint8_t *)s;
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    uint8_t c = u[i];
    size_t len = c < 0x20 || c == '"' || c == '\\' ? 1 : utf8_seq(u + i, n - i);
    if (c == '"' || c == '\\')
      sb_add(b, (char[2]){'\\', (char)c}, 2);
    else if (c < 0x20)
      sb_fmt(b, "\\u%04x", c);
    else if (len)
      sb_add(b, s + i, len);
    else
      sb_add(b, "\\ufffd", 6), len = 1;
    i += len;
  }
  sb_add(b, "\"", 1);
}

typedef struct order_key {
  uint64_t size, bytes;
  const char *name;
  uint32_t idx;
} order_key;
static int by_size_name(const void *a, const void *b) {
  const order_key *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Builds the header (padded to a multiple of 8) in the writing order `order`. */
static int build_header(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                        order_key *order, sbuf *h, char *err, size_t errcap) {
  char nm[80];
  for (uint32_t k = 0; k < n; k++) {
    const ddp_st_entry *e = &v[k];
    const char *dn = ddp_st_dtype_name(e->dtype);
    uint64_t bytes = 0;
    if (!e->name || !dn || e->ndim < 0 || e->ndim > DDP_ST_MAX_DIMS ||
        ddp_st_span_bytes(e->ndim, e->shape, ddp_dtype_size(e->dtype), &bytes) ||
        strcmp(e->name, "__metadata__") == 0)
      return ddp_fail(err, errcap, "%s: cannot write tensor '%s': bad name, dtype or shape", path,
                      e->name ? ddp_st_printable(e->name, nm, sizeof nm) : "(null)");
    order[k] = (order_key){ddp_dtype_size(e->dtype), bytes, e->name, k};
  }
  qsort(order, n, sizeof *order, by_size_name);
  for (uint32_t k = 1; k < n; k++)
    if (strcmp(order[k].name, order[k - 1].name) == 0)
      return ddp_fail(err, errcap, "%s: cannot write: duplicate tensor '%s'", path,
                      ddp_st_printable(order[k].name, nm, sizeof nm));
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
    if (k || nmeta) sb_add(h, ",", 1);
    sb_jstr(h, e->name);
    sb_fmt(h, ":{\"dtype\":\"%s\",\"shape\":[", ddp_st_dtype_name(e->dtype));
    for (int d = 0; d < e->ndim; d++) sb_fmt(h, d ? ",%lld" : "%lld", (long long)e->shape[d]);
    sb_fmt(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + order[k].bytes));
    at += order[k].bytes;
  }
  sb_add(h, "}", 1);
  while (!h->oom && h->n % 8) sb_add(h, " ", 1);
  if (h->oom || h->n > DDP_ST_MAX_HEADER)
    return ddp_fail(err, errcap, "%s: cannot write: header %s", path, h->oom ? "out of memory" : "over 100 MiB");
  return 0;
}

int ddp_st_header(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                  void **header, size_t *header_bytes, uint64_t *offset, uint64_t *file_bytes, char *err,
                  size_t errcap) {
  order_key *order = malloc(sizeof *order * (n + 1));
  sbuf h = {0};
  *header = NULL;
  if (!order) return ddp_fail(err, errcap, "%s: cannot write: out of memory", path);
  int rc = build_header(path, v, n, meta, nmeta, order, &h, err, errcap);
  uint8_t *out = rc ? NULL : malloc(h.n + 8);
  if (!rc && !out) rc = ddp_fail(err, errcap, "%s: cannot write: out of memory", path);
  if (!rc) {
    ddp_put_le64(out, (uint64_t)h.n);
    memcpy(out + 8, h.v, h.n);
    uint64_t at = 8 + h.n;
    for (uint32_t k = 0; k < n; k++) {
      offset[order[k].idx] = at;
      at += order[k].bytes;
    }
    *header = out;
    *header_bytes = h.n + 8;
    *file_bytes = at;
  }
  free(h.v);
  free(order);
  return rc;
}

int ddp_st_write(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                 ddp_st_fill_fn fill, void *ctx, char *err, size_t errcap) {
  order_key *order = malloc(sizeof *order * (n + 1));
  sbuf h = {0};
  void *scratch = NULL;
  ddp_atomic_file a = {0};
  int rc = -1;
  if (!order) return ddp_fail(err, errcap, "%s: cannot write: out of memory", path);
  if (build_header(path, v, n, meta, nmeta, order, &h, err, errcap)) goto out;
  uint64_t most = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!v[order[k].idx].data && order[k].bytes > most) most = order[k].bytes;
  if (most && (!fill || most > SIZE_MAX || !(scratch = malloc((size_t)most)))) {
    ddp_fail(err, errcap, "%s: cannot write: %s", path, fill ? "out of memory" : "an entry has no data");
    goto out;
  }
  if (ddp_atomic_open(&a, path, err, errcap)) goto out;
  uint8_t len8[8];
  ddp_put_le64(len8, (uint64_t)h.n);
  fwrite(len8, 1, 8, a.f);
  fwrite(h.v, 1, h.n, a.f);
  for (uint32_t k = 0; k < n && !ferror(a.f); k++) {
    const void *src = v[order[k].idx].data;
    if (!order[k].bytes) continue;
    if (!src && fill(ctx, order[k].idx, scratch, err, errcap)) goto out;
    fwrite(src ? src : scratch, 1, (size_t)order[k].bytes, a.f);
  }
  rc = ddp_atomic_commit(&a, err, errcap); /* reports a failed write */
out:
  ddp_atomic_abort(&a);
  free(scratch);
  free(h.v);
  free(order);
  return rc;
}

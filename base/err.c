/* base/err.c: ddp_fail and the checked allocators (see err.h). */
#include "err.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *progname = "ddpc";

void ddp_set_progname(const char *name) { progname = name; }

int ddp_fail(char *err, size_t errcap, const char *fmt, ...) {
  if (err && errcap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
    for (char *c = err; *c; c++)
      if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
      else if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  return -1;
}

static _Noreturn void out_of_memory(size_t n, const char *file, int line) {
  fprintf(stderr, "%s: out of memory (%zu bytes) at %s:%d\n", progname, n, file, line);
  exit(1);
}

void ddp_out_of_memory(const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: out of memory %s\n", progname, what);
  exit(1);
}

void *ddp_xmalloc_at(size_t n, const char *file, int line) {
  void *p = malloc(n ? n : 1);
  if (!p) out_of_memory(n, file, line);
  return p;
}

void *ddp_xcalloc_at(size_t count, size_t size, const char *file, int line) {
  if (size && count > SIZE_MAX / size) out_of_memory(SIZE_MAX, file, line);
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) out_of_memory(count * size, file, line);
  return p;
}

void *ddp_xrealloc_at(void *p, size_t n, const char *file, int line) {
  void *q = realloc(p, n ? n : 1);
  if (!q) out_of_memory(n, file, line);
  return q;
}

char *ddp_xstrdup_at(const char *s, const char *file, int line) {
  size_t n = strlen(s) + 1;
  char *d = ddp_xmalloc_at(n, file, line);
  memcpy(d, s, n);
  return d;
}

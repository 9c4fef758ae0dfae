/* plan/errfmt.c: see errfmt.h. */
#include "errfmt.h"
#include <stdarg.h>
#include <stdio.h>

int ddp_fail(char *err, size_t cap, const char *fmt, ...) {
  if (err && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
  }
  return -1;
}

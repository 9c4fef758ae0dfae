/* plan/errfmt.h: the one-line error convention shared by the compiler and the runtime: format into the
 * caller's buffer (when given) and return -1. */
#ifndef DDP_ERRFMT_H
#define DDP_ERRFMT_H
#include <stddef.h>
__attribute__((format(printf, 3, 4))) int ddp_fail(char *err, size_t cap, const char *fmt, ...);
#endif

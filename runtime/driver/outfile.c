/* runtime/driver/outfile.c: see outfile.h. */
#include "outfile.h"
#include "err.h"
#include <errno.h>
#include <string.h>

FILE *ddp_out_open(const char *path, char *err, size_t errcap) {
  FILE *f = fopen(path, "w");
  if (!f) ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno));
  return f;
}

int ddp_out_check(FILE *f, const char *path, char *err, size_t errcap) {
  errno = 0;
  if (fflush(f) == 0 && !ferror(f)) return 0;
  return ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
}

int ddp_out_close(FILE *f, const char *path, char *err, size_t errcap) {
  if (!f) return 0;
  int rc = ddp_out_check(f, path, err, errcap);
  errno = 0;
  if (fclose(f) != 0 && rc == 0) rc = ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
  return rc;
}

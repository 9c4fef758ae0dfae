/* base/cache_dir.c: see cache_dir.h. */
#include "cache_dir.h"
#include "param.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *ddp_cache_dir(const char *sub, char *buf, size_t cap) {
  const char *d = ddp_param_path(PARAM_CACHE_DIR);
  int n;
  if (d && *d)
    n = snprintf(buf, cap, "%s", d);
  else if ((d = getenv("XDG_CACHE_HOME")) && *d)
    n = snprintf(buf, cap, "%s/ddpc", d);
  else if ((d = getenv("HOME")) && *d)
    n = snprintf(buf, cap, "%s/.cache/ddpc", d);
  else
    return NULL;
  if (n < 0 || (size_t)n >= cap) return NULL;
  if (sub && *sub) {
    int m = snprintf(buf + n, cap - (size_t)n, "/%s", sub);
    if (m < 0 || (size_t)(n + m) >= cap) return NULL;
  }
  /* mkdir -p */
  for (char *s = buf + 1; *s; s++) {
    if (*s == '/') {
      *s = 0;
      mkdir(buf, 0755);
      *s = '/';
    }
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) return NULL;
  return buf;
}

/* base/share_dir.c: see share_dir.h. */
#include "share_dir.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ddp_installed_dir(const char *name, char *buf, size_t cap) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0 || (size_t)n >= sizeof exe - 1) return NULL;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return NULL;
  *slash = 0; /* the binary's folder, e.g. <prefix>/bin */
  int m = snprintf(buf, cap, "%s/../share/ddpc/%s", exe, name);
  return m < 0 || (size_t)m >= cap ? NULL : buf;
}

const char *ddp_share_dir(const char *name, const char *override, const char *build_default, char *buf,
                          size_t cap) {
  struct stat st;
  if (override && *override) {
    snprintf(buf, cap, "%s", override);
    return buf;
  }
  if (ddp_installed_dir(name, buf, cap) && stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) return buf;
  snprintf(buf, cap, "%s", build_default);
  return buf;
}

/* base/args.c: see args.h. */
#include "args.h"
#include "err.h"
#include "file.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ddp_parse_i64(const char *text, int64_t lo, int64_t hi, const char *name, int64_t *out, char *err,
                  size_t errcap) {
  const char *s = text ? text : "";
  /* strtoll accepts leading spaces and a '+': a command-line number is digits with an optional '-'. */
  int ok = (s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9');
  char *end = NULL;
  errno = 0;
  long long v = ok ? strtoll(s, &end, 10) : 0;
  if (!ok || errno == ERANGE || *end || v < lo || v > hi)
    return ddp_fail(err, errcap, "%s: '%.60s' is not an integer in %lld..%lld", name, s, (long long)lo,
                    (long long)hi);
  *out = (int64_t)v;
  return 0;
}

int ddp_parse_double(const char *text, double lo, int lo_open, double hi, const char *name, double *out,
                     char *err, size_t errcap) {
  const char *s = text ? text : "";
  int ok = (s[0] >= '0' && s[0] <= '9') || s[0] == '.' || (s[0] == '-' && s[1] && s[1] != ' ');
  char *end = NULL;
  errno = 0;
  double v = ok ? strtod(s, &end) : NAN;
  if (!ok || errno == ERANGE || *end || !isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi))
    return ddp_fail(err, errcap, "%s: '%.60s' is not a number in %s%.15g, %.15g]", name, s, lo_open ? "(" : "[", lo,
                    hi);
  *out = v;
  return 0;
}

int ddp_parse_bytes(const char *text, const char *name, uint64_t *out, char *err, size_t errcap) {
  static const struct { const char *unit; double scale; } units[] = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  const char *s = text ? text : "";
  char *end = NULL;
  errno = 0;
  double v = ((s[0] >= '0' && s[0] <= '9') || s[0] == '.') ? strtod(s, &end) : NAN;
  if (end && errno != ERANGE && isfinite(v))
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
      if (!strcmp(end, units[k].unit) && v * units[k].scale >= 1 && v * units[k].scale <= 1152921504606846976.0) {
        *out = (uint64_t)(v * units[k].scale);
        return 0;
      }
  return ddp_fail(err, errcap, "%s: '%.60s' is not a size such as 80GiB or 141GB", name, s);
}

int ddp_check_list(const char *what, const char *text, char *err, size_t errcap) {
  const size_t n = strlen(text);
  if (n && (text[0] == ',' || text[n - 1] == ',' || strstr(text, ",,")))
    return ddp_fail(err, errcap, "%s: an empty item in '%s'", what, text);
  return 0;
}

int ddp_check_output(const char *what, const char *out, const char *const *inputs, const char *const *names,
                     int n, int allow_stream, char *err, size_t errcap) {
  if (!out) return 0;
  if (!*out) return ddp_fail(err, errcap, "%s: an empty path", what);
  struct stat st;
  int exists = stat(out, &st) == 0;
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) continue;
    if (exists ? ddp_same_file(out, inputs[i]) : strcmp(out, inputs[i]) == 0)
      return ddp_fail(err, errcap, "%s: %s is the same file as the %s; refused", what, out, names[i]);
  }
  if (exists && !S_ISREG(st.st_mode) && !(allow_stream && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))))
    return ddp_fail(err, errcap, "%s: %s exists and is not a regular file", what, out);
  return 0;
}

int ddp_check_output_folder(const char *what, const char *path, char *err, size_t errcap) {
  struct stat st;
  if (!path || stat(path, &st) == 0) return 0; /* exists: ddp_check_output checks what it is */
  char folder[4200];
  if (ddp_path_folder(path, folder, sizeof folder)) return ddp_fail(err, errcap, "%s: the path is too long", what);
  if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode))
    return ddp_fail(err, errcap, "%s %s: its folder %s does not exist", what, path, folder);
  if (access(folder, W_OK | X_OK) != 0)
    return ddp_fail(err, errcap, "%s %s: its folder %s is not writable: %s", what, path, folder, strerror(errno));
  return 0;
}

int ddp_check_dir_creatable(const char *what, const char *dir, char *err, size_t errcap) {
  struct stat st;
  char at[4200];
  if (snprintf(at, sizeof at, "%s", dir) >= (int)sizeof at) return ddp_fail(err, errcap, "%s: the path is too long", what);
  while (stat(at, &st) != 0) { /* up to the first part that exists: the folders below it will be made */
    if (errno != ENOENT && errno != ENOTDIR) return ddp_fail(err, errcap, "%s %s: %s: %s", what, dir, at, strerror(errno));
    char up[4200];
    if (ddp_path_folder(at, up, sizeof up) || !strcmp(up, at)) break;
    snprintf(at, sizeof at, "%s", up);
  }
  if (stat(at, &st) != 0 || !S_ISDIR(st.st_mode))
    return ddp_fail(err, errcap, "%s %s: %s is not a folder", what, dir, at);
  if (access(at, W_OK | X_OK) != 0)
    return ddp_fail(err, errcap, "%s %s: %s is not writable: %s", what, dir, at, strerror(errno));
  return 0;
}

void ddp_getopt_error(int c, char *const *argv, const struct option *longopts, const char *prog, char *err,
                      size_t errcap) {
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  if (optopt && !(arg[0] == '-' && arg[1] == '-')) { /* a short option */
    if (c == ':') ddp_fail(err, errcap, "-%c needs a value", optopt);
    else ddp_fail(err, errcap, "unknown option '-%c' (see %s --help)", optopt, prog);
    return;
  }
  size_t n = strcspn(arg, "=");
  if (c == ':') {
    ddp_fail(err, errcap, "%.*s needs a value", (int)n, arg);
    return;
  }
  for (const struct option *o = longopts; arg[n] == '=' && o && o->name; o++)
    if (o->has_arg == no_argument && strlen(o->name) == n - 2 && !strncmp(o->name, arg + 2, n - 2)) {
      ddp_fail(err, errcap, "%.*s takes no value, got '%s'", (int)n, arg, arg + n + 1);
      return;
    }
  int prefixed = 0; /* getopt_long takes an unambiguous prefix: several matches make it ambiguous */
  for (const struct option *o = longopts; n > 2 && o && o->name; o++) prefixed += !strncmp(o->name, arg + 2, n - 2);
  if (prefixed > 1) ddp_fail(err, errcap, "option '%.*s' is ambiguous (see %s --help)", (int)n, arg, prog);
  else ddp_fail(err, errcap, "unknown option '%.*s' (see %s --help)", (int)n, arg, prog);
}

/* tests/fuzz/fuzz_util.c: the fuzz targets' private temporary folder, file writing and invariant checks
 * (fuzz_util.h). */
#include "fuzz_util.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[4096];

static void remove_tmp_dir(void) {
  DIR *d = opendir(tmp_dir);
  if (!d) return;
  struct dirent *e;
  char path[8300];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", tmp_dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(tmp_dir);
}

const char *fuzz_tmp_dir(void) {
  if (tmp_dir[0]) return tmp_dir;
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/ddp-fuzz.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmp_dir)) {
    perror("fuzz: mkdtemp");
    abort();
  }
  atexit(remove_tmp_dir);
  return tmp_dir;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
  static char path[8][4300];
  static int slot;
  char *p = path[slot++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", fuzz_tmp_dir(), name);
  FILE *f = fopen(p, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror("fuzz: writing the input file");
    abort();
  }
  return p;
}

void fuzz_check_message(const char *who, const char *err) {
  if (!err || !err[0]) fuzz_die(who, "failed without a message");
  if (strchr(err, '\n')) fuzz_die(who, "failed with a message of more than one line");
}

_Noreturn void fuzz_die(const char *what, const char *detail) {
  fprintf(stderr, "fuzz invariant broken: %s: %s\n", what, detail ? detail : "");
  abort();
}

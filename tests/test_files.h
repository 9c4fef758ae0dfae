/* tests/test_files.h: scratch-file helpers the C tests share: a per-test temporary folder (`tmpdir`,
 * created by the test with mkdtemp), paths inside it, and reading a whole file. */
#ifndef DDP_TEST_FILES_H
#define DDP_TEST_FILES_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static char tmpdir[512];

/* A path inside tmpdir; the last 8 results stay valid. */
static inline const char *tmp_path(const char *name) {
  static char buf[8][640];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
  return b;
}

/* The whole file, malloc'd (one spare byte), its length in *n; NULL when it cannot be opened. */
static inline uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *v = malloc((size_t)len + 1);
  *n = fread(v, 1, (size_t)len, f);
  fclose(f);
  return v;
}
#endif

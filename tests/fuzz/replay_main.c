/* tests/fuzz/replay_main.c: main() for the fuzz targets in the normal build: runs LLVMFuzzerTestOneInput
 * once on every file named (folders: every regular file inside, in name order), as libFuzzer does when
 * given files. A target aborts on a broken invariant, and under the asan preset on a memory error, so a
 * zero exit means every input replayed cleanly. Prints how many inputs ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: %s: cannot open\n", path);
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fprintf(stderr, "replay: %s: out of memory\n", path);
      fclose(f);
      return -1;
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    uint8_t *more = realloc(buf, cap * 2);
    if (!more) free(buf);
    buf = more;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    fprintf(stderr, "replay: %s: read error\n", path);
    return -1;
  }
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  /* An exact-size copy, so a read past the input is caught by ASan as it is under libFuzzer. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: %s: cannot open folder\n", dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **more = realloc(names, cap * sizeof *names);
      if (!more) {
        rc = -1;
        break;
      }
      names = more;
    }
    if (!(names[n] = strdup(e->d_name))) {
      rc = -1;
      break;
    }
    n++;
  }
  closedir(d);
  if (names) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat st;
    if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      if (replay_file(path)) rc = -1;
      else (*count)++;
    }
    free(names[i]);
  }
  free(names);
  if (rc) fprintf(stderr, "replay: %s: could not list the folder\n", dir);
  return rc;
}

int main(int argc, char **argv) {
  int count = 0, rc = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : (replay_file(argv[i]) ? -1 : (count++, 0))) {
      rc = 1;
    }
  }
  printf("replay: %d inputs ran\n", count);
  return rc;
}

/* base/file.c: see file.h. */
#include "file.h"
#include "err.h"
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_uint tmp_counter;

int ddp_path_folder(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path); /* ".", "/" or the part before */
  if (n >= cap) return -1;
  memcpy(out, slash ? path : ".", n);
  out[n] = 0;
  return 0;
}

const char *ddp_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int ddp_fsync_parent(const char *path) {
  char dir[4096];
  if (ddp_path_folder(path, dir, sizeof dir)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  int saved = errno;
  close(fd);
  errno = saved;
  /* Some file systems do not support fsync on folders: that is not a write failure. */
  return rc != 0 && errno != EINVAL && errno != EROFS ? -1 : 0;
}

int ddp_atomic_open(ddp_atomic_file *a, const char *path, char *err, size_t errcap) {
  memset(a, 0, sizeof *a);
  struct stat st; /* a device, FIFO or folder is never replaced by the rename (as root it could be /dev/full) */
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return ddp_fail(err, errcap, "%s: exists and is not a regular file", path);
  size_t n = strlen(path) + 48;
  a->path = strdup(path);
  a->tmp = malloc(n);
  if (!a->path || !a->tmp) {
    ddp_atomic_abort(a);
    return ddp_fail(err, errcap, "%s: out of memory", path);
  }
  snprintf(a->tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
  int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 || !(a->f = fdopen(fd, "wb"))) {
    int saved = errno;
    if (fd >= 0) close(fd);
    ddp_fail(err, errcap, "%s: cannot create %s: %s", path, a->tmp, strerror(saved));
    free(a->tmp);
    a->tmp = NULL;
    ddp_atomic_abort(a);
    return -1;
  }
  return 0;
}

int ddp_atomic_commit(ddp_atomic_file *a, char *err, size_t errcap) {
  if (!a->f) return ddp_fail(err, errcap, "%s: no open file to commit", a->path ? a->path : "?");
  int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
  int saved = errno;
  if (fclose(a->f) != 0 && !bad) {
    bad = 1;
    saved = errno;
  }
  a->f = NULL;
  int rc = 0;
  if (bad) {
    rc = ddp_fail(err, errcap, "%s: cannot write %s: %s", a->path, a->tmp, strerror(saved ? saved : EIO));
  } else if (rename(a->tmp, a->path) != 0) {
    rc = ddp_fail(err, errcap, "%s: cannot rename %s into place: %s", a->path, a->tmp, strerror(errno));
  } else {
    free(a->tmp);
    a->tmp = NULL; /* renamed: nothing to remove */
    if (ddp_fsync_parent(a->path) != 0)
      rc = ddp_fail(err, errcap, "%s: cannot fsync its folder: %s", a->path, strerror(errno));
  }
  ddp_atomic_abort(a);
  return rc;
}

void ddp_atomic_abort(ddp_atomic_file *a) {
  if (a->f) fclose(a->f);
  if (a->tmp) unlink(a->tmp);
  free(a->tmp);
  free(a->path);
  memset(a, 0, sizeof *a);
}

int ddp_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errcap) {
  ddp_atomic_file a;
  if (ddp_atomic_open(&a, path, err, errcap)) return -1;
  if (n && fwrite(data, 1, n, a.f) != n) {
    int saved = errno;
    ddp_atomic_abort(&a);
    return ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
  }
  return ddp_atomic_commit(&a, err, errcap);
}

int ddp_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

char *ddp_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    ddp_fail(err, errcap, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    ddp_fail(err, errcap, "%s: not a regular file", path);
    return NULL;
  }
  if ((unsigned long long)st.st_size > max_bytes) {
    close(fd);
    ddp_fail(err, errcap, "%s: %lld bytes is more than the %zu this file may have", path,
             (long long)st.st_size, max_bytes);
    return NULL;
  }
  size_t n = (size_t)st.st_size;
  char *buf = malloc(n + 1);
  if (!buf) {
    close(fd);
    ddp_fail(err, errcap, "%s: out of memory (%zu bytes)", path, n + 1);
    return NULL;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != n) {
    free(buf);
    ddp_fail(err, errcap, "%s: cannot read (%zu of %zu bytes)", path, got, n);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

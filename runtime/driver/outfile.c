/* runtime/driver/outfile.c: see outfile.h. */
#include "outfile.h"
#include "err.h"
#include "stop.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A FIFO opens for writing only once a reader has it open, and open() would wait for one through a stop
 * signal (SA_RESTART): it is opened without blocking, tried every 50 ms until a reader comes or a stop
 * signal asks the run to end. */
static FILE *open_fifo(const char *path, char *err, size_t errcap) {
  for (;;) {
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      int fl = fcntl(fd, F_GETFL);
      FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "w") : NULL;
      if (!f) {
        ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
      }
      return f;
    }
    if (errno != ENXIO && errno != EINTR) return ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno)), NULL;
    if (ddp_stop_signal())
      return ddp_fail(err, errcap, "%s: a FIFO no reader opened before the stop signal", path), NULL;
    struct timespec nap = {0, 50 * 1000000L};
    nanosleep(&nap, NULL);
  }
}

FILE *ddp_out_open(const char *path, char *err, size_t errcap) {
  struct stat st; /* a regular file is opened for reading too, so a failed write can be cut back (below) */
  const int exists = stat(path, &st) == 0;
  if (exists && S_ISFIFO(st.st_mode)) return open_fifo(path, err, errcap);
  const int regular = !exists || S_ISREG(st.st_mode);
  FILE *f = fopen(path, regular ? "w+" : "w");
  if (!f && regular && errno == EACCES) f = fopen(path, "w"); /* write-only: no cut-back (cut_to_last_line) */
  if (!f) ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno));
  return f;
}

/* After a failed write: the file cut back to its last complete line (just after its last '\n', or empty),
 * so a reader never meets half a JSON object. Best effort: a device or a pipe is left as it is. */
static void cut_to_last_line(FILE *f) {
  __fpurge(f); /* what is still buffered is part of the line that failed: fclose must not write it after the cut */
  const int fd = fileno(f);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  off_t end = st.st_size;
  char buf[4096];
  while (end > 0) {
    const off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
    const ssize_t got = pread(fd, buf, (size_t)(end - from), from);
    if (got != end - from) return; /* unreadable (opened write-only): leave it */
    for (ssize_t i = got - 1; i >= 0; i--)
      if (buf[i] == '\n') {
        if (ftruncate(fd, from + i + 1) != 0) return;
        return;
      }
    end = from;
  }
  if (ftruncate(fd, 0) != 0) return;
}

int ddp_out_check(FILE *f, const char *path, char *err, size_t errcap) {
  int why = errno; /* a failed buffered write set the stream's error flag and errno (ENOSPC, EPIPE, ...) */
  if (!ferror(f)) {
    errno = 0;
    if (fflush(f) == 0) return 0;
    why = errno;
  }
  cut_to_last_line(f);
  return ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(why ? why : EIO));
}

int ddp_out_close(FILE *f, const char *path, char *err, size_t errcap) {
  if (!f) return 0;
  int rc = ddp_out_check(f, path, err, errcap);
  errno = 0;
  if (fclose(f) != 0 && rc == 0) rc = ddp_fail(err, errcap, "%s: cannot write: %s", path, strerror(errno ? errno : EIO));
  return rc;
}

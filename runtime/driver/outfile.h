/* runtime/driver/outfile.h: a streamed output file (the metrics JSON lines) whose every write is checked
 * up to fclose: a full disk, /dev/full or a closed pipe is an error naming the file, never a silent loss. */
#ifndef DDP_OUTFILE_H
#define DDP_OUTFILE_H
#include <stddef.h>
#include <stdio.h>

/* fopen(path, "w") ("w+" for a regular file, so a failed write can be cut back); NULL with "PATH: cannot
 * write: REASON". */
FILE *ddp_out_open(const char *path, char *err, size_t errcap);
/* 0 while every write so far succeeded (flushes first), else -1 with "PATH: cannot write: REASON" (the
 * failed write's errno: "No space left on device"), the file cut back to its last complete line. */
int ddp_out_check(FILE *f, const char *path, char *err, size_t errcap);
/* Flushes and closes (always closes); 0, or -1 with one line when a write or the close failed. A NULL f is 0. */
int ddp_out_close(FILE *f, const char *path, char *err, size_t errcap);
#endif

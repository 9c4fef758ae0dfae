/* base/file.h: files written all-or-nothing and files read with their kind checked. Every output of ddpc
 * and ddprun (plan.bin, checkpoints, traces, kernel caches) goes through ddp_atomic_*: the bytes go to a
 * temporary file in the destination's folder, are flushed and fsynced, the file is closed with its error
 * checked, renamed over the destination and the folder fsynced, so a reader sees the old file or the
 * whole new one, never a part. On any failure the temporary file is removed. */
#ifndef DDP_FILE_H
#define DDP_FILE_H
#include <stddef.h>
#include <stdio.h>

typedef struct ddp_atomic_file {
  FILE *f;          /* write here */
  char *path;       /* destination */
  char *tmp;        /* temporary name: <path>.tmp.<pid>.<n> */
} ddp_atomic_file;

/* Opens a temporary file beside `path` (refused when `path` exists and is not a regular file); 0 or -1. */
int ddp_atomic_open(ddp_atomic_file *a, const char *path, char *err, size_t errcap);
/* Flushes, fsyncs, closes (checked), renames into place, fsyncs the folder; 0 or -1 (temporary removed). */
int ddp_atomic_commit(ddp_atomic_file *a, char *err, size_t errcap);
/* Abandons the write: closes and removes the temporary file. Safe on a zeroed or committed struct. */
void ddp_atomic_abort(ddp_atomic_file *a);
/* The whole cycle for one buffer. */
int ddp_write_atomic(const char *path, const void *data, size_t n, char *err, size_t errcap);

/* The folder a file path names, into out[cap]: "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/". 0, or -1 when it
 * does not fit. */
int ddp_path_folder(const char *path, char *out, size_t cap);

/* The file name a path ends in: after its last '/' ("a/b/c" -> "c"; "c" -> "c"). */
const char *ddp_path_base(const char *path);

/* fsyncs the folder that holds `path` (so a rename in it is durable); 0 or -1 with errno set. */
int ddp_fsync_parent(const char *path);

/* 1 when a and b name the same existing file (same device and inode), else 0. */
int ddp_same_file(const char *a, const char *b);

/* Reads a whole regular file (refusing FIFOs, devices and folders, and files over max_bytes) into a
 * NUL-terminated malloc'd buffer; *len gets the size. NULL with one line naming the path. */
char *ddp_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t errcap);
#endif

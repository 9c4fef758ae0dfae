/* runtime/io/ckpt_store.c: the checkpoint folder (checkpoint.h, docs/CHECKPOINTS.md): one folder per step,
 * written whole under a temporary name and renamed, so a crash at any moment leaves every complete
 * checkpoint intact:
 *   ROOT/step-000123/{model.safetensors, optimizer*.safetensors, MANIFEST}
 *   ROOT/latest                  "step-000123\n", the newest complete one (for people and tools)
 *   ROOT/.tmp-step-000123-<pid>/ while it is written (removed at the next start when a crash left it)
 * Save (every rank calls it; the ranks agree through the executor's host sum): rank 0 makes the temporary
 * folder, every rank writes its files into it (each fsynced), rank 0 writes MANIFEST (size and CRC32 of
 * every file, fsynced with the folder), renames the folder to step-N, fsyncs ROOT, rewrites latest, then
 * removes the complete checkpoints older than the K newest (renamed to .tmp-* first, then deleted).
 * Resume: rank 0 picks the newest step folder whose MANIFEST matches its files (a bad one is named and the
 * previous tried), tells the others its step, and every rank loads it. */
#include "checkpoint.h"
#include "err.h"
#include "file.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CK_MANIFEST "MANIFEST"
#define CK_MAGIC "ddpc checkpoint 1"
#define CK_MAX_FILES 8192 /* the model file and one optimizer shard per rank */

/* ---- small file-system helpers ---------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* rm -rf (no error when absent). */
static int remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return remove(path);
  return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int fsync_path(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int rc = fsync(fileno(f));
  fclose(f);
  return rc;
}

/* "step-000123" -> 123; -1 when the name is not a step folder's. */
static int64_t step_of_name(const char *name) {
  if (strncmp(name, "step-", 5) != 0 || !name[5]) return -1;
  int64_t v = 0;
  for (const char *s = name + 5; *s; s++) {
    if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  char canonical[32]; /* only the names save gives ("step-000123"): "step-2" is a folder of someone else's */
  snprintf(canonical, sizeof canonical, "step-%06lld", (long long)v);
  return strcmp(name, canonical) ? -1 : v;
}

static void step_dir(const char *root, int64_t step, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/step-%06lld", root, (long long)step);
}

/* The step folders under root, newest first (*n of them; NULL with *n = 0 when none or unreadable). */
static int64_t *list_steps(const char *root, int *n) {
  *n = 0;
  DIR *d = opendir(root);
  if (!d) return NULL;
  int64_t *v = NULL;
  int cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int64_t s = step_of_name(e->d_name);
    if (s < 0) continue;
    if (*n == cap) {
      int64_t *nv = realloc(v, sizeof *v * (size_t)(cap = cap ? cap * 2 : 16));
      if (!nv) break;
      v = nv;
    }
    v[(*n)++] = s;
  }
  closedir(d);
  for (int i = 1; i < *n; i++) /* insertion sort, newest first */
    for (int j = i; j > 0 && v[j] > v[j - 1]; j--) {
      int64_t t = v[j];
      v[j] = v[j - 1], v[j - 1] = t;
    }
  return v;
}

/* CRC32 (zlib) and size of a file. */
static int file_crc(const char *path, uint32_t *crc, uint64_t *size, char *err, size_t errcap) {
  FILE *f = fopen(path, "rb");
  if (!f) return ddp_fail(err, errcap, "%s: cannot open: %s", path, strerror(errno));
  static __thread unsigned char buf[1 << 16];
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t total = 0;
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    c = crc32(c, buf, (uInt)got);
    total += got;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) return ddp_fail(err, errcap, "%s: read error", path);
  *crc = (uint32_t)c;
  *size = total;
  return 0;
}

/* ---- stray temporaries ---------------------------------------------------------------------------------- */

int64_t ddp_ckpt_newest_name(const char *root) {
  int n;
  int64_t *steps = list_steps(root, &n), newest = n > 0 ? steps[0] : -1;
  free(steps);
  return newest;
}

/* Is name one of the temporaries save gives (".tmp-step-000123-<pid>", ".tmp-old-step-...",
 * ".tmp-replaced-step-...", "latest.tmp.<...>")? A user's own ".tmp-notes" is not. */
static bool is_stray(const char *name) {
  static const char *const prefixes[] = {".tmp-step-", ".tmp-old-step-", ".tmp-replaced-step-"};
  for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
    size_t n = strlen(prefixes[k]);
    if (!strncmp(name, prefixes[k], n) && name[n] >= '0' && name[n] <= '9') return true;
  }
  return !strncmp(name, "latest.tmp.", 11) && name[11] >= '0' && name[11] <= '9'; /* ddp_write_atomic's <pid>.<n> */
}

int ddp_ckpt_lock(const char *root, bool create, char *err, size_t errcap) {
  struct stat st;
  if (!create && stat(root, &st) != 0) return INT_MAX; /* nothing to resume: the resume says so */
  if (ddp_ckpt_mkdir_p(root, err, errcap)) return -1;
  char path[4200];
  snprintf(path, sizeof path, "%s/.lock", root);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ddp_fail(err, errcap, "%s: cannot open the checkpoint folder's lock: %s", path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
      return ddp_fail(err, errcap, "--checkpoint-dir %s is in use by another run (it holds %s): one run per folder",
                      root, path);
    return ddp_fail(err, errcap, "%s: cannot lock the checkpoint folder: %s", path, strerror(e));
  }
  return fd;
}

void ddp_ckpt_unlock(int fd) {
  if (fd >= 0 && fd != INT_MAX) close(fd); /* the lock goes with the descriptor */
}

int ddp_ckpt_clean_stray(const char *root, bool quiet, char *err, size_t errcap) {
  DIR *d = opendir(root);
  if (!d) return 0; /* nothing written yet */
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    bool stray = is_stray(e->d_name);
    if (!stray) continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, e->d_name);
    if (remove_tree(path) != 0) {
      rc = ddp_fail(err, errcap, "%s: cannot remove a stray temporary of an interrupted checkpoint: %s", path,
                    strerror(errno));
      break;
    }
    if (!quiet) printf("removed %s (left by an interrupted checkpoint)\n", path);
  }
  closedir(d);
  return rc;
}

/* ---- MANIFEST --------------------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Writes dir/MANIFEST for every *.safetensors file in dir (sorted), then fsyncs dir. */
static int write_manifest(const char *dir, int64_t step, int world, char *err, size_t errcap) {
  DIR *d = opendir(dir);
  if (!d) return ddp_fail(err, errcap, "%s: cannot read the checkpoint folder: %s", dir, strerror(errno));
  char **names = calloc(CK_MAX_FILES, sizeof *names);
  int n = 0, rc = names ? 0 : ddp_fail(err, errcap, "%s: out of memory for the MANIFEST", dir);
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 12 || strcmp(e->d_name + len - 12, ".safetensors")) continue;
    if (n == CK_MAX_FILES) rc = ddp_fail(err, errcap, "%s: more than %d files", dir, CK_MAX_FILES);
    else if (!(names[n++] = strdup(e->d_name))) rc = ddp_fail(err, errcap, "%s: out of memory", dir);
  }
  closedir(d);
  if (rc) {
    for (int k = 0; k < n; k++) free(names[k]);
    free(names);
    return -1;
  }
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  size_t cap = 128 + (size_t)n * 300, len = 0;
  char *text = malloc(cap);
  if (!text) rc = ddp_fail(err, errcap, "%s: out of memory for the MANIFEST", dir);
  if (text) len += (size_t)snprintf(text, cap, "%s\nstep %lld\nworld %d\n", CK_MAGIC, (long long)step, world);
  for (int k = 0; k < n && rc == 0; k++) {
    char path[4400];
    uint32_t crc;
    uint64_t size;
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    rc = file_crc(path, &crc, &size, err, errcap);
    if (rc == 0) len += (size_t)snprintf(text + len, cap - len, "file %.255s %" PRIu64 " %08" PRIx32 "\n", names[k], size, crc);
  }
  for (int k = 0; k < n; k++) free(names[k]);
  free(names);
  if (rc == 0) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, CK_MANIFEST);
    rc = ddp_write_atomic(path, text, len, err, errcap); /* fsyncs the file and the folder */
  }
  free(text);
  return rc;
}

/* 0 when dir/MANIFEST is well formed and every file it lists has its size and CRC32; else -1 with why. */
static int check_manifest(const char *dir, int64_t *step, char *err, size_t errcap) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, CK_MANIFEST);
  size_t len;
  char *text = ddp_read_file(path, 1 << 20, &len, err, errcap);
  if (!text) return -1;
  int rc = 0, files = 0;
  long long st = -1;
  int world = 0;
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  if (!line || strcmp(line, CK_MAGIC) != 0) rc = ddp_fail(err, errcap, "%s: not a ddpc checkpoint manifest", path);
  line = rc ? NULL : strtok_r(NULL, "\n", &save);
  if (!rc && (!line || sscanf(line, "step %lld", &st) != 1 || st < 0))
    rc = ddp_fail(err, errcap, "%s: no step line", path);
  line = rc ? NULL : strtok_r(NULL, "\n", &save);
  if (!rc && (!line || sscanf(line, "world %d", &world) != 1 || world < 1))
    rc = ddp_fail(err, errcap, "%s: no world line", path);
  while (!rc && (line = strtok_r(NULL, "\n", &save))) {
    char name[256], fpath[4500];
    unsigned long long size;
    unsigned crc;
    if (sscanf(line, "file %255s %llu %x", name, &size, &crc) != 3 || strchr(name, '/')) {
      rc = ddp_fail(err, errcap, "%s: malformed line '%.80s'", path, line);
      break;
    }
    snprintf(fpath, sizeof fpath, "%s/%s", dir, name);
    uint32_t got;
    uint64_t gsize;
    if (file_crc(fpath, &got, &gsize, err, errcap)) rc = -1;
    else if (gsize != size)
      rc = ddp_fail(err, errcap, "%s: %llu bytes, MANIFEST says %llu", fpath, (unsigned long long)gsize, size);
    else if (got != crc)
      rc = ddp_fail(err, errcap, "%s: CRC32 %08x, MANIFEST says %08x", fpath, (unsigned)got, crc);
    files++;
  }
  if (!rc && files == 0) rc = ddp_fail(err, errcap, "%s: lists no files", path);
  free(text);
  if (!rc) *step = st;
  return rc;
}

/* ---- save ------------------------------------------------------------------------------------------------- */

/* Every rank's status summed: 0 when all succeeded. On a failure elsewhere, err says which rank count. */
static int agree(ddp_exec *x, int mine, const char *what, char *err, size_t errcap) {
  double v = mine ? 1 : 0;
  char e2[256];
  if (ddp_exec_allreduce(x, &v, 1, e2, sizeof e2)) {
    if (!mine) ddp_fail(err, errcap, "%s", e2);
    return -1;
  }
  if (mine) return -1;
  if (v > 0) return ddp_fail(err, errcap, "checkpoint: %s failed on %.0f other rank(s)", what, v);
  return 0;
}

/* Rank 0: latest, then the complete checkpoints beyond the `keep` newest at or before `step`. */
static int finish_save(const char *root, int64_t step, int keep, char *err, size_t errcap) {
  char path[4200], text[64];
  snprintf(path, sizeof path, "%s/latest", root);
  int n = snprintf(text, sizeof text, "step-%06lld\n", (long long)step);
  if (ddp_write_atomic(path, text, (size_t)n, err, errcap)) return -1;
  if (keep <= 0) return 0;
  int count;
  int64_t *steps = list_steps(root, &count);
  int kept = 0, rc = 0;
  for (int k = 0; k < count && rc == 0; k++) {
    if (steps[k] > step || kept++ < keep) continue;
    char old[4200], gone[4300];
    step_dir(root, steps[k], old, sizeof old);
    snprintf(gone, sizeof gone, "%s/.tmp-old-step-%06lld-%ld", root, (long long)steps[k], (long)getpid());
    if (rename(old, gone) != 0 || remove_tree(gone) != 0)
      rc = ddp_fail(err, errcap, "%s: cannot remove an old checkpoint: %s", old, strerror(errno));
  }
  free(steps);
  return rc;
}

int ddp_ckpt_save_step(ddp_exec *x, const char *root, int64_t step, int keep, char *err, size_t errcap) {
  bool lead = x->rank == 0;
  if (x->v->sync && x->v->sync(x, err, errcap)) return -1;
  double tag = lead ? (double)getpid() : 0; /* rank 0's pid names the temporary folder on every rank */
  if (ddp_exec_allreduce(x, &tag, 1, err, errcap)) return -1;
  char tmp[4200], final[4200];
  snprintf(tmp, sizeof tmp, "%s/.tmp-step-%06lld-%.0f", root, (long long)step, tag);
  step_dir(root, step, final, sizeof final);
  int rc = 0;
  if (lead) {
    rc = ddp_ckpt_mkdir_p(root, err, errcap);
    if (rc == 0 && remove_tree(tmp) != 0) rc = ddp_fail(err, errcap, "%s: cannot remove: %s", tmp, strerror(errno));
    if (rc == 0 && mkdir(tmp, 0755) != 0) rc = ddp_fail(err, errcap, "%s: cannot create: %s", tmp, strerror(errno));
  }
  if (agree(x, rc, "creating the temporary folder", err, errcap)) return -1;
  rc = ddp_checkpoint_save(x, tmp, step, err, errcap);
  if (agree(x, rc, "writing the checkpoint files", err, errcap)) {
    if (lead) remove_tree(tmp); /* else the next start removes it */
    return -1;
  }
  if (lead) {
    rc = write_manifest(tmp, step, x->world, err, errcap);
    struct stat st;
    char replaced[4300] = "";
    if (rc == 0 && lstat(final, &st) == 0) { /* a checkpoint of this step from before a resume: replace it */
      snprintf(replaced, sizeof replaced, "%s/.tmp-replaced-step-%06lld-%ld", root, (long long)step, (long)getpid());
      if (remove_tree(replaced) != 0 || rename(final, replaced) != 0)
        rc = ddp_fail(err, errcap, "%s: cannot move the old checkpoint aside: %s", final, strerror(errno));
    }
    if (rc == 0 && rename(tmp, final) != 0)
      rc = ddp_fail(err, errcap, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    if (rc == 0 && (fsync_path(final) != 0 || ddp_fsync_parent(final) != 0))
      rc = ddp_fail(err, errcap, "%s: fsync: %s", final, strerror(errno));
    if (rc == 0 && replaced[0] && remove_tree(replaced) != 0)
      rc = ddp_fail(err, errcap, "%s: cannot remove: %s", replaced, strerror(errno));
    if (rc == 0) rc = finish_save(root, step, keep, err, errcap);
    if (rc) remove_tree(tmp);
  }
  return agree(x, rc, "committing the checkpoint", err, errcap);
}

/* ---- resume ----------------------------------------------------------------------------------------------- */

/* Rank 0: the newest complete step under root (-1 and err when none; -2 for a flat legacy checkpoint
 * holding model.safetensors directly in root). */
static int64_t pick(const char *root, char *err, size_t errcap) {
  struct stat st;
  if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ddp_fail(err, errcap, "%s: no checkpoint folder to resume from", root);
    return -1;
  }
  int n;
  int64_t *steps = list_steps(root, &n), chosen = -1;
  for (int k = 0; k < n && chosen < 0; k++) {
    char dir[4200], why[1024];
    int64_t ms;
    step_dir(root, steps[k], dir, sizeof dir);
    int ok = check_manifest(dir, &ms, why, sizeof why) == 0;
    if (ok && ms == steps[k]) {
      chosen = ms;
      break;
    }
    if (ok) snprintf(why, sizeof why, "its %s says step %lld", CK_MANIFEST, (long long)ms);
    /* moved aside, under a name no listing matches: else it would count as one of the --keep-checkpoints
     * newest, and the rotation would remove the good ones below it first */
    char aside[4300], moved[4400] = "";
    int saved = 0;
    for (int v = 0; v < 100 && !moved[0]; v++) {
      if (v == 0) snprintf(aside, sizeof aside, "%s/damaged-step-%06lld", root, (long long)steps[k]);
      else snprintf(aside, sizeof aside, "%s/damaged-step-%06lld.%d", root, (long long)steps[k], v);
      if (access(aside, F_OK) == 0) continue;
      if (rename(dir, aside) == 0) snprintf(moved, sizeof moved, "; moved to %s", aside);
      else saved = errno, v = 100;
    }
    if (!moved[0]) snprintf(moved, sizeof moved, " (not moved aside: %s)", saved ? strerror(saved) : "no free name");
    fprintf(stderr, "ddprun: %s is not a complete checkpoint (%s)%s; %s\n", dir, why, moved,
            k + 1 < n ? "trying the previous one" : "no older one");
  }
  free(steps);
  if (chosen >= 0) return chosen;
  char legacy[4200];
  snprintf(legacy, sizeof legacy, "%s/model.safetensors", root);
  if (n == 0 && stat(legacy, &st) == 0) return -2;
  ddp_fail(err, errcap, "%s: no complete checkpoint to resume from", root);
  return -1;
}

int ddp_ckpt_resume(ddp_exec *x, const char *root, bool quiet, int64_t *steps_done, char *err, size_t errcap) {
  bool lead = x->rank == 0;
  int64_t chosen = 0;
  if (lead) chosen = pick(root, err, errcap);
  double v = lead ? (double)chosen : 0;
  char e2[256];
  if (ddp_exec_allreduce(x, &v, 1, e2, sizeof e2)) {
    if (!lead || chosen != -1) ddp_fail(err, errcap, "%s", e2);
    return -1;
  }
  chosen = (int64_t)v;
  if (chosen == -1) return lead ? -1 : ddp_fail(err, errcap, "rank 0 found no checkpoint to resume from in %s", root);
  char dir[4200];
  if (chosen == -2) snprintf(dir, sizeof dir, "%s", root);
  else step_dir(root, chosen, dir, sizeof dir);
  int64_t got = 0;
  int rc = ddp_checkpoint_load(x, dir, &got, err, errcap);
  if (rc == 0 && chosen >= 0 && got != chosen)
    rc = ddp_fail(err, errcap, "%s: its files say step %lld", dir, (long long)got);
  if (rc == 0) *steps_done = got;
  if (rc == 0 && lead && !quiet) printf("resuming from %s (step %lld)\n", dir, (long long)got);
  return rc;
}

/* runtime/io/checkpoint.c: the files of one checkpoint folder (checkpoint.h) over the executor's read/write
 * (ckpt_store.c arranges the folders; ckpt_plan.c says which tensors hold which elements).
 *   model.safetensors       every parameter under its state name with its full shape;
 *   optimizer.safetensors   "<param>.exp_avg", "<param>.exp_avg_sq" (full shapes) and "optimizer.scalars"
 *                           (with no moments, e.g. SGD, only the scalars);
 * the same names, shapes and bytes whatever the sharding (every sharded level describes its state by
 * pieces). Metadata of every file: {"format": "ddpc", "step": "<steps_done>", "schedule":
 * "<meta.schedule_path>"}.
 * Saving, when every element lives on rank 0 (unsharded plans, one rank): rank 0 streams each file tensor by
 * tensor through ddp_st_write (atomic). When pieces live on other ranks, every rank writes its own elements
 * into one file (the shared-file protocol, docs/CHECKPOINTS.md), with three host sums as barriers:
 *   1. rank 0 creates DIR/<file>.tmp.<pid of rank 0>.shared holding the header, sized to the whole file;
 *   2. every rank pwrites its pieces (rank 0 also the whole tensors) at their offsets, fsyncs, closes;
 *   3. rank 0 renames each file into place and fsyncs DIR.
 * A failure on any rank fails the save on every rank at the next barrier, and rank 0 removes the temporary
 * files. Loading checks every file first (each entry present with its dtype and full shape, no tensor the
 * plan lacks, the files' steps agree) and only then writes into the executor: every rank its whole
 * tensors and its own pieces, read from the mapped file. A strided piece (piece_runs > 1, a tensor-parallel
 * rank's column block) is written and read run by run at its places in the file's tensor. */
#include "checkpoint.h"
#include "ckpt_plan.h"
#include "err.h"
#include "file.h"
#include "safetensors.h"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "F32 [64, 32]" */
static const char *describe(int dtype_ok, const char *dtype, int ndim, const int64_t *shape, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s [", dtype_ok ? dtype : "?");
  for (int d = 0; d < ndim && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

int ddp_ckpt_mkdir_p(const char *dir, char *err, size_t errcap) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    ddp_fail(err, errcap, "%s: checkpoint directory path is too long", dir);
    return -1;
  }
  for (char *s = path + 1;; s++) {
    if (*s != '/' && *s) continue;
    char c = *s;
    *s = 0;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
      ddp_fail(err, errcap, "%s: cannot create checkpoint directory: %s", path, strerror(errno));
      return -1;
    }
    *s = c;
    if (!c) break;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    ddp_fail(err, errcap, "%s: cannot create checkpoint directory: not a directory", dir);
    return -1;
  }
  return 0;
}

static uint64_t entry_bytes(const ck_entry *e) { return e->numel * ddp_dtype_size(e->dtype); }

/* ---- save: one writer (rank 0, or each rank its per-rank file) -------------------------------------------- */

/* The writer's entries for f (NULL with err when a dtype has no safetensors name). */
static ddp_st_entry *st_entries(const ck_file *f, const char *path, char *err, size_t errcap) {
  ddp_st_entry *e = calloc(f->n + 1, sizeof *e);
  if (!e) {
    ddp_fail(err, errcap, "%s: out of memory", path);
    return NULL;
  }
  for (uint32_t k = 0; k < f->n; k++) {
    const ck_entry *c = &f->v[k];
    if (!ddp_st_dtype_name(c->dtype) || c->ndim > DDP_ST_MAX_DIMS) {
      ddp_fail(err, errcap, "%s: tensor '%s' has dtype %s, which safetensors cannot hold", path, c->key,
               ddp_dtype_name(c->dtype));
      free(e);
      return NULL;
    }
    e[k] = (ddp_st_entry){.name = c->key, .dtype = c->dtype, .ndim = c->ndim};
    for (int d = 0; d < c->ndim; d++) e[k].shape[d] = c->shape[d];
  }
  return e;
}

typedef struct fill_ctx {
  ddp_exec *x;
  const ck_file *f;
} fill_ctx;

/* Entry i's bytes from this rank's memory: its whole tensor, or its pieces (all on this rank here). */
static int fill_local(void *ctx, uint32_t i, void *dst, char *err, size_t errcap) {
  fill_ctx *c = ctx;
  const ck_entry *e = &c->f->v[i];
  if (e->whole >= 0) return c->x->v->read(c->x, e->whole, dst, err, errcap);
  size_t esz = ddp_dtype_size(e->dtype);
  for (uint32_t k = 0; k < e->npieces; k++) {
    const ddp_tensor *t = &c->x->plan->tensors[e->pieces[k]];
    if (t->piece_rank != c->x->rank)
      return ddp_fail(err, errcap, "checkpoint: rank %d cannot write piece '%s' of rank %d", c->x->rank, t->name,
                      t->piece_rank);
    if (ddp_piece_runs(t) == 1) {
      if (c->x->v->read(c->x, e->pieces[k], (uint8_t *)dst + (uint64_t)t->piece_first * esz, err, errcap)) return -1;
      continue;
    }
    uint8_t *buf = t->bytes <= SIZE_MAX ? malloc((size_t)t->bytes + 1) : NULL; /* strided: read, then each run */
    if (!buf) return ddp_fail(err, errcap, "rank %d: out of memory for tensor '%s'", c->x->rank, t->name);
    int rc = c->x->v->read(c->x, e->pieces[k], buf, err, errcap);
    uint64_t runs = (uint64_t)ddp_piece_runs(t), rb = t->bytes / runs;
    for (uint64_t j = 0; j < runs && rc == 0; j++)
      memcpy((uint8_t *)dst + ((uint64_t)t->piece_first + j * (uint64_t)t->piece_stride) * esz, buf + j * rb, (size_t)rb);
    free(buf);
    if (rc) return -1;
  }
  return 0;
}

static int save_file(ddp_exec *x, const char *dir, const ck_file *f, const char *const *meta, uint32_t nmeta, char *err,
                     size_t errcap) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, f->name);
  ddp_st_entry *e = st_entries(f, path, err, errcap);
  if (!e) return -1;
  fill_ctx c = {x, f};
  int rc = ddp_st_write(path, e, f->n, meta, nmeta, fill_local, &c, err, errcap);
  free(e);
  return rc;
}

/* ---- save: the shared file, every rank writing its range ---------------------------------------------------- */

typedef struct shared_file {
  const ck_file *f;
  char tmp[4300], final[4200];
  uint64_t *offset; /* file offset of each entry's data */
  void *header;
  size_t header_bytes;
  uint64_t file_bytes;
  bool created;
} shared_file;

/* DIR/<file>.tmp.<pid of rank 0>.shared */
static void tmp_name(shared_file *s, double tag) {
  char t[sizeof s->tmp];
  snprintf(t, sizeof t, "%.4200s.tmp.%.0f.shared", s->final, tag);
  memcpy(s->tmp, t, sizeof t);
}

/* One host sum as a barrier: every rank's failure flag (and rank 0's *tag). 0 when every rank succeeded. */
static int barrier(ddp_exec *x, int mine, double *tag, const char *what, char *err, size_t errcap) {
  double v[2] = {mine ? 1 : 0, tag && x->rank == 0 ? *tag : 0};
  char e2[512];
  if (ddp_exec_allreduce(x, v, 2, e2, sizeof e2)) {
    if (!mine) ddp_fail(err, errcap, "%s", e2);
    return -1;
  }
  if (tag) *tag = v[1];
  if (mine) return -1;
  if (v[0] > 0) return ddp_fail(err, errcap, "checkpoint: %s failed on %.0f other rank(s)", what, v[0]);
  return 0;
}

static int pwrite_all(int fd, const void *buf, uint64_t n, uint64_t at) {
  const uint8_t *b = buf;
  while (n > 0) {
    ssize_t w = pwrite(fd, b, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w, n -= (uint64_t)w, at += (uint64_t)w;
  }
  return 0;
}

/* Rank 0: the temporary file with the header, sized to the whole file (the rest reads as zeros until written). */
static int create_shared(shared_file *s, char *err, size_t errcap) {
  unlink(s->tmp); /* a leftover of a failed save of this process */
  int fd = open(s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ddp_fail(err, errcap, "%s: cannot create %s: %s", s->final, s->tmp, strerror(errno));
  s->created = true;
  int rc = pwrite_all(fd, s->header, s->header_bytes, 0) || ftruncate(fd, (off_t)s->file_bytes) || fsync(fd) ? -1 : 0;
  int e = errno;
  if (close(fd) != 0 && rc == 0) rc = -1, e = errno;
  return rc ? ddp_fail(err, errcap, "%s: cannot write %s: %s", s->final, s->tmp, strerror(e)) : 0;
}

/* Copies tensor t of this rank into the file at `at` through *buf; a strided piece (piece_runs > 1) run by run,
 * run j at `at` + j * `stride` bytes. */
static int put_tensor(ddp_exec *x, int fd, const shared_file *s, int32_t t, uint64_t at, uint64_t stride, void **buf,
                      size_t *cap, char *err, size_t errcap) {
  const ddp_tensor *pt = &x->plan->tensors[t];
  uint64_t n = pt->bytes, runs = (pt->flags & TF_PIECE) ? (uint64_t)ddp_piece_runs(pt) : 1, rb = n / runs;
  if (n == 0) return 0;
  if (n > *cap) {
    void *nb = n <= SIZE_MAX ? realloc(*buf, (size_t)n) : NULL;
    if (!nb) return ddp_fail(err, errcap, "rank %d: out of memory for tensor '%s'", x->rank, x->plan->tensors[t].name);
    *buf = nb, *cap = (size_t)n;
  }
  if (x->v->read(x, t, *buf, err, errcap)) return -1;
  for (uint64_t j = 0; j < runs; j++)
    if (pwrite_all(fd, (uint8_t *)*buf + j * rb, rb, at + j * stride))
      return ddp_fail(err, errcap, "%s: rank %d cannot write %s: %s", s->final, x->rank, s->tmp, strerror(errno));
  return 0;
}

/* Every rank: its elements of one file (rank 0: also the whole tensors). */
static int write_own(ddp_exec *x, const shared_file *s, void **buf, size_t *cap, char *err, size_t errcap) {
  const ck_file *f = s->f;
  bool any = false;
  for (uint32_t i = 0; i < f->n && !any; i++) {
    const ck_entry *e = &f->v[i];
    if (e->whole >= 0) any = x->rank == 0;
    for (uint32_t k = 0; e->whole < 0 && k < e->npieces && !any; k++)
      any = x->plan->tensors[e->pieces[k]].piece_rank == x->rank;
  }
  if (!any) return 0;
  int fd = open(s->tmp, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ddp_fail(err, errcap, "%s: rank %d cannot open %s: %s", s->final, x->rank, s->tmp, strerror(errno));
  int rc = 0;
  for (uint32_t i = 0; i < f->n && rc == 0; i++) {
    const ck_entry *e = &f->v[i];
    size_t esz = ddp_dtype_size(e->dtype);
    if (e->whole >= 0) {
      if (x->rank == 0) rc = put_tensor(x, fd, s, e->whole, s->offset[i], 0, buf, cap, err, errcap);
      continue;
    }
    for (uint32_t k = 0; k < e->npieces && rc == 0; k++) {
      const ddp_tensor *t = &x->plan->tensors[e->pieces[k]];
      if (t->piece_rank == x->rank)
        rc = put_tensor(x, fd, s, e->pieces[k], s->offset[i] + (uint64_t)t->piece_first * esz,
                        (uint64_t)t->piece_stride * esz, buf, cap, err, errcap);
    }
  }
  if (rc == 0 && fsync(fd) != 0)
    rc = ddp_fail(err, errcap, "%s: rank %d cannot fsync %s: %s", s->final, x->rank, s->tmp, strerror(errno));
  if (close(fd) != 0 && rc == 0)
    rc = ddp_fail(err, errcap, "%s: rank %d cannot close %s: %s", s->final, x->rank, s->tmp, strerror(errno));
  return rc;
}

/* Every rank calls it with the same plan, so every rank passes the same three barriers (a local failure is
 * carried to the next one). `rc`: the caller's status so far (the plan's description). */
static int save_shared(ddp_exec *x, const char *dir, const ck_plan *c, int rc, const char *const *meta, char *err,
                       size_t errcap) {
  shared_file s[2];
  memset(s, 0, sizeof s);
  int ns = 0;
  bool lead = x->rank == 0;
  if (rc == 0) {
    s[ns++].f = &c->model;
    if (c->opt.n) s[ns++].f = &c->opt;
  }
  double tag = (double)getpid();
  for (int k = 0; k < ns && rc == 0; k++) {
    snprintf(s[k].final, sizeof s[k].final, "%s/%s", dir, s[k].f->name);
    tmp_name(&s[k], tag);
    ddp_st_entry *e = st_entries(s[k].f, s[k].final, err, errcap);
    if (!(s[k].offset = calloc(s[k].f->n + 1, sizeof *s[k].offset)) && e)
      rc = ddp_fail(err, errcap, "%s: out of memory", s[k].final);
    if (!e || rc || ddp_st_header(s[k].final, e, s[k].f->n, meta, 3, &s[k].header, &s[k].header_bytes, s[k].offset,
                                  &s[k].file_bytes, err, errcap))
      rc = -1;
    free(e);
  }
  if (rc == 0 && lead) rc = ddp_ckpt_mkdir_p(dir, err, errcap);
  for (int k = 0; k < ns && rc == 0 && lead; k++) rc = create_shared(&s[k], err, errcap);
  if ((rc = barrier(x, rc, &tag, "creating the checkpoint files", err, errcap)) == 0) {
    void *buf = NULL;
    size_t cap = 0;
    for (int k = 0; k < ns; k++) tmp_name(&s[k], tag);
    for (int k = 0; k < ns && rc == 0; k++) rc = write_own(x, &s[k], &buf, &cap, err, errcap);
    free(buf);
    rc = barrier(x, rc, NULL, "writing the checkpoint files", err, errcap);
  }
  for (int k = 0; k < ns && rc == 0 && lead; k++) {
    if (rename(s[k].tmp, s[k].final) != 0)
      rc = ddp_fail(err, errcap, "%s: cannot rename %s into place: %s", s[k].final, s[k].tmp, strerror(errno));
    else s[k].created = false;
  }
  if (rc == 0 && lead && ns && ddp_fsync_parent(s[0].final) != 0)
    rc = ddp_fail(err, errcap, "%s: cannot fsync the folder: %s", dir, strerror(errno));
  rc = barrier(x, rc, NULL, "committing the checkpoint files", err, errcap);
  for (int k = 0; k < ns; k++) {
    if (lead && s[k].created) unlink(s[k].tmp);
    free(s[k].offset);
    free(s[k].header);
  }
  return rc;
}

int ddp_checkpoint_save(ddp_exec *x, const char *dir, int64_t steps_done, char *err, size_t errcap) {
  bool shared = ck_plan_shared(x->plan);
  ck_plan c;
  int rc = ck_plan_build(x->plan, x->world, &c, err, errcap);
  if (rc == 0 && x->v->sync && x->v->sync(x, err, errcap)) rc = -1;
  char step[32], rank[16], world[16];
  snprintf(step, sizeof step, "%lld", (long long)steps_done);
  snprintf(rank, sizeof rank, "%d", x->rank);
  snprintf(world, sizeof world, "%d", x->world);
  const char *sched = x->plan->meta.schedule_path ? x->plan->meta.schedule_path : "";
  const char *meta[] = {"format", "ddpc", "step", step, "schedule", sched, "rank", rank, "world", world};
  if (shared) {
    rc = save_shared(x, dir, &c, rc, meta, err, errcap);
  } else if (rc == 0) {
    rc = ddp_ckpt_mkdir_p(dir, err, errcap);
    if (rc == 0 && x->rank == 0) rc = save_file(x, dir, &c.model, meta, 3, err, errcap);
    if (rc == 0 && x->rank == 0 && c.opt.n) rc = save_file(x, dir, &c.opt, meta, 3, err, errcap);
  }
  ck_plan_free(&c);
  return rc;
}

int ddp_checkpoint_check_plan(const ddp_exec *x, char *err, size_t errcap) {
  ck_plan c;
  if (ck_plan_build(x->plan, x->world, &c, err, errcap)) return -1;
  ck_plan_free(&c);
  return 0;
}

/* ---- load ------------------------------------------------------------------------------------------------ */

static int parse_count(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

/* "checkpoint does not match this plan (written by a run of A, this plan is from B): " or "checkpoint does not
 * match this plan's model: ". Not "another model": a checkpoint resumes on any layout, whose schedule is
 * another file, and what differs may be the tensors the message goes on to name. */
static void mismatch_prefix(const ddp_plan *p, const ddp_st_file *f, char *buf, size_t cap) {
  const char *theirs = ddp_st_meta(f, "schedule"), *ours = p->meta.schedule_path ? p->meta.schedule_path : "";
  char a[160], b[160];
  if (theirs && strcmp(theirs, ours) != 0)
    snprintf(buf, cap, "checkpoint does not match this plan (written by a run of %s, this plan is from %s)",
             ddp_st_printable(theirs, a, sizeof a), ddp_st_printable(ours, b, sizeof b));
  else
    snprintf(buf, cap, "checkpoint does not match this plan's model");
}

/* Every entry present with its dtype and full shape, nothing else (linear: the file's names are looked up by
 * binary search, and the ones found are marked). */
static int check_file(const ddp_plan *p, const ck_file *cf, const ddp_st_file *f, char *err, size_t errcap) {
  char pre[400], want[160], got[160], nm[120];
  uint8_t *found = calloc(f->ntensors + 1, 1);
  if (!found) return ddp_fail(err, errcap, "%s: out of memory", f->label);
  int rc = 0;
  for (uint32_t k = 0; k < cf->n && !rc; k++) {
    const ck_entry *e = &cf->v[k];
    const char *dn = ddp_st_dtype_name(e->dtype);
    describe(dn != NULL, dn, e->ndim, e->shape, want, sizeof want);
    const ddp_st_tensor *s = ddp_st_find(f, e->key);
    bool same = s && s->dtype == e->dtype && s->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; d++) same = s->shape[d] == e->shape[d];
    if (s) found[s - f->tensors] = 1;
    if (!same) mismatch_prefix(p, f, pre, sizeof pre);
    if (!s)
      rc = ddp_fail(err, errcap, "%s: %s: no tensor '%s' (the plan expects %s)", f->label, pre, e->key, want);
    else if (!same)
      rc = ddp_fail(err, errcap, "%s: %s: tensor '%s' is %s, the plan expects %s", f->label, pre, e->key,
                    describe(1, s->dtype_name, s->ndim, s->shape, got, sizeof got), want);
  }
  for (uint32_t k = 0; k < f->ntensors && !rc; k++)
    if (!found[k]) {
      mismatch_prefix(p, f, pre, sizeof pre);
      rc = ddp_fail(err, errcap, "%s: %s: it holds tensor '%s', which the plan does not have", f->label, pre,
                    ddp_st_printable(f->tensors[k].name, nm, sizeof nm));
    }
  free(found);
  return rc;
}

/* The file's "step" metadata (-1 when absent). */
static int file_step(const ddp_st_file *f, int64_t *step, char *err, size_t errcap) {
  const char *s = ddp_st_meta(f, "step");
  *step = -1;
  if (s && parse_count(s, step)) {
    char v[80];
    ddp_fail(err, errcap, "%s: metadata \"step\" is \"%s\", not a step count", f->label,
             ddp_st_printable(s, v, sizeof v));
    return -1;
  }
  return 0;
}

typedef struct scratch {
  void *v;
  size_t cap;
} scratch;

/* Writes tensor t from src (inside a mapped file, maybe unaligned): `runs` runs of `bytes` / `runs` bytes each,
 * run j from src + j * `stride` bytes (runs 1: one contiguous range). */
static int put(ddp_exec *x, const ddp_st_file *f, int32_t t, const uint8_t *src, uint64_t bytes, uint64_t runs,
               uint64_t stride, scratch *s, char *err, size_t errcap) {
  size_t align = ddp_dtype_size(x->plan->tensors[t].dtype);
  if ((runs > 1 && bytes > 0) || (align > 1 && (uintptr_t)src % align)) { /* strided, or another writer's layout */
    if (bytes > s->cap) {
      free(s->v);
      s->cap = 0;
      if (bytes > SIZE_MAX || !(s->v = malloc((size_t)bytes))) return ddp_fail(err, errcap, "%s: out of memory", f->label);
      s->cap = (size_t)bytes;
    }
    uint64_t rb = bytes / runs;
    for (uint64_t j = 0; j < runs; j++) memcpy((uint8_t *)s->v + j * rb, src + j * stride, (size_t)rb);
    src = s->v;
  }
  return x->v->write(x, t, src, err, errcap);
}

/* Do the data replicas of the mesh hold the same pieces? World rank = (d x S + s) x T + t (S = max(pipe_stages,
 * 1) stages, T = max(tensor_parallel, 1)), M = S x T: with world > M and a pipeline or tensor-parallel mesh
 * (M > 1) whose pieces all name ranks of replica 0 (< M), every replica d holds the same elements as replica 0
 * at the same place. Not so under a ZeRO sharding over the data ranks (M = 1, or pieces on ranks >= M): each
 * rank there holds its own pieces only. *m: M. */
static bool replicas_share(const ddp_plan *p, int world, int64_t *m) {
  int64_t S = p->meta.pipe_stages > 1 ? p->meta.pipe_stages : 1, T = p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1;
  *m = S * T;
  if (*m <= 1 || world <= *m) return false;
  for (uint32_t i = 0; i < p->ntensors; i++)
    if ((p->tensors[i].flags & TF_PIECE) && p->tensors[i].piece_rank >= *m) return false;
  return true;
}

/* Is entry e replicated over the tensor ranks (tensor parallelism, T > 1, world rank ... x T + t)? A split
 * parameter has a piece on every tensor rank; one every tensor rank holds whole (a norm weight) is described
 * only on tensor rank 0 (checkpoints hold each element once), under a pipeline or a ZeRO level. */
static bool tensor_replicated(const ddp_plan *p, const ck_entry *e) {
  int64_t T = p->meta.tensor_parallel;
  if (T <= 1 || e->npieces == 0) return false;
  for (uint32_t k = 0; k < e->npieces; k++)
    if (p->tensors[e->pieces[k]].piece_rank % T) return false;
  return true;
}

/* Does `rank` hold piece t in its memory? Its piece rank does; where the data replicas share the pieces
 * (replicas_share: pipelines with replicas, tensor parallelism over data replicas) so does every rank with
 * rank % M = piece_rank (only replica 0, the piece rank, writes them; every replica loads them); of an entry
 * replicated over the tensor ranks (tensor_replicated) so does every tensor rank of the piece rank's group. */
static bool holds_piece(const ddp_plan *p, const ddp_tensor *t, int rank, bool share, int64_t m, bool tp_whole) {
  int64_t r = share && t->piece_rank < m ? rank % m : rank, T = p->meta.tensor_parallel;
  return r == t->piece_rank || (tp_whole && r / T == t->piece_rank / T);
}

/* This rank's elements of every entry: its whole tensors and the pieces it holds. */
static int load_file(ddp_exec *x, const ck_file *cf, const ddp_st_file *f, char *err, size_t errcap) {
  scratch s = {0};
  int rc = 0;
  int64_t m;
  bool share = replicas_share(x->plan, x->world, &m);
  for (uint32_t k = 0; k < cf->n && !rc; k++) {
    const ck_entry *e = &cf->v[k];
    const uint8_t *src = ddp_st_data(f, ddp_st_find(f, e->key));
    size_t esz = ddp_dtype_size(e->dtype);
    if (e->whole >= 0) rc = put(x, f, e->whole, src, entry_bytes(e), 1, 0, &s, err, errcap);
    bool tp_whole = tensor_replicated(x->plan, e);
    for (uint32_t j = 0; j < e->npieces && !rc; j++) {
      const ddp_tensor *t = &x->plan->tensors[e->pieces[j]];
      if (holds_piece(x->plan, t, x->rank, share, m, tp_whole))
        rc = put(x, f, e->pieces[j], src + (uint64_t)t->piece_first * esz, t->bytes, (uint64_t)ddp_piece_runs(t),
                 (uint64_t)t->piece_stride * esz, &s, err, errcap);
    }
  }
  free(s.v);
  return rc;
}

int ddp_checkpoint_load(ddp_exec *x, const char *dir, int64_t *steps_done, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  ck_plan c;
  if (ck_plan_build(p, x->world, &c, err, errcap)) return -1;
  ddp_st_file *mf = NULL, *of = NULL;
  char path[4200];
  int rc = -1;
  int64_t mstep = -1, ostep = -1;
  snprintf(path, sizeof path, "%s/%s", dir, c.model.name);
  if (!(mf = ddp_st_open(path, err, errcap)) || check_file(p, &c.model, mf, err, errcap) ||
      file_step(mf, &mstep, err, errcap))
    goto out;
  if (c.opt.n) {
    snprintf(path, sizeof path, "%s/%s", dir, c.opt.name);
    if (!(of = ddp_st_open(path, err, errcap)) || check_file(p, &c.opt, of, err, errcap) ||
        file_step(of, &ostep, err, errcap))
      goto out;
    if (mstep >= 0 && ostep >= 0 && mstep != ostep) {
      ddp_fail(err, errcap, "%s: incomplete checkpoint: %s is from step %lld, %s from step %lld", dir, c.model.name,
               (long long)mstep, c.opt.name, (long long)ostep);
      goto out;
    }
  }
  if (load_file(x, &c.model, mf, err, errcap) || (of && load_file(x, &c.opt, of, err, errcap))) goto out;
  *steps_done = mstep >= 0 ? mstep : ostep >= 0 ? ostep : 0;
  rc = 0;
out:
  ddp_st_close(mf);
  ddp_st_close(of);
  ck_plan_free(&c);
  return rc;
}

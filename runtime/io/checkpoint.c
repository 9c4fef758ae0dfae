/* runtime/io/checkpoint.c: the files of one checkpoint folder (checkpoint.h) over the executor's read/write
 * (ckpt_store.c arranges the folders).
 * What the plan says goes where:
 *   model.safetensors       every TF_PARAM tensor with a state_name, under that name (rank 0 writes);
 *   optimizer.safetensors   every TF_OPT_M / TF_OPT_V tensor with a state_name, under its tensor name
 *                           ("<param>.exp_avg", "<param>.exp_avg_sq"), and the TF_SCALARS tensor as
 *                           "optimizer.scalars" (rank 0 writes; with no moments, e.g. SGD, only the scalars);
 *   optimizer.rank<R>.safetensors   instead, when the moments exist only as flat shards (TF_OPT_M without a
 *                           state_name and no named views): "exp_avg", "exp_avg_sq", "optimizer.scalars" of
 *                           rank R, with metadata "rank" and "world" (every rank writes its own).
 * Metadata of every file: {"format": "ddpc", "step": "<steps_done>", "schedule": "<meta.schedule_path>"}.
 * Loading checks every file first (each expected tensor present with the plan's dtype and shape, no tensor
 * the plan lacks, the files' steps agree) and only then writes into the executor, so a refused checkpoint
 * leaves the executor untouched. */
#include "checkpoint.h"
#include "err.h"
#include "vec.h"
#include "safetensors.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct ck_item {
  int32_t tensor;
  const char *key;
} ck_item;

typedef struct ck_file {
  char name[64]; /* file name inside DIR */
  ck_item *v;
  uint32_t n;
  size_t cap;
} ck_file;

/* The files this rank writes (save) or reads (load). */
typedef struct ck_layout {
  ck_file model, opt;
  bool sharded;
} ck_layout;

static int add(ck_file *f, int32_t t, const char *key) {
  if (ddp_vec_reserve(&f->v, &f->cap, f->n + 1, sizeof *f->v)) return -1;
  f->v[f->n++] = (ck_item){t, key};
  return 0;
}

static void layout_free(ck_layout *L) {
  free(L->model.v);
  free(L->opt.v);
}

static int32_t scalars_tensor(const ddp_plan *p) {
  if (p->meta.scalars_tensor >= 0 && (uint64_t)p->meta.scalars_tensor < p->ntensors)
    return (int32_t)p->meta.scalars_tensor;
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (p->tensors[t].flags & TF_SCALARS) return (int32_t)t;
  return -1;
}

static int plan_layout(const ddp_plan *p, int rank, ck_layout *L, char *err, size_t errcap) {
  memset(L, 0, sizeof *L);
  snprintf(L->model.name, sizeof L->model.name, "model.safetensors");
  int32_t flat_m = -1, flat_v = -1, nflat_m = 0, nflat_v = 0;
  bool named = false;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *x = &p->tensors[t];
    if ((x->flags & TF_PARAM) && x->state_name && add(&L->model, (int32_t)t, x->state_name)) goto oom;
    if (!(x->flags & (TF_OPT_M | TF_OPT_V))) continue;
    if (x->state_name)
      named = true;
    else if (x->flags & TF_OPT_M)
      flat_m = (int32_t)t, nflat_m++;
    else
      flat_v = (int32_t)t, nflat_v++;
  }
  int32_t sc = scalars_tensor(p);
  if (named || nflat_m == 0) {
    snprintf(L->opt.name, sizeof L->opt.name, "optimizer.safetensors");
    for (uint32_t t = 0; t < p->ntensors; t++) {
      const ddp_tensor *x = &p->tensors[t];
      if ((x->flags & (TF_OPT_M | TF_OPT_V)) && x->state_name && add(&L->opt, (int32_t)t, x->name)) goto oom;
    }
  } else {
    if (nflat_m > 1 || nflat_v > 1) {
      ddp_fail(err, errcap,
               "checkpoint: the plan has %d flat exp_avg and %d flat exp_avg_sq tensors, expected one each", nflat_m,
               nflat_v);
      layout_free(L);
      return -1;
    }
    L->sharded = true;
    snprintf(L->opt.name, sizeof L->opt.name, "optimizer.rank%d.safetensors", rank);
    if (add(&L->opt, flat_m, "exp_avg") || (flat_v >= 0 && add(&L->opt, flat_v, "exp_avg_sq"))) goto oom;
  }
  if (sc >= 0 && add(&L->opt, sc, "optimizer.scalars")) goto oom;
  return 0;
oom:
  ddp_fail(err, errcap, "checkpoint: out of memory");
  layout_free(L);
  return -1;
}

/* "F32 [64, 32]" */
static const char *describe(int dtype_ok, const char *dtype, int ndim, const int64_t *shape, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s [", dtype_ok ? dtype : "?");
  for (int d = 0; d < ndim && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

/* ---- save ------------------------------------------------------------------------------------------------ */

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

typedef struct fill_ctx {
  ddp_exec *x;
  const ck_file *f;
} fill_ctx;

static int fill_from_exec(void *ctx, uint32_t i, void *dst, char *err, size_t errcap) {
  fill_ctx *c = ctx;
  return c->x->v->read(c->x, c->f->v[i].tensor, dst, err, errcap);
}

static int save_file(ddp_exec *x, const char *dir, const ck_file *f, const char *const *meta, uint32_t nmeta, char *err,
                     size_t errcap) {
  const ddp_plan *p = x->plan;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, f->name);
  ddp_st_entry *e = calloc(f->n + 1, sizeof *e);
  if (!e) {
    ddp_fail(err, errcap, "%s: out of memory", path);
    return -1;
  }
  for (uint32_t k = 0; k < f->n; k++) {
    const ddp_tensor *t = &p->tensors[f->v[k].tensor];
    if (!ddp_st_dtype_name(t->dtype) || t->ndim > DDP_MAX_DIMS) {
      ddp_fail(err, errcap, "%s: tensor '%s' has dtype %s, which safetensors cannot hold", path, f->v[k].key,
               ddp_dtype_name(t->dtype));
      free(e);
      return -1;
    }
    e[k].name = f->v[k].key;
    e[k].dtype = t->dtype;
    e[k].ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) e[k].shape[d] = t->shape[d];
  }
  fill_ctx c = {x, f};
  int rc = ddp_st_write(path, e, f->n, meta, nmeta, fill_from_exec, &c, err, errcap);
  free(e);
  return rc;
}

int ddp_checkpoint_save(ddp_exec *x, const char *dir, int64_t steps_done, char *err, size_t errcap) {
  ck_layout L;
  if (plan_layout(x->plan, x->rank, &L, err, errcap)) return -1;
  int rc = -1;
  if (x->v->sync && x->v->sync(x, err, errcap)) goto out;
  if (ddp_ckpt_mkdir_p(dir, err, errcap)) goto out;
  char step[32], rank[16], world[16];
  snprintf(step, sizeof step, "%lld", (long long)steps_done);
  snprintf(rank, sizeof rank, "%d", x->rank);
  snprintf(world, sizeof world, "%d", x->world);
  const char *sched = x->plan->meta.schedule_path ? x->plan->meta.schedule_path : "";
  const char *meta[] = {"format", "ddpc", "step", step, "schedule", sched, "rank", rank, "world", world};
  if (x->rank == 0 && save_file(x, dir, &L.model, meta, 3, err, errcap)) goto out;
  if ((L.sharded || x->rank == 0) && L.opt.n && save_file(x, dir, &L.opt, meta, L.sharded ? 5 : 3, err, errcap))
    goto out;
  rc = 0;
out:
  layout_free(&L);
  return rc;
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

/* "checkpoint of another model (written for A, this plan is from B): " or "checkpoint does not match the plan: " */
static void mismatch_prefix(const ddp_plan *p, const ddp_st_file *f, char *buf, size_t cap) {
  const char *theirs = ddp_st_meta(f, "schedule"), *ours = p->meta.schedule_path ? p->meta.schedule_path : "";
  char a[160], b[160];
  if (theirs && strcmp(theirs, ours) != 0)
    snprintf(buf, cap, "checkpoint of another model (written for %s, this plan is from %s)",
             ddp_st_printable(theirs, a, sizeof a), ddp_st_printable(ours, b, sizeof b));
  else
    snprintf(buf, cap, "checkpoint does not match this plan's model");
}

/* Every expected tensor present with the plan's dtype and shape, nothing else (linear: the file's names are
 * looked up by binary search, and the ones found are marked). */
static int check_file(const ddp_plan *p, const ck_file *cf, const ddp_st_file *f, char *err, size_t errcap) {
  char pre[400], want[160], got[160], nm[120];
  uint8_t *found = calloc(f->ntensors + 1, 1);
  if (!found) return ddp_fail(err, errcap, "%s: out of memory", f->label);
  int rc = 0;
  for (uint32_t k = 0; k < cf->n && !rc; k++) {
    const ddp_tensor *t = &p->tensors[cf->v[k].tensor];
    const char *dn = ddp_st_dtype_name(t->dtype);
    describe(dn != NULL, dn, t->ndim, t->shape, want, sizeof want);
    const ddp_st_tensor *s = ddp_st_find(f, cf->v[k].key);
    bool same = s && s->dtype == t->dtype && s->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = s->shape[d] == t->shape[d];
    if (s) found[s - f->tensors] = 1;
    if (!same) mismatch_prefix(p, f, pre, sizeof pre);
    if (!s)
      rc = ddp_fail(err, errcap, "%s: %s: no tensor '%s' (the plan expects %s)", f->label, pre, cf->v[k].key, want);
    else if (!same)
      rc = ddp_fail(err, errcap, "%s: %s: tensor '%s' is %s, the plan expects %s", f->label, pre, cf->v[k].key,
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

static int write_file(ddp_exec *x, const ck_file *cf, const ddp_st_file *f, char *err, size_t errcap) {
  void *scratch = NULL;
  size_t scap = 0;
  int rc = 0;
  for (uint32_t k = 0; k < cf->n && !rc; k++) {
    const ddp_st_tensor *s = ddp_st_find(f, cf->v[k].key);
    const void *src = ddp_st_data(f, s);
    size_t bytes = (size_t)(s->end - s->begin), align = ddp_dtype_size(s->dtype);
    if (align > 1 && (uintptr_t)src % align) { /* another writer's layout: hand the executor aligned data */
      if (bytes > scap) {
        free(scratch);
        scap = 0;
        if (!(scratch = malloc(bytes))) {
          ddp_fail(err, errcap, "%s: out of memory", f->label);
          return -1;
        }
        scap = bytes;
      }
      memcpy(scratch, src, bytes);
      src = scratch;
    }
    rc = x->v->write(x, cf->v[k].tensor, src, err, errcap);
  }
  free(scratch);
  return rc;
}

int ddp_checkpoint_load(ddp_exec *x, const char *dir, int64_t *steps_done, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  ck_layout L;
  if (plan_layout(p, x->rank, &L, err, errcap)) return -1;
  ddp_st_file *mf = NULL, *of = NULL;
  char path[4200];
  int rc = -1;
  int64_t mstep = -1, ostep = -1;
  snprintf(path, sizeof path, "%s/%s", dir, L.model.name);
  if (!(mf = ddp_st_open(path, err, errcap)) || check_file(p, &L.model, mf, err, errcap) ||
      file_step(mf, &mstep, err, errcap))
    goto out;
  if (L.opt.n) {
    snprintf(path, sizeof path, "%s/%s", dir, L.opt.name);
    if (!(of = ddp_st_open(path, err, errcap)) || check_file(p, &L.opt, of, err, errcap) ||
        file_step(of, &ostep, err, errcap))
      goto out;
    const char *w = ddp_st_meta(of, "world");
    int64_t ow;
    if (L.sharded && w && (parse_count(w, &ow) || ow != x->world)) {
      char v[40];
      ddp_fail(err, errcap, "%s: written by a run of %s ranks, this run has %d", of->label,
               ddp_st_printable(w, v, sizeof v), x->world);
      goto out;
    }
    if (mstep >= 0 && ostep >= 0 && mstep != ostep) {
      ddp_fail(err, errcap, "%s: incomplete checkpoint: %s is from step %lld, %s from step %lld", dir, L.model.name,
               (long long)mstep, L.opt.name, (long long)ostep);
      goto out;
    }
  }
  if (write_file(x, &L.model, mf, err, errcap) || (of && write_file(x, &L.opt, of, err, errcap))) goto out;
  *steps_done = mstep >= 0 ? mstep : ostep >= 0 ? ostep : 0;
  rc = 0;
out:
  ddp_st_close(mf);
  ddp_st_close(of);
  layout_free(&L);
  return rc;
}

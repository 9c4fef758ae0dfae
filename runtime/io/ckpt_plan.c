/* runtime/io/ckpt_plan.c: the checkpoint's description from a plan (ckpt_plan.h). Three passes over the
 * tensors: the parameters (TF_PARAM with a state name, not pieces: real views or TF_SHAPE_ONLY), then
 * their master pieces and their optimizer state (found by state name), then the checks of every entry's
 * pieces (each in range, on a rank of the run, of the entry's dtype, and their runs, sorted by first element,
 * together covering every element exactly once). */
#include "ckpt_plan.h"
#include "err.h"
#include "vec.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ck_plan_free(ck_plan *c) {
  ck_file *f[2] = {&c->model, &c->opt};
  for (int k = 0; k < 2; k++) {
    for (uint32_t i = 0; i < f[k]->n; i++) {
      free(f[k]->v[i].key);
      free(f[k]->v[i].pieces);
    }
    free(f[k]->v);
  }
  memset(c, 0, sizeof *c);
}

bool ck_plan_shared(const ddp_plan *p) {
  for (uint32_t t = 0; t < p->ntensors; t++)
    if ((p->tensors[t].flags & TF_PIECE) && p->tensors[t].piece_rank != 0) return true;
  return false;
}

/* A new entry key + suffix (index into f->v), or -1 when out of memory. */
static int32_t new_entry(ck_file *f, const char *key, const char *suffix, int ndim, const int64_t *shape, int dtype,
                         int32_t whole) {
  if (ddp_vec_reserve(&f->v, &f->cap, f->n + 1, sizeof *f->v)) return -1;
  ck_entry *e = &f->v[f->n];
  memset(e, 0, sizeof *e);
  size_t len = strlen(key) + strlen(suffix) + 1;
  if (!(e->key = malloc(len))) return -1;
  snprintf(e->key, len, "%s%s", key, suffix);
  e->dtype = dtype;
  e->ndim = ndim;
  e->numel = 1;
  for (int d = 0; d < ndim && d < DDP_MAX_DIMS; d++) e->shape[d] = shape[d], e->numel *= (uint64_t)shape[d];
  e->whole = whole;
  return (int32_t)f->n++;
}

static int32_t new_entry_of(ck_file *f, const char *key, const ddp_tensor *t, int32_t whole) {
  return new_entry(f, key, "", t->ndim, t->shape, t->dtype, whole);
}

static int add_piece(ck_entry *e, int32_t t) {
  if (ddp_vec_reserve(&e->pieces, &e->cap, e->npieces + 1, sizeof *e->pieces)) return -1;
  e->pieces[e->npieces++] = t;
  return 0;
}

static int32_t scalars_tensor(const ddp_plan *p) {
  if (p->meta.scalars_tensor >= 0 && (uint64_t)p->meta.scalars_tensor < p->ntensors)
    return (int32_t)p->meta.scalars_tensor;
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (p->tensors[t].flags & TF_SCALARS) return (int32_t)t;
  return -1;
}

/* The parameters by state name: (key, entry) sorted by key. */
typedef struct key_ix {
  const char *key;
  uint32_t entry;
} key_ix;
static int cmp_key(const void *a, const void *b) { return strcmp(((const key_ix *)a)->key, ((const key_ix *)b)->key); }
static int32_t find_param(const key_ix *k, uint32_t n, const char *name) {
  key_ix want = {name, 0};
  const key_ix *hit = n ? bsearch(&want, k, n, sizeof *k, cmp_key) : NULL;
  return hit ? (int32_t)hit->entry : -1;
}

typedef struct first_ix {
  int64_t first;
  int32_t t;
} first_ix;
static int cmp_first(const void *a, const void *b) {
  const first_ix *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* e's pieces in order of their first element (0, or -1 when out of memory). */
static int sort_pieces(const ddp_plan *p, ck_entry *e) {
  first_ix *v = malloc(sizeof *v * (e->npieces + 1));
  if (!v) return -1;
  for (uint32_t k = 0; k < e->npieces; k++) v[k] = (first_ix){p->tensors[e->pieces[k]].piece_first, e->pieces[k]};
  qsort(v, e->npieces, sizeof *v, cmp_first);
  for (uint32_t k = 0; k < e->npieces; k++) e->pieces[k] = v[k].t;
  free(v);
  return 0;
}

/* One run of a piece: elements [first, first + len) of the entry, held by tensor t. */
typedef struct run_ix {
  uint64_t first, len;
  int32_t t;
} run_ix;
static int cmp_run(const void *a, const void *b) {
  const run_ix *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

/* Piece t's geometry inside entry e: its runs, run length and stride; one line in err when it is not a whole
 * number of runs, its runs overlap one another, or an element lies outside e (overflow-safe). */
static int piece_geometry(const ddp_tensor *t, const ck_entry *e, uint64_t *runs, uint64_t *len, uint64_t *stride,
                          char *err, size_t errcap) {
  uint64_t n = ddp_tensor_numel(t), r = (uint64_t)ddp_piece_runs(t), end = 0;
  *runs = r, *len = n / r, *stride = r > 1 ? (uint64_t)t->piece_stride : 0;
  if (t->piece_runs < 0 || (r > 1 && t->piece_stride < 0) || n % r || (r > 1 && *stride < *len))
    return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' (rank %d) of '%s' has %llu elements in %lld runs "
                    "%lld apart, not whole runs that do not overlap", t->name, t->piece_rank, e->key,
                    (unsigned long long)n, (long long)t->piece_runs, (long long)t->piece_stride);
  bool over = !ddp_piece_end(t, &end);
  if (!over && end <= e->numel) return 0;
  if (r == 1)
    return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' (rank %d) holds elements [%lld, %lld) of '%s', "
                    "which has %llu", t->name, t->piece_rank, (long long)t->piece_first,
                    (long long)(t->piece_first + (int64_t)n), e->key, (unsigned long long)e->numel);
  if (over)
    return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' (rank %d) holds %llu runs of %llu elements %llu "
                    "apart from element %lld of '%s', past any index", t->name, t->piece_rank, (unsigned long long)r,
                    (unsigned long long)*len, (unsigned long long)*stride, (long long)t->piece_first, e->key);
  return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' (rank %d) holds elements [%lld, %llu) of '%s' in %llu "
                  "runs of %llu, %llu apart, which has %llu", t->name, t->piece_rank, (long long)t->piece_first,
                  (unsigned long long)end, e->key, (unsigned long long)r, (unsigned long long)*len,
                  (unsigned long long)*stride, (unsigned long long)e->numel);
}

/* One entry's pieces: sorted, each inside the entry, on a rank of the run, of its dtype; no overlap, no gap. A
 * strided piece (piece_runs > 1) counts as its runs: every run of every piece, sorted by first element, must
 * follow the previous one without gap or overlap (exact: linear in the runs after the sort). */
static int check_pieces(const ddp_plan *p, int world, ck_entry *e, char *err, size_t errcap) {
  if (e->npieces == 0) {
    if (e->whole >= 0) return 0;
    return ddp_fail(err, errcap, "checkpoint: the plan holds no element of '%s' (%llu elements): a shape-only "
                    "parameter without pieces", e->key, (unsigned long long)e->numel);
  }
  if (sort_pieces(p, e)) return ddp_fail(err, errcap, "checkpoint: out of memory");
  uint64_t total = 0;
  for (uint32_t k = 0; k < e->npieces; k++) {
    const ddp_tensor *t = &p->tensors[e->pieces[k]];
    uint64_t runs, len, stride;
    if (piece_geometry(t, e, &runs, &len, &stride, err, errcap)) return -1;
    if (t->piece_rank < 0 || t->piece_rank >= world)
      return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' of '%s' is on rank %d, the run has %d rank(s)",
                      t->name, e->key, t->piece_rank, world);
    if (t->dtype != e->dtype)
      return ddp_fail(err, errcap, "checkpoint: the plan's piece '%s' of '%s' is %s, the tensor is %s", t->name,
                      e->key, ddp_dtype_name(t->dtype), ddp_dtype_name(e->dtype));
    if (len && __builtin_add_overflow(total, runs, &total)) total = UINT64_MAX;
  }
  run_ix *v = total < SIZE_MAX / sizeof *v ? malloc(sizeof *v * (size_t)(total + 1)) : NULL;
  if (!v) return ddp_fail(err, errcap, "checkpoint: out of memory checking the %llu runs of the pieces of '%s'",
                          (unsigned long long)total, e->key);
  size_t nv = 0;
  for (uint32_t k = 0; k < e->npieces; k++) {
    const ddp_tensor *t = &p->tensors[e->pieces[k]];
    uint64_t runs = (uint64_t)ddp_piece_runs(t), len = ddp_tensor_numel(t) / runs;
    if (len == 0) continue; /* holds nothing, overlaps nothing */
    for (uint64_t j = 0; j < runs; j++)
      v[nv++] = (run_ix){(uint64_t)t->piece_first + j * (runs > 1 ? (uint64_t)t->piece_stride : 0), len, e->pieces[k]};
  }
  qsort(v, nv, sizeof *v, cmp_run);
  uint64_t next = 0;
  int rc = 0;
  for (size_t k = 0; k < nv && !rc; k++) {
    if (v[k].first > next)
      rc = ddp_fail(err, errcap, "checkpoint: the plan's pieces of '%s' (%llu elements) leave elements [%llu, %llu) "
                    "in no piece", e->key, (unsigned long long)e->numel, (unsigned long long)next,
                    (unsigned long long)v[k].first);
    else if (v[k].first < next) {
      const ddp_tensor *q = &p->tensors[v[k - 1].t], *t = &p->tensors[v[k].t];
      rc = ddp_fail(err, errcap, "checkpoint: the plan's pieces of '%s' overlap: '%s' (rank %d) holds elements "
                    "[%llu, %llu), '%s' (rank %d) [%llu, %llu)", e->key, q->name, q->piece_rank,
                    (unsigned long long)v[k - 1].first, (unsigned long long)next, t->name, t->piece_rank,
                    (unsigned long long)v[k].first, (unsigned long long)(v[k].first + v[k].len));
    }
    next = v[k].first + v[k].len;
  }
  free(v);
  if (!rc && next < e->numel)
    rc = ddp_fail(err, errcap, "checkpoint: the plan's pieces of '%s' (%llu elements) leave elements [%llu, %llu) "
                  "in no piece", e->key, (unsigned long long)e->numel, (unsigned long long)next,
                  (unsigned long long)e->numel);
  return rc;
}

static bool same_shape(const ddp_tensor *t, const ck_entry *e) {
  if (t->ndim != e->ndim) return false;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != e->shape[d]) return false;
  return true;
}

/* The optimizer state: per parameter, its exp_avg and exp_avg_sq entries (created on first sight). */
static int add_moments(const ddp_plan *p, ck_plan *c, const key_ix *k, int32_t *m_of, int32_t *v_of, char *err,
                       size_t errcap) {
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    bool piece = t->flags & TF_PIECE;
    if (!t->state_name || !(t->flags & (piece ? (TF_PARAM | TF_OPT_M | TF_OPT_V) : (TF_OPT_M | TF_OPT_V)))) continue;
    int32_t pe = find_param(k, c->model.n, t->state_name);
    if (pe < 0)
      return ddp_fail(err, errcap, "checkpoint: the plan's tensor '%s' belongs to '%s', which is no parameter of the "
                      "plan", t->name, t->state_name);
    ck_entry *e;
    if (piece && (t->flags & TF_PARAM)) {
      e = &c->model.v[pe];
    } else {
      bool m = t->flags & TF_OPT_M;
      int32_t *slot = m ? &m_of[pe] : &v_of[pe];
      const ck_entry *pp = &c->model.v[pe];
      if (*slot < 0 &&
          (*slot = new_entry(&c->opt, pp->key, m ? ".exp_avg" : ".exp_avg_sq", pp->ndim, pp->shape, t->dtype, -1)) < 0)
        return ddp_fail(err, errcap, "checkpoint: out of memory");
      e = &c->opt.v[*slot];
      if (!piece && e->whole >= 0)
        return ddp_fail(err, errcap, "checkpoint: the plan's tensors '%s' and '%s' both hold '%s'",
                        p->tensors[e->whole].name, t->name, e->key);
      if (!piece && (!same_shape(t, e) || t->dtype != e->dtype))
        return ddp_fail(err, errcap, "checkpoint: the plan's optimizer state '%s' does not have the shape and dtype "
                        "of its parameter '%s'", t->name, c->model.v[pe].key);
      if (!piece) e->whole = (int32_t)i;
    }
    if (piece && add_piece(e, (int32_t)i)) return ddp_fail(err, errcap, "checkpoint: out of memory");
  }
  return 0;
}

int ck_plan_build(const ddp_plan *p, int world, ck_plan *c, char *err, size_t errcap) {
  memset(c, 0, sizeof *c);
  snprintf(c->model.name, sizeof c->model.name, "model.safetensors");
  snprintf(c->opt.name, sizeof c->opt.name, "optimizer.safetensors");
  key_ix *idx = NULL;
  int32_t *m_of = NULL, *v_of = NULL;
  int rc = -1;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *x = &p->tensors[t];
    if (!(x->flags & TF_PARAM) || !x->state_name || (x->flags & TF_PIECE)) continue;
    if (new_entry_of(&c->model, x->state_name, x, (x->flags & TF_SHAPE_ONLY) ? -1 : (int32_t)t) < 0) {
      ddp_fail(err, errcap, "checkpoint: out of memory");
      goto out;
    }
  }
  idx = malloc(sizeof *idx * (c->model.n + 1));
  m_of = malloc(sizeof *m_of * (c->model.n + 1));
  v_of = malloc(sizeof *v_of * (c->model.n + 1));
  if (!idx || !m_of || !v_of) {
    ddp_fail(err, errcap, "checkpoint: out of memory");
    goto out;
  }
  for (uint32_t k = 0; k < c->model.n; k++) idx[k] = (key_ix){c->model.v[k].key, k}, m_of[k] = v_of[k] = -1;
  qsort(idx, c->model.n, sizeof *idx, cmp_key);
  for (uint32_t k = 1; k < c->model.n; k++)
    if (strcmp(idx[k].key, idx[k - 1].key) == 0) {
      ddp_fail(err, errcap, "checkpoint: the plan has two parameters named '%s'", idx[k].key);
      goto out;
    }
  if (add_moments(p, c, idx, m_of, v_of, err, errcap)) goto out;
  for (uint32_t t = 0, named = c->opt.n; t < p->ntensors && !named; t++) /* moments no name describes */
    if ((p->tensors[t].flags & (TF_OPT_M | TF_OPT_V)) && p->tensors[t].bytes > 0) {
      ddp_fail(err, errcap, "checkpoint: the plan's optimizer state '%s' has no state-dict views or pieces, so no "
               "checkpoint can hold it", p->tensors[t].name);
      goto out;
    }
  ck_file *f[2] = {&c->model, &c->opt};
  for (int j = 0; j < 2; j++)
    for (uint32_t i = 0; i < f[j]->n; i++)
      if (check_pieces(p, world, &f[j]->v[i], err, errcap)) goto out;
  int32_t sc = scalars_tensor(p);
  if (sc >= 0 && new_entry_of(&c->opt, "optimizer.scalars", &p->tensors[sc], sc) < 0) {
    ddp_fail(err, errcap, "checkpoint: out of memory");
    goto out;
  }
  rc = 0;
out:
  free(idx);
  free(m_of);
  free(v_of);
  if (rc) ck_plan_free(c);
  return rc;
}

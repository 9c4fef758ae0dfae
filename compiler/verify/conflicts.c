/* compiler/verify/conflicts.c: see conflicts.h. Byte ranges live on a grid: the sorted distinct (arena,
 * byte) boundaries of both streams' records, key k at grid point 2k. A range [b, e) with b < e covers the
 * points strictly between its keys (2k(b) + 1 .. 2k(e) - 1) and an empty range [c, c) is the point 2k(c):
 * two non-empty ranges overlap iff they share a point, and an empty one meets a non-empty one iff it lies
 * strictly inside it, as the pairwise test b1 < e2 && b2 < e1 says (two empty ranges never meet). */
#include "conflicts.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

int ddp_vrec_conflict(const ddp_vrec *x, const ddp_vrec *y) {
  if (!(x->a.write || y->a.write) || x->a.arena != y->a.arena) return 0;
  if (x->a.begin >= y->a.end || y->a.begin >= x->a.end) return 0;
  bool x_before_y = y->clock[x->stream] >= x->pos;
  bool y_before_x = x->clock[y->stream] >= y->pos;
  return !(x_before_y || y_before_x);
}

int ddp_first_conflict_pairwise(const ddp_vrec *A, size_t na, const ddp_vrec *B, size_t nb, size_t *i, size_t *j) {
  for (size_t a = 0; a < na; a++)
    for (size_t b = 0; b < nb; b++)
      if (ddp_vrec_conflict(&A[a], &B[b])) {
        *i = a;
        *j = b;
        return 1;
      }
  return 0;
}

typedef struct {
  uint64_t arena, at;
} key;

static int key_cmp(const void *a, const void *b) {
  const key *x = a, *y = b;
  if (x->arena != y->arena) return x->arena < y->arena ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

static uint32_t key_of(const key *keys, size_t n, uint32_t arena, uint64_t at) {
  size_t lo = 0, hi = n;
  key k = {arena, at};
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    if (key_cmp(&keys[m], &k) < 0) lo = m + 1;
    else hi = m;
  }
  return (uint32_t)lo;
}

/* Counts over grid points: add v on [l, r], max over [l, r]. mx[n] = add[n] + max of the children. */
typedef struct {
  uint32_t size;
  int32_t *mx, *add;
} tree;

static void tree_init(tree *t, uint32_t npoints) {
  t->size = 1;
  while (t->size < npoints) t->size *= 2;
  t->mx = ddp_xcalloc((size_t)t->size * 2, sizeof(int32_t));
  t->add = ddp_xcalloc((size_t)t->size * 2, sizeof(int32_t));
}

static void tree_free(tree *t) {
  free(t->mx);
  free(t->add);
}

static void tree_add(tree *t, uint32_t n, uint32_t nl, uint32_t nr, uint32_t l, uint32_t r, int32_t v) {
  if (l <= nl && nr <= r) {
    t->add[n] += v;
    t->mx[n] += v;
    return;
  }
  uint32_t mid = nl + (nr - nl) / 2;
  if (l <= mid) tree_add(t, 2 * n, nl, mid, l, r, v);
  if (r > mid) tree_add(t, 2 * n + 1, mid + 1, nr, l, r, v);
  int32_t a = t->mx[2 * n], b = t->mx[2 * n + 1];
  t->mx[n] = t->add[n] + (a > b ? a : b);
}

static int32_t tree_max(const tree *t, uint32_t n, uint32_t nl, uint32_t nr, uint32_t l, uint32_t r) {
  if (l <= nl && nr <= r) return t->mx[n];
  uint32_t mid = nl + (nr - nl) / 2;
  int32_t best = INT32_MIN;
  if (l <= mid) {
    int32_t a = tree_max(t, 2 * n, nl, mid, l, r);
    if (a > best) best = a;
  }
  if (r > mid) {
    int32_t b = tree_max(t, 2 * n + 1, mid + 1, nr, l, r);
    if (b > best) best = b;
  }
  return t->add[n] + best;
}

typedef struct {
  uint32_t lo, hi; /* grid points */
  bool empty;      /* [c, c): the point lo == hi */
} span;

typedef struct {
  tree all, wr;       /* every record of the window; the writing ones */
  int32_t *zall, *zwr; /* empty ranges of the window per grid point (they also count in the trees) */
  const ddp_vrec *B;
  const span *sp;
} window;

static void window_put(window *w, size_t j, int32_t v) {
  const span *s = &w->sp[j];
  bool wr = w->B[j].a.write;
  tree_add(&w->all, 1, 0, w->all.size - 1, s->lo, s->hi, v);
  if (wr) tree_add(&w->wr, 1, 0, w->wr.size - 1, s->lo, s->hi, v);
  if (s->empty) {
    w->zall[s->lo] += v;
    if (wr) w->zwr[s->lo] += v;
  }
}

/* Could some record of the window conflict with x (its bytes and the write rule; the window already holds
 * only records unordered with x)? */
static bool window_hits(const window *w, const ddp_vrec *x, const span *s) {
  const tree *t = x->a.write ? &w->all : &w->wr;
  int32_t n = tree_max(t, 1, 0, t->size - 1, s->lo, s->hi);
  if (s->empty) n -= (x->a.write ? w->zall : w->zwr)[s->lo]; /* empty ranges at the same point do not meet */
  return n > 0;
}

static bool grows(const ddp_vrec *v, size_t n, uint16_t other) {
  for (size_t k = 1; k < n; k++)
    if (v[k].pos < v[k - 1].pos || v[k].clock[other] < v[k - 1].clock[other]) return false;
  for (size_t k = 0; k < n; k++)
    if (v[k].a.begin > v[k].a.end || v[k].stream != v[0].stream || v[k].stream >= DDP_VERIFY_MAX_STREAMS)
      return false;
  return true;
}

int ddp_first_conflict(const ddp_vrec *A, size_t na, const ddp_vrec *B, size_t nb, size_t *i, size_t *j) {
  if (!na || !nb) return 0;
  uint16_t sa = A[0].stream, sb = B[0].stream;
  if (sa == sb || sa >= DDP_VERIFY_MAX_STREAMS || sb >= DDP_VERIFY_MAX_STREAMS || !grows(A, na, sb) ||
      !grows(B, nb, sa))
    return ddp_first_conflict_pairwise(A, na, B, nb, i, j);
  size_t nkeys = 0, n = na + nb;
  key *keys = ddp_xmalloc(sizeof(key) * 2 * n);
  for (size_t k = 0; k < n; k++) {
    const ddp_access *a = k < na ? &A[k].a : &B[k - na].a;
    keys[nkeys++] = (key){a->arena, a->begin};
    keys[nkeys++] = (key){a->arena, a->end};
  }
  qsort(keys, nkeys, sizeof(key), key_cmp);
  size_t u = 0;
  for (size_t k = 0; k < nkeys; k++)
    if (u == 0 || key_cmp(&keys[u - 1], &keys[k]) != 0) keys[u++] = keys[k];
  span *sp = ddp_xmalloc(sizeof(span) * n);
  for (size_t k = 0; k < n; k++) {
    const ddp_access *a = k < na ? &A[k].a : &B[k - na].a;
    uint32_t kb = key_of(keys, u, a->arena, a->begin), ke = key_of(keys, u, a->arena, a->end);
    sp[k] = kb == ke ? (span){2 * kb, 2 * kb, true} : (span){2 * kb + 1, 2 * ke - 1, false};
  }
  free(keys);
  uint32_t npoints = (uint32_t)(2 * u + 1);
  window w = {.zall = ddp_xcalloc(npoints, sizeof(int32_t)), .zwr = ddp_xcalloc(npoints, sizeof(int32_t)),
              .B = B, .sp = sp + na};
  tree_init(&w.all, npoints);
  tree_init(&w.wr, npoints);
  size_t lb = 0, hb = 0, L = 0, H = 0;
  int found = 0;
  for (size_t a = 0; a < na && !found; a++) {
    const ddp_vrec *x = &A[a];
    while (lb < nb && B[lb].pos <= x->clock[sb]) lb++;      /* B[..lb) happen before x */
    while (hb < nb && B[hb].clock[sa] < x->pos) hb++;       /* B[hb..) happen after x */
    size_t nl = lb, nh = hb > lb ? hb : lb;
    for (size_t k = L; k < (H < nl ? H : nl); k++) window_put(&w, k, -1);
    for (size_t k = (H > nl ? H : nl); k < nh; k++) window_put(&w, k, +1);
    L = nl;
    H = nh;
    if (L == H || !window_hits(&w, x, &sp[a])) continue;
    for (size_t k = L; k < H; k++)
      if (ddp_vrec_conflict(x, &B[k])) {
        *i = a;
        *j = k;
        found = 1;
        break;
      }
  }
  tree_free(&w.all);
  tree_free(&w.wr);
  free(w.zall);
  free(w.zwr);
  free(sp);
  return found;
}

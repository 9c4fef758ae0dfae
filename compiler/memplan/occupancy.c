/* compiler/memplan/occupancy.c: see occupancy.h. Each node's sets are sorted arrays of disjoint byte ranges;
 * adding a range merges it with those it overlaps or touches (for positive sizes, a union of ranges
 * blocks exactly what its members block). */
#include "occupancy.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t lo, hi;
} span;

typedef struct {
  span *v;
  uint32_t n, cap;
} spanset;

struct ddp_occ {
  uint32_t ntimes, size; /* leaves: a power of two >= ntimes */
  spanset *cover, *sub;  /* per node (1-based heap order) */
  const spanset **query; /* a query's sets */
  uint32_t nquery, capquery;
};

ddp_occ *ddp_occ_new(uint32_t ntimes) {
  ddp_occ *o = ddp_xcalloc(1, sizeof *o);
  o->ntimes = ntimes ? ntimes : 1;
  o->size = 1;
  while (o->size < o->ntimes) o->size *= 2;
  o->cover = ddp_xcalloc((size_t)o->size * 2, sizeof *o->cover);
  o->sub = ddp_xcalloc((size_t)o->size * 2, sizeof *o->sub);
  return o;
}

void ddp_occ_free(ddp_occ *o) {
  if (!o) return;
  for (uint32_t i = 0; i < o->size * 2; i++) {
    free(o->cover[i].v);
    free(o->sub[i].v);
  }
  free(o->cover);
  free(o->sub);
  free(o->query);
  free(o);
}

/* The first range of s whose hi is > x (s->n when none). */
static uint32_t first_above(const spanset *s, uint64_t x) {
  uint32_t a = 0, b = s->n;
  while (a < b) {
    uint32_t m = a + (b - a) / 2;
    if (s->v[m].hi > x) b = m;
    else a = m + 1;
  }
  return a;
}

static void set_add(spanset *s, uint64_t lo, uint64_t hi) {
  uint32_t i = lo ? first_above(s, lo - 1) : 0; /* the first range with hi >= lo: overlaps or touches */
  uint32_t j = i;
  while (j < s->n && s->v[j].lo <= hi) j++; /* ranges i .. j-1 overlap or touch [lo, hi) */
  if (j > i) {
    if (s->v[i].lo < lo) lo = s->v[i].lo;
    if (s->v[j - 1].hi > hi) hi = s->v[j - 1].hi;
    s->v[i] = (span){lo, hi};
    memmove(&s->v[i + 1], &s->v[j], sizeof(span) * (s->n - j));
    s->n -= j - i - 1;
    return;
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4;
    s->v = ddp_xrealloc(s->v, sizeof(span) * s->cap);
  }
  memmove(&s->v[i + 1], &s->v[i], sizeof(span) * (s->n - i));
  s->v[i] = (span){lo, hi};
  s->n++;
}

static void add_rec(ddp_occ *o, uint32_t node, uint32_t nlo, uint32_t nhi, uint32_t f, uint32_t l, uint64_t lo,
                    uint64_t hi) {
  set_add(&o->sub[node], lo, hi);
  if (f <= nlo && nhi <= l) {
    set_add(&o->cover[node], lo, hi);
    return;
  }
  uint32_t mid = nlo + (nhi - nlo) / 2;
  if (f <= mid) add_rec(o, node * 2, nlo, mid, f, l, lo, hi);
  if (l > mid) add_rec(o, node * 2 + 1, mid + 1, nhi, f, l, lo, hi);
}

void ddp_occ_add(ddp_occ *o, int32_t first, int32_t last, uint64_t lo, uint64_t hi) {
  add_rec(o, 1, 0, o->size - 1, (uint32_t)first, (uint32_t)last, lo, hi);
}

static void gather(ddp_occ *o, const spanset *s) {
  if (!s->n) return;
  if (o->nquery == o->capquery) {
    o->capquery = o->capquery ? o->capquery * 2 : 64;
    o->query = ddp_xrealloc(o->query, sizeof *o->query * o->capquery);
  }
  o->query[o->nquery++] = s;
}

static void query_rec(ddp_occ *o, uint32_t node, uint32_t nlo, uint32_t nhi, uint32_t f, uint32_t l) {
  if (f <= nlo && nhi <= l) { /* every block recorded at or below this node overlaps [f, l] */
    gather(o, &o->sub[node]);
    return;
  }
  gather(o, &o->cover[node]); /* blocks covering this node overlap the part of [f, l] inside it */
  uint32_t mid = nlo + (nhi - nlo) / 2;
  if (f <= mid) query_rec(o, node * 2, nlo, mid, f, l);
  if (l > mid) query_rec(o, node * 2 + 1, mid + 1, nhi, f, l);
}

uint64_t ddp_occ_lowest(ddp_occ *o, int32_t first, int32_t last, uint64_t need) {
  o->nquery = 0;
  query_rec(o, 1, 0, o->size - 1, (uint32_t)first, (uint32_t)last);
  uint64_t x = 0;
  for (int moved = 1; moved;) {
    moved = 0;
    for (uint32_t k = 0; k < o->nquery; k++) {
      const spanset *s = o->query[k];
      uint32_t i = first_above(s, x);
      if (i < s->n && s->v[i].lo < x + need) { /* [x, x + need) meets this range: every x' below its end does */
        x = s->v[i].hi;
        moved = 1;
      }
    }
  }
  return x;
}

/* tests/unit/passes/test_linear_structures.c: the structures that replaced quadratic scans in the compiler
 * (issue 11) give exactly the answers of the scans they replaced, on random inputs:
 *   - compiler/memplan/occupancy.h: the lowest free offset during an instruction interval, against the
 *     planner's former loop (every time-overlapping block, sorted by offset, first fit), over a whole
 *     greedy placement whose offsets feed later queries;
 *   - compiler/verify/conflicts.h: the first unordered conflicting pair of two streams' records (vector
 *     clocks that grow, empty and overlapping byte ranges, reads and writes in several arenas), against
 *     the pairwise loop, including the pair it names;
 *   - plan/plan.c's hashed string interning: ids equal to a linear search's, for strings added through
 *     ddp_plan_add_string and for strings already in the table (a plan as the reader leaves it, with a
 *     repeated string: the first one is found), and after the table was cut short. */
#include "conflicts.h"
#include "occupancy.h"
#include "plan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { /* 0 .. n-1 (xorshift64*) */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)((rng * 2685821657736338717ull) >> 33) % n;
}

/* ---- occupancy ---- */
typedef struct {
  uint64_t off, end;
  int32_t first, last;
} placed;

static int by_off(const void *a, const void *b) {
  const placed *x = a, *y = b;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* The memory planner's loop before occupancy.h. */
static uint64_t lowest_scan(const placed *done, int ndone, placed *conf, int32_t f, int32_t l, uint64_t need) {
  int nc = 0;
  for (int j = 0; j < ndone; j++)
    if (done[j].first >= 0 && done[j].first <= l && f <= done[j].last) conf[nc++] = done[j];
  qsort(conf, (size_t)nc, sizeof(placed), by_off);
  uint64_t off = 0;
  for (int j = 0; j < nc; j++) {
    if (conf[j].off >= off + need) break;
    if (conf[j].end > off) off = conf[j].end;
  }
  return off;
}

static void test_occupancy(void) {
  int mismatches = 0, queries = 0;
  for (int round = 0; round < 40; round++) {
    uint32_t ntimes = 1 + rnd(round < 20 ? 16 : 300);
    int n = 1 + (int)rnd(400);
    placed *done = calloc((size_t)n, sizeof *done), *conf = calloc((size_t)n, sizeof *conf);
    ddp_occ *o = ddp_occ_new(ntimes);
    int ndone = 0;
    for (int i = 0; i < n; i++) {
      int32_t f = (int32_t)rnd(ntimes), l = f + (int32_t)rnd(ntimes - (uint32_t)f);
      if (rnd(4) == 0) l = f + (int32_t)rnd(ntimes - (uint32_t)f < 3 ? ntimes - (uint32_t)f : 3); /* short */
      uint64_t need = 256ull * (1 + rnd(rnd(2) ? 4 : 64));
      uint64_t want = lowest_scan(done, ndone, conf, f, l, need), got = ddp_occ_lowest(o, f, l, need);
      queries++;
      if (want != got && mismatches++ < 5)
        CHECK(0, "round %d block %d [%d, %d] x %llu: scan %llu, occupancy %llu", round, i, f, l,
              (unsigned long long)need, (unsigned long long)want, (unsigned long long)got);
      done[ndone++] = (placed){want, want + need, f, l};
      ddp_occ_add(o, f, l, want, want + need);
    }
    ddp_occ_free(o);
    free(done);
    free(conf);
  }
  CHECK(mismatches == 0, "%d of %d lowest-offset queries differ from the scan", mismatches, queries);
}

/* ---- conflicts ---- */
/* Two streams' records as the verifier builds them: each instruction advances its stream's position; now
 * and then one stream records an event the other waits on (merging clocks). */
static void make_records(ddp_vrec *A, size_t *na, ddp_vrec *B, size_t *nb, size_t steps, int empty_share) {
  uint32_t sync = 3 + rnd(12), space = 16 + rnd(4000), writes = 2 + rnd(6); /* how often, how sparse */
  uint32_t vc[2][DDP_VERIFY_MAX_STREAMS] = {{0}}, ev[DDP_VERIFY_MAX_STREAMS] = {0};
  uint16_t sid[2] = {(uint16_t)rnd(3), 0};
  sid[1] = (uint16_t)(sid[0] + 1 + rnd(4));
  *na = *nb = 0;
  int have_ev = -1;
  for (size_t k = 0; k < steps; k++) {
    int s = (int)rnd(2);
    uint16_t st = sid[s];
    uint32_t r = rnd(sync);
    vc[s][st]++;
    if (r == 0) { /* record */
      memcpy(ev, vc[s], sizeof ev);
      have_ev = s;
      continue;
    }
    if (r == 1 && have_ev >= 0 && have_ev != s) { /* wait on the other stream's event */
      for (int x = 0; x < DDP_VERIFY_MAX_STREAMS; x++)
        if (ev[x] > vc[s][x]) vc[s][x] = ev[x];
      continue;
    }
    int nacc = 1 + (int)rnd(3);
    for (int j = 0; j < nacc; j++) {
      ddp_vrec v = {.idx = (uint32_t)k, .iter = 0, .stream = st, .pos = vc[s][st]};
      memcpy(v.clock, vc[s], sizeof v.clock);
      uint64_t b = 64ull * rnd(space), len = (int)rnd(100) < empty_share ? 0 : 64ull * (1 + rnd(8));
      v.a = (ddp_access){.slot = j, .write = rnd(writes) == 0, .arena = rnd(2), .begin = b, .end = b + len};
      if (s == 0) A[(*na)++] = v;
      else B[(*nb)++] = v;
    }
  }
}

static void test_conflicts(void) {
  enum { STEPS = 300 };
  static ddp_vrec A[STEPS * 3], B[STEPS * 3];
  int differ = 0, found = 0, rounds = 0;
  for (int round = 0; round < 600; round++) {
    size_t na, nb, i1 = 0, j1 = 0, i2 = 0, j2 = 0;
    make_records(A, &na, B, &nb, 5 + rnd(STEPS), round % 3 == 0 ? 30 : 2);
    int want = ddp_first_conflict_pairwise(A, na, B, nb, &i1, &j1);
    int got = ddp_first_conflict(A, na, B, nb, &i2, &j2);
    rounds++;
    found += want;
    if ((want != got || (want && (i1 != i2 || j1 != j2))) && differ++ < 5)
      CHECK(0, "round %d: pairwise %d (%zu, %zu), sweep %d (%zu, %zu)", round, want, i1, j1, got, i2, j2);
  }
  CHECK(differ == 0, "%d of %d rounds differ from the pairwise check", differ, rounds);
  printf("conflicts: %d of %d random cases have one\n", found, rounds);
  CHECK(found > 50 && found < rounds - 50, "random cases both with and without a conflict: %d of %d", found,
        rounds);
  /* A stream whose clocks do not grow (not the verifier's records) still gets the pairwise answer. */
  ddp_vrec x[2] = {{.stream = 0, .pos = 5}, {.stream = 0, .pos = 3}}, y[1] = {{.stream = 1, .pos = 1}};
  x[1].a = (ddp_access){.write = 1, .begin = 0, .end = 8};
  y[0].a = (ddp_access){.write = 0, .begin = 4, .end = 12};
  size_t i = 9, j = 9;
  CHECK(ddp_first_conflict(x, 2, y, 1, &i, &j) == 1 && i == 1 && j == 0, "fallback: %zu %zu", i, j);
  /* The boundaries, unordered streams: sharing one byte is a conflict, touching ranges are not, nor two reads,
   * nor two arenas (the random cases above compare the two searches with each other, not with these) */
  ddp_vrec w = {.stream = 0, .pos = 1, .a = {.write = 1, .begin = 0, .end = 8}}, r = {.stream = 1, .pos = 1};
  r.a = (ddp_access){.write = 0, .begin = 7, .end = 16};
  CHECK(ddp_vrec_conflict(&w, &r) == 1, "one byte shared: a conflict");
  r.a.begin = 8;
  CHECK(ddp_vrec_conflict(&w, &r) == 0, "touching ranges: none");
  r.a.begin = 0, r.a.end = 1;
  CHECK(ddp_vrec_conflict(&w, &r) == 1, "the first byte: a conflict");
  w.a.write = 0;
  CHECK(ddp_vrec_conflict(&w, &r) == 0, "two reads: none");
  w.a.write = 1, r.a.arena = 1;
  CHECK(ddp_vrec_conflict(&w, &r) == 0, "two arenas: none");
  r.a.arena = 0, r.clock[0] = 1; /* r's stream waited for w's position */
  CHECK(ddp_vrec_conflict(&w, &r) == 0, "ordered: none");
}

/* ---- string interning ---- */
static void test_strings(void) {
  ddp_plan *p = ddp_plan_new();
  char buf[32];
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    snprintf(buf, sizeof buf, "s%d", i % 3000);
    int32_t id = ddp_plan_add_string(p, buf);
    if (id != i % 3000) bad++;
  }
  CHECK_INT("ids as a linear search gives them", 0, bad);
  CHECK_INT("distinct strings", 3000, p->nstrings);
  /* strings put in the table directly (as plan_read.c does), one of them twice: found, first one first */
  char **v = realloc(p->strings, sizeof(char *) * (p->nstrings + 3));
  if (!CHECK(v != NULL)) return;
  p->strings = v;
  p->cap_strings = p->nstrings + 3;
  p->strings[p->nstrings++] = strdup("direct");
  p->strings[p->nstrings++] = strdup("s7");
  p->strings[p->nstrings++] = strdup("direct");
  CHECK_INT("a directly added string", 3000, ddp_plan_add_string(p, "direct"));
  CHECK_INT("the first of two equal strings", 7, ddp_plan_add_string(p, "s7"));
  CHECK_INT("a new one after them", 3003, ddp_plan_add_string(p, "new"));
  CHECK_INT("and again", 3003, ddp_plan_add_string(p, "new"));
  CHECK_INT("empty string", 3004, ddp_plan_add_string(p, ""));
  CHECK_INT("NULL", -1, ddp_plan_add_string(p, NULL));
  /* the table cut short by its owner: the index follows */
  while (p->nstrings > 10) free(p->strings[--p->nstrings]);
  CHECK_INT("a string cut off is new again", 10, ddp_plan_add_string(p, "s2999"));
  CHECK_INT("one kept", 9, ddp_plan_add_string(p, "s9"));
  ddp_plan_free(p);
}

int main(void) {
  test_occupancy();
  test_conflicts();
  test_strings();
  return check_report("test_linear_structures");
}

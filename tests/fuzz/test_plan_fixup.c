/* tests/fuzz/test_plan_fixup.c: the plan-aware half of fuzz_plan's custom mutator (plan_fixup.c) and the
 * reader's buffer entry point it feeds. On the synthetic fixture plan: ddp_plan_read_buffer accepts what
 * ddp_plan_read accepts; an identity section mutation relays the file byte for byte; a flipped byte is a
 * checksum mismatch until fuzz_plan_fixup, after which the reader gets past the container checks; a section
 * that grows or shrinks by a byte is relaid so that the reader's complaint is about that section's
 * contents, never the file size, the CRC or the section table. */
#include "check.h"
#include "plan.h"
#include "plan_fixture.h"
#include "plan_fixup.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t keep(uint8_t *d, size_t size, size_t max) {
  (void)d, (void)max;
  return size;
}
static size_t grow(uint8_t *d, size_t size, size_t max) {
  if (size >= max) return size;
  d[size] = 0x5a;
  return size + 1;
}
static size_t shrink(uint8_t *d, size_t size, size_t max) {
  (void)d, (void)max;
  return size ? size - 1 : 0;
}

static uint8_t *load(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  uint8_t *v = malloc(*n + 64);
  if (v && fread(v, 1, *n, f) != *n) {
    free(v);
    v = NULL;
  }
  fclose(f);
  return v;
}

/* The reader's verdict on an image: NULL when it reads, else its message (static). */
static const char *verdict(const uint8_t *d, size_t n) {
  static char err[1024];
  ddp_plan *p = ddp_plan_read_buffer(d, n, "mutant", err, sizeof err);
  if (p) {
    ddp_plan_free(p);
    return NULL;
  }
  return err;
}

static void past_container(const char *what, const char *err) {
  if (!CHECK(err != NULL, "%s: the reader accepted a mutated plan", what)) return;
  CHECK_LACKS(what, err, "checksum");
  CHECK_LACKS(what, err, "bytes, got"); /* truncated / corrupted: expected N bytes, got M */
  CHECK_LACKS(what, err, "section table");
  CHECK_LACKS(what, err, "out of bounds (offset");
}

int main(void) {
  char path[] = "/tmp/test_plan_fixup.XXXXXX";
  int fd = mkstemp(path);
  if (!CHECK(fd >= 0)) return check_report("test_plan_fixup");
  close(fd);
  ddp_plan *p = fixture_plan();
  char err[1024];
  CHECK(ddp_plan_write(p, path, err, sizeof err) == 0, "%s", err);
  ddp_plan_free(p);
  size_t n = 0;
  uint8_t *orig = load(path, &n);
  unlink(path);
  if (!CHECK(orig != NULL && n > 100)) return check_report("test_plan_fixup");

  CHECK(verdict(orig, n) == NULL, "the fixture reads from a buffer: %s", verdict(orig, n));
  CHECK_CONTAINS("empty buffer", verdict(orig, 0), "mutant: ");
  CHECK_CONTAINS("no buffer", ddp_plan_read_buffer(NULL, 0, "mutant", err, sizeof err) ? "read" : err, "no plan bytes");

  size_t max = n + 64;
  uint8_t *d = malloc(max);
  uint32_t nsec = (uint32_t)orig[12] | (uint32_t)orig[13] << 8;
  CHECK(nsec == 9, "sections %u", nsec);
  for (unsigned s = 0; s < nsec; s++) {
    char what[64];
    memcpy(d, orig, n);
    size_t m = fuzz_plan_mutate_section(d, n, max, s, keep);
    CHECK_INT("identity relay size", n, m);
    fuzz_plan_fixup(d, m);
    snprintf(what, sizeof what, "identity relay of section %u", s);
    CHECK(m == n && memcmp(d, orig, n) == 0, "%s changed the bytes", what);

    memcpy(d, orig, n);
    m = fuzz_plan_mutate_section(d, n, max, s, grow);
    CHECK_INT("grown size", n + 1, m);
    snprintf(what, sizeof what, "section %u grown by a byte", s);
    past_container(what, verdict(d, fuzz_plan_fixup(d, m)));

    memcpy(d, orig, n);
    m = fuzz_plan_mutate_section(d, n, max, s, shrink);
    snprintf(what, sizeof what, "section %u shrunk by a byte", s);
    if (CHECK_INT("shrunk size", n - 1, m)) past_container(what, verdict(d, fuzz_plan_fixup(d, m)));
  }

  /* A flipped byte inside the tensors' names: refused for its checksum, then read past it once fixed up. */
  memcpy(d, orig, n);
  d[n / 2] ^= 0x40;
  CHECK_CONTAINS("raw flip", verdict(d, n), "checksum mismatch");
  const char *e = verdict(d, fuzz_plan_fixup(d, n));
  if (e) CHECK_LACKS("fixed-up flip", e, "checksum");

  /* A table that does not parse is left alone. */
  memcpy(d, orig, n);
  d[12] = 200;
  CHECK_INT("bad table", 0, fuzz_plan_mutate_section(d, n, max, 0, keep));
  CHECK_INT("no room", 0, fuzz_plan_mutate_section(d, n, n - 1, 0, keep));
  free(d);
  free(orig);
  return check_report("test_plan_fixup");
}

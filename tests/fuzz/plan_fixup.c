/* tests/fuzz/plan_fixup.c: the header/CRC fix-up and the section-wise mutation of fuzz_plan's custom
 * mutator (plan_fixup.h). The layout is the one docs/PLAN_FORMAT.md gives and plan/plan_read.c checks:
 * magic[8], u32 version, u32 nsections, u64 file size, nsections entries {u32 id, u32 reserved,
 * u64 offset, u64 size}, the payloads, then the CRC32 (zlib) of every byte before it. */
#include "plan_fixup.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { HEADER = 24, ENTRY = 24, CRC = 4, MAX_SECTIONS = 64 };

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

size_t fuzz_plan_fixup(uint8_t *d, size_t size) {
  if (size < HEADER + CRC) return size;
  put64(d + 16, (uint64_t)size);
  size_t body = size - CRC;
  put32(d + body, (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), d, body));
  return size;
}

size_t fuzz_plan_mutate_section(uint8_t *d, size_t size, size_t max, unsigned pick, fuzz_mutate_fn mutate) {
  if (size < HEADER + CRC || max < size) return 0;
  uint32_t nsec = le32(d + 12);
  if (nsec == 0 || nsec > MAX_SECTIONS) return 0;
  size_t table_end = HEADER + (size_t)nsec * ENTRY;
  if (table_end + CRC > size) return 0;
  size_t body = size - CRC, total = 0;
  for (uint32_t k = 0; k < nsec; k++) {
    const uint8_t *e = d + HEADER + (size_t)k * ENTRY;
    uint64_t off = le64(e + 8), len = le64(e + 16);
    if (off < table_end || off > body || len > body - off) return 0;
    total += (size_t)len;
  }
  uint32_t s = pick % nsec;
  uint8_t *e = d + HEADER + (size_t)s * ENTRY;
  size_t off = (size_t)le64(e + 8), len = (size_t)le64(e + 16);
  /* Room the mutated section may grow into: what `max` leaves after the relaid file. */
  size_t fixed = table_end + (total - len) + CRC;
  if (fixed >= max) return 0;
  size_t cap = max - fixed;
  uint8_t *payload = malloc(cap ? cap : 1), *out = malloc(max);
  if (!payload || !out) {
    free(payload);
    free(out);
    return 0;
  }
  memcpy(payload, d + off, len < cap ? len : cap);
  size_t nlen = mutate(payload, len < cap ? len : cap, cap);
  if (nlen > cap) nlen = cap;
  memcpy(out, d, table_end);
  size_t at = table_end;
  for (uint32_t k = 0; k < nsec; k++) {
    uint8_t *ek = out + HEADER + (size_t)k * ENTRY;
    const uint8_t *src = k == s ? payload : d + le64(ek + 8);
    size_t n = k == s ? nlen : (size_t)le64(ek + 16);
    memcpy(out + at, src, n);
    put64(ek + 8, at);
    put64(ek + 16, n);
    at += n;
  }
  memset(out + at, 0, CRC);
  at += CRC;
  memcpy(d, out, at);
  free(payload);
  free(out);
  return at;
}

/* runtime/ref/host_arena.c: arenas of the reference executor as guarded anonymous mappings (host_arena.h). */
#define _DEFAULT_SOURCE
#include "host_arena.h"
#include <sys/mman.h>
#include <unistd.h>

static uint64_t page_bytes(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (uint64_t)p : 4096u;
}

/* Bytes of the mapping behind an arena of n bytes: the pages that hold n, and one guard page each side. */
static int span_of(uint64_t n, uint64_t *span) {
  uint64_t pg = page_bytes();
  if (n > UINT64_MAX - 3 * pg) return -1;
  uint64_t body = (n + pg - 1) / pg * pg;
  *span = body + 2 * pg;
  return *span > (uint64_t)SIZE_MAX ? -1 : 0;
}

uint8_t *ddp_host_arena_new(uint64_t n) {
  uint64_t span, pg = page_bytes();
  if (span_of(n, &span) != 0) return NULL;
  uint8_t *base = mmap(NULL, (size_t)span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return NULL;
  if (span > 2 * pg && mprotect(base + pg, (size_t)(span - 2 * pg), PROT_READ | PROT_WRITE) != 0) {
    munmap(base, (size_t)span);
    return NULL;
  }
  return base + pg;
}

void ddp_host_arena_free(uint8_t *a, uint64_t n) {
  uint64_t span;
  if (!a || span_of(n, &span) != 0) return;
  munmap(a - page_bytes(), (size_t)span);
}

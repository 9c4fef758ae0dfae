/* tests/unit/io/test_st_scaling.c: the safetensors reader in linear time (issue 11: an 80k-entry header
 * took 45 s through a pairwise duplicate scan). Parses a file of 80,000 one-element tensors and one of
 * 20,000 (names in an order neither sorted nor reversed), looks every name up, and checks that the large
 * one costs less than 8x the small one + 50 ms (linear is 4x, plus cache effects; the quadratic reader was
 * 16x). Each size is timed in CPU seconds, the best of 3, so that a busy machine does not decide. Prints
 * both times. A repeated name among the 80k is still refused. */
#include "safetensors.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

/* The name of entry i: "layers.<k>.w" with k a permutation of 0..n-1 (i * 7919 mod n, n not divisible by 7919). */
static void name_of(uint32_t i, uint32_t n, char *buf, size_t cap) {
  snprintf(buf, cap, "layers.%u.w", (uint32_t)(((uint64_t)i * 7919u) % n));
}

/* A safetensors image of n F32 tensors of shape [1]; `dup` > 0: entry dup repeats entry 0's name. */
static uint8_t *image(uint32_t n, uint32_t dup, size_t *size) {
  size_t cap = (size_t)n * 80 + 64, h = 0;
  char *hdr = malloc(cap), nm[40];
  if (!hdr) return NULL;
  hdr[h++] = '{';
  for (uint32_t i = 0; i < n; i++) {
    name_of(dup && i == dup ? 0 : i, n, nm, sizeof nm);
    h += (size_t)snprintf(hdr + h, cap - h, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%u,%u]}",
                          i ? "," : "", nm, 4 * i, 4 * i + 4);
  }
  hdr[h++] = '}';
  size_t hp = (h + 7) / 8 * 8;
  uint8_t *v = calloc(1, 8 + hp + 4 * (size_t)n);
  if (!v) {
    free(hdr);
    return NULL;
  }
  for (int k = 0; k < 8; k++) v[k] = (uint8_t)((uint64_t)hp >> (8 * k));
  memcpy(v + 8, hdr, h);
  memset(v + 8 + h, ' ', hp - h);
  free(hdr);
  *size = 8 + hp + 4 * (size_t)n;
  return v;
}

/* CPU seconds of this process (the test is single-threaded): what other work on the machine takes from it
 * does not count. */
static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of 3: parse the image and find every name; -1 when something is wrong (reported). */
static double load_time(uint32_t n) {
  size_t size = 0;
  uint8_t *img = image(n, 0, &size);
  if (!CHECK(img != NULL, "image of %u entries", n)) return -1;
  double best = -1;
  for (int run = 0; run < 3; run++) {
    char err[512] = "", nm[40];
    double t0 = cpu_s();
    ddp_st_file *f = ddp_st_parse(img, size, "big.safetensors", err, sizeof err);
    if (!CHECK(f != NULL, "%u entries: %s", n, err)) break;
    uint32_t found = 0;
    for (uint32_t i = 0; i < n; i++) {
      name_of(i, n, nm, sizeof nm);
      const ddp_st_tensor *t = ddp_st_find(f, nm);
      found += t && t->begin == 4ull * i && t->end == 4ull * i + 4;
    }
    double dt = cpu_s() - t0;
    ddp_st_close(f);
    if (!CHECK_INT("entries found at their offsets", n, found)) break;
    if (best < 0 || dt < best) best = dt;
  }
  free(img);
  return best;
}

int main(void) {
  double small = load_time(20000), large = load_time(80000);
  printf("safetensors header: 20000 entries %.4f s, 80000 entries %.4f s (ratio %.2f)\n", small, large,
         small > 0 ? large / small : 0);
  if (small >= 0 && large >= 0)
    CHECK(large < 8 * small + 0.05, "80k entries took %.4f s, 20k took %.4f s: worse than linear", large, small);

  size_t size = 0;
  uint8_t *img = image(80000, 79999, &size);
  char err[512] = "";
  ddp_st_file *f = img ? ddp_st_parse(img, size, "dup.safetensors", err, sizeof err) : NULL;
  CHECK(img && f == NULL, "a repeated name among 80000 entries was accepted");
  CHECK_CONTAINS("duplicate refused", err, "dup.safetensors");
  ddp_st_close(f);
  free(img);
  return check_report("test_st_scaling");
}

/* tests/fuzz/fuzz_plan_mutator.c: libFuzzer's custom mutator for fuzz_plan (linked into the libFuzzer
 * build only: LLVMFuzzerMutate exists only there). Most mutations change one section's payload and relay
 * the section table; some mutate the whole image; both then put back the file size and the CRC32 the
 * reader checks (plan_fixup.c), so mutated plans reach decoding and validation instead of stopping at
 * "checksum mismatch". One in 16 is left raw, so the container checks themselves stay fuzzed. */
#include "plan_fixup.h"
#include <stddef.h>
#include <stdint.h>

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  unsigned kind = seed % 16;
  if (kind < 11) {
    size_t n = fuzz_plan_mutate_section(data, size, max_size, seed / 16, LLVMFuzzerMutate);
    if (n) return fuzz_plan_fixup(data, n);
  }
  size_t n = LLVMFuzzerMutate(data, size, max_size);
  return kind == 15 ? n : fuzz_plan_fixup(data, n);
}

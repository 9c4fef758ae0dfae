/* tests/fuzz/plan_fixup.h: the plan-aware half of fuzz_plan's custom mutator, kept apart from libFuzzer so
 * the normal build can test it: after bytes change, put back the header's file size and the trailing CRC32
 * (computed as plan/plan_read.c checks it), and mutate one section's payload while keeping the section
 * table consistent, so mutated plans get past the container checks and reach decoding and validation. */
#ifndef DDP_FUZZ_PLAN_FIXUP_H
#define DDP_FUZZ_PLAN_FIXUP_H
#include <stddef.h>
#include <stdint.h>

/* Rewrites the file-size field and the CRC32 of a plan image of `size` bytes in place (nothing when it is
 * shorter than a header plus a CRC). Returns size. */
size_t fuzz_plan_fixup(uint8_t *d, size_t size);

/* A byte mutator with libFuzzer's LLVMFuzzerMutate contract: mutates d[0..size) in place into at most
 * `max` bytes and returns the new size. */
typedef size_t (*fuzz_mutate_fn)(uint8_t *d, size_t size, size_t max);

/* Picks section `pick` mod the section count, mutates its payload with `mutate`, and relays the sections
 * one after another behind the table with offsets and sizes updated; the result has at most `max` bytes
 * and still needs fuzz_plan_fixup. Returns the new size, or 0 (d untouched) when the section table does
 * not parse or there is no room. */
size_t fuzz_plan_mutate_section(uint8_t *d, size_t size, size_t max, unsigned pick, fuzz_mutate_fn mutate);
#endif

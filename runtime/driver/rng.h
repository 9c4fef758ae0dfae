/* runtime/driver/rng.h: a counter-based random number generator shared by the data source and parameter init.
 * Pure functions of (seed, stream, index): no state, so any element can be drawn independently, in any
 * order, by any number of threads, with the same result.
 *
 *   ddp_rng_u64(seed, stream, index) = mix(mix(mix(seed ^ K0) ^ (stream * K1)) + index * K2)
 *   mix = the splitmix64 finaliser (x ^= x >> 30; x *= M1; x ^= x >> 27; x *= M2; x ^= x >> 31)
 *   uniform24 = top 24 bits / 2^24 (a float in [0,1)); uniform53 = top 53 bits / 2^53 (a double in [0,1))
 *   normal(seed, stream, i) = sqrt(-2 ln(1 - u53(2i))) * cos(2 pi u53(2i+1)), computed in double
 *     (Box-Muller, one value per index; u53(k) = uniform53(ddp_rng_u64(seed, stream, k)))
 *
 * Streams name the consumer so that they never share draws: parameter init uses small non-negative
 * stream ids (the INIT_TENSOR instruction's i2); the data source uses the DDP_RNG_STREAM_* constants. */
#ifndef DDP_RNG_H
#define DDP_RNG_H
#include <math.h>
#include <stdint.h>

#define DDP_RNG_STREAM_DATA_TOKENS 0xd47a000000000001ull /* random token data */
#define DDP_RNG_STREAM_DATA_DENSE 0xd47a000000000002ull  /* dense MLP dataset */
#define DDP_RNG_STREAM_LINK_LOAD 0xd47a000000000003ull   /* DDP_LINK_LOAD_MB's source bytes (runtime/cuda/link_load.c) */

static inline uint64_t ddp_rng_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static inline uint64_t ddp_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t h = ddp_rng_mix(seed ^ 0x6a09e667f3bcc909ull);
  h = ddp_rng_mix(h ^ (stream * 0x9e3779b97f4a7c15ull));
  return ddp_rng_mix(h + index * 0xd1b54a32d192ed03ull);
}

/* [0, 1) with 24 random bits: exact in a float. */
static inline float ddp_rng_uniform24(uint64_t bits) { return (float)(bits >> 40) * (1.0f / 16777216.0f); }

/* [0, 1) with 53 random bits: exact in a double. */
static inline double ddp_rng_uniform53(uint64_t bits) { return (double)(bits >> 11) * (1.0 / 9007199254740992.0); }

/* A standard normal value for element `index` of `stream` (two uniform draws: 2*index and 2*index + 1). */
static inline double ddp_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  double u1 = 1.0 - ddp_rng_uniform53(ddp_rng_u64(seed, stream, 2 * index)); /* (0, 1]: log is finite */
  double u2 = ddp_rng_uniform53(ddp_rng_u64(seed, stream, 2 * index + 1));
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
#endif

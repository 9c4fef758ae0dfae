/* base/bytes.h: little-endian integers at byte addresses, for the binary formats ddpc and ddprun read and
 * write (plan.bin's header and section table, safetensors' header length, the kernel cache's trailer). */
#ifndef DDP_BYTES_H
#define DDP_BYTES_H
#include <stdint.h>

static inline uint32_t ddp_le32(const uint8_t *at) {
  return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}
static inline uint64_t ddp_le64(const uint8_t *at) { return ddp_le32(at) | (uint64_t)ddp_le32(at + 4) << 32; }
static inline void ddp_put_le32(uint8_t *at, uint32_t v) {
  for (int k = 0; k < 4; k++) at[k] = (uint8_t)(v >> (8 * k));
}
static inline void ddp_put_le64(uint8_t *at, uint64_t v) {
  for (int k = 0; k < 8; k++) at[k] = (uint8_t)(v >> (8 * k));
}
#endif

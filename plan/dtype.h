/* plan/dtype.h: element types shared by the compiler, the plan format and both executors. */
#ifndef DDP_DTYPE_H
#define DDP_DTYPE_H
#include <stddef.h>
#include <stdint.h>

#define DDP_DTYPES(X)              \
  X(NONE, "none", 0)               \
  X(F32, "f32", 4)                 \
  X(BF16, "bf16", 2)               \
  X(F64, "f64", 8)                 \
  X(I32, "i32", 4)                 \
  X(U16, "u16", 2)

typedef enum {
#define DDP_DT_ENUM(id, name, size) DT_##id,
  DDP_DTYPES(DDP_DT_ENUM)
#undef DDP_DT_ENUM
  DT_COUNT
} ddp_dtype;

size_t ddp_dtype_size(int dt);
const char *ddp_dtype_name(int dt);
int ddp_dtype_from_name(const char *name); /* -1 when unknown */

/* bf16 <-> f32, round to nearest even (NaN kept quiet). */
static inline uint16_t ddp_f32_to_bf16(float f) {
  union { float f; uint32_t u; } v = {f};
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((v.u >> 16) & 1u);
  return (uint16_t)((v.u + rounding) >> 16);
}
static inline float ddp_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v = {(uint32_t)h << 16};
  return v.f;
}

/* Element access used by the reference executor and the tests: everything is computed in double and
 * rounded to the storage type on store, so the reference is at least as precise as any GPU kernel. */
static inline double ddp_load(const void *p, int dt, int64_t i) {
  switch (dt) {
  case DT_F32: return ((const float *)p)[i];
  case DT_BF16: return ddp_bf16_to_f32(((const uint16_t *)p)[i]);
  case DT_F64: return ((const double *)p)[i];
  case DT_I32: return ((const int32_t *)p)[i];
  case DT_U16: return ((const uint16_t *)p)[i];
  default: return 0.0;
  }
}
static inline void ddp_store(void *p, int dt, int64_t i, double v) {
  switch (dt) {
  case DT_F32: ((float *)p)[i] = (float)v; break;
  case DT_BF16: ((uint16_t *)p)[i] = ddp_f32_to_bf16((float)v); break;
  case DT_F64: ((double *)p)[i] = v; break;
  case DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  default: break;
  }
}
#endif

/* compiler/inspect/inspect_jput.h: the building helpers of the inspect JSON sections (inspect_shard_json.c,
 * inspect_tensor.c): set or append a new value, where any failure (out of memory, a NULL container) marks
 * *bad and drops the value, so a section is built without checking every call. */
#ifndef DDP_INSPECT_JPUT_H
#define DDP_INSPECT_JPUT_H
#include <jansson.h>
#include <math.h>
#include <stdint.h>

static inline void put(int *bad, json_t *o, const char *k, json_t *v) {
  if (!o) json_decref(v);
  if (!v || !o || json_object_set_new(o, k, v)) *bad = 1;
}
static inline void push(int *bad, json_t *a, json_t *v) {
  if (!a) json_decref(v);
  if (!v || !a || json_array_append_new(a, v)) *bad = 1;
}
static inline json_t *u64(uint64_t v) { return json_integer((json_int_t)v); }
static inline json_t *str(const char *s) { return s ? json_string(s) : json_null(); }
static inline json_t *real(double x) { return isfinite(x) ? json_real(x) : json_null(); }
#endif

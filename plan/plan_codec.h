/* plan/plan_io_internal.h: what the plan.bin writer (plan_io.c), reader (plan_io_read.c) and index
 * validation (plan_io_check.c) share: the section table, the header layout, the meta field table
 * generated from DDP_META_FIELDS, and little-endian byte-buffer primitives. Not part of the public API.
 * The byte-level format is specified in docs/PLAN_FORMAT.md. */
#ifndef DDP_PLAN_IO_INTERNAL_H
#define DDP_PLAN_IO_INTERNAL_H
#include "plan.h"
#include "bytes.h" /* ddp_le32, ddp_le64: the header fields */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* X(ID, numeric id, name): sections in the order the writer emits them. */
#define DDP_PLAN_SECTIONS(X) \
  X(META, 1, "meta")         \
  X(STRINGS, 2, "strings")   \
  X(TENSORS, 3, "tensors")   \
  X(MODULES, 4, "modules")   \
  X(KERNELS, 5, "kernels")   \
  X(BUCKETS, 6, "buckets")   \
  X(RANKS, 7, "ranks")       \
  X(STREAMS, 8, "streams")   \
  X(COMMS, 9, "comms")

enum {
#define DDP_SEC_ENUM(id, num, name) SEC_##id,
  DDP_PLAN_SECTIONS(DDP_SEC_ENUM)
#undef DDP_SEC_ENUM
  SEC_COUNT
};

/* Header: magic[8], u32 version, u32 nsections, u64 file size; then nsections entries of
 * {u32 id, u32 reserved, u64 offset, u64 size}; then the payloads; then u32 CRC32. */
#define DDP_PLAN_HEADER_BYTES 24u
#define DDP_PLAN_SECTION_ENTRY_BYTES 24u
#define DDP_PLAN_CRC_BYTES 4u
#define DDP_PLAN_NULL_STRING 0xffffffffu
#define DDP_PLAN_HASH_BYTES 16u
#define DDP_PLAN_MAX_WORLD 65536
#define DDP_PLAN_MAX_STREAMS 1024u
#define DDP_PLAN_MAX_EVENTS (1u << 20)

uint32_t ddp_io_section_num(int sec);   /* SEC_* -> numeric id in the file */
int ddp_io_section_index(uint32_t num); /* numeric id -> SEC_*, -1 when unknown */
const char *ddp_io_section_name(int sec);

/* The meta fields, generated from DDP_META_FIELDS: name, type ('I' int64, 'F' double, 'S' string) and
 * the field's offset inside ddp_meta. */
typedef struct ddp_meta_field {
  const char *name;
  char type;
  size_t offset;
} ddp_meta_field;
extern const ddp_meta_field ddp_meta_fields[];
extern const int ddp_meta_field_count;

/* Formats "path: message" into err; returns -1 so callers can `return ddp_io_fail(...)`. */
int ddp_io_fail(char *err, size_t errcap, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Index validation of a freshly read plan (plan_io_check.c): 0, or -1 with one line in err. */
int ddp_plan_validate(const ddp_plan *p, const char *path, char *err, size_t errcap);

/* ---- growable little-endian output buffer; `oom` is sticky ---- */
typedef struct ddp_wbuf {
  uint8_t *v;
  size_t n, cap;
  int oom;
} ddp_wbuf;

int ddp_wb_reserve(ddp_wbuf *b, size_t extra);
void ddp_wb_bytes(ddp_wbuf *b, const void *src, size_t n);
static inline void ddp_wb_uint(ddp_wbuf *b, uint64_t v, int nbytes) {
  uint8_t tmp[8];
  for (int k = 0; k < nbytes; k++) tmp[k] = (uint8_t)(v >> (8 * k));
  ddp_wb_bytes(b, tmp, (size_t)nbytes);
}
static inline void ddp_wb_u8(ddp_wbuf *b, uint8_t v) { ddp_wb_uint(b, v, 1); }
static inline void ddp_wb_u16(ddp_wbuf *b, uint16_t v) { ddp_wb_uint(b, v, 2); }
static inline void ddp_wb_u32(ddp_wbuf *b, uint32_t v) { ddp_wb_uint(b, v, 4); }
static inline void ddp_wb_u64(ddp_wbuf *b, uint64_t v) { ddp_wb_uint(b, v, 8); }
static inline void ddp_wb_i32(ddp_wbuf *b, int32_t v) { ddp_wb_uint(b, (uint32_t)v, 4); }
static inline void ddp_wb_i64(ddp_wbuf *b, int64_t v) { ddp_wb_uint(b, (uint64_t)v, 8); }
static inline void ddp_wb_f32(ddp_wbuf *b, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  ddp_wb_u32(b, u);
}
static inline void ddp_wb_f64(ddp_wbuf *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  ddp_wb_u64(b, u);
}
/* u32 length (DDP_PLAN_NULL_STRING for NULL) then the bytes, no terminator. */
void ddp_wb_str(ddp_wbuf *b, const char *s);

/* ---- bounds-checked little-endian input cursor; `bad` is sticky and reads past the end yield 0 ---- */
typedef struct ddp_rbuf {
  const uint8_t *v;
  size_t n, pos;
  int bad;
} ddp_rbuf;

static inline size_t ddp_rb_left(const ddp_rbuf *b) { return b->bad ? 0 : b->n - b->pos; }
static inline const uint8_t *ddp_rb_take(ddp_rbuf *b, size_t n) {
  if (b->bad || n > b->n - b->pos) {
    b->bad = 1;
    return NULL;
  }
  const uint8_t *at = b->v + b->pos;
  b->pos += n;
  return at;
}
static inline uint64_t ddp_rb_uint(ddp_rbuf *b, int nbytes) {
  const uint8_t *at = ddp_rb_take(b, (size_t)nbytes);
  uint64_t v = 0;
  if (at)
    for (int k = 0; k < nbytes; k++) v |= (uint64_t)at[k] << (8 * k);
  return v;
}
static inline uint8_t ddp_rb_u8(ddp_rbuf *b) { return (uint8_t)ddp_rb_uint(b, 1); }
static inline uint16_t ddp_rb_u16(ddp_rbuf *b) { return (uint16_t)ddp_rb_uint(b, 2); }
static inline uint32_t ddp_rb_u32(ddp_rbuf *b) { return (uint32_t)ddp_rb_uint(b, 4); }
static inline uint64_t ddp_rb_u64(ddp_rbuf *b) { return ddp_rb_uint(b, 8); }
static inline int32_t ddp_rb_i32(ddp_rbuf *b) { return (int32_t)ddp_rb_u32(b); }
static inline int64_t ddp_rb_i64(ddp_rbuf *b) { return (int64_t)ddp_rb_u64(b); }
static inline float ddp_rb_f32(ddp_rbuf *b) {
  uint32_t u = ddp_rb_u32(b);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline double ddp_rb_f64(ddp_rbuf *b) {
  uint64_t u = ddp_rb_u64(b);
  double d;
  memcpy(&d, &u, 8);
  return d;
}
/* A string written by ddp_wb_str: malloc'd and NUL-terminated, NULL for a null string. Sets `bad` when
 * truncated, `*oom` when out of memory. */
char *ddp_rb_str(ddp_rbuf *b, int *oom);

/* Serialized size of one instruction (fixed: every slot of ddp_instr is written). */
#define DDP_PLAN_INSTR_BYTES                                                                            \
  (4u * 2u + 3u * 4u + 7u * 4u + (unsigned)DDP_MAX_PTRS * (1u + 4u + 4u + 8u + 8u) +                    \
   (unsigned)DDP_MAX_INTS * 8u + (unsigned)DDP_MAX_FLOATS * 4u)
void ddp_wb_instr(ddp_wbuf *b, const ddp_instr *in);
void ddp_rb_instr(ddp_rbuf *b, ddp_instr *in);
#endif

/* plan/plan_io_codec.c: the encoding pieces shared by the plan.bin writer and reader: the section and
 * meta field tables (generated from their X-macros), the byte-buffer helpers, strings, the instruction
 * record and the one-line error formatter. */
#include "plan_codec.h"
#include "err.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const uint32_t section_nums[SEC_COUNT] = {
#define SEC_NUM(id, num, name) num,
    DDP_PLAN_SECTIONS(SEC_NUM)
#undef SEC_NUM
};
static const char *const section_names[SEC_COUNT] = {
#define SEC_NAME(id, num, name) name,
    DDP_PLAN_SECTIONS(SEC_NAME)
#undef SEC_NAME
};

uint32_t ddp_io_section_num(int sec) { return section_nums[sec]; }
const char *ddp_io_section_name(int sec) { return (sec >= 0 && sec < SEC_COUNT) ? section_names[sec] : "?"; }
int ddp_io_section_index(uint32_t num) {
  for (int s = 0; s < SEC_COUNT; s++)
    if (section_nums[s] == num) return s;
  return -1;
}

#define META_TYPE_I 'I'
#define META_TYPE_F 'F'
#define META_TYPE_S 'S'
#define META_ROW(t, name) {#name, META_TYPE_##t, offsetof(ddp_meta, name)},
const ddp_meta_field ddp_meta_fields[] = {DDP_META_FIELDS(META_ROW)};
#undef META_ROW
const int ddp_meta_field_count = (int)(sizeof ddp_meta_fields / sizeof ddp_meta_fields[0]);

int ddp_io_fail(char *err, size_t errcap, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *c = msg; *c; c++) /* one line, whatever was interpolated */
    if (*c == '\n' || *c == '\r') *c = ' ';
  return ddp_fail(err, errcap, "%s: %s", path ? path : "plan", msg);
}

int ddp_wb_reserve(ddp_wbuf *b, size_t extra) {
  if (b->oom) return -1;
  if (extra <= b->cap - b->n) return 0;
  size_t ncap = b->cap ? b->cap : 4096;
  while (ncap - b->n < extra) {
    if (ncap > SIZE_MAX / 2) {
      b->oom = 1;
      return -1;
    }
    ncap *= 2;
  }
  uint8_t *nv = realloc(b->v, ncap);
  if (!nv) {
    b->oom = 1;
    return -1;
  }
  b->v = nv;
  b->cap = ncap;
  return 0;
}

void ddp_wb_bytes(ddp_wbuf *b, const void *src, size_t n) {
  if (n == 0 || ddp_wb_reserve(b, n)) return;
  memcpy(b->v + b->n, src, n);
  b->n += n;
}

void ddp_wb_str(ddp_wbuf *b, const char *s) {
  if (!s) {
    ddp_wb_u32(b, DDP_PLAN_NULL_STRING);
    return;
  }
  size_t len = strlen(s);
  if (len >= DDP_PLAN_NULL_STRING) {
    b->oom = 1;
    return;
  }
  ddp_wb_u32(b, (uint32_t)len);
  ddp_wb_bytes(b, s, len);
}

char *ddp_rb_str(ddp_rbuf *b, int *oom) {
  uint32_t len = ddp_rb_u32(b);
  if (b->bad || len == DDP_PLAN_NULL_STRING) return NULL;
  const uint8_t *at = ddp_rb_take(b, len);
  if (!at) return NULL;
  char *s = malloc((size_t)len + 1);
  if (!s) {
    *oom = 1;
    return NULL;
  }
  memcpy(s, at, len);
  s[len] = '\0';
  return s;
}

void ddp_wb_instr(ddp_wbuf *b, const ddp_instr *in) {
  ddp_wb_u16(b, in->opcode);
  ddp_wb_u16(b, in->stream);
  ddp_wb_u16(b, in->op);
  ddp_wb_u16(b, in->flags);
  ddp_wb_i32(b, in->kernel);
  ddp_wb_i32(b, in->name);
  ddp_wb_i32(b, in->layer);
  for (int k = 0; k < 3; k++) ddp_wb_u32(b, in->grid[k]);
  for (int k = 0; k < 3; k++) ddp_wb_u32(b, in->block[k]);
  ddp_wb_u32(b, in->smem);
  for (int k = 0; k < DDP_MAX_PTRS; k++) ddp_wb_u8(b, in->dt[k]);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    ddp_wb_i32(b, in->p[k].tensor);
    ddp_wb_u32(b, in->p[k].arena);
    ddp_wb_u64(b, in->p[k].view);
    ddp_wb_u64(b, in->p[k].offset);
  }
  for (int k = 0; k < DDP_MAX_INTS; k++) ddp_wb_i64(b, in->i[k]);
  for (int k = 0; k < DDP_MAX_FLOATS; k++) ddp_wb_f32(b, in->f[k]);
}

void ddp_rb_instr(ddp_rbuf *b, ddp_instr *in) {
  memset(in, 0, sizeof *in);
  in->opcode = ddp_rb_u16(b);
  in->stream = ddp_rb_u16(b);
  in->op = ddp_rb_u16(b);
  in->flags = ddp_rb_u16(b);
  in->kernel = ddp_rb_i32(b);
  in->name = ddp_rb_i32(b);
  in->layer = ddp_rb_i32(b);
  for (int k = 0; k < 3; k++) in->grid[k] = ddp_rb_u32(b);
  for (int k = 0; k < 3; k++) in->block[k] = ddp_rb_u32(b);
  in->smem = ddp_rb_u32(b);
  for (int k = 0; k < DDP_MAX_PTRS; k++) in->dt[k] = ddp_rb_u8(b);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    in->p[k].tensor = ddp_rb_i32(b);
    in->p[k].arena = ddp_rb_u32(b);
    in->p[k].view = ddp_rb_u64(b);
    in->p[k].offset = ddp_rb_u64(b);
  }
  for (int k = 0; k < DDP_MAX_INTS; k++) in->i[k] = ddp_rb_i64(b);
  for (int k = 0; k < DDP_MAX_FLOATS; k++) in->f[k] = ddp_rb_f32(b);
}

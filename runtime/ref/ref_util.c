/* runtime/ref/ref_util.c: row conversion between typed buffers and double scratch rows for the reference
 * kernels (f32/f64 fast paths, ddp_load/ddp_store otherwise), and the aborting scratch allocator. */
#include "ref_util.h"
#include <stdio.h>
#include <stdlib.h>

void *ref_alloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) {
    fprintf(stderr, "ddprun: reference kernel: out of memory (%zu x %zu bytes)\n", count, size);
    abort();
  }
  return p;
}

int64_t ref_index(const void *p, int dt, int64_t i, int64_t n) {
  const double x = ddp_load(p, dt, i);
  return x >= 0.0 && x < (double)n ? (int64_t)x : -1;
}

void ref_load_row(const void *p, int dt, int64_t off, int64_t stride, int64_t n, double *dst) {
  if (dt == DT_F32) {
    const float *s = (const float *)p + off;
    for (int64_t j = 0; j < n; j++) dst[j] = s[j * stride];
  } else if (dt == DT_F64) {
    const double *s = (const double *)p + off;
    for (int64_t j = 0; j < n; j++) dst[j] = s[j * stride];
  } else if (dt == DT_BF16) {
    const uint16_t *s = (const uint16_t *)p + off;
    for (int64_t j = 0; j < n; j++) dst[j] = ddp_bf16_to_f32(s[j * stride]);
  } else {
    for (int64_t j = 0; j < n; j++) dst[j] = ddp_load(p, dt, off + j * stride);
  }
}

void ref_store_row(void *p, int dt, int64_t off, int64_t n, const double *src, int acc) {
  if (dt == DT_F32) {
    float *d = (float *)p + off;
    if (acc)
      for (int64_t j = 0; j < n; j++) d[j] = (float)((double)d[j] + src[j]);
    else
      for (int64_t j = 0; j < n; j++) d[j] = (float)src[j];
  } else if (dt == DT_F64) {
    double *d = (double *)p + off;
    if (acc)
      for (int64_t j = 0; j < n; j++) d[j] += src[j];
    else
      for (int64_t j = 0; j < n; j++) d[j] = src[j];
  } else {
    for (int64_t j = 0; j < n; j++)
      ddp_store(p, dt, off + j, acc ? ddp_load(p, dt, off + j) + src[j] : src[j]);
  }
}

void ref_fill_row(void *p, int dt, int64_t off, int64_t n, double v) {
  for (int64_t j = 0; j < n; j++) ddp_store(p, dt, off + j, v);
}

/* runtime/ref/ref_util.h: private helpers shared by the reference kernels (runtime/ref/ref_*.c), not part
 * of the plan contract: moving a row between a typed buffer and a double scratch row (the dtype switch is
 * hoisted out of the element loop), the partial-table chunk rule of plan/ops.h, and a scratch allocation
 * that aborts with a message (the kernels have no error channel). */
#ifndef DDP_REF_UTIL_H
#define DDP_REF_UTIL_H
#include "dtype.h"
#include "ops.h"
#include <stddef.h>
#include <stdint.h>

/* Zeroed scratch of count elements of size bytes; never NULL (aborts on failure). Free with free(). */
void *ref_alloc(size_t count, size_t size);
/* Element i of an index tensor (tokens, targets) of any dtype as an index below n; -1 when it is not one
 * (negative, n or more, NaN, not an integer's range): no float-to-integer conversion out of range. */
int64_t ref_index(const void *p, int dt, int64_t i, int64_t n);

/* dst[j] = p[off + j*stride] for j < n, converted to double. */
void ref_load_row(const void *p, int dt, int64_t off, int64_t stride, int64_t n, double *dst);

/* p[off + j] = src[j] (acc = 0) or p[off + j] + src[j] (acc = 1) for j < n, rounded to dt. */
void ref_store_row(void *p, int dt, int64_t off, int64_t n, const double *src, int acc);

/* p[off + j] = v for j < n. */
void ref_fill_row(void *p, int dt, int64_t off, int64_t n, double v);

/* Partial tables: N rows in P contiguous chunks of ceil(N/P) rows (P < 1 counts as 1); chunk c covers
 * rows [*lo, *hi), empty for chunks past N. */
static inline int64_t ref_parts(int64_t P) { return P < 1 ? 1 : P; }
static inline void ref_chunk(int64_t N, int64_t P, int64_t c, int64_t *lo, int64_t *hi) {
  int64_t rows = (N + ref_parts(P) - 1) / ref_parts(P);
  int64_t a = c * rows, b = a + rows;
  *lo = a < N ? a : N;
  *hi = b < N ? b : N;
}

/* Attention geometry shared by ATTN_* (the ATTN_I_* slots of plan/op_slots.h). */
typedef struct ref_attn_dims {
  int64_t B, T, H, Dh, sq, sk, sv, so;
  int causal;
  double scale;
} ref_attn_dims;
static inline ref_attn_dims ref_attn_dims_of(const ddp_kargs *a) {
  ref_attn_dims d = {a->i[ATTN_I_B],           a->i[ATTN_I_T],
                     a->i[ATTN_I_H],           a->i[ATTN_I_DH],
                     a->i[ATTN_I_QSTRIDE],     a->i[ATTN_I_KSTRIDE],
                     a->i[ATTN_I_VSTRIDE],     a->i[ATTN_I_OSTRIDE],
                     a->i[ATTN_I_CAUSAL] != 0, (double)a->f[ATTN_F_SCALE]};
  return d;
}
#endif

/* compiler/verify/conflicts.h: the verifier's search for an unordered pair of accesses between two streams.
 * A record is one access of one instruction, with the position of that instruction on its stream and the
 * stream's vector clock at that moment (verify.c). Records x (stream sa) and y (stream sb) conflict when
 * they touch overlapping bytes of one arena, one of them writes, and neither happens before the other
 * (y's clock has not seen x's position and x's clock has not seen y's). */
#ifndef DDP_CONFLICTS_H
#define DDP_CONFLICTS_H
#include "access.h"
#include <stddef.h>

#define DDP_VERIFY_MAX_STREAMS 8

typedef struct ddp_vrec {
  uint32_t idx;  /* instruction index within its program */
  int iter;      /* replay (0 or 1) */
  uint16_t stream;
  uint32_t pos;  /* position on its stream */
  uint32_t clock[DDP_VERIFY_MAX_STREAMS];
  ddp_access a;
} ddp_vrec;

int ddp_vrec_conflict(const ddp_vrec *x, const ddp_vrec *y);

/* The first conflicting pair (x = A[*i], y = B[*j]) in the order (i, then j): 1, or 0 when none. A and B
 * are one stream's records each, in program order. ddp_first_conflict sweeps: the records of B unordered
 * with A[i] form a window that only moves forward (clocks only grow), kept in a tree of byte ranges
 * (range add, range max), so it costs O((|A| + |B|) log) plus one scan of a window when a conflict is
 * found; ddp_first_conflict_pairwise tries every pair (the reference; also the fallback for records whose
 * clocks do not grow or whose range is reversed). */
int ddp_first_conflict(const ddp_vrec *A, size_t na, const ddp_vrec *B, size_t nb, size_t *i, size_t *j);
int ddp_first_conflict_pairwise(const ddp_vrec *A, size_t na, const ddp_vrec *B, size_t nb, size_t *i, size_t *j);
#endif

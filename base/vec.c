/* base/vec.c: see vec.h. */
#include "vec.h"
#include "err.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ddp_vec_reserve(void *v, size_t *cap, size_t need, size_t elem) {
  void **pv = v;
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return -1;
    ncap *= 2;
  }
  if (elem && ncap > SIZE_MAX / elem) return -1;
  void *nv = realloc(*pv, ncap * elem);
  if (!nv) return -1;
  memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
  *pv = nv;
  *cap = ncap;
  return 0;
}

void ddp_xvec_reserve_at(void *v, size_t *cap, size_t need, size_t elem, const char *file, int line) {
  if (ddp_vec_reserve(v, cap, need, elem)) ddp_xmalloc_at(SIZE_MAX, file, line); /* prints, exits */
}

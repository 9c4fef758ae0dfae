/* tests/tools/st_compare.c: compares two safetensors files tensor by tensor:
 *   st_compare A B [--rtol R] [--atol T]
 * Same names, dtypes and shapes required; values close when |a - b| <= atol + rtol * |b| (NaN never).
 * Prints the worst element and exits 1 when anything differs. Used by the DDP-equivalence and GPU-vs-
 * reference tests. */
#include "dtype.h"
#include "safetensors.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: st_compare A B [--rtol R] [--atol T]\n");
    return 2;
  }
  double rtol = 1e-5, atol = 1e-8;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rtol")) rtol = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--atol")) atol = atof(argv[i + 1]);
  }
  char err[1024];
  ddp_st_file *a = ddp_st_open(argv[1], err, sizeof err), *b = a ? ddp_st_open(argv[2], err, sizeof err) : NULL;
  if (!a || !b) {
    fprintf(stderr, "st_compare: %s\n", err);
    return 2;
  }
  int bad = 0;
  double worst = 0;
  const char *worst_name = "";
  if (a->ntensors != b->ntensors) {
    printf("%s has %u tensors, %s has %u\n", argv[1], a->ntensors, argv[2], b->ntensors);
    bad = 1;
  }
  for (uint32_t k = 0; k < a->ntensors; k++) {
    const ddp_st_tensor *x = &a->tensors[k], *y = ddp_st_find(b, x->name);
    if (!y) {
      printf("%s: missing in %s\n", x->name, argv[2]);
      bad = 1;
      continue;
    }
    uint64_t n = 1;
    int same_shape = x->ndim == y->ndim && x->dtype == y->dtype && x->dtype >= 0;
    for (int d = 0; d < x->ndim && same_shape; d++) {
      same_shape = x->shape[d] == y->shape[d];
      n *= (uint64_t)x->shape[d];
    }
    if (!same_shape) {
      printf("%s: dtype or shape differ\n", x->name);
      bad = 1;
      continue;
    }
    size_t es = ddp_dtype_size(x->dtype);
    const uint8_t *pa = ddp_st_data(a, x), *pb = ddp_st_data(b, y);
    for (uint64_t i = 0; i < n; i++) {
      double va, vb;
      /* the data may be unaligned: go through a local copy */
      uint8_t ca[8], cb[8];
      memcpy(ca, pa + i * es, es);
      memcpy(cb, pb + i * es, es);
      va = ddp_load(ca, x->dtype, 0);
      vb = ddp_load(cb, x->dtype, 0);
      double diff = fabs(va - vb), lim = atol + rtol * fabs(vb);
      double score = lim > 0 ? diff / lim : (diff > 0 ? INFINITY : 0);
      if (isnan(va) || isnan(vb) || diff > lim) {
        if (!bad || score > worst)
          printf("%s[%llu]: %.9g vs %.9g (|diff| %.3g > %.3g)\n", x->name, (unsigned long long)i, va, vb, diff, lim);
        bad = 1;
      }
      if (score > worst) {
        worst = score;
        worst_name = x->name;
      }
    }
  }
  printf("%u tensors, worst |diff|/tolerance %.3g (%s)\n", a->ntensors, worst, worst_name);
  ddp_st_close(a);
  ddp_st_close(b);
  return bad;
}

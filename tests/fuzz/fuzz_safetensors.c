/* tests/fuzz/fuzz_safetensors.c: fuzz target of the safetensors reader and writer (runtime/io/st_read.c,
 * st_write.c), which checkpoints go through. The input is a whole file image for ddp_st_parse. A refusal
 * must be one non-empty line. A file the reader accepts must keep every promise of safetensors.h: spans
 * inside the data section, of shape x element size bytes, contiguous and covering it exactly, every name
 * found by ddp_st_find, every byte readable (ASan checks the reads). Then it is written with ddp_st_write
 * and opened again with ddp_st_open (the mapped path), and must come back with the same tensors and
 * bytes. */
#include "fuzz_util.h"
#include "safetensors.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_begin(const void *a, const void *b) {
  const ddp_st_tensor *x = *(const ddp_st_tensor *const *)a, *y = *(const ddp_st_tensor *const *)b;
  return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}


static void check_file(const ddp_st_file *f) {
  if (f->ntensors && !f->tensors) fuzz_die("ddp_st_parse", "tensors missing");
  const ddp_st_tensor **order = malloc((f->ntensors ? f->ntensors : 1) * sizeof *order);
  if (!order) fuzz_die("malloc", "out of memory");
  volatile uint8_t sink = 0;
  for (uint32_t i = 0; i < f->ntensors; i++) {
    const ddp_st_tensor *t = &f->tensors[i];
    if (!t->name || t->ndim < 0 || t->ndim > DDP_ST_MAX_DIMS) fuzz_die("ddp_st_parse", "bad name or rank");
    if (t->begin > t->end || t->end > f->data_bytes) fuzz_die("ddp_st_parse", "a span outside the data section");
    const ddp_st_tensor *found = ddp_st_find(f, t->name);
    if (!found || strcmp(found->name, t->name) != 0) fuzz_die("ddp_st_find", "an accepted tensor is not found");
    const uint8_t *bytes = ddp_st_data(f, t);
    for (uint64_t k = t->begin; k < t->end; k++) sink ^= bytes[k - t->begin];
    order[i] = t;
  }
  (void)sink;
  qsort(order, f->ntensors, sizeof *order, by_begin);
  uint64_t at = 0;
  for (uint32_t i = 0; i < f->ntensors; i++) {
    if (order[i]->begin != at) fuzz_die("ddp_st_parse", "accepted spans with a gap or an overlap");
    at = order[i]->end;
  }
  if (at != f->data_bytes) fuzz_die("ddp_st_parse", "accepted spans that do not cover the data section");
  free(order);
}

/* Writes the tensors ddpc has a dtype for back out and reads them again. */
static void round_trip(const ddp_st_file *f) {
  ddp_st_entry *v = calloc(f->ntensors ? f->ntensors : 1, sizeof *v);
  if (!v) fuzz_die("calloc", "out of memory");
  uint32_t n = 0;
  for (uint32_t i = 0; i < f->ntensors; i++) {
    const ddp_st_tensor *t = &f->tensors[i];
    if (t->dtype < 0) continue;
    v[n] = (ddp_st_entry){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = ddp_st_data(f, t)};
    memcpy(v[n].shape, t->shape, sizeof t->shape);
    n++;
  }
  char path[4200], err[1024] = "";
  snprintf(path, sizeof path, "%s/roundtrip.safetensors", fuzz_tmp_dir());
  if (ddp_st_write(path, v, n, NULL, 0, NULL, NULL, err, sizeof err) != 0) {
    fuzz_check_message("ddp_st_write", err);
    free(v);
    return; /* e.g. names the writer refuses; the reader may be more lenient */
  }
  ddp_st_file *g = ddp_st_open(path, err, sizeof err);
  if (!g) fuzz_die("ddp_st_open refuses what ddp_st_write wrote", err);
  if (g->ntensors != n) fuzz_die("round trip", "tensor count changed");
  for (uint32_t i = 0; i < n; i++) {
    const ddp_st_tensor *a = ddp_st_find(f, v[i].name), *b = ddp_st_find(g, v[i].name);
    if (!a || !b || a->dtype != b->dtype || a->ndim != b->ndim ||
        memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]) != 0 || a->end - a->begin != b->end - b->begin ||
        memcmp(ddp_st_data(f, a), ddp_st_data(g, b), (size_t)(a->end - a->begin)) != 0)
      fuzz_die("round trip", v[i].name);
  }
  ddp_st_close(g);
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[1024] = "";
  ddp_st_file *f = ddp_st_parse(data, size, "fuzz.safetensors", err, sizeof err);
  if (!f) {
    fuzz_check_message("ddp_st_parse", err);
    return 0;
  }
  check_file(f);
  ddp_st_meta(f, "step");
  ddp_st_meta(f, "format");
  round_trip(f);
  ddp_st_close(f);
  return 0;
}

/* tests/unit/driver/test_init_fill.c: INIT_TENSOR's host fill (runtime/driver/init_fill.c, both executors') with a
 * run and a stride (plan/op_slots.h INIT_TENSOR_I_RUN, _STRIDE): a tensor-parallel rank's column block of a
 * unit [R, C] (runs of C/T elements C apart from t C/T) draws, bit for bit, the elements a contiguous
 * INIT_TENSOR of the whole unit draws at those places, for every init kind, in f32 and bf16, with a unit that
 * starts inside its stream (first > 0) and a rank salt, single-threaded and on the threaded path (over 2^20
 * elements); run 0 is the contiguous range, and a run longer than the tensor is one contiguous range too. */
#include "exec.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static ddp_instr init(int kind, int dt, int64_t elements, int64_t first, int64_t run, int64_t stride) {
  ddp_instr in = ddp_instr_blank(I_INIT_TENSOR, 0);
  in.dt[INIT_TENSOR_P_TENSOR] = (uint8_t)dt;
  in.i[INIT_TENSOR_I_KIND] = kind;
  in.i[INIT_TENSOR_I_ELEMENTS] = elements;
  in.i[INIT_TENSOR_I_STREAM] = 3;
  in.i[INIT_TENSOR_I_FAN_IN] = 64;
  in.i[INIT_TENSOR_I_SALT] = 5;
  in.i[INIT_TENSOR_I_FIRST] = first;
  in.i[INIT_TENSOR_I_RUN] = run;
  in.i[INIT_TENSOR_I_STRIDE] = stride;
  in.f[INIT_TENSOR_F_A] = kind == INIT_ROPE_INV_FREQ ? 10000.0f : 0.5f;
  in.f[INIT_TENSOR_F_B] = kind == INIT_UNIFORM ? 2.0f : 1.0f;
  return in;
}

/* The whole unit [rows, cols] from stream index `first`, then each of T ranks' column blocks: element i of
 * block t is element (i / (cols / T)) * cols + t * cols / T + i % (cols / T) of the unit. Returns the mismatches. */
static int column_blocks(int kind, int dt, int64_t rows, int64_t cols, int T, int64_t first) {
  size_t es = ddp_dtype_size(dt);
  int64_t n = rows * cols, len = cols / T;
  uint8_t *whole = malloc((size_t)n * es), *block = malloc((size_t)(rows * len) * es);
  ddp_instr w = init(kind, dt, n, first, 0, 0);
  ddp_init_fill(&w, 42, whole);
  int bad = 0;
  for (int t = 0; t < T; t++) {
    ddp_instr b = init(kind, dt, rows * len, first + t * len, len, cols);
    memset(block, 0xa5, (size_t)(rows * len) * es);
    ddp_init_fill(&b, 42, block);
    for (int64_t i = 0; i < rows * len; i++) {
      int64_t at = (i / len) * cols + t * len + i % len;
      if (memcmp(block + (size_t)i * es, whole + (size_t)at * es, es) && bad++ < 3)
        fprintf(stderr, "  %s %s [%lld, %lld] block %d: element %lld differs from the unit's %lld\n", ddp_init_name(kind),
                ddp_dtype_name(dt), (long long)rows, (long long)cols, t, (long long)i, (long long)at);
    }
  }
  free(whole);
  free(block);
  return bad;
}

/* run 0, and a run covering the whole tensor (stride anything >= it): the contiguous range from first. */
static int contiguous(int kind, int64_t n, int64_t first) {
  float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *c = malloc((size_t)(n + first) * 4);
  ddp_instr x = init(kind, DT_F32, n, first, 0, 0), y = init(kind, DT_F32, n, first, n + 3, n + 100),
            z = init(kind, DT_F32, n + first, 0, 0, 0);
  ddp_init_fill(&x, 7, a);
  ddp_init_fill(&y, 7, b);
  ddp_init_fill(&z, 7, c);
  int bad = memcmp(a, b, (size_t)n * 4) != 0 || memcmp(a, c + first, (size_t)n * 4) != 0;
  free(a);
  free(b);
  free(c);
  return bad;
}

int main(void) {
  const int kinds[] = {INIT_ZEROS, INIT_CONST, INIT_UNIFORM, INIT_NORMAL, INIT_TRUNC_NORMAL, INIT_ROPE_INV_FREQ};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    const char *nm = ddp_init_name(kinds[k]);
    CHECK(column_blocks(kinds[k], DT_F32, 5, 12, 3, 0) == 0, "%s f32: 3 column blocks of [5, 12]", nm);
    CHECK(column_blocks(kinds[k], DT_F32, 7, 8, 2, 1000) == 0, "%s f32: 2 column blocks of [7, 8] from 1000", nm);
    CHECK(column_blocks(kinds[k], DT_BF16, 6, 16, 4, 17) == 0, "%s bf16: 4 column blocks of [6, 16] from 17", nm);
    CHECK(column_blocks(kinds[k], DT_F32, 9, 10, 1, 3) == 0, "%s f32: one block (stride = run)", nm);
    CHECK(contiguous(kinds[k], 50, 9) == 0, "%s: run 0 and a run past the end are the contiguous range", nm);
  }
  /* the threaded path: 2 blocks of 2^20 elements each */
  CHECK(column_blocks(INIT_NORMAL, DT_F32, 1024, 2048, 2, 64) == 0, "normal: column blocks of [1024, 2048], threaded");
  return check_report("test_init_fill");
}

/* tests/fuzz/test_fuzz_finds.c: regression tests, in the normal build, for the bugs the fuzz targets found
 * and this branch fixed (the inputs themselves are in regress/, replayed by fuzz_regress_<target>).
 *   data vocab: a plan whose vocab exceeds what its I32 token tensors hold (fuzz_plan, crash-65bb89c8:
 *   vocab ~8e18 from a mutated meta) made ddp_data_fill store an out-of-range double into an int32 (UB,
 *   UBSan "outside the range of representable values"); ddp_data_open now refuses it with one line. */
#include "check.h"
#include "data.h"
#include "dtype.h"
#include "plan.h"
#include <stdlib.h>
#include <string.h>

static ddp_plan *token_plan(int64_t vocab, int dt) {
  ddp_plan *p = ddp_plan_new();
  p->meta.data_kind = DATA_RANDOM_TOKENS;
  p->meta.vocab = vocab;
  p->meta.context = 4;
  p->meta.batch_per_rank = 2;
  p->meta.world = 1;
  for (int k = 0; k < 2; k++) {
    ddp_tensor t = {.name = k ? "batch.targets" : "batch.tokens", .flags = k ? TF_TARGETS : TF_TOKENS,
                    .dtype = (uint8_t)dt, .arena = ARENA_IO, .ndim = 1, .shape = {8}, .base = -1,
                    .bytes = 8 * ddp_dtype_size(dt), .param = -1, .first_use = -1, .last_use = -1};
    int32_t id = ddp_plan_add_tensor(p, &t);
    if (k) p->meta.targets_tensor = id;
    else p->meta.tokens_tensor = id;
  }
  return p;
}

/* Opens the data of a vocab/dtype plan: NULL (message in err) or the source, closed after one fill whose
 * tokens must all lie in [0, vocab). */
static int opens(int64_t vocab, int dt, char *err, size_t errcap) {
  ddp_plan *p = token_plan(vocab, dt);
  err[0] = 0;
  ddp_data *d = ddp_data_open(p, 7, err, errcap);
  if (d) {
    double in[8], tg[8];
    int32_t in32[8], tg32[8];
    void *a = dt == DT_I32 ? (void *)in32 : (void *)in, *b = dt == DT_I32 ? (void *)tg32 : (void *)tg;
    CHECK(ddp_data_fill(d, 0, 0, 1, a, b, err, errcap) == 0, "%s", err);
    for (int k = 0; k < 8; k++) {
      double x = ddp_load(a, dt, k), y = ddp_load(b, dt, k);
      CHECK(x >= 0 && x < (double)vocab && y >= 0 && y < (double)vocab, "token %g / %g for vocab %lld", x, y,
            (long long)vocab);
    }
    ddp_data_close(d);
  }
  ddp_plan_free(p);
  return d != NULL;
}

int main(void) {
  char err[512];
  CHECK(!opens((int64_t)1 << 40, DT_I32, err, sizeof err), "vocab 2^40 in i32 tokens was accepted");
  CHECK_CONTAINS("vocab 2^40", err, "data: plan's vocab 1099511627776 does not fit its tokens tensor of dtype i32");
  CHECK(!opens(8356350000000000000LL, DT_I32, err, sizeof err), "the fuzzer's vocab was accepted");
  CHECK(!opens(((int64_t)1 << 31) + 1, DT_I32, err, sizeof err), "vocab 2^31 + 1 in i32 was accepted");
  CHECK(opens((int64_t)1 << 31, DT_I32, err, sizeof err), "vocab 2^31 in i32 refused: %s", err);
  CHECK(opens(65536, DT_U16, err, sizeof err), "vocab 65536 in u16 refused: %s", err);
  CHECK(!opens(65537, DT_U16, err, sizeof err), "vocab 65537 in u16 was accepted");
  CHECK(opens((int64_t)1 << 24, DT_F64, err, sizeof err), "vocab 2^24 in f64 refused: %s", err);
  CHECK(!opens(((int64_t)1 << 24) + 2, DT_F32, err, sizeof err), "vocab 2^24 + 2 in f32 was accepted");
  CHECK(!strchr(err, '\n'));
  return check_report("test_fuzz_finds");
}

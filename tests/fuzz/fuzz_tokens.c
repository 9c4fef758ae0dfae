/* tests/fuzz/fuzz_tokens.c: fuzz target of the token-file data source (runtime/io/data.c). The input's
 * first four bytes choose the plan's shape (vocab, context, rows per rank, world); the rest is written as
 * the token file (flat little-endian uint16). A plan naming that file is built in memory, then
 * ddp_data_open, ddp_data_validate and ddp_data_fill for a few steps of every rank run on it. Refusals
 * must be one non-empty line; when the whole file validates, no fill may fail, and every token a fill
 * hands out must be below the vocab. */
#include "data.h"
#include "dtype.h"
#include "fuzz_util.h"
#include "plan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 3

static int32_t add_batch_tensor(ddp_plan *p, const char *name, int dtype, int64_t numel, uint32_t flags) {
  ddp_tensor t = {.name = (char *)name, .flags = flags, .dtype = (uint8_t)dtype, .arena = ARENA_IO, .ndim = 1,
                  .shape = {numel}, .base = -1, .bytes = (uint64_t)numel * ddp_dtype_size(dtype), .param = -1,
                  .first_use = -1, .last_use = -1};
  int32_t id = ddp_plan_add_tensor(p, &t);
  if (id < 0) fuzz_die("ddp_plan_add_tensor", "out of memory");
  return id;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  static const int64_t vocabs[8] = {1, 2, 7, 61, 256, 1000, 65535, 65536};
  static const int dtypes[4] = {DT_I32, DT_F32, DT_U16, DT_F64};
  int64_t vocab = vocabs[data[0] & 7], context = 1 + (data[1] & 31), batch = 1 + (data[2] & 3);
  int world = 1 + (data[3] & 3), dt = dtypes[(data[0] >> 3) & 3];
  const char *path = fuzz_write_file("tokens.bin", data + 4, size - 4);

  ddp_plan *p = ddp_plan_new();
  if (!p) fuzz_die("ddp_plan_new", "out of memory");
  p->meta.model_kind = MODEL_TRANSFORMER;
  p->meta.data_kind = DATA_TOKEN_FILE;
  p->meta.vocab = vocab;
  p->meta.context = context;
  p->meta.batch_per_rank = batch;
  p->meta.world = world;
  if (!(p->meta.data_path = strdup(path))) fuzz_die("strdup", "out of memory");
  p->meta.tokens_tensor = add_batch_tensor(p, "batch.tokens", dt, batch * context, TF_TOKENS);
  p->meta.targets_tensor = add_batch_tensor(p, "batch.targets", dt, batch * context, TF_TARGETS);

  char err[1024] = "";
  ddp_data *d = ddp_data_open(p, 1, err, sizeof err);
  if (!d) {
    fuzz_check_message("ddp_data_open", err);
    ddp_plan_free(p);
    return 0;
  }
  int valid = ddp_data_validate(d, err, sizeof err) == 0;
  if (!valid) fuzz_check_message("ddp_data_validate", err);
  size_t n = (size_t)(batch * context), esize = ddp_dtype_size(dt);
  uint8_t *in = malloc(n * esize), *tg = malloc(n * esize);
  if (!in || !tg) fuzz_die("malloc", "out of memory");
  for (int64_t s = 0; s < STEPS; s++)
    for (int r = 0; r < world; r++) {
      err[0] = 0;
      if (ddp_data_fill(d, s, r, world, in, tg, err, sizeof err) != 0) {
        fuzz_check_message("ddp_data_fill", err);
        if (valid) fuzz_die("ddp_data_fill failed on a file ddp_data_validate accepted", err);
        continue;
      }
      for (size_t k = 0; k < n; k++) {
        double a = ddp_load(in, dt, (int64_t)k), b = ddp_load(tg, dt, (int64_t)k);
        if (a < 0 || b < 0 || a >= (double)vocab || b >= (double)vocab)
          fuzz_die("ddp_data_fill handed out a token outside [0, vocab)", "");
      }
    }
  free(in);
  free(tg);
  ddp_data_close(d);
  ddp_plan_free(p);
  return 0;
}

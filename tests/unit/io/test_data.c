/* tests/unit/io/test_data.c: the batch rule of runtime/data.h: rank windows tile the global batch byte for byte
 * (2 ranks x B rows = 1 rank x 2B rows) for every source, determinism and seed dependence, the pattern
 * formula, token-file windows with wrap-around, bad-token / missing / too-small / odd-sized files, dense
 * rows indexed mod data_rows, plans whose batch tensors do not match, and the RNG's basic statistics. */
#include "data.h"
#include "rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ddp_data_validate(ddp_data *d, char *err, size_t errcap); /* runtime/data.c, not yet in data.h */

#include "check.h"

static char tmpdir[256];

typedef struct cfg {
  int kind;
  int64_t vocab, context, batch, mlp_in, mlp_out, rows;
  int world;
  const char *path;
} cfg;

static ddp_plan *make_plan(const cfg *c) {
  ddp_plan *p = ddp_plan_new();
  p->meta.data_kind = c->kind;
  p->meta.vocab = c->vocab;
  p->meta.context = c->context;
  p->meta.batch_per_rank = c->batch;
  p->meta.mlp_in = c->mlp_in;
  p->meta.mlp_out = c->mlp_out;
  p->meta.data_rows = c->rows;
  p->meta.world = c->world;
  p->meta.data_path = c->path ? strdup(c->path) : NULL;
  bool dense = c->kind == DATA_RANDOM_DENSE;
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.base = t.param = -1;
  t.arena = ARENA_IO;
  t.dtype = dense ? DT_F32 : DT_I32;
  t.ndim = dense ? 2 : 1;
  t.name = "batch.tokens";
  t.flags = TF_TOKENS;
  t.shape[0] = dense ? c->batch : c->batch * c->context;
  t.shape[1] = c->mlp_in;
  t.bytes = ddp_tensor_numel(&t) * 4;
  p->meta.tokens_tensor = ddp_plan_add_tensor(p, &t);
  t.name = "batch.targets";
  t.flags = TF_TARGETS;
  t.shape[1] = c->mlp_out;
  t.bytes = ddp_tensor_numel(&t) * 4;
  p->meta.targets_tensor = ddp_plan_add_tensor(p, &t);
  return p;
}

static size_t in_elems(const cfg *c) {
  return (size_t)(c->batch * (c->kind == DATA_RANDOM_DENSE ? c->mlp_in : c->context));
}
static size_t tg_elems(const cfg *c) {
  return (size_t)(c->batch * (c->kind == DATA_RANDOM_DENSE ? c->mlp_out : c->context));
}

static ddp_data *open_cfg(const cfg *c, uint64_t seed, char *err, size_t cap) {
  ddp_plan *p = make_plan(c);
  ddp_data *d = ddp_data_open(p, seed, err, cap);
  ddp_plan_free(p); /* the source keeps nothing of the plan */
  return d;
}

/* Fills (step, rank, world) into fresh buffers (4-byte elements); NULL on error with err set. */
static int fill(ddp_data *d, const cfg *c, int64_t step, int rank, int world, int32_t **in, int32_t **tg, char *err,
                size_t cap) {
  *in = calloc(in_elems(c), 4);
  *tg = calloc(tg_elems(c), 4);
  return ddp_data_fill(d, step, rank, world, *in, *tg, err, cap);
}

static void write_tokens(const char *path, const uint16_t *v, size_t n, int odd_byte) {
  FILE *f = fopen(path, "wb");
  for (size_t k = 0; k < n; k++) {
    uint8_t b[2] = {(uint8_t)(v[k] & 0xff), (uint8_t)(v[k] >> 8)};
    fwrite(b, 1, 2, f);
  }
  if (odd_byte) fputc(0, f);
  fclose(f);
}

/* 2 ranks x B rows at step s are, concatenated, the 1-rank 2B-row batch of step s. */
static void check_tiling(const char *what, cfg c) {
  char err[512] = "";
  cfg two = c, one = c;
  two.world = 2;
  one.world = 1;
  one.batch = 2 * c.batch;
  ddp_data *d2 = open_cfg(&two, 42, err, sizeof err), *d1 = open_cfg(&one, 42, err, sizeof err);
  CHECK(what, d2 && d1);
  if (!d1 || !d2) {
    fprintf(stderr, "%s: %s\n", what, err);
    ddp_data_close(d1);
    ddp_data_close(d2);
    return;
  }
  for (int64_t s = 0; s < 9; s++) {
    int32_t *i0, *t0, *i1, *t1, *ia, *ta;
    CHECK(what, fill(d2, &two, s, 0, 2, &i0, &t0, err, sizeof err) == 0);
    CHECK(what, fill(d2, &two, s, 1, 2, &i1, &t1, err, sizeof err) == 0);
    CHECK(what, fill(d1, &one, s, 0, 1, &ia, &ta, err, sizeof err) == 0);
    size_t ni = in_elems(&two) * 4, nt = tg_elems(&two) * 4;
    CHECK(what, memcmp(ia, i0, ni) == 0 && memcmp((char *)ia + ni, i1, ni) == 0);
    CHECK(what, memcmp(ta, t0, nt) == 0 && memcmp((char *)ta + nt, t1, nt) == 0);
    CHECK(what, memcmp(i0, i1, ni) != 0); /* ranks see different rows */
    free(i0), free(t0), free(i1), free(t1), free(ia), free(ta);
  }
  /* Determinism: a second source gives the same bytes; another seed other bytes (generated sources). */
  ddp_data *again = open_cfg(&two, 42, err, sizeof err), *other = open_cfg(&two, 43, err, sizeof err);
  int32_t *a, *at, *b, *bt, *o, *ot;
  CHECK(what, fill(d2, &two, 5, 1, 2, &a, &at, err, sizeof err) == 0);
  CHECK(what, fill(again, &two, 5, 1, 2, &b, &bt, err, sizeof err) == 0);
  CHECK(what, fill(other, &two, 5, 1, 2, &o, &ot, err, sizeof err) == 0);
  CHECK(what, memcmp(a, b, in_elems(&two) * 4) == 0 && memcmp(at, bt, tg_elems(&two) * 4) == 0);
  if (c.kind == DATA_RANDOM_TOKENS || c.kind == DATA_RANDOM_DENSE)
    CHECK(what, memcmp(a, o, in_elems(&two) * 4) != 0);
  else
    CHECK(what, memcmp(a, o, in_elems(&two) * 4) == 0);
  free(a), free(at), free(b), free(bt), free(o), free(ot);
  ddp_data_close(again);
  ddp_data_close(other);
  ddp_data_close(d1);
  ddp_data_close(d2);
}

/* Within a row, targets are the inputs shifted by one; every token is < vocab. */
static void check_shift(const char *what, cfg c, int64_t step, int rank) {
  char err[512];
  ddp_data *d = open_cfg(&c, 7, err, sizeof err);
  int32_t *in, *tg;
  CHECK(what, d && fill(d, &c, step, rank, c.world, &in, &tg, err, sizeof err) == 0);
  for (int64_t r = 0; r < c.batch; r++)
    for (int64_t k = 0; k < c.context; k++) {
      int32_t x = in[r * c.context + k], y = tg[r * c.context + k];
      CHECK(what, x >= 0 && x < c.vocab && y >= 0 && y < c.vocab);
      if (k + 1 < c.context) CHECK(what, y == in[r * c.context + k + 1]);
    }
  free(in), free(tg);
  ddp_data_close(d);
}

static void test_random_and_pattern(void) {
  cfg c = {.kind = DATA_RANDOM_TOKENS, .vocab = 1000, .context = 16, .batch = 3, .world = 2};
  check_tiling("random tiling", c);
  check_shift("random shift", c, 3, 1);
  /* Random tokens follow the documented hash. */
  char err[512];
  ddp_data *d = open_cfg(&c, 9, err, sizeof err);
  int32_t *in, *tg;
  CHECK("random formula", fill(d, &c, 2, 1, 2, &in, &tg, err, sizeof err) == 0);
  uint64_t j = 2 * 3 * 2 + 1 * 3 + 1; /* local row 1 */
  for (int64_t k = 0; k < 16; k++)
    CHECK("random formula",
          in[16 + k] == (int32_t)(ddp_rng_u64(9, DDP_RNG_STREAM_DATA_TOKENS, j * 17 + (uint64_t)k) % 1000));
  CHECK("random formula", tg[31] == (int32_t)(ddp_rng_u64(9, DDP_RNG_STREAM_DATA_TOKENS, j * 17 + 16) % 1000));
  free(in), free(tg);
  ddp_data_close(d);

  c.kind = DATA_PATTERN_TOKENS;
  check_tiling("pattern tiling", c);
  check_shift("pattern shift", c, 4, 0);
  for (int pass = 0; pass < 2; pass++) {
    c.vocab = pass ? 40 : 1000; /* P = min(vocab, 61) */
    int64_t P = pass ? 40 : 61;
    d = open_cfg(&c, 1, err, sizeof err);
    CHECK("pattern formula", fill(d, &c, 3, 1, 2, &in, &tg, err, sizeof err) == 0);
    for (int64_t r = 0; r < 3; r++)
      for (int64_t k = 0; k < 16; k++) {
        int64_t jj = 3 * 3 * 2 + 3 + r, g = jj * 16 + k;
        CHECK("pattern formula", in[r * 16 + k] == (g * 7 + g / 23) % P);
        CHECK("pattern formula", tg[r * 16 + k] == ((g + 1) * 7 + (g + 1) / 23) % P);
      }
    free(in), free(tg);
    ddp_data_close(d);
  }
}

static void test_file(void) {
  char path[512], err[512] = "";
  snprintf(path, sizeof path, "%s/data.bin", tmpdir);
  enum { N = 100 };
  uint16_t v[N];
  for (int k = 0; k < N; k++) v[k] = (uint16_t)((k * 37 + 5) % 997);
  write_tokens(path, v, N, 0);
  cfg c = {.kind = DATA_TOKEN_FILE, .vocab = 1000, .context = 16, .batch = 3, .world = 2, .path = path};
  check_tiling("file tiling", c);
  check_shift("file shift", c, 6, 1);
  /* Window of row j starts at (j*16) mod (100 - 17); steps 0..7 wrap around the file several times. */
  ddp_data *d = open_cfg(&c, 0, err, sizeof err);
  CHECK("file open", d != NULL);
  CHECK("file validate", d && ddp_data_validate(d, err, sizeof err) == 0);
  for (int64_t s = 0; d && s < 8; s++)
    for (int r = 0; r < 2; r++) {
      int32_t *in, *tg;
      CHECK("file fill", fill(d, &c, s, r, 2, &in, &tg, err, sizeof err) == 0);
      for (int64_t i = 0; i < 3; i++) {
        int64_t j = s * 6 + r * 3 + i, start = (j * 16) % 83;
        for (int64_t k = 0; k < 16; k++) {
          CHECK("file window", in[i * 16 + k] == v[start + k]);
          CHECK("file window", tg[i * 16 + k] == v[start + k + 1]);
        }
      }
      free(in), free(tg);
    }
  ddp_data_close(d);

  /* Exactly context + 1 tokens: the single window. */
  write_tokens(path, v, 17, 0);
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK("file of context+1 tokens", d != NULL);
  for (int64_t s = 0; d && s < 3; s++) {
    int32_t *in, *tg;
    CHECK("file of context+1 tokens", fill(d, &c, s, 1, 2, &in, &tg, err, sizeof err) == 0);
    for (int64_t i = 0; i < 3; i++)
      for (int64_t k = 0; k < 16; k++)
        CHECK("file single window", in[i * 16 + k] == v[k] && tg[i * 16 + k] == v[k + 1]);
    free(in), free(tg);
  }
  ddp_data_close(d);

  /* A bad token fails the windows that hold it, names file, token, offset and vocab; validate finds it. */
  v[50] = 12345;
  write_tokens(path, v, N, 0);
  c.vocab = 10000;
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK("bad token opens", d != NULL);
  char want[600];
  snprintf(want, sizeof want, "%s: token 12345 at offset 50 is >= vocab 10000", path);
  int32_t *in, *tg;
  /* Step 0 rank 0: rows 0..2 start at 0, 16, 32 (tokens 0..48): clean. Rank 1: rows 3..5 start at 48. */
  CHECK("clean window", fill(d, &c, 0, 0, 2, &in, &tg, err, sizeof err) == 0);
  free(in), free(tg);
  err[0] = 0;
  CHECK("bad window", fill(d, &c, 0, 1, 2, &in, &tg, err, sizeof err) == -1);
  CHECK("bad token message", strcmp(err, want) == 0);
  if (strcmp(err, want)) fprintf(stderr, "  got: %s\n  want: %s\n", err, want);
  free(in), free(tg);
  err[0] = 0;
  CHECK("validate", ddp_data_validate(d, err, sizeof err) == -1 && strcmp(err, want) == 0);
  ddp_data_close(d);
  /* A vocab above every uint16 id: nothing to check. */
  c.vocab = 70000;
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK("big vocab", d && ddp_data_validate(d, err, sizeof err) == 0);
  ddp_data_close(d);
  c.vocab = 10000;

  /* Too small, odd-sized, missing, not a file. */
  write_tokens(path, v, 16, 0);
  CHECK("too small", open_cfg(&c, 0, err, sizeof err) == NULL);
  CHECK_HAS("too small", err, path);
  CHECK_HAS("too small", err, "holds 16 tokens (32 bytes), fewer than context + 1 = 17");
  write_tokens(path, v, N, 1);
  CHECK("odd size", open_cfg(&c, 0, err, sizeof err) == NULL);
  CHECK_HAS("odd size", err, "token file size 201 bytes is not a whole number of uint16 tokens");
  CHECK_HAS("odd size", err, path);
  write_tokens(path, v, 0, 0);
  CHECK("empty", open_cfg(&c, 0, err, sizeof err) == NULL);
  CHECK_HAS("empty", err, "holds 0 tokens");
  unlink(path);
  CHECK("missing", open_cfg(&c, 0, err, sizeof err) == NULL);
  snprintf(want, sizeof want, "%s: cannot open token file: No such file or directory", path);
  CHECK("missing message", strcmp(err, want) == 0);
  if (strcmp(err, want)) fprintf(stderr, "  got: %s\n", err);
  c.path = tmpdir;
  CHECK("directory", open_cfg(&c, 0, err, sizeof err) == NULL);
  CHECK_HAS("directory", err, "not a regular file");
}

static void test_dense(void) {
  cfg c = {.kind = DATA_RANDOM_DENSE, .batch = 2, .mlp_in = 3, .mlp_out = 2, .rows = 5, .world = 2};
  check_tiling("dense tiling", c);
  char err[512];
  ddp_data *d = open_cfg(&c, 11, err, sizeof err);
  CHECK("dense open", d != NULL);
  /* Row j of the stream is dataset row j mod 5: inputs then targets, row-major, from the data seed. */
  for (int64_t s = 0; d && s < 4; s++)
    for (int r = 0; r < 2; r++) {
      float in[6], tg[4];
      CHECK("dense fill", ddp_data_fill(d, s, r, 2, in, tg, err, sizeof err) == 0);
      for (int64_t i = 0; i < 2; i++) {
        uint64_t row = (uint64_t)(s * 4 + r * 2 + i) % 5;
        for (int cc = 0; cc < 3; cc++)
          CHECK("dense input",
                in[i * 3 + cc] == (float)ddp_rng_normal(11, DDP_RNG_STREAM_DATA_DENSE, row * 5 + (uint64_t)cc));
        for (int cc = 0; cc < 2; cc++)
          CHECK("dense target",
                tg[i * 2 + cc] == (float)ddp_rng_normal(11, DDP_RNG_STREAM_DATA_DENSE, row * 5 + 3 + (uint64_t)cc));
      }
    }
  ddp_data_close(d);
}

static void test_bad_plans(void) {
  char err[512];
  cfg c = {.kind = DATA_RANDOM_TOKENS, .vocab = 100, .context = 8, .batch = 2, .world = 1};
  ddp_plan *p = make_plan(&c);
  p->tensors[p->meta.targets_tensor].shape[0] = 15;
  CHECK("short targets", ddp_data_open(p, 1, err, sizeof err) == NULL);
  CHECK_HAS("short targets", err,
            "targets_tensor batch.targets holds 15 elements, expected batch_per_rank 2 x context 8 = 16");
  p->meta.tokens_tensor = 9;
  CHECK("no tokens tensor", ddp_data_open(p, 1, err, sizeof err) == NULL);
  CHECK_HAS("no tokens tensor", err, "tokens_tensor 9 is not a tensor");
  ddp_plan_free(p);
  c.kind = 17;
  CHECK("unknown kind", open_cfg(&c, 1, err, sizeof err) == NULL);
  CHECK_HAS("unknown kind", err, "data_kind 17 is unknown");
  c.kind = DATA_TOKEN_FILE;
  CHECK("file without path", open_cfg(&c, 1, err, sizeof err) == NULL);
  CHECK_HAS("file without path", err, "names none");
  c.kind = DATA_RANDOM_TOKENS;
  ddp_data *d = open_cfg(&c, 1, err, sizeof err);
  int32_t in[16], tg[16];
  CHECK("bad rank", ddp_data_fill(d, 0, 2, 2, in, tg, err, sizeof err) == -1);
  CHECK_HAS("bad rank", err, "rank 2 of 2");
  ddp_data_close(d);
  CHECK("one line", strchr(err, '\n') == NULL);
}

static void test_rng(void) {
  double sum = 0, sq = 0;
  int n = 200000, inside = 0;
  for (int k = 0; k < n; k++) {
    double z = ddp_rng_normal(5, 3, (uint64_t)k);
    sum += z, sq += z * z;
    inside += fabs(z) < 1.0;
    float u = ddp_rng_uniform24(ddp_rng_u64(5, 4, (uint64_t)k));
    double w = ddp_rng_uniform53(ddp_rng_u64(5, 4, (uint64_t)k));
    CHECK("uniform range", u >= 0.0f && u < 1.0f && w >= 0.0 && w < 1.0);
  }
  double mean = sum / n, var = sq / n - mean * mean;
  CHECK("normal mean", fabs(mean) < 0.01);
  CHECK("normal variance", fabs(var - 1.0) < 0.02);
  CHECK("normal within 1 sd", fabs((double)inside / n - 0.6827) < 0.005);
  CHECK("streams differ", ddp_rng_u64(1, 2, 3) != ddp_rng_u64(1, 3, 3) && ddp_rng_u64(1, 2, 3) != ddp_rng_u64(2, 2, 3));
  CHECK("pure", ddp_rng_u64(1, 2, 3) == ddp_rng_u64(1, 2, 3));
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ddp_test_data.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_rng();
  test_random_and_pattern();
  test_file();
  test_dense();
  test_bad_plans();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  if (failures)
    fprintf(stderr, "test_data: %d failure(s)\n", failures);
  else
    printf("test_data: ok\n");
  return failures ? 1 : 0;
}

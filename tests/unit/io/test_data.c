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
  CHECK(d2 && d1, "%s", what);
  if (!d1 || !d2) {
    fprintf(stderr, "%s: %s\n", what, err);
    ddp_data_close(d1);
    ddp_data_close(d2);
    return;
  }
  for (int64_t s = 0; s < 9; s++) {
    int32_t *i0, *t0, *i1, *t1, *ia, *ta;
    CHECK(fill(d2, &two, s, 0, 2, &i0, &t0, err, sizeof err) == 0, "%s", what);
    CHECK(fill(d2, &two, s, 1, 2, &i1, &t1, err, sizeof err) == 0, "%s", what);
    CHECK(fill(d1, &one, s, 0, 1, &ia, &ta, err, sizeof err) == 0, "%s", what);
    size_t ni = in_elems(&two) * 4, nt = tg_elems(&two) * 4;
    CHECK(memcmp(ia, i0, ni) == 0 && memcmp((char *)ia + ni, i1, ni) == 0, "%s", what);
    CHECK(memcmp(ta, t0, nt) == 0 && memcmp((char *)ta + nt, t1, nt) == 0, "%s", what);
    CHECK(memcmp(i0, i1, ni) != 0, "%s", what); /* ranks see different rows */
    free(i0), free(t0), free(i1), free(t1), free(ia), free(ta);
  }
  /* Determinism: a second source gives the same bytes; another seed other bytes (generated sources). */
  ddp_data *again = open_cfg(&two, 42, err, sizeof err), *other = open_cfg(&two, 43, err, sizeof err);
  int32_t *a, *at, *b, *bt, *o, *ot;
  CHECK(fill(d2, &two, 5, 1, 2, &a, &at, err, sizeof err) == 0, "%s", what);
  CHECK(fill(again, &two, 5, 1, 2, &b, &bt, err, sizeof err) == 0, "%s", what);
  CHECK(fill(other, &two, 5, 1, 2, &o, &ot, err, sizeof err) == 0, "%s", what);
  CHECK(memcmp(a, b, in_elems(&two) * 4) == 0 && memcmp(at, bt, tg_elems(&two) * 4) == 0, "%s", what);
  if (c.kind == DATA_RANDOM_TOKENS || c.kind == DATA_RANDOM_DENSE)
    CHECK(memcmp(a, o, in_elems(&two) * 4) != 0, "%s", what);
  else
    CHECK(memcmp(a, o, in_elems(&two) * 4) == 0, "%s", what);
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
  int32_t *in = NULL, *tg = NULL;
  if (!CHECK(d && fill(d, &c, step, rank, c.world, &in, &tg, err, sizeof err) == 0, "%s", what)) {
    ddp_data_close(d);
    return;
  }
  for (int64_t r = 0; r < c.batch; r++)
    for (int64_t k = 0; k < c.context; k++) {
      int32_t x = in[r * c.context + k], y = tg[r * c.context + k];
      CHECK(x >= 0 && x < c.vocab && y >= 0 && y < c.vocab, "%s", what);
      if (k + 1 < c.context) CHECK(y == in[r * c.context + k + 1], "%s", what);
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
  CHECK(fill(d, &c, 2, 1, 2, &in, &tg, err, sizeof err) == 0, "random formula");
  uint64_t j = 2 * 3 * 2 + 1 * 3 + 1; /* local row 1 */
  for (int64_t k = 0; k < 16; k++)
    CHECK(in[16 + k] == (int32_t)(ddp_rng_u64(9, DDP_RNG_STREAM_DATA_TOKENS, j * 17 + (uint64_t)k) % 1000),
          "random formula");
  CHECK(tg[31] == (int32_t)(ddp_rng_u64(9, DDP_RNG_STREAM_DATA_TOKENS, j * 17 + 16) % 1000), "random formula");
  free(in), free(tg);
  ddp_data_close(d);

  c.kind = DATA_PATTERN_TOKENS;
  check_tiling("pattern tiling", c);
  check_shift("pattern shift", c, 4, 0);
  for (int pass = 0; pass < 2; pass++) {
    c.vocab = pass ? 40 : 1000; /* P = min(vocab, 61) */
    int64_t P = pass ? 40 : 61;
    d = open_cfg(&c, 1, err, sizeof err);
    CHECK(fill(d, &c, 3, 1, 2, &in, &tg, err, sizeof err) == 0, "pattern formula");
    for (int64_t r = 0; r < 3; r++)
      for (int64_t k = 0; k < 16; k++) {
        int64_t jj = 3 * 3 * 2 + 3 + r, g = jj * 16 + k;
        CHECK(in[r * 16 + k] == (g * 7 + g / 23) % P, "pattern formula");
        CHECK(tg[r * 16 + k] == ((g + 1) * 7 + (g + 1) / 23) % P, "pattern formula");
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
  /* The file holds (100 - 1) / 16 = 6 whole windows at a stride of 16; row j is window j mod 6, starting at
   * (j mod 6) * 16; steps 0..7 (48 rows) wrap around the file several times. */
  ddp_data *d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d != NULL, "file open");
  CHECK(d && ddp_data_validate(d, err, sizeof err) == 0, "file validate");
  for (int64_t s = 0; d && s < 8; s++)
    for (int r = 0; r < 2; r++) {
      int32_t *in, *tg;
      CHECK(fill(d, &c, s, r, 2, &in, &tg, err, sizeof err) == 0, "file fill");
      for (int64_t i = 0; i < 3; i++) {
        int64_t j = s * 6 + r * 3 + i, start = (j % 6) * 16;
        for (int64_t k = 0; k < 16; k++) {
          CHECK(in[i * 16 + k] == v[start + k], "file window");
          CHECK(tg[i * 16 + k] == v[start + k + 1], "file window");
        }
      }
      free(in), free(tg);
    }
  ddp_data_close(d);

  /* 6 * 16 + 1 tokens: the 6 windows read every token, the last one as window 5's last target (the rule
   * before, start mod n - context - 1 = 80, never read it and took window 0 for window 5). */
  write_tokens(path, v, 97, 0);
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d != NULL, "file of 97 tokens");
  int seen_last = 0;
  for (int64_t s = 0; d && s < 2; s++)
    for (int r = 0; r < 2; r++) {
      int32_t *in, *tg;
      CHECK(fill(d, &c, s, r, 2, &in, &tg, err, sizeof err) == 0, "file of 97 tokens");
      for (int64_t i = 0; i < 3; i++) {
        int64_t j = s * 6 + r * 3 + i;
        if (j % 6 == 5) seen_last += tg[i * 16 + 15] == v[96];
      }
      free(in), free(tg);
    }
  CHECK(seen_last == 2, "the file's last token is read (window 5 of each epoch): %d times", seen_last);
  ddp_data_close(d);

  /* Exactly context + 1 tokens: the single window. */
  write_tokens(path, v, 17, 0);
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d != NULL, "file of context+1 tokens");
  for (int64_t s = 0; d && s < 3; s++) {
    int32_t *in, *tg;
    CHECK(fill(d, &c, s, 1, 2, &in, &tg, err, sizeof err) == 0, "file of context+1 tokens");
    for (int64_t i = 0; i < 3; i++)
      for (int64_t k = 0; k < 16; k++)
        CHECK(in[i * 16 + k] == v[k] && tg[i * 16 + k] == v[k + 1], "file single window");
    free(in), free(tg);
  }
  ddp_data_close(d);

  /* A bad token anywhere in the file refuses the open (validated at load, before any step), naming file,
   * token, offset and vocab. */
  v[50] = 12345;
  write_tokens(path, v, N, 0);
  c.vocab = 10000;
  char want[600];
  snprintf(want, sizeof want, "%s: token 12345 at offset 50 is >= vocab 10000", path);
  err[0] = 0;
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d == NULL, "bad token refused at open");
  CHECK_STR("bad token message", want, err);
  ddp_data_close(d);
  /* The boundary: a token equal to vocab is out too (refused at open, not at the step that reads it). */
  c.vocab = 12345;
  snprintf(want, sizeof want, "%s: token 12345 at offset 50 is >= vocab 12345", path);
  err[0] = 0;
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d == NULL, "a token equal to vocab refused at open");
  CHECK_STR("token == vocab message", want, err);
  ddp_data_close(d);
  /* A vocab above every uint16 id: nothing to check. */
  c.vocab = 70000;
  d = open_cfg(&c, 0, err, sizeof err);
  CHECK(d && ddp_data_validate(d, err, sizeof err) == 0, "big vocab");
  ddp_data_close(d);
  c.vocab = 10000;

  /* Too small, odd-sized, missing, not a file. */
  write_tokens(path, v, 16, 0);
  CHECK(open_cfg(&c, 0, err, sizeof err) == NULL, "too small");
  CHECK_CONTAINS("too small", err, path);
  CHECK_CONTAINS("too small", err, "holds 16 tokens (32 bytes), fewer than context + 1 = 17");
  write_tokens(path, v, N, 1);
  CHECK(open_cfg(&c, 0, err, sizeof err) == NULL, "odd size");
  CHECK_CONTAINS("odd size", err, "token file size 201 bytes is not a whole number of uint16 tokens");
  CHECK_CONTAINS("odd size", err, path);
  write_tokens(path, v, 0, 0);
  CHECK(open_cfg(&c, 0, err, sizeof err) == NULL, "empty");
  CHECK_CONTAINS("empty", err, "holds 0 tokens");
  unlink(path);
  CHECK(open_cfg(&c, 0, err, sizeof err) == NULL, "missing");
  snprintf(want, sizeof want, "%s: cannot open token file: No such file or directory", path);
  CHECK(strcmp(err, want) == 0, "missing message");
  if (strcmp(err, want)) fprintf(stderr, "  got: %s\n", err);
  c.path = tmpdir;
  CHECK(open_cfg(&c, 0, err, sizeof err) == NULL, "directory");
  CHECK_CONTAINS("directory", err, "not a regular file");
}

static void test_dense(void) {
  cfg c = {.kind = DATA_RANDOM_DENSE, .batch = 2, .mlp_in = 3, .mlp_out = 2, .rows = 5, .world = 2};
  check_tiling("dense tiling", c);
  char err[512];
  ddp_data *d = open_cfg(&c, 11, err, sizeof err);
  CHECK(d != NULL, "dense open");
  /* Row j of the stream is dataset row j mod 5: inputs then targets, row-major, from the data seed. */
  for (int64_t s = 0; d && s < 4; s++)
    for (int r = 0; r < 2; r++) {
      float in[6], tg[4];
      CHECK(ddp_data_fill(d, s, r, 2, in, tg, err, sizeof err) == 0, "dense fill");
      for (int64_t i = 0; i < 2; i++) {
        uint64_t row = (uint64_t)(s * 4 + r * 2 + i) % 5;
        for (int cc = 0; cc < 3; cc++)
          CHECK(in[i * 3 + cc] == (float)ddp_rng_normal(11, DDP_RNG_STREAM_DATA_DENSE, row * 5 + (uint64_t)cc),
                "dense input");
        for (int cc = 0; cc < 2; cc++)
          CHECK(tg[i * 2 + cc] == (float)ddp_rng_normal(11, DDP_RNG_STREAM_DATA_DENSE, row * 5 + 3 + (uint64_t)cc),
                "dense target");
      }
    }
  ddp_data_close(d);
}

static void test_bad_plans(void) {
  char err[512];
  cfg c = {.kind = DATA_RANDOM_TOKENS, .vocab = 100, .context = 8, .batch = 2, .world = 1};
  ddp_plan *p = make_plan(&c);
  p->tensors[p->meta.targets_tensor].shape[0] = 15;
  CHECK(ddp_data_open(p, 1, err, sizeof err) == NULL, "short targets");
  CHECK_CONTAINS("short targets", err,
            "targets_tensor batch.targets holds 15 elements, expected batch_per_rank 2 x context 8 = 16");
  p->meta.tokens_tensor = 9;
  CHECK(ddp_data_open(p, 1, err, sizeof err) == NULL, "no tokens tensor");
  CHECK_CONTAINS("no tokens tensor", err, "tokens_tensor 9 is not a tensor");
  ddp_plan_free(p);
  c.kind = 17;
  CHECK(open_cfg(&c, 1, err, sizeof err) == NULL, "unknown kind");
  CHECK_CONTAINS("unknown kind", err, "data_kind 17 is unknown");
  c.kind = DATA_TOKEN_FILE;
  CHECK(open_cfg(&c, 1, err, sizeof err) == NULL, "file without path");
  CHECK_CONTAINS("file without path", err, "names none");
  c.kind = DATA_RANDOM_TOKENS;
  ddp_data *d = open_cfg(&c, 1, err, sizeof err);
  int32_t in[16], tg[16];
  CHECK(ddp_data_fill(d, 0, 2, 2, in, tg, err, sizeof err) == -1, "bad rank");
  CHECK_CONTAINS("bad rank", err, "rank 2 of 2");
  ddp_data_close(d);
  CHECK(strchr(err, '\n') == NULL, "one line");
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
    CHECK(u >= 0.0f && u < 1.0f && w >= 0.0 && w < 1.0, "uniform range");
  }
  double mean = sum / n, var = sq / n - mean * mean;
  CHECK(fabs(mean) < 0.01, "normal mean");
  CHECK(fabs(var - 1.0) < 0.02, "normal variance");
  CHECK(fabs((double)inside / n - 0.6827) < 0.005, "normal within 1 sd");
  CHECK(ddp_rng_u64(1, 2, 3) != ddp_rng_u64(1, 3, 3) && ddp_rng_u64(1, 2, 3) != ddp_rng_u64(2, 2, 3), "streams differ");
  CHECK(ddp_rng_u64(1, 2, 3) == ddp_rng_u64(1, 2, 3), "pure");
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
  return check_report("test_data");
}

/* tests/unit/io/test_checkpoint.c: runtime/checkpoint.c through a fake executor (ckpt_fake.h: host arenas;
 * read/write copy a tensor at its planned arena offset) on small hand-built plans without pieces (pieces:
 * test_ckpt_pieces.c): save and load round trips for unsharded AdamW (model.safetensors +
 * optimizer.safetensors, rank 0 only), optimizer state only as flat shards (one file per rank), SGD (scalars
 * only); names, shapes and metadata in the files; mkdir -p; atomicity (no temporary left; a failed save
 * leaves no file and keeps an old one intact); and refusals: a checkpoint of another plan (shape, missing and extra
 * tensors), an incomplete checkpoint, another world size, a missing directory, with the executor left
 * untouched. Also a model file whose data is not aligned (another writer's layout).
 * `--sample DIR` / `--verify DIR` (see sample_mode) serve tests/fixtures/tools/check_safetensors_torch.py. */
#include "checkpoint.h"
#include "ckpt_fake.h"
#include "safetensors.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"

/* ---- hand-built plans ------------------------------------------------------------------------------------- */

enum { OPT_NAMED, OPT_SHARDED, OPT_NONE };

typedef struct model_spec {
  const char *schedule;
  int64_t w_rows; /* layers.0.ffn.w1.weight is [w_rows, 3] */
  bool extra;     /* a parameter "extra.weight" [2] */
  bool no_bias;   /* leave out layers.0.ffn.w1.bias */
  int opt;
} model_spec;

/* Parameters (fp32 master views into flat.params), a bf16 copy, gradients, AdamW moments (named views or
 * flat shards), the scalars block and a batch tensor. Offsets as a memory planner would place them. */
static ddp_plan *make_plan(const model_spec *m) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup(m->schedule);
  p->meta.world = 2;
  struct {
    const char *name;
    int ndim;
    int64_t d0, d1;
  } params[3] = {
      {"layers.0.ffn.w1.weight", 2, m->w_rows, 3}, {"layers.0.ffn.w1.bias", 1, 5, 0}, {"extra.weight", 1, 2, 0}};
  bool use[3] = {true, !m->no_bias, m->extra};
  uint64_t off[3], total = 0;
  for (int k = 0; k < 3; k++) {
    off[k] = total;
    if (use[k]) total += (uint64_t)(params[k].d0 * (params[k].ndim == 2 ? params[k].d1 : 1)) * 4;
  }
  fake_add_tensor(p, "flat.params", NULL, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, 0, 1, (int64_t)total / 4, 0);
  fake_add_tensor(p, "flat.params.copy", NULL, TF_PARAM_COPY, DT_BF16, ARENA_PARAM, 1024, 1, (int64_t)total / 4, 0);
  fake_add_tensor(p, "flat.grads", NULL, TF_GRAD, DT_F32, ARENA_GRAD, 0, 1, (int64_t)total / 4, 0);
  if (m->opt != OPT_NONE) {
    fake_add_tensor(p, "flat.exp_avg", NULL, TF_OPT_M, DT_F32, ARENA_OPT, 0, 1, (int64_t)total / 4, 0);
    fake_add_tensor(p, "flat.exp_avg_sq", NULL, TF_OPT_V, DT_F32, ARENA_OPT, 1024, 1, (int64_t)total / 4, 0);
  }
  char nm[128];
  for (int k = 0; k < 3; k++) {
    if (!use[k]) continue;
    fake_add_tensor(p, params[k].name, params[k].name, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, off[k],
                    params[k].ndim, params[k].d0, params[k].d1);
    if (m->opt != OPT_NAMED) continue;
    snprintf(nm, sizeof nm, "%s.exp_avg", params[k].name);
    fake_add_tensor(p, nm, params[k].name, TF_OPT_M, DT_F32, ARENA_OPT, off[k], params[k].ndim, params[k].d0,
                    params[k].d1);
    snprintf(nm, sizeof nm, "%s.exp_avg_sq", params[k].name);
    fake_add_tensor(p, nm, params[k].name, TF_OPT_V, DT_F32, ARENA_OPT, 1024 + off[k], params[k].ndim, params[k].d0,
                    params[k].d1);
  }
  p->meta.scalars_tensor =
      fake_add_tensor(p, "optimizer.scalars", NULL, TF_SCALARS | TF_PERSISTENT, DT_F32, ARENA_IO, 0, 1, 8, 0);
  p->meta.tokens_tensor = fake_add_tensor(p, "batch.tokens", NULL, TF_TOKENS, DT_I32, ARENA_IO, 256, 1, 16, 0);
  return p;
}

static const model_spec base_spec = {.schedule = "schedules/tiny.lua", .w_rows = 4, .opt = OPT_NAMED};

/* ---- tests ------------------------------------------------------------------------------------------------- */

static void test_round_trip(void) {
  char err[512] = "";
  ddp_plan *p = make_plan(&base_spec);
  fake *a = fake_new(p, 0, 2, 1), *b = fake_new(p, 0, 2, 0);
  const char *dir = tmp_path("run/ckpt/step7"); /* created with its parents */
  CHECK(ddp_checkpoint_save(&a->x, dir, 7, err, sizeof err) == 0, "save");
  if (err[0]) fprintf(stderr, "  %s\n", err);
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary");

  /* The files: the state-dict names, shapes and metadata. */
  char path[600];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  ddp_st_file *f = ddp_st_open(path, err, sizeof err);
  CHECK(f != NULL, "model file");
  if (f) {
    CHECK(f->ntensors == 2, "model tensors");
    const ddp_st_tensor *w = ddp_st_find(f, "layers.0.ffn.w1.weight"), *bias = ddp_st_find(f, "layers.0.ffn.w1.bias");
    CHECK(w && bias, "model names");
    CHECK(w && w->ndim == 2 && w->shape[0] == 4 && w->shape[1] == 3 && w->dtype == DT_F32, "model shapes");
    CHECK(w && memcmp(ddp_st_data(f, w), fake_at(a, p, ddp_plan_find_tensor(p, "layers.0.ffn.w1.weight")), 48) == 0,
          "model data");
    CHECK(ddp_st_meta(f, "format") && strcmp(ddp_st_meta(f, "format"), "ddpc") == 0, "meta format");
    CHECK(ddp_st_meta(f, "step") && strcmp(ddp_st_meta(f, "step"), "7") == 0, "meta step");
    CHECK(ddp_st_meta(f, "schedule") && strcmp(ddp_st_meta(f, "schedule"), "schedules/tiny.lua") == 0, "meta schedule");
  }
  ddp_st_close(f);
  snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
  f = ddp_st_open(path, err, sizeof err);
  CHECK(f && f->ntensors == 5, "optimizer file");
  if (f) {
    CHECK(ddp_st_find(f, "layers.0.ffn.w1.weight.exp_avg") && ddp_st_find(f, "layers.0.ffn.w1.weight.exp_avg_sq") &&
          ddp_st_find(f, "layers.0.ffn.w1.bias.exp_avg") && ddp_st_find(f, "layers.0.ffn.w1.bias.exp_avg_sq") &&
          ddp_st_find(f, "optimizer.scalars"), "optimizer names");
    const ddp_st_tensor *sc = ddp_st_find(f, "optimizer.scalars");
    CHECK(sc && sc->ndim == 1 && sc->shape[0] == 8, "scalars shape");
  }
  ddp_st_close(f);

  /* Load into a zeroed executor: every checkpointed tensor comes back bit for bit, nothing else moves. */
  int64_t steps = -1;
  CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) == 0, "load");
  if (steps != 7) fprintf(stderr, "  %s\n", err);
  CHECK(steps == 7, "steps");
  const char *restored[] = {"layers.0.ffn.w1.weight",
                            "layers.0.ffn.w1.bias",
                            "layers.0.ffn.w1.weight.exp_avg",
                            "layers.0.ffn.w1.bias.exp_avg_sq",
                            "optimizer.scalars",
                            "flat.params",
                            "flat.exp_avg",
                            "flat.exp_avg_sq"};
  for (int k = 0; k < 8; k++) CHECK(fake_same_tensor(a, b, p, ddp_plan_find_tensor(p, restored[k])), "%s", restored[k]);
  const ddp_tensor *g = &p->tensors[ddp_plan_find_tensor(p, "flat.grads")];
  bool zero = true;
  for (uint64_t k = 0; k < g->bytes; k++) zero = zero && b->arena[ARENA_GRAD][g->offset + k] == 0;
  CHECK(zero, "gradients not restored");
  CHECK(!fake_same_tensor(a, b, p, ddp_plan_find_tensor(p, "flat.params.copy")), "bf16 copies not restored");

  /* Rank 1 writes nothing when the optimizer is not sharded. */
  fake *r1 = fake_new(p, 1, 2, 3);
  const char *dir1 = tmp_path("rank1only");
  CHECK(ddp_checkpoint_save(&r1->x, dir1, 7, err, sizeof err) == 0, "rank 1 save");
  CHECK(count_files(dir1, "safetensors") == 0, "rank 1 wrote nothing");
  /* ... and loads the shared files. */
  CHECK(ddp_checkpoint_load(&r1->x, dir, &steps, err, sizeof err) == 0, "rank 1 load");
  CHECK(fake_same_tensor(a, r1, p, ddp_plan_find_tensor(p, "flat.exp_avg_sq")), "rank 1 restored");
  fake_free(r1);

  /* Saving again over the checkpoint replaces it (still no temporaries). */
  CHECK(ddp_checkpoint_save(&a->x, dir, 8, err, sizeof err) == 0, "save again");
  CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) == 0 && steps == 8, "load again");
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary");
  fake_free(a);
  fake_free(b);
  ddp_plan_free(p);
}

static void test_sharded_and_sgd(void) {
  char err[512] = "";
  model_spec s = base_spec;
  s.opt = OPT_SHARDED;
  ddp_plan *p = make_plan(&s);
  /* Moments that exist only as flat shards, with no state-dict views or pieces (no compiled plan has them
   * since plan format 3: every sharded level emits pieces): refused, nothing written. */
  fake *r0 = fake_new(p, 0, 2, 5);
  const char *dir = tmp_path("sharded");
  CHECK(ddp_checkpoint_save(&r0->x, dir, 3, err, sizeof err) == -1, "flat-shard moments refused");
  CHECK_CONTAINS("flat-shard moments", err, "optimizer state 'flat.exp_avg' has no state-dict views or pieces");
  CHECK(count_files(dir, "safetensors") == 0, "nothing written");
  int64_t steps = -1;
  CHECK(ddp_checkpoint_load(&r0->x, tmp_path("nowhere_sharded"), &steps, err, sizeof err) == -1, "load refused");
  CHECK_CONTAINS("flat-shard moments, load", err, "has no state-dict views or pieces");
  fake_free(r0);
  ddp_plan_free(p);
  char path[600];
  ddp_st_file *f;

  /* SGD: no moments; the scalars alone in optimizer.safetensors. */
  s.opt = OPT_NONE;
  p = make_plan(&s);
  fake *a = fake_new(p, 0, 2, 9), *b = fake_new(p, 0, 2, 0);
  dir = tmp_path("sgd");
  CHECK(ddp_checkpoint_save(&a->x, dir, 11, err, sizeof err) == 0, "sgd save");
  snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
  f = ddp_st_open(path, err, sizeof err);
  CHECK(f && f->ntensors == 1 && ddp_st_find(f, "optimizer.scalars"), "sgd optimizer file");
  ddp_st_close(f);
  CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) == 0 && steps == 11, "sgd load");
  CHECK(fake_same_tensor(a, b, p, p->meta.scalars_tensor), "sgd scalars");
  fake_free(a);
  fake_free(b);
  ddp_plan_free(p);
}

static void test_atomicity(void) {
  char err[512] = "";
  ddp_plan *p = make_plan(&base_spec);
  fake *a = fake_new(p, 0, 2, 1);
  const char *dir = tmp_path("atomic");
  a->fail_read = ddp_plan_find_tensor(p, "layers.0.ffn.w1.bias");
  CHECK(ddp_checkpoint_save(&a->x, dir, 1, err, sizeof err) == -1, "failing save");
  CHECK_CONTAINS("failing save", err, "fake: cannot read layers.0.ffn.w1.bias");
  CHECK(count_files(dir, "safetensors") == 0, "no partial file");

  /* An existing checkpoint survives a failing save byte for byte. */
  a->fail_read = -1;
  CHECK(ddp_checkpoint_save(&a->x, dir, 1, err, sizeof err) == 0, "good save");
  char path[600];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  FILE *fp = fopen(path, "rb");
  char before[4096], after[4096];
  size_t nb = fp ? fread(before, 1, sizeof before, fp) : 0;
  if (fp) fclose(fp);
  a->arena[ARENA_PARAM][0] ^= 0xff;
  a->fail_read = ddp_plan_find_tensor(p, "layers.0.ffn.w1.bias");
  CHECK(ddp_checkpoint_save(&a->x, dir, 2, err, sizeof err) == -1, "failing save over a checkpoint");
  fp = fopen(path, "rb");
  size_t na = fp ? fread(after, 1, sizeof after, fp) : 0;
  if (fp) fclose(fp);
  CHECK(nb > 0 && na == nb && memcmp(before, after, nb) == 0, "old checkpoint intact");
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary");

  /* A directory path through a file cannot be created. */
  char file_dir[600];
  snprintf(file_dir, sizeof file_dir, "%s/model.safetensors/sub", dir);
  a->fail_read = -1;
  CHECK(ddp_checkpoint_save(&a->x, file_dir, 1, err, sizeof err) == -1, "bad directory");
  CHECK_CONTAINS("bad directory", err, "cannot create checkpoint directory");
  fake_free(a);
  ddp_plan_free(p);
}

static void expect_refusal(const char *what, const model_spec *spec, const char *dir, const char *n1, const char *n2) {
  char err[512] = "";
  ddp_plan *p = make_plan(spec);
  fake *x = fake_new(p, 0, 2, 4), *before = fake_new(p, 0, 2, 4);
  int64_t steps = -1;
  CHECK(ddp_checkpoint_load(&x->x, dir, &steps, err, sizeof err) == -1, "%s", what);
  CHECK_CONTAINS(what, err, n1);
  if (n2) CHECK_CONTAINS(what, err, n2);
  CHECK(strchr(err, '\n') == NULL, "%s", what);
  CHECK(fake_same_arenas(x, before) && x->writes == 0 && steps == -1, "executor untouched");
  fake_free(x);
  fake_free(before);
  ddp_plan_free(p);
}

static void test_refusals(void) {
  char err[512] = "";
  ddp_plan *p = make_plan(&base_spec);
  fake *a = fake_new(p, 0, 2, 1);
  const char *dir = tmp_path("good");
  CHECK(ddp_checkpoint_save(&a->x, dir, 5, err, sizeof err) == 0, "save");

  model_spec other = base_spec;
  other.schedule = "schedules/other.lua";
  other.w_rows = 6;
  expect_refusal("another model's shape", &other, dir, "good/model.safetensors: checkpoint does not match this plan (written by a run of",
                 "tensor 'layers.0.ffn.w1.weight' is F32 [4, 3], the plan expects F32 [6, 3]");
  expect_refusal("another model", &other, dir, "written by a run of schedules/tiny.lua, this plan is from schedules/other.lua",
                 NULL);
  model_spec more = base_spec;
  more.extra = true;
  expect_refusal("missing tensor", &more, dir, "good/model.safetensors: checkpoint does not match this plan's model",
                 "no tensor 'extra.weight' (the plan expects F32 [2])");
  model_spec fewer = base_spec;
  fewer.no_bias = true;
  expect_refusal("extra tensor", &fewer, dir, "model.safetensors",
                 "it holds tensor 'layers.0.ffn.w1.bias', which the plan does not have");
  model_spec sharded = base_spec;
  sharded.opt = OPT_SHARDED;
  expect_refusal("flat-shard moments", &sharded, dir, "has no state-dict views or pieces", NULL);
  expect_refusal("missing directory", &base_spec, tmp_path("nowhere"),
                 "nowhere/model.safetensors: cannot open: No such file or directory", NULL);

  /* Incomplete: the optimizer file of another step. */
  const char *dir2 = tmp_path("mixed");
  CHECK(ddp_checkpoint_save(&a->x, dir2, 5, err, sizeof err) == 0, "save");
  char from[600], to[600];
  snprintf(from, sizeof from, "%s/model.safetensors", dir2);
  CHECK(ddp_checkpoint_save(&a->x, dir, 6, err, sizeof err) == 0, "save later");
  snprintf(to, sizeof to, "%s/model.safetensors", dir);
  CHECK(rename(from, to) == 0, "mix");
  expect_refusal("incomplete", &base_spec, dir,
                 "incomplete checkpoint: model.safetensors is from step 5, optimizer.safetensors from step 6", NULL);

  /* A model file as another writer may lay it out: header not padded, so the data is not 4-byte aligned. */
  const ddp_tensor *w = &p->tensors[ddp_plan_find_tensor(p, "layers.0.ffn.w1.weight")];
  const ddp_tensor *bias = &p->tensors[ddp_plan_find_tensor(p, "layers.0.ffn.w1.bias")];
  const char *hdr = "{ \"layers.0.ffn.w1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[48,68]},"
                    "\"layers.0.ffn.w1.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]}}";
  size_t hl = strlen(hdr);
  CHECK(hl % 4 != 0, "unaligned header");
  snprintf(to, sizeof to, "%s/model.safetensors", dir);
  FILE *fp = fopen(to, "wb");
  for (int k = 0; k < 8; k++) fputc((int)((hl >> (8 * k)) & 0xff), fp);
  fwrite(hdr, 1, hl, fp);
  fwrite(fake_at(a, p, (int32_t)(w - p->tensors)), 1, 48, fp);
  fwrite(fake_at(a, p, (int32_t)(bias - p->tensors)), 1, 20, fp);
  fclose(fp);
  fake *b = fake_new(p, 0, 2, 0);
  int64_t steps = -1;
  CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) == 0, "foreign model file");
  if (steps != 6) fprintf(stderr, "  %s\n", err);
  CHECK(steps == 6, "steps from the optimizer file");
  CHECK(fake_same_tensor(a, b, p, ddp_plan_find_tensor(p, "flat.params")), "unaligned data restored");
  fake_free(b);

  /* The right shape in another dtype (BF16 where the plan keeps F32) is refused, not read as F32 bytes. */
  const char *hdr16 = "{\"layers.0.ffn.w1.bias\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[24,44]},"
                      "\"layers.0.ffn.w1.weight\":{\"dtype\":\"BF16\",\"shape\":[4,3],\"data_offsets\":[0,24]}}";
  size_t hl16 = strlen(hdr16);
  fp = fopen(to, "wb");
  for (int k = 0; k < 8; k++) fputc((int)((hl16 >> (8 * k)) & 0xff), fp);
  fwrite(hdr16, 1, hl16, fp);
  for (int k = 0; k < 44; k++) fputc(0x3f, fp);
  fclose(fp);
  b = fake_new(p, 0, 2, 0);
  err[0] = 0;
  CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) != 0, "a BF16 weight for an F32 plan was loaded");
  CHECK_CONTAINS("the dtype named", err, "tensor 'layers.0.ffn.w1.weight' is BF16 [4, 3], the plan expects F32 [4, 3]");
  fake_free(b);
  fake_free(a);
  ddp_plan_free(p);
}

/* For tests/fixtures/tools/check_safetensors_torch.py on a machine with PyTorch: `--sample DIR` writes the round-trip
 * checkpoint (step 7) of the base plan with well-behaved float values and prints the expected tensors;
 * `--verify DIR` loads DIR (e.g. the files PyTorch saved back) and checks every value bit for bit. */
static int sample_mode(const char *mode, const char *dir) {
  char err[512] = "";
  ddp_plan *p = make_plan(&base_spec);
  fake *a = fake_new(p, 0, 2, 1);
  for (int k = 0; k < ARENA_COUNT; k++)
    for (uint64_t i = 0; i + 4 <= a->bytes[k]; i += 4) {
      float v = (float)((i / 4 * 37 + (uint64_t)k * 11) % 1000) * 0.001f - 0.5f;
      memcpy(a->arena[k] + i, &v, 4);
    }
  int rc = 1;
  if (strcmp(mode, "--sample") == 0) {
    if (ddp_checkpoint_save(&a->x, dir, 7, err, sizeof err) == 0) {
      printf("wrote %s/model.safetensors and %s/optimizer.safetensors; expected tensors:\n", dir, dir);
      for (uint32_t t = 0; t < p->ntensors; t++) {
        const ddp_tensor *x = &p->tensors[t];
        bool model = (x->flags & TF_PARAM) && x->state_name, opt = (x->flags & (TF_OPT_M | TF_OPT_V)) && x->state_name;
        if (!model && !opt && !(x->flags & TF_SCALARS)) continue;
        printf("%s=F32[", model ? x->state_name : x->name);
        for (int d = 0; d < x->ndim; d++) printf(d ? ",%lld" : "%lld", (long long)x->shape[d]);
        printf("]\n");
      }
      rc = 0;
    }
  } else {
    fake *b = fake_new(p, 0, 2, 0);
    int64_t steps = -1;
    if (CHECK(ddp_checkpoint_load(&b->x, dir, &steps, err, sizeof err) == 0, "%s: load failed", dir)) {
      for (uint32_t t = 0; t < p->ntensors; t++) {
        const ddp_tensor *x = &p->tensors[t];
        if (((x->flags & (TF_PARAM | TF_OPT_M | TF_OPT_V)) && x->state_name) || (x->flags & TF_SCALARS))
          CHECK(fake_same_tensor(a, b, p, (int32_t)t), "%s: tensor %s differs", dir, x->name);
      }
      CHECK(steps == 7, "%s: step %lld, expected 7", dir, (long long)steps);
      if (!check_failed) printf("%s: loaded, every tensor bit for bit, step 7: OK\n", dir);
    }
    rc = check_failed ? 1 : 0;
    fake_free(b);
  }
  if (err[0]) fprintf(stderr, "%s\n", err);
  fake_free(a);
  ddp_plan_free(p);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && (strcmp(argv[1], "--sample") == 0 || strcmp(argv[1], "--verify") == 0))
    return sample_mode(argv[1], argv[2]);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ddp_test_ckpt.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trip();
  test_sharded_and_sgd();
  test_atomicity();
  test_refusals();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_report("test_checkpoint");
}

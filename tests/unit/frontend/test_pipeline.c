/* tests/unit/frontend/test_pipeline.c: pipeline{} in the schedule front end. The shipped pipeline schedules
 * load into the ddp_schedule fields the compiler reads (stages, replicas, ranks, microbatches, schedule,
 * virtual stages, split, sync, shard), with pipeline{}'s defaults; --set reaches every field; a split is
 * taken as a list or from a Lua function called at load time with {layers, stages, chunks}; schedules
 * without a pipeline keep stages = 0; every bad pipeline schedule of tests/fixtures/schedules_bad/ gives its
 * exact one-line error. Runs from $DDP_SOURCE_DIR so that paths (and so messages) are relative to the
 * repository. */
#include "plan.h"
#include "schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "schedule_load.h"

/* What a pipeline schedule should load into; split: nsplit entries (0: the compiler balances). */
typedef struct pipe_want {
  int stages, replicas, microbatches, schedule, virtual_stages, nsplit;
  int64_t split[8];
} pipe_want;

static void expect_pipe(const char *what, const ddp_schedule *s, pipe_want w) {
  if (!s) return;
  CHECK(s->stages == w.stages && s->replicas == w.replicas && s->microbatches == w.microbatches &&
            s->pipe_schedule == w.schedule && s->virtual_stages == w.virtual_stages,
        "%s: stages %d replicas %d microbatches %d schedule %d virtual %d, want %d %d %d %d %d", what, s->stages,
        s->replicas, s->microbatches, s->pipe_schedule, s->virtual_stages, w.stages, w.replicas, w.microbatches,
        w.schedule, w.virtual_stages);
  CHECK_INT(what, w.stages * w.replicas, s->ranks);
  CHECK(s->nsplit == w.nsplit && memcmp(s->split, w.split, sizeof(int64_t) * (size_t)w.nsplit) == 0,
        "%s: split of %d entries (%lld %lld %lld ...), want %d (%lld %lld %lld ...)", what, s->nsplit,
        (long long)s->split[0], (long long)s->split[1], (long long)s->split[2], w.nsplit, (long long)w.split[0],
        (long long)w.split[1], (long long)w.split[2]);
  /* One replica: no gradient sync; several: each stage's replicas all-reduce as bucketed DDP. */
  bool many = w.replicas > 1;
  CHECK(s->shard == SHARD_NONE && s->sync == (many ? SYNC_BUCKETED : SYNC_NONE) && s->overlap_backward == many &&
            s->bucket_mb == (many ? 25 : 0) && !s->optimizer_overlap && s->bucket_policy == NULL,
        "%s: shard %d sync %d overlap %d bucket_mb %g", what, s->shard, s->sync, s->overlap_backward, s->bucket_mb);
}

static void test_shipped(void) {
  ddp_schedule *s = load("schedules/pipeline_1f1b.lua");
  if (s) {
    CHECK(s->d_model == 1600 && s->layers == 48 && s->global_batch == 16 && s->precision == PREC_BF16 &&
              s->steps == 20 && s->warmup == 5 && s->optimizer == OPTIM_ADAMW, "pipeline_1f1b.lua: the XL setup");
    CHECK(s->broadcast_init && !s->identical_init, "pipeline_1f1b.lua: init");
  }
  expect_pipe("pipeline_1f1b.lua", s, (pipe_want){2, 1, 8, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);

  s = load("schedules/pipeline_gpipe.lua");
  if (s) CHECK(s->layers == 48 && s->global_batch == 16, "pipeline_gpipe.lua: the XL setup");
  expect_pipe("pipeline_gpipe.lua", s, (pipe_want){2, 1, 8, PIPE_GPIPE, 1, 0, {0}});
  ddp_schedule_free(s);

  s = load("schedules/tiny_pipeline.lua");
  if (s)
    CHECK(s->d_model == 64 && s->layers == 2 && s->global_batch == 8 && s->precision == PREC_FP32 &&
              s->data_kind == DATA_PATTERN_TOKENS && s->steps == 20, "tiny_pipeline.lua: the tiny setup");
  expect_pipe("tiny_pipeline.lua", s, (pipe_want){2, 1, 4, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);

  s = load("schedules/toy_pipeline.lua"); /* the split function cuts after each ReLU: {4, 4, 1} */
  if (s)
    CHECK(s->model_kind == MODEL_MLP && s->n_mlp_layers == 9 && s->global_batch == 24 && s->optimizer == OPTIM_SGD,
          "toy_pipeline.lua: mlp_deep, 24 rows, SGD (%d layers)", s->n_mlp_layers);
  expect_pipe("toy_pipeline.lua", s, (pipe_want){3, 1, 4, PIPE_1F1B, 1, 3, {4, 4, 1}});
  ddp_schedule_free(s);

  /* Schedules without a pipeline: stages 0 (the compiler reads no other pipeline field then). */
  const char *plain[] = {"schedules/tiny.lua", "schedules/tiny_ddp.lua", "schedules/tiny_fsdp.lua"};
  for (int i = 0; i < 3; i++) {
    s = load(plain[i]);
    if (s) CHECK(s->stages == 0 && s->nsplit == 0, "%s: stages %d", plain[i], s->stages);
    ddp_schedule_free(s);
  }
}

static void test_sets(void) {
  const char *a[] = {"parallel.microbatches=8"};
  ddp_schedule *s = load_sets("schedules/tiny_pipeline.lua", a, 1);
  expect_pipe("tiny_pipeline microbatches=8", s, (pipe_want){2, 1, 8, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *b[] = {"parallel.schedule=gpipe"};
  s = load_sets("schedules/pipeline_1f1b.lua", b, 1);
  expect_pipe("pipeline_1f1b schedule=gpipe", s, (pipe_want){2, 1, 8, PIPE_GPIPE, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *c[] = {"parallel.schedule=zero_bubble", "parallel.microbatches=8"};
  s = load_sets("schedules/tiny_pipeline.lua", c, 2);
  expect_pipe("tiny_pipeline zero_bubble", s, (pipe_want){2, 1, 8, PIPE_ZERO_BUBBLE, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *d[] = {"parallel.microbatches=nil"}; /* default: one microbatch per stage */
  s = load_sets("schedules/tiny_pipeline.lua", d, 1);
  expect_pipe("tiny_pipeline default microbatches", s, (pipe_want){2, 1, 2, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *e[] = {"parallel.schedule=sequential", "parallel.microbatches=nil"}; /* sequential: 1 */
  s = load_sets("schedules/tiny_pipeline.lua", e, 2);
  expect_pipe("tiny_pipeline sequential", s, (pipe_want){2, 1, 1, PIPE_SEQUENTIAL, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *f[] = {"parallel.schedule=sequential", "parallel.microbatches=1"};
  s = load_sets("schedules/tiny_pipeline.lua", f, 2);
  expect_pipe("tiny_pipeline sequential, microbatches 1 given", s, (pipe_want){2, 1, 1, PIPE_SEQUENTIAL, 1, 0, {0}});
  ddp_schedule_free(s);
  const char *g[] = {"parallel.stages=4", "parallel.schedule=interleaved", "parallel.virtual_stages=3"};
  s = load_sets("schedules/pipeline_1f1b.lua", g, 3); /* XL: 16 sequences in 8 microbatches, 12 chunks */
  expect_pipe("pipeline_1f1b interleaved", s, (pipe_want){4, 1, 8, PIPE_INTERLEAVED, 3, 0, {0}});
  if (s) CHECK(s->global_batch == 16, "--set comes after xl_pipeline chose the batch: %lld", (long long)s->global_batch);
  ddp_schedule_free(s);
  /* 2-D: 2 stages x 2 replicas, 4 ranks; the replicas of a stage sync like bucketed DDP. */
  const char *h[] = {"parallel.replicas=2", "parallel.microbatches=2", "parallel.ranks=4"};
  s = load_sets("schedules/tiny_pipeline.lua", h, 3);
  expect_pipe("tiny_pipeline 2 replicas", s, (pipe_want){2, 2, 2, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);
  /* The split function sees the stages: {6, 3} on 2, {4, 2, 2, 1} on 4. */
  const char *i[] = {"parallel.stages=2"};
  s = load_sets("schedules/toy_pipeline.lua", i, 1);
  expect_pipe("toy_pipeline 2 stages", s, (pipe_want){2, 1, 4, PIPE_1F1B, 1, 2, {6, 3}});
  ddp_schedule_free(s);
  const char *j[] = {"parallel.stages=4", "parallel.microbatches=2"};
  s = load_sets("schedules/toy_pipeline.lua", j, 2);
  expect_pipe("toy_pipeline 4 stages", s, (pipe_want){4, 1, 2, PIPE_1F1B, 1, 4, {4, 2, 2, 1}});
  ddp_schedule_free(s);
  /* No pipeline at all: one rank (what the pipeline must match). */
  const char *k[] = {"parallel=nil"};
  s = load_sets("schedules/tiny_pipeline.lua", k, 1);
  if (s) CHECK(s->stages == 0 && s->ranks == 1 && s->sync == SYNC_NONE, "tiny_pipeline parallel=nil: one rank");
  ddp_schedule_free(s);
  /* Entries of a split list through --set. */
  const char *l[] = {"parallel.stages=2", "parallel.split=nil"};
  s = load_sets("schedules/toy_pipeline.lua", l, 2);
  expect_pipe("toy_pipeline split=nil", s, (pipe_want){2, 1, 4, PIPE_1F1B, 1, 0, {0}});
  ddp_schedule_free(s);

  const char *bad1[] = {"parallel.microbatches=3"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad1, 1,
                  "--set parallel.microbatches=3: parallel.microbatches = 3 does not divide the replica's batch of 8 "
                  "sequences");
  const char *bad2[] = {"parallel.stages=3"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad2, 1,
                  "--set parallel.stages=3: parallel.stages = 3 is more than the model's 2 layers");
  const char *bad3[] = {"parallel.stages=10"};
  expect_err_sets("schedules/toy_pipeline.lua", bad3, 1,
                  "--set parallel.stages=10: parallel.stages = 10 is more than the model's 9 layers (every entry of "
                  "model.layers counts, relu() included)");
  const char *bad4[] = {"parallel.schedule=gpipe", "parallel.virtual_stages=2"};
  expect_err_sets("schedules/pipeline_1f1b.lua", bad4, 2,
                  "--set parallel.virtual_stages=2: parallel.virtual_stages must be 1 with schedule = \"gpipe\" (only "
                  "\"interleaved\" runs several chunks per stage), got 2");
  const char *bad5[] = {"parallel.schedule=interleaved"};
  expect_err_sets("schedules/pipeline_1f1b.lua", bad5, 1,
                  "schedules/pipeline_1f1b.lua:8: parallel.virtual_stages is required with schedule = \"interleaved\" "
                  "(the chunks each stage runs, at least 2)");
  const char *bad6[] = {"parallel.schedule=sequential"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad6, 1,
                  "schedules/tiny_pipeline.lua:12: parallel.microbatches must be 1 with schedule = \"sequential\" (the "
                  "whole batch goes through the stages at once, each stage waiting for the previous), got 4");
  const char *bad7[] = {"parallel.replicas=2", "data.global_batch=6"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad7, 2,
                  "schedules/tiny_pipeline.lua:12: parallel.microbatches = 4 does not divide the replica's batch of 3 "
                  "sequences (data.global_batch 6 / replicas 2)");
  const char *bad8[] = {"parallel.microbatches=nil", "data.global_batch=9"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad8, 2,
                  "--set parallel.microbatches=nil: parallel.microbatches = 2 (the default: parallel.stages) does not "
                  "divide the replica's batch of 9 sequences");
  const char *bad9[] = {"parallel.ranks=2", "parallel.replicas=2"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad9, 2,
                  "--set parallel.ranks=2: parallel.ranks must equal stages x replicas (2 x 2 = 4): a pipeline's ranks "
                  "follow from them, got 2");
  const char *bad10[] = {"parallel.split=4"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad10, 1,
                  "--set parallel.split=4: parallel.split must be a list of positive integers (the layers of each "
                  "chunk) or a function(info) returning one, got 4");
  const char *bad11[] = {"parallel.bucket_mb=10"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad11, 1,
                  "--set parallel.bucket_mb=10: parallel.bucket_mb only applies with replicas > 1 (the replicas of a "
                  "stage all-reduce its gradients)");
  const char *bad11b[] = {"parallel.replicas=2", "parallel.microbatches=2", "parallel.bucket_mb=0"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad11b, 3,
                  "--set parallel.bucket_mb=0: parallel.bucket_mb must be a positive number of MB (at most 1048576), "
                  "got 0");
  const char *bad12[] = {"parallel.replicas=2", "parallel.microbatches=2", "parallel.broadcast=false"};
  expect_err_sets("schedules/tiny_pipeline.lua", bad12, 3,
                  "--set parallel.broadcast=false: parallel.broadcast may be false only with identical_init = true "
                  "(else the ranks start from different weights), got false");
  const char *ok12[] = {"parallel.broadcast=false"}; /* one replica: every stage's parameters are its own */
  ddp_schedule *s12 = load_sets("schedules/tiny_pipeline.lua", ok12, 1);
  if (s12) CHECK(!s12->broadcast_init, "broadcast = false with one replica");
  ddp_schedule_free(s12);
  const char *bad13[] = {"parallel.stages=32", "parallel.schedule=interleaved", "parallel.virtual_stages=3",
                         "parallel.microbatches=32", "data.global_batch=32"};
  expect_err_sets("schedules/pipeline_1f1b.lua", bad13, 5,
                  "--set parallel.virtual_stages=3: parallel.virtual_stages = 3 gives 96 chunks (stages x "
                  "virtual_stages), more than 64");
}

/* A schedule of our own (split lists, interleaved chunks) written to dir/name; returns its path in buf. */
static const char *write_schedule(const char *dir, const char *name, const char *model, const char *par, char *buf,
                                  size_t cap) {
  snprintf(buf, cap, "%s/%s", dir, name);
  FILE *f = fopen(buf, "wb");
  CHECK(f != NULL, "cannot write %s", buf);
  if (!f) return buf;
  fprintf(f, "return schedule {\n  model = %s,\n  data = { global_batch = 8 },\n  optimizer = sgd { lr = 0.1 },\n"
             "  parallel = pipeline { %s },\n  steps = 1,\n}\n", model, par);
  fclose(f);
  return buf;
}

static void test_split_lists(void) {
  char dir[] = "/tmp/ddpc_pipe_XXXXXX", path[256];
  if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp")) return;
  static const char *const t8 =
      "transformer { d_model = 64, d_ff = 128, layers = 8, heads = 4, vocab = 256, context = 32 }";
  static const char *const m5 = "mlp { layers = { linear { in_features = 4, out_features = 8 }, relu(), linear { "
                                "in_features = 8, out_features = 8 }, relu(), linear { in_features = 8, out_features "
                                "= 2 } } }";
  ddp_schedule *s = load(write_schedule(dir, "a.lua", t8, "stages = 2, split = { 5, 3 }", path, sizeof path));
  expect_pipe("split {5, 3}", s, (pipe_want){2, 1, 2, PIPE_1F1B, 1, 2, {5, 3}});
  ddp_schedule_free(s);
  unlink(path);
  s = load(write_schedule(dir, "b.lua", t8, "stages = 2, schedule = \"interleaved\", virtual_stages = 2, "
                          "microbatches = 4, split = { 1, 2, 3, 2 }", path, sizeof path));
  expect_pipe("interleaved split", s, (pipe_want){2, 1, 4, PIPE_INTERLEAVED, 2, 4, {1, 2, 3, 2}});
  ddp_schedule_free(s);
  unlink(path);
  s = load(write_schedule(dir, "c.lua", t8, "stages = 4, schedule = \"interleaved\", virtual_stages = 2, "
                          "split = function(info) local t = {} for c = 1, info.chunks do t[c] = info.layers // "
                          "info.chunks end return t end", path, sizeof path));
  expect_pipe("interleaved split function", s, (pipe_want){4, 1, 4, PIPE_INTERLEAVED, 2, 8, {1, 1, 1, 1, 1, 1, 1, 1}});
  ddp_schedule_free(s);
  unlink(path);
  s = load(write_schedule(dir, "d.lua", m5, "stages = 2, replicas = 2, microbatches = 2, split = { 4, 1 }", path,
                          sizeof path));
  expect_pipe("mlp split", s, (pipe_want){2, 2, 2, PIPE_1F1B, 1, 2, {4, 1}});
  ddp_schedule_free(s);
  unlink(path);
  /* The function is given exactly {layers, stages, chunks}. */
  s = load(write_schedule(dir, "e.lua", t8, "stages = 2, split = function(info) local n = 0 for _ in pairs(info) do "
                          "n = n + 1 end assert(n == 3 and info.layers == 8 and info.stages == 2 and info.chunks == 2) "
                          "return { 7, 1 } end", path, sizeof path));
  expect_pipe("split function info", s, (pipe_want){2, 1, 2, PIPE_1F1B, 1, 2, {7, 1}});
  ddp_schedule_free(s);
  unlink(path);
  /* An error without a place is reported at the pipeline{} line. */
  write_schedule(dir, "f.lua", t8, "stages = 2, split = function(info) error(\"no\", 0) end", path, sizeof path);
  char want[512];
  snprintf(want, sizeof want, "%s:5: parallel.split failed: no", path);
  expect_err_sets(path, NULL, 0, want);
  unlink(path);
  rmdir(dir);
}

static void test_bad_schedules(void) {
#define BAD "tests/fixtures/schedules_bad/"
  static const struct { const char *file, *want; } bad[] = {
      {"pipe_stages_layers.lua", "6: parallel.stages = 5 is more than the model's 4 layers"},
      {"pipe_chunks_layers.lua", "6: parallel.virtual_stages = 3 gives 6 chunks (stages x virtual_stages), more than "
                                 "the model's 4 layers"},
      {"pipe_microbatches.lua", "6: parallel.microbatches = 3 does not divide the replica's batch of 8 sequences"},
      {"pipe_batch_replicas.lua", "2: data.global_batch must be divisible by parallel.replicas (2), got 9"},
      {"pipe_replica_microbatches.lua", "6: parallel.microbatches = 8 does not divide the replica's batch of 4 "
                                        "sequences (data.global_batch 8 / replicas 2)"},
      {"pipe_split_count.lua", "6: parallel.split has 3 entries, but the pipeline has 4 chunks (stages 4 x "
                               "virtual_stages 1): give the layers of each chunk"},
      {"pipe_split_zero.lua", "6: parallel.split[2] must be a positive integer (the layers of chunk 1), got 0"},
      {"pipe_split_short.lua", "6: parallel.split leaves layer 7 out (it holds 7 of the model's 8 layers)"},
      {"pipe_split_short2.lua", "6: parallel.split leaves layers 6 to 7 out (it holds 6 of the model's 8 layers)"},
      {"pipe_split_long.lua", "6: parallel.split has 9 layers, the model 8"},
      {"pipe_split_float.lua", "6: parallel.split[1] must be a positive integer (the layers of chunk 0), got 4.5"},
      {"pipe_split_mlp.lua", "6: parallel.split leaves model.layers[5] out (it holds 4 of the model's 5 layers)"},
      {"pipe_split_error.lua", "2: parallel.split failed: no split for 8 layers"},
      {"pipe_split_notlist.lua", "7: parallel.split(info) must be a list of positive integers (the layers of each "
                                 "chunk), got 4"},
      {"pipe_split_fn_sum.lua", "7: parallel.split(info) leaves layers 5 to 7 out (it holds 5 of the model's 8 "
                                "layers)"},
      {"pipe_split_type.lua", "6: parallel.split must be a list of positive integers (the layers of each chunk) or a "
                              "function(info) returning one, got \"even\""},
      {"pipe_unknown.lua", "6: parallel.microbatch is not a field of pipeline{} (did you mean microbatches?)"},
      {"pipe_stages_type.lua", "6: parallel.stages must be a positive integer, got \"4\""},
      {"pipe_no_stages.lua", "6: parallel.stages is required"},
      {"pipe_schedule_name.lua", "6: parallel.schedule must be one of \"sequential\", \"gpipe\", \"1f1b\", "
                                 "\"interleaved\" or \"zero_bubble\", got \"pipedream\""},
      {"pipe_ranks.lua", "6: parallel.ranks must equal stages x replicas (2 x 2 = 4): a pipeline's ranks follow from "
                         "them, got 2"},
      {"pipe_interleaved_v1.lua", "6: parallel.virtual_stages must be at least 2 with schedule = \"interleaved\" (the "
                                  "chunks each stage runs), got 1"},
      {"pipe_interleaved_mb.lua", "6: parallel.microbatches must be a multiple of parallel.stages (4) with schedule = "
                                  "\"interleaved\" (Megatron's rule), got 2"},
      {"pipe_virtual_1f1b.lua", "6: parallel.virtual_stages must be 1 with schedule = \"1f1b\" (only \"interleaved\" "
                                "runs several chunks per stage), got 2"},
      {"pipe_sequential_mb.lua", "6: parallel.microbatches must be 1 with schedule = \"sequential\" (the whole batch "
                                 "goes through the stages at once, each stage waiting for the previous), got 4"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[256], want[1024];
    snprintf(path, sizeof path, BAD "%s", bad[i].file);
    snprintf(want, sizeof want, "%s:%s", path, bad[i].want);
    expect_err_sets(path, NULL, 0, want);
  }
}

int main(void) {
  const char *src = getenv("DDP_SOURCE_DIR");
  if (!src || chdir(src) != 0) {
    fprintf(stderr, "test_pipeline: DDP_SOURCE_DIR must name the source tree\n");
    return 1;
  }
  test_shipped();
  test_sets();
  test_split_lists();
  test_bad_schedules();
  return check_report("test_pipeline");
}

/* tests/unit/frontend/test_frontend.c: the schedule front end. Every shipped schedule loads with the expected fields;
 * --set overrides apply and bad ones are refused; every bad schedule of tests/fixtures/schedules_bad/ gives its
 * exact one-line error with the field and file:line; the sandbox holds (os, io, require, instruction and
 * memory limits); bucket functions are called and their bad answers refused. Runs from $DDP_SOURCE_DIR
 * so that paths (and so messages) are relative to the repository. */
#include "dtype.h"
#include "plan.h"
#include "schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "schedule_load.h"

static bool contains(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

static void test_transformer_schedules(void) {
  ddp_schedule *s = load("schedules/tiny.lua");
  if (s) {
    CHECK(s->model_kind == MODEL_TRANSFORMER && s->d_model == 64 && s->d_ff == 128 && s->layers == 2 &&
              s->heads == 4 && s->vocab == 256 && s->context == 32, "tiny sizes");
    CHECK(s->precision == PREC_FP32 && s->optimizer == OPTIM_ADAMW && s->ranks == 1 && s->sync == SYNC_NONE,
          "tiny setup");
    CHECK(s->data_kind == DATA_RANDOM_TOKENS && s->global_batch == 8 && s->steps == 10, "tiny data");
    CHECK(s->lr_schedule == 1 && s->lr_warmup == 2 && s->lr_cycle == 10 && s->clip_norm == 1.0, "tiny lr");
    CHECK(s->source && contains(s->source, "models.tiny()"), "source kept");
    CHECK(strcmp(s->path, "schedules/tiny.lua") == 0, "path %s", s->path);
    CHECK(s->bucket_policy == NULL, "no bucket policy");
    CHECK(s->mode == MODE_TRAIN, "mode defaults to train, got %d", s->mode);
  }
  ddp_schedule_free(s);

  s = load("schedules/tiny_pattern.lua");
  if (s) CHECK(s->data_kind == DATA_PATTERN_TOKENS && s->steps == 50 && s->data_path[0] == 0, "pattern");
  ddp_schedule_free(s);

  s = load("schedules/bench_xl.lua");
  if (s) {
    CHECK(s->d_model == 1600 && s->d_ff == 6400 && s->layers == 48 && s->heads == 25 && s->context == 512 &&
              s->vocab == 10000 && s->rope_theta == 10000 && s->attention == ATTN_FLASH, "xl sizes");
    CHECK(strcmp(s->model_name, "xl") == 0, "name %s", s->model_name);
    CHECK(s->precision == PREC_BF16 && s->grad_dtype == DT_F32 && s->global_batch == 4 && s->ranks == 1, "bench");
    CHECK(s->lr == 3e-4 && s->beta1 == 0.9 && s->beta2 == 0.95 && s->weight_decay == 0.1 && s->eps == 1e-8,
          "adamw");
    CHECK(s->steps == 20 && s->warmup == 5 && s->seed == 1 && s->lr_schedule == 0, "run");
  }
  ddp_schedule_free(s);

  static const struct { const char *path; int sync; double mb; bool overlap; int shard; } ddp[] = {
      {"schedules/naive.lua", SYNC_NAIVE, 0, false, SHARD_NONE},
      {"schedules/flat.lua", SYNC_FLAT, 0, false, SHARD_NONE},
      {"schedules/individual.lua", SYNC_INDIVIDUAL, 0, true, SHARD_NONE},
      {"schedules/bucketed_1mb.lua", SYNC_BUCKETED, 1, true, SHARD_NONE},
      {"schedules/bucketed_10mb.lua", SYNC_BUCKETED, 10, true, SHARD_NONE},
      {"schedules/bucketed_100mb.lua", SYNC_BUCKETED, 100, true, SHARD_NONE},
      {"schedules/bucketed_1000mb.lua", SYNC_BUCKETED, 1000, true, SHARD_NONE},
      {"schedules/sharded_optimizer.lua", SYNC_BUCKETED, 100, true, SHARD_OPTIMIZER},
      {"schedules/zero1.lua", SYNC_FLAT, 0, false, SHARD_ZERO1},
  };
  for (size_t i = 0; i < sizeof ddp / sizeof ddp[0]; i++) {
    s = load(ddp[i].path);
    if (!s) continue;
    CHECK(s->d_model == 1600 && s->layers == 48 && s->ranks == 2 && s->global_batch == 8 &&
              s->precision == PREC_BF16, "%s: XL on 2 ranks", ddp[i].path);
    CHECK(s->sync == ddp[i].sync && s->bucket_mb == ddp[i].mb && s->overlap_backward == ddp[i].overlap &&
              s->shard == ddp[i].shard, "%s: sync %d mb %g overlap %d shard %d", ddp[i].path, s->sync,
          s->bucket_mb, s->overlap_backward, s->shard);
    CHECK(s->broadcast_init && !s->identical_init && !s->optimizer_overlap, "%s: init", ddp[i].path);
    ddp_schedule_free(s);
  }
}

static void test_mlp_schedules(void) {
  ddp_schedule *s = load("schedules/toy.lua");
  if (s) {
    CHECK(s->model_kind == MODEL_MLP && s->n_mlp_layers == 5 && s->mlp_in == 10 && s->mlp_out == 5, "toy shape");
    const ddp_mlp_layer *m = s->mlp;
    CHECK(m[0].kind == LAYER_LINEAR && strcmp(m[0].name, "fc1") == 0 && m[0].in == 10 && m[0].out == 10 &&
              !m[0].bias, "fc1");
    CHECK(m[1].kind == LAYER_RELU, "relu");
    CHECK(strcmp(m[2].name, "fc2") == 0 && m[2].in == 10 && m[2].out == 50 && m[2].bias && m[2].bias_frozen &&
              !m[2].weight_frozen, "fc2 with frozen bias");
    CHECK(strcmp(m[4].name, "fc3") == 0 && m[4].in == 50 && m[4].out == 5 && !m[4].bias, "fc3");
    CHECK(s->n_extra == 1 && strcmp(s->extra[0].name, "no_grad_fixed_param") == 0 && s->extra[0].numel == 2 &&
              s->extra[0].value == 2.0 && s->extra[0].frozen, "no_grad_fixed_param");
    CHECK(s->optimizer == OPTIM_SGD && s->lr == 0.1 && s->steps == 5 && s->ranks == 1, "toy run");
    CHECK(s->data_kind == DATA_RANDOM_DENSE && s->data_rows == 20 && s->global_batch == 20, "toy data");
  }
  ddp_schedule_free(s);

  s = load("schedules/toy_ddp.lua");
  if (s) CHECK(s->ranks == 2 && s->sync == SYNC_BUCKETED && s->bucket_mb == 0.001 && s->global_batch == 20 &&
                   s->broadcast_init && s->n_mlp_layers == 5, "toy ddp");
  ddp_schedule_free(s);

  s = load("schedules/toy_tied.lua");
  if (s) {
    CHECK(s->n_mlp_layers == 9 && s->mlp_in == 10 && s->mlp_out == 5, "tied shape");
    CHECK(strcmp(s->mlp[6].name, "fc4") == 0 && s->mlp[6].tie_weight_to == 2 && strcmp(s->mlp[2].name, "fc2") == 0,
          "fc4 tied to fc2: %d", s->mlp[6].tie_weight_to);
    int untied = 0;
    for (int i = 0; i < s->n_mlp_layers; i++) untied += s->mlp[i].tie_weight_to < 0 && !s->mlp[i].bias;
    CHECK(untied == 8, "no biases, one tie");
  }
  ddp_schedule_free(s);

  s = load("schedules/toy_layernorm.lua");
  if (s) {
    CHECK(s->n_mlp_layers == 4 && s->mlp[2].kind == LAYER_LAYERNORM && strcmp(s->mlp[2].name, "ln") == 0 &&
              s->mlp[2].in == 10 && s->mlp[2].out == 10 && s->mlp[2].bias, "ln");
    CHECK(s->mlp_in == 10 && s->mlp_out == 5 && !s->mlp[0].bias && !s->mlp[3].bias, "toy_layernorm shape");
  }
  ddp_schedule_free(s);
}

static void test_sets(void) {
  const char *a[] = {"parallel.bucket_mb=100"};
  ddp_schedule *s = load_sets("schedules/bucketed_10mb.lua", a, 1);
  if (s) CHECK(s->bucket_mb == 100, "bucket_mb %g", s->bucket_mb);
  ddp_schedule_free(s);

  const char *b[] = {"steps=6", "precision=fp32", "model.layers=2", "model.attention=naive", "optimizer.clip=0.5",
                     "data.tokens=pattern", "parallel.grad_dtype=fp32"};
  s = load_sets("schedules/bucketed_10mb.lua", b, 7);
  if (s) CHECK(s->steps == 6 && s->precision == PREC_FP32 && s->layers == 2 && s->attention == ATTN_NAIVE &&
                   s->clip_norm == 0.5 && s->data_kind == DATA_PATTERN_TOKENS, "sets applied");
  ddp_schedule_free(s);

  const char *c[] = {"parallel.sync=individual", "parallel.bucket_mb=nil", "parallel.optimizer_overlap=false",
                     "optimizer.betas.2=0.99"};
  s = load_sets("schedules/bucketed_10mb.lua", c, 4);
  if (s) CHECK(s->sync == SYNC_INDIVIDUAL && s->overlap_backward && s->beta2 == 0.99, "nil removes a field");
  ddp_schedule_free(s);

  /* ddp{ ranks = 1 } compiles as one rank; its update overlaps the backward only if this ddp{} asks (single()'s
   * default is to overlap): a 1-rank baseline keeps the DDP schedule's update after the backward */
  const char *one[] = {"parallel.ranks=1"}, *one_ov[] = {"parallel.ranks=1", "parallel.optimizer_overlap=true"};
  s = load_sets("schedules/tiny_ddp.lua", one, 1);
  if (s) CHECK(s->ranks == 1 && !s->single_optimizer_overlap, "ddp{ranks = 1}: the update after the backward");
  ddp_schedule_free(s);
  s = load_sets("schedules/tiny_ddp.lua", one_ov, 2);
  if (s) CHECK(s->ranks == 1 && s->single_optimizer_overlap, "ddp{ranks = 1, optimizer_overlap = true}: overlapped");
  ddp_schedule_free(s);
  s = load_sets("schedules/tiny.lua", NULL, 0);
  if (s) CHECK(s->ranks == 1 && s->single_optimizer_overlap, "single(): overlapped by default");
  ddp_schedule_free(s);

  const char *d[] = {"precision=bf16", "grad_dtype=bf16"};
  s = load_sets("schedules/tiny.lua", d, 2);
  if (s) CHECK(s->precision == PREC_BF16 && s->grad_dtype == DT_BF16, "bf16 grads");
  ddp_schedule_free(s);

  const char *m1[] = {"mode=forward"};
  s = load_sets("schedules/tiny.lua", m1, 1);
  if (s) CHECK(s->mode == MODE_FORWARD, "mode=forward: %d", s->mode);
  ddp_schedule_free(s);
  const char *m2[] = {"mode=forward_backward"};
  s = load_sets("schedules/bucketed_10mb.lua", m2, 1);
  if (s) CHECK(s->mode == MODE_FORWARD_BACKWARD && s->sync == SYNC_BUCKETED, "mode=forward_backward: %d", s->mode);
  ddp_schedule_free(s);
  const char *m3[] = {"mode=fwd"};
  expect_err_sets("schedules/tiny.lua", m3, 1,
                  "--set mode=fwd: mode must be one of \"train\", \"forward\" or \"forward_backward\", got \"fwd\"");
  const char *m4[] = {"mode=1"};
  expect_err_sets("schedules/tiny.lua", m4, 1,
                  "--set mode=1: mode must be one of \"train\", \"forward\" or \"forward_backward\", got 1");

  const char *e1[] = {"parallel.bucketmb=100"};
  expect_err_sets("schedules/bucketed_10mb.lua", e1, 1,
                  "--set parallel.bucketmb=100: parallel.bucketmb is not a field of ddp{} (did you mean bucket_mb?)");
  const char *e2[] = {"optimiser.lr=1"};
  expect_err_sets("schedules/tiny.lua", e2, 1,
                  "--set optimiser.lr=1: unknown path optimiser.lr (the schedule has no table optimiser)");
  const char *e3[] = {"steps=abc"};
  expect_err_sets("schedules/tiny.lua", e3, 1, "--set steps=abc: steps must be a positive integer, got \"abc\"");
  const char *e4[] = {"precision=fp16"};
  expect_err_sets("schedules/tiny.lua", e4, 1,
                  "--set precision=fp16: precision must be \"fp32\" or \"bf16\", got \"fp16\"");
  const char *e5[] = {"steps"};
  expect_err_sets("schedules/tiny.lua", e5, 1,
                  "--set steps: expected path=value, as in --set parallel.bucket_mb=100");
  const char *e6[] = {"model.layers.x=1"};
  expect_err_sets("schedules/tiny.lua", e6, 1,
                  "--set model.layers.x=1: unknown path model.layers.x (the schedule has no table model.layers)");
  const char *e7[] = {"optimizer.lr=-3"};
  expect_err_sets("schedules/tiny.lua", e7, 1,
                  "--set optimizer.lr=-3: optimizer.lr must be a positive number, got -3");
  const char *e8[] = {"model.heads=7"};
  expect_err_sets("schedules/bench_xl.lua", e8, 1, "--set model.heads=7: model.heads must divide model.d_model (1600), got 7");
  const char *e_list[] = {"optimizer.betas.2=1.5"}; /* a list element set from the command line is located there */
  expect_err_sets("schedules/tiny.lua", e_list, 1,
                  "--set optimizer.betas.2=1.5: optimizer.betas[2] must be a number in [0, 1), got 1.5");
  const char *e_hole[] = {"optimizer.betas.1=nil"}; /* a list made short or holed by --set is that --set's doing */
  expect_err_sets("schedules/tiny.lua", e_hole, 1,
                  "--set optimizer.betas.1=nil: optimizer.betas must be a list of two numbers {beta1, beta2} (a list: no "
                  "named fields or holes), found a hole at [1]");
  const char *e_short[] = {"optimizer.betas.2=nil"};
  expect_err_sets("schedules/tiny.lua", e_short, 1,
                  "--set optimizer.betas.2=nil: optimizer.betas must be a list of two numbers {beta1, beta2}, got 1 element");
  const char *e_long[] = {"optimizer.betas.3=0.9"};
  expect_err_sets("schedules/tiny.lua", e_long, 1,
                  "--set optimizer.betas.3=0.9: optimizer.betas[3] is one element too many: optimizer.betas must be a list "
                  "of two numbers {beta1, beta2}");
  const char *e_key0[] = {"optimizer.betas.0=1"}, *e_keyx[] = {"optimizer.betas.x=1"};
  expect_err_sets("schedules/tiny.lua", e_key0, 1,
                  "--set optimizer.betas.0=1: optimizer.betas must be a list of two numbers {beta1, beta2} (a list: no "
                  "named fields or holes), found the key 0");
  expect_err_sets("schedules/tiny.lua", e_keyx, 1,
                  "--set optimizer.betas.x=1: optimizer.betas must be a list of two numbers {beta1, beta2} (a list: no "
                  "named fields or holes), found the key \"x\"");
  /* the limits at their boundaries, and the pairs of fields that exclude each other (mutation testing found
   * each of these checks could go without a test failing) */
  const char *e_ov[] = {"parallel.overlap=none", "parallel.optimizer_overlap=true"};
  expect_err_sets("schedules/bucketed_10mb.lua", e_ov, 2,
                  "--set parallel.optimizer_overlap=true: parallel.optimizer_overlap needs sync = \"bucketed\" with "
                  "overlap = \"backward\", got true");
  const char *e_chunks[] = {"model.layers=3", "parallel.virtual_stages=2", "parallel.schedule=interleaved"};
  expect_err_sets("schedules/tiny_pipeline.lua", e_chunks, 3,
                  "--set parallel.virtual_stages=2: parallel.virtual_stages = 2 gives 4 chunks (stages x virtual_stages), "
                  "more than the model's 3 layers");
  const char *e_1025[] = {"model.layers=5", "parallel.stages=5", "parallel.replicas=205"};
  expect_err_sets("schedules/tiny_pipeline.lua", e_1025, 3,
                  "--set parallel.replicas=205: parallel.replicas = 205 gives 1025 ranks (stages x replicas), more than 1024");
  const char *e_mb[] = {"parallel.bucket_mb=2000000"};
  expect_err_sets("schedules/bucketed_10mb.lua", e_mb, 1,
                  "--set parallel.bucket_mb=2000000: parallel.bucket_mb must be a positive number of MB (at most 1048576), "
                  "got 2000000");
  const char *zero2_last[] = {"parallel.master_group=last"};
  s = load_sets("schedules/tiny_zero2.lua", zero2_last, 1);
  CHECK(s && s->master_group_last, "master_group = \"last\" with shard = \"zero2\" is taken");
  ddp_schedule_free(s);

  const char *e9[] = {"parallel.sync=individual"}; /* bucket_mb = 10 is still there: reported where ddp{} is */
  expect_err_sets("schedules/bucketed_10mb.lua", e9, 1,
                  "schedules/bucketed_10mb.lua:7: parallel.bucket_mb only applies with sync = \"bucketed\", got 10");
  const char *e10[] = {"grad_dtype=bf16"};
  expect_err_sets("schedules/tiny.lua", e10, 1,
                  "--set grad_dtype=bf16: grad_dtype may be \"bf16\" only with precision = \"bf16\", got \"bf16\"");
}

static void test_bad_schedules(void) {
#define BAD "tests/fixtures/schedules_bad/"
  expect_err(BAD "syntax.lua", BAD "syntax.lua:5: '}' expected (to close '{' at line 2) near 'optimizer'");
  expect_err(BAD "wrong_type.lua", BAD "wrong_type.lua:5: optimizer.lr must be a positive number, got \"fast\"");
  expect_err(BAD "wrong_type_top.lua", BAD "wrong_type_top.lua:2: steps must be a positive integer, got \"ten\"");
  expect_err(BAD "missing.lua", BAD "missing.lua:2: model is required");
  expect_err(BAD "unknown.lua",
             BAD "unknown.lua:6: parallel.bucketmb is not a field of ddp{} (did you mean bucket_mb?)");
  expect_err(BAD "neg_lr.lua", BAD "neg_lr.lua:5: optimizer.lr must be a positive number, got -1");
  expect_err(BAD "heads.lua", BAD "heads.lua:3: model.heads must divide model.d_model (64), got 5");
  expect_err(BAD "batch_ranks.lua",
             BAD "batch_ranks.lua:3: data.global_batch must be divisible by parallel.ranks (2), got 7");
  expect_err(BAD "absurd.lua", BAD "absurd.lua:3: model.vocab is too large: the embedding (10000000 x 1600) would "
                                   "exceed 2^31-1 elements, got 10000000");
  expect_err(BAD "absurd_dmodel.lua", BAD "absurd_dmodel.lua:3: model.d_model must be at most 65536, got 1000000000000.0");
  expect_err(BAD "os_execute.lua", BAD "os_execute.lua:2: there is no os library in schedules (os is nil)*");
  CHECK(access("/tmp/ddpc_sandbox_escaped", F_OK) != 0, "os.execute ran");
  expect_err(BAD "io_open.lua", BAD "io_open.lua:2: there is no io library in schedules (io is nil)*");
  expect_err(BAD "require_up.lua", BAD "require_up.lua:2: require \"../x\": a module name is letters, digits and _ "
                                       "only (it names <schedule folder>/<name>.lua)");
  expect_err(BAD "missing_tokens.lua",
             BAD "missing_tokens.lua:2: data.tokens: file not found: tests/fixtures/schedules_bad/no_such_tokens.bin");
  expect_err(BAD "infinite.lua",
             BAD "infinite.lua:3: the schedule ran more than 100000000 Lua instructions, 16 bytes it allocates counting as one (an infinite loop?)");
  expect_err(BAD "infinite_pcall.lua", BAD "infinite_pcall.lua:*");
  CHECK(contains(sched_err, "instructions"), "pcall swallowed the limit: %s", sched_err);
  expect_err(BAD "memory.lua", BAD "memory.lua: the schedule used more than 512 MB of Lua memory");
  expect_err(BAD "not_table.lua", BAD "not_table.lua: the schedule must return schedule{...}, got 42");
  expect_err(BAD "wrong_ctor.lua",
             BAD "wrong_ctor.lua:6: parallel must be made by ddp{...}, fsdp{...}, pipeline{...} or single(), got "
                 "adamw{...}");
  expect_err(BAD "precision.lua", BAD "precision.lua:2: precision must be \"fp32\" or \"bf16\", got \"fp16\"");
  expect_err(BAD "mode.lua", BAD "mode.lua:2: mode must be one of \"train\", \"forward\" or \"forward_backward\", "
                                 "got \"inference\"");
  expect_err(BAD "bucket_mb_flat.lua",
             BAD "bucket_mb_flat.lua:6: parallel.bucket_mb only applies with sync = \"bucketed\", got 10");
  expect_err(BAD "overlap_naive.lua", BAD "overlap_naive.lua:6: parallel.overlap needs sync = \"individual\" or "
                                          "\"bucketed\" (naive and flat sync after the backward), got \"backward\"");
  expect_err(BAD "betas.lua", BAD "betas.lua:5: optimizer.betas[2] must be a number in [0, 1), got 1.0");
  expect_err(BAD "warmup.lua", BAD "warmup.lua:2: warmup must be smaller than steps (5), got 5");
  expect_err(BAD "zero1_naive.lua", BAD "zero1_naive.lua:6: parallel.shard needs sync = \"flat\" or \"bucketed\" "
                                        "when it is \"zero1\" (ZeRO-1 reduce-scatters the gradients), got \"zero1\"");
  expect_err(BAD "mlp_chain.lua", BAD "mlp_chain.lua:6: model.layers[3].in_features must match the previous "
                                      "layer's output size (10), got 20");
  expect_err(BAD "ctor_arg.lua", BAD "ctor_arg.lua:5: adamw expects a table of fields, as in adamw{ ... }, got 0.0003");
  expect_err(BAD "no_such_file.lua", BAD "no_such_file.lua: cannot read the schedule: No such file or directory");
  expect_err(BAD "betas_hole.lua", BAD "betas_hole.lua:5: optimizer.betas must be a list of two numbers {beta1, "
                                       "beta2} (a list: no named fields or holes), found a hole at [1]");
  expect_err(BAD "head_dim_flash.lua", BAD "head_dim_flash.lua:4: model.heads must give an even head dimension in "
                                           "16..128 with attention = \"flash\" (d_model 256 / heads = 256), got 1");
  expect_err(BAD "qkv_elems.lua", BAD "qkv_elems.lua:4: model.d_model is too large: the attention's q, k and v "
                                      "weights (3 x 65536 x 65536) would exceed 2^31-1 elements, got 65536");
  expect_err(BAD "qkv_activations.lua",
             BAD "qkv_activations.lua:3: data.global_batch is too large: the attention's q, k and v on each rank (1 "
                 "sequences x context 262144 x 49152) would exceed 2^31-1 elements, got 1");
  expect_err(BAD "plan_instrs.lua",
             BAD "plan_instrs.lua:6: parallel: the plan would hold about 16 million instructions (64 ranks, 1 layers "
                 "a rank, 4096 microbatches a step), more than ddpc builds (8 million: every rank's program is "
                 "stored in the plan)");
  /* a module that failed under pcall is not "loading" any more: required again, it fails again */
  expect_err(BAD "require_failed.lua", BAD "failing_module.lua:2: this module fails");
  expect_err(BAD "mlp_frozen.lua",
             BAD "mlp_frozen.lua:3: model.layers has no trainable parameter: every weight and bias is frozen");
  expect_err(BAD "positional.lua", BAD "positional.lua:2: schedule{} has a value without a field name (at [1]): "
                                       "write fields as name = value");
}

static int policy(const ddp_schedule *s, const char *const *names, int n, int *of) {
  uint64_t bytes[16];
  for (int i = 0; i < n; i++) bytes[i] = 4096u * (uint64_t)(i + 1);
  sched_err[0] = 0;
  return s->bucket_policy(s->bucket_policy_ctx, names, NULL, bytes, n, of, sched_err, sizeof sched_err);
}

static void test_bucket_policies(void) {
  ddp_schedule *s = load("schedules/bucket_policy.lua");
  if (s) {
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_policy && s->bucket_mb == 0 && s->overlap_backward, "policy set");
    const char *names[] = {"lm_head.weight", "ln_final.weight", "layers.1.ffn.w2.weight", "layers.1.ln1.weight",
                           "layers.0.attn.q_proj.weight", "layers.0.ln1.weight", "token_embeddings.weight"};
    int of[7], want[7] = {0, 0, 1, 1, 2, 2, 3};
    for (int round = 0; round < 2; round++) { /* the state survives a call */
      CHECK(policy(s, names, 7, of) == 0, "policy failed: %s", sched_err);
      CHECK(memcmp(of, want, sizeof want) == 0, "buckets %d %d %d %d %d %d %d", of[0], of[1], of[2], of[3], of[4],
            of[5], of[6]);
    }
  }
  ddp_schedule_free(s);

  /* schedules/lib/buckets.lua: 100 MiB buckets, buckets of at most 16 MiB for the units that begin within
   * the last 100 MiB; a fused weight (its entries' unit) is never split. Units: lm_head 60, block 1 (w13 of
   * two entries, 50), block 0 (w2 30, qkv of two entries 14, ln1 4 KiB) and the embedding 60 MiB: the tail
   * begins at block 0's w2 (74 MiB from the end; w13 begins 104 MiB from it); w2 and the embedding exceed
   * 16 MiB and go alone, qkv and ln1 share one. */
  s = load("schedules/bucketed_100mb_tail.lua");
  if (s) {
    const char *names[] = {"lm_head.weight", "layers.1.ffn.w1.weight", "layers.1.ffn.w3.weight",
                           "layers.0.ffn.w2.weight", "layers.0.attn.q_proj.weight", "layers.0.attn.k_proj.weight",
                           "layers.0.ln1.weight", "token_embeddings.weight"};
    const char *units[] = {"lm_head.weight", "layers.1.ffn.w13", "layers.1.ffn.w13", "layers.0.ffn.w2.weight",
                           "layers.0.attn.qkv_proj", "layers.0.attn.qkv_proj", "layers.0.ln1.weight",
                           "token_embeddings.weight"};
    const uint64_t MiB = 1u << 20;
    uint64_t bytes[] = {60 * MiB, 25 * MiB, 25 * MiB, 30 * MiB, 7 * MiB, 7 * MiB, 4096, 60 * MiB};
    int of[8], want[8] = {0, 1, 1, 2, 3, 3, 3, 4};
    sched_err[0] = 0;
    CHECK(s->bucket_policy(s->bucket_policy_ctx, names, units, bytes, 8, of, sched_err, sizeof sched_err) == 0,
          "tail: %s", sched_err);
    CHECK(memcmp(of, want, sizeof want) == 0, "tail buckets %d %d %d %d %d %d %d %d", of[0], of[1], of[2], of[3],
          of[4], of[5], of[6], of[7]);
  }
  ddp_schedule_free(s);
  expect_err(BAD "buckets_sized_mb.lua", BAD "buckets_sized_mb.lua:7: buckets.sized: mb must be a number > 0, got 0");
  expect_err(BAD "buckets_sized_field.lua",
             BAD "buckets_sized_field.lua:7: buckets.sized: unknown field tail (mb, tail_mb, tail_bucket_mb)");

  expect_err(BAD "bucket_fn_and_mb.lua", BAD "bucket_fn_and_mb.lua:6: parallel.buckets and parallel.bucket_mb cannot "
             "both be given (the function decides)");
  static const struct { const char *file, *want; } bad[] = {
      {"bucket_dup.lua", BAD "bucket_dup.lua:6: parallel.buckets returned the parameter \"a.weight\" twice (buckets 1 and 2)"},
      {"bucket_unknown.lua", BAD "bucket_unknown.lua:6: parallel.buckets returned the unknown parameter \"no.such.param\" in bucket 1"},
      {"bucket_missing.lua", BAD "bucket_missing.lua:6: parallel.buckets left out the parameter \"b.weight\" (every "
                             "parameter must be in exactly one bucket)"},
      {"bucket_notlist.lua", BAD "bucket_notlist.lua:6: parallel.buckets must return a list of buckets (lists of "
                             "parameter names), got 3"},
      {"bucket_error.lua", BAD "bucket_error.lua:7: attempt to index a nil value (field 'nme')"},
      {"bucket_loop.lua", BAD "bucket_loop.lua:7: the schedule ran more than 100000000 Lua instructions, 16 bytes it allocates counting as one (an infinite loop?)"},
      {"bucket_empty.lua", BAD "bucket_empty.lua:6: parallel.buckets returned bucket 1 empty"},
      {"bucket_hole.lua", BAD "bucket_hole.lua:6: parallel.buckets must return a list of buckets (no named fields or "
                          "holes), found the key 3"},
      {"bucket_inner_hole.lua", BAD "bucket_inner_hole.lua:6: parallel.buckets returned bucket 1 that is not a list "
                                "of names (no named fields or holes), found a hole at [1]"},
  };
  const char *names[] = {"a.weight", "b.weight", "c.weight"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, BAD "%s", bad[i].file);
    s = load(path);
    if (!s) continue;
    int of[3];
    CHECK(s->bucket_policy && policy(s, names, 3, of) != 0, "%s: bad buckets accepted", path);
    CHECK(strcmp(sched_err, bad[i].want) == 0, "%s:\n  got  %s\n  want %s", path, sched_err, bad[i].want);
    ddp_schedule_free(s);
  }
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void copy_file(const char *from, const char *to) {
  FILE *f = fopen(from, "rb");
  CHECK(f != NULL, "cannot read %s", from);
  if (!f) return;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  write_file(to, buf);
}

/* Schedules outside the repository: a token file, require of a sibling module, models.* errors. */
static void test_user_folder(void) {
  char dir[] = "/tmp/ddpc_fe_XXXXXX", path[256], tok[256], want[1024];
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp");
    return;
  }
  snprintf(tok, sizeof tok, "%s/tokens.bin", dir);
  FILE *f = fopen(tok, "wb");
  for (int i = 0; f && i < 1000; i++) fputc(i & 0xff, f), fputc(0, f);
  if (f) fclose(f);
  snprintf(path, sizeof path, "%s/models.lua", dir);
  copy_file("schedules/lib/models.lua", path);
  snprintf(path, sizeof path, "%s/shared.lua", dir);
  write_file(path, "-- a helper module\nreturn { batch = 4, opt = function() return adamw { lr = 1e-3 } end }\n");

  snprintf(path, sizeof path, "%s/ok.lua", dir);
  write_file(path, "local models, shared = require \"models\", require \"shared\"\n"
                   "assert(require \"shared\" == shared)\n"
                   "local f = load(\"return 1 + 1\")\nassert(f() == 2)\n"
                   "assert(load(string.dump(function() end)) == nil)\n"
                   "return schedule {\n"
                   "  model = models.tiny({ context = 16 }),\n"
                   "  data = { global_batch = shared.batch, tokens = \"tokens.bin\" },\n"
                   "  optimizer = shared.opt(), steps = 3,\n"
                   "}\n");
  ddp_schedule *s = load(path);
  if (s) {
    char real[4096];
    CHECK(realpath(tok, real) && strcmp(s->data_path, real) == 0, "data_path %s", s->data_path);
    CHECK(s->data_kind == DATA_TOKEN_FILE && s->context == 16 && s->global_batch == 4, "user schedule");
  }
  ddp_schedule_free(s);

  snprintf(path, sizeof path, "%s/typo.lua", dir);
  write_file(path, "local models = require \"models\"\nreturn schedule {\n"
                   "  model = models.transformer(\"xl\", { contxt = 512 }),\n"
                   "  data = { global_batch = 8 }, optimizer = sgd { lr = 1 }, steps = 1 }\n");
  snprintf(want, sizeof want, "%s:3: model.contxt is not a field of transformer{} (did you mean context?)", path);
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/size.lua", dir);
  write_file(path, "local models = require \"models\"\nreturn schedule {\n"
                   "  model = models.transformer(\"xxl\"),\n"
                   "  data = { global_batch = 8 }, optimizer = sgd { lr = 1 }, steps = 1 }\n");
  snprintf(want, sizeof want, "%s:3: models.transformer: size must be one of \"small\", \"medium\", \"large\", "
           "\"xl\", \"2.7b\" or \"10b\", got \"xxl\"", path);
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/short.lua", dir);
  write_file(path, "return schedule { model = transformer { d_model = 64, d_ff = 64, layers = 1, heads = 4,\n"
                   "  context = 2000 }, data = { global_batch = 8, tokens = \"tokens.bin\" },\n"
                   "  optimizer = sgd { lr = 1 }, steps = 1 }\n");
  snprintf(want, sizeof want, "%s:1: data.tokens: file holds 1000 tokens, fewer than context + 1 = 2001: %s/tokens.bin",
           path, dir);
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/nomod.lua", dir);
  write_file(path, "local m = require \"nothere\"\n");
  snprintf(want, sizeof want, "%s:1: require \"nothere\": module not found: %s/nothere.lua, %s/lib/nothere.lua or "
           "%s/schedules/lib/nothere.lua", path, dir, dir, getenv("DDP_SOURCE_DIR"));
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/dofile.lua", dir);
  write_file(path, "\ndofile(\"x.lua\")\n");
  snprintf(want, sizeof want, "%s:2: dofile is not available in schedules (it is nil): use require \"name\"", path);
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/errorobj.lua", dir);
  write_file(path, "error({})\n");
  snprintf(want, sizeof want, "%s: the schedule raised an error that is not a string (a table)", path);
  expect_err(path, want);

  snprintf(path, sizeof path, "%s/multiline.lua", dir);
  write_file(path, "error(\"two\\nlines\")\n");
  snprintf(want, sizeof want, "%s:1: two lines", path);
  expect_err(path, want);

  const char *files[] = {"tokens.bin", "models.lua", "shared.lua", "ok.lua", "typo.lua", "size.lua", "short.lua",
                         "nomod.lua", "dofile.lua", "errorobj.lua", "multiline.lua"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

int main(void) {
  const char *src = getenv("DDP_SOURCE_DIR");
  if (!src || chdir(src) != 0) {
    fprintf(stderr, "test_frontend: DDP_SOURCE_DIR must name the source tree\n");
    return 1;
  }
  test_transformer_schedules();
  test_mlp_schedules();
  test_sets();
  test_bad_schedules();
  test_bucket_policies();
  test_user_folder();
  return check_report("test_frontend");
}

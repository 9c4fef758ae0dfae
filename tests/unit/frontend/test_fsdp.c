/* tests/unit/frontend/test_fsdp.c: sharding levels in the schedule front end. ddp{shard = "zero2" / "zero3"}
 * and fsdp{...} load into the ddp_schedule fields the compiler reads (shard, sync, bucket_mb, bucket policy,
 * prefetch depths, reshard_after_forward, gather dtype, gradient dtype), with the defaults every schedule
 * gets; --set reaches fsdp{}'s fields; a units function is called like a bucket function and its errors
 * say parallel.units; every bad sharding schedule of tests/fixtures/schedules_bad/ gives its exact one-line
 * error. Runs from $DDP_SOURCE_DIR so that paths (and so messages) are relative to the repository. */
#include "dtype.h"
#include "plan.h"
#include "schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "schedule_load.h"

/* The FSDP fields of s, in one line, for comparing against what a schedule should give. */
static void expect_fsdp(const char *what, const ddp_schedule *s, int shard, int pf, int pb, bool reshard, int gather,
                        int grad) {
  CHECK(s->shard == shard && s->prefetch_forward == pf && s->prefetch_backward == pb &&
            s->reshard_after_forward == reshard && s->gather_dtype == gather && s->grad_dtype == grad,
        "%s: shard %d (want %d) prefetch %d/%d (want %d/%d) reshard %d (want %d) gather %d (want %d) grad %d (want %d)",
        what, s->shard, shard, s->prefetch_forward, s->prefetch_backward, pf, pb, s->reshard_after_forward, reshard,
        s->gather_dtype, gather, s->grad_dtype, grad);
}

static int call_policy(const ddp_schedule *s, const char *const *names, int n, int *of) {
  uint64_t bytes[16];
  for (int i = 0; i < n; i++) bytes[i] = 4096u * (uint64_t)(i + 1);
  sched_err[0] = 0;
  return s->bucket_policy(s->bucket_policy_ctx, names, NULL, bytes, n, of, sched_err, sizeof sched_err);
}

/* single() and plain ddp{} carry the FSDP defaults too (the compiler may read them unconditionally). */
static void test_defaults(void) {
  ddp_schedule *s = load("schedules/tiny.lua");
  if (s) expect_fsdp("tiny.lua", s, SHARD_NONE, 1, 1, true, DT_F32, DT_F32);
  ddp_schedule_free(s);
  s = load("schedules/bucketed_10mb.lua"); /* bf16: the gather dtype follows the precision */
  if (s) expect_fsdp("bucketed_10mb.lua", s, SHARD_NONE, 1, 1, true, DT_BF16, DT_F32);
  ddp_schedule_free(s);
}

static void test_zero2(void) {
  ddp_schedule *s = load("schedules/zero2.lua");
  if (s) {
    CHECK(s->d_model == 1600 && s->layers == 48 && s->ranks == 2 && s->global_batch == 8 &&
              s->precision == PREC_BF16, "zero2.lua: XL on 2 ranks");
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_mb == 100 && s->overlap_backward && !s->optimizer_overlap &&
              s->bucket_policy == NULL, "zero2.lua: sync %d mb %g overlap %d", s->sync, s->bucket_mb,
          s->overlap_backward);
    expect_fsdp("zero2.lua", s, SHARD_ZERO2, 1, 1, true, DT_BF16, DT_F32);
  }
  ddp_schedule_free(s);

  s = load("schedules/tiny_zero2.lua");
  if (s) {
    CHECK(s->d_model == 64 && s->ranks == 2 && s->precision == PREC_FP32 && s->data_kind == DATA_PATTERN_TOKENS,
          "tiny_zero2.lua: tiny on 2 ranks");
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_mb == 0.1 && s->overlap_backward, "tiny_zero2.lua: buckets");
    expect_fsdp("tiny_zero2.lua", s, SHARD_ZERO2, 1, 1, true, DT_F32, DT_F32);
  }
  ddp_schedule_free(s);

  const char *flat[] = {"parallel.sync=flat", "parallel.bucket_mb=nil", "parallel.overlap=nil"};
  s = load_sets("schedules/tiny_zero2.lua", flat, 3); /* zero2 over one flat buffer, as zero1 */
  if (s) CHECK(s->sync == SYNC_FLAT && s->shard == SHARD_ZERO2 && !s->overlap_backward, "zero2 flat");
  ddp_schedule_free(s);

  /* the update in the backward and the all-gathers before the next forward; zero1_overlap.lua's fields */
  const char *ovl[] = {"parallel.optimizer_overlap=true", "parallel.param_gather=before_forward"};
  s = load_sets("schedules/tiny_zero2.lua", ovl, 2);
  if (s) CHECK(s->optimizer_overlap && s->gather_before_forward && s->shard == SHARD_ZERO2, "zero2 overlap + gather");
  ddp_schedule_free(s);
  const char *after[] = {"parallel.param_gather=after_update"};
  s = load_sets("schedules/tiny_zero2.lua", after, 1);
  if (s) CHECK(!s->optimizer_overlap && !s->gather_before_forward, "zero2 after_update (the default)");
  ddp_schedule_free(s);
  s = load("schedules/zero1_overlap.lua");
  if (s) CHECK(s->shard == SHARD_ZERO1 && s->sync == SYNC_BUCKETED && s->bucket_mb == 100 && s->optimizer_overlap &&
               !s->gather_before_forward && s->grad_dtype == DT_BF16, "zero1_overlap.lua");
  ddp_schedule_free(s);
  const char *fo[] = {"parallel.optimizer_overlap=true"};
  s = load_sets("schedules/tiny_fsdp.lua", fo, 1);
  if (s) CHECK(s->optimizer_overlap && s->shard == SHARD_ZERO3, "fsdp{ optimizer_overlap = true }");
  ddp_schedule_free(s);
}

static void test_ddp_zero3(void) {
  /* ddp{shard = "zero3"} without bucket_mb or buckets: units left to the compiler (one per block). */
  const char *a[] = {"parallel.shard=zero3", "parallel.bucket_mb=nil"};
  ddp_schedule *s = load_sets("schedules/tiny_ddp.lua", a, 2);
  if (s) {
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_mb == 0 && s->bucket_policy == NULL && s->overlap_backward,
          "ddp zero3 default units: mb %g", s->bucket_mb);
    expect_fsdp("ddp zero3", s, SHARD_ZERO3, 1, 1, true, DT_F32, DT_F32);
  }
  ddp_schedule_free(s);
  /* ... with bucket_mb: units by size. */
  const char *b[] = {"parallel.shard=zero3"};
  s = load_sets("schedules/tiny_ddp.lua", b, 1);
  if (s) CHECK(s->shard == SHARD_ZERO3 && s->bucket_mb == 0.1 && s->bucket_policy == NULL, "ddp zero3 by size");
  ddp_schedule_free(s);
  /* ... with a buckets function: units by the function, whose errors still say parallel.buckets. */
  s = load_sets("schedules/bucket_policy.lua", b, 1);
  if (s) {
    CHECK(s->shard == SHARD_ZERO3 && s->bucket_policy && s->bucket_mb == 0, "ddp zero3 with buckets function");
    const char *names[] = {"layers.0.ln1.weight", "layers.0.ln1.weight"};
    int of[2];
    CHECK(call_policy(s, names, 2, of) != 0 && strstr(sched_err, "parallel.buckets was given the parameter") != NULL,
          "ddp{buckets=} errors say parallel.buckets: %s", sched_err);
  }
  ddp_schedule_free(s);
  /* zero3 with sync "bucketed" given and no bucket_mb: still per block, not 25 MB. */
  const char *c[] = {"parallel.shard=zero3", "parallel.bucket_mb=nil", "parallel.sync=bucketed"};
  s = load_sets("schedules/tiny_ddp.lua", c, 3);
  if (s) CHECK(s->bucket_mb == 0, "explicit bucketed zero3: mb %g", s->bucket_mb);
  ddp_schedule_free(s);
}

static void test_fsdp_schedules(void) {
  ddp_schedule *s = load("schedules/tiny_fsdp.lua");
  if (s) {
    CHECK(s->d_model == 64 && s->layers == 2 && s->ranks == 2 && s->global_batch == 8 && s->steps == 20 &&
              s->precision == PREC_FP32 && s->optimizer == OPTIM_ADAMW, "tiny_fsdp.lua: tiny on 2 ranks");
    CHECK(s->sync == SYNC_BUCKETED && s->overlap_backward && !s->optimizer_overlap && s->bucket_mb == 0 &&
              s->bucket_policy == NULL, "tiny_fsdp.lua: sync %d mb %g policy %p", s->sync, s->bucket_mb,
          (void *)s->bucket_policy);
    CHECK(s->broadcast_init && !s->identical_init, "tiny_fsdp.lua: init");
    expect_fsdp("tiny_fsdp.lua", s, SHARD_ZERO3, 1, 1, true, DT_F32, DT_F32);
  }
  ddp_schedule_free(s);

  s = load("schedules/fsdp.lua");
  if (s) {
    CHECK(s->d_model == 1600 && s->layers == 48 && s->ranks == 2 && s->global_batch == 8 &&
              s->precision == PREC_BF16 && s->steps == 20 && s->warmup == 5, "fsdp.lua: XL on 2 ranks");
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_mb == 0 && s->bucket_policy == NULL, "fsdp.lua: units per block");
    expect_fsdp("fsdp.lua", s, SHARD_ZERO3, 1, 1, true, DT_BF16, DT_F32);
  }
  ddp_schedule_free(s);

  s = load("schedules/toy_fsdp.lua");
  if (s) {
    CHECK(s->model_kind == MODEL_MLP && s->ranks == 2 && s->optimizer == OPTIM_SGD, "toy_fsdp.lua: toy on 2 ranks");
    CHECK(s->sync == SYNC_BUCKETED && s->bucket_mb == 0 && s->bucket_policy != NULL, "toy_fsdp.lua: units function");
    expect_fsdp("toy_fsdp.lua", s, SHARD_ZERO3, 0, 0, false, DT_F32, DT_F32);
    const char *names[] = {"fc3.weight", "fc2.weight", "fc1.weight"};
    int of[3] = {-1, -1, -1}, want[3] = {0, 1, 1};
    CHECK(call_policy(s, names, 3, of) == 0, "toy_fsdp units: %s", sched_err);
    CHECK(memcmp(of, want, sizeof want) == 0, "toy_fsdp units %d %d %d", of[0], of[1], of[2]);
  }
  ddp_schedule_free(s);

  /* Every option through --set: directional depths, resharding, dtypes. */
  const char *a[] = {"parallel.prefetch=nil", "parallel.prefetch_forward=3", "parallel.prefetch_backward=0",
                     "parallel.reshard_after_forward=false"};
  s = load_sets("schedules/tiny_fsdp.lua", a, 4);
  if (s) expect_fsdp("tiny_fsdp directional", s, SHARD_ZERO3, 3, 0, false, DT_F32, DT_F32);
  ddp_schedule_free(s);
  const char *b[] = {"precision=bf16", "parallel.prefetch=2"};
  s = load_sets("schedules/tiny_fsdp.lua", b, 2);
  if (s) expect_fsdp("tiny_fsdp bf16", s, SHARD_ZERO3, 2, 2, true, DT_BF16, DT_F32);
  ddp_schedule_free(s);
  const char *c[] = {"precision=bf16", "parallel.gather_dtype=fp32", "parallel.reduce_dtype=bf16"};
  s = load_sets("schedules/tiny_fsdp.lua", c, 3);
  if (s) expect_fsdp("tiny_fsdp fp32 gathers, bf16 grads", s, SHARD_ZERO3, 1, 1, true, DT_F32, DT_BF16);
  ddp_schedule_free(s);
  const char *d[] = {"precision=bf16", "grad_dtype=bf16", "parallel.reduce_dtype=bf16"}; /* agreeing: fine */
  s = load_sets("schedules/tiny_fsdp.lua", d, 3);
  if (s) CHECK(s->grad_dtype == DT_BF16, "agreeing reduce_dtype");
  ddp_schedule_free(s);
  const char *e[] = {"grad_dtype=bf16", "parallel.reduce_dtype=nil"}; /* the top-level grad_dtype alone */
  s = load_sets("schedules/fsdp.lua", e, 2);
  if (s) expect_fsdp("fsdp.lua bf16 grads", s, SHARD_ZERO3, 1, 1, true, DT_BF16, DT_BF16);
  ddp_schedule_free(s);
  const char *e2[] = {"grad_dtype=bf16"}; /* fsdp.lua writes reduce_dtype = "fp32": they disagree */
  expect_err_sets("schedules/fsdp.lua", e2, 1, "schedules/fsdp.lua:7: parallel.reduce_dtype disagrees with grad_dtype = "
                  "\"bf16\" at the top level, got \"fp32\"");
  const char *f[] = {"parallel.ranks=1", "data.global_batch=4"};
  s = load_sets("schedules/tiny_fsdp.lua", f, 2);
  if (s) CHECK(s->ranks == 1 && s->shard == SHARD_ZERO3, "fsdp on one rank");
  ddp_schedule_free(s);

  const char *bad1[] = {"parallel.prefetch=-1"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad1, 1,
                  "--set parallel.prefetch=-1: parallel.prefetch must be an integer >= 0, got -1");
  const char *bad2[] = {"parallel.prefetch_forward=1"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad2, 1,
                  "schedules/tiny_fsdp.lua:13: parallel.prefetch and parallel.prefetch_forward cannot both be given "
                  "(prefetch sets both directions)");
  const char *bad3[] = {"parallel.prefetch=nil", "parallel.prefetch_forward=1.5"}; /* alone, but not an integer */
  expect_err_sets("schedules/tiny_fsdp.lua", bad3, 2,
                  "--set parallel.prefetch_forward=1.5: parallel.prefetch_forward must be an integer >= 0, got 1.5");
  const char *bad4[] = {"parallel.prefetch=4294967296"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad4, 1,
                  "--set parallel.prefetch=4294967296: parallel.prefetch must be an integer >= 0 (and below 2^31), "
                  "got 4294967296");
  const char *bad5[] = {"parallel.gather_dtype=fp16"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad5, 1,
                  "--set parallel.gather_dtype=fp16: parallel.gather_dtype must be \"fp32\" or \"bf16\", got \"fp16\"");
  const char *bad6[] = {"parallel.bucket_mb=10"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad6, 1,
                  "--set parallel.bucket_mb=10: parallel.bucket_mb is not a field of fsdp{}");
  const char *bad7[] = {"parallel.identical_init=false", "parallel.broadcast=false"};
  expect_err_sets("schedules/tiny_fsdp.lua", bad7, 2,
                  "--set parallel.broadcast=false: parallel.broadcast may be false only with identical_init = true "
                  "(else the ranks start from different weights), got false");
}

static void test_bad_schedules(void) {
#define BAD "tests/fixtures/schedules_bad/"
  static const struct { const char *file, *want; } bad[] = {
      {"fsdp_prefetch_neg.lua", "6: parallel.prefetch must be an integer >= 0, got -1"},
      {"fsdp_prefetch_str.lua", "6: parallel.prefetch must be an integer >= 0, got \"two\""},
      {"fsdp_backward_neg.lua", "6: parallel.prefetch_backward must be an integer >= 0, got -2"},
      {"fsdp_prefetch_both.lua", "6: parallel.prefetch and parallel.prefetch_forward cannot both be given (prefetch "
                                 "sets both directions)"},
      {"fsdp_gather_bf16.lua", "7: parallel.gather_dtype may be \"bf16\" only with precision = \"bf16\", got \"bf16\""},
      {"fsdp_reduce_dtype.lua", "8: parallel.reduce_dtype disagrees with grad_dtype = \"fp32\" at the top level, got "
                                "\"bf16\""},
      {"fsdp_reduce_bf16.lua", "7: parallel.reduce_dtype may be \"bf16\" only with precision = \"bf16\", got \"bf16\""},
      {"fsdp_unknown.lua", "6: parallel.reshard_after_forwad is not a field of fsdp{} (did you mean "
                           "reshard_after_forward?)"},
      {"fsdp_units_notfn.lua", "6: parallel.units must be a function(params) returning a list of units, got a table"},
      {"fsdp_reshard_type.lua", "6: parallel.reshard_after_forward must be true or false, got \"yes\""},
      {"fsdp_no_ranks.lua", "6: parallel.ranks is required"},
      {"zero2_naive.lua", "6: parallel.shard needs sync = \"flat\" or \"bucketed\" when it is \"zero2\" (ZeRO-2 "
                          "reduce-scatters the gradients), got \"zero2\""},
      {"zero3_flat.lua", "6: parallel.shard needs sync = \"bucketed\" when it is \"zero3\" (the buckets are the units "
                         "whose parameters are gathered), got \"zero3\""},
      {"param_gather_zero3.lua", "6: parallel.param_gather may be \"before_forward\" only with shard = \"zero1\" or "
                                 "\"zero2\" (ZeRO-3 gathers before every use, and without ZeRO nothing is gathered), got "
                                 "\"before_forward\""},
      {"param_gather_value.lua", "6: parallel.param_gather must be \"after_update\" or \"before_forward\", got \"early\""},
      {"sharded_optimizer_overlap.lua", "6: parallel.optimizer_overlap cannot be combined with shard = \"optimizer\" "
                                        "(the owners broadcast after every update; use shard = \"zero1\", whose groups "
                                        "are updated and all-gathered one by one), got true"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[256], want[1024];
    snprintf(path, sizeof path, BAD "%s", bad[i].file);
    snprintf(want, sizeof want, "%s:%s", path, bad[i].want);
    expect_err(path, want);
  }

  /* Units functions: loaded fine, refused when the compiler calls them, in the words of fsdp{}. */
  static const struct { const char *file, *want; } units[] = {
      {"units_missing.lua", BAD "units_missing.lua:6: parallel.units left out the parameter \"b.weight\" (every "
                            "parameter must be in exactly one unit)"},
      {"units_dup.lua", BAD "units_dup.lua:6: parallel.units returned the parameter \"b.weight\" twice (units 1 and 2)"},
  };
  const char *names[] = {"a.weight", "b.weight", "c.weight"};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, BAD "%s", units[i].file);
    ddp_schedule *s = load(path);
    if (!s) continue;
    CHECK(s->shard == SHARD_ZERO3 && s->bucket_policy, "%s: units function kept", path);
    int of[3];
    CHECK(s->bucket_policy && call_policy(s, names, 3, of) != 0, "%s: bad units accepted", path);
    CHECK(strcmp(sched_err, units[i].want) == 0, "%s:\n  got  %s\n  want %s", path, sched_err, units[i].want);
    ddp_schedule_free(s);
  }
}

int main(void) {
  const char *src = getenv("DDP_SOURCE_DIR");
  if (!src || chdir(src) != 0) {
    fprintf(stderr, "test_fsdp: DDP_SOURCE_DIR must name the source tree\n");
    return 1;
  }
  test_defaults();
  test_zero2();
  test_ddp_zero3();
  test_fsdp_schedules();
  test_bad_schedules();
  return check_report("test_fsdp");
}

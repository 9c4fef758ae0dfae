/* tests/plan_fixture.c: the synthetic plan of plan_fixture.h and the assertion helpers. */
#include "plan_fixture.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int test_failures;

void check_int_at(const char *file, int line, const char *what, long long expected, long long got) {
  if (expected == got) return;
  test_failures++;
  fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n", file, line, what, expected, got);
}

void check_str_at(const char *file, int line, const char *what, const char *expected, const char *got) {
  if ((!expected && !got) || (expected && got && strcmp(expected, got) == 0)) return;
  test_failures++;
  fprintf(stderr, "%s:%d: %s: expected \"%s\", got \"%s\"\n", file, line, what, expected ? expected : "(null)",
          got ? got : "(null)");
}

void check_contains_at(const char *file, int line, const char *what, const char *hay, const char *needle) {
  if (hay && strstr(hay, needle)) return;
  test_failures++;
  fprintf(stderr, "%s:%d: %s: expected to contain \"%s\", got \"%s\"\n", file, line, what, needle, hay ? hay : "(null)");
}

void check_lacks_at(const char *file, int line, const char *what, const char *hay, const char *needle) {
  if (!hay || !strstr(hay, needle)) return;
  test_failures++;
  fprintf(stderr, "%s:%d: %s: expected NOT to contain \"%s\"\n", file, line, what, needle);
}

ddp_bufref fixture_ref(const ddp_plan *p, int32_t t, uint64_t view) {
  ddp_bufref b = {t, p->tensors[t].arena, view, p->tensors[t].offset + view};
  return b;
}

static int32_t tensor(ddp_plan *p, const char *name, const char *state, uint32_t flags, int arena, uint64_t offset,
                      int ndim, const int64_t *shape, int32_t base, uint64_t view, int32_t param) {
  ddp_tensor t = {0};
  t.name = (char *)name;
  t.state_name = (char *)state;
  t.flags = flags;
  t.dtype = DT_F32;
  t.arena = (uint8_t)arena;
  t.ndim = (uint8_t)ndim;
  for (int d = 0; d < ndim; d++) t.shape[d] = shape[d];
  t.base = base;
  t.view = view;
  t.offset = offset;
  t.bytes = ddp_tensor_numel(&t) * ddp_dtype_size(DT_F32);
  t.param = param;
  t.first_use = ndim ? 2 : -1;
  t.last_use = ndim ? 9 : -1;
  return ddp_plan_add_tensor(p, &t);
}

enum { W1, W2, BUCKET, W1_GRAD, W2_GRAD, X, Y, H, LOSS, SCALARS };

static void push_init(ddp_plan *p, ddp_program *prog) {
  for (int32_t t = W1; t <= W2; t++) {
    ddp_instr in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
    in.p[0] = fixture_ref(p, t, 0);
    in.dt[0] = DT_F32;
    in.i[0] = INIT_TRUNC_NORMAL;
    in.i[1] = (int64_t)ddp_tensor_numel(&p->tensors[t]);
    in.i[2] = t;
    in.i[3] = p->tensors[t].shape[1];
    in.f[0] = 0.25f;
    in.f[1] = 3.0f;
    ddp_program_push(prog, &in);
    ddp_instr b = ddp_instr_blank(I_BROADCAST, STREAM_COMM);
    b.p[0] = b.p[1] = fixture_ref(p, t, 0);
    b.dt[0] = DT_F32;
    b.i[0] = in.i[1];
    b.i[2] = 0;
    ddp_program_push(prog, &b);
  }
}

static void push_step(ddp_plan *p, ddp_program *prog, int rank) {
  int32_t fwd = ddp_plan_add_string(p, "forward"), layer = ddp_plan_add_string(p, "layers.0");
  ddp_instr in = ddp_instr_blank(I_RANGE_PUSH, STREAM_COMPUTE);
  in.i[0] = RANGE_FORWARD;
  in.name = fwd;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[0] = 0;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  in.p[0] = fixture_ref(p, X, 0);
  in.p[1] = fixture_ref(p, Y, 0);
  in.dt[0] = in.dt[1] = DT_F32;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE); /* h[2,8] = x[2,4] @ w1[4,8] */
  in.p[0] = fixture_ref(p, X, 0);
  in.p[1] = fixture_ref(p, W1, 0);
  in.p[3] = fixture_ref(p, H, 0);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[0] = 2, in.i[1] = 8, in.i[2] = 4, in.i[5] = 4, in.i[6] = 8, in.i[7] = 8, in.i[8] = 8, in.i[9] = 1;
  in.f[0] = 1.0f;
  in.name = layer;
  in.layer = 0;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_RELU_FWD;
  in.kernel = 0;
  in.grid[0] = in.grid[1] = in.grid[2] = 1;
  in.block[0] = 256, in.block[1] = in.block[2] = 1;
  in.smem = 0;
  in.p[0] = fixture_ref(p, H, 0);
  in.p[1] = fixture_ref(p, H, 32); /* a view offset inside h */
  in.dt[0] = in.dt[1] = DT_F32;
  in.i[0] = 8;
  in.layer = 0;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
  in.p[0] = fixture_ref(p, BUCKET, 0);
  in.i[0] = (int64_t)p->tensors[BUCKET].bytes;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_COPY, STREAM_COMPUTE);
  in.p[0] = fixture_ref(p, H, 0);
  in.p[1] = fixture_ref(p, W1_GRAD, 0);
  in.i[0] = 64;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_RANGE_POP, STREAM_COMPUTE);
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_EVENT_RECORD, STREAM_COMPUTE);
  in.i[0] = 1;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_EVENT_WAIT, STREAM_COMM);
  in.i[0] = 1;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMM);
  in.p[0] = in.p[1] = fixture_ref(p, BUCKET, 0);
  in.dt[0] = DT_F32;
  in.i[0] = 48, in.i[1] = REDOP_SUM;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_REDUCE_SCATTER, STREAM_COMM);
  in.p[0] = fixture_ref(p, BUCKET, 0);
  in.p[1] = fixture_ref(p, W1_GRAD, 0);
  in.dt[0] = DT_F32;
  in.i[0] = 24, in.i[1] = REDOP_AVG;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_ALL_GATHER, STREAM_COMM);
  in.p[0] = fixture_ref(p, W1_GRAD, 0);
  in.p[1] = fixture_ref(p, BUCKET, 0);
  in.dt[0] = DT_F32;
  in.i[0] = 24;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(rank == 0 ? I_SEND : I_RECV, STREAM_COMM);
  in.p[0] = fixture_ref(p, W2_GRAD, 0);
  in.dt[0] = DT_F32;
  in.i[0] = 16, in.i[2] = 1 - rank;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(rank == 0 ? I_RECV : I_SEND, STREAM_COMM);
  in.p[0] = fixture_ref(p, W2_GRAD, 0);
  in.dt[0] = DT_F32;
  in.i[0] = 16, in.i[2] = 1 - rank;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
  in.p[0] = fixture_ref(p, SCALARS, 0);
  in.dt[0] = DT_F32;
  in.i[0] = INIT_ZEROS, in.i[1] = 8;
  ddp_program_push(prog, &in);
  in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[0] = 1;
  ddp_program_push(prog, &in);
}

ddp_plan *fixture_plan(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup("schedules/test.lua");
  p->meta.schedule_source = strdup("-- a test\nreturn schedule {}\n-- end\n");
  p->meta.arch = strdup("sm_90a");
  p->meta.world = 2;
  p->meta.model_name = strdup("tiny-mlp");
  p->meta.model_kind = MODEL_MLP;
  p->meta.mlp_in = 4;
  p->meta.mlp_out = 2;
  p->meta.act_dtype = DT_F32;
  p->meta.grad_dtype = DT_F32;
  p->meta.global_batch = 4;
  p->meta.batch_per_rank = 2;
  p->meta.data_kind = DATA_RANDOM_DENSE;
  p->meta.steps = 20;
  p->meta.seed = -7;
  p->meta.optimizer = OPTIM_SGD;
  p->meta.lr = 3e-4;
  p->meta.beta2 = 0.95;
  p->meta.parallel = strdup("ddp bucketed 1 bucket");
  p->meta.n_params = 48;
  p->meta.flops_per_step = 1.5e9;
  p->meta.comm_bytes_per_step = 8192;
  /* data_path stays NULL: null strings round-trip */

  const int64_t s48[] = {48}, s4x8[] = {4, 8}, s8x2[] = {8, 2}, s2x4[] = {2, 4}, s2x2[] = {2, 2}, s2x8[] = {2, 8},
                s8[] = {8};
  tensor(p, "w1", "layers.0.weight", TF_PARAM | TF_TRAINABLE | TF_PERSISTENT, ARENA_PARAM, 0, 2, s4x8, -1, 0, -1);
  tensor(p, "w2", "layers.1.weight", TF_PARAM | TF_TRAINABLE | TF_PERSISTENT, ARENA_PARAM, 256, 2, s8x2, -1, 0, -1);
  tensor(p, "grad_bucket", NULL, TF_GRAD | TF_PERSISTENT, ARENA_GRAD, 0, 1, s48, -1, 0, -1);
  tensor(p, "w1.grad", NULL, TF_GRAD, ARENA_GRAD, 0, 2, s4x8, BUCKET, 0, W1);
  tensor(p, "w2.grad", NULL, TF_GRAD, ARENA_GRAD, 128, 2, s8x2, BUCKET, 128, W2);
  tensor(p, "x", NULL, TF_TOKENS, ARENA_ACT, 0, 2, s2x4, -1, 0, -1);
  tensor(p, "y", NULL, TF_TARGETS, ARENA_ACT, 256, 2, s2x2, -1, 0, -1);
  tensor(p, "h", NULL, 0, ARENA_ACT, 512, 2, s2x8, -1, 0, -1);
  tensor(p, "loss", NULL, TF_LOSS, ARENA_ACT, 768, 0, NULL, -1, 0, -1);
  tensor(p, "scalars", NULL, TF_SCALARS | TF_PERSISTENT, ARENA_OPT, 0, 1, s8, -1, 0, -1);
  p->meta.tokens_tensor = X;
  p->meta.targets_tensor = Y;
  p->meta.loss_tensor = LOSS;
  p->meta.scalars_tensor = SCALARS;

  p->modules = calloc(1, sizeof *p->modules);
  p->nmodules = p->cap_modules = 1;
  p->modules[0].template_name = strdup("elementwise");
  p->modules[0].entry = strdup("relu_fwd");
  p->modules[0].spec = strdup("#define N 16\n#define BLOCK 256\n");
  memcpy(p->modules[0].hash, "0123456789abcdef", 17);
  p->modules[0].cubin_size = 100;
  p->modules[0].cubin = malloc(100);
  for (int k = 0; k < 100; k++) p->modules[0].cubin[k] = (uint8_t)(k * 7 + 3);
  p->kernels = calloc(1, sizeof *p->kernels);
  p->nkernels = p->cap_kernels = 1;
  p->kernels[0].op = OP_RELU_FWD;
  p->kernels[0].module = 0;

  p->buckets = calloc(1, sizeof *p->buckets);
  p->nbuckets = p->cap_buckets = 1;
  p->buckets[0].params = malloc(2 * sizeof(int32_t));
  p->buckets[0].params[0] = W2; /* gradient-ready order: last layer first */
  p->buckets[0].params[1] = W1;
  p->buckets[0].nparams = 2;
  p->buckets[0].bytes = 192;

  ddp_plan_add_string(p, "backward");
  p->ranks = calloc(2, sizeof *p->ranks);
  for (int r = 0; r < 2; r++) {
    ddp_rank_plan *rp = &p->ranks[r];
    rp->nevents = 2;
    rp->ntimers = 2;
    const uint64_t arenas[ARENA_COUNT] = {[ARENA_PARAM] = 512, [ARENA_GRAD] = 256, [ARENA_OPT] = 256,
                                          [ARENA_ACT] = 1024, [ARENA_WORK] = 256, [ARENA_IO] = 0};
    memcpy(rp->arena_bytes, arenas, sizeof arenas);
    push_init(p, &rp->init);
    push_step(p, &rp->step, r);
  }
  return p;
}

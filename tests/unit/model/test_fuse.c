/* tests/unit/model/test_fuse.c: the builder's fusion decisions (compiler/model/fuse.c, b_cast_grad) on
 * hand-built step programs: an RMSNORM_BWD that last wrote all of a gradient, with only range markers and
 * kernels that leave the gradient alone after it, becomes RMSNORM_BWD_CAST (no CAST emitted); anything
 * else keeps the unfused pair: fusion off, a later writer or reader of the gradient, an instruction on
 * another stream in between, a norm that wrote another tensor, a pipeline's layer boundary, the same dtype
 * (no cast at all). b_fuse_rope_bwd: the RoPE node of the attention's qkv (bf16, fusion.rope, the same
 * width and heads) is marked once; not for f32, fusion off, another tensor or geometry, no frequencies. */
#include "builder.h"
#include "check.h"
#include <string.h>

enum { ROWS = 8, D = 16 };

typedef struct fx {
  ddp_plan *plan;
  ddp_schedule s;
  ddp_builder b;
  int32_t x, dy, rstd, dx, part, other;
} fx;

static void setup(fx *f, bool fuse, int stages) {
  memset(f, 0, sizeof *f);
  f->plan = ddp_plan_new();
  f->s.fuse_norm_cast = fuse;
  f->s.stages = stages;
  f->s.precision = PREC_BF16;
  b_init(&f->b, f->plan, &f->s, false);
  ddp_builder *b = &f->b;
  f->x = b_act(b, "x", DT_F32, ROWS, D);
  f->dy = b_act(b, "dy", DT_BF16, ROWS, D);
  f->rstd = b_act(b, "rstd", DT_F32, ROWS, 0);
  f->dx = b_act(b, "dx", DT_F32, ROWS, D);
  f->part = b_act(b, "part", DT_F32, 4, D);
  f->other = b_act(b, "other", DT_F32, ROWS, D);
}

static void teardown(fx *f) {
  b_free(&f->b);
  ddp_plan_free(f->plan);
}

/* The RMSNORM_BWD the model emits, into dx (or `into`), acc = 1. Returns its index. */
static uint32_t norm_bwd(fx *f, int32_t into) {
  ddp_builder *b = &f->b;
  ddp_instr in = b_kernel(OP_RMSNORM_BWD);
  b_buf(b, &in, RMSNORM_BWD_P_X, f->x);
  b_buf(b, &in, RMSNORM_BWD_P_DY, f->dy);
  b_buf(b, &in, RMSNORM_BWD_P_RSTD, f->rstd);
  b_buf(b, &in, RMSNORM_BWD_P_DX, into);
  b_buf(b, &in, RMSNORM_BWD_P_DG_PART, f->part);
  in.i[RMSNORM_BWD_I_N] = ROWS, in.i[RMSNORM_BWD_I_D] = D, in.i[RMSNORM_BWD_I_ACC] = 1, in.i[RMSNORM_BWD_I_P] = 4;
  b_emit(b, in, "ln.bwd");
  return b->step.n - 1;
}

static void reduce_rows(fx *f) {
  ddp_instr r = b_kernel(OP_REDUCE_ROWS);
  b_buf(&f->b, &r, REDUCE_ROWS_P_IN, f->part);
  b_buf(&f->b, &r, REDUCE_ROWS_P_OUT, f->other);
  r.i[REDUCE_ROWS_I_P] = 4, r.i[REDUCE_ROWS_I_D] = D;
  b_emit(&f->b, r, "ln.dg");
}

static void add_into(fx *f, int32_t t, int stream) {
  ddp_instr a = b_kernel(OP_ADD);
  a.stream = (uint8_t)stream;
  b_buf(&f->b, &a, ADD_P_A, f->other);
  b_buf(&f->b, &a, ADD_P_B, t);
  b_buf(&f->b, &a, ADD_P_OUT, t == f->dx ? f->dx : f->other);
  a.i[ADD_I_N] = ROWS * D;
  b_emit(&f->b, a, "add");
}

/* Counts CAST instructions of the step. */
static int casts(const fx *f) {
  int n = 0;
  for (uint32_t k = 0; k < f->b.step.n; k++) n += f->b.step.v[k].opcode == I_KERNEL && f->b.step.v[k].op == OP_CAST;
  return n;
}

/* Expect fusion (1) or the unfused pair (0) for what `between` emits after the norm. */
static void expect(const char *what, int fused, bool fuse, int stages, int32_t norm_into_other,
                   void (*between)(fx *)) {
  fx f;
  setup(&f, fuse, stages);
  f.b.layer = 3;
  uint32_t k = norm_bwd(&f, norm_into_other ? f.other : f.dx);
  if (between) between(&f);
  int32_t c = b_cast_grad(&f.b, f.dx, DT_BF16, "dx.bf16");
  const ddp_instr *in = &f.b.step.v[k];
  CHECK(c >= 0 && c != f.dx && b_t(&f.b, c)->dtype == DT_BF16, "%s: the bf16 tensor", what);
  if (fused) {
    CHECK(in->op == OP_RMSNORM_BWD_CAST, "%s: op %s, expected RMSNORM_BWD_CAST", what, ddp_op_name(in->op));
    CHECK(in->p[RMSNORM_BWD_CAST_P_DX_CAST].tensor == c && in->dt[RMSNORM_BWD_CAST_P_DX_CAST] == DT_BF16,
          "%s: dx_cast slot", what);
    CHECK_INT(what, 0, casts(&f));
  } else {
    CHECK(in->op == OP_RMSNORM_BWD && in->p[RMSNORM_BWD_CAST_P_DX_CAST].tensor < 0, "%s: op %s, expected RMSNORM_BWD",
          what, ddp_op_name(in->op));
    CHECK_INT(what, 1, casts(&f));
  }
  teardown(&f);
}

static void markers_and_reduce(fx *f) {
  reduce_rows(f);
  b_range_pop(&f->b);
  b_range_push(&f->b, RANGE_LAYER, "layers.2.backward");
  f->b.layer = 2;
}
static void same_layer_reduce(fx *f) { reduce_rows(f); }
static void writes_dx(fx *f) { add_into(f, f->dx, STREAM_COMPUTE); }
static void reads_dx(fx *f) { /* other = other + dx */
  ddp_instr a = b_kernel(OP_ADD);
  b_buf(&f->b, &a, ADD_P_A, f->other);
  b_buf(&f->b, &a, ADD_P_B, f->dx);
  b_buf(&f->b, &a, ADD_P_OUT, f->other);
  a.i[ADD_I_N] = ROWS * D;
  b_emit(&f->b, a, "reads dx");
}
static void other_stream(fx *f) { add_into(f, f->other, STREAM_COMPUTE + 1); }
static void gemm_between(fx *f) { /* not a kernel: the search stops */
  b_gemm(&f->b, "gemm", f->other, 0, 0, D, f->other, 0, 1, D, f->other, 0, D, ROWS, D, D, 0.0f);
}

/* b_fuse_rope_bwd on a tape with one RoPE node on a qkv of dtype dt. */
static void rope_case(const char *what, int expect_fused, bool fuse, int dt, int64_t heads_asked, int other_tensor,
                      int no_freq) {
  fx f;
  setup(&f, true, 0);
  f.s.fuse_rope = fuse;
  ddp_builder *b = &f.b;
  int32_t qkv = b_act(b, "qkv", dt, ROWS, 3 * D), qkv2 = b_act(b, "qkv2", dt, ROWS, 3 * D);
  int64_t one[1] = {D / 4 / 2};
  b->rope_freq = no_freq ? -1 : b_act(b, "rope.inv_freq", DT_F32, one[0], 0);
  ddp_node *n = b_record(b, LK_ROPE, "rope");
  n->t[0] = qkv, n->i[0] = D, n->i[1] = 4;
  b_record(b, LK_ATTENTION, "sdpa")->t[0] = qkv;
  bool got = b_fuse_rope_bwd(b, other_tensor ? qkv2 : qkv, D, heads_asked);
  CHECK_INT(what, expect_fused, got);
  CHECK_INT(what, expect_fused, (int)b->tape[0].i[2]);
  if (got) CHECK(!b_fuse_rope_bwd(b, qkv, D, heads_asked), "%s: fused twice", what);
  teardown(&f);
}

int main(void) {
  rope_case("rope, bf16", 1, true, DT_BF16, 4, 0, 0);
  rope_case("rope, fusion off", 0, false, DT_BF16, 4, 0, 0);
  rope_case("rope, f32", 0, true, DT_F32, 4, 0, 0);
  rope_case("rope, other heads", 0, true, DT_BF16, 2, 0, 0);
  rope_case("rope, another qkv", 0, true, DT_BF16, 4, 1, 0);
  rope_case("rope, no frequencies", 0, true, DT_BF16, 4, 0, 1);
  expect("norm, reduce, range markers, cast", 1, true, 0, 0, markers_and_reduce);
  expect("norm directly before the cast", 1, true, 0, 0, NULL);
  expect("fusion off", 0, false, 0, 0, markers_and_reduce);
  expect("a later writer of dx", 0, true, 0, 0, writes_dx);
  expect("a later reader of dx", 0, true, 0, 0, reads_dx);
  expect("another stream in between", 0, true, 0, 0, other_stream);
  expect("a GEMM in between", 0, true, 0, 0, gemm_between);
  expect("the norm wrote another tensor", 0, true, 0, 1, NULL);
  expect("pipeline, across a layer boundary", 0, true, 2, 0, markers_and_reduce);
  expect("pipeline, within one layer", 1, true, 2, 0, same_layer_reduce);
  /* the same dtype: no cast, no fusion */
  fx f;
  setup(&f, true, 0);
  uint32_t k = norm_bwd(&f, f.dx);
  CHECK_INT("same dtype: the tensor itself", f.dx, b_cast_grad(&f.b, f.dx, DT_F32, "dx.f32"));
  CHECK(f.b.step.v[k].op == OP_RMSNORM_BWD && f.b.step.n == k + 1, "same dtype: nothing emitted or changed");
  teardown(&f);
  return check_report("test_fuse");
}

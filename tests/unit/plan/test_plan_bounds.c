/* tests/unit/plan/test_plan_bounds.c: the plan reader proves every instruction in bounds (issue 11). Valid
 * plans (the synthetic fixture, which holds every opcode, and schedules/tiny.lua compiled without kernels,
 * which holds the transformer's kernel ops) are read back; then, for each defect class, one field is
 * corrupted, the plan is written through the writer (so its CRC is valid) and the reader must refuse it
 * with one line naming rank, program, instruction index, opcode / kernel op and the slot. Also: the
 * verifier's accesses are the reader's footprints (one function), the batch loader checks byte sizes,
 * and the reference executor refuses arenas larger than the host's available memory. */
#include "access.h"
#include "cli.h"
#include "compile.h"
#include "data.h"
#include "plan_fixture.h"
#include "schedule.h"
#include "verify.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_files.h"

/* Index of the first instruction of rank r's step (or init) program with this opcode (and kernel op);
 * -1 when none. */
static int find(const ddp_plan *p, int r, int init, int opcode, int op) {
  const ddp_program *prog = init ? &p->ranks[r].init : &p->ranks[r].step;
  for (uint32_t k = 0; k < prog->n; k++)
    if (prog->v[k].opcode == opcode && (opcode != I_KERNEL || prog->v[k].op == op)) return (int)k;
  return -1;
}

static ddp_instr *at(ddp_plan *p, int r, int init, int k) {
  return init ? &p->ranks[r].init.v[k] : &p->ranks[r].step.v[k];
}

static int read_ok(ddp_plan *p, const char *what) {
  char err[1024] = "";
  const char *path = tmp_path("plan.bin");
  if (!CHECK(ddp_plan_write(p, path, err, sizeof err) == 0, "%s: write: %s", what, err)) return 0;
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  int ok = CHECK(q != NULL, "%s: the valid plan was refused: %s", what, err);
  ddp_plan_free(q);
  return ok;
}

/* Written through the writer (valid CRC), refused by the reader with a message holding every needle. */
static void expect_refused(ddp_plan *p, const char *what, const char *n1, const char *n2, const char *n3) {
  char err[1024] = "";
  const char *path = tmp_path("bad.bin");
  if (!CHECK(ddp_plan_write(p, path, err, sizeof err) == 0, "%s: write: %s", what, err)) return;
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  if (!CHECK(!q, "%s: the corrupted plan was accepted", what)) {
    ddp_plan_free(q);
    return;
  }
  CHECK_CONTAINS(what, err, path);
  if (n1) CHECK_CONTAINS(what, err, n1);
  if (n2) CHECK_CONTAINS(what, err, n2);
  if (n3) CHECK_CONTAINS(what, err, n3);
  CHECK_INT("one line", 0, strchr(err, '\n') != NULL);
  printf("refused (%s): %s\n", what, err);
}

/* "rank 0 step instruction 17 (kernel XENT)" */
static const char *where(const ddp_plan *p, int r, int init, int k) {
  static char buf[4][160];
  static int next;
  char *b = buf[next++ % 4];
  const ddp_instr *in = init ? &p->ranks[r].init.v[k] : &p->ranks[r].step.v[k];
  if (in->opcode == I_KERNEL)
    snprintf(b, sizeof buf[0], "rank %d %s instruction %d (kernel %s)", r, init ? "init" : "step", k,
             ddp_op_name(in->op));
  else
    snprintf(b, sizeof buf[0], "rank %d %s instruction %d (%s)", r, init ? "init" : "step", k,
             ddp_opcode_name(in->opcode));
  return b;
}

/* One corruption of one instruction: applied to a copy, checked, restored. */
typedef void (*mutate_fn)(ddp_plan *p, ddp_instr *in);
static void instr_case(ddp_plan *p, const char *what, int r, int init, int opcode, int op, mutate_fn m,
                       const char *n2, const char *n3) {
  int k = find(p, r, init, opcode, op);
  if (!CHECK(k >= 0, "%s: the plan has no %s %s", what, ddp_opcode_name(opcode), opcode == I_KERNEL ? ddp_op_name(op) : ""))
    return;
  ddp_instr *in = at(p, r, init, k), saved = *in;
  m(p, in);
  expect_refused(p, what, where(p, r, init, k), n2, n3);
  *in = saved;
}

static uint64_t tbytes(const ddp_plan *p, const ddp_instr *in, int s) { return p->tensors[in->p[s].tensor].bytes; }

/* ---- the fixture: every opcode ---- */
static void m_memset(ddp_plan *p, ddp_instr *in) { in->i[MEMSET_I_BYTES] = (int64_t)tbytes(p, in, MEMSET_P_DST) + 1; }
static void m_copy(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COPY_I_BYTES] = (int64_t)1 << 40; }
static void m_copy_neg(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COPY_I_BYTES] = -64; }
static void m_gemm_m(ddp_plan *p, ddp_instr *in) { (void)p, in->i[GEMM_I_M] = 1 << 20; }
static void m_gemm_lda(ddp_plan *p, ddp_instr *in) { (void)p, in->i[GEMM_I_LDA] = -4; }
static void m_gemm_ldd(ddp_plan *p, ddp_instr *in) { (void)p, in->i[GEMM_I_LDD] = 3; } /* < N = 8 */
static void m_gemm_batch(ddp_plan *p, ddp_instr *in) {
  (void)p;
  in->i[GEMM_I_BATCH] = 1000;
  in->i[GEMM_I_STRIDE_A] = in->i[GEMM_I_STRIDE_B] = in->i[GEMM_I_STRIDE_D] = 0; /* A, B broadcast; D grows */
  in->i[GEMM_I_STRIDE_D] = 16;
}
static void m_gemm_overflow(ddp_plan *p, ddp_instr *in) {
  (void)p;
  in->i[GEMM_I_BATCH] = INT64_MAX / 2;
  in->i[GEMM_I_STRIDE_D] = 16;
}
static void m_gemm_dtype(ddp_plan *p, ddp_instr *in) { (void)p, in->dt[GEMM_P_D] = DT_F64; }
static void m_gemm_null(ddp_plan *p, ddp_instr *in) { (void)p, in->p[GEMM_P_B].tensor = -1; }
static void m_gemm_beta(ddp_plan *p, ddp_instr *in) { (void)p, in->f[GEMM_F_BETA] = 1.0f; } /* C null, now read */
static void m_init(ddp_plan *p, ddp_instr *in) {
  in->i[INIT_TENSOR_I_ELEMENTS] = (int64_t)(tbytes(p, in, INIT_TENSOR_P_TENSOR) / 4) + 1;
}
static void m_init_dtype(ddp_plan *p, ddp_instr *in) { (void)p, in->dt[INIT_TENSOR_P_TENSOR] = DT_F64; }
static void m_kernel_n(ddp_plan *p, ddp_instr *in) { (void)p, in->i[RELU_FWD_I_N] = 9; } /* y is 8 from view 32 */
static void m_kernel_dtype(ddp_plan *p, ddp_instr *in) { (void)p, in->dt[RELU_FWD_P_Y] = DT_F64; }
static void m_allreduce(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 49; }
static void m_reduce_scatter(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 25; } /* 25 x 2 > 48 */
static void m_all_gather(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 25; }
static void m_send(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 17; }
static void m_a2a_count(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 9; }
static void m_a2a_in_place(ddp_plan *p, ddp_instr *in) { (void)p, in->p[COLL_P_RECV] = in->p[COLL_P_SEND]; }
static void m_path(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_PATH] = COLL_PATH_COUNT; }
static void m_path_rank(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_PATH] = COLL_PATH_PEER_COPY; }
static void m_count_rank(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 24; } /* in bounds on rank 1 */
static void m_redop_rank(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_REDOP] = REDOP_AVG; }
static void m_root_rank(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_ROOT] = 1; }
static void m_recv_count(ddp_plan *p, ddp_instr *in) { (void)p, in->i[COLL_I_COUNT] = 15; }
static void m_recv_to_send(ddp_plan *p, ddp_instr *in) { (void)p, in->opcode = I_SEND; }
static void m_coll_dtype(ddp_plan *p, ddp_instr *in) { (void)p, in->dt[0] = DT_F64; }
static void m_load_batch(ddp_plan *p, ddp_instr *in) { (void)p, in->p[LOAD_BATCH_P_INPUTS] = fixture_ref(p, 7, 0); }
static void m_offset(ddp_plan *p, ddp_instr *in) { (void)p, in->p[COPY_P_SRC].offset += 4; }

/* Which slots each instruction of the fixture writes (the verifier's write flags). */
static void fixture_writes(const ddp_plan *p) {
  static const struct { int init, opcode, slot, write; } want[] = {
      {1, I_INIT_TENSOR, INIT_TENSOR_P_TENSOR, 1}, {1, I_BROADCAST, COLL_P_SEND, 0}, {1, I_BROADCAST, COLL_P_RECV, 1},
      {0, I_GEMM, GEMM_P_A, 0},          {0, I_GEMM, GEMM_P_B, 0},          {0, I_GEMM, GEMM_P_D, 1},
      {0, I_MEMSET, MEMSET_P_DST, 1},    {0, I_COPY, COPY_P_SRC, 0},        {0, I_COPY, COPY_P_DST, 1},
      {0, I_KERNEL, RELU_FWD_P_X, 0},    {0, I_KERNEL, RELU_FWD_P_Y, 1},    {0, I_SEND, COLL_P_BUF, 0},
      {0, I_RECV, COLL_P_BUF, 1},        {0, I_LOAD_BATCH, LOAD_BATCH_P_INPUTS, 1},
  };
  for (size_t c = 0; c < sizeof want / sizeof want[0]; c++) {
    int k = find(p, 0, want[c].init, want[c].opcode, OP_RELU_FWD);
    if (!CHECK(k >= 0, "fixture has no %s", ddp_opcode_name(want[c].opcode))) continue;
    const ddp_instr *in = want[c].init ? &p->ranks[0].init.v[k] : &p->ranks[0].step.v[k];
    ddp_access acc[DDP_MAX_PTRS];
    int n = ddp_instr_accesses(p, 0, in, acc), seen = 0;
    for (int j = 0; j < n; j++)
      if (acc[j].slot == want[c].slot) {
        seen = 1;
        CHECK(acc[j].write == want[c].write, "%s p[%d]: write = %d, expected %d", ddp_opcode_name(want[c].opcode),
              want[c].slot, acc[j].write, want[c].write);
      }
    CHECK(seen, "%s p[%d]: no access", ddp_opcode_name(want[c].opcode), want[c].slot);
  }
}

static void fixture_cases(void) {
  ddp_plan *p = fixture_plan();
  if (!read_ok(p, "fixture")) {
    ddp_plan_free(p);
    return;
  }
  fixture_writes(p);
  instr_case(p, "memset bytes", 0, 0, I_MEMSET, 0, m_memset, "p[0] touches 193 bytes", "'grad_bucket' (192 bytes)");
  instr_case(p, "copy bytes", 0, 0, I_COPY, 0, m_copy, "p[0] touches 1099511627776 bytes", "tensor 'h'");
  instr_case(p, "copy negative", 0, 0, I_COPY, 0, m_copy_neg, "i[0] (bytes) = -64", NULL);
  instr_case(p, "copy offset", 0, 0, I_COPY, 0, m_offset, "p[0] at arena offset", NULL);
  instr_case(p, "gemm huge M", 1, 0, I_GEMM, 0, m_gemm_m, "p[0] touches", "tensor 'x'");
  instr_case(p, "gemm negative lda", 0, 0, I_GEMM, 0, m_gemm_lda, "i[5] (lda) = -4", "row length 4");
  instr_case(p, "gemm short ldd", 0, 0, I_GEMM, 0, m_gemm_ldd, "i[8] (ldd) = 3", "row length 8");
  instr_case(p, "gemm huge batch", 0, 0, I_GEMM, 0, m_gemm_batch, "p[3] touches", "tensor 'h'");
  instr_case(p, "gemm batch overflow", 0, 0, I_GEMM, 0, m_gemm_overflow, "i[9] (batch) = 4611686018427387903", "overflows");
  instr_case(p, "gemm dtype", 0, 0, I_GEMM, 0, m_gemm_dtype, "p[3] is used as f64", "'h' is f32");
  instr_case(p, "gemm null B", 0, 0, I_GEMM, 0, m_gemm_null, "p[1] is null", NULL);
  instr_case(p, "gemm beta without C", 0, 0, I_GEMM, 0, m_gemm_beta, "p[2] is null", NULL);
  instr_case(p, "init elements", 1, 1, I_INIT_TENSOR, 0, m_init, "p[0] touches 132 bytes", "tensor 'w1'");
  instr_case(p, "init dtype", 0, 1, I_INIT_TENSOR, 0, m_init_dtype, "p[0] is used as f64", NULL);
  instr_case(p, "kernel count", 0, 0, I_KERNEL, OP_RELU_FWD, m_kernel_n, "p[1] touches 36 bytes", "tensor 'h'");
  instr_case(p, "kernel dtype", 0, 0, I_KERNEL, OP_RELU_FWD, m_kernel_dtype, "p[1] is used as f64", NULL);
  instr_case(p, "all_reduce count", 1, 0, I_ALL_REDUCE, 0, m_allreduce, "p[0] touches 196 bytes", NULL);
  instr_case(p, "reduce_scatter count", 0, 0, I_REDUCE_SCATTER, 0, m_reduce_scatter, "p[0] touches 200 bytes", NULL);
  instr_case(p, "all_gather count", 0, 0, I_ALL_GATHER, 0, m_all_gather, "p[1] touches 200 bytes", NULL);
  instr_case(p, "send count", 0, 0, I_SEND, 0, m_send, "p[0] touches 68 bytes", "'w2.grad'");
  instr_case(p, "all_to_all count", 0, 0, I_ALL_TO_ALL, 0, m_a2a_count, "p[1] touches 72 bytes", "'h'");
  instr_case(p, "all_to_all in place", 0, 0, I_ALL_TO_ALL, 0, m_a2a_in_place,
             "all_to_all's send and receive buffers overlap (an all-to-all is not in place)", NULL);
  instr_case(p, "all_to_all path", 0, 0, I_ALL_TO_ALL, 0, m_path, "path 2 (have 2)", NULL);
  /* copy-engine pulls on one rank and NCCL's collective on the other would wait for each other forever */
  instr_case(p, "path differs between ranks", 1, 0, I_ALL_TO_ALL, 0, m_path_rank, "i[4] (path) = 1", NULL);
  instr_case(p, "count differs between ranks", 1, 0, I_ALL_REDUCE, 0, m_count_rank,
             "i[0] (count) = 24, rank 0's collective #0 on comm 0 (instruction 10) has 48", NULL);
  instr_case(p, "redop differs between ranks", 1, 0, I_ALL_REDUCE, 0, m_redop_rank, "i[1] (redop) = 1", NULL);
  instr_case(p, "root differs between ranks", 1, 1, I_BROADCAST, 0, m_root_rank, "i[2] (root) = 1", NULL);
  instr_case(p, "recv count differs from its send", 1, 0, I_RECV, 0, m_recv_count,
             "i[0] (count) = 15 of f32, the matching send (rank 0 instruction 16) has 16 of f32", NULL);
  instr_case(p, "send without a receive", 0, 0, I_RECV, 0, m_recv_to_send, "send to rank 1 has no matching receive",
             NULL);
  instr_case(p, "collective dtype", 0, 1, I_BROADCAST, 0, m_coll_dtype, "p[0] is used as f64", NULL);
  instr_case(p, "load_batch target", 0, 0, I_LOAD_BATCH, 0, m_load_batch, "p[0] is tensor 7",
             "meta tokens_tensor 5");

  /* the kernel's CUDA module was specialised for other dtypes than the instruction's */
  free(p->modules[0].spec);
  p->modules[0].spec = strdup("#define DDP_T0 float\n#define DDP_T1 float\n#define DDP_BLOCK 256\n");
  read_ok(p, "fixture with a typed spec");
  free(p->modules[0].spec);
  p->modules[0].spec = strdup("#define DDP_T0 float\n#define DDP_T1 __nv_bfloat16\n#define DDP_BLOCK 256\n");
  expect_refused(p, "module dtype", "rank 0 step instruction 4 (kernel RELU_FWD)",
                 "p[1] is f32, its kernel 0's module 'relu_fwd' was built for bf16", NULL);
  free(p->modules[0].spec);
  p->modules[0].spec = strdup("#define N 16\n#define BLOCK 256\n");

  /* meta tensors the runtime reads into fixed-size buffers, and the batch tensors' byte sizes */
  int64_t saved = p->meta.loss_tensor;
  p->meta.loss_tensor = 7; /* h: 16 f32 */
  expect_refused(p, "meta loss_tensor", "meta loss_tensor", "'h' has 64 bytes, its use needs 4", NULL);
  p->meta.loss_tensor = saved;
  saved = p->meta.scalars_tensor;
  p->meta.scalars_tensor = 7; /* h: 16 f32 */
  expect_refused(p, "meta scalars_tensor size", "meta scalars_tensor", "'h' has 64 bytes, its use needs 32", NULL);
  p->meta.scalars_tensor = saved;
  p->tensors[9].dtype = DT_F64; /* scalars as f64: the runtime reads floats */
  p->tensors[9].bytes = 64;
  p->ranks[0].arena_bytes[ARENA_OPT] = p->ranks[1].arena_bytes[ARENA_OPT] = 256;
  expect_refused(p, "meta scalars dtype", "meta scalars_tensor", "is f64, must be f32", NULL);
  p->tensors[9].dtype = DT_F32;
  p->tensors[9].bytes = 32;
  p->meta.batch_per_rank = 4; /* the loader would write 16 inputs into x's 8 */
  expect_refused(p, "batch size", "meta tokens_tensor", "'x' has 32 bytes, its use needs 64", NULL);
  p->meta.batch_per_rank = 2;
  p->tensors[5].bytes = 16; /* shape 2x4 but only 16 bytes */
  expect_refused(p, "batch bytes", "tensor 5 'x'", "16 bytes, its shape holds 8 f32 elements", NULL);
  p->tensors[5].bytes = 32;
  read_ok(p, "fixture restored");
  ddp_plan_free(p);
}

/* ---- a compiled transformer: the kernel ops ---- */
static void m_xent_vocab(ddp_plan *p, ddp_instr *in) { (void)p, in->i[XENT_I_V] += 1; }
static void m_attn_t(ddp_plan *p, ddp_instr *in) { (void)p, in->i[ATTN_I_T] *= 2; }
static void m_attn_stride(ddp_plan *p, ddp_instr *in) { (void)p, in->i[ATTN_I_KSTRIDE] = 1; }
static void m_attn_lse_null(ddp_plan *p, ddp_instr *in) { (void)p, in->p[ATTN_P_LSE].tensor = -1; }
static void m_adamw_n(ddp_plan *p, ddp_instr *in) { (void)p, in->i[ADAMW_I_N] += 1; }
static void m_adamw_scalars(ddp_plan *p, ddp_instr *in) { in->p[ADAMW_P_SCALARS] = fixture_ref(p, (int32_t)p->meta.loss_tensor, 0); }
static void m_embed_v(ddp_plan *p, ddp_instr *in) { (void)p, in->i[EMBED_FWD_I_V] *= 2; }
static void m_embed_tokens(ddp_plan *p, ddp_instr *in) { (void)p, in->p[EMBED_FWD_P_TOKENS].tensor = -1; }
static void m_rope(ddp_plan *p, ddp_instr *in) { (void)p, in->i[ROPE_I_STRIDE] += 64; }
static void m_sumsq(ddp_plan *p, ddp_instr *in) { (void)p, in->i[SUMSQ_I_P] = 1 << 20; }
static void m_swiglu(ddp_plan *p, ddp_instr *in) { (void)p, in->i[SWIGLU_FWD_I_N] = INT64_MAX / 3; }

static ddp_plan *compile(const char *name) {
  char err[4096], path[2048];
  snprintf(path, sizeof path, "%s/schedules/%s", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".", name);
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, sizeof err);
  if (!CHECK(s, "%s", err)) return NULL;
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  CHECK(p, "compile %s: %s", name, err);
  ddp_schedule_free(s);
  return p;
}

/* The verifier's accesses (ddp_instr_accesses) are the reader's footprints, byte for byte. */
static void same_extents(const ddp_plan *p) {
  int compared = 0, exact = 0;
  for (int64_t r = 0; r < p->meta.world; r++)
    for (uint32_t k = 0; k < p->ranks[r].step.n; k++) {
      const ddp_instr *in = &p->ranks[r].step.v[k];
      ddp_access acc[DDP_MAX_PTRS];
      ddp_slot_use use[DDP_MAX_PTRS];
      char why[256];
      int n = ddp_instr_accesses(p, (int)r, in, acc);
      if (!CHECK(ddp_instr_footprint(in, p->meta.world, use, why, sizeof why) == 0, "footprint: %s", why)) return;
      for (int j = 0; j < n; j++) {
        const ddp_slot_use *u = &use[acc[j].slot];
        const ddp_tensor *t = &p->tensors[in->p[acc[j].slot].tensor];
        uint64_t want = u->whole ? t->bytes - in->p[acc[j].slot].view : u->bytes;
        CHECK_INT("access = footprint", (long long)want, (long long)(acc[j].end - acc[j].begin));
        CHECK_INT("access write", u->write, acc[j].write);
        compared++;
        exact += want < t->bytes - in->p[acc[j].slot].view; /* tighter than the old "to the tensor end" */
      }
    }
  CHECK(compared > 100, "compared only %d accesses", compared);
  CHECK(exact > 0, "no access is tighter than its tensor");
}

/* The verifier sees the exact footprints: two BIAS_ADD kernels on different streams, no event between
 * them, adding into the two halves of one tensor do not race (before, a kernel's extent ran to its
 * tensor's end); halves that overlap by one element do. */
static void verifier_exact(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 1;
  p->nstreams = 2;
  ddp_tensor t = {.name = "y", .dtype = DT_F32, .arena = ARENA_ACT, .ndim = 1, .shape = {16}, .base = -1,
                  .bytes = 64, .param = -1, .first_use = -1, .last_use = -1};
  ddp_plan_add_tensor(p, &t);
  t.name = "b", t.shape[0] = 4, t.bytes = 16, t.offset = 64;
  ddp_plan_add_tensor(p, &t);
  p->ranks = calloc(1, sizeof *p->ranks);
  p->ranks[0].arena_bytes[ARENA_ACT] = 80;
  for (int s = 0; s < 2; s++) {
    ddp_instr in = ddp_instr_blank(I_KERNEL, s);
    in.op = OP_BIAS_ADD;
    in.p[BIAS_ADD_P_Y] = fixture_ref(p, 0, (uint64_t)s * 32);
    in.p[BIAS_ADD_P_B] = fixture_ref(p, 1, 0);
    in.dt[BIAS_ADD_P_Y] = in.dt[BIAS_ADD_P_B] = DT_F32;
    in.i[BIAS_ADD_I_N] = 2;
    in.i[BIAS_ADD_I_M] = 4;
    ddp_program_push(&p->ranks[0].step, &in);
  }
  char err[1024] = "";
  CHECK(ddp_verify(p, err, sizeof err) == 0, "disjoint halves reported as a race: %s", err);
  ddp_instr *second = &p->ranks[0].step.v[1];
  second->p[BIAS_ADD_P_Y] = fixture_ref(p, 0, 28);
  if (CHECK(ddp_verify(p, err, sizeof err) != 0, "overlapping ranges on two streams were accepted"))
    CHECK_CONTAINS("race message", err, "unordered access across streams");
  ddp_plan_free(p);
}

static void compiled_cases(void) {
  ddp_plan *p = compile("tiny.lua");
  if (!p || !read_ok(p, "tiny")) {
    ddp_plan_free(p);
    return;
  }
  same_extents(p);
  /* exact: XENT's logits are N*V elements */
  int k = find(p, 0, 0, I_KERNEL, OP_XENT);
  if (CHECK(k >= 0, "tiny has no XENT")) {
    const ddp_instr *in = at(p, 0, 0, k);
    ddp_slot_use use[DDP_MAX_PTRS];
    char why[256];
    CHECK_INT("xent footprint ok", 0, ddp_instr_footprint(in, 1, use, why, sizeof why));
    CHECK_INT("xent logits bytes", (long long)(in->i[XENT_I_N] * in->i[XENT_I_V] * 4), (long long)use[XENT_P_LOGITS].bytes);
    CHECK_INT("xent targets bytes", (long long)(in->i[XENT_I_N] * 4), (long long)use[XENT_P_TARGETS].bytes);
  }
  instr_case(p, "xent vocab", 0, 0, I_KERNEL, OP_XENT, m_xent_vocab, "p[0] touches", NULL);
  instr_case(p, "attention length", 0, 0, I_KERNEL, OP_ATTN_FWD, m_attn_t, "touches", NULL);
  instr_case(p, "attention stride", 0, 0, I_KERNEL, OP_ATTN_FWD, m_attn_stride, "i[5] (kstride) = 1",
             "must be >= the row length");
  instr_case(p, "attention null lse", 0, 0, I_KERNEL, OP_ATTN_BWD_DQ, m_attn_lse_null, "p[4] is null", NULL);
  instr_case(p, "adamw count", 0, 0, I_KERNEL, OP_ADAMW, m_adamw_n, "p[0] touches", NULL);
  instr_case(p, "adamw scalars", 0, 0, I_KERNEL, OP_ADAMW, m_adamw_scalars, "p[5] touches 32 bytes", "'loss' (4 bytes)");
  instr_case(p, "embedding vocab", 0, 0, I_KERNEL, OP_EMBED_FWD, m_embed_v, "p[1] touches", NULL);
  instr_case(p, "embedding tokens null", 0, 0, I_KERNEL, OP_EMBED_FWD, m_embed_tokens, "p[0] is null", NULL);
  instr_case(p, "rope stride", 0, 0, I_KERNEL, OP_ROPE, m_rope, "p[0] touches", NULL);
  instr_case(p, "sumsq parts", 0, 0, I_KERNEL, OP_SUMSQ, m_sumsq, "p[1] touches 4194304 bytes", NULL);
  instr_case(p, "swiglu overflow", 0, 0, I_KERNEL, OP_SWIGLU_FWD, m_swiglu, "i[0] (N) = 3074457345618258602", "overflows");
  read_ok(p, "tiny restored");
  ddp_plan_free(p);
}

/* The batch loader checks the tensors' byte sizes, not only their shapes (a plan built in memory skips
 * the reader). */
static void data_bytes(void) {
  ddp_plan *p = fixture_plan();
  p->meta.data_rows = 4;
  char err[512] = "";
  ddp_data *d = ddp_data_open(p, 1, err, sizeof err);
  CHECK(d, "the fixture's batch was refused: %s", err);
  ddp_data_close(d);
  p->tensors[5].bytes = 16; /* x: shape 2x4 f32, 16 bytes */
  d = ddp_data_open(p, 1, err, sizeof err);
  if (CHECK(!d, "a 16-byte tokens tensor of 8 f32 elements was accepted"))
    CHECK_CONTAINS("data bytes", err, "has 16 bytes, expected batch_per_rank 2 x mlp_in 4 = 8 f32 elements");
  ddp_data_close(d);
  ddp_plan_free(p);
}

/* ddprun --device ref refuses arenas larger than MemAvailable, with both numbers, before allocating. */
static void ref_memory(void) {
  ddp_plan *p = fixture_plan();
  p->meta.data_rows = 4;
  char err[512] = "";
  CHECK_INT("fits", 0, ddprun_ref_check_memory(p, 1 << 20, err, sizeof err));
  if (CHECK(ddprun_ref_check_memory(p, 4000, err, sizeof err) != 0, "4608 bytes of arenas fit in 4000")) {
    CHECK_CONTAINS("memory message", err, "needs 4608 bytes");
    CHECK_CONTAINS("memory message", err, "has 4000 bytes");
  }
  p->ranks[1].arena_bytes[ARENA_ACT] = (uint64_t)1 << 62; /* 4 EiB: no host has it */
  p->ranks[0].arena_bytes[ARENA_ACT] = (uint64_t)1 << 62;
  if (CHECK(ddprun_ref_check_memory(p, 0, err, sizeof err) != 0, "4 EiB arenas fit in MemAvailable"))
    CHECK_CONTAINS("meminfo message", err, "available (MemAvailable)");
  /* end to end through ddprun's reference entry point: refused with that line, stderr captured */
  const char *log = tmp_path("stderr.txt");
  fflush(stderr);
  int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  close(fd);
  ddprun_args a = {.plan_path = "huge.bin", .device = "ref"};
  a.run.steps = 1;
  a.run.quiet = 1;
  int rc = ddprun_ref(p, &a);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  size_t n = 0;
  char *text = (char *)slurp(log, &n);
  if (text) text[n] = '\0';
  CHECK_INT("ddprun_ref exit", 1, rc);
  CHECK_CONTAINS("ddprun_ref message", text ? text : "", "huge.bin: the reference executor needs");
  CHECK_CONTAINS("ddprun_ref message", text ? text : "", "(MemAvailable)");
  free(text);
  ddp_plan_free(p);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/ddp_bounds_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) return 1;
  fixture_cases();
  compiled_cases();
  verifier_exact();
  data_bytes();
  ref_memory();
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_report("test_plan_bounds");
}

/* tests/unit/plan/test_plan_io.c: the plan library and plan.bin: name tables, construction helpers, a full write /
 * read round trip of the synthetic plan compared field by field, every refusal of the reader (missing,
 * truncated, corrupted, wrong magic, other version, section out of bounds, unknown meta field, bad
 * indices), the launch check, and that a failed write leaves no file behind. */
#include "plan_fixture.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "test_files.h"

static void spit(const char *path, const uint8_t *v, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(v, 1, n, f);
  fclose(f);
}

static void fix_crc(uint8_t *v, size_t n) {
  uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), v, (uInt)(n - 4));
  for (int k = 0; k < 4; k++) v[n - 4 + k] = (uint8_t)(crc >> (8 * k));
}

/* Reads `path` expecting a refusal whose message contains every needle (and the path). */
static void expect_refused(const char *what, const char *path, const char *n1, const char *n2) {
  char err[512] = "";
  ddp_plan *p = ddp_plan_read(path, err, sizeof err);
  if (!CHECK(!p, "%s: expected a refusal, the plan was accepted", what)) {
    ddp_plan_free(p);
    return;
  }
  CHECK_CONTAINS(what, err, path);
  if (n1) CHECK_CONTAINS(what, err, n1);
  if (n2) CHECK_CONTAINS(what, err, n2);
  CHECK_INT("one line", 0, strchr(err, '\n') != NULL);
}

static void test_names(void) {
  for (int i = 0; i < DT_COUNT; i++) CHECK_INT(ddp_dtype_name(i), i, ddp_dtype_from_name(ddp_dtype_name(i)));
  for (int i = 0; i < OP_COUNT; i++) CHECK_INT(ddp_op_name(i), i, ddp_op_from_name(ddp_op_name(i)));
  for (int i = 0; i < I_COUNT; i++) CHECK_INT(ddp_opcode_name(i), i, ddp_opcode_from_name(ddp_opcode_name(i)));
  for (int i = 0; i < INIT_COUNT; i++) CHECK_INT(ddp_init_name(i), i, ddp_init_from_name(ddp_init_name(i)));
  CHECK_INT("bf16 size", 2, ddp_dtype_size(DT_BF16));
  CHECK_INT("f64 size", 8, ddp_dtype_size(DT_F64));
  CHECK_STR("op template", "rmsnorm", ddp_op_template(OP_RMSNORM_BWD));
  CHECK_STR("op entry", "rmsnorm_bwd", ddp_op_entry(OP_RMSNORM_BWD));
  CHECK_STR("opcode name", "all_reduce", ddp_opcode_name(I_ALL_REDUCE));
  CHECK_STR("range name", "backward", ddp_range_name(RANGE_BACKWARD));
  CHECK_STR("arena name", "activations", ddp_arena_name(ARENA_ACT));
  CHECK_STR("out of range", "?", ddp_opcode_name(I_COUNT));
  CHECK_INT("unknown name", -1, ddp_dtype_from_name("f17"));
}

static void test_construction(void) {
  ddp_plan *p = ddp_plan_new();
  CHECK_INT("intern a", 0, ddp_plan_add_string(p, "a"));
  CHECK_INT("intern b", 1, ddp_plan_add_string(p, "b"));
  CHECK_INT("intern a again", 0, ddp_plan_add_string(p, "a"));
  CHECK_STR("string 1", "b", ddp_plan_string(p, 1));
  CHECK_STR("string -1", "", ddp_plan_string(p, -1));
  ddp_tensor t = {.name = "t", .ndim = 3, .shape = {2, 3, 4}, .base = -1};
  CHECK_INT("numel", 24, ddp_tensor_numel(&t));
  CHECK_INT("add tensor", 0, ddp_plan_add_tensor(p, &t));
  CHECK_INT("tensor name copied", 1, p->tensors[0].name != t.name);
  CHECK_INT("find tensor", 0, ddp_plan_find_tensor(p, "t"));
  CHECK_INT("find absent", -1, ddp_plan_find_tensor(p, "u"));
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMM);
  CHECK_INT("blank kernel", -1, in.kernel);
  CHECK_INT("blank p5", -1, in.p[5].tensor);
  ddp_program prog = {0};
  for (int k = 0; k < 100; k++) ddp_program_push(&prog, &in);
  CHECK_INT("pushed", 100, prog.n);
  CHECK_INT("pushed opcode", I_GEMM, prog.v[99].opcode);
  ddp_program_free(&prog);
  ddp_plan_free(p);
}

static void compare_instr(const char *where, const ddp_instr *a, const ddp_instr *b) {
  char w[160];
#define FIELD(f)                                         \
  snprintf(w, sizeof w, "%s %s", where, #f);             \
  CHECK_INT(w, a->f, b->f);
  FIELD(opcode) FIELD(stream) FIELD(op) FIELD(flags) FIELD(kernel) FIELD(name) FIELD(layer) FIELD(smem)
  for (int k = 0; k < 3; k++) {
    FIELD(grid[k]) FIELD(block[k])
  }
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    FIELD(dt[k]) FIELD(p[k].tensor) FIELD(p[k].arena) FIELD(p[k].view) FIELD(p[k].offset)
  }
  for (int k = 0; k < DDP_MAX_INTS; k++) {
    FIELD(i[k])
  }
  for (int k = 0; k < DDP_MAX_FLOATS; k++) {
    snprintf(w, sizeof w, "%s f[%d]", where, k);
    CHECK_INT(w, 1, a->f[k] == b->f[k]);
  }
#undef FIELD
}

static void compare_plans(const ddp_plan *a, const ddp_plan *b) {
#define META_I(name) CHECK_INT("meta " #name, a->meta.name, b->meta.name);
#define META_F(name) CHECK_INT("meta " #name, 1, a->meta.name == b->meta.name);
#define META_S(name) CHECK_STR("meta " #name, a->meta.name, b->meta.name);
#define META(t, name) META_##t(name)
  DDP_META_FIELDS(META)
#undef META
  CHECK_INT("ntensors", a->ntensors, b->ntensors);
  for (uint32_t i = 0; i < a->ntensors && i < b->ntensors; i++) {
    const ddp_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    CHECK_STR("tensor name", x->name, y->name);
    CHECK_STR("tensor state name", x->state_name, y->state_name);
    CHECK_INT("tensor flags", x->flags, y->flags);
    CHECK_INT("tensor dtype", x->dtype, y->dtype);
    CHECK_INT("tensor arena", x->arena, y->arena);
    CHECK_INT("tensor ndim", x->ndim, y->ndim);
    for (int d = 0; d < DDP_MAX_DIMS; d++) CHECK_INT("tensor shape", x->shape[d], y->shape[d]);
    CHECK_INT("tensor base", x->base, y->base);
    CHECK_INT("tensor view", x->view, y->view);
    CHECK_INT("tensor offset", x->offset, y->offset);
    CHECK_INT("tensor bytes", x->bytes, y->bytes);
    CHECK_INT("tensor param", x->param, y->param);
    CHECK_INT("tensor first use", x->first_use, y->first_use);
    CHECK_INT("tensor last use", x->last_use, y->last_use);
    CHECK_INT("tensor piece rank", x->piece_rank, y->piece_rank);
    CHECK_INT("tensor piece first", x->piece_first, y->piece_first);
    CHECK_INT("tensor piece runs", x->piece_runs, y->piece_runs);
    CHECK_INT("tensor piece stride", x->piece_stride, y->piece_stride);
  }
  CHECK_INT("nmodules", a->nmodules, b->nmodules);
  for (uint32_t i = 0; i < a->nmodules && i < b->nmodules; i++) {
    const ddp_module *x = &a->modules[i], *y = &b->modules[i];
    CHECK_STR("module template", x->template_name, y->template_name);
    CHECK_STR("module entry", x->entry, y->entry);
    CHECK_STR("module spec", x->spec, y->spec);
    CHECK_STR("module hash", x->hash, y->hash);
    CHECK_INT("module cubin size", x->cubin_size, y->cubin_size);
    CHECK_INT("module cubin bytes equal", 0, x->cubin_size == y->cubin_size ? memcmp(x->cubin, y->cubin, x->cubin_size) : 1);
  }
  CHECK_INT("nkernels", a->nkernels, b->nkernels);
  for (uint32_t i = 0; i < a->nkernels && i < b->nkernels; i++) {
    CHECK_INT("kernel op", a->kernels[i].op, b->kernels[i].op);
    CHECK_INT("kernel module", a->kernels[i].module, b->kernels[i].module);
  }
  CHECK_INT("nbuckets", a->nbuckets, b->nbuckets);
  for (uint32_t i = 0; i < a->nbuckets && i < b->nbuckets; i++) {
    CHECK_INT("bucket offset", a->buckets[i].offset, b->buckets[i].offset);
    CHECK_INT("bucket bytes", a->buckets[i].bytes, b->buckets[i].bytes);
    CHECK_INT("bucket nparams", a->buckets[i].nparams, b->buckets[i].nparams);
    for (uint32_t j = 0; j < a->buckets[i].nparams && j < b->buckets[i].nparams; j++)
      CHECK_INT("bucket param", a->buckets[i].params[j], b->buckets[i].params[j]);
  }
  CHECK_INT("nstrings", a->nstrings, b->nstrings);
  for (uint32_t i = 0; i < a->nstrings && i < b->nstrings; i++) CHECK_STR("string", a->strings[i], b->strings[i]);
  CHECK_INT("nstreams", a->nstreams, b->nstreams);
  for (int64_t r = 0; r < a->meta.world && r < b->meta.world; r++) {
    const ddp_rank_plan *x = &a->ranks[r], *y = &b->ranks[r];
    CHECK_INT("rank nevents", x->nevents, y->nevents);
    CHECK_INT("rank ntimers", x->ntimers, y->ntimers);
    for (int k = 0; k < ARENA_COUNT; k++) CHECK_INT("rank arena bytes", x->arena_bytes[k], y->arena_bytes[k]);
    const ddp_program *pa[2] = {&x->init, &x->step}, *pb[2] = {&y->init, &y->step};
    for (int g = 0; g < 2; g++) {
      CHECK_INT("program length", pa[g]->n, pb[g]->n);
      for (uint32_t i = 0; i < pa[g]->n && i < pb[g]->n; i++) {
        char where[64];
        snprintf(where, sizeof where, "rank %lld %s instr %u", (long long)r, g ? "step" : "init", i);
        compare_instr(where, &pa[g]->v[i], &pb[g]->v[i]);
      }
    }
  }
}

static void test_round_trip(void) {
  ddp_plan *p = fixture_plan();
  int used[I_COUNT] = {0};
  for (int r = 0; r < 2; r++) {
    for (uint32_t i = 0; i < p->ranks[r].init.n; i++) used[p->ranks[r].init.v[i].opcode] = 1;
    for (uint32_t i = 0; i < p->ranks[r].step.n; i++) used[p->ranks[r].step.v[i].opcode] = 1;
  }
  for (int op = 0; op < I_COUNT; op++) CHECK_INT(ddp_opcode_name(op), 1, used[op]); /* fixture covers every opcode */
  char err[512] = "";
  const char *path = tmp_path("good.bin");
  CHECK_INT("write", 0, ddp_plan_write(p, path, err, sizeof err));
  if (err[0]) fprintf(stderr, "write: %s\n", err);
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  if (CHECK(q, "read back: expected a plan, got error: %s", err)) {
    compare_plans(p, q);
    CHECK_INT("launch ok", 0, ddp_plan_check_launch(q, "sm_90", 2, err, sizeof err));
    /* written twice, the same bytes: the encoding is deterministic */
    const char *again = tmp_path("again.bin");
    CHECK_INT("rewrite", 0, ddp_plan_write(q, again, err, sizeof err));
    size_t n1 = 0, n2 = 0;
    uint8_t *b1 = slurp(path, &n1), *b2 = slurp(again, &n2);
    CHECK_INT("deterministic size", n1, n2);
    CHECK_INT("deterministic bytes", 0, n1 == n2 && b1 && b2 ? memcmp(b1, b2, n1) : 1);
    free(b1);
    free(b2);
  }
  ddp_plan_free(q);
  ddp_plan_free(p);
}

static void test_container_refusals(void) {
  const char *good = tmp_path("good.bin");
  size_t n = 0;
  uint8_t *v = slurp(good, &n);
  if (!CHECK(v && n >= 200, "good plan missing or too short (%zu bytes)", n)) {
    free(v);
    return;
  }
  const char *bad = tmp_path("bad.bin");
  char expect[96];
  size_t cuts[] = {0, 4, 10, 20, 40, n / 2, n - 5, n - 1};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
    spit(bad, v, cuts[k]);
    if (cuts[k] < 24) snprintf(expect, sizeof expect, "expected at least 24 bytes, got %zu", cuts[k]);
    else snprintf(expect, sizeof expect, "expected %zu bytes, got %zu", n, cuts[k]);
    expect_refused("truncated", bad, "truncated", expect);
  }
  uint8_t *c = malloc(n);
  memcpy(c, v, n);
  c[n / 2] ^= 0x10;
  spit(bad, c, n);
  expect_refused("flipped byte", bad, "corrupted: checksum mismatch", NULL);

  memcpy(c, v, n);
  memcpy(c, "NOTAPLAN", 8);
  spit(bad, c, n);
  expect_refused("wrong magic", bad, "not a ddpc plan", NULL);
  spit(bad, (const uint8_t *)"hello", 5);
  expect_refused("short non-plan", bad, "not a ddpc plan", NULL);

  memcpy(c, v, n);
  c[8] = (uint8_t)(DDP_PLAN_VERSION + 1);
  fix_crc(c, n);
  spit(bad, c, n);
  snprintf(expect, sizeof expect, "version %u, this build reads version %u", DDP_PLAN_VERSION + 1, DDP_PLAN_VERSION);
  expect_refused("bumped version", bad, expect, NULL);

  memcpy(c, v, n);
  c[24 + 16 + 6] = 0x7f; /* first section's size: huge */
  fix_crc(c, n);
  spit(bad, c, n);
  expect_refused("section out of bounds", bad, "out of bounds", "'meta'");

  memcpy(c, v, n);
  uint8_t *key = memmem(c, n, "schedule_path", 13);
  if (key) memcpy(key, "schedule_xxxx", 13);
  fix_crc(c, n);
  spit(bad, c, n);
  expect_refused("unknown meta field", bad, "unknown meta field 'schedule_xxxx'", NULL);

  /* found by mutation testing: bytes after the last section (two files concatenated), and a meta field given
   * twice (the last would win) */
  uint8_t *longer = malloc(n + 8);
  memcpy(longer, v, n);
  memset(longer + n, 0, 8);
  fix_crc(longer, n + 8);
  spit(bad, longer, n + 8);
  snprintf(expect, sizeof expect, "expected %zu bytes, got %zu", n, n + 8);
  expect_refused("trailing bytes", bad, expect, NULL);
  free(longer);
  memcpy(c, v, n);
  key = memmem(c, n, "\x05\x00\x00\x00steps", 9); /* a u32 length and the name: steps becomes a second world */
  CHECK(key != NULL, "the meta field steps in the good plan");
  if (key) memcpy(key + 4, "world", 5);
  fix_crc(c, n);
  spit(bad, c, n);
  expect_refused("meta field twice", bad, "world", "twice");

  expect_refused("missing file", tmp_path("does-not-exist.bin"), "cannot open", "No such file");
  free(c);
  free(v);
}

/* Bad plans built in memory: written as they are, refused on read with the right message. */
typedef struct mutation {
  const char *what;
  void (*apply)(ddp_plan *p);
  const char *n1, *n2;
} mutation;

enum { BUCKET_FIXTURE = 2, W2_GRAD_FIXTURE = 4 }; /* plan_fixture.c's tensors */

static ddp_instr *step_instr(ddp_plan *p, int rank, int opcode) {
  for (uint32_t i = 0; i < p->ranks[rank].step.n; i++)
    if (p->ranks[rank].step.v[i].opcode == opcode) return &p->ranks[rank].step.v[i];
  return &p->ranks[rank].step.v[0];
}
static void m_tensor_id(ddp_plan *p) { step_instr(p, 1, I_GEMM)->p[1].tensor = 99; }
static void m_arena_offset(ddp_plan *p) { step_instr(p, 0, I_KERNEL)->p[0].offset = 1u << 20; }
static void m_arena_index(ddp_plan *p) { step_instr(p, 0, I_KERNEL)->p[0].arena = ARENA_COUNT; }
static void m_opcode(ddp_plan *p) { step_instr(p, 0, I_COPY)->opcode = I_COUNT; }
static void m_kernel_op(ddp_plan *p) { step_instr(p, 0, I_KERNEL)->op = OP_COUNT; }
static void m_kernel_id(ddp_plan *p) { step_instr(p, 0, I_KERNEL)->kernel = 5; }
static void m_module_id(ddp_plan *p) { p->kernels[0].module = 3; }
static void m_stream(ddp_plan *p) { step_instr(p, 1, I_ALL_REDUCE)->stream = 9; }
static void m_dtype(ddp_plan *p) { step_instr(p, 0, I_GEMM)->dt[2] = DT_COUNT; }
static void m_string(ddp_plan *p) { step_instr(p, 0, I_RANGE_PUSH)->name = 42; }
static void m_event(ddp_plan *p) { step_instr(p, 0, I_EVENT_WAIT)->i[0] = 2; }
static void m_view_base(ddp_plan *p) { p->tensors[4].base = 77; }
static void m_tensor_dtype(ddp_plan *p) { p->tensors[0].dtype = 200; }
static void m_bucket(ddp_plan *p) { p->buckets[0].params[1] = -3; }
static void m_peer(ddp_plan *p) { step_instr(p, 0, I_SEND)->i[2] = 2; }
static void m_mode(ddp_plan *p) { p->meta.mode = MODE_COUNT; }
/* found by mutation testing: checks of the reader that no test held */
static void m_init_refresh(ddp_plan *p) { p->ranks[0].init_refresh = p->ranks[0].init.n + 1; }
static void m_view_past_base(ddp_plan *p) { p->tensors[W2_GRAD_FIXTURE].view = p->tensors[BUCKET_FIXTURE].bytes - 4; }
static void m_view_arena(ddp_plan *p) { p->tensors[W2_GRAD_FIXTURE].arena = ARENA_ACT; }
static void m_redop(ddp_plan *p) { step_instr(p, 1, I_ALL_REDUCE)->i[1] = 99; }
static void m_load_view(ddp_plan *p) {
  ddp_instr *in = step_instr(p, 0, I_LOAD_BATCH);
  in->p[0].view = 4, in->p[0].offset += 4; /* a consistent view, but the batch fills its tensor from the start */
}
static void m_batch(ddp_plan *p) { p->meta.batch_per_rank = 0; }
static void m_layer(ddp_plan *p) { step_instr(p, 0, I_GEMM)->layer = -2; }
static void m_first_use(ddp_plan *p) { p->tensors[0].first_use = -2; }
static void m_load_part(ddp_plan *p) {
  ddp_instr *in = step_instr(p, 0, I_LOAD_BATCH);
  in->i[LOAD_BATCH_I_PARTS] = 2, in->i[LOAD_BATCH_I_PART] = 2; /* parts 0 and 1 exist */
}
static void m_module_entry(ddp_plan *p) {
  free(p->modules[0].entry);
  p->modules[0].entry = NULL;
}

static const mutation mutations[] = {
    {"tensor id", m_tensor_id, "rank 1 step instruction 3 (gemm)", "names tensor 99, plan has 10 tensors"},
    {"arena offset", m_arena_offset, "offset 1048576", "exceeds the arena's 1024 bytes"},
    {"arena index", m_arena_index, "in arena 6 (have 6)", NULL},
    {"opcode", m_opcode, "opcode 20", NULL},
    {"kernel op", m_kernel_op, "kernel op", NULL},
    {"kernel id", m_kernel_id, "kernel 5, plan has 1 kernels", NULL},
    {"module id", m_module_id, "kernel 0 names module 3", NULL},
    {"stream", m_stream, "stream 9, plan has 2 streams", NULL},
    {"dtype", m_dtype, "dtype dt2", NULL},
    {"string id", m_string, "string id 42", NULL},
    {"event", m_event, "event 2, rank has 2 events", NULL},
    {"view base", m_view_base, "tensor 4 'w2.grad'", "view of tensor 77"},
    {"tensor dtype", m_tensor_dtype, "tensor 0 'w1'", "dtype 200"},
    {"bucket member", m_bucket, "bucket 0 names tensor -3", NULL},
    {"peer", m_peer, "peer rank 2, world size 2", NULL},
    {"meta mode", m_mode, "invalid: meta mode is 3 (have 3)", NULL},
    {"init_refresh", m_init_refresh, "rank 0 refreshes from init instruction 5 of 4", NULL},
    {"view past its base", m_view_past_base, "tensor 4 'w2.grad': view at 188 + 64 bytes exceeds its base's 192 bytes", NULL},
    {"view in another arena", m_view_arena, "tensor 4 'w2.grad': view in arena 3 of a tensor in arena 1", NULL},
    {"reduction op", m_redop, "rank 1 step instruction 10 (all_reduce): reduction 99", NULL},
    {"load_batch view", m_load_view, "(load_batch): p[0] is tensor 5 at view 4, the batch goes to meta tokens_tensor 5", NULL},
    {"batch_per_rank 0", m_batch, "meta batch_per_rank: 0, must be >= 1", NULL},
    {"layer -2", m_layer, "rank 0 step instruction 3 (gemm): layer -2", NULL},
    {"first_use -2", m_first_use, "tensor 0 'w1': negative first/last use", NULL},
    {"load_batch part", m_load_part, "(load_batch): i[0] (part) = 2, must be below parts = 2", NULL},
    {"module entry", m_module_entry, "module 0 has no template or entry", NULL},
};

static void test_index_refusals(void) {
  for (size_t k = 0; k < sizeof mutations / sizeof mutations[0]; k++) {
    ddp_plan *p = fixture_plan();
    mutations[k].apply(p);
    char err[512] = "";
    const char *path = tmp_path("mutated.bin");
    int rc = ddp_plan_write(p, path, err, sizeof err);
    CHECK_INT(mutations[k].what, 0, rc);
    if (rc) fprintf(stderr, "  write error: %s\n", err);
    expect_refused(mutations[k].what, path, mutations[k].n1, mutations[k].n2);
    ddp_plan_free(p);
  }
}

static void test_launch_check(void) {
  ddp_plan *p = fixture_plan();
  char err[256] = "";
  CHECK_INT("world mismatch", -1, ddp_plan_check_launch(p, NULL, 3, err, sizeof err));
  CHECK_STR("world message", "compiled for 2 ranks, launched with 3", err);
  CHECK_INT("arch mismatch", -1, ddp_plan_check_launch(p, "sm_80", 2, err, sizeof err));
  CHECK_STR("arch message", "compiled for sm_90a, this GPU is sm_80", err);
  CHECK_INT("sm_90a plan on sm_90", 0, ddp_plan_check_launch(p, "sm_90", 2, err, sizeof err));
  CHECK_INT("sm_90a plan on sm_100", -1, ddp_plan_check_launch(p, "sm_100", 2, err, sizeof err));
  CHECK_INT("arch skipped", 0, ddp_plan_check_launch(p, NULL, 2, err, sizeof err));
  CHECK_INT("world skipped", 0, ddp_plan_check_launch(p, "sm_90", 0, err, sizeof err));
  free(p->meta.arch);
  p->meta.arch = strdup("sm_80");
  CHECK_INT("sm_80 plan on sm_86", 0, ddp_plan_check_launch(p, "sm_86", 2, err, sizeof err));
  CHECK_INT("sm_80 plan on sm_90", -1, ddp_plan_check_launch(p, "sm_90", 2, err, sizeof err));
  free(p->meta.arch);
  p->meta.arch = strdup("sm_86");
  CHECK_INT("sm_86 plan on sm_80", -1, ddp_plan_check_launch(p, "sm_80", 2, err, sizeof err));
  /* arch-specific CUBIN runs on exactly its arch, not a newer minor of the same major */
  free(p->meta.arch);
  p->meta.arch = strdup("sm_90a");
  CHECK_INT("sm_90a plan on sm_91", -1, ddp_plan_check_launch(p, "sm_91", 2, err, sizeof err));
  free(p->meta.arch);
  p->meta.arch = strdup("sm_90");
  CHECK_INT("sm_90 plan on sm_91", 0, ddp_plan_check_launch(p, "sm_91", 2, err, sizeof err));
  ddp_plan_free(p);
}

/* ---- strided pieces (format 6), INIT_TENSOR's run and stride, the mesh meta fields ---- */

/* The fixture with w1 ("layers.0.weight" [4, 8]) described by two column-block pieces, views of it: rank 0 holds
 * columns 0..3 of every row (4 runs of 4, 8 apart, from element 0), rank 1 columns 4..7 (from element 4); w1's
 * INIT_TENSOR on rank 1 draws rank 1's block (run 4, stride 8, first 4) into the first 16 elements. */
static ddp_plan *strided_plan(void) {
  ddp_plan *p = fixture_plan();
  p->meta.tensor_parallel = 2, p->meta.data_parallel = 1;
  for (int r = 0; r < 2; r++) {
    ddp_tensor t = {0};
    char name[32];
    snprintf(name, sizeof name, "w1.tp%d", r);
    t.name = name;
    t.state_name = (char *)"layers.0.weight";
    t.flags = TF_PARAM | TF_PIECE;
    t.dtype = DT_F32;
    t.arena = ARENA_PARAM;
    t.ndim = 1;
    t.shape[0] = 16;
    t.bytes = 64;
    t.base = 0, t.view = 64 * (uint64_t)r, t.offset = p->tensors[0].offset + t.view, t.param = 0;
    t.first_use = t.last_use = -1;
    t.piece_rank = r, t.piece_first = 4 * r, t.piece_runs = 4, t.piece_stride = 8;
    ddp_plan_add_tensor(p, &t);
  }
  ddp_instr *in = &p->ranks[1].init.v[0];
  in->i[INIT_TENSOR_I_ELEMENTS] = 16, in->i[INIT_TENSOR_I_FIRST] = 4, in->i[INIT_TENSOR_I_RUN] = 4,
  in->i[INIT_TENSOR_I_STRIDE] = 8;
  return p;
}

typedef void (*strided_fn)(ddp_plan *p, ddp_tensor *piece1, ddp_instr *init1);
static void s_runs_negative(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_runs = -1; }
static void s_stride_negative(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_stride = -8; }
static void s_runs_partial(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_runs = 3; }
static void s_runs_overlap(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_stride = 3; }
static void s_past_end(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_first = 5; }
static void s_overflow(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)in, t->piece_stride = INT64_MAX; }
static void s_not_piece(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)t, (void)in, p->tensors[7].piece_runs = 2; }
static void s_init_run(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)t, in->i[INIT_TENSOR_I_RUN] = -1; }
static void s_init_stride(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)p, (void)t, in->i[INIT_TENSOR_I_STRIDE] = 2; }
static void s_init_overflow(ddp_plan *p, ddp_tensor *t, ddp_instr *in) {
  (void)p, (void)t, in->i[INIT_TENSOR_I_FIRST] = INT64_MAX - 20; /* element 15: first + 3 x 8 + 3 */
}
static void s_init_contiguous_overflow(ddp_plan *p, ddp_tensor *t, ddp_instr *in) {
  (void)p, (void)t, in->i[INIT_TENSOR_I_RUN] = 0, in->i[INIT_TENSOR_I_FIRST] = INT64_MAX - 14;
}
static void s_tensor_parallel(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)t, (void)in, p->meta.tensor_parallel = 3; }
static void s_mesh(ddp_plan *p, ddp_tensor *t, ddp_instr *in) { (void)t, (void)in, p->meta.data_parallel = 2; }

static void test_strided_pieces(void) {
  ddp_plan *p = strided_plan();
  char err[512] = "";
  const char *path = tmp_path("strided.bin");
  CHECK_INT("write strided", 0, ddp_plan_write(p, path, err, sizeof err));
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  if (CHECK(q, "the strided plan was refused: %s", err)) {
    compare_plans(p, q);
    CHECK_INT("piece runs read back", 4, q->tensors[q->ntensors - 1].piece_runs);
    CHECK_INT("piece stride read back", 8, q->tensors[q->ntensors - 1].piece_stride);
    CHECK_INT("meta tensor_parallel read back", 2, q->meta.tensor_parallel);
    CHECK_INT("init stride read back", 8, q->ranks[1].init.v[0].i[INIT_TENSOR_I_STRIDE]);
  }
  ddp_plan_free(q);
  ddp_plan_free(p);
  static const struct {
    const char *what;
    strided_fn apply;
    const char *msg;
  } cases[] = {
      {"negative runs", s_runs_negative, "invalid: tensor 11 'w1.tp1': piece of -1 runs 8 elements apart (must not be negative)"},
      {"negative stride", s_stride_negative, "invalid: tensor 11 'w1.tp1': piece of 4 runs -8 elements apart (must not be negative)"},
      {"partial runs", s_runs_partial, "invalid: tensor 11 'w1.tp1': piece of 16 elements in 3 runs (not a whole number per run)"},
      {"runs overlap", s_runs_overlap,
       "invalid: tensor 11 'w1.tp1': piece of 4 runs of 4 elements 3 apart (runs overlap: the stride must be >= the run)"},
      {"past the end", s_past_end,
       "invalid: tensor 11 'w1.tp1': piece of rank 1 at element 5, 4 runs of 4 elements 8 apart, the parameter has 32 "
       "elements and the plan 2 ranks"},
      {"stride overflow", s_overflow, "invalid: tensor 11 'w1.tp1': piece of rank 1 at element 4, 4 runs of 4 elements "
                                      "9223372036854775807 apart, the parameter has 32 elements"},
      {"runs on a non-piece", s_not_piece,
       "invalid: tensor 7 'h': piece rank, first element, runs or stride set on a tensor that is not a piece"},
      {"init run", s_init_run, "invalid: rank 1 init instruction 0 (init_tensor): i[6] (run) = -1, must be >= 0"},
      {"init stride", s_init_stride, "invalid: rank 1 init instruction 0 (init_tensor): i[7] (stride) = 2, must be >= the run 4"},
      {"init index overflow", s_init_overflow,
       "invalid: rank 1 init instruction 0 (init_tensor): i[5] (first) = 9223372036854775787: the stream index of element 15 "
       "overflows (16 elements, run 4, stride 8)"},
      {"init contiguous index overflow", s_init_contiguous_overflow,
       "invalid: rank 1 init instruction 0 (init_tensor): i[5] (first) = 9223372036854775793: the stream index of element "
       "15 overflows (16 elements, run 0, stride 8)"},
      {"meta tensor_parallel", s_tensor_parallel, "invalid: meta tensor_parallel is 3 (must be 0..2)"},
      {"meta mesh", s_mesh, "invalid: meta tensor_parallel 2 x pipe_stages 0 x data_parallel 2 does not make the world size 2"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    p = strided_plan();
    cases[k].apply(p, &p->tensors[p->ntensors - 1], &p->ranks[1].init.v[0]);
    const char *bad = tmp_path("strided_bad.bin");
    CHECK_INT(cases[k].what, 0, ddp_plan_write(p, bad, err, sizeof err));
    expect_refused(cases[k].what, bad, cases[k].msg, NULL);
    ddp_plan_free(p);
  }
  /* low_priority_streams: a mask of streams 1..nstreams-1; the compute stream, a stream past the plan's and a
   * negative mask are refused, a valid mask reads back */
  const int64_t masks[] = {1, 0, -2, 2};
  for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
    p = strided_plan();
    p->meta.low_priority_streams = masks[k] ? masks[k] : (int64_t)1 << p->nstreams;
    const int64_t mask = p->meta.low_priority_streams;
    const uint32_t ns = p->nstreams;
    const char *bad = tmp_path("streams_bad.bin");
    CHECK_INT("write a low-priority mask", 0, ddp_plan_write(p, bad, err, sizeof err));
    ddp_plan_free(p);
    if (mask == 2 && ns > 1) {
      q = ddp_plan_read(bad, err, sizeof err);
      if (CHECK(q, "low_priority_streams 2 refused: %s", err)) CHECK_INT("low_priority_streams read back", 2, q->meta.low_priority_streams);
      ddp_plan_free(q);
      continue;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "invalid: meta low_priority_streams is %lld (a mask of streams 1..%u; the plan has %u streams)",
             (long long)mask, ns - 1, ns);
    expect_refused("low_priority_streams", bad, msg, NULL);
  }
  /* windows (plan/windows.c): whole 2 MiB units, and only where every member of the communicator holds the
   * arena at one such size; the world's communicator of the 2-rank fixture */
  p = strided_plan();
  p->meta.nccl_register = NCCL_REGISTER_WINDOW;
  const uint32_t all = ~0u; /* as if a collective used every arena */
  const uint64_t mib2 = (uint64_t)2 << 20;
  CHECK_INT("window rounding", (long long)(2 * mib2), (long long)ddp_window_bytes(mib2 + 1));
  CHECK_INT("window rounding of 0", 0, (long long)ddp_window_bytes(0));
  p->ranks[0].arena_bytes[ARENA_GRAD] = 5, p->ranks[1].arena_bytes[ARENA_GRAD] = mib2;
  CHECK_INT("a window where the sizes round alike", (long long)mib2, (long long)ddp_plan_window_bytes(p, all, 0, ARENA_GRAD));
  CHECK_INT("no window for an arena no collective uses", 0,
            (long long)ddp_plan_window_bytes(p, all & ~(1u << ARENA_GRAD), 0, ARENA_GRAD));
  p->meta.nccl_register = NCCL_REGISTER_BUFFERS;
  CHECK_INT("no window without register = \"window\"", 0, (long long)ddp_plan_window_bytes(p, all, 0, ARENA_GRAD));
  p->meta.nccl_register = NCCL_REGISTER_WINDOW;
  p->ranks[1].arena_bytes[ARENA_GRAD] = mib2 + 1;
  CHECK_INT("no window where they differ", 0, (long long)ddp_plan_window_bytes(p, all, 0, ARENA_GRAD));
  p->ranks[0].arena_bytes[ARENA_GRAD] = 0, p->ranks[1].arena_bytes[ARENA_GRAD] = 0;
  CHECK_INT("no window for an empty arena", 0, (long long)ddp_plan_window_bytes(p, all, 0, ARENA_GRAD));
  CHECK_INT("no window on a communicator the plan lacks", 0, (long long)ddp_plan_window_bytes(p, all, 99, ARENA_PARAM));
  CHECK_INT("no window for an arena out of range", 0, (long long)ddp_plan_window_bytes(p, all, 0, ARENA_COUNT));
  ddp_plan_free(p);
  /* nccl_register: 0 none, 1 buffers, 2 symmetric windows; 3 and -1 are refused */
  const int64_t regs[] = {2, 3, -1};
  for (size_t k = 0; k < sizeof regs / sizeof regs[0]; k++) {
    p = strided_plan();
    p->meta.nccl_register = regs[k];
    const char *bad = tmp_path("register_bad.bin");
    CHECK_INT("write an nccl_register", 0, ddp_plan_write(p, bad, err, sizeof err));
    ddp_plan_free(p);
    if (regs[k] == NCCL_REGISTER_WINDOW) {
      q = ddp_plan_read(bad, err, sizeof err);
      if (CHECK(q, "nccl_register 2 refused: %s", err)) CHECK_INT("nccl_register read back", 2, q->meta.nccl_register);
      ddp_plan_free(q);
      continue;
    }
    char msg[128];
    snprintf(msg, sizeof msg, "invalid: meta nccl_register is %lld (must be 0..2)", (long long)regs[k]);
    expect_refused("nccl_register", bad, msg, NULL);
  }
}

static int count_tmp_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  return n;
}

static void test_failed_writes(void) {
  ddp_plan *p = fixture_plan();
  char err[512] = "";
  const char *nodir = tmp_path("no/such/dir/plan.bin");
  CHECK_INT("write into a missing directory", -1, ddp_plan_write(p, nodir, err, sizeof err));
  CHECK_CONTAINS("missing directory message", err, nodir);
  CHECK_INT("no file", -1, access(nodir, F_OK));

  /* the target is a directory: refused before a temporary file is made (a rename must never replace a
   * folder, device or FIFO: as root it could be /dev/full) */
  const char *dir = tmp_path("adir");
  mkdir(dir, 0755);
  CHECK_INT("write over a directory", -1, ddp_plan_write(p, dir, err, sizeof err));
  CHECK_CONTAINS("not a regular file message", err, "exists and is not a regular file");
  CHECK_INT("no temporary file left", 0, count_tmp_files(tmpdir));

  if (geteuid() != 0) { /* root writes anywhere */
    const char *ro = tmp_path("readonly");
    mkdir(ro, 0500);
    char target[700];
    snprintf(target, sizeof target, "%s/plan.bin", ro);
    CHECK_INT("write into a read-only directory", -1, ddp_plan_write(p, target, err, sizeof err));
    CHECK_CONTAINS("read-only message", err, "Permission denied");
    CHECK_INT("no file in read-only dir", -1, access(target, F_OK));
    CHECK_INT("no temporary file in read-only dir", 0, count_tmp_files(ro));
    chmod(ro, 0700);
  }
  ddp_plan_free(p);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/ddpc-plan-io-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_names();
  test_construction();
  test_round_trip();
  test_container_refusals();
  test_index_refusals();
  test_launch_check();
  test_failed_writes();
  test_strided_pieces();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_report("test_plan_io");
}

/* tests/unit/inspect/test_inspect_shard.c: the sharding analysis of `ddpc inspect` (compiler/inspect/
 * inspect_shard*.c) and the memory classes of `ddpc explain` (compiler/explain/memory.c) on a hand-made
 * ZeRO-3 plan of 2 ranks, laid out by hand (place() below, so the test does not depend on the planner's
 * liveness rules): three FSDP units of 128 parameters, their
 * gathered bf16 buffers (unit<k>.gathered, re-gathered for the backward as unit<k>.gathered.bwd) written by
 * ALL_GATHERs on stream 1 one unit ahead of the forward GEMMs, group gradients bucket<k>.grads
 * reduce-scattered into flat.grads.shard. Checks the level (from meta.parallel and from the tensors alone),
 * the units table, the prefetch order and the instruction each gather must precede, the resident-unit
 * count and gathered peak, the memory classes at the activation peak (gathered parameters as parameters,
 * group gradients as gradients), the ZeRO-3 formula with the plan's byte widths, the text sections and the
 * JSON document; then a ZeRO-2-shaped plan found from its tensors; then bf16 per-block units split by dtype
 * into two groups, one gathered as fp32 and cast on the comm stream (units joined by layer ranges, the
 * first use found through the cast, the prefetch+1 bound). */
#include "check.h"
#include "access.h"
#include "explain.h"
#include "inspect.h"
#include "inspect_json.h"
#include "inspect_shard.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int32_t add(ddp_plan *p, const char *name, uint32_t flags, int dt, int arena, int64_t numel) {
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)name;
  t.flags = flags;
  t.dtype = (uint8_t)dt;
  t.arena = (uint8_t)arena;
  t.ndim = 1;
  t.shape[0] = numel;
  t.base = t.param = -1;
  t.bytes = (uint64_t)numel * ddp_dtype_size(dt);
  t.first_use = t.last_use = -1;
  return ddp_plan_add_tensor(p, &t);
}

static int32_t view(ddp_plan *p, const char *name, int32_t base, uint64_t at, int64_t numel) {
  ddp_tensor t = p->tensors[base];
  t.name = (char *)name;
  t.state_name = NULL;
  t.base = base;
  t.view = at;
  t.shape[0] = numel;
  t.bytes = (uint64_t)numel * ddp_dtype_size(t.dtype);
  return ddp_plan_add_tensor(p, &t);
}

static void coll(ddp_plan *p, int op, const char *name, int32_t send, int32_t recv, int dt, int64_t count) {
  ddp_instr in = ddp_instr_blank(op, STREAM_COMM);
  in.name = ddp_plan_add_string(p, name);
  in.p[COLL_P_SEND].tensor = send;
  in.p[COLL_P_RECV].tensor = recv;
  in.dt[COLL_P_SEND] = in.dt[COLL_P_RECV] = (uint8_t)dt;
  in.i[COLL_I_COUNT] = count;
  for (int r = 0; r < p->meta.world; r++) ddp_program_push(&p->ranks[r].step, &in);
}

static void gemm(ddp_plan *p, const char *name, int32_t a, int32_t b, int32_t d) {
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  in.name = ddp_plan_add_string(p, name);
  in.p[GEMM_P_A].tensor = a, in.p[GEMM_P_B].tensor = b, in.p[GEMM_P_D].tensor = d;
  for (int r = 0; r < p->meta.world; r++) ddp_program_push(&p->ranks[r].step, &in);
}

static void simple(ddp_plan *p, int opcode, int stream, int slot, int64_t v) {
  ddp_instr in = ddp_instr_blank(opcode, stream);
  in.i[slot] = v;
  for (int r = 0; r < p->meta.world; r++) ddp_program_push(&p->ranks[r].step, &in);
}

/* A layout by hand: liveness in program order (first to last instruction naming a tensor or a view of it,
 * rank 0's step), every root one after another in its arena at 256-byte steps (transient activations too,
 * so none shares memory), views resolved, every rank the same arena bytes. */
static void place(ddp_plan *p) {
  uint64_t top[ARENA_COUNT] = {0};
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    tt->first_use = tt->last_use = -1;
    if (tt->base >= 0 || (tt->flags & TF_SHAPE_ONLY)) continue;
    tt->offset = top[tt->arena];
    top[tt->arena] += (tt->bytes + 255) / 256 * 256;
  }
  const ddp_program *prog = &p->ranks[0].step;
  for (uint32_t k = 0; k < prog->n; k++)
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      int32_t t = prog->v[k].p[s].tensor;
      if (t < 0) continue;
      ddp_tensor *rt = &p->tensors[ddp_tensor_root(p, t)];
      if (rt->first_use < 0) rt->first_use = (int32_t)k;
      rt->last_use = (int32_t)k;
    }
  for (uint32_t t = 0; t < p->ntensors; t++) {
    ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0) continue;
    const ddp_tensor *rt = &p->tensors[ddp_tensor_root(p, (int32_t)t)];
    tt->offset = rt->offset + tt->view, tt->arena = rt->arena;
    tt->first_use = rt->first_use, tt->last_use = rt->last_use;
  }
  for (int r = 0; r < p->meta.world; r++) memcpy(p->ranks[r].arena_bytes, top, sizeof top);
}

enum { PER_UNIT = 128, UNITS = 3 };

/* Tensors of a ZeRO-3 plan: each unit padded to world x 64 = 128 elements, rank r owning 64 of each. */
static ddp_plan *zero3_plan(const char *parallel) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 2;
  p->meta.parallel = parallel ? strdup(parallel) : NULL;
  p->meta.act_dtype = DT_BF16;
  p->meta.grad_dtype = DT_F32;
  p->meta.n_params = p->meta.n_trainable = UNITS * PER_UNIT;
  p->nstreams = 2;
  p->ranks = calloc(2, sizeof *p->ranks);
  const uint32_t persist = TF_PERSISTENT;
  int32_t shard = add(p, "flat.params.shard", TF_PARAM | TF_TRAINABLE | persist, DT_F32, ARENA_PARAM, UNITS * 64);
  int32_t copy = add(p, "flat.params.copy.shard", TF_PARAM_COPY | persist, DT_BF16, ARENA_PARAM, UNITS * 64);
  int32_t gshard = add(p, "flat.grads.shard", TF_GRAD | persist, DT_F32, ARENA_GRAD, UNITS * 64);
  add(p, "flat.exp_avg", TF_OPT_M | persist, DT_F32, ARENA_OPT, UNITS * 64);
  add(p, "flat.exp_avg_sq", TF_OPT_V | persist, DT_F32, ARENA_OPT, UNITS * 64);
  (void)shard;
  int32_t w[UNITS], g[UNITS], gb[UNITS], bg[UNITS], x[4];
  char name[64];
  for (int k = 0; k < UNITS; k++) {
    snprintf(name, sizeof name, "layers.%d.weight", k);
    w[k] = add(p, name, TF_PARAM | TF_TRAINABLE | TF_SHAPE_ONLY, DT_F32, ARENA_PARAM, PER_UNIT);
    snprintf(name, sizeof name, "unit%d.gathered", k);
    g[k] = add(p, name, TF_PARAM_COPY, DT_BF16, ARENA_ACT, PER_UNIT);
    snprintf(name, sizeof name, "unit%d.gathered.bwd", k);
    gb[k] = add(p, name, TF_PARAM_COPY, DT_BF16, ARENA_ACT, PER_UNIT);
    snprintf(name, sizeof name, "bucket%d.grads", k);
    bg[k] = add(p, name, TF_GRAD, DT_F32, ARENA_ACT, PER_UNIT);
  }
  for (int k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "x%d", k);
    x[k] = add(p, name, 0, DT_F32, ARENA_ACT, 64);
  }
  int32_t w0 = view(p, "layers.0.weight.gathered", g[0], 0, PER_UNIT); /* read through a view */
  for (int k = 0; k < UNITS; k++) { /* the bucket table: one group per unit */
    ddp_bucket b = {0};
    b.params = malloc(sizeof *b.params);
    b.params[0] = w[k];
    b.nparams = 1;
    b.offset = (uint64_t)k * 64 * 4;
    b.bytes = PER_UNIT * 4;
    if (p->nbuckets == p->cap_buckets) {
      p->cap_buckets = p->cap_buckets ? 2 * p->cap_buckets : 4;
      p->buckets = realloc(p->buckets, p->cap_buckets * sizeof *p->buckets);
    }
    p->buckets[p->nbuckets++] = b;
  }
  /* the step: forward with the gathers one unit ahead, backward re-gathering units 1 and 0 */
  coll(p, I_ALL_GATHER, "fsdp.all_gather.unit0", copy, g[0], DT_BF16, 64);               /* #0 */
  coll(p, I_ALL_GATHER, "fsdp.all_gather.unit1", copy, g[1], DT_BF16, 64);               /* #1 */
  simple(p, I_EVENT_RECORD, STREAM_COMM, EVENT_I_EVENT, 0);                              /* #2 */
  simple(p, I_EVENT_WAIT, STREAM_COMPUTE, EVENT_I_EVENT, 0);                             /* #3 */
  gemm(p, "layers.0.fwd", x[0], w0, x[1]);                                               /* #4 */
  coll(p, I_ALL_GATHER, "fsdp.all_gather.unit2", copy, g[2], DT_BF16, 64);               /* #5 */
  gemm(p, "layers.1.fwd", x[1], g[1], x[2]);                                             /* #6 */
  gemm(p, "layers.2.fwd", x[2], g[2], x[3]);                                             /* #7 */
  simple(p, I_TIMER, STREAM_COMPUTE, TIMER_I_ROLE, TIMER_FORWARD_END);                   /* #8 */
  gemm(p, "layers.2.dw", x[3], g[2], bg[2]);                                             /* #9 */
  coll(p, I_REDUCE_SCATTER, "zero.reduce_scatter.bucket2", bg[2], gshard, DT_F32, 64);   /* #10 */
  coll(p, I_ALL_GATHER, "fsdp.all_gather.unit1.bwd", copy, gb[1], DT_BF16, 64);          /* #11 */
  gemm(p, "layers.1.dw", x[2], gb[1], bg[1]);                                            /* #12 */
  coll(p, I_ALL_GATHER, "fsdp.all_gather.unit0.bwd", copy, gb[0], DT_BF16, 64);          /* #13 */
  coll(p, I_REDUCE_SCATTER, "zero.reduce_scatter.bucket1", bg[1], gshard, DT_F32, 64);   /* #14 */
  gemm(p, "layers.0.dw", x[1], gb[0], bg[0]);                                            /* #15 */
  coll(p, I_REDUCE_SCATTER, "zero.reduce_scatter.bucket0", bg[0], gshard, DT_F32, 64);   /* #16 */
  simple(p, I_TIMER, STREAM_COMPUTE, TIMER_I_ROLE, TIMER_BACKWARD_END);                  /* #17 */
  place(p);
  return p;
}

static char *text_of(const ddp_plan *p, int json) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char err[256] = "";
  if (json) CHECK(ddp_inspect_json(p, -1, m, err, sizeof err) == 0, "%s", err);
  else CHECK(ddp_inspect(p, -1, m) == 0);
  fclose(m);
  return buf;
}

static void test_zero3(void) {
  ddp_plan *p = zero3_plan("ddp ranks=2 sync=bucketed shard=zero3");
  ddp_shard_info si;
  ddp_shard_analyse(p, &si);
  CHECK_INT("level", SHARD_ZERO3, si.level);
  CHECK_STR("level from", "meta.parallel", si.level_from);
  CHECK_INT("units", UNITS, si.nunits);
  for (uint32_t k = 0; k < si.nunits && k < UNITS; k++) {
    CHECK_INT("unit elements", PER_UNIT, si.units[k].elements);
    CHECK_INT("unit grad bytes (f32)", PER_UNIT * 4, si.units[k].grad_bytes);
    CHECK_INT("unit compute bytes (bf16)", PER_UNIT * 2, si.units[k].compute_bytes);
    CHECK_INT("unit shard bytes", PER_UNIT * 4 / 2, si.units[k].shard_bytes);
    char want[32];
    snprintf(want, sizeof want, "unit%u.gathered", k);
    CHECK_STR("unit's gathered buffer", want, ddp_plan_tensor_name(p, si.units[k].gathered));
  }
  /* prefetch order: (instruction, unit, bwd, first compute use, phase) */
  static const struct { int index, unit, bwd, use; const char *phase; } want[] = {
      {0, 0, 0, 4, "forward"}, {1, 1, 0, 6, "forward"}, {5, 2, 0, 7, "forward"},
      {11, 1, 1, 12, "backward"}, {13, 0, 1, 15, "backward"}};
  CHECK_INT("all-gathers", 5, si.ngathers);
  for (uint32_t k = 0; k < si.ngathers && k < 5; k++) {
    const ddp_shard_gather *g = &si.gathers[k];
    CHECK_INT("gather index", want[k].index, g->index);
    CHECK_INT("gather stream", STREAM_COMM, g->stream);
    CHECK_INT("gather unit", want[k].unit, g->unit);
    CHECK_STR("gather kind", "unit", g->kind);
    CHECK_INT("gather bwd", want[k].bwd, g->bwd);
    CHECK_INT("gather's first compute use", want[k].use, g->consumer);
    CHECK_INT("same step", 0, g->next_step);
    CHECK_STR("phase", want[k].phase, g->phase);
  }
  /* units 0 and 1 are both live from #1 to #4 (prefetch 1: at most 2 units); 256 B of bf16 each */
  CHECK_INT("gathered buffers", 6, si.ngathered);
  CHECK_INT("max resident units", 2, si.max_resident);
  CHECK_INT("... first at", 1, si.max_resident_at);
  CHECK_INT("peak gathered bytes", 2 * PER_UNIT * 2, si.peak_gathered_bytes);
  CHECK_INT("... at", 1, si.peak_gathered_at);
  CHECK(si.gathered_hi - si.gathered_lo >= 2 * PER_UNIT * 2 && si.gathered_hi <= p->ranks[0].arena_bytes[ARENA_ACT],
        "gathered range %llu..%llu", (unsigned long long)si.gathered_lo, (unsigned long long)si.gathered_hi);
  /* the activation peak: #9 (unit2.gathered, bucket2.grads, x1, x2, x3: 256 + 512 + 3 x 256 B) */
  ddp_act_peak pk;
  ddp_act_peak_find(p, &pk);
  CHECK_INT("activation peak at", 9, pk.at);
  CHECK_INT("live then", 1536, pk.live);
  CHECK_INT("gathered then", 256, pk.params);
  CHECK_INT("group grads then", 512, pk.grads);
  for (int r = 0; r < 2; r++) {
    uint64_t cls[MEM_COUNT], sum = 0, arenas = 0;
    ddp_memory_classes(p, r, cls);
    const uint64_t *a = p->ranks[r].arena_bytes;
    for (int c = 0; c < MEM_COUNT; c++) sum += cls[c];
    for (int k = 0; k < ARENA_COUNT; k++) arenas += a[k];
    CHECK_INT("classes sum to the arenas", arenas, sum);
    CHECK_INT("parameters: arena + gathered at the peak", a[ARENA_PARAM] + 256, cls[MEM_PARAMS]);
    CHECK_INT("gradients: arena + bucket grads at the peak", a[ARENA_GRAD] + 512, cls[MEM_GRADS]);
    CHECK_INT("optimizer state", a[ARENA_OPT], cls[MEM_OPT]);
    CHECK_INT("activations: the rest", a[ARENA_ACT] - 768, cls[MEM_ACT]);
    ddp_rank_memory rm;
    ddp_rank_memory_get(p, r, &rm);
    CHECK_INT("gathered part", 256, rm.params_gathered);
    CHECK_INT("copies part (flat.params.copy.shard)", UNITS * 64 * 2, rm.params_copies);
    CHECK_INT("masters part", a[ARENA_PARAM] - UNITS * 64 * 2, rm.params_masters);
    CHECK_INT("group grads part", 512, rm.grads_transient);
    CHECK_INT("model states", cls[MEM_PARAMS] + cls[MEM_GRADS] + cls[MEM_OPT], rm.model_states);
  }
  /* ZeRO-3 (2+2+12)Ψ/N with bf16 copies, f32 gradients: (2+4+12) x 384 / 2 = 3456 B */
  CHECK_STR("formula", "ZeRO-3", si.formula_name);
  CHECK_STR("formula text", "(2+4+12)Ψ/2", si.formula);
  CHECK(si.formula_bytes == 3456.0, "formula bytes %g", si.formula_bytes);
  ddp_shard_info_free(&si);

  char *text = text_of(p, 0);
  int failed_before = check_failed;
  CHECK_CONTAINS("text", text, "== sharding ==\nlevel zero3 (from meta.parallel;");
  CHECK_CONTAINS("text", text, "N = 2 ranks");
  CHECK_CONTAINS("text", text, "units (the bucket table's groups): 3");
  CHECK_CONTAINS("text", text, "all-gathers of rank 0's step in program order (prefetch order): 5");
  CHECK_CONTAINS("text", text, "#4 gemm layers.0.fwd");
  CHECK_CONTAINS("text", text, "#15 gemm layers.0.dw");
  CHECK_CONTAINS("text", text, "resident at most: 2 units (first at #1)");
  CHECK_CONTAINS("text", text, "== memory per rank ==");
  CHECK_CONTAINS("text", text, "formula: ZeRO-3 (2+2+12)Ψ/N per rank (seeds)");
  CHECK_CONTAINS("text", text, "formula: ZeRO-3 (2+4+12)Ψ/2 = 0.000 GB (3456 B)");
  if (check_failed > failed_before && text) fputs(text, stderr); /* the listing, to read what differed */
  free(text);

  char *js = text_of(p, 1);
  json_error_t je;
  json_t *doc = js ? json_loads(js, 0, &je) : NULL;
  CHECK(doc != NULL, "the JSON does not parse: %s", doc ? "" : je.text);
  json_t *sh = json_object_get(doc, "sharding"), *mem = json_object_get(doc, "memory_per_rank");
  CHECK_STR("json level", "zero3", json_string_value(json_object_get(sh, "level")));
  CHECK_INT("json units", 3, json_array_size(json_object_get(sh, "units")));
  json_t *g3 = json_array_get(json_object_get(sh, "gathers"), 3);
  CHECK_INT("json gather 3 index", 11, json_integer_value(json_object_get(g3, "index")));
  CHECK_INT("json gather 3 unit", 1, json_integer_value(json_object_get(g3, "unit")));
  CHECK(json_is_true(json_object_get(g3, "bwd")));
  CHECK_INT("json gather 3 use", 12, json_integer_value(json_object_get(g3, "first_compute_use")));
  CHECK_STR("json gather 3 use name", "layers.1.dw", json_string_value(json_object_get(g3, "first_compute_use_name")));
  CHECK_INT("json max resident", 2, json_integer_value(json_object_get(sh, "max_resident_units")));
  json_t *f = json_object_get(mem, "formula");
  CHECK_STR("json formula", "(2+4+12)Ψ/2", json_string_value(json_object_get(f, "text")));
  CHECK(json_real_value(json_object_get(f, "bytes")) == 3456.0);
  json_t *r1 = json_array_get(json_object_get(mem, "ranks"), 1);
  CHECK_INT("json rank 1 gathered", 256, json_integer_value(json_object_get(r1, "parameters_gathered")));
  CHECK_INT("json rank 1 group grads", 512, json_integer_value(json_object_get(r1, "gradients_groups")));
  json_int_t ms = json_integer_value(json_object_get(r1, "model_states"));
  double ratio = json_real_value(json_object_get(r1, "ratio"));
  CHECK(ms > 0 && ratio > (double)ms / 3456.0 - 1e-9 && ratio < (double)ms / 3456.0 + 1e-9, "ratio %g", ratio);
  json_decref(doc);
  free(js);
  ddp_plan_free(p);

  /* no parallel summary: the level from the tensors (gathered buffers) */
  p = zero3_plan(NULL);
  ddp_shard_analyse(p, &si);
  CHECK_INT("level from tensors", SHARD_ZERO3, si.level);
  CHECK_STR("level from", "tensors", si.level_from);
  ddp_shard_info_free(&si);
  ddp_plan_free(p);
}

/* A ZeRO-2 shape (no gathered buffers; full compute copy, sharded gradients) found from its tensors; the
 * zero2 all-gather of the updated parameters has its first compute use in the next step. */
static void test_zero2_from_tensors(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 4;
  p->meta.act_dtype = DT_BF16;
  p->meta.grad_dtype = DT_F32;
  p->meta.n_trainable = 256;
  p->nstreams = 2;
  p->ranks = calloc(4, sizeof *p->ranks);
  int32_t shard = add(p, "flat.params.shard", TF_PARAM | TF_TRAINABLE | TF_PERSISTENT, DT_F32, ARENA_PARAM, 64);
  int32_t copy = add(p, "flat.params.copy", TF_PARAM_COPY | TF_PERSISTENT, DT_BF16, ARENA_PARAM, 256);
  int32_t gs = add(p, "flat.grads.shard", TF_GRAD | TF_PERSISTENT, DT_F32, ARENA_GRAD, 64);
  add(p, "flat.exp_avg", TF_OPT_M | TF_PERSISTENT, DT_F32, ARENA_OPT, 64);
  add(p, "flat.exp_avg_sq", TF_OPT_V | TF_PERSISTENT, DT_F32, ARENA_OPT, 64);
  int32_t bg = add(p, "bucket0.grads", TF_GRAD, DT_F32, ARENA_ACT, 256);
  int32_t x = add(p, "x", 0, DT_F32, ARENA_ACT, 64);
  gemm(p, "fwd", x, copy, x);                                                        /* #0 */
  gemm(p, "dw", x, copy, bg);                                                        /* #1 */
  coll(p, I_REDUCE_SCATTER, "zero.reduce_scatter.bucket0", bg, gs, DT_F32, 64);      /* #2 */
  coll(p, I_ALL_GATHER, "zero.all_gather.bucket0", shard, copy, DT_BF16, 64);        /* #3 */
  place(p);
  ddp_shard_info si;
  ddp_shard_analyse(p, &si);
  CHECK_INT("zero2 level", SHARD_ZERO2, si.level);
  CHECK_STR("zero2 level from", "tensors", si.level_from);
  CHECK_INT("zero2 gathers", 1, si.ngathers);
  if (si.ngathers == 1) {
    CHECK_INT("bucket number", 0, si.gathers[0].unit);
    CHECK_STR("kind", "bucket", si.gathers[0].kind);
    CHECK_INT("first use: the next step's forward", 0, si.gathers[0].consumer);
    CHECK_INT("next step", 1, si.gathers[0].next_step);
  }
  CHECK_INT("no gathered buffers", 0, si.ngathered);
  CHECK_INT("no resident units", 0, si.max_resident);
  /* ZeRO-2 (2+(2+12)/N)Ψ: (2+(4+12)/4) x 256 = 1536 B */
  CHECK_STR("zero2 formula", "(2+(4+12)/4)Ψ", si.formula);
  CHECK(si.formula_bytes == 1536.0, "formula bytes %g", si.formula_bytes);
  uint64_t cls[MEM_COUNT];
  ddp_memory_classes(p, 3, cls);
  CHECK_INT("bucket grads are gradients", p->ranks[3].arena_bytes[ARENA_GRAD] + 1024, cls[MEM_GRADS]);
  CHECK_INT("no transient parameters", p->ranks[3].arena_bytes[ARENA_PARAM], cls[MEM_PARAMS]);
  ddp_shard_info_free(&si);
  ddp_plan_free(p);
}

static void range(ddp_plan *p, int opcode, int kind, const char *name) {
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMPUTE);
  if (opcode == I_RANGE_PUSH) in.i[RANGE_PUSH_I_KIND] = kind, in.name = ddp_plan_add_string(p, name);
  for (int r = 0; r < p->meta.world; r++) ddp_program_push(&p->ranks[r].step, &in);
}

static void cast(ddp_plan *p, const char *name, int32_t from, int32_t to, int64_t n) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMM);
  in.op = OP_CAST;
  in.name = ddp_plan_add_string(p, name);
  in.p[CAST_P_IN].tensor = from, in.p[CAST_P_OUT].tensor = to;
  in.dt[CAST_P_IN] = DT_F32, in.dt[CAST_P_OUT] = DT_BF16;
  in.i[CAST_I_N] = n;
  for (int r = 0; r < p->meta.world; r++) ddp_program_push(&p->ranks[r].step, &in);
}

/* bf16 per-block FSDP units split by dtype into two groups each (matrices in bf16, gathered as fp32 masters
 * and cast on the comm stream; norms in fp32), prefetch 0: 2 groups but 1 unit resident at once; each
 * gather's first compute use found through its cast; the fp32 gather buffers are gathered parameters. */
static void test_split_units(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 2;
  p->meta.parallel = strdup("ddp ranks=2 sync=bucketed units=per-block overlap=backward shard=zero3 prefetch=0/0 "
                            "reshard_after_forward=true gather=fp32");
  p->meta.act_dtype = DT_BF16;
  p->meta.grad_dtype = DT_F32;
  p->meta.n_trainable = 2 * (128 + 64);
  p->nstreams = 2;
  p->ranks = calloc(2, sizeof *p->ranks);
  int32_t shard = add(p, "flat.params.shard", TF_PARAM | TF_TRAINABLE | TF_PERSISTENT, DT_F32, ARENA_PARAM, 192);
  int32_t st[2], mm[2], nm[2], x[3];
  char name[64];
  for (int b = 0; b < 2; b++) {
    snprintf(name, sizeof name, "unit%d.gathered.fp32", 2 * b);
    st[b] = add(p, name, 0, DT_F32, ARENA_ACT, 128);
    snprintf(name, sizeof name, "unit%d.gathered", 2 * b);
    mm[b] = add(p, name, TF_PARAM_COPY, DT_BF16, ARENA_ACT, 128);
    snprintf(name, sizeof name, "unit%d.gathered", 2 * b + 1);
    nm[b] = add(p, name, TF_PARAM_COPY, DT_F32, ARENA_ACT, 64);
  }
  for (int k = 0; k < 3; k++) {
    snprintf(name, sizeof name, "x%d", k);
    x[k] = add(p, name, 0, DT_F32, ARENA_ACT, 64);
  }
  range(p, I_RANGE_PUSH, RANGE_FORWARD, "forward");                                   /* #0 */
  for (int b = 0; b < 2; b++) {
    char g0[48], g1[48], c0[48], l[16], n0[32], n1[32];
    snprintf(g0, sizeof g0, "fsdp.all_gather.unit%d", 2 * b);
    snprintf(c0, sizeof c0, "fsdp.cast.unit%d", 2 * b);
    snprintf(g1, sizeof g1, "fsdp.all_gather.unit%d", 2 * b + 1);
    snprintf(l, sizeof l, "layers.%d", b);
    snprintf(n0, sizeof n0, "layers.%d.ln", b);
    snprintf(n1, sizeof n1, "layers.%d.mm", b);
    coll(p, I_ALL_GATHER, g0, shard, st[b], DT_F32, 64);                                /* #1, #8 */
    cast(p, c0, st[b], mm[b], 128);                                                     /* #2, #9 */
    coll(p, I_ALL_GATHER, g1, shard, nm[b], DT_F32, 32);                                /* #3, #10 */
    range(p, I_RANGE_PUSH, RANGE_LAYER, l);                                             /* #4, #11 */
    gemm(p, n0, x[b], nm[b], x[b + 1]);                                                 /* #5, #12 */
    gemm(p, n1, x[b + 1], mm[b], x[b + 1]);                                             /* #6, #13 */
    range(p, I_RANGE_POP, 0, NULL);                                                     /* #7, #14 */
  }
  simple(p, I_TIMER, STREAM_COMPUTE, TIMER_I_ROLE, TIMER_FORWARD_END);                  /* #15 */
  range(p, I_RANGE_POP, 0, NULL);                                                       /* #16 */
  place(p);
  unsigned char *g = ddp_gathered_params(p);
  CHECK(g[st[0]] && g[st[1]], "the fp32 gather buffers are gathered parameters");
  CHECK(g[mm[0]] && g[nm[1]] && !g[x[0]] && !g[shard]);
  free(g);
  ddp_shard_info si;
  ddp_shard_analyse(p, &si);
  CHECK_INT("split level", SHARD_ZERO3, si.level);
  static const struct { int index, unit, use, via; } want[] = {{1, 0, 6, 2}, {3, 1, 5, -1}, {8, 2, 13, 9}, {10, 3, 12, -1}};
  CHECK_INT("split gathers", 4, si.ngathers);
  for (uint32_t k = 0; k < si.ngathers && k < 4; k++) {
    CHECK_INT("split gather index", want[k].index, si.gathers[k].index);
    CHECK_INT("split gather group", want[k].unit, si.gathers[k].unit);
    CHECK_INT("split first compute use", want[k].use, si.gathers[k].consumer);
    CHECK_INT("split via the cast", want[k].via, si.gathers[k].via);
    CHECK_STR("split phase", "forward", si.gathers[k].phase);
  }
  CHECK_STR("units from", "layer ranges", si.units_how);
  CHECK_INT("one unit resident (prefetch 0)", 1, si.max_resident);
  CHECK_INT("... in the forward", 1, si.max_resident_fwd);
  CHECK_INT("but two groups", 2, si.max_resident_groups);
  CHECK_INT("prefetch forward", 0, si.prefetch_fwd);
  CHECK_INT("prefetch backward", 0, si.prefetch_bwd);
  CHECK_INT("reshard", 1, si.reshard);
  CHECK_INT("gathered buffers (4 + 2 fp32)", 6, si.ngathered);
  ddp_shard_info_free(&si);
  char *text = text_of(p, 0);
  CHECK_CONTAINS("split text", text, "resident at most: 1 unit (first at #1); forward 1, backward 0; 2 groups");
  CHECK_CONTAINS("split text", text, "bound prefetch+1 (prefetch 0/0): forward 1 <= 1 holds, backward 0 <= 1 holds");
  CHECK_CONTAINS("split text", text, "#6 gemm layers.0.mm (via #2 kernel CAST fsdp.cast.unit0)");
  free(text);
  /* without "units=per-block" the plan does not say which groups form a unit: groups are counted */
  free(p->meta.parallel);
  p->meta.parallel = strdup("ddp ranks=2 sync=bucketed units=lua shard=zero3 prefetch=0/0 reshard_after_forward=true");
  ddp_shard_analyse(p, &si);
  CHECK_STR("units unknown", "unknown", si.units_how);
  CHECK_INT("groups counted", 2, si.max_resident);
  ddp_shard_info_free(&si);
  text = text_of(p, 0);
  CHECK_CONTAINS("unknown units text", text, "resident at most: 2 groups");
  CHECK_LACKS("no bound without units", text, "bound prefetch+1");
  free(text);
  ddp_plan_free(p);
}

int main(void) {
  test_zero3();
  test_zero2_from_tensors();
  test_split_units();
  return check_report("test_inspect_shard");
}

/* compiler/inspect/inspect_json.c: `ddpc inspect --json`, the plan as one JSON document for tools (built
 * with jansson, so every string is escaped and every number is valid JSON; a non-finite float is null):
 *   {"format": "ddpc-inspect", "version": 1, "plan_format": N,
 *    "meta":    {every DDP_META_FIELDS field: value, and "<field>_name" for the coded ones},
 *    "counts":  {"tensors", "modules", "kernels", "buckets", "strings", "streams", "comms"},
 *    "ranks":   [{"rank", "nevents", "ntimers", "arena_bytes": {arena: bytes}, "total_bytes",
 *                 "programs": {"init": [instr], "step": [instr]}  (only for the selected rank, or all)}],
 *    "tensors": [{"id", "name", "state_name", "shape", "dtype", "bytes", "arena", "offset", "flags",
 *                 "base", "view", "param", "first_use", "last_use", and for pieces
 *                 "piece_rank", "piece_first" (and "piece_runs", "piece_stride" for a strided piece)}],
 *    "buckets": [{"index", "params": [tensor names], "bytes", "offset"}],
 *    "kernels": [{"index", "op", "module", "template", "entry", "hash", "cubin_bytes", "spec"}],
 *    "nccl_windows": [{"comm", "arena", "bytes"}] (nccl = { register = "window" }, more than one rank) or null,
 *    "nccl_movement": {"path": "nccl" | "peer_copy", "peer_copied": N (rank 0's step all-to-alls and
 *                 all-gathers moved by copy-engine pulls)},
 *    "sharding": {...}, "memory_per_rank": {...}  (inspect_shard_json.c),
 *    "pipeline": {"schedule", "stages", "virtual_stages", "microbatches", "bubble_formula", "chunks": [{"rank",
 *                 "first_layer", "last_layer", "flops_per_microbatch", "embedding", "head"}], "ranks": [{"bytes",
 *                 "sends", "recvs", "sent_bytes"}]} or null  (inspect_pipeline.c),
 *    "tensor_parallel": {...}  (only when mesh.tensor > 1; inspect_tensor.c)}
 *   instr: {"index", "opcode", "stream", "name", "layer", and for kernels "op", "kernel", "grid", "block",
 *           "smem"; "operands": [{"slot", "tensor", "dtype", "view"}], "ints": [...], "floats": [...]}
 *           (ints and floats without their trailing zeros). */
#include "inspect_json.h"
#include "err.h"
#include "inspect_shard_json.h"
#include "inspect_pipeline.h"
#include "inspect_tensor.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct jctx {
  int bad; /* an allocation failed somewhere */
} jctx;

/* A JSON string of s (NULL: null); bytes that are not UTF-8 become '?' rather than failing. */
static json_t *jstr(jctx *c, const char *s) {
  if (!s) return json_null();
  json_t *v = json_string(s);
  if (v) return v;
  char *t = strdup(s);
  if (!t) {
    c->bad = 1;
    return NULL;
  }
  for (char *q = t; *q; q++)
    if ((unsigned char)*q >= 0x80) *q = '?';
  v = json_string(t);
  free(t);
  return v;
}

static json_t *jreal(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Sets o[k] = v (stealing v); a NULL v or a failed set marks the context bad. */
static void put(jctx *c, json_t *o, const char *k, json_t *v) {
  if (!o) json_decref(v); /* json_object_set_new frees v itself when it fails */
  if (!v || !o || json_object_set_new(o, k, v)) c->bad = 1;
}

static void push(jctx *c, json_t *a, json_t *v) {
  if (!a) json_decref(v);
  if (!v || !a || json_array_append_new(a, v)) c->bad = 1;
}

static const char *meta_name(const char *field, int64_t v) {
  struct { const char *field; const char *const *names; int n; } enums[] = {
      {"model_kind", ddp_model_kind_names, MODEL_COUNT}, {"precision", ddp_precision_names, PREC_COUNT},
      {"data_kind", ddp_data_kind_names, DATA_COUNT},    {"optimizer", ddp_optimizer_names, OPTIM_COUNT},
      {"lr_schedule", ddp_lr_schedule_names, LR_COUNT}};
  for (size_t k = 0; k < sizeof enums / sizeof enums[0]; k++)
    if (strcmp(field, enums[k].field) == 0) return ddp_vocab_name(enums[k].names, enums[k].n, v);
  if (strcmp(field, "act_dtype") == 0 || strcmp(field, "grad_dtype") == 0) return ddp_dtype_name((int)v);
  if (strcmp(field, "mode") == 0) return ddp_mode_name((int)v);
  return NULL;
}

static json_t *meta_json(jctx *c, const ddp_plan *p) {
  json_t *m = json_object();
  char key[64];
#define J_I(name)                                                            \
  put(c, m, #name, json_integer(p->meta.name));                              \
  if (meta_name(#name, p->meta.name)) {                                      \
    snprintf(key, sizeof key, "%s_name", #name);                             \
    put(c, m, key, jstr(c, meta_name(#name, p->meta.name)));                 \
  }
#define J_F(name) put(c, m, #name, jreal(p->meta.name));
#define J_S(name) put(c, m, #name, jstr(c, p->meta.name));
#define J(t, name) J_##t(name)
  DDP_META_FIELDS(J)
#undef J
#undef J_I
#undef J_F
#undef J_S
  return m;
}

static json_t *instr_json(jctx *c, const ddp_plan *p, uint32_t k, const ddp_instr *in) {
  json_t *o = json_object();
  put(c, o, "index", json_integer(k));
  put(c, o, "opcode", jstr(c, ddp_opcode_name(in->opcode)));
  put(c, o, "stream", json_integer(in->stream));
  put(c, o, "name", in->name >= 0 ? jstr(c, ddp_plan_string(p, in->name)) : json_null());
  put(c, o, "layer", json_integer(in->layer));
  if (in->opcode == I_KERNEL) {
    put(c, o, "op", jstr(c, ddp_op_name(in->op)));
    put(c, o, "kernel", json_integer(in->kernel));
    put(c, o, "grid", json_pack("[III]", (json_int_t)in->grid[0], (json_int_t)in->grid[1], (json_int_t)in->grid[2]));
    put(c, o, "block",
        json_pack("[III]", (json_int_t)in->block[0], (json_int_t)in->block[1], (json_int_t)in->block[2]));
    put(c, o, "smem", json_integer(in->smem));
  }
  json_t *ops = json_array();
  for (int s = 0; s < DDP_MAX_PTRS; s++) {
    if (in->p[s].tensor < 0) continue;
    json_t *r = json_object();
    put(c, r, "slot", json_integer(s));
    put(c, r, "tensor", jstr(c, ddp_plan_tensor_name(p, in->p[s].tensor)));
    put(c, r, "dtype", jstr(c, ddp_dtype_name(in->dt[s])));
    put(c, r, "view", json_integer((json_int_t)in->p[s].view));
    push(c, ops, r);
  }
  put(c, o, "operands", ops);
  int ni = DDP_MAX_INTS, nf = DDP_MAX_FLOATS;
  while (ni > 0 && in->i[ni - 1] == 0) ni--;
  while (nf > 0 && in->f[nf - 1] == 0) nf--;
  json_t *ints = json_array(), *floats = json_array();
  for (int q = 0; q < ni; q++) push(c, ints, json_integer(in->i[q]));
  for (int q = 0; q < nf; q++) push(c, floats, jreal(in->f[q]));
  put(c, o, "ints", ints);
  put(c, o, "floats", floats);
  return o;
}

static json_t *program_json(jctx *c, const ddp_plan *p, const ddp_program *prog) {
  json_t *a = json_array();
  for (uint32_t k = 0; k < prog->n && !c->bad; k++) push(c, a, instr_json(c, p, k, &prog->v[k]));
  return a;
}

static json_t *ranks_json(jctx *c, const ddp_plan *p, int rank) {
  json_t *a = json_array();
  for (int64_t r = 0; p->ranks && r < p->meta.world && !c->bad; r++) {
    const ddp_rank_plan *rp = &p->ranks[r];
    json_t *o = json_object(), *arenas = json_object();
    uint64_t total = 0;
    put(c, o, "rank", json_integer(r));
    put(c, o, "nevents", json_integer(rp->nevents));
    put(c, o, "ntimers", json_integer(rp->ntimers));
    for (int k = 0; k < ARENA_COUNT; k++) {
      put(c, arenas, ddp_arena_name(k), json_integer((json_int_t)rp->arena_bytes[k]));
      total += rp->arena_bytes[k];
    }
    put(c, o, "arena_bytes", arenas);
    put(c, o, "total_bytes", json_integer((json_int_t)total));
    if (rank < 0 || r == rank) {
      json_t *progs = json_object();
      put(c, progs, "init", program_json(c, p, &rp->init));
      put(c, progs, "step", program_json(c, p, &rp->step));
      put(c, o, "programs", progs);
    }
    push(c, a, o);
  }
  return a;
}

static json_t *tensors_json(jctx *c, const ddp_plan *p) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < p->ntensors && !c->bad; i++) {
    const ddp_tensor *t = &p->tensors[i];
    json_t *o = json_object(), *shape = json_array();
    for (int d = 0; d < t->ndim && d < DDP_MAX_DIMS; d++) push(c, shape, json_integer(t->shape[d]));
    put(c, o, "id", json_integer(i));
    put(c, o, "name", jstr(c, ddp_plan_tensor_name(p, i)));
    put(c, o, "state_name", jstr(c, t->state_name));
    put(c, o, "shape", shape);
    put(c, o, "dtype", jstr(c, ddp_dtype_name(t->dtype)));
    put(c, o, "bytes", json_integer((json_int_t)t->bytes));
    put(c, o, "arena", jstr(c, ddp_arena_name(t->arena)));
    put(c, o, "offset", json_integer((json_int_t)t->offset));
    put(c, o, "flags", json_integer(t->flags));
    put(c, o, "base", t->base >= 0 ? jstr(c, ddp_plan_tensor_name(p, t->base)) : json_null());
    put(c, o, "view", json_integer((json_int_t)t->view));
    put(c, o, "param", t->param >= 0 ? jstr(c, ddp_plan_tensor_name(p, t->param)) : json_null());
    put(c, o, "first_use", json_integer(t->first_use));
    put(c, o, "last_use", json_integer(t->last_use));
    if (t->flags & TF_PIECE) {
      put(c, o, "piece_rank", json_integer(t->piece_rank));
      put(c, o, "piece_first", json_integer((json_int_t)t->piece_first));
      if (ddp_piece_runs(t) > 1) {
        put(c, o, "piece_runs", json_integer((json_int_t)t->piece_runs));
        put(c, o, "piece_stride", json_integer((json_int_t)t->piece_stride));
      }
    }
    push(c, a, o);
  }
  return a;
}

static json_t *buckets_json(jctx *c, const ddp_plan *p) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < p->nbuckets && !c->bad; i++) {
    const ddp_bucket *b = &p->buckets[i];
    json_t *o = json_object(), *params = json_array();
    for (uint32_t j = 0; j < b->nparams; j++) push(c, params, jstr(c, ddp_plan_tensor_name(p, b->params[j])));
    put(c, o, "index", json_integer(i));
    put(c, o, "params", params);
    put(c, o, "bytes", json_integer((json_int_t)b->bytes));
    put(c, o, "offset", json_integer((json_int_t)b->offset));
    push(c, a, o);
  }
  return a;
}

static json_t *kernels_json(jctx *c, const ddp_plan *p) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < p->nkernels && !c->bad; i++) {
    const ddp_kernel *k = &p->kernels[i];
    const ddp_module *m = k->module >= 0 && (uint32_t)k->module < p->nmodules ? &p->modules[k->module] : NULL;
    json_t *o = json_object();
    put(c, o, "index", json_integer(i));
    put(c, o, "op", jstr(c, ddp_op_name(k->op)));
    put(c, o, "module", json_integer(k->module));
    put(c, o, "template", jstr(c, m ? m->template_name : NULL));
    put(c, o, "entry", jstr(c, m ? m->entry : NULL));
    put(c, o, "hash", jstr(c, m ? m->hash : NULL));
    put(c, o, "cubin_bytes", json_integer(m ? (json_int_t)m->cubin_size : 0));
    put(c, o, "spec", jstr(c, m ? m->spec : NULL));
    push(c, a, o);
  }
  return a;
}

/* nccl = { register = "window" } on more than one rank: [{"comm", "arena", "bytes"}] of the arenas the CUDA
 * executor registers as NCCL symmetric windows (plan/windows.c); null for other plans. */
static json_t *windows_json(jctx *c, const ddp_plan *p) {
  if (p->meta.nccl_register != NCCL_REGISTER_WINDOW || p->meta.world < 2) return json_null();
  const uint32_t coll = ddp_plan_collective_arenas(p);
  json_t *a = json_array();
  for (uint32_t k = 0; k <= p->ncomms; k++)
    for (int r = 0; r < ARENA_COUNT; r++) {
      const uint64_t w = ddp_plan_window_bytes(p, coll, k, r);
      if (!w) continue;
      json_t *o = json_object();
      put(c, o, "comm", json_integer(k));
      put(c, o, "arena", jstr(c, ddp_arena_name(r)));
      put(c, o, "bytes", json_integer((json_int_t)w));
      push(c, a, o);
    }
  return a;
}

int ddp_inspect_json(const ddp_plan *p, int rank, FILE *out, char *err, size_t errcap) {
  if (!p || !out || rank < -1 || (rank >= 0 && rank >= p->meta.world))
    return ddp_fail(err, errcap, "rank %d is not a rank of the plan", rank);
  jctx c = {0};
  json_t *doc = json_object(), *counts = json_object();
  put(&c, doc, "format", jstr(&c, "ddpc-inspect"));
  put(&c, doc, "version", json_integer(1));
  put(&c, doc, "plan_format", json_integer(DDP_PLAN_VERSION));
  put(&c, doc, "meta", meta_json(&c, p));
  put(&c, counts, "tensors", json_integer(p->ntensors));
  put(&c, counts, "modules", json_integer(p->nmodules));
  put(&c, counts, "kernels", json_integer(p->nkernels));
  put(&c, counts, "buckets", json_integer(p->nbuckets));
  put(&c, counts, "strings", json_integer(p->nstrings));
  put(&c, counts, "streams", json_integer(p->nstreams));
  put(&c, counts, "comms", json_integer(p->ncomms)); /* groups besides the world (plan format 4) */
  put(&c, doc, "counts", counts);
  put(&c, doc, "ranks", ranks_json(&c, p, rank));
  put(&c, doc, "tensors", tensors_json(&c, p));
  put(&c, doc, "buckets", buckets_json(&c, p));
  put(&c, doc, "kernels", kernels_json(&c, p));
  put(&c, doc, "nccl_windows", windows_json(&c, p));
  json_t *mv = json_object();
  const uint32_t copied = ddp_plan_peer_copied(p, 0);
  put(&c, mv, "path", json_string(copied ? "peer_copy" : "nccl"));
  put(&c, mv, "peer_copied", json_integer(copied));
  put(&c, doc, "nccl_movement", mv);
  ddp_shard_info si;
  ddp_shard_analyse(p, &si);
  put(&c, doc, "sharding", ddp_insp_sharding_json(p, &si, &c.bad));
  put(&c, doc, "memory_per_rank", ddp_insp_memory_json(p, &si, &c.bad));
  ddp_shard_info_free(&si);
  put(&c, doc, "pipeline", ddp_insp_pipeline_json(p, &c.bad));
  if (p->meta.tensor_parallel > 1) put(&c, doc, "tensor_parallel", ddp_insp_tensor_json(p, &c.bad));
  int rc = 0;
  if (c.bad) rc = ddp_fail(err, errcap, "out of memory while building the JSON listing");
  else if (json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', out) == EOF || ferror(out))
    rc = ddp_fail(err, errcap, "cannot write the JSON listing");
  json_decref(doc);
  return rc;
}

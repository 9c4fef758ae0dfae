/* plan/plan_check.c: what a plan must satisfy before anyone uses it. ddp_plan_validate (run by the
 * reader) checks every index a consumer would follow: string, tensor, kernel and module ids, opcodes,
 * kernel ops, streams, dtypes, events, timers, range and init kinds, peers, view bases, and that every
 * resolved buffer reference lies inside its rank's arena; then proves, for every instruction of every
 * rank, that each byte it touches lies inside its operand's tensor (the footprints of footprint.c, shared
 * with the verifier), that needed pointer slots name tensors of the slot's dtype, and that the meta
 * tensors the runtime reads or fills (loss, scalars, batch) have the size and dtype their use needs
 * (docs/PLAN_FORMAT.md, "What the reader proves"); the cross-rank checks are plan_check_ranks.c.
 * Linear in the instructions. ddp_plan_check_launch
 * compares a plan with the world size and GPU architecture it is launched on. One line per error,
 * nothing printed. */
#include "access.h"
#include "plan_check.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int in_range(int64_t v, int64_t lo, int64_t hi_excl) { return v >= lo && v < hi_excl; }

/* Every communicator: 1 .. world members, each a world rank, none twice. */
static int check_comms(const vctx *c) {
  const ddp_plan *p = c->p;
  if ((int64_t)p->ncomms > 2 * p->meta.world) /* bounds the cross-rank check's passes (plan_check_ranks.c) */
    return ddp_io_fail(c->err, c->errcap, c->path, "invalid: %u communicators for world size %lld (at most %lld)",
                       p->ncomms, (long long)p->meta.world, 2 * (long long)p->meta.world);
  if (p->ncomms == 0) return 0;
  uint32_t *seen = calloc((size_t)p->meta.world, sizeof *seen); /* comm id that last named the rank */
  if (!seen) return ddp_io_fail(c->err, c->errcap, c->path, "out of memory checking the communicators");
  int rc = 0;
  for (uint32_t i = 0; i < p->ncomms && !rc; i++) {
    const ddp_comm *m = &p->comms[i];
    if (m->n < 1 || m->n > p->meta.world)
      rc = ddp_io_fail(c->err, c->errcap, c->path, "invalid: comm %u has %u ranks, world size %lld", i + 1, m->n,
                       (long long)p->meta.world);
    for (uint32_t j = 0; j < m->n && !rc; j++) {
      int32_t r = m->ranks[j];
      if (!in_range(r, 0, p->meta.world))
        rc = ddp_io_fail(c->err, c->errcap, c->path, "invalid: comm %u member %u is rank %d, world size %lld", i + 1,
                         j, r, (long long)p->meta.world);
      else if (seen[r] == i + 1)
        rc = ddp_io_fail(c->err, c->errcap, c->path, "invalid: comm %u names rank %d twice", i + 1, r);
      else
        seen[r] = i + 1;
    }
  }
  free(seen);
  return rc;
}

static int check_meta(const vctx *c) {
  const ddp_plan *p = c->p;
  if (p->nstreams < 1 || p->nstreams > DDP_PLAN_MAX_STREAMS)
    return ddp_io_fail(c->err, c->errcap, c->path, "invalid: %u streams (must be 1..%u)", p->nstreams,
                       DDP_PLAN_MAX_STREAMS);
  const struct { const char *name; int64_t v; } dts[] = {{"act_dtype", p->meta.act_dtype}, {"grad_dtype", p->meta.grad_dtype}};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++)
    if (!in_range(dts[k].v, 0, DT_COUNT))
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: meta %s is dtype %lld (have %d)", dts[k].name,
                         (long long)dts[k].v, DT_COUNT);
  if (!in_range(p->meta.mode, 0, MODE_COUNT))
    return ddp_io_fail(c->err, c->errcap, c->path, "invalid: meta mode is %lld (have %d)", (long long)p->meta.mode,
                       MODE_COUNT);
  const struct { const char *name; int64_t v; } ids[] = {{"tokens_tensor", p->meta.tokens_tensor},
                                                         {"targets_tensor", p->meta.targets_tensor},
                                                         {"loss_tensor", p->meta.loss_tensor},
                                                         {"scalars_tensor", p->meta.scalars_tensor}};
  for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
    if (!in_range(ids[k].v, -1, p->ntensors))
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: meta %s names tensor %lld, plan has %u tensors",
                         ids[k].name, (long long)ids[k].v, p->ntensors);
  /* The pipeline fields (0: not a pipeline) are read by inspect, explain and the metrics; the NCCL
   * configuration by the CUDA executor. */
  const int64_t mb_max = p->meta.global_batch > 1 ? p->meta.global_batch : 1;
  const struct { const char *name; int64_t v, hi; } pipe[] = {{"pipe_stages", p->meta.pipe_stages, p->meta.world},
                                                             {"pipe_replicas", p->meta.pipe_replicas, p->meta.world},
                                                             {"pipe_virtual", p->meta.pipe_virtual, 4096},
                                                             {"pipe_microbatches", p->meta.pipe_microbatches, mb_max},
                                                             {"pipe_schedule", p->meta.pipe_schedule, PIPE_COUNT - 1},
                                                             {"nccl_cta_policy", p->meta.nccl_cta_policy, NCCL_CTA_COUNT - 1},
                                                             {"nccl_max_ctas", p->meta.nccl_max_ctas, 64},
                                                             {"nccl_register", p->meta.nccl_register, NCCL_REGISTER_COUNT - 1},
                                                             {"tensor_parallel", p->meta.tensor_parallel, p->meta.world},
                                                             {"data_parallel", p->meta.data_parallel, p->meta.world}};
  for (size_t k = 0; k < sizeof pipe / sizeof pipe[0]; k++)
    if (pipe[k].v < 0 || pipe[k].v > pipe[k].hi)
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: meta %s is %lld (must be 0..%lld)", pipe[k].name,
                         (long long)pipe[k].v, (long long)pipe[k].hi);
  /* low-priority streams: a mask of stream indices 1..nstreams-1 (the compute stream, 0, never) */
  const int64_t low = p->meta.low_priority_streams;
  if (low < 0 || (low & 1) || (p->nstreams < 63 && (low >> p->nstreams) != 0))
    return ddp_io_fail(c->err, c->errcap, c->path,
                       "invalid: meta low_priority_streams is %lld (a mask of streams 1..%u; the plan has %u streams)",
                       (long long)low, p->nstreams ? p->nstreams - 1 : 0, p->nstreams);
  /* the mesh: world rank = (data x stages + stage) x tensor + tensor index (checkpoint.c's replicas rely on it) */
  int64_t tp = p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1, st = p->meta.pipe_stages > 1 ? p->meta.pipe_stages : 1;
  if (tp > 1 && (p->meta.world % (tp * st) != 0 ||
                 (p->meta.data_parallel > 0 && p->meta.data_parallel * st * tp != p->meta.world)))
    return ddp_io_fail(c->err, c->errcap, c->path,
                       "invalid: meta tensor_parallel %lld x pipe_stages %lld x data_parallel %lld does not make the "
                       "world size %lld", (long long)p->meta.tensor_parallel, (long long)p->meta.pipe_stages,
                       (long long)p->meta.data_parallel, (long long)p->meta.world);
  return 0;
}

/* Largest size of arena `a` over the ranks: a tensor of the shared table must fit on some rank. */
static uint64_t max_arena(const ddp_plan *p, int a) {
  uint64_t m = 0;
  for (int64_t r = 0; r < p->meta.world; r++)
    if (p->ranks[r].arena_bytes[a] > m) m = p->ranks[r].arena_bytes[a];
  return m;
}

/* "invalid: tensor 3 'x': <what>" */
__attribute__((format(printf, 4, 5))) static int tfail(const vctx *c, uint32_t i, const char *nm, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ddp_io_fail(c->err, c->errcap, c->path, "invalid: tensor %u '%.80s': %s", i, nm, what);
}

static int check_tensor(const vctx *c, uint32_t i) {
  const ddp_plan *p = c->p;
  const ddp_tensor *t = &p->tensors[i];
  const char *nm = t->name ? t->name : "?";
  if (!t->name) return tfail(c, i, nm, "no name");
  if (t->dtype >= DT_COUNT) return tfail(c, i, nm, "dtype %u (have %d)", t->dtype, DT_COUNT);
  if (t->arena >= ARENA_COUNT) return tfail(c, i, nm, "arena %u (have %d)", t->arena, ARENA_COUNT);
  if (t->ndim > DDP_MAX_DIMS) return tfail(c, i, nm, "%u dimensions (at most %d)", t->ndim, DDP_MAX_DIMS);
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0) return tfail(c, i, nm, "negative dimension %lld", (long long)t->shape[d]);
  /* shape x dtype = bytes: consumers size host buffers by one and fill them by the other */
  uint64_t elems = 1, want;
  for (int d = 0; d < t->ndim; d++)
    if (__builtin_mul_overflow(elems, (uint64_t)t->shape[d], &elems))
      return tfail(c, i, nm, "shape overflows at dimension %d", d);
  if (__builtin_mul_overflow(elems, (uint64_t)ddp_dtype_size(t->dtype), &want) || want != t->bytes)
    return tfail(c, i, nm, "%llu bytes, its shape holds %llu %s elements", (unsigned long long)t->bytes,
                 (unsigned long long)elems, ddp_dtype_name(t->dtype));
  if (!in_range(t->param, -1, p->ntensors)) return tfail(c, i, nm, "parameter id %d, plan has %u tensors", t->param, p->ntensors);
  if (t->first_use < -1 || t->last_use < -1) return tfail(c, i, nm, "negative first/last use");
  if (t->flags & TF_SHAPE_ONLY) {
    if (t->base != -1 || t->offset != 0 || (t->flags & TF_PIECE))
      return tfail(c, i, nm, "shape-only tensor with a base, an offset or a piece");
    return 0;
  }
  if (t->flags & TF_PIECE) {
    if (!(t->flags & (TF_PARAM | TF_OPT_M | TF_OPT_V)) || !t->state_name || t->ndim != 1 || t->base < 0)
      return tfail(c, i, nm, "a piece must be a named 1-D view holding a parameter or its optimizer state");
    if (!in_range(t->param, 0, p->ntensors) || !(p->tensors[t->param].flags & TF_PARAM) ||
        !p->tensors[t->param].state_name || strcmp(p->tensors[t->param].state_name, t->state_name) != 0)
      return tfail(c, i, nm, "piece of tensor %d, which is not the parameter named '%.80s'", t->param, t->state_name);
    uint64_t whole = p->tensors[t->param].bytes / ddp_dtype_size(p->tensors[t->param].dtype);
    if (t->piece_runs < 0 || t->piece_stride < 0)
      return tfail(c, i, nm, "piece of %lld runs %lld elements apart (must not be negative)", (long long)t->piece_runs,
                   (long long)t->piece_stride);
    uint64_t runs = (uint64_t)ddp_piece_runs(t), n = (uint64_t)t->shape[0], len = n / runs, end;
    if (n % runs)
      return tfail(c, i, nm, "piece of %llu elements in %llu runs (not a whole number per run)", (unsigned long long)n,
                   (unsigned long long)runs);
    if (runs > 1 && (uint64_t)t->piece_stride < len)
      return tfail(c, i, nm, "piece of %llu runs of %llu elements %lld apart (runs overlap: the stride must be >= the run)",
                   (unsigned long long)runs, (unsigned long long)len, (long long)t->piece_stride);
    bool over = !ddp_piece_end(t, &end);
    if (t->piece_rank < 0 || t->piece_rank >= p->meta.world || over || end > whole) {
      if (runs > 1)
        return tfail(c, i, nm, "piece of rank %d at element %lld, %llu runs of %llu elements %lld apart, the parameter "
                     "has %llu elements and the plan %lld ranks", t->piece_rank, (long long)t->piece_first,
                     (unsigned long long)runs, (unsigned long long)len, (long long)t->piece_stride,
                     (unsigned long long)whole, (long long)p->meta.world);
      return tfail(c, i, nm, "piece of rank %d at element %lld + %lld, the parameter has %llu elements and the plan %lld ranks",
                   t->piece_rank, (long long)t->piece_first, (long long)t->shape[0], (unsigned long long)whole,
                   (long long)p->meta.world);
    }
  } else if (t->piece_rank != 0 || t->piece_first != 0 || t->piece_runs != 0 || t->piece_stride != 0)
    return tfail(c, i, nm, "piece rank, first element, runs or stride set on a tensor that is not a piece");
  if (t->offset > UINT64_MAX - t->bytes || t->offset + t->bytes > max_arena(p, t->arena))
    return tfail(c, i, nm, "%s offset %llu + %llu bytes exceeds the arena's %llu bytes", ddp_arena_name(t->arena),
                 (unsigned long long)t->offset, (unsigned long long)t->bytes,
                 (unsigned long long)max_arena(p, t->arena));
  if (t->base == -1) return 0;
  if (!in_range(t->base, 0, p->ntensors) || (uint32_t)t->base == i)
    return tfail(c, i, nm, "view of tensor %d, plan has %u tensors", t->base, p->ntensors);
  const ddp_tensor *b = &p->tensors[t->base];
  if (b->flags & TF_SHAPE_ONLY) return tfail(c, i, nm, "view of the shape-only tensor '%.80s'", b->name);
  if (b->arena != t->arena) return tfail(c, i, nm, "view in arena %u of a tensor in arena %u", t->arena, b->arena);
  if (t->view > b->bytes || t->bytes > b->bytes - t->view)
    return tfail(c, i, nm, "view at %llu + %llu bytes exceeds its base's %llu bytes", (unsigned long long)t->view,
                 (unsigned long long)t->bytes, (unsigned long long)b->bytes);
  /* no cycles through base links */
  int32_t at = t->base;
  for (uint32_t steps = 0; at >= 0; steps++) {
    if (steps > p->ntensors || !in_range(at, 0, p->ntensors)) return tfail(c, i, nm, "cyclic or broken view chain");
    at = p->tensors[at].base;
  }
  return 0;
}

static int check_tables(const vctx *c) {
  const ddp_plan *p = c->p;
  for (uint32_t i = 0; i < p->ntensors; i++)
    if (check_tensor(c, i)) return -1;
  for (uint32_t i = 0; i < p->nmodules; i++)
    if (!p->modules[i].template_name || !p->modules[i].entry)
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: module %u has no template or entry", i);
  for (uint32_t i = 0; i < p->nkernels; i++) {
    const ddp_kernel *k = &p->kernels[i];
    if (!in_range(k->op, 0, OP_COUNT))
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: kernel %u has op %d (have %d)", i, k->op, OP_COUNT);
    if (!in_range(k->module, 0, p->nmodules))
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: kernel %u names module %d, plan has %u modules", i,
                         k->module, p->nmodules);
  }
  for (uint32_t i = 0; i < p->nbuckets; i++) {
    const ddp_bucket *b = &p->buckets[i];
    if (b->offset > UINT64_MAX - b->bytes)
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: bucket %u offset/bytes overflow", i);
    for (uint32_t j = 0; j < b->nparams; j++)
      if (!in_range(b->params[j], 0, p->ntensors))
        return ddp_io_fail(c->err, c->errcap, c->path, "invalid: bucket %u names tensor %d, plan has %u tensors", i,
                           b->params[j], p->ntensors);
  }
  for (int64_t r = 0; r < p->meta.world; r++)
    if (p->ranks[r].nevents > DDP_PLAN_MAX_EVENTS || p->ranks[r].ntimers > DDP_PLAN_MAX_EVENTS)
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: rank %lld has %u events and %u timers (at most %u)",
                         (long long)r, p->ranks[r].nevents, p->ranks[r].ntimers, DDP_PLAN_MAX_EVENTS);
  for (int64_t r = 0; r < p->meta.world; r++)
    if (p->ranks[r].init_refresh > p->ranks[r].init.n)
      return ddp_io_fail(c->err, c->errcap, c->path, "invalid: rank %lld refreshes from init instruction %u of %u",
                         (long long)r, p->ranks[r].init_refresh, p->ranks[r].init.n);
  return 0;
}


static int check_bufref(const vctx *c, const where *w, int k) {
  const ddp_bufref *b = &w->in->p[k];
  const ddp_plan *p = c->p;
  if (b->tensor == -1) return 0;
  if (!in_range(b->tensor, 0, p->ntensors))
    return IFAIL(w, "buffer p%d names tensor %d, plan has %u tensors", k, b->tensor, p->ntensors);
  const ddp_tensor *t = &p->tensors[b->tensor];
  if (t->flags & TF_SHAPE_ONLY) return IFAIL(w, "buffer p%d names the shape-only tensor '%.80s'", k, t->name);
  if (b->arena >= ARENA_COUNT) return IFAIL(w, "buffer p%d in arena %u (have %d)", k, b->arena, ARENA_COUNT);
  if (b->arena != t->arena)
    return IFAIL(w, "buffer p%d in arena %s, its tensor '%.80s' is in %s", k, ddp_arena_name((int)b->arena), t->name,
                 ddp_arena_name(t->arena));
  if (b->view > t->bytes)
    return IFAIL(w, "buffer p%d view %llu past the end of tensor '%.80s' (%llu bytes)", k,
                 (unsigned long long)b->view, t->name, (unsigned long long)t->bytes);
  uint64_t extent = t->bytes - b->view, cap = p->ranks[w->rank].arena_bytes[b->arena];
  if (b->offset > cap || extent > cap - b->offset)
    return IFAIL(w, "buffer p%d (tensor '%.80s') at %s offset %llu + %llu bytes exceeds the arena's %llu bytes", k,
                 t->name, ddp_arena_name((int)b->arena), (unsigned long long)b->offset, (unsigned long long)extent,
                 (unsigned long long)cap);
  return 0;
}

/* Every byte the instruction touches through each pointer slot lies inside that slot's tensor (and so,
 * by check_bufref, inside the rank's arena): the footprint of access.c, from the op's integer slots. */
static int check_footprint(const vctx *c, const where *w) {
  const ddp_plan *p = c->p;
  const ddp_instr *in = w->in;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[256];
  if (ddp_instr_footprint(in, ddp_instr_ranks(p, in), use, why, sizeof why)) return IFAIL(w, "%s", why);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    const ddp_bufref *b = &in->p[k];
    const ddp_slot_use *u = &use[k];
    if (!u->used) continue;
    if (b->tensor < 0) {
      if (u->optional) continue;
      return IFAIL(w, "p[%d] is null, the instruction needs a buffer there", k);
    }
    const ddp_tensor *t = &p->tensors[b->tensor];
    if (b->offset != t->offset + b->view)
      return IFAIL(w, "p[%d] at arena offset %llu, its tensor '%.80s' at %llu + view %llu", k,
                   (unsigned long long)b->offset, t->name, (unsigned long long)t->offset, (unsigned long long)b->view);
    if (u->dtype != DT_NONE && ddp_dtype_size(u->dtype) == 0)
      return IFAIL(w, "p[%d] has no element type (dtype %s)", k, ddp_dtype_name(u->dtype));
    if (u->dtype != DT_NONE && u->dtype != t->dtype)
      return IFAIL(w, "p[%d] is used as %s, its tensor '%.80s' is %s", k, ddp_dtype_name(u->dtype), t->name,
                   ddp_dtype_name(t->dtype));
    uint64_t bytes = u->whole ? t->bytes - b->view : u->bytes;
    if (bytes > t->bytes - b->view)
      return IFAIL(w, "p[%d] touches %llu bytes at view %llu of tensor '%.80s' (%llu bytes)", k,
                   (unsigned long long)bytes, (unsigned long long)b->view, t->name, (unsigned long long)t->bytes);
  }
  if (in->opcode == I_ALL_TO_ALL) { /* NCCL's all-to-all has no in-place form */
    const ddp_bufref *s = &in->p[COLL_P_SEND], *r = &in->p[COLL_P_RECV];
    if (s->arena == r->arena && s->offset < r->offset + use[COLL_P_RECV].bytes &&
        r->offset < s->offset + use[COLL_P_SEND].bytes)
      return IFAIL(w, "%s", "all_to_all's send and receive buffers overlap (an all-to-all is not in place)");
  }
  if (in->opcode == I_LOAD_BATCH) {
    const int64_t want[2] = {p->meta.tokens_tensor, p->meta.targets_tensor};
    for (int k = 0; k < 2; k++)
      if (in->p[k].tensor != want[k] || in->p[k].view != 0)
        return IFAIL(w, "p[%d] is tensor %d at view %llu, the batch goes to meta %s %lld", k, in->p[k].tensor,
                     (unsigned long long)in->p[k].view, k ? "targets_tensor" : "tokens_tensor", (long long)want[k]);
  }
  return 0;
}

/* The dtype the CUDA module of kernel `kernel` was specialised for in pointer slot k ("#define DDP_T<k>
 * float" in its spec, as compiler/codegen/launch.c writes it): a DT_* value, DT_NONE when the spec
 * names none, -1 when it names a type no dtype maps to. */
static int spec_dtype(const char *spec, int k) {
  char key[24];
  int kl = snprintf(key, sizeof key, "#define DDP_T%d ", k);
  for (const char *at = spec; at && (at = strstr(at, key)); at += kl) {
    if (at != spec && at[-1] != '\n') continue;
    const char *t = at + kl;
    size_t n = strcspn(t, "\n");
    static const struct { const char *name; int dt; } types[] = {
        {"float", DT_F32}, {"__nv_bfloat16", DT_BF16}, {"int", DT_I32}, {"double", DT_F64}};
    for (size_t j = 0; j < sizeof types / sizeof types[0]; j++)
      if (strlen(types[j].name) == n && strncmp(t, types[j].name, n) == 0) return types[j].dt;
    return -1;
  }
  return DT_NONE;
}

/* A KERNEL's CUDA module reads each typed slot with the dtype it was specialised for: that must be the
 * slot's dt[k] (and so, by check_footprint, its tensor's), or the GPU would touch a different number of
 * bytes than proven. Modules without a spec line for a slot (no kernels compiled) are not constrained. */
static int check_spec(const vctx *c, const where *w) {
  const ddp_plan *p = c->p;
  const ddp_instr *in = w->in;
  if (in->opcode != I_KERNEL || in->kernel < 0) return 0;
  const ddp_module *m = &p->modules[p->kernels[in->kernel].module];
  if (!m->spec) return 0;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[64];
  if (ddp_instr_footprint(in, ddp_instr_ranks(p, in), use, why, sizeof why)) return 0; /* refused by check_footprint */
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    if (!use[k].used || in->p[k].tensor < 0) continue;
    int sdt = spec_dtype(m->spec, k);
    if (sdt != DT_NONE && sdt != in->dt[k])
      return IFAIL(w, "p[%d] is %s, its kernel %d's module '%.64s' was built for %s", k, ddp_dtype_name(in->dt[k]),
                   in->kernel, m->entry, sdt < 0 ? "an unknown type" : ddp_dtype_name(sdt));
  }
  return 0;
}

/* INIT_TENSOR's stream indices: element i draws first + i (run 0), or first + (i / run) * stride + i % run
 * (runs of `run` elements `stride` apart, stride >= run; the last run may be shorter; run 0 ignores stride);
 * the largest, drawn by the last element, fits int64 (init_fill.c adds them up without overflow). Negative
 * counts are the footprint's (check_footprint). */
static int check_init_index(const vctx *c, const where *w) {
  const ddp_instr *in = w->in;
  int64_t n = in->i[INIT_TENSOR_I_ELEMENTS], first = in->i[INIT_TENSOR_I_FIRST], run = in->i[INIT_TENSOR_I_RUN],
          stride = in->i[INIT_TENSOR_I_STRIDE], last;
  if (run < 0) return IFAIL(w, "i[%d] (run) = %lld, must be >= 0", INIT_TENSOR_I_RUN, (long long)run);
  if (run > 0 && stride < run)
    return IFAIL(w, "i[%d] (stride) = %lld, must be >= the run %lld", INIT_TENSOR_I_STRIDE, (long long)stride,
                 (long long)run);
  if (n <= 0 || first < 0) return 0;
  bool over = run > 0 ? __builtin_mul_overflow((n - 1) / run, stride, &last) ||
                            __builtin_add_overflow(last, (n - 1) % run, &last) ||
                            __builtin_add_overflow(last, first, &last)
                      : __builtin_add_overflow(first, n - 1, &last);
  if (over)
    return IFAIL(w, "i[%d] (first) = %lld: the stream index of element %lld overflows (%lld elements, run %lld, "
                 "stride %lld)", INIT_TENSOR_I_FIRST, (long long)first, (long long)(n - 1), (long long)n,
                 (long long)run, (long long)stride);
  return 0;
}

static int check_instr(const vctx *c, const where *w) {
  const ddp_plan *p = c->p;
  const ddp_instr *in = w->in;
  const ddp_rank_plan *rp = &p->ranks[w->rank];
  if (in->opcode >= I_COUNT)
    return ddp_io_fail(c->err, c->errcap, c->path, "invalid: rank %lld %s instruction %u: opcode %u (have %d)",
                       (long long)w->rank, w->prog, w->index, in->opcode, I_COUNT);
  if (in->stream >= p->nstreams) return IFAIL(w, "stream %u, plan has %u streams", in->stream, p->nstreams);
  if (!in_range(in->name, -1, p->nstrings)) return IFAIL(w, "string id %d, plan has %u strings", in->name, p->nstrings);
  if (in->layer < -1) return IFAIL(w, "layer %d", in->layer);
  if (!in_range(in->kernel, -1, p->nkernels)) return IFAIL(w, "kernel %d, plan has %u kernels", in->kernel, p->nkernels);
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (in->dt[k] >= DT_COUNT) return IFAIL(w, "dtype dt%d = %u (have %d)", k, in->dt[k], DT_COUNT);
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (check_bufref(c, w, k)) return -1;
  int64_t i0 = in->i[EVENT_I_EVENT]; /* = TIMER_I_SLOT, RANGE_PUSH_I_KIND, INIT_TENSOR_I_KIND */
  switch ((ddp_opcode)in->opcode) {
  case I_KERNEL:
    if (in->op >= OP_COUNT) return IFAIL(w, "kernel op %u (have %d)", in->op, OP_COUNT);
    if (in->kernel >= 0 && p->kernels[in->kernel].op != in->op)
      return IFAIL(w, "op %s runs kernel %d of op %s", ddp_op_name(in->op), in->kernel,
                   ddp_op_name(p->kernels[in->kernel].op));
    break;
  case I_EVENT_RECORD:
  case I_EVENT_WAIT:
    if (!in_range(i0, 0, rp->nevents)) return IFAIL(w, "event %lld, rank has %u events", (long long)i0, rp->nevents);
    break;
  case I_TIMER:
    if (!in_range(i0, 0, rp->ntimers)) return IFAIL(w, "timer %lld, rank has %u timers", (long long)i0, rp->ntimers);
    break;
  case I_RANGE_PUSH:
    if (!in_range(i0, 0, RANGE_COUNT)) return IFAIL(w, "range kind %lld (have %d)", (long long)i0, RANGE_COUNT);
    break;
  case I_INIT_TENSOR:
    if (!in_range(i0, 0, INIT_COUNT)) return IFAIL(w, "init kind %lld (have %d)", (long long)i0, INIT_COUNT);
    if (check_init_index(c, w)) return -1;
    break;
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST: { /* counts and sizes: check_footprint, with the communicator's size */
    int64_t comm = in->i[COLL_I_COMM], n = ddp_plan_comm_size(p, comm);
    if (n < 0) return IFAIL(w, "comm %lld, plan has %u communicators besides the world", (long long)comm, p->ncomms);
    if (ddp_plan_comm_index(p, comm, w->rank) < 0) return IFAIL(w, "rank %lld is not a member of comm %lld",
                                                                (long long)w->rank, (long long)comm);
    if ((in->opcode == I_ALL_REDUCE || in->opcode == I_REDUCE_SCATTER) && in->i[COLL_I_REDOP] != REDOP_SUM &&
        in->i[COLL_I_REDOP] != REDOP_AVG)
      return IFAIL(w, "reduction %lld", (long long)in->i[COLL_I_REDOP]);
    if (in->opcode == I_BROADCAST && !in_range(in->i[COLL_I_ROOT], 0, n))
      return IFAIL(w, "root %lld, comm %lld has %lld ranks", (long long)in->i[COLL_I_ROOT], (long long)comm, (long long)n);
    if (in->opcode == I_ALL_TO_ALL || in->opcode == I_ALL_GATHER) {
      const int64_t path = in->i[COLL_I_PATH];
      if (!in_range(path, 0, COLL_PATH_COUNT)) return IFAIL(w, "path %lld (have %d)", (long long)path, COLL_PATH_COUNT);
      if (path == COLL_PATH_PEER_COPY && (comm != 0 || n < 2 || strcmp(w->prog, "step") != 0))
        return IFAIL(w, "%s", "copy-engine pulls (path 1) need the world's communicator of 2 or more ranks, in a step program");
    }
    break;
  }
  case I_PEER_BARRIER: /* count 0: check_footprint */
  case I_PEER_COPY:
    if (in->i[COLL_I_COMM] != 0) return IFAIL(w, "comm %lld (peer barriers and copies span the world: comm 0)",
                                              (long long)in->i[COLL_I_COMM]);
    break;
  case I_SEND:
  case I_RECV: /* counts and sizes: check_footprint; peers are world ranks */
    if (!in_range(in->i[COLL_I_PEER], 0, p->meta.world))
      return IFAIL(w, "peer rank %lld, world size %lld", (long long)in->i[COLL_I_PEER], (long long)p->meta.world);
    if (in->i[COLL_I_COMM] != 0) return IFAIL(w, "comm %lld (point-to-point names world ranks: comm 0)",
                                              (long long)in->i[COLL_I_COMM]);
    break;
  default: break;
  }
  return check_footprint(c, w) || check_spec(c, w) ? -1 : 0;
}

/* "invalid: meta loss_tensor 'x': <what>" */
__attribute__((format(printf, 3, 4))) static int mfail(const vctx *c, const char *field, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ddp_io_fail(c->err, c->errcap, c->path, "invalid: meta %s: %s", field, what);
}

/* Meta tensor `id` (-1: none when `optional`) of dtype dt (DT_NONE: any with a size) and exactly `bytes`
 * bytes (0: elems elements of its dtype). */
static int meta_tensor(const vctx *c, const char *field, int64_t id, int optional, int dt, uint64_t bytes,
                       uint64_t elems) {
  const ddp_plan *p = c->p;
  if (id < 0) return optional ? 0 : mfail(c, field, "names no tensor");
  const ddp_tensor *t = &p->tensors[id];
  if (dt != DT_NONE && t->dtype != dt)
    return mfail(c, field, "tensor %lld '%.80s' is %s, must be %s", (long long)id, t->name, ddp_dtype_name(t->dtype),
                 ddp_dtype_name(dt));
  uint64_t es = ddp_dtype_size(t->dtype);
  if (es == 0) return mfail(c, field, "tensor %lld '%.80s' has no element type", (long long)id, t->name);
  if (!bytes && __builtin_mul_overflow(elems, es, &bytes))
    return mfail(c, field, "%llu elements overflow", (unsigned long long)elems);
  if (t->bytes != bytes)
    return mfail(c, field, "tensor %lld '%.80s' has %llu bytes, its use needs %llu", (long long)id, t->name,
                 (unsigned long long)t->bytes, (unsigned long long)bytes);
  return 0;
}

/* The tensors the runtime reads or fills by meta field: the loss (one f32, read into a float), the
 * optimizer scalars (SCALAR_COUNT f32), the batch tensors (the data source's element count). */
static int check_meta_tensors(const vctx *c) {
  const ddp_meta *m = &c->p->meta;
  if (meta_tensor(c, "loss_tensor", m->loss_tensor, 1, DT_F32, sizeof(float), 0) ||
      meta_tensor(c, "scalars_tensor", m->scalars_tensor, 1, DT_F32, SCALAR_COUNT * sizeof(float), 0))
    return -1;
  if (m->tokens_tensor < 0 && m->targets_tensor < 0) return 0;
  uint64_t in = 0, out = 0;
  int dt = DT_NONE;
  if (m->batch_per_rank < 1) return mfail(c, "batch_per_rank", "%lld, must be >= 1", (long long)m->batch_per_rank);
  switch (m->data_kind) {
  case DATA_RANDOM_TOKENS:
  case DATA_TOKEN_FILE:
  case DATA_PATTERN_TOKENS:
    if (m->context < 1) return mfail(c, "context", "%lld, must be >= 1", (long long)m->context);
    if (__builtin_mul_overflow((uint64_t)m->batch_per_rank, (uint64_t)m->context, &in))
      return mfail(c, "batch_per_rank", "%lld x context %lld overflows", (long long)m->batch_per_rank,
                   (long long)m->context);
    out = in;
    dt = DT_I32;
    break;
  case DATA_RANDOM_DENSE:
    if (m->mlp_in < 1 || m->mlp_out < 1)
      return mfail(c, "mlp_in", "%lld and mlp_out %lld, must be >= 1", (long long)m->mlp_in, (long long)m->mlp_out);
    if (__builtin_mul_overflow((uint64_t)m->batch_per_rank, (uint64_t)m->mlp_in, &in) ||
        __builtin_mul_overflow((uint64_t)m->batch_per_rank, (uint64_t)m->mlp_out, &out))
      return mfail(c, "batch_per_rank", "%lld x mlp_in/mlp_out overflows", (long long)m->batch_per_rank);
    break;
  default: return mfail(c, "data_kind", "%lld (have %d)", (long long)m->data_kind, DATA_COUNT);
  }
  return meta_tensor(c, "tokens_tensor", m->tokens_tensor, 0, dt, 0, in) ||
                 meta_tensor(c, "targets_tensor", m->targets_tensor, 0, dt, 0, out)
             ? -1
             : 0;
}

static int check_program(const vctx *c, int64_t rank, const char *name, const ddp_program *prog) {
  for (uint32_t i = 0; i < prog->n; i++) {
    where w = {rank, name, i, &prog->v[i]};
    if (check_instr(c, &w)) return -1;
  }
  return 0;
}

int ddp_plan_validate(const ddp_plan *p, const char *path, char *err, size_t errcap) {
  vctx c = {p, path, err, errcap};
  if (p->meta.world < 1 || !p->ranks)
    return ddp_io_fail(err, errcap, path, "invalid: world size %lld", (long long)p->meta.world);
  if (check_meta(&c) || check_tables(&c) || check_comms(&c) || check_meta_tensors(&c)) return -1;
  for (int64_t r = 0; r < p->meta.world; r++)
    if (check_program(&c, r, "init", &p->ranks[r].init) || check_program(&c, r, "step", &p->ranks[r].step))
      return -1;
  return ddp_check_collectives_match(&c, 0) || ddp_check_collectives_match(&c, 1) || ddp_check_p2p(&c, 0) ||
                 ddp_check_p2p(&c, 1)
             ? -1
             : 0;
}

/* "sm_90a" -> 9, 0, 'a'; 0 when it is not of that form. */
static int parse_arch(const char *s, int *major, int *minor, char *suffix) {
  if (!s || strncmp(s, "sm_", 3) != 0) return 0;
  const char *d = s + 3;
  size_t n = strspn(d, "0123456789");
  if (n < 2 || n > 4 || (d[n] && (d[n + 1] || (d[n] != 'a' && d[n] != 'f')))) return 0;
  int v = atoi(d);
  *major = v / 10;
  *minor = v % 10;
  *suffix = d[n];
  return 1;
}

/* Can CUBIN built for `plan` run on a `dev` GPU? Same major and no older minor; arch-specific ('a')
 * CUBIN only on exactly its arch. Unparseable names must match exactly. */
static int arch_runs(const char *plan, const char *dev) {
  int pm, pn, dm, dn;
  char ps, ds;
  if (!parse_arch(plan, &pm, &pn, &ps) || !parse_arch(dev, &dm, &dn, &ds)) return strcmp(plan, dev) == 0;
  if (pm != dm) return 0;
  return ps == 'a' ? dn == pn : dn >= pn;
}

int ddp_plan_check_launch(const ddp_plan *p, const char *device_arch, int world, char *err, size_t errcap) {
  if (world > 0 && p->meta.world != world) {
    snprintf(err, errcap, "compiled for %lld rank%s, launched with %d", (long long)p->meta.world,
             p->meta.world == 1 ? "" : "s", world);
    return -1;
  }
  const char *arch = p->meta.arch;
  if (device_arch && p->nmodules > 0 && arch && *arch && !arch_runs(arch, device_arch)) {
    snprintf(err, errcap, "compiled for %s, this GPU is %s", arch, device_arch);
    return -1;
  }
  return 0;
}

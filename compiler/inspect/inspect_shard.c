/* compiler/inspect/inspect_shard.c: the sharding analysis of `ddpc inspect` (inspect_shard.h), from the plan's
 * own data only, so it reads whatever the compiler emits:
 *   level     the parallel summary's "shard=<level>" (meta.parallel); without one, the tensors: gathered
 *             parameter buffers (ddp_gathered_params) or flat.params.copy.shard: zero3;
 *             flat.grads.shard or transient TF_GRAD activations: zero2; flat.params.shard, TF_PIECE or
 *             TF_SHAPE_ONLY tensors: zero1 (not under tensor parallelism, whose pieces are the tensor ranks',
 *             inspect_tensor.c, nor in a pipeline, whose pieces are its stages');
 *   units     the bucket table's groups: members, elements, bytes in the gradient and compute dtypes, one
 *             rank's slice, and the unit's gathered buffer (unit<k>.gathered);
 *   gathers   every ALL_GATHER of rank 0's step program in program order: the unit (the number after "unit"
 *             or "bucket" in its name, else in its recv buffer's), its stream, and the first compute-stream
 *             instruction after it that names a tensor overlapping the bytes it writes (world x count
 *             elements of its recv buffer; the point the plan must wait for it), else the first before it
 *             (in the next step: parameters gathered after the update);
 *   resident  over rank 0's step, the most units whose gathered buffers are live at one instruction (in all,
 *             before the FORWARD_END timer and from it on) and the most bytes of them (liveness: first_use..
 *             last_use), and the arena range the planner gave them; with the summary's "prefetch=F/B" and
 *             "reshard_after_forward=" (the FSDP options) when it has them;
 *   formula   the seeds' per-rank model-state formula for the level (DDP (2+2+12)Ψ, ZeRO-1 (2+2+12/N)Ψ,
 *             ZeRO-2 (2+(2+12)/N)Ψ, ZeRO-3 (2+2+12)Ψ/N) with this plan's byte widths: compute copy = the
 *             activation dtype's size (0 when the plan keeps no low-precision copy), gradient = the gradient
 *             dtype's size (0 without gradients), master, m and v = their tensors' dtype sizes (0 when absent),
 *             Ψ = meta.n_trainable. */
#include "inspect_shard.h"
#include "access.h"
#include "err.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The number after the last "unit" or "bucket" in s (not inside a longer word), -1 when none. */
static int name_unit(const char *s, const char **kind) {
  static const char *const words[] = {"unit", "bucket"};
  int unit = -1;
  for (const char *q = s; q && *q; q++) {
    if (q != s && isalpha((unsigned char)q[-1])) continue;
    for (int w = 0; w < 2; w++) {
      size_t n = strlen(words[w]);
      if (strncmp(q, words[w], n) != 0 || !isdigit((unsigned char)q[n])) continue;
      long v = strtol(q + n, NULL, 10);
      if (v >= 0 && v < 1000000) {
        unit = (int)v;
        if (kind) *kind = words[w];
      }
    }
  }
  return unit;
}

static int ends_bwd(const char *s) { return s && strstr(s, ".bwd") != NULL; }

static int level_from_parallel(const char *par) {
  const char *s = par ? strstr(par, "shard=") : NULL;
  if (!s) return -1;
  s += 6;
  size_t n = strcspn(s, " ,;)\n");
  for (int k = 0; k < SHARD_COUNT; k++)
    if (strlen(ddp_shard_names[k]) == n && strncmp(s, ddp_shard_names[k], n) == 0) return k;
  return -1;
}

static int level_from_tensors(const ddp_plan *p, const unsigned char *gathered) {
  int level = SHARD_NONE;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    const char *name = tt->name ? tt->name : "";
    int l = SHARD_NONE;
    if (gathered[t] || strcmp(name, "flat.params.copy.shard") == 0) l = SHARD_ZERO3;
    else if (strcmp(name, "flat.grads.shard") == 0 || (ddp_act_transient(p, t) && (tt->flags & TF_GRAD)))
      l = SHARD_ZERO2;
    else if (strcmp(name, "flat.params.shard") == 0 || (tt->flags & (TF_PIECE | TF_SHAPE_ONLY))) l = SHARD_ZERO1;
    if (l > level) level = l;
  }
  return level;
}

/* The dtype size of the first tensor with `flag` (owning memory or a view, not shape-only), 0 when none. */
static int flag_width(const ddp_plan *p, uint32_t flag) {
  for (uint32_t t = 0; t < p->ntensors; t++)
    if ((p->tensors[t].flags & flag) && !(p->tensors[t].flags & TF_SHAPE_ONLY))
      return (int)ddp_dtype_size(p->tensors[t].dtype);
  return 0;
}

static void formula(const ddp_plan *p, ddp_shard_info *si) {
  int has_copy = flag_width(p, TF_PARAM_COPY) > 0;
  si->c = has_copy ? (int)ddp_dtype_size((int)p->meta.act_dtype) : 0;
  si->g = flag_width(p, TF_GRAD) ? (int)ddp_dtype_size((int)p->meta.grad_dtype) : 0;
  si->master = flag_width(p, TF_PARAM);
  si->m = flag_width(p, TF_OPT_M);
  si->v = flag_width(p, TF_OPT_V);
  si->psi = p->meta.n_trainable;
  int k = si->master + si->m + si->v;
  /* a pipeline's stages and the tensor ranks split the model (each rank about Ψ / (stages x tensor)); the
   * ZeRO levels shard over the data ranks, world / (stages x tensor) */
  const int64_t S = p->meta.pipe_stages > 0 ? p->meta.pipe_stages : 1, T = p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1;
  const int64_t split = S * T;
  int64_t n = si->world > 0 ? si->world / split : 1;
  if (n < 1) n = 1;
  double psi = (double)si->psi / (double)split;
  switch (si->level) {
  case SHARD_OPTIMIZER:
  case SHARD_ZERO1:
    snprintf(si->formula_name, sizeof si->formula_name, "ZeRO-1");
    snprintf(si->formula_seed, sizeof si->formula_seed, "(2+2+12/N)Ψ");
    snprintf(si->formula, sizeof si->formula, "(%d+%d+%d/%lld)Ψ", si->c, si->g, k, (long long)n);
    si->formula_bytes = (si->c + si->g + (double)k / (double)n) * psi;
    break;
  case SHARD_ZERO2:
    snprintf(si->formula_name, sizeof si->formula_name, "ZeRO-2");
    snprintf(si->formula_seed, sizeof si->formula_seed, "(2+(2+12)/N)Ψ");
    snprintf(si->formula, sizeof si->formula, "(%d+(%d+%d)/%lld)Ψ", si->c, si->g, k, (long long)n);
    si->formula_bytes = (si->c + (double)(si->g + k) / (double)n) * psi;
    break;
  case SHARD_ZERO3:
    snprintf(si->formula_name, sizeof si->formula_name, "ZeRO-3");
    snprintf(si->formula_seed, sizeof si->formula_seed, "(2+2+12)Ψ/N");
    snprintf(si->formula, sizeof si->formula, "(%d+%d+%d)Ψ/%lld", si->c, si->g, k, (long long)n);
    si->formula_bytes = (double)(si->c + si->g + k) * psi / (double)n;
    break;
  default:
    snprintf(si->formula_name, sizeof si->formula_name, split > 1 ? "model split" : "DDP");
    snprintf(si->formula_seed, sizeof si->formula_seed, split > 1 ? "(2+2+12)Ψ/(stages x tensor)" : "(2+2+12)Ψ");
    if (split > 1) snprintf(si->formula, sizeof si->formula, "(%d+%d+%d)Ψ/%lld", si->c, si->g, k, (long long)split);
    else snprintf(si->formula, sizeof si->formula, "(%d+%d+%d)Ψ", si->c, si->g, k);
    si->formula_bytes = (double)(si->c + si->g + k) * psi;
    break;
  }
  if (split > 1 && si->level != SHARD_NONE) { /* say which Ψ and N the ZeRO formula took */
    size_t len = strlen(si->formula);
    snprintf(si->formula + len, sizeof si->formula - len, " with Ψ/%lld a rank and N = %lld data ranks",
             (long long)split, (long long)n);
  }
}

static void units(const ddp_plan *p, ddp_shard_info *si) {
  si->nunits = p->nbuckets;
  si->units = ddp_xcalloc(p->nbuckets + 1u, sizeof *si->units);
  size_t act = ddp_dtype_size((int)p->meta.act_dtype);
  for (uint32_t b = 0; b < p->nbuckets; b++) {
    ddp_shard_unit *u = &si->units[b];
    const ddp_bucket *bk = &p->buckets[b];
    u->nparams = bk->nparams;
    for (uint32_t j = 0; j < bk->nparams; j++)
      if (bk->params[j] >= 0 && (uint32_t)bk->params[j] < p->ntensors) u->elements += ddp_tensor_numel(&p->tensors[bk->params[j]]);
    u->grad_bytes = bk->bytes;
    u->compute_bytes = u->elements * act;
    u->shard_bytes = si->world > 0 ? bk->bytes / (uint64_t)si->world : bk->bytes;
    u->gathered = -1;
  }
  /* a unit's gathered buffer: "unit<k>.gathered" by name, else the first gathered buffer naming unit k */
  for (uint32_t t = 0; t < p->ntensors; t++) {
    if (!si->gathered[t] || !p->tensors[t].name) continue;
    const char *kind = "";
    int k = name_unit(p->tensors[t].name, &kind);
    if (k < 0 || (uint32_t)k >= si->nunits || strcmp(kind, "unit") != 0) continue;
    char want[48];
    snprintf(want, sizeof want, "unit%d.gathered", k);
    if (si->units[k].gathered < 0 || strcmp(p->tensors[t].name, want) == 0) si->units[k].gathered = (int32_t)t;
  }
}

/* The first FORWARD_END and BACKWARD_END timers of a program (-1: none). */
static void phase_marks(const ddp_program *prog, int64_t *fwd, int64_t *bwd) {
  *fwd = *bwd = -1;
  for (uint32_t i = 0; i < prog->n; i++) {
    if (prog->v[i].opcode != I_TIMER) continue;
    int64_t role = prog->v[i].i[TIMER_I_ROLE];
    if (role == TIMER_FORWARD_END && *fwd < 0) *fwd = i;
    if (role == TIMER_BACKWARD_END && *bwd < 0) *bwd = i;
  }
}

static const char *phase_of(const ddp_program *prog, int64_t k) {
  int64_t fwd, bwd;
  phase_marks(prog, &fwd, &bwd);
  if (k < 0 || (fwd < 0 && bwd < 0)) return "-";
  if (fwd >= 0 && k < fwd) return "forward";
  if (bwd >= 0 && k < bwd) return "backward";
  return "optimizer";
}

/* Byte offset of tensor t inside its root. */
static uint64_t in_root(const ddp_plan *p, int32_t t) {
  uint64_t off = 0;
  for (int hops = 0; t >= 0 && p->tensors[t].base >= 0 && hops < 64; hops++) off += p->tensors[t].view, t = p->tensors[t].base;
  return off;
}

/* Does `in` name a tensor of `root` whose bytes (from its operand's view to the tensor's end) meet
 * [lo, hi) of the root? */
static int uses_range(const ddp_plan *p, const ddp_instr *in, int32_t root, uint64_t lo, uint64_t hi) {
  for (int s = 0; s < DDP_MAX_PTRS; s++) {
    int32_t t = in->p[s].tensor;
    if (t < 0 || (uint32_t)t >= p->ntensors || ddp_tensor_root(p, t) != root) continue;
    uint64_t b = in_root(p, t), a = b + in->p[s].view, e = b + p->tensors[t].bytes;
    if (a < hi && lo < e) return 1;
  }
  return 0;
}

/* The first instruction at or after `from` (wrapping to the step's start once; *wrapped set then) that
 * names bytes [lo, hi) of `root` on the compute stream. Passing through one kernel of another stream that
 * reads them and writes another tensor (a cast of gathered fp32 masters), the search goes on with that
 * tensor, and *via is that kernel. -1 when none. */
static int64_t first_compute_use(const ddp_plan *p, const ddp_program *prog, uint32_t from, int32_t root, uint64_t lo,
                                 uint64_t hi, int *wrapped, int64_t *via) {
  *wrapped = 0;
  *via = -1;
  for (uint32_t step = 0; step < prog->n; step++) {
    uint32_t j = (from + step) % prog->n;
    if (from + step >= prog->n) *wrapped = 1;
    const ddp_instr *in = &prog->v[j];
    if (!uses_range(p, in, root, lo, hi)) continue;
    if (in->stream == STREAM_COMPUTE) return j;
    if (in->opcode != I_KERNEL || *via >= 0) continue;
    uint32_t wm = ddp_op_write_mask(in->op);
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
      int32_t t = in->p[sl].tensor;
      if (!(wm & (1u << sl)) || t < 0 || (uint32_t)t >= p->ntensors || ddp_tensor_root(p, t) == root) continue;
      *via = j;
      root = ddp_tensor_root(p, t);
      lo = in_root(p, t) + in->p[sl].view;
      hi = in_root(p, t) + p->tensors[t].bytes;
      break;
    }
  }
  return -1;
}

static void gathers(const ddp_plan *p, ddp_shard_info *si) {
  const ddp_program *prog = &p->ranks[0].step;
  uint32_t n = 0;
  for (uint32_t k = 0; k < prog->n; k++) n += prog->v[k].opcode == I_ALL_GATHER;
  si->gathers = ddp_xcalloc(n + 1u, sizeof *si->gathers);
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode != I_ALL_GATHER) continue;
    ddp_shard_gather *g = &si->gathers[si->ngathers++];
    g->index = k;
    g->stream = in->stream;
    int32_t rt = in->p[COLL_P_RECV].tensor;
    g->recv = rt >= 0 && (uint32_t)rt < p->ntensors ? ddp_tensor_root(p, rt) : -1;
    const char *name = in->name >= 0 ? ddp_plan_string(p, in->name) : "";
    const char *rname = g->recv >= 0 && p->tensors[g->recv].name ? p->tensors[g->recv].name : "";
    g->kind = "";
    g->unit = name_unit(name, &g->kind);
    if (g->unit < 0) g->unit = name_unit(rname, &g->kind);
    g->bwd = ends_bwd(name) || ends_bwd(rname);
    g->consumer = g->via = -1;
    if (g->recv >= 0) {
      /* the bytes it writes: world x count elements from its recv operand (the whole tensor when the dtype
       * has no size) */
      uint64_t lo = in_root(p, rt) + in->p[COLL_P_RECV].view, esz = ddp_dtype_size(in->dt[COLL_P_SEND]);
      uint64_t hi = esz && in->i[COLL_I_COUNT] > 0 ? lo + (uint64_t)in->i[COLL_I_COUNT] * (uint64_t)si->world * esz
                                                  : in_root(p, rt) + p->tensors[rt].bytes;
      g->consumer = first_compute_use(p, prog, k + 1, g->recv, lo, hi, &g->next_step, &g->via);
      if (g->consumer < 0) g->next_step = 0;
    }
    g->phase = phase_of(prog, g->consumer);
  }
}

/* Per instruction of the compute stream, the number of layer-range boundaries (RANGE_PUSH of kind layer
 * and the RANGE_POP closing one) up to it: instructions inside one layer range share a value. */
static int32_t *layer_segments(const ddp_program *prog, int *any) {
  int32_t *seg = ddp_xcalloc(prog->n + 1u, sizeof *seg);
  int64_t *stack = ddp_xcalloc(prog->n + 1u, sizeof *stack);
  uint32_t depth = 0;
  int32_t count = 0;
  *any = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->stream == STREAM_COMPUTE && in->opcode == I_RANGE_PUSH) {
      stack[depth++] = in->i[RANGE_PUSH_I_KIND];
      if (in->i[RANGE_PUSH_I_KIND] == RANGE_LAYER) count++, *any = 1;
    } else if (in->stream == STREAM_COMPUTE && in->opcode == I_RANGE_POP && depth > 0) {
      if (stack[--depth] == RANGE_LAYER) count++;
    }
    seg[k] = count;
  }
  free(stack);
  return seg;
}

/* Which FSDP unit each group belongs to (unit_of[g], -1 unknown), and how si->units_how says it is known:
 * with one dtype of gathered buffers every group is a unit; with two (a unit's compute-dtype and fp32
 * parts are separate groups) and one unit per block (the summary's "units=per-block"), the groups whose
 * forward gathers are first used inside the same layer range (or between the same ones: embedding, head)
 * are one unit; otherwise units are unknown and residency counts groups. */
static int *group_units(const ddp_plan *p, ddp_shard_info *si, int ngroups) {
  int *unit_of = ddp_xmalloc(((size_t)ngroups + 1u) * sizeof *unit_of);
  for (int g = 0; g <= ngroups; g++) unit_of[g] = g;
  int dt = -1, split = 0;
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (si->gathered[t]) {
      if (dt >= 0 && dt != p->tensors[t].dtype) split = 1;
      dt = p->tensors[t].dtype;
    }
  si->units_how = "groups";
  if (!split) return unit_of;
  const ddp_program *prog = &p->ranks[0].step;
  int any = 0;
  int32_t *seg = layer_segments(prog, &any);
  int64_t fwd_end, bwd_end;
  phase_marks(prog, &fwd_end, &bwd_end);
  if (!any || fwd_end < 0 || !p->meta.parallel || !strstr(p->meta.parallel, "units=per-block")) {
    si->units_how = "unknown";
    free(seg);
    return unit_of;
  }
  si->units_how = "layer ranges";
  for (int g = 0; g <= ngroups; g++) unit_of[g] = -1;
  for (uint32_t k = 0; k < si->ngathers; k++) {
    const ddp_shard_gather *ga = &si->gathers[k];
    if (ga->unit < 0 || ga->unit >= ngroups || ga->bwd || ga->consumer < 0 || ga->next_step || ga->consumer >= fwd_end)
      continue;
    unit_of[ga->unit] = seg[ga->consumer];
  }
  /* dense unit numbers in order of first appearance (segments are 0 .. prog->n); a group never gathered for
   * the forward is its own unit */
  int *dense = ddp_xmalloc(((size_t)prog->n + 2u) * sizeof *dense);
  for (size_t i = 0; i < (size_t)prog->n + 2u; i++) dense[i] = -1;
  int nunits = 0;
  for (int g = 0; g < ngroups; g++) {
    int sg = unit_of[g];
    if (sg < 0 || (uint32_t)sg > prog->n) unit_of[g] = nunits++;
    else unit_of[g] = dense[sg] >= 0 ? dense[sg] : (dense[sg] = nunits++);
  }
  free(dense);
  free(seg);
  return unit_of;
}

/* Most units (and groups) with a live gathered buffer at one instruction, and most live gathered bytes.
 * Each buffer counts for the group its name gives (a group's forward and backward buffers are one group),
 * or for itself; groups map to units by group_units. */
static void resident(const ddp_plan *p, ddp_shard_info *si) {
  si->max_resident_at = si->peak_gathered_at = -1;
  uint32_t n = p->ranks[0].step.n, ng = 0;
  int32_t *ids = ddp_xcalloc(p->ntensors + 1u, sizeof *ids);
  int maxg = -1;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    if (!si->gathered[t]) continue;
    const ddp_tensor *tt = &p->tensors[t];
    si->ngathered++;
    if (tt->first_use < 0) continue;
    ids[ng++] = (int32_t)t;
    int g = name_unit(tt->name, NULL);
    if (g > maxg) maxg = g;
    uint64_t lo = tt->offset, hi = tt->offset + tt->bytes;
    if (ng == 1 || lo < si->gathered_lo) si->gathered_lo = lo;
    if (ng == 1 || hi > si->gathered_hi) si->gathered_hi = hi;
  }
  int *unit_of = group_units(p, si, maxg + 1);
  size_t nkeys = (size_t)maxg + 2u + ng;
  int *gkey = ddp_xcalloc(ng + 1u, sizeof *gkey), *ukey = ddp_xcalloc(ng + 1u, sizeof *ukey);
  for (uint32_t i = 0; i < ng; i++) {
    int g = name_unit(p->tensors[ids[i]].name, NULL);
    gkey[i] = g >= 0 ? g : maxg + 1 + (int)i;
    ukey[i] = g >= 0 ? unit_of[g] : maxg + 1 + (int)i;
    if (ukey[i] < 0 || (size_t)ukey[i] >= nkeys) ukey[i] = maxg + 1 + (int)i;
  }
  int64_t fwd_end, bwd_end;
  phase_marks(&p->ranks[0].step, &fwd_end, &bwd_end);
  si->max_resident_fwd = si->max_resident_bwd = fwd_end < 0 ? -1 : 0;
  int64_t *gstamp = ddp_xmalloc(nkeys * sizeof *gstamp), *ustamp = ddp_xmalloc(nkeys * sizeof *ustamp);
  for (size_t i = 0; i < nkeys; i++) gstamp[i] = ustamp[i] = -1;
  for (uint32_t k = 0; k < n && ng; k++) {
    int units = 0, groups = 0;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < ng; i++) {
      const ddp_tensor *tt = &p->tensors[ids[i]];
      if ((uint32_t)tt->first_use > k || tt->last_use < (int32_t)k) continue;
      bytes += tt->bytes;
      if (gstamp[gkey[i]] != (int64_t)k) gstamp[gkey[i]] = k, groups++;
      if (ustamp[ukey[i]] != (int64_t)k) ustamp[ukey[i]] = k, units++;
    }
    if (groups > si->max_resident_groups) si->max_resident_groups = groups;
    if (units > si->max_resident) si->max_resident = units, si->max_resident_at = k;
    int *phase = fwd_end < 0 ? NULL : (int64_t)k < fwd_end ? &si->max_resident_fwd : &si->max_resident_bwd;
    if (phase && units > *phase) *phase = units;
    if (bytes > si->peak_gathered_bytes) si->peak_gathered_bytes = bytes, si->peak_gathered_at = k;
  }
  free(gstamp);
  free(ustamp);
  free(gkey);
  free(ukey);
  free(unit_of);
  free(ids);
}

/* The integer after `key` in the parallel summary, and after its '/' into *second; -1 when absent. */
static int summary_int(const char *par, const char *key, int *second) {
  const char *s = par ? strstr(par, key) : NULL;
  if (second) *second = -1;
  if (!s || !isdigit((unsigned char)s[strlen(key)])) return -1;
  char *end;
  long v = strtol(s + strlen(key), &end, 10);
  if (second && *end == '/' && isdigit((unsigned char)end[1])) {
    long w = strtol(end + 1, NULL, 10);
    *second = w >= 0 && w < 1000000 ? (int)w : -1;
  }
  return v >= 0 && v < 1000000 ? (int)v : -1;
}

void ddp_shard_analyse(const ddp_plan *p, ddp_shard_info *si) {
  memset(si, 0, sizeof *si);
  si->gathered = ddp_gathered_params(p);
  si->world = p->meta.world;
  si->max_resident_at = si->peak_gathered_at = -1;
  si->max_resident_fwd = si->max_resident_bwd = -1;
  si->units_how = "groups";
  si->prefetch_fwd = summary_int(p->meta.parallel, "prefetch=", &si->prefetch_bwd);
  if (si->prefetch_fwd >= 0 && si->prefetch_bwd < 0) si->prefetch_bwd = si->prefetch_fwd; /* "prefetch=N" */
  const char *rs = p->meta.parallel ? strstr(p->meta.parallel, "reshard_after_forward=") : NULL;
  si->reshard = !rs ? -1 : strncmp(rs + 22, "true", 4) == 0 ? 1 : strncmp(rs + 22, "false", 5) == 0 ? 0 : -1;
  int l = level_from_parallel(p->meta.parallel);
  si->level_from = "meta.parallel";
  /* a TP plan's pieces are tensor ranks', a pipeline's its stages': neither shards over data ranks */
  if ((l < 0 || l == SHARD_NONE) && p->meta.tensor_parallel <= 1 && p->meta.pipe_stages <= 0) {
    int t = level_from_tensors(p, si->gathered);
    if (t != SHARD_NONE) l = t, si->level_from = "tensors";
  }
  si->level = l < 0 ? SHARD_NONE : l;
  formula(p, si);
  units(p, si);
  if (!p->ranks || p->meta.world < 1) {
    si->gathers = ddp_xcalloc(1, sizeof *si->gathers);
    return;
  }
  gathers(p, si);
  resident(p, si);
}

void ddp_shard_info_free(ddp_shard_info *si) {
  free(si->gathered);
  si->gathered = NULL;
  free(si->units);
  free(si->gathers);
  si->units = NULL;
  si->gathers = NULL;
}

void ddp_rank_memory_get(const ddp_plan *p, int rank, ddp_rank_memory *rm) {
  memset(rm, 0, sizeof *rm);
  ddp_memory_classes(p, rank, rm->cls);
  ddp_act_peak pk;
  ddp_act_peak_find(p, &pk);
  uint64_t prm = rm->cls[MEM_PARAMS], grd = rm->cls[MEM_GRADS];
  rm->params_gathered = pk.params < prm ? pk.params : prm;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    if (tt->base < 0 && tt->arena == ARENA_PARAM && (tt->flags & TF_PARAM_COPY) && !(tt->flags & TF_SHAPE_ONLY))
      rm->params_copies += tt->bytes;
  }
  if (rm->params_copies > prm - rm->params_gathered) rm->params_copies = prm - rm->params_gathered;
  rm->params_masters = prm - rm->params_gathered - rm->params_copies;
  rm->grads_transient = pk.grads < grd ? pk.grads : grd;
  rm->grads_persistent = grd - rm->grads_transient;
  for (int c = 0; c < MEM_COUNT; c++) rm->total += rm->cls[c];
  rm->model_states = rm->cls[MEM_PARAMS] + rm->cls[MEM_GRADS] + rm->cls[MEM_OPT];
}

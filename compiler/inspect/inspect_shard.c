/* compiler/inspect/inspect_shard.c: the sharding analysis of `ddpc inspect` (inspect_shard.h), from the plan's
 * own data only, so it reads whatever the compiler emits:
 *   level     the parallel summary's "shard=<level>" (meta.parallel); without one, the tensors: gathered
 *             parameter buffers (transient TF_PARAM_COPY activations) or flat.params.copy.shard: zero3;
 *             flat.grads.shard or transient TF_GRAD activations: zero2; flat.params.shard, TF_PIECE or
 *             TF_SHAPE_ONLY tensors: zero1;
 *   units     the bucket table's groups: members, elements, bytes in the gradient and compute dtypes, one
 *             rank's slice, and the unit's gathered buffer (unit<k>.gathered);
 *   gathers   every ALL_GATHER of rank 0's step program in program order: the unit (the number after "unit"
 *             or "bucket" in its name, else in its recv buffer's), its stream, and the first compute-stream
 *             instruction after it that uses the buffer it writes (the point the plan must wait for it);
 *   resident  over rank 0's step, the most units whose gathered buffers are live at one instruction and the
 *             most bytes of them (liveness: first_use..last_use), and the arena range the planner gave them;
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

static int is_gathered(const ddp_plan *p, uint32_t t) {
  return ddp_act_transient(p, t) && (p->tensors[t].flags & TF_PARAM_COPY);
}

static int level_from_tensors(const ddp_plan *p) {
  int level = SHARD_NONE;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *tt = &p->tensors[t];
    const char *name = tt->name ? tt->name : "";
    int l = SHARD_NONE;
    if (is_gathered(p, t) || strcmp(name, "flat.params.copy.shard") == 0) l = SHARD_ZERO3;
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
  int64_t n = si->world > 0 ? si->world : 1;
  double psi = (double)si->psi;
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
    snprintf(si->formula_name, sizeof si->formula_name, "DDP");
    snprintf(si->formula_seed, sizeof si->formula_seed, "(2+2+12)Ψ");
    snprintf(si->formula, sizeof si->formula, "(%d+%d+%d)Ψ", si->c, si->g, k);
    si->formula_bytes = (double)(si->c + si->g + k) * psi;
    break;
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
    if (!is_gathered(p, t) || !p->tensors[t].name) continue;
    const char *kind = "";
    int k = name_unit(p->tensors[t].name, &kind);
    if (k < 0 || (uint32_t)k >= si->nunits || strcmp(kind, "unit") != 0) continue;
    char want[48];
    snprintf(want, sizeof want, "unit%d.gathered", k);
    if (si->units[k].gathered < 0 || strcmp(p->tensors[t].name, want) == 0) si->units[k].gathered = (int32_t)t;
  }
}

static const char *phase_of(const ddp_program *prog, int64_t k) {
  int64_t fwd = -1, bwd = -1;
  for (uint32_t i = 0; i < prog->n; i++) {
    if (prog->v[i].opcode != I_TIMER) continue;
    int64_t role = prog->v[i].i[TIMER_I_ROLE];
    if (role == TIMER_FORWARD_END && fwd < 0) fwd = i;
    if (role == TIMER_BACKWARD_END && bwd < 0) bwd = i;
  }
  if (k < 0 || (fwd < 0 && bwd < 0)) return "-";
  if (fwd >= 0 && k < fwd) return "forward";
  if (bwd >= 0 && k < bwd) return "backward";
  return "optimizer";
}

static int uses_root(const ddp_plan *p, const ddp_instr *in, int32_t root) {
  for (int s = 0; s < DDP_MAX_PTRS; s++) {
    int32_t t = in->p[s].tensor;
    if (t >= 0 && (uint32_t)t < p->ntensors && ddp_tensor_root(p, t) == root) return 1;
  }
  return 0;
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
    g->consumer = -1;
    for (uint32_t j = k + 1; g->recv >= 0 && j < prog->n && g->consumer < 0; j++)
      if (prog->v[j].stream == STREAM_COMPUTE && uses_root(p, &prog->v[j], g->recv)) g->consumer = j;
    for (uint32_t j = 0; g->recv >= 0 && j < k && g->consumer < 0; j++)
      if (prog->v[j].stream == STREAM_COMPUTE && uses_root(p, &prog->v[j], g->recv)) g->consumer = j, g->next_step = 1;
    g->phase = phase_of(prog, g->consumer);
  }
}

/* Most units with a live gathered buffer at one instruction, and most live gathered bytes. Each buffer
 * counts for the unit its name gives (a unit's forward and backward buffers are one unit), or for itself. */
static void resident(const ddp_plan *p, ddp_shard_info *si) {
  si->max_resident_at = si->peak_gathered_at = -1;
  uint32_t n = p->ranks[0].step.n, ng = 0;
  int32_t *ids = ddp_xcalloc(p->ntensors + 1u, sizeof *ids);
  int maxu = -1;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    if (!is_gathered(p, t)) continue;
    const ddp_tensor *tt = &p->tensors[t];
    si->ngathered++;
    if (tt->first_use < 0) continue;
    ids[ng++] = (int32_t)t;
    int u = name_unit(tt->name, NULL);
    if (u > maxu) maxu = u;
    uint64_t lo = tt->offset, hi = tt->offset + tt->bytes;
    if (ng == 1 || lo < si->gathered_lo) si->gathered_lo = lo;
    if (ng == 1 || hi > si->gathered_hi) si->gathered_hi = hi;
  }
  int *key = ddp_xcalloc(ng + 1u, sizeof *key);
  for (uint32_t i = 0; i < ng; i++) {
    int u = name_unit(p->tensors[ids[i]].name, NULL);
    key[i] = u >= 0 ? u : maxu + 1 + (int)i;
  }
  int64_t *stamp = ddp_xmalloc(((size_t)maxu + 2u + ng) * sizeof *stamp);
  for (size_t i = 0; i < (size_t)maxu + 2u + ng; i++) stamp[i] = -1;
  for (uint32_t k = 0; k < n && ng; k++) {
    int count = 0;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < ng; i++) {
      const ddp_tensor *tt = &p->tensors[ids[i]];
      if ((uint32_t)tt->first_use > k || tt->last_use < (int32_t)k) continue;
      bytes += tt->bytes;
      if (stamp[key[i]] != (int64_t)k) stamp[key[i]] = k, count++;
    }
    if (count > si->max_resident) si->max_resident = count, si->max_resident_at = k;
    if (bytes > si->peak_gathered_bytes) si->peak_gathered_bytes = bytes, si->peak_gathered_at = k;
  }
  free(stamp);
  free(key);
  free(ids);
}

void ddp_shard_analyse(const ddp_plan *p, ddp_shard_info *si) {
  memset(si, 0, sizeof *si);
  si->world = p->meta.world;
  si->max_resident_at = si->peak_gathered_at = -1;
  int l = level_from_parallel(p->meta.parallel);
  si->level_from = "meta.parallel";
  if (l < 0 || l == SHARD_NONE) {
    int t = level_from_tensors(p);
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

/* compiler/layout/shard.c: the layout of the ZeRO levels (shard = zero1, zero2, zero3). The trainable units,
 * in gradient-ready order, are cut into groups: the buckets (zero1/zero2; zero3 with bucket_mb or a units
 * function) or, by default under zero3, one group per transformer block plus the embedding and the head.
 * Each group is then split by how the step reads its units: through the compute copies (GEMM weights,
 * bf16 under bf16 precision) or as fp32 masters (norm gains, biases, the embedding table), so that every
 * group has one compute dtype. A group covers flat elements [lo, lo + len), len padded to world x
 * DDP_FLAT_ALIGN, and rank r owns slice r of every group: its shard is the concatenation of its slices,
 * shard offset lo / world. What exists per rank:
 *   flat.params.shard        fp32 masters of the rank's slices (the optimizer's parameters)
 *   flat.exp_avg(_sq)        AdamW moments of the slices
 *   flat.grads.shard         zero2/zero3: the reduce-scattered gradients of the slices
 *   flat.grads               zero1: the full gradients (persistent), unit gradients are views of it; the
 *                            reduce-scatter is in place (the rank's slice of each group gets the sum)
 *   bucket<g>.grads          zero2/zero3: group g's full gradients, an activation live until its
 *                            reduce-scatter
 *   zero.received            nccl.reduce_scatter = "alltoall": the all-to-all's receive buffer, the largest
 *                            group's gradients (W chunks of its slice), reused group after group on the
 *                            communication stream
 *   flat.params.copy         zero1/zero2: full compute-dtype parameters of the copy-read groups
 *   flat.params              zero1/zero2: full fp32 parameters of the master-read groups
 *   unit<g>.gathered(.bwd)   zero3: group g's gathered parameters (activations: between the all-gather
 *                            and the last use; .bwd is the backward's own gather when resharding)
 *   flat.params.copy.shard   zero3 under bf16: the compute-dtype copy of the rank's slices (gather source)
 *   unit<g>.gathered.fp32    zero3 with gather_dtype "fp32" under bf16: the gathered fp32 masters, cast into
 *                            unit<g>.gathered on the communication stream (no copy shard then)
 * The state-dict parameters become shape-only tensors, described for checkpoints by per-rank pieces of
 * the master shard and of the moments (plan.h TF_PIECE). */
#include "layout.h"
#include "access.h"
#include "instr.h"
#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* How the builder's step reads each unit: bit 1 through the copy, bit 2 as the master (copy != master);
 * the layer of its first use. */
static void scan_uses(const ddp_builder *b, uint8_t *reads, int *layer_of) {
  const ddp_plan *p = b->plan;
  int32_t *unit_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  uint8_t *kind = ddp_xcalloc((size_t)p->ntensors + 1, 1);
  for (uint32_t t = 0; t < p->ntensors; t++) unit_of[t] = -1;
  for (int u = 0; u < b->nunits; u++) {
    layer_of[u] = -2;
    reads[u] = 0;
    unit_of[b->units[u].copy] = u;
    kind[b->units[u].copy] = 1;
    if (b->units[u].master != b->units[u].copy) {
      unit_of[b->units[u].master] = u;
      kind[b->units[u].master] = 2;
    }
  }
  for (uint32_t k = 0; k < b->step.n; k++) {
    const ddp_instr *in = &b->step.v[k];
    for (int s = 0; s < DDP_MAX_PTRS; s++) {
      if (in->p[s].tensor < 0) continue;
      int32_t r = ddp_tensor_root(p, in->p[s].tensor);
      int u = unit_of[r];
      if (u < 0) continue;
      reads[u] |= kind[r];
      if (layer_of[u] == -2) layer_of[u] = in->layer;
    }
  }
  free(unit_of);
  free(kind);
}

/* A tensor that keeps only its name and shape (no memory, no base). */
static void shape_only(ddp_builder *b, int32_t t) {
  ddp_tensor *tt = &b->plan->tensors[t];
  tt->base = -1;
  tt->view = 0;
  tt->flags = (tt->flags & ~(uint32_t)TF_PERSISTENT) | TF_SHAPE_ONLY;
}

static int32_t flat(ddp_builder *b, const char *name, int dt, int arena, uint32_t flags, int64_t n) {
  int64_t shape[1] = {n};
  return b_tensor(b, name, dt, arena, flags, 1, shape);
}

/* The groups before the split by form: bucket_of over lay->order, in increasing index. */
static int base_groups(ddp_builder *b, ddp_layout *lay, const int *layer_of, int *group_of) {
  const ddp_schedule *s = b->s;
  if (s->shard == SHARD_ZERO3 && !s->bucket_policy && !(s->bucket_mb > 0)) {
    int g = -1, prev = -3;
    for (int j = 0; j < lay->norder; j++) {
      int l = layer_of[lay->order[j]];
      if (j == 0 || l != prev) g++;
      prev = l;
      group_of[j] = g;
    }
    return g + 1;
  }
  for (int k = 0; k < lay->nbuckets; k++)
    for (int j = lay->buckets[k].first; j <= lay->buckets[k].last; j++) group_of[j] = k;
  return lay->nbuckets;
}

/* One tensor per piece: the part of state-dict parameter pp that lies in rank r's slice of group g. Under
 * tensor parallelism (b->tp = T) the slice holds tensor rank t's part of a split parameter, on world rank
 * r T + t: each (r, t) gets the whole-parameter segments of its local range (ddp_tp_segments: a
 * row-parallel weight's in up to 3 pieces); a whole parameter's slice is described once, by tensor rank 0's
 * (the tensor ranks hold the same values: every tensor rank loads it, runtime/io/checkpoint.c). */
static void add_pieces(ddp_builder *b, ddp_layout *lay, const ddp_model_param *pp, const ddp_shard_group *g) {
  const ddp_unit *u = &b->units[pp->unit];
  int64_t plo = u->flat_offset + pp->unit_offset, phi = plo + pp->numel, per = g->len / lay->world;
  const char *sname = b_t(b, pp->tensor)->state_name;
  uint64_t fsz = ddp_dtype_size(b->fdt);
  int T = b->tp > 1 ? b->tp : 1, tps = pp->tp_split == TP_WHOLE ? 1 : T;
  for (int r = 0; r < lay->world; r++) {
    int64_t slo = g->lo + r * per, shi = slo + per;
    int64_t lo = plo > slo ? plo : slo, hi = phi < shi ? phi : shi;
    if (hi <= lo) continue;
    uint64_t at = (uint64_t)(g->lo / lay->world + (lo - slo)) * fsz;
    const int32_t bases[3] = {lay->shard_master, lay->flat_m, lay->flat_v};
    const uint32_t roles[3] = {TF_PARAM | TF_TRAINABLE, TF_OPT_M, TF_OPT_V};
    const char *suffix[3] = {"", ".exp_avg", ".exp_avg_sq"};
    for (int t = 0; t < tps; t++) {
      ddp_tp_seg seg[3];
      int ns = ddp_tp_segments(pp, T, t, lo - plo, hi - plo, seg);
      for (int q = 0; q < ns; q++) {
        int64_t shape[1] = {seg[q].n};
        for (int k = 0; k < 3; k++) {
          if (bases[k] < 0) continue;
          const char *nm = T > 1 ? b_fmt(b, "%s%s.rank%d.%d", sname, suffix[k], r * T + t, q)
                                 : b_fmt(b, "%s%s.rank%d", sname, suffix[k], r);
          int32_t id = b_view(b, nm, bases[k], at + (uint64_t)(seg[q].at - (lo - plo)) * fsz, b->fdt, 1, shape,
                              roles[k] | TF_PIECE);
          ddp_tensor *tt = &b->plan->tensors[id];
          tt->state_name = ddp_xstrdup(sname);
          tt->param = pp->tensor;
          tt->piece_rank = r * T + t;
          tt->piece_first = seg[q].first;
          tt->piece_runs = seg[q].runs;
          tt->piece_stride = seg[q].runs > 1 ? seg[q].stride : 0;
        }
      }
    }
  }
}

int ddp_layout_shard(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  int W = lay->world;
  uint8_t *reads = ddp_xcalloc((size_t)b->nunits + 1, 1);
  int *layer_of = ddp_xcalloc((size_t)b->nunits + 1, sizeof(int));
  scan_uses(b, reads, layer_of);
  for (int j = 0; j < lay->norder; j++)
    if (reads[lay->order[j]] == 3) {
      ddp_fail(err, errcap, "%s: parallel.shard = \"%s\": %s is read both as fp32 master and as %s copy; the ZeRO "
               "levels need one precision per parameter", s->path, ddp_shard_names[s->shard],
               b->units[lay->order[j]].name, ddp_dtype_name(b->act_dt));
      free(reads);
      free(layer_of);
      return -1;
    }

  /* Groups: base groups, each split into its copy-read units then its master-read ones; with master_group =
   * "last" (zero1/zero2) every master-read unit goes to one group after the last base group's copy-read
   * units instead (the norm gains beside each bucket are a few KiB each: one collective each way per group
   * costs more than the bytes; their gradients then wait for the last group's, the embedding's). */
  int *group_of = ddp_xcalloc((size_t)lay->norder + 1, sizeof(int));
  int nbase = base_groups(b, lay, layer_of, group_of);
  int *sorted = ddp_xmalloc(sizeof(int) * ((size_t)lay->norder + 1));
  lay->groups = ddp_xcalloc((size_t)nbase * 2 + 1, sizeof(ddp_shard_group));
  lay->ngroups = 0;
  int n = 0;
  const bool last = s->master_group_last;
  for (int g = 0; g < nbase + last; g++)
    for (int form = 0; form < 2; form++) {
      if (last && (form == SG_MASTER) != (g == nbase)) continue;
      int start = n;
      for (int j = 0; j < lay->norder; j++)
        if ((group_of[j] == g || (last && g == nbase)) && ((reads[lay->order[j]] & 2) != 0) == (form == SG_MASTER))
          sorted[n++] = lay->order[j];
      if (n == start) continue;
      ddp_shard_group *sg = &lay->groups[lay->ngroups++];
      sg->first = start;
      sg->last = n - 1;
      sg->form = form;
      sg->unit = g;
      sg->dtype = form == SG_MASTER ? b->fdt : b->act_dt;
      sg->params = sg->params_bwd = sg->grads = sg->gather32 = sg->gather32_bwd = -1;
    }
  memcpy(lay->order, sorted, sizeof(int) * (size_t)lay->norder);
  free(sorted);
  free(group_of);
  free(reads);
  free(layer_of);
  /* The buckets are the groups from here on (the plan's bucket table, the explain and inspect views). */
  free(lay->buckets);
  lay->nbuckets = lay->ngroups;
  lay->buckets = ddp_xcalloc((size_t)lay->ngroups, sizeof(ddp_layout_bucket));
  for (int g = 0; g < lay->ngroups; g++) lay->buckets[g] = (ddp_layout_bucket){lay->groups[g].first, lay->groups[g].last};

  /* Offsets: units aligned inside their group, groups padded to whole slices. */
  int64_t off = 0, used = 0, form_len[2] = {0, 0};
  for (int g = 0; g < lay->ngroups; g++) {
    ddp_shard_group *sg = &lay->groups[g];
    sg->lo = off;
    int64_t at = 0;
    for (int j = sg->first; j <= sg->last; j++) {
      ddp_unit *u = &b->units[lay->order[j]];
      u->flat_offset = off + at;
      at = align_up(at + u->numel, DDP_FLAT_ALIGN);
      used += u->numel;
    }
    sg->len = align_up(at, (int64_t)DDP_FLAT_ALIGN * W);
    sg->form_lo = form_len[sg->form];
    form_len[sg->form] += sg->len;
    off += sg->len;
  }
  lay->nflat = off;
  lay->used = off;
  /* Balanced enough to shard: every rank holds some parameter elements, not only padding. */
  for (int r = 0; r < W; r++) {
    int64_t held = 0;
    for (int g = 0; g < lay->ngroups && held == 0; g++) {
      const ddp_shard_group *sg = &lay->groups[g];
      int64_t slo = sg->lo + r * (sg->len / W), shi = slo + sg->len / W;
      for (int j = sg->first; j <= sg->last && held == 0; j++) {
        const ddp_unit *u = &b->units[lay->order[j]];
        if (u->flat_offset < shi && u->flat_offset + u->numel > slo) held = 1;
      }
    }
    if (!held)
      return ddp_fail(err, errcap, "%s: parallel.ranks = %d: the shards cannot be balanced: rank %d would hold no "
                      "parameter elements, only padding (%lld trainable elements in %d groups, each rank's slice of a "
                      "group a multiple of %d elements); use fewer ranks or larger groups", s->path, W, r,
                      (long long)used, lay->ngroups, DDP_FLAT_ALIGN);
  }
  int64_t S = lay->nflat / W;
  lay->state_elems = S;
  lay->own_lo = ddp_xcalloc((size_t)W, sizeof(int64_t));
  lay->own_hi = ddp_xcalloc((size_t)W, sizeof(int64_t));
  for (int r = 0; r < W; r++) lay->own_hi[r] = S; /* in shard coordinates */

  /* The rank's shard tensors. */
  lay->shard_master = flat(b, "flat.params.shard", b->fdt, ARENA_PARAM, TF_PARAM | TF_TRAINABLE | TF_PERSISTENT, S);
  lay->flat_params = lay->shard_master;
  if (b->backward && s->shard != SHARD_ZERO1)
    lay->shard_grads = flat(b, "flat.grads.shard", b->grad_dt, ARENA_GRAD, TF_GRAD | TF_PERSISTENT, S);
  bool zero3 = s->shard == SHARD_ZERO3;
  bool gather32 = zero3 && b->act_dt != b->fdt && s->gather_dtype == b->fdt; /* fp32 masters gathered, cast here */
  if (zero3 && b->act_dt != b->fdt && form_len[SG_COPY] > 0 && !gather32)
    lay->shard_copy = flat(b, "flat.params.copy.shard", b->act_dt, ARENA_PARAM, TF_PARAM_COPY | TF_PERSISTENT, S);
  int32_t full[2] = {-1, -1};
  if (!zero3) {
    if (form_len[SG_COPY] > 0)
      full[SG_COPY] = flat(b, "flat.params.copy", b->act_dt, ARENA_PARAM, TF_PARAM_COPY | TF_PERSISTENT, form_len[SG_COPY]);
    if (form_len[SG_MASTER] > 0)
      full[SG_MASTER] = flat(b, "flat.params", b->fdt, ARENA_PARAM, TF_PARAM_COPY | TF_PERSISTENT, form_len[SG_MASTER]);
  }
  if (b->backward && s->shard == SHARD_ZERO1)
    lay->flat_grads = flat(b, "flat.grads", b->grad_dt, ARENA_GRAD, TF_GRAD | TF_PERSISTENT, lay->nflat);

  if (b->backward && s->nccl_reduce_scatter == NCCL_RS_ALLTOALL) {
    int64_t most = 0;
    for (int g = 0; g < lay->ngroups; g++) most = lay->groups[g].len > most ? lay->groups[g].len : most;
    int64_t shape[1] = {most};
    lay->a2a_received = b_tensor(b, "zero.received", b->grad_dt, ARENA_ACT, 0, 1, shape);
  }

  /* Per group: the compute-side parameters and (zero2/3) the gradients; units become views of them. */
  uint64_t gsz = ddp_dtype_size(b->grad_dt);
  for (int g = 0; g < lay->ngroups; g++) {
    ddp_shard_group *sg = &lay->groups[g];
    uint64_t es = ddp_dtype_size(sg->dtype);
    int64_t shape[1] = {sg->len};
    if (zero3) {
      sg->params = b_tensor(b, b_fmt(b, "unit%d.gathered", g), sg->dtype, ARENA_ACT, TF_PARAM_COPY, 1, shape);
      if (s->reshard_after_forward && b->backward)
        sg->params_bwd = b_tensor(b, b_fmt(b, "unit%d.gathered.bwd", g), sg->dtype, ARENA_ACT, TF_PARAM_COPY, 1, shape);
    } else {
      sg->params = b_view(b, b_fmt(b, "group%d.params", g), full[sg->form], (uint64_t)sg->form_lo * es, sg->dtype, 1,
                          shape, TF_PARAM_COPY);
    }
    if (gather32 && sg->dtype != b->fdt) {
      sg->gather32 = b_tensor(b, b_fmt(b, "unit%d.gathered.fp32", g), b->fdt, ARENA_ACT, 0, 1, shape);
      if (sg->params_bwd >= 0)
        sg->gather32_bwd = b_tensor(b, b_fmt(b, "unit%d.gathered.bwd.fp32", g), b->fdt, ARENA_ACT, 0, 1, shape);
    }
    if (b->backward && s->shard != SHARD_ZERO1)
      sg->grads = b_tensor(b, b_fmt(b, "bucket%d.grads", g), b->grad_dt, ARENA_ACT, TF_GRAD, 1, shape);
    for (int j = sg->first; j <= sg->last; j++) {
      ddp_unit *u = &b->units[lay->order[j]];
      uint64_t at = (uint64_t)(u->flat_offset - sg->lo);
      int32_t used_t = sg->form == SG_MASTER ? u->master : u->copy;
      int32_t unused_t = sg->form == SG_MASTER ? u->copy : u->master;
      ddp_layout_rebase(b, used_t, sg->params, at * es);
      b->plan->tensors[used_t].flags &= ~(uint32_t)TF_PERSISTENT;
      if (unused_t != used_t) shape_only(b, unused_t);
      if (u->grad >= 0) {
        if (sg->grads >= 0) ddp_layout_rebase(b, u->grad, sg->grads, at * gsz);
        else ddp_layout_rebase(b, u->grad, lay->flat_grads, (uint64_t)u->flat_offset * gsz);
        b->plan->tensors[u->grad].flags &= ~(uint32_t)TF_PERSISTENT;
      }
    }
  }
  return 0;
}

/* After the optimizer state exists: the state-dict parameters become shape-only, described by pieces. */
void ddp_layout_shard_pieces(ddp_builder *b, ddp_layout *lay) {
  int *group_at = ddp_xcalloc((size_t)b->nunits + 1, sizeof(int));
  for (int g = 0; g < lay->ngroups; g++)
    for (int j = lay->groups[g].first; j <= lay->groups[g].last; j++) group_at[lay->order[j]] = g;
  for (int p = 0; p < b->nparams; p++) {
    const ddp_model_param *pp = &b->params[p];
    if (!b->units[pp->unit].trainable) continue;
    shape_only(b, pp->tensor);
    if (pp->tp_split != TP_WHOLE && b->tp > 1) ddp_layout_whole_shape(b, pp); /* not this tensor rank's */
    add_pieces(b, lay, pp, &lay->groups[group_at[pp->unit]]);
  }
  free(group_at);
}

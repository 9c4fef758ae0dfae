/* compiler/layout/layout.c: the layout stage. Orders the trainable units by gradient readiness, groups
 * them into buckets (contiguous runs of that order), assigns every unit its range in the flat tensors and
 * turns each unit's master, copy and gradient into views of them, decides ownership (ownership.c) and
 * creates the optimizer state. Only what the schedule's mode uses is created: no gradients (nor buckets)
 * without a backward, no optimizer state (m, v, clipping partials) outside mode "train". */
#include "layout.h"
#include "instr.h"
#include <stdlib.h>
#include <string.h>

static int by_ready(const void *x, const void *y, void *ctx) {
  const ddp_builder *b = ctx;
  const ddp_unit *a = &b->units[*(const int *)x], *c = &b->units[*(const int *)y];
  int ra = a->ready < 0 ? 1 << 30 : a->ready, rc = c->ready < 0 ? 1 << 30 : c->ready;
  if (ra != rc) return ra < rc ? -1 : 1;
  return *(const int *)x - *(const int *)y;
}

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

void ddp_layout_rebase(ddp_builder *b, int32_t t, int32_t base, uint64_t byte_off) {
  ddp_tensor *tt = &b->plan->tensors[t];
  tt->base = base;
  tt->view = byte_off;
  tt->arena = b->plan->tensors[base].arena;
}

static int32_t flat_tensor(ddp_builder *b, const char *name, int dt, int arena, uint32_t flags, int64_t n) {
  int64_t shape[1] = {n};
  return b_tensor(b, name, dt, arena, flags | TF_PERSISTENT, 1, shape);
}

/* The trainable units in gradient-ready order (never-ready units last, ties by index). */
static int layout_order(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  lay->order = ddp_xmalloc(sizeof(int) * (size_t)(b->nunits + 1));
  for (int u = 0; u < b->nunits; u++)
    if (b->units[u].trainable) lay->order[lay->norder++] = u;
  if (lay->norder == 0) return ddp_fail(err, errcap, "%s: model: no trainable parameters", b->s->path);
  qsort_r(lay->order, (size_t)lay->norder, sizeof(int), by_ready, b);
  return 0;
}

/* Buckets: contiguous runs of the order (a Lua policy may regroup, so the order is sorted by bucket,
 * stably). One bucket over everything unless the sync is bucketed. */
static int layout_buckets(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  int *bucket_of = ddp_xcalloc((size_t)lay->norder, sizeof(int));
  lay->nbuckets = 1;
  if (b->s->sync == SYNC_BUCKETED && b->backward)
    lay->nbuckets = ddp_layout_assign_buckets(b, lay->order, lay->norder, bucket_of, err, errcap);
  if (lay->nbuckets < 0) {
    free(bucket_of);
    return -1;
  }
  int *sorted = ddp_xmalloc(sizeof(int) * (size_t)lay->norder);
  lay->buckets = ddp_xcalloc((size_t)lay->nbuckets, sizeof(ddp_layout_bucket));
  int *start = ddp_xcalloc((size_t)lay->nbuckets + 1, sizeof(int)); /* a stable counting sort by bucket */
  for (int j = 0; j < lay->norder; j++)
    if (bucket_of[j] >= 0 && bucket_of[j] < lay->nbuckets) start[bucket_of[j] + 1]++;
  for (int k = 0; k < lay->nbuckets; k++) {
    start[k + 1] += start[k];
    lay->buckets[k].first = start[k];
    lay->buckets[k].last = start[k + 1] - 1;
  }
  for (int j = 0; j < lay->norder; j++)
    if (bucket_of[j] >= 0 && bucket_of[j] < lay->nbuckets) sorted[start[bucket_of[j]]++] = lay->order[j];
  free(start);
  memcpy(lay->order, sorted, sizeof(int) * (size_t)lay->norder);
  free(sorted);
  free(bucket_of);
  return 0;
}

/* Flat offsets, the flat tensors, and every unit's tensors rebased as views of them. */
static void layout_offsets(ddp_builder *b, ddp_layout *lay) {
  int64_t off = 0;
  for (int k = 0; k < lay->norder; k++) {
    ddp_unit *u = &b->units[lay->order[k]];
    u->flat_offset = off;
    off = align_up(off + u->numel, DDP_FLAT_ALIGN);
  }
  lay->used = off;
  lay->nflat = align_up(off, (int64_t)DDP_FLAT_ALIGN * lay->world);
  lay->flat_params = flat_tensor(b, "flat.params", b->fdt, ARENA_PARAM, TF_PARAM | TF_TRAINABLE, lay->nflat);
  if (b->act_dt != b->fdt)
    lay->flat_copies = flat_tensor(b, "flat.params.copy", b->act_dt, ARENA_PARAM, TF_PARAM_COPY, lay->nflat);
  if (b->backward) lay->flat_grads = flat_tensor(b, "flat.grads", b->grad_dt, ARENA_GRAD, TF_GRAD, lay->nflat);
  uint64_t gsz = ddp_dtype_size(b->grad_dt), csz = ddp_dtype_size(b->act_dt);
  for (int k = 0; k < lay->norder; k++) {
    ddp_unit *u = &b->units[lay->order[k]];
    ddp_layout_rebase(b, u->master, lay->flat_params, (uint64_t)u->flat_offset * ddp_dtype_size(b->fdt));
    if (lay->flat_copies >= 0) ddp_layout_rebase(b, u->copy, lay->flat_copies, (uint64_t)u->flat_offset * csz);
    if (u->grad >= 0) ddp_layout_rebase(b, u->grad, lay->flat_grads, (uint64_t)u->flat_offset * gsz);
  }
}

/* AdamW's m and v (with per-parameter views under the state-dict names, for checkpoints, when unsharded;
 * as each owner's pieces under the owner-broadcast sharding; the ZeRO levels add theirs in shard.c),
 * the clipping partials and cuBLASLt's workspace. */
static void layout_optimizer_state(ddp_builder *b, ddp_layout *lay) {
  const ddp_schedule *s = b->s;
  if (s->optimizer == OPTIM_ADAMW && s->mode == MODE_TRAIN && !lay->pipe) {
    lay->flat_m = flat_tensor(b, "flat.exp_avg", b->fdt, ARENA_OPT, TF_OPT_M, lay->state_elems);
    lay->flat_v = flat_tensor(b, "flat.exp_avg_sq", b->fdt, ARENA_OPT, TF_OPT_V, lay->state_elems);
    for (int p = 0; s->shard == SHARD_NONE && p < b->nparams; p++) {
      const ddp_model_param *pp = &b->params[p];
      const ddp_unit *u = &b->units[pp->unit];
      if (!u->trainable) continue;
      int64_t shape[DDP_MAX_DIMS];
      const ddp_tensor *pt = b_t(b, pp->tensor);
      int nd = pt->ndim;
      memcpy(shape, pt->shape, sizeof shape);
      char *sname = ddp_xstrdup(pt->state_name);
      uint64_t at = (uint64_t)(u->flat_offset + pp->unit_offset) * ddp_dtype_size(b->fdt);
      int32_t m = b_view(b, b_fmt(b, "%s.exp_avg", sname), lay->flat_m, at, b->fdt, nd, shape, TF_OPT_M);
      b->plan->tensors[m].state_name = ddp_xstrdup(sname);
      b->plan->tensors[m].param = pp->tensor;
      int32_t v = b_view(b, b_fmt(b, "%s.exp_avg_sq", sname), lay->flat_v, at, b->fdt, nd, shape, TF_OPT_V);
      b->plan->tensors[v].state_name = ddp_xstrdup(sname);
      b->plan->tensors[v].param = pp->tensor;
      free(sname);
    }
  }
  /* the owner-broadcast sharded optimizer: each rank's moments of the units it owns, as pieces */
  for (int p = 0; s->shard == SHARD_OPTIMIZER && lay->flat_m >= 0 && p < b->nparams; p++) {
    const ddp_model_param *pp = &b->params[p];
    const ddp_unit *u = &b->units[pp->unit];
    if (!u->trainable) continue;
    int64_t at = u->flat_offset + pp->unit_offset;
    int r = 0;
    while (r + 1 < lay->world && !(at >= lay->own_lo[r] && at < lay->own_hi[r])) r++;
    const char *sname = b_t(b, pp->tensor)->state_name;
    int64_t shape[1] = {pp->numel};
    const int32_t bases[2] = {lay->flat_m, lay->flat_v};
    const uint32_t roles[2] = {TF_OPT_M, TF_OPT_V};
    for (int k = 0; k < 2; k++) {
      int32_t t = b_view(b, b_fmt(b, "%s.%s.rank%d", sname, k ? "exp_avg_sq" : "exp_avg", r), bases[k],
                         (uint64_t)(at - lay->own_lo[r]) * ddp_dtype_size(b->fdt), b->fdt, 1, shape, roles[k] | TF_PIECE);
      ddp_tensor *tt = &b->plan->tensors[t];
      tt->state_name = ddp_xstrdup(sname);
      tt->param = pp->tensor;
      tt->piece_rank = r;
    }
  }
  if (s->clip_norm > 0 && s->mode == MODE_TRAIN) {
    /* Tables of partial sums: one (a pipeline: per stage); ZeRO: one per group slice. Tensor parallelism
     * splits them by runs of split or whole units (compiler/passes/tensor.c): one per run of the flat order, of
     * the stage's units (as many as the stage with the most), or inside each group slice (as many per group as
     * the slice with the most: tp_slice_tables). */
    int64_t tables = 1;
    bool tp = b->tp > 1;
    if (lay->pipe) {
      for (int st = 0; tp && st < s->stages; st++) {
        int n = ddp_layout_tp_stage_runs(b, lay, st, NULL, NULL, NULL);
        if (n > tables) tables = n;
      }
    } else if (lay->zero) {
      for (int g = 0; tp && g < lay->ngroups; g++)
        for (int r = 0; r < lay->world; r++) {
          int n = ddp_layout_tp_slice_runs(b, lay, g, r, NULL, NULL, NULL);
          if (n > lay->tp_slice_tables) lay->tp_slice_tables = n;
        }
      tables = (int64_t)lay->ngroups * lay->tp_slice_tables;
    } else if (tp) {
      tables = ddp_layout_tp_runs(b, lay, NULL, NULL, NULL);
    }
    lay->sumsq_p = DDP_SUMSQ_PARTS * tables;
    int64_t shape[1] = {lay->sumsq_p};
    lay->sumsq_partials = b_tensor(b, "optimizer.sumsq_partials", b->fdt, ARENA_IO, TF_PERSISTENT, 1, shape);
  }
  int64_t wshape[1] = {DDP_GEMM_WORKSPACE_BYTES / 4};
  lay->workspace = b_tensor(b, "workspace.gemm", DT_I32, ARENA_WORK, TF_PERSISTENT, 1, wshape);
}

int ddp_layout_build(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  memset(lay, 0, sizeof *lay);
  lay->world = ddp_schedule_data_ranks(b->s); /* tensor parallelism: the data axis */
  lay->tp_slice_tables = 1;
  lay->flat_params = lay->flat_copies = lay->flat_grads = lay->flat_m = lay->flat_v = lay->sumsq_partials = -1;
  lay->shard_master = lay->shard_grads = lay->shard_copy = lay->a2a_received = -1;
  /* zero1/zero2 shard only gradients and optimizer state: a forward plan has none, and stays unsharded (no
   * collectives); zero3 shards the parameters the forward gathers. */
  lay->zero = b->s->shard >= SHARD_ZERO1 && !(b->s->mode == MODE_FORWARD && b->s->shard < SHARD_ZERO3);
  if (layout_order(b, lay, err, errcap) != 0 || layout_buckets(b, lay, err, errcap) != 0) return -1;
  if (b->s->stages > 0) {
    if (ddp_layout_pipeline(b, lay, err, errcap) != 0) return -1;
  } else if (lay->zero) {
    if (ddp_layout_shard(b, lay, err, errcap) != 0) return -1;
  } else {
    layout_offsets(b, lay);
    ddp_layout_ownership(b, lay);
  }
  layout_optimizer_state(b, lay);
  if (lay->zero) ddp_layout_shard_pieces(b, lay);
  if (b->tp > 1 && !lay->zero) ddp_layout_tensor_pieces(b, lay); /* the ZeRO levels' pieces cover both */
  return 0;
}

void ddp_layout_free(ddp_layout *lay) {
  free(lay->order);
  free(lay->own_lo);
  free(lay->own_hi);
  free(lay->buckets);
  free(lay->groups);
  free(lay->chunk_of_layer);
  free(lay->instr_chunk);
  free(lay->stage_of_unit);
  free(lay->stage_flat);
  free(lay->peer_received);
  memset(lay, 0, sizeof *lay);
}

/* compiler/layout.c: assigns every trainable unit its range in the flat tensors (gradient-ready order),
 * creates the flat tensors and turns each unit's master, copy and gradient into views of them, decides the
 * optimizer-state size and, for optimizer sharding, which rank owns which range (balanced by bytes).
 * Only what the schedule's mode uses is created: no gradients (nor buckets) without a backward, no
 * optimizer state (m, v, clipping partials) outside mode "train". */
#include "layout.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ddp_builder *sort_b;
static int by_ready(const void *x, const void *y) {
  const ddp_unit *a = &sort_b->units[*(const int *)x], *c = &sort_b->units[*(const int *)y];
  int ra = a->ready < 0 ? 1 << 30 : a->ready, rc = c->ready < 0 ? 1 << 30 : c->ready;
  if (ra != rc) return ra < rc ? -1 : 1;
  return *(const int *)x - *(const int *)y;
}

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static void rebase(ddp_builder *b, int32_t t, int32_t base, uint64_t byte_off) {
  ddp_tensor *tt = &b->plan->tensors[t];
  tt->base = base;
  tt->view = byte_off;
}

static int32_t flat_tensor(ddp_builder *b, const char *name, int dt, int arena, uint32_t flags, int64_t n) {
  int64_t shape[1] = {n};
  return b_tensor(b, name, dt, arena, flags | TF_PERSISTENT, 1, shape);
}

int ddp_layout_build(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  memset(lay, 0, sizeof *lay);
  lay->world = s->ranks;
  lay->flat_params = lay->flat_copies = lay->flat_grads = lay->flat_m = lay->flat_v = lay->sumsq_partials = -1;
  lay->order = malloc(sizeof(int) * (size_t)(b->nunits + 1));
  for (int u = 0; u < b->nunits; u++)
    if (b->units[u].trainable) lay->order[lay->norder++] = u;
  if (lay->norder == 0) {
    snprintf(err, errcap, "%s: model: no trainable parameters", s->path);
    return -1;
  }
  sort_b = b;
  qsort(lay->order, (size_t)lay->norder, sizeof(int), by_ready);
  /* Buckets: contiguous runs of the flat order (a Lua policy may regroup, so sort by bucket, stably). */
  int *bucket_of = calloc((size_t)lay->norder, sizeof(int));
  lay->nbuckets = 1;
  if (s->sync == SYNC_BUCKETED && b->backward) {
    lay->nbuckets = ddp_buckets_assign(b, lay->order, lay->norder, bucket_of, err, errcap);
    if (lay->nbuckets < 0) {
      free(bucket_of);
      return -1;
    }
  }
  int *sorted = malloc(sizeof(int) * (size_t)lay->norder);
  lay->bucket_first = malloc(sizeof(int) * (size_t)lay->nbuckets);
  lay->bucket_last = malloc(sizeof(int) * (size_t)lay->nbuckets);
  int at = 0;
  for (int k = 0; k < lay->nbuckets; k++) {
    lay->bucket_first[k] = at;
    for (int j = 0; j < lay->norder; j++)
      if (bucket_of[j] == k) sorted[at++] = lay->order[j];
    lay->bucket_last[k] = at - 1;
  }
  memcpy(lay->order, sorted, sizeof(int) * (size_t)lay->norder);
  free(sorted);
  free(bucket_of);
  int64_t off = 0;
  for (int k = 0; k < lay->norder; k++) {
    ddp_unit *u = &b->units[lay->order[k]];
    u->flat_offset = off;
    off = align_up(off + u->numel, DDP_FLAT_ALIGN);
  }
  lay->nflat = align_up(off, (int64_t)DDP_FLAT_ALIGN * lay->world);

  lay->flat_params = flat_tensor(b, "flat.params", b->fdt, ARENA_PARAM, TF_PARAM | TF_TRAINABLE, lay->nflat);
  if (b->act_dt != b->fdt)
    lay->flat_copies = flat_tensor(b, "flat.params.copy", b->act_dt, ARENA_PARAM, TF_PARAM_COPY, lay->nflat);
  if (b->backward) lay->flat_grads = flat_tensor(b, "flat.grads", b->grad_dt, ARENA_GRAD, TF_GRAD, lay->nflat);
  uint64_t gsz = ddp_dtype_size(b->grad_dt), csz = ddp_dtype_size(b->act_dt);
  for (int k = 0; k < lay->norder; k++) {
    ddp_unit *u = &b->units[lay->order[k]];
    rebase(b, u->master, lay->flat_params, (uint64_t)u->flat_offset * ddp_dtype_size(b->fdt));
    if (lay->flat_copies >= 0) rebase(b, u->copy, lay->flat_copies, (uint64_t)u->flat_offset * csz);
    if (u->grad >= 0) rebase(b, u->grad, lay->flat_grads, (uint64_t)u->flat_offset * gsz);
  }

  /* Optimizer ownership. */
  lay->own_lo = calloc((size_t)lay->world, sizeof(int64_t));
  lay->own_hi = calloc((size_t)lay->world, sizeof(int64_t));
  if (s->shard == SHARD_ZERO1) {
    int64_t per = lay->nflat / lay->world;
    for (int r = 0; r < lay->world; r++) {
      lay->own_lo[r] = r * per;
      lay->own_hi[r] = (r + 1) * per;
    }
  } else if (s->shard == SHARD_OPTIMIZER) {
    /* Contiguous groups of whole units, each closing once it reaches its share of the bytes. */
    int64_t total = off, acc = 0;
    int r = 0;
    lay->own_lo[0] = 0;
    for (int k = 0; k < lay->norder; k++) {
      const ddp_unit *u = &b->units[lay->order[k]];
      int64_t end = k + 1 < lay->norder ? b->units[lay->order[k + 1]].flat_offset : lay->nflat;
      acc += u->numel;
      if (r < lay->world - 1 && acc * lay->world >= total * (r + 1)) {
        lay->own_hi[r] = end;
        lay->own_lo[++r] = end;
      }
    }
    lay->own_hi[r] = lay->nflat;
    for (r = r + 1; r < lay->world; r++) lay->own_lo[r] = lay->own_hi[r] = lay->nflat;
  } else {
    for (int r = 0; r < lay->world; r++) lay->own_hi[r] = lay->nflat;
  }
  for (int r = 0; r < lay->world; r++)
    if (lay->own_hi[r] - lay->own_lo[r] > lay->state_elems) lay->state_elems = lay->own_hi[r] - lay->own_lo[r];
  if (lay->state_elems == 0) lay->state_elems = DDP_FLAT_ALIGN;

  if (s->optimizer == OPTIM_ADAMW && s->mode == MODE_TRAIN) {
    lay->flat_m = flat_tensor(b, "flat.exp_avg", b->fdt, ARENA_OPT, TF_OPT_M, lay->state_elems);
    lay->flat_v = flat_tensor(b, "flat.exp_avg_sq", b->fdt, ARENA_OPT, TF_OPT_V, lay->state_elems);
    if (s->shard == SHARD_NONE) {
      /* Per-parameter views under the state-dict names, for checkpoints. */
      for (int p = 0; p < b->nparams; p++) {
        const ddp_param *pp = &b->params[p];
        const ddp_unit *u = &b->units[pp->unit];
        if (!u->trainable) continue;
        int64_t shape[DDP_MAX_DIMS];
        const ddp_tensor *pt = b_t(b, pp->tensor);
        int nd = pt->ndim;
        memcpy(shape, pt->shape, sizeof shape);
        char *sname = strdup(pt->state_name);
        char nm[300];
        uint64_t at = (uint64_t)(u->flat_offset + pp->unit_offset) * ddp_dtype_size(b->fdt);
        snprintf(nm, sizeof nm, "%s.exp_avg", sname);
        int32_t m = b_view(b, nm, lay->flat_m, at, b->fdt, nd, shape, TF_OPT_M);
        b->plan->tensors[m].state_name = strdup(sname);
        b->plan->tensors[m].param = pp->tensor;
        snprintf(nm, sizeof nm, "%s.exp_avg_sq", sname);
        int32_t v = b_view(b, nm, lay->flat_v, at, b->fdt, nd, shape, TF_OPT_V);
        b->plan->tensors[v].state_name = strdup(sname);
        b->plan->tensors[v].param = pp->tensor;
        free(sname);
      }
    }
  }
  if (s->clip_norm > 0 && s->mode == MODE_TRAIN) {
    lay->sumsq_p = 1024;
    int64_t shape[1] = {lay->sumsq_p};
    lay->sumsq_partials = b_tensor(b, "optimizer.sumsq_partials", b->fdt, ARENA_IO, TF_PERSISTENT, 1, shape);
  }
  /* cuBLASLt's workspace (32 MiB, as recommended on Hopper). */
  int64_t wshape[1] = {(32ll << 20) / 4};
  lay->workspace = b_tensor(b, "workspace.gemm", DT_I32, ARENA_WORK, TF_PERSISTENT, 1, wshape);
  return 0;
}

void ddp_layout_free(ddp_layout *lay) {
  free(lay->order);
  free(lay->own_lo);
  free(lay->own_hi);
  free(lay->bucket_first);
  free(lay->bucket_last);
  memset(lay, 0, sizeof *lay);
}

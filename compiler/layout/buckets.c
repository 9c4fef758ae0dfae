/* compiler/layout/buckets.c: gradient buckets for bucketed DDP. Default policy: walk the trainable units in the
 * order their gradients become ready and close a bucket when the next unit would push it past bucket_mb
 * (MiB of gradient bytes); a unit larger than the cap gets a bucket of its own. A schedule may instead
 * give a Lua function over the state-dict parameters; parameters sharing a fused unit must then share a
 * bucket. */
#include "layout.h"
#include <stdlib.h>
#include <string.h>

static int by_size(ddp_builder *b, const int *order, int n, int *bucket_of) {
  double cap = b->s->bucket_mb * 1024.0 * 1024.0;
  uint64_t gsz = ddp_dtype_size(b->grad_dt);
  int bucket = 0;
  double fill = 0;
  for (int k = 0; k < n; k++) {
    double bytes = (double)b->units[order[k]].numel * (double)gsz;
    if (fill > 0 && fill + bytes > cap) {
      bucket++;
      fill = 0;
    }
    bucket_of[k] = bucket;
    fill += bytes;
  }
  return bucket + 1;
}

static int by_policy(ddp_builder *b, const int *order, int n, int *bucket_of, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  /* The state-dict parameters of the trainable units, in ready order. */
  int np = 0;
  const char **names = ddp_xcalloc((size_t)b->nparams + 1, sizeof(char *));
  const char **unit_names = ddp_xcalloc((size_t)b->nparams + 1, sizeof(char *));
  uint64_t *bytes = ddp_xcalloc((size_t)b->nparams + 1, sizeof(uint64_t));
  int *unit_pos = ddp_xcalloc((size_t)b->nparams + 1, sizeof(int));
  int *pbucket = ddp_xcalloc((size_t)b->nparams + 1, sizeof(int));
  ddp_unit_params up = b_unit_params(b);
  for (int k = 0; k < n; k++)
    for (int x = up.at[order[k]]; x < up.at[order[k] + 1]; x++) {
      int p = up.param[x];
      names[np] = b_t(b, b->params[p].tensor)->state_name;
      unit_names[np] = b->units[order[k]].name;
      bytes[np] = (uint64_t)b->params[p].numel * ddp_dtype_size(b->grad_dt);
      unit_pos[np] = k;
      np++;
    }
  b_unit_params_free(&up);
  int rc = s->bucket_policy(s->bucket_policy_ctx, names, unit_names, bytes, np, pbucket, err, errcap);
  int nb = -1;
  if (rc == 0) {
    for (int k = 0; k < n; k++) bucket_of[k] = -1;
    nb = 0;
    for (int q = 0; q < np && nb >= 0; q++) {
      int k = unit_pos[q];
      if (pbucket[q] < 0) {
        nb = ddp_fail(err, errcap, "%s: %s: parameter %s is in no %s", s->path, s->bucket_field, names[q],
                      strstr(s->bucket_field, "units") ? "unit" : "bucket");
      } else if (bucket_of[k] >= 0 && bucket_of[k] != pbucket[q]) {
        nb = ddp_fail(err, errcap, "%s: %s: %s shares one fused weight (%s) with parameters of another %s", s->path,
                      s->bucket_field, names[q], b->units[order[k]].name,
                      strstr(s->bucket_field, "units") ? "unit" : "bucket");
      } else {
        bucket_of[k] = pbucket[q];
        if (pbucket[q] + 1 > nb) nb = pbucket[q] + 1;
      }
    }
    for (int k = 0; k < n && nb >= 0; k++)
      if (bucket_of[k] < 0) bucket_of[k] = nb - 1; /* units without state-dict parameters: none today */
    /* Empty buckets are compacted away. */
    if (nb > 0) {
      int *remap = ddp_xcalloc((size_t)nb, sizeof(int)); /* 1: some unit is in bucket x; then its new index */
      int used = 0;
      for (int k = 0; k < n; k++) remap[bucket_of[k]] = 1;
      for (int x = 0; x < nb; x++) remap[x] = remap[x] ? used++ : -1;
      for (int k = 0; k < n; k++) bucket_of[k] = remap[bucket_of[k]];
      free(remap);
      nb = used;
    }
  }
  free(names);
  free(unit_names);
  free(bytes);
  free(unit_pos);
  free(pbucket);
  return nb;
}

int ddp_layout_assign_buckets(ddp_builder *b, const int *order, int n, int *bucket_of, char *err, size_t errcap) {
  if (b->s->bucket_policy) return by_policy(b, order, n, bucket_of, err, errcap);
  return by_size(b, order, n, bucket_of);
}

void ddp_layout_record_buckets(ddp_plan *p, const ddp_builder *b, const ddp_layout *lay) {
  /* pipelines: each stage buckets its own flat (compiler/passes/pipeline.c); their all-reduces say so */
  if (b->s->sync != SYNC_BUCKETED || lay->world < 2 || !b->backward || lay->pipe) return;
  uint64_t gsz = ddp_dtype_size(b->grad_dt);
  p->buckets = ddp_xcalloc((size_t)lay->nbuckets, sizeof(ddp_bucket));
  p->nbuckets = p->cap_buckets = (uint32_t)lay->nbuckets;
  ddp_unit_params up = b_unit_params(b);
  for (int k = 0; k < lay->nbuckets; k++) {
    ddp_bucket *bk = &p->buckets[k];
    const ddp_layout_bucket *lb = &lay->buckets[k];
    size_t count = 0;
    for (int j = lb->first; j <= lb->last; j++) count += (size_t)(up.at[lay->order[j] + 1] - up.at[lay->order[j]]);
    bk->params = ddp_xmalloc(sizeof(int32_t) * (count + 1));
    for (int j = lb->first; j <= lb->last; j++)
      for (int x = up.at[lay->order[j]]; x < up.at[lay->order[j] + 1]; x++)
        bk->params[bk->nparams++] = b->params[up.param[x]].tensor;
    const ddp_unit *first = &b->units[lay->order[lb->first]], *last = &b->units[lay->order[lb->last]];
    bk->offset = p->tensors[first->grad].offset;
    bk->bytes = (uint64_t)(last->flat_offset + last->numel - first->flat_offset) * gsz;
  }
  b_unit_params_free(&up);
}

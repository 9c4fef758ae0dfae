/* compiler/passes/tensor.c: what the passes add for tensor parallelism (the schedule's mesh.tensor = T > 1,
 * data axis D; world rank r = d x T + t): the communicators, each rank's copy of the builder's step with the
 * builder's per-rank patches applied (the tensor communicator of its collectives, its vocabulary offset, its
 * slice of the cross-entropy statistics, the residual only on tensor rank 0), the data loader's share, and
 * the gradient norm for clipping (every split unit's squares summed over the tensor ranks, the whole units'
 * once).
 *   comms: with D > 1, 1 + d = tensor group of replica d (ranks d T .. d T + T - 1) and 1 + D + t = data
 *          group of tensor rank t (ranks t, T + t, ...); with D = 1 none: the tensor group is the world
 *          (comm 0; a group equal to the world would only cost NCCL another communicator) */
#include "passes.h"
#include <stdlib.h>

static int by_instr(const void *x, const void *y) {
  const ddp_tp_patch *a = x, *c = y;
  return a->instr < c->instr ? -1 : a->instr > c->instr;
}

void pass_tp_prepare(ddp_builder *b) {
  const ddp_schedule *s = b->s;
  int T = b->tp, D = s->mesh_data;
  if (T <= 1) return;
  qsort(b->tp_patches, (size_t)b->ntp_patches, sizeof *b->tp_patches, by_instr);
  if (D == 1 || s->stages > 0) return; /* a pipeline's communicators: compiler/passes/pipeline.c */
  int32_t *m = ddp_xmalloc(sizeof(int32_t) * (size_t)(T > D ? T : D));
  for (int d = 0; d < D; d++) {
    for (int t = 0; t < T; t++) m[t] = d * T + t;
    if (ddp_plan_add_comm(b->plan, m, (uint32_t)T) != 1 + d) ddp_xmalloc(SIZE_MAX);
  }
  for (int t = 0; t < T; t++) {
    for (int d = 0; d < D; d++) m[d] = d * T + t;
    if (ddp_plan_add_comm(b->plan, m, (uint32_t)D) != 1 + D + t) ddp_xmalloc(SIZE_MAX);
  }
  free(m);
}

void pass_tp_rank(rank_ctx *c, int world_rank) {
  const ddp_schedule *s = c->b->s;
  int T = c->b->tp, D = s->mesh_data;
  c->world_rank = world_rank;
  c->tp = world_rank % T;
  c->rank = world_rank / T;
  c->tp_comm = T > 1 && D > 1 ? 1 + c->rank : 0;
  c->comm = T > 1 && D > 1 ? 1 + D + c->tp : 0;
}

void pass_tp_apply(const rank_ctx *c, uint32_t k, ddp_instr *in) {
  const ddp_builder *b = c->b;
  if (b->tp <= 1) return;
  int lo = 0, hi = b->ntp_patches; /* the first patch of instruction k */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (b->tp_patches[mid].instr < k) lo = mid + 1;
    else hi = mid;
  }
  for (int j = lo; j < b->ntp_patches && b->tp_patches[j].instr == k; j++) {
    const ddp_tp_patch *pt = &b->tp_patches[j];
    switch (pt->kind) {
    case TPP_COMM: in->i[COLL_I_COMM] = c->tp_comm; break;
    case TPP_VIEW:
      in->p[pt->slot].view += (uint64_t)c->tp * (uint64_t)pt->value;
      break;
    case TPP_INT: in->i[pt->slot] += (int64_t)c->tp * pt->value; break;
    case TPP_RANK0_BETA:
      if (c->tp != 0) in->f[GEMM_F_BETA] = 0.0f;
      break;
    }
  }
}

void pass_tp_load_batch(const rank_ctx *c, ddp_instr *load) {
  if (c->b->tp <= 1) return;
  load->i[LOAD_BATCH_I_PART] = c->rank;
  load->i[LOAD_BATCH_I_PARTS] = c->b->s->mesh_data;
}

/* sumsq -> [SUMSQ(run k) | MEMSET(table k)]* ALL_REDUCE(tables, tensor group): one table of DDP_SUMSQ_PARTS
 * partial sums per run (lo[k], hi[k]: flat elements of `grads`, split[k]: of split units); tensor ranks other
 * than 0 zero the tables of the whole (replicated) units, so that the sum over the group counts them once;
 * the tables past the n runs (up to the layout's sumsq_p) are zeroed too. */
void pass_tp_sumsq_table(rank_ctx *c, int table, int32_t grads, int64_t at, int64_t n, int kind, const char *name) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  uint64_t fsz = ddp_dtype_size(b->fdt), off = (uint64_t)table * DDP_SUMSQ_PARTS * fsz;
  if (kind == 1 || (kind == 0 && c->tp == 0)) {
    ddp_instr in = b_kernel(OP_SUMSQ);
    b_arg(&in, SUMSQ_P_X, grads, (uint64_t)at * ddp_dtype_size(b->grad_dt), b->grad_dt);
    b_arg(&in, SUMSQ_P_PART, lay->sumsq_partials, off, b->fdt);
    in.i[SUMSQ_I_N] = n;
    in.i[SUMSQ_I_P] = DDP_SUMSQ_PARTS;
    rp_push(c, in, b_fmt(b, "grad_norm.sumsq.%s", name));
  } else {
    ddp_instr in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
    b_arg(&in, MEMSET_P_DST, lay->sumsq_partials, off, b->fdt);
    in.i[MEMSET_I_BYTES] = (int64_t)(DDP_SUMSQ_PARTS * fsz);
    rp_push(c, in, b_fmt(b, "grad_norm.%s.%s", kind == 0 ? "replicated" : "none", name));
  }
}

void pass_tp_sumsq_runs(rank_ctx *c, int32_t grads, int n, const int64_t *lo, const int64_t *hi, const bool *split) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  int ntab = (int)(lay->sumsq_p / DDP_SUMSQ_PARTS);
  for (int k = 0; k < ntab; k++)
    pass_tp_sumsq_table(c, k, grads, k < n ? lo[k] : 0, k < n ? hi[k] - lo[k] : 0, k < n ? split[k] : -1,
                        b_fmt(b, "run%d", k));
  pass_tp_reduce_partials(c);
}

void pass_tp_reduce_partials(rank_ctx *c) {
  int comm = c->comm;
  c->comm = c->tp_comm;
  rp_collective(c, I_ALL_REDUCE, STREAM_COMPUTE, c->lay->sumsq_partials, 0, c->lay->sumsq_p, REDOP_SUM, 0,
                "grad_norm.all_reduce.tensor");
  c->comm = comm;
}

/* The runs of the whole flat order (ddp_layout_tp_runs) */
void pass_tp_sumsq(rank_ctx *c) {
  ddp_builder *b = c->b;
  ddp_layout *lay = c->lay;
  int n = ddp_layout_tp_runs(b, lay, NULL, NULL, NULL);
  int64_t *lo = ddp_xcalloc((size_t)n + 1, sizeof(int64_t)), *hi = ddp_xcalloc((size_t)n + 1, sizeof(int64_t));
  bool *split = ddp_xcalloc((size_t)n + 1, sizeof(bool));
  ddp_layout_tp_runs(b, lay, lo, hi, split);
  pass_tp_sumsq_runs(c, lay->flat_grads, n, lo, hi, split);
  free(lo), free(hi), free(split);
}

/* compiler/layout/tensor.c: the tensor-parallel layout (the schedule's mesh.tensor = T > 1). Each rank's
 * flat tensors hold its part of every split unit and all of the whole ones, in the same order on every
 * tensor rank, so the data axis syncs them as usual. Here:
 *   the state-dict tensors split over the tensor ranks become shape-only with their whole shape, described
 *   for checkpoints by T pieces of the master and of each moment (piece t on world rank t, data replica 0,
 *   which every replica's tensor rank t loads): by rows one range, by columns a run of C/T per row;
 *   the runs of the flat order for the gradient norm: maximal runs of split units and of whole units (under
 *   a pipeline per stage, in the stage's flat).
 * A pipeline's layout (stages.c) describes the pieces itself, each on its stage's rank, with the geometry
 * of ddp_layout_tp_piece. */
#include "layout.h"
#include <stdlib.h>
#include <string.h>

int ddp_layout_tp_stage_runs(const ddp_builder *b, const ddp_layout *lay, int stage, int64_t *lo, int64_t *hi,
                             bool *split) {
  int n = 0;
  bool prev = false;
  for (int j = 0; j < lay->norder; j++) {
    const ddp_unit *u = &b->units[lay->order[j]];
    if (stage >= 0 && lay->stage_of_unit[lay->order[j]] != stage) continue;
    if (n == 0 || u->tp_split != prev) {
      if (lo) lo[n] = u->flat_offset;
      if (split) split[n] = u->tp_split;
      prev = u->tp_split;
      n++;
    }
    if (hi) hi[n - 1] = u->flat_offset + u->numel;
  }
  return n;
}

int ddp_layout_tp_runs(const ddp_builder *b, const ddp_layout *lay, int64_t *lo, int64_t *hi, bool *split) {
  return ddp_layout_tp_stage_runs(b, lay, -1, lo, hi, split);
}

int ddp_layout_tp_slice_runs(const ddp_builder *b, const ddp_layout *lay, int g, int r, int64_t *lo, int64_t *hi,
                             bool *split) {
  const ddp_shard_group *sg = &lay->groups[g];
  int64_t per = sg->len / lay->world, slo = sg->lo + r * per, shi = slo + per;
  int n = 0;
  bool prev = false;
  for (int j = sg->first; j <= sg->last; j++) {
    const ddp_unit *u = &b->units[lay->order[j]];
    int64_t a, e;
    if (!ddp_unit_in_slice(u, slo, shi, &a, &e)) continue;
    if (n == 0 || u->tp_split != prev) {
      if (lo) lo[n] = a;
      if (split) split[n] = u->tp_split;
      prev = u->tp_split;
      n++;
    }
    if (hi) hi[n - 1] = e;
  }
  return n;
}

int ddp_tp_segments(const ddp_model_param *pp, int T, int t, int64_t a, int64_t b, ddp_tp_seg seg[3]) {
  int64_t R = pp->full_shape[0], C = pp->full_shape[1];
  int n = 0;
  if (b <= a) return 0;
  if (pp->tp_split != TP_COLS || T <= 1) { /* one range: whole, or this rank's rows */
    int64_t base = pp->tp_split == TP_ROWS && T > 1 ? t * (R / T) * C : 0;
    seg[n++] = (ddp_tp_seg){.at = a, .n = b - a, .first = base + a, .runs = 1, .stride = 0};
    return n;
  }
  int64_t w = C / T, col0 = t * w; /* local row r, column c = whole element r C + col0 + c */
  int64_t r1 = (a + w - 1) / w, r2 = b / w; /* the whole local rows [r1, r2) inside [a, b) */
  if (a % w) { /* a partial first row */
    int64_t end = b < (a / w + 1) * w ? b : (a / w + 1) * w;
    seg[n++] = (ddp_tp_seg){.at = a, .n = end - a, .first = (a / w) * C + col0 + a % w, .runs = 1, .stride = 0};
    if (end == b) return n;
  }
  if (r2 > r1)
    seg[n++] = (ddp_tp_seg){.at = r1 * w, .n = (r2 - r1) * w, .first = r1 * C + col0, .runs = r2 - r1, .stride = C};
  if (b % w && b / w >= r1) /* a partial last row */
    seg[n++] = (ddp_tp_seg){.at = r2 * w, .n = b - r2 * w, .first = r2 * C + col0, .runs = 1, .stride = 0};
  return n;
}

void ddp_layout_tp_piece(ddp_builder *b, int32_t id, const ddp_model_param *pp, const char *state_name, int t,
                         int rank) {
  ddp_tp_seg seg[3] = {{0}}; /* the whole local range: one segment (rows: one range; columns: a run per row) */
  ddp_tp_segments(pp, b->tp, t, 0, pp->numel, seg);
  ddp_tensor *tt = &b->plan->tensors[id];
  tt->flags |= TF_PIECE;
  tt->state_name = ddp_xstrdup(state_name);
  tt->param = pp->tensor;
  tt->piece_rank = rank;
  tt->piece_first = seg[0].first;
  tt->piece_runs = seg[0].runs;
  tt->piece_stride = seg[0].runs > 1 ? seg[0].stride : 0;
}

void ddp_layout_whole_shape(ddp_builder *b, const ddp_model_param *pp) {
  ddp_tensor *pt = &b->plan->tensors[pp->tensor];
  pt->ndim = 2;
  memset(pt->shape, 0, sizeof pt->shape);
  pt->shape[0] = pp->full_shape[0], pt->shape[1] = pp->full_shape[1];
  pt->bytes = (uint64_t)(pp->full_shape[0] * pp->full_shape[1]) * ddp_dtype_size(pt->dtype);
}


void ddp_layout_tensor_pieces(ddp_builder *b, ddp_layout *lay) {
  if (lay->pipe) return; /* a pipeline's pieces (one per stage and tensor rank): compiler/layout/stages.c */
  int T = b->tp;
  ddp_plan *p = b->plan;
  /* the moments' named views of each parameter (layout_optimizer_state) */
  int32_t *m_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  int32_t *v_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)p->ntensors + 1));
  for (uint32_t i = 0; i < p->ntensors; i++) m_of[i] = v_of[i] = -1;
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    if (t->param < 0 || (t->flags & TF_PIECE)) continue;
    if (t->flags & TF_OPT_M) m_of[t->param] = (int32_t)i;
    if (t->flags & TF_OPT_V) v_of[t->param] = (int32_t)i;
  }
  for (int q = 0; q < b->nparams; q++) {
    const ddp_model_param *pp = &b->params[q];
    if (pp->tp_split == TP_WHOLE) continue;
    const ddp_unit *u = &b->units[pp->unit];
    char *sname = ddp_xstrdup(b_t(b, pp->tensor)->state_name);
    int64_t shape[1] = {pp->numel};
    const int32_t bases[3] = {u->master, m_of[pp->tensor], v_of[pp->tensor]};
    const uint32_t roles[3] = {TF_PARAM | (u->trainable ? TF_TRAINABLE : 0), TF_OPT_M, TF_OPT_V};
    const char *suffix[3] = {"", ".exp_avg", ".exp_avg_sq"};
    for (int k = 0; k < 3; k++) {
      if (bases[k] < 0) continue;
      /* piece 0 reuses the moment's view; the master's pieces are new views (the parameter becomes shape-only) */
      int32_t base = k == 0 ? u->master : p->tensors[bases[k]].base;
      uint64_t at = k == 0 ? (uint64_t)pp->unit_offset * ddp_dtype_size(b->fdt) : p->tensors[bases[k]].view;
      for (int t = 0; t < T; t++) {
        int32_t id;
        if (k > 0 && t == 0) {
          id = bases[k];
          ddp_tensor *tt = &p->tensors[id];
          tt->ndim = 1;
          memset(tt->shape, 0, sizeof tt->shape);
          tt->shape[0] = pp->numel;
          free(tt->state_name);
          tt->state_name = NULL;
        } else {
          id = b_view(b, b_fmt(b, "%s%s.tp%d", sname, suffix[k], t), base, at, b->fdt, 1, shape, roles[k]);
        }
        ddp_layout_tp_piece(b, id, pp, sname, t, t);
      }
    }
    ddp_tensor *pt = &p->tensors[pp->tensor];
    pt->base = -1;
    pt->view = 0;
    pt->flags = (pt->flags & ~(uint32_t)TF_PERSISTENT) | TF_SHAPE_ONLY;
    ddp_layout_whole_shape(b, pp);
    free(sname);
  }
  free(m_of);
  free(v_of);
}

/* compiler/layout/stages.c: the layout of a pipeline. The model's layers (transformer blocks, or the MLP's
 * layers) are cut into chunks (stages x virtual stages): the schedule's split, or a split balancing the
 * compiler's own cost of each layer (its GEMM FLOPs plus 300 x the bytes its other instructions touch,
 * Hopper's ratio of bf16 FLOP/s to HBM bytes/s; the embedding counted with the first chunk, the final
 * norm, head and loss with the last). Chunk c runs on stage c % stages. Every instruction of the builder's
 * one-microbatch step belongs to one chunk; every parameter unit to the stage of the chunks that use it.
 * Each stage gets its own flat tensors (stage<s>.flat.params, .copy, .grads, .exp_avg, .exp_avg_sq), its
 * units become views of them, and the state-dict parameters become shape-only tensors described by one
 * piece per tensor on the stage's rank (checkpoints are then one file whatever the split); with tensor
 * parallelism (mesh.tensor = T) a split parameter has one piece per tensor rank of the stage (world rank
 * s x T + t of replica 0), a whole one a piece on tensor rank 0 that every tensor rank loads
 * (runtime/io/checkpoint.c). */
#include "layout.h"
#include "access.h"
#include <stdlib.h>
#include <string.h>

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* cost of one builder instruction for balancing */
static double instr_cost(const ddp_instr *in) {
  if (in->opcode == I_GEMM) return 2.0 * (double)in->i[GEMM_I_M] * (double)in->i[GEMM_I_N] * (double)in->i[GEMM_I_K];
  if (in->opcode != I_KERNEL) return 0;
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[128];
  if (ddp_instr_footprint(in, 1, use, why, sizeof why)) return 0;
  double bytes = 0;
  for (int s = 0; s < DDP_MAX_PTRS; s++) bytes += (double)use[s].bytes;
  return 300.0 * bytes;
}

/* The chunk of every builder instruction (-1: timers and phase ranges, which the pipeline pass re-emits; the
 * tensor collectives' TP_COMM timers belong to their collective's chunk). */
static void instr_chunks(const ddp_builder *b, const int *chunk_of_layer, int C, int32_t *chunk) {
  uint32_t n = b->step.n, fe = b_forward_end(b);
  int64_t ffirst = -1, bfirst = -1;
  for (uint32_t k = 0; k < n; k++)
    if (b->step.v[k].layer >= 0) {
      if (k < fe && ffirst < 0) ffirst = k;
      if (k > fe && bfirst < 0) bfirst = k;
    }
  for (uint32_t k = 0; k < n; k++) {
    const ddp_instr *in = &b->step.v[k];
    bool phase_marker = in->opcode == I_TIMER ||
                        ((in->opcode == I_RANGE_PUSH || in->opcode == I_RANGE_POP) && in->layer < 0);
    if (phase_marker) chunk[k] = -1;
    else if (in->layer >= 0) chunk[k] = chunk_of_layer[in->layer];
    else if (k < fe) chunk[k] = ffirst >= 0 && (int64_t)k < ffirst ? 0 : C - 1;
    else chunk[k] = bfirst >= 0 && (int64_t)k < bfirst ? C - 1 : 0;
  }
  /* tensor parallelism: the timers around a tensor collective go with it (the collective is the next
   * instruction after TP_COMM_BEGIN, the one before TP_COMM_END) */
  for (uint32_t k = 0; k < n; k++) {
    const ddp_instr *in = &b->step.v[k];
    if (in->opcode != I_TIMER) continue;
    if (in->i[TIMER_I_ROLE] == TIMER_TP_COMM_BEGIN && k + 1 < n) chunk[k] = chunk[k + 1];
    if (in->i[TIMER_I_ROLE] == TIMER_TP_COMM_END && k > 0) chunk[k] = chunk[k - 1];
  }
}

/* Contiguous chunks of layers minimising the largest chunk cost (extras: the first and last chunk's). */
static void balance(int L, int C, const double *cost, double first_extra, double last_extra, int64_t *split) {
  double *pre = ddp_xcalloc((size_t)L + 1, sizeof(double));
  for (int l = 0; l < L; l++) pre[l + 1] = pre[l] + cost[l];
  /* best[c][l]: the smallest max cost of layers [0, l) in c chunks; cut[c][l]: where chunk c-1 starts */
  double *best = ddp_xmalloc(sizeof(double) * (size_t)(C + 1) * (size_t)(L + 1));
  int *cut = ddp_xcalloc((size_t)(C + 1) * (size_t)(L + 1), sizeof(int));
#define BEST(c, l) best[(size_t)(c) * (size_t)(L + 1) + (size_t)(l)]
#define CUT(c, l) cut[(size_t)(c) * (size_t)(L + 1) + (size_t)(l)]
  for (int c = 0; c <= C; c++)
    for (int l = 0; l <= L; l++) BEST(c, l) = 1e300;
  BEST(0, 0) = 0;
  for (int c = 1; c <= C; c++)
    for (int l = c; l <= L - (C - c); l++)
      for (int j = c - 1; j < l; j++) {
        double w = pre[l] - pre[j] + (c == 1 ? first_extra : 0) + (c == C ? last_extra : 0);
        double v = BEST(c - 1, j) > w ? BEST(c - 1, j) : w;
        if (v < BEST(c, l)) BEST(c, l) = v, CUT(c, l) = j;
      }
  for (int c = C, l = L; c >= 1; c--) {
    int j = CUT(c, l);
    split[c - 1] = l - j;
    l = j;
  }
#undef BEST
#undef CUT
  free(best);
  free(cut);
  free(pre);
}

static int32_t stage_flat(ddp_builder *b, int s, const char *what, int dt, int arena, uint32_t flags, int64_t n) {
  int64_t shape[1] = {n};
  return b_tensor(b, b_fmt(b, "stage%d.flat.%s", s, what), dt, arena, flags | TF_PERSISTENT, 1, shape);
}

int ddp_layout_pipeline(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  int P = s->stages, C = s->stages * s->virtual_stages;
  int L = (int)(s->model_kind == MODEL_TRANSFORMER ? s->layers : s->n_mlp_layers);
  if (L < C)
    return ddp_fail(err, errcap, "%s: parallel.stages: %d chunks (stages x virtual stages) for a model of %d layers", s->path,
                    C, L);
  lay->pipe = true;
  lay->nchunks = C;
  lay->chunk_of_layer = ddp_xcalloc((size_t)L + 1, sizeof(int));
  lay->instr_chunk = ddp_xcalloc((size_t)b->step.n + 1, sizeof(int32_t));
  int64_t split[DDP_MAX_STAGES];
  if (s->nsplit == C) {
    memcpy(split, s->split, sizeof(int64_t) * (size_t)C);
  } else { /* costs by layer, the rest to the first or last chunk by position */
    double *cost = ddp_xcalloc((size_t)L + 1, sizeof(double)), first = 0, last = 0;
    for (int l = 0; l < L; l++) lay->chunk_of_layer[l] = 0;
    instr_chunks(b, lay->chunk_of_layer, 2, lay->instr_chunk); /* 0: before the layers, 1: after */
    for (uint32_t k = 0; k < b->step.n; k++) {
      const ddp_instr *in = &b->step.v[k];
      double w = instr_cost(in);
      if (in->layer >= 0 && in->layer < L) cost[in->layer] += w;
      else if (lay->instr_chunk[k] == 0) first += w;
      else if (lay->instr_chunk[k] == 1) last += w;
    }
    balance(L, C, cost, first, last, split);
    free(cost);
  }
  for (int c = 0, l = 0; c < C; c++) {
    lay->split[c] = split[c];
    for (int64_t j = 0; j < split[c]; j++) lay->chunk_of_layer[l++] = c;
  }
  instr_chunks(b, lay->chunk_of_layer, C, lay->instr_chunk);

  /* every unit on one stage: the stage of the chunks reading or writing it */
  lay->stage_of_unit = ddp_xmalloc(sizeof(int) * ((size_t)b->nunits + 1));
  for (int u = 0; u < b->nunits; u++) lay->stage_of_unit[u] = -1;
  int32_t *unit_of = ddp_xmalloc(sizeof(int32_t) * ((size_t)b->plan->ntensors + 1));
  for (uint32_t t = 0; t < b->plan->ntensors; t++) unit_of[t] = -1;
  for (int u = 0; u < b->nunits; u++) {
    unit_of[b->units[u].master] = unit_of[b->units[u].copy] = u;
    if (b->units[u].grad >= 0) unit_of[b->units[u].grad] = u;
  }
  for (uint32_t k = 0; k < b->step.n; k++) {
    int c = lay->instr_chunk[k];
    if (c < 0) continue;
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++) {
      int32_t t = b->step.v[k].p[sl].tensor;
      if (t < 0) continue;
      int u = unit_of[ddp_tensor_root(b->plan, t)];
      if (u < 0) continue;
      if (lay->stage_of_unit[u] >= 0 && lay->stage_of_unit[u] != c % P) {
        free(unit_of);
        return ddp_fail(err, errcap, "%s: parallel.split: %s is used on stages %d and %d (a weight tied across "
                        "stages); split the layers so that it stays on one stage", s->path, b->units[u].name,
                        lay->stage_of_unit[u], c % P);
      }
      lay->stage_of_unit[u] = c % P;
    }
  }
  free(unit_of);
  for (int u = 0; u < b->nunits; u++)
    if (lay->stage_of_unit[u] < 0) lay->stage_of_unit[u] = 0; /* used by no instruction: kept on stage 0 */

  /* per stage: units in gradient-ready order, flat offsets, flat tensors, units as views */
  lay->stage_flat = ddp_xcalloc((size_t)P, sizeof *lay->stage_flat);
  bool train = s->mode == MODE_TRAIN && s->optimizer == OPTIM_ADAMW;
  uint64_t fsz = ddp_dtype_size(b->fdt), csz = ddp_dtype_size(b->act_dt), gsz = ddp_dtype_size(b->grad_dt);
  for (int st = 0; st < P; st++) {
    ddp_stage_flat *f = &lay->stage_flat[st];
    f->params = f->copies = f->grads = f->m = f->v = -1;
    int64_t off = 0;
    for (int j = 0; j < lay->norder; j++) {
      ddp_unit *u = &b->units[lay->order[j]];
      if (lay->stage_of_unit[lay->order[j]] != st) continue;
      u->flat_offset = off;
      off = align_up(off + u->numel, DDP_FLAT_ALIGN);
    }
    f->n = off > 0 ? off : DDP_FLAT_ALIGN;
    f->params = stage_flat(b, st, "params", b->fdt, ARENA_PARAM, TF_PARAM | TF_TRAINABLE, f->n);
    if (b->act_dt != b->fdt) f->copies = stage_flat(b, st, "params.copy", b->act_dt, ARENA_PARAM, TF_PARAM_COPY, f->n);
    if (b->backward) f->grads = stage_flat(b, st, "grads", b->grad_dt, ARENA_GRAD, TF_GRAD, f->n);
    if (train) {
      f->m = stage_flat(b, st, "exp_avg", b->fdt, ARENA_OPT, TF_OPT_M, f->n);
      f->v = stage_flat(b, st, "exp_avg_sq", b->fdt, ARENA_OPT, TF_OPT_V, f->n);
    }
    for (int j = 0; j < lay->norder; j++) {
      ddp_unit *u = &b->units[lay->order[j]];
      if (lay->stage_of_unit[lay->order[j]] != st) continue;
      ddp_layout_rebase(b, u->master, f->params, (uint64_t)u->flat_offset * fsz);
      if (f->copies >= 0) ddp_layout_rebase(b, u->copy, f->copies, (uint64_t)u->flat_offset * csz);
      if (u->grad >= 0) ddp_layout_rebase(b, u->grad, f->grads, (uint64_t)u->flat_offset * gsz);
    }
  }
  /* the state-dict parameters: shape-only, one piece each (and their moments) on the stage's rank (replica
   * 0's; with tensor parallelism its tensor rank 0's for a whole parameter, which every tensor rank of the
   * stage loads, and one piece per tensor rank of a split one, the geometry of compiler/layout/tensor.c) */
  int T = b->tp > 1 ? b->tp : 1;
  for (int p = 0; p < b->nparams; p++) {
    const ddp_model_param *pp = &b->params[p];
    const ddp_unit *u = &b->units[pp->unit];
    if (!u->trainable) continue;
    int st = lay->stage_of_unit[pp->unit];
    const ddp_stage_flat *f = &lay->stage_flat[st];
    bool split = T > 1 && pp->tp_split != TP_WHOLE;
    ddp_tensor *pt = &b->plan->tensors[pp->tensor];
    pt->base = -1;
    pt->view = 0;
    pt->flags = (pt->flags & ~(uint32_t)TF_PERSISTENT) | TF_SHAPE_ONLY;
    if (split) ddp_layout_whole_shape(b, pp);
    const char *sname = pt->state_name; /* owned by the tensor, stable when the table grows */
    int64_t shape[1] = {pp->numel};
    uint64_t at = (uint64_t)(u->flat_offset + pp->unit_offset) * fsz;
    const int32_t bases[3] = {f->params, f->m, f->v};
    const uint32_t roles[3] = {TF_PARAM | TF_TRAINABLE, TF_OPT_M, TF_OPT_V};
    const char *suffix[3] = {"", ".exp_avg", ".exp_avg_sq"};
    for (int k = 0; k < 3; k++) {
      if (bases[k] < 0) continue;
      for (int t = 0; t < (split ? T : 1); t++) {
        int rank = st * T + t; /* replica 0's rank of the stage and tensor rank */
        int32_t id = b_view(b, split ? b_fmt(b, "%s%s.stage%d.tp%d", sname, suffix[k], st, t)
                                     : b_fmt(b, "%s%s.stage%d", sname, suffix[k], st),
                            bases[k], at, b->fdt, 1, shape, roles[k] | (split ? 0 : TF_PIECE));
        if (split) {
          ddp_layout_tp_piece(b, id, pp, sname, t, rank);
          continue;
        }
        ddp_tensor *tt = &b->plan->tensors[id];
        tt->state_name = ddp_xstrdup(sname);
        tt->param = pp->tensor;
        tt->piece_rank = rank;
      }
    }
  }
  return 0;
}

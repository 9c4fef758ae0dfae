/* compiler/inspect/inspect_tensor.c: `ddpc inspect`'s "== tensor parallelism ==" section and its JSON object
 * "tensor_parallel", read from the plan alone, printed only when meta.tensor_parallel = T > 1 (data axis
 * D = meta.data_parallel; world rank r = d x T + t):
 *   mesh          each rank's (data, tensor) coordinates and the communicators by their members: comm 1 + d
 *                 the tensor group of replica d (ranks d T .. d T + T - 1), comm 1 + D + t the data group of
 *                 tensor rank t (ranks t, T + t, ...; only when D > 1), as compiler/passes/tensor.c makes them;
 *                 with a pipeline (meta.pipe_stages = S) each rank's (data, stage, tensor), rank (d S + s) T + t,
 *                 and the comms by compiler/passes/pipeline.c's numbering (stage, replica and tensor groups);
 *                 rank 0's textbook figure counts its stage's blocks;
 *   shapes        every split state-dict parameter (a TF_SHAPE_ONLY tensor with one TF_PIECE per tensor rank):
 *                 its whole shape, the split (rows: the output features of a column-parallel layer or the
 *                 vocabulary of the embedding and the head; columns, the strided pieces: the input features
 *                 of a row-parallel layer), each tensor rank's shape; the whole (replicated) parameters; the
 *                 parameter bytes of each tensor rank against one rank's (the model unsplit);
 *   collectives   rank 0's step: every collective between TP_COMM_BEGIN and TP_COMM_END timers (forward
 *                 before the FORWARD_END timer, backward after it), grouped by the instruction's layer, with
 *                 its payload (an all-gather's: what it gathers, count x T); other collectives on a tensor
 *                 group (the gradient norm's partial sums under clipping) apart;
 *   volume        per rank the all-reduce and all-gather payloads per step, against Megatron-LM's figure:
 *                 per block 2 all-reduces of tokens x d_model forward (ours: f32, the residual stream) and 2
 *                 backward (the activation dtype's gradients), 4 x layers x tokens x d_model elements (tokens =
 *                 batch_per_rank x context); the collectives outside the blocks (the embedding's output, the
 *                 head input's gradient, the vocabulary-parallel cross-entropy's [T, N, 2] statistics) are
 *                 what ddpc adds, and measured - textbook must equal them exactly ("reconciles"). */
#include "inspect_jput.h"
#include "inspect_tensor.h"
#include "err.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void comm_label(char *buf, size_t cap, const ddp_plan *p, uint32_t c, int64_t T) {
  int64_t w = -1;
  int r = ddp_plan_comm_role(p, c, &w);
  int64_t S = p->meta.pipe_stages;
  if (r == COMM_ROLE_TENSOR && S > 0) snprintf(buf, cap, "tensor group of replica %" PRId64 ", stage %" PRId64, w / S, w % S);
  else if (r == COMM_ROLE_TENSOR) snprintf(buf, cap, "tensor group of replica %" PRId64, w);
  else if (r == COMM_ROLE_DATA) snprintf(buf, cap, "data group of tensor rank %" PRId64, w);
  else if (r == COMM_ROLE_STAGE) snprintf(buf, cap, "replicas of stage %" PRId64 ", tensor rank %" PRId64, w / T, w % T);
  else if (r == COMM_ROLE_REPLICA) snprintf(buf, cap, "stages of replica %" PRId64 ", tensor rank %" PRId64, w / T, w % T);
  else snprintf(buf, cap, "?");
}

const char *const ddp_tp_phase_names[3] = {"forward", "backward", "optimizer"};

/* The collectives of world rank r's step (timed ones and others on a tensor group); *n of them. */
static ddp_tp_coll *collect(const ddp_plan *p, int64_t r, int *n) {
  const ddp_program *st = &p->ranks[r].step;
  ddp_tp_coll *v = ddp_xcalloc(st->n ? st->n : 1, sizeof *v);
  int open = 0, phase = TP_FORWARD, have_fwd_end = 0;
  for (uint32_t k = 0; k < st->n; k++)
    if (st->v[k].opcode == I_TIMER && st->v[k].i[TIMER_I_ROLE] == TIMER_FORWARD_END) have_fwd_end = 1;
  *n = 0;
  for (uint32_t k = 0; k < st->n; k++) {
    const ddp_instr *in = &st->v[k];
    if (in->opcode == I_TIMER) {
      int64_t role = in->i[TIMER_I_ROLE];
      if (role == TIMER_TP_COMM_BEGIN) open = 1;
      else if (role == TIMER_TP_COMM_END) open = 0;
      else if (role == TIMER_FORWARD_END) phase = TP_BACKWARD;
      else if (role == TIMER_BACKWARD_END) phase = TP_OPTIMIZER;
      continue;
    }
    if (!ddp_is_group_collective(in->opcode)) continue;
    int64_t comm = in->i[COLL_I_COMM];
    int timed = open && in->stream == STREAM_COMPUTE;
    if (!timed && !ddp_plan_tensor_comm(p, comm)) continue;
    ddp_tp_coll *c = &v[(*n)++];
    c->index = k;
    c->timed = timed;
    c->opcode = in->opcode;
    c->name = ddp_plan_string(p, in->name);
    c->phase = have_fwd_end || phase == TP_OPTIMIZER ? phase : strstr(c->name, ".bwd") ? TP_BACKWARD : TP_FORWARD;
    c->layer = in->layer;
    c->count = in->i[COLL_I_COUNT];
    c->dtype = in->dt[COLL_P_SEND];
    c->comm = comm;
    uint64_t group = comm >= 1 && comm <= (int64_t)p->ncomms ? p->comms[comm - 1].n : (uint64_t)p->meta.world;
    c->elements = (uint64_t)(c->count > 0 ? c->count : 0) * (c->opcode == I_ALL_GATHER ? group : 1);
    c->bytes = c->elements * ddp_dtype_size(c->dtype);
  }
  return v;
}

static void sum_volume(const ddp_tp_coll *v, int n, ddp_tp_volume *vol) {
  memset(vol, 0, sizeof *vol);
  for (int k = 0; k < n; k++) {
    const ddp_tp_coll *c = &v[k];
    if (!c->timed) continue;
    if (c->opcode == I_ALL_REDUCE) vol->all_reduces++, vol->ar_elements += c->elements, vol->ar_bytes += c->bytes;
    else if (c->opcode == I_ALL_GATHER)
      vol->all_gathers++, vol->ag_elements += c->elements, vol->ag_bytes += c->bytes,
          vol->ag_sent_elements += (uint64_t)c->count;
    else vol->others++, vol->other_elements += c->elements, vol->other_bytes += c->bytes;
    vol->elements += c->elements;
    vol->bytes += c->bytes;
  }
}

static int is_state_param(const ddp_tensor *t) { return (t->flags & TF_PARAM) && t->state_name && t->state_name[0]; }

static void shapes(const ddp_plan *p, ddp_tp_info *ti) {
  ti->splits = ddp_xcalloc(p->ntensors ? p->ntensors : 1, sizeof *ti->splits);
  ti->rank_param_bytes = ddp_xcalloc((size_t)ti->T, sizeof *ti->rank_param_bytes);
  int32_t *split_of = ddp_xmalloc(sizeof(int32_t) * (p->ntensors ? p->ntensors : 1));
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    split_of[i] = -1;
    if (!is_state_param(t) || (t->flags & TF_PIECE)) continue;
    if (t->flags & TF_SHAPE_ONLY) {
      ddp_tp_split *s = &ti->splits[ti->nsplits];
      s->whole = (int32_t)i;
      s->pieces = ddp_xmalloc(sizeof(int32_t) * (size_t)ti->T);
      for (int64_t r = 0; r < ti->T; r++) s->pieces[r] = -1;
      split_of[i] = ti->nsplits++;
      ti->one_rank_param_bytes += t->bytes;
    } else {
      ti->nwhole++;
      ti->whole_bytes += t->bytes;
      ti->one_rank_param_bytes += t->bytes;
    }
  }
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    if (!(t->flags & TF_PIECE) || !(t->flags & TF_PARAM) || t->param < 0 || (uint32_t)t->param >= p->ntensors) continue;
    int32_t s = split_of[t->param];
    if (s < 0 || t->piece_rank < 0 || (ti->S <= 0 && t->piece_rank >= ti->T)) continue;
    int64_t tr = t->piece_rank % ti->T; /* a pipeline's pieces: world rank s T + t of replica 0 */
    ti->splits[s].pieces[tr] = (int32_t)i;
    if (ddp_piece_runs(t) > 1) ti->splits[s].columns = 1;
  }
  int kept = 0; /* a pipeline's whole parameters are shape-only too: one piece holding all of it */
  for (int s = 0; s < ti->nsplits; s++) {
    ddp_tp_split *sp = &ti->splits[s];
    const ddp_tensor *w = &p->tensors[sp->whole];
    int npieces = 0;
    for (int64_t r = 0; r < ti->T; r++) npieces += sp->pieces[r] >= 0;
    if (ti->S > 0 && npieces == 1 && sp->pieces[0] >= 0 &&
        ddp_tensor_numel(&p->tensors[sp->pieces[0]]) == ddp_tensor_numel(w)) {
      ti->nwhole++;
      ti->whole_bytes += w->bytes;
      free(sp->pieces);
      continue;
    }
    for (int64_t r = 0; r < ti->T; r++)
      if (sp->pieces[r] >= 0) ti->rank_param_bytes[r] += p->tensors[sp->pieces[r]].bytes;
    ti->splits[kept++] = *sp;
  }
  ti->nsplits = kept;
  for (int64_t r = 0; r < ti->T; r++) ti->rank_param_bytes[r] += ti->whole_bytes;
  free(split_of);
}

int ddp_tp_analyse(const ddp_plan *p, ddp_tp_info *ti) {
  memset(ti, 0, sizeof *ti);
  if (p->meta.tensor_parallel <= 1 || !p->ranks || p->meta.world < 1) return 0;
  ti->T = p->meta.tensor_parallel;
  ti->world = p->meta.world;
  ti->S = p->meta.pipe_stages > 0 ? p->meta.pipe_stages : 0;
  ti->layers = p->meta.layers > 0 ? p->meta.layers : 0;
  if (ti->S > 0) { /* a pipeline: rank 0 runs its stage's blocks */
    unsigned char *seen = ddp_xcalloc((size_t)ti->layers + 1, 1);
    const ddp_program *st = &p->ranks[0].step;
    for (uint32_t k = 0; k < st->n; k++)
      if (st->v[k].layer >= 0 && st->v[k].layer < ti->layers) seen[st->v[k].layer] = 1;
    ti->layers = 0;
    for (int64_t l = 0; l < p->meta.layers; l++) ti->layers += seen[l];
    free(seen);
  }
  ti->D = p->meta.data_parallel > 0 ? p->meta.data_parallel : ti->world / ti->T;
  ti->volume = ddp_xcalloc((size_t)ti->world, sizeof *ti->volume);
  for (int64_t r = 0; r < ti->world; r++) {
    int n;
    ddp_tp_coll *v = collect(p, r, &n);
    sum_volume(v, n, &ti->volume[r]);
    if (r == 0) ti->colls = v, ti->ncolls = n;
    else free(v);
  }
  shapes(p, ti);
  const ddp_meta *m = &p->meta;
  ti->tokens = m->batch_per_rank * m->context;
  ti->fwd_dtype = DT_F32;
  ti->bwd_dtype = (int)m->act_dtype;
  uint64_t per = (uint64_t)ti->layers * (uint64_t)(ti->tokens > 0 ? ti->tokens : 0) *
                 (uint64_t)(m->d_model > 0 ? m->d_model : 0);
  ti->tb_fwd_elements = 2 * per;
  ti->tb_bwd_elements = m->mode == MODE_FORWARD ? 0 : 2 * per;
  ti->tb_elements = ti->tb_fwd_elements + ti->tb_bwd_elements;
  ti->tb_fwd_bytes = ti->tb_fwd_elements * ddp_dtype_size(ti->fwd_dtype);
  ti->tb_bwd_bytes = ti->tb_bwd_elements * ddp_dtype_size(ti->bwd_dtype);
  ti->tb_bytes = ti->tb_fwd_bytes + ti->tb_bwd_bytes;
  for (int k = 0; k < ti->ncolls; k++) {
    const ddp_tp_coll *c = &ti->colls[k];
    if (!c->timed) continue;
    if (c->layer < 0) ti->ex_elements += c->elements, ti->ex_bytes += c->bytes;
    else ti->blk_elements += c->elements, ti->blk_bytes += c->bytes;
  }
  return 1;
}

void ddp_tp_info_free(ddp_tp_info *ti) {
  for (int s = 0; s < ti->nsplits; s++) free(ti->splits[s].pieces);
  free(ti->splits);
  free(ti->colls);
  free(ti->volume);
  free(ti->rank_param_bytes);
  memset(ti, 0, sizeof *ti);
}

/* ---- shapes ---- */

static const char *split_kind(const ddp_plan *p, const ddp_tp_split *s) {
  if (s->columns) return "row-parallel";
  const char *n = p->tensors[s->whole].state_name;
  if (strstr(n, "embed") || strstr(n, "lm_head")) return "vocabulary";
  return "column-parallel";
}

/* A piece's shape in the whole tensor's terms: rows (contiguous) or columns (one run per row) of it. */
static int64_t piece_shape(const ddp_plan *p, const ddp_tp_split *s, int32_t pc, int64_t *shape) {
  const ddp_tensor *w = &p->tensors[s->whole], *t = &p->tensors[pc];
  int nd = w->ndim < 1 ? 1 : w->ndim > DDP_MAX_DIMS ? DDP_MAX_DIMS : w->ndim;
  uint64_t n = ddp_tensor_numel(t), wn = ddp_tensor_numel(w);
  for (int d = 0; d < nd; d++) shape[d] = w->shape[d];
  int64_t runs = ddp_piece_runs(t), last = w->shape[nd - 1];
  if (runs > 1 && last > 0 && (uint64_t)runs * (uint64_t)last == wn) shape[nd - 1] = (int64_t)n / runs;
  else if (runs == 1 && w->shape[0] > 0 && wn % (uint64_t)w->shape[0] == 0 && wn)
    shape[0] = (int64_t)(n / (wn / (uint64_t)w->shape[0]));
  else return shape[0] = (int64_t)n, 1;
  return nd;
}

static void dims_text(char *buf, size_t cap, const int64_t *shape, int nd) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < nd; d++) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%" PRId64, d ? "," : "", shape[d]);
  snprintf(buf + n, n < cap ? cap - n : 0, "]");
}

/* "rows 0-31" / "cols 128-255" of the whole tensor. */
static void piece_range(char *buf, size_t cap, const ddp_plan *p, const ddp_tp_split *s, int32_t pc) {
  const ddp_tensor *w = &p->tensors[s->whole], *t = &p->tensors[pc];
  int nd = w->ndim < 1 ? 1 : w->ndim > DDP_MAX_DIMS ? DDP_MAX_DIMS : w->ndim;
  int64_t shape[DDP_MAX_DIMS];
  piece_shape(p, s, pc, shape);
  uint64_t row = ddp_tensor_numel(w) / (uint64_t)(w->shape[0] > 0 ? w->shape[0] : 1);
  if (s->columns) {
    int64_t c0 = w->shape[nd - 1] > 0 ? t->piece_first % w->shape[nd - 1] : 0;
    snprintf(buf, cap, "cols %" PRId64 "-%" PRId64, c0, c0 + shape[nd - 1] - 1);
  } else {
    int64_t r0 = row ? t->piece_first / (int64_t)row : 0;
    snprintf(buf, cap, "rows %" PRId64 "-%" PRId64, r0, r0 + shape[0] - 1);
  }
}

static void print_shapes(FILE *o, const ddp_plan *p, const ddp_tp_info *ti) {
  fprintf(o, "split parameters (state dict: whole shape, and each tensor rank's piece; world rank r holds tensor "
             "rank r %% %" PRId64 "'s): %d\n", ti->T, ti->nsplits);
  int wn = 4;
  for (int s = 0; s < ti->nsplits; s++) {
    int a = (int)strlen(p->tensors[ti->splits[s].whole].state_name);
    wn = a > wn ? a : wn;
  }
  fprintf(o, "  %-*s  %-12s %-26s", wn, "name", "whole", "split");
  for (int64_t r = 0; r < ti->T; r++) {
    char h[48];
    snprintf(h, sizeof h, "tensor rank %" PRId64, r);
    fprintf(o, r + 1 < ti->T ? "  %-24s" : "  %s", h);
  }
  fprintf(o, "\n");
  for (int s = 0; s < ti->nsplits; s++) {
    const ddp_tp_split *sp = &ti->splits[s];
    const ddp_tensor *w = &p->tensors[sp->whole];
    char whole[64], split[48];
    dims_text(whole, sizeof whole, w->shape, w->ndim > DDP_MAX_DIMS ? DDP_MAX_DIMS : w->ndim);
    snprintf(split, sizeof split, "%s (%s)", sp->columns ? "columns" : "rows", split_kind(p, sp));
    fprintf(o, "  %-*s  %-12s %-26s", wn, w->state_name, whole, split);
    for (int64_t r = 0; r < ti->T; r++) {
      char cell[160] = "-", sh[64], rg[64];
      if (sp->pieces[r] >= 0) {
        int64_t shape[DDP_MAX_DIMS];
        int nd = (int)piece_shape(p, sp, sp->pieces[r], shape);
        dims_text(sh, sizeof sh, shape, nd);
        piece_range(rg, sizeof rg, p, sp, sp->pieces[r]);
        snprintf(cell, sizeof cell, "%s %s", sh, rg);
      }
      fprintf(o, r + 1 < ti->T ? "  %-24s" : "  %s", cell);
    }
    fprintf(o, "\n");
  }
  fprintf(o, "whole parameters (replicated on every rank): %d, %" PRIu64 " bytes per rank\n", ti->nwhole, ti->whole_bytes);
  fprintf(o, "parameter bytes per rank (%s masters; split pieces + whole), one rank unsplit: %" PRIu64 "\n",
          ddp_dtype_name(DT_F32), ti->one_rank_param_bytes);
  for (int64_t r = 0; r < ti->T; r++) {
    fprintf(o, "  tensor rank %" PRId64 " (ranks", r);
    for (int64_t w = r; w < ti->world; w += ti->T) fprintf(o, " %" PRId64, w);
    fprintf(o, "): %" PRIu64 " bytes = %.4f of one rank's\n", ti->rank_param_bytes[r],
            ti->one_rank_param_bytes ? (double)ti->rank_param_bytes[r] / (double)ti->one_rank_param_bytes : 0.0);
  }
}

/* ---- collectives and volume ---- */

static const char *extra_what(const ddp_tp_coll *c) {
  if (c->opcode == I_ALL_GATHER) return "the vocabulary-parallel cross-entropy's statistics [T, N, 2]";
  if (c->opcode == I_ALL_REDUCE && c->phase == TP_FORWARD) return "the embedding's output (vocabulary-parallel lookup)";
  if (c->opcode == I_ALL_REDUCE && c->phase == TP_BACKWARD) return "the LM head input's gradient (column-parallel head)";
  return "?";
}

static void coll_line(FILE *o, const ddp_tp_coll *c, int wn) {
  fprintf(o, "  %6u  %-9s  %-*s  %-10s %10" PRId64 " %10" PRIu64 "  %-5s %10" PRIu64 "  %4" PRId64 "\n", c->index,
          ddp_tp_phase_names[c->phase], wn, c->name, ddp_opcode_name(c->opcode), c->count, c->elements,
          ddp_dtype_name(c->dtype), c->bytes, c->comm);
}

static void print_colls(FILE *o, const ddp_plan *p, const ddp_tp_info *ti) {
  int wn = 4, maxl = -1, nt = 0;
  for (int k = 0; k < ti->ncolls; k++) {
    int a = (int)strlen(ti->colls[k].name);
    wn = a > wn ? a : wn;
    if (ti->colls[k].layer > maxl) maxl = ti->colls[k].layer;
    nt += ti->colls[k].timed;
  }
  fprintf(o, "collectives of rank 0's step between TP_COMM timers, per layer: %d (an all-gather's elements: what "
             "it gathers, count x %" PRId64 ")\n", nt, ti->T);
  fprintf(o, "  %6s  %-9s  %-*s  %-10s %10s %10s  %-5s %10s  %4s\n", "instr", "phase", wn, "name", "opcode", "count",
          "elements", "dtype", "bytes", "comm");
  for (int l = -1; l <= maxl; l++) {
    int any = 0;
    uint64_t b = 0;
    for (int k = 0; k < ti->ncolls; k++)
      if (ti->colls[k].timed && ti->colls[k].layer == l) any++, b += ti->colls[k].bytes;
    if (!any) continue;
    if (l < 0) fprintf(o, " outside the blocks (embedding, head, loss): %d, %" PRIu64 " bytes\n", any, b);
    else fprintf(o, " layer %d: %d, %" PRIu64 " bytes\n", l, any, b);
    for (int k = 0; k < ti->ncolls; k++)
      if (ti->colls[k].timed && ti->colls[k].layer == l) coll_line(o, &ti->colls[k], wn);
  }
  for (int k = 0, first = 1; k < ti->ncolls; k++) {
    if (ti->colls[k].timed) continue;
    if (first) fprintf(o, " also on the tensor groups, outside the TP_COMM timers (not a layer's):\n"), first = 0;
    coll_line(o, &ti->colls[k], wn);
  }
  (void)p;
}

static void print_volume(FILE *o, const ddp_plan *p, const ddp_tp_info *ti) {
  const ddp_meta *m = &p->meta;
  fprintf(o, "tensor-axis communication per step (the collectives between TP_COMM timers):\n");
  fprintf(o, "  %5s %11s %14s %14s %11s %14s %14s %14s\n", "rank", "all-reduces", "AR elements", "AR bytes",
          "all-gathers", "AG elements", "AG bytes", "total bytes");
  for (int64_t r = 0; r < ti->world; r++) {
    const ddp_tp_volume *v = &ti->volume[r];
    fprintf(o, "  %5" PRId64 " %11d %14" PRIu64 " %14" PRIu64 " %11d %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", r,
            v->all_reduces, v->ar_elements, v->ar_bytes, v->all_gathers, v->ag_elements, v->ag_bytes, v->bytes);
  }
  const char *fd = ddp_dtype_name(ti->fwd_dtype), *bd = ddp_dtype_name(ti->bwd_dtype);
  fprintf(o, "textbook (Megatron-LM): per block 2 all-reduces of tokens x d_model forward and 2 backward%s: %d x %" PRId64
             " layers x %" PRId64 " tokens per rank (%" PRId64 " sequences x %" PRId64 ") x d_model %" PRId64 " = %" PRIu64
             " elements\n",
          ti->tb_bwd_elements ? "" : " (none: mode forward)", ti->tb_bwd_elements ? 4 : 2, ti->layers, ti->tokens,
          m->batch_per_rank, m->context, m->d_model, ti->tb_elements);
  fprintf(o, "  forward:  %" PRIu64 " elements x %zu B (%s, the residual stream) = %" PRIu64 " bytes\n", ti->tb_fwd_elements,
          ddp_dtype_size(ti->fwd_dtype), fd, ti->tb_fwd_bytes);
  fprintf(o, "  backward: %" PRIu64 " elements x %zu B (%s, the activation dtype's gradients) = %" PRIu64 " bytes\n",
          ti->tb_bwd_elements, ddp_dtype_size(ti->bwd_dtype), bd, ti->tb_bwd_bytes);
  fprintf(o, "  textbook total: %" PRIu64 " elements, %" PRIu64 " bytes\n", ti->tb_elements, ti->tb_bytes);
  const ddp_tp_volume *v0 = &ti->volume[0];
  fprintf(o, "measured (rank 0): %" PRIu64 " elements, %" PRIu64 " bytes (%d all-reduces, %d all-gathers); in the "
             "blocks %" PRIu64 " elements, %" PRIu64 " bytes\n",
          v0->elements, v0->bytes, v0->all_reduces, v0->all_gathers, ti->blk_elements, ti->blk_bytes);
  fprintf(o, "what ddpc adds beyond the textbook (outside the blocks):\n");
  for (int k = 0; k < ti->ncolls; k++) {
    const ddp_tp_coll *c = &ti->colls[k];
    if (!c->timed || c->layer >= 0) continue;
    fprintf(o, "  %-9s %s, %s: %" PRIu64 " elements %s = %" PRIu64 " bytes\n", ddp_tp_phase_names[c->phase], c->name,
            extra_what(c), c->elements, ddp_dtype_name(c->dtype), c->bytes);
  }
  fprintf(o, "  extras total: %" PRIu64 " elements, %" PRIu64 " bytes\n", ti->ex_elements, ti->ex_bytes);
  int64_t de = (int64_t)v0->elements - (int64_t)ti->tb_elements, db = (int64_t)v0->bytes - (int64_t)ti->tb_bytes;
  int ok = de == (int64_t)ti->ex_elements && db == (int64_t)ti->ex_bytes;
  fprintf(o, "measured - textbook = %" PRId64 " elements, %" PRId64 " bytes: %s\n", de, db,
          ok ? "equals the extras (reconciles)" : "DIFFERS from the extras (does not reconcile)");
}

void ddp_insp_tensor(FILE *o, const ddp_plan *p) {
  ddp_tp_info ti;
  if (!ddp_tp_analyse(p, &ti)) return;
  fprintf(o, "== tensor parallelism ==\n");
  if (ti.S > 0) { /* a pipeline's 3-D mesh */
    fprintf(o, "mesh: data %" PRId64 " x pipeline %" PRId64 " x tensor %" PRId64 " = %" PRId64
               " ranks (rank = (data x stages + stage) x tensor + tensor rank)\n", ti.D, ti.S, ti.T, ti.world);
    for (int64_t r = 0; r < ti.world; r++)
      fprintf(o, "  rank %" PRId64 ": data %" PRId64 ", stage %" PRId64 ", tensor %" PRId64 "\n", r, r / ti.T / ti.S,
              r / ti.T % ti.S, r % ti.T);
  } else {
    fprintf(o, "mesh: data %" PRId64 " x tensor %" PRId64 " = %" PRId64 " ranks (rank = data x tensor + tensor rank)\n",
            ti.D, ti.T, ti.world);
    for (int64_t r = 0; r < ti.world; r++)
      fprintf(o, "  rank %" PRId64 ": data %" PRId64 ", tensor %" PRId64 "\n", r, r / ti.T, r % ti.T);
  }
  fprintf(o, "communicators (comm 0: every rank%s):\n", ti.D == 1 && ti.S <= 0 ? ", the tensor group: no other" : "");
  for (uint32_t c = 1; c <= p->ncomms; c++) {
    char label[96];
    comm_label(label, sizeof label, p, c, ti.T);
    fprintf(o, "  comm %u: ranks", c);
    for (uint32_t i = 0; i < p->comms[c - 1].n; i++) fprintf(o, " %d", p->comms[c - 1].ranks[i]);
    fprintf(o, " (%s)\n", label);
  }
  print_shapes(o, p, &ti);
  print_colls(o, p, &ti);
  print_volume(o, p, &ti);
  fprintf(o, "\n");
  ddp_tp_info_free(&ti);
}

/* ---- JSON ---- */

static json_t *dims(int *bad, const int64_t *shape, int nd) {
  json_t *a = json_array();
  for (int d = 0; d < nd; d++) push(bad, a, json_integer(shape[d]));
  return a;
}

static json_t *coll_json(int *bad, const ddp_tp_coll *c) {
  json_t *j = json_object();
  put(bad, j, "index", json_integer(c->index));
  put(bad, j, "phase", json_string(ddp_tp_phase_names[c->phase]));
  put(bad, j, "layer", json_integer(c->layer));
  put(bad, j, "name", json_string(c->name));
  put(bad, j, "opcode", json_string(ddp_opcode_name(c->opcode)));
  put(bad, j, "count", json_integer(c->count));
  put(bad, j, "elements", u64(c->elements));
  put(bad, j, "dtype", json_string(ddp_dtype_name(c->dtype)));
  put(bad, j, "bytes", u64(c->bytes));
  put(bad, j, "comm", json_integer(c->comm));
  return j;
}

static json_t *volume_json(int *bad, const ddp_plan *p, const ddp_tp_info *ti) {
  json_t *o = json_object(), *ranks = json_array(), *tb = json_object(), *ms = json_object(), *ex = json_array();
  for (int64_t r = 0; r < ti->world; r++) {
    const ddp_tp_volume *v = &ti->volume[r];
    json_t *j = json_object();
    put(bad, j, "rank", json_integer(r));
    put(bad, j, "all_reduces", json_integer(v->all_reduces));
    put(bad, j, "all_reduce_elements", u64(v->ar_elements));
    put(bad, j, "all_reduce_bytes", u64(v->ar_bytes));
    put(bad, j, "all_gathers", json_integer(v->all_gathers));
    put(bad, j, "all_gather_elements", u64(v->ag_elements));
    put(bad, j, "all_gather_sent_elements", u64(v->ag_sent_elements));
    put(bad, j, "all_gather_bytes", u64(v->ag_bytes));
    put(bad, j, "elements", u64(v->elements));
    put(bad, j, "bytes", u64(v->bytes));
    push(bad, ranks, j);
  }
  put(bad, o, "ranks", ranks);
  put(bad, tb, "layers", json_integer(ti->layers));
  put(bad, tb, "tokens_per_rank", json_integer(ti->tokens));
  put(bad, tb, "d_model", json_integer(p->meta.d_model));
  put(bad, tb, "forward_elements", u64(ti->tb_fwd_elements));
  put(bad, tb, "backward_elements", u64(ti->tb_bwd_elements));
  put(bad, tb, "elements", u64(ti->tb_elements));
  put(bad, tb, "forward_dtype", json_string(ddp_dtype_name(ti->fwd_dtype)));
  put(bad, tb, "backward_dtype", json_string(ddp_dtype_name(ti->bwd_dtype)));
  put(bad, tb, "forward_bytes", u64(ti->tb_fwd_bytes));
  put(bad, tb, "backward_bytes", u64(ti->tb_bwd_bytes));
  put(bad, tb, "bytes", u64(ti->tb_bytes));
  put(bad, o, "textbook", tb);
  put(bad, ms, "rank", json_integer(0));
  put(bad, ms, "elements", u64(ti->volume[0].elements));
  put(bad, ms, "bytes", u64(ti->volume[0].bytes));
  put(bad, ms, "block_elements", u64(ti->blk_elements));
  put(bad, ms, "block_bytes", u64(ti->blk_bytes));
  put(bad, o, "measured", ms);
  for (int k = 0; k < ti->ncolls; k++) {
    const ddp_tp_coll *c = &ti->colls[k];
    if (!c->timed || c->layer >= 0) continue;
    json_t *j = coll_json(bad, c);
    put(bad, j, "what", json_string(extra_what(c)));
    push(bad, ex, j);
  }
  put(bad, o, "extras", ex);
  put(bad, o, "extras_elements", u64(ti->ex_elements));
  put(bad, o, "extras_bytes", u64(ti->ex_bytes));
  int64_t de = (int64_t)ti->volume[0].elements - (int64_t)ti->tb_elements,
          db = (int64_t)ti->volume[0].bytes - (int64_t)ti->tb_bytes;
  put(bad, o, "difference_elements", json_integer(de));
  put(bad, o, "difference_bytes", json_integer(db));
  put(bad, o, "reconciles", json_boolean(de == (int64_t)ti->ex_elements && db == (int64_t)ti->ex_bytes));
  return o;
}

json_t *ddp_insp_tensor_json(const ddp_plan *p, int *bad) {
  ddp_tp_info ti;
  if (!ddp_tp_analyse(p, &ti)) return NULL;
  json_t *o = json_object(), *ranks = json_array(), *comms = json_array(), *splits = json_array(),
         *colls = json_array(), *others = json_array(), *pb = json_array();
  put(bad, o, "tensor", json_integer(ti.T));
  put(bad, o, "data", json_integer(ti.D));
  put(bad, o, "world", json_integer(ti.world));
  for (int64_t r = 0; r < ti.world; r++) {
    json_t *j = json_object();
    put(bad, j, "rank", json_integer(r));
    put(bad, j, "data", json_integer(ti.S > 0 ? r / ti.T / ti.S : r / ti.T));
    if (ti.S > 0) put(bad, j, "stage", json_integer(r / ti.T % ti.S));
    put(bad, j, "tensor", json_integer(r % ti.T));
    push(bad, ranks, j);
  }
  put(bad, o, "ranks", ranks);
  if (ti.D == 1 && ti.S <= 0) { /* one replica: the tensor group is the world, comm 0 */
    json_t *j = json_object(), *m = json_array();
    put(bad, j, "comm", json_integer(0));
    for (int64_t r = 0; r < ti.world; r++) push(bad, m, json_integer(r));
    put(bad, j, "ranks", m);
    put(bad, j, "role", json_string("tensor"));
    put(bad, j, "replica", json_integer(0));
    push(bad, comms, j);
  }
  for (uint32_t c = 1; c <= p->ncomms; c++) {
    json_t *j = json_object(), *m = json_array();
    int64_t w = -1;
    int role = ddp_plan_comm_role(p, c, &w);
    put(bad, j, "comm", json_integer(c));
    for (uint32_t i = 0; i < p->comms[c - 1].n; i++) push(bad, m, json_integer(p->comms[c - 1].ranks[i]));
    put(bad, j, "ranks", m);
    put(bad, j, "role", json_string(role == COMM_ROLE_TENSOR                              ? "tensor"
                                    : role == COMM_ROLE_DATA || role == COMM_ROLE_STAGE ? "data"
                                    : role == COMM_ROLE_REPLICA                         ? "pipeline"
                                                                                        : "?"));
    if (role == COMM_ROLE_TENSOR && ti.S > 0)
      put(bad, j, "replica", json_integer(w / ti.S)), put(bad, j, "stage", json_integer(w % ti.S));
    else if (role == COMM_ROLE_TENSOR) put(bad, j, "replica", json_integer(w));
    if (role == COMM_ROLE_DATA) put(bad, j, "tensor_rank", json_integer(w));
    if (role == COMM_ROLE_STAGE) put(bad, j, "stage", json_integer(w / ti.T)), put(bad, j, "tensor_rank", json_integer(w % ti.T));
    if (role == COMM_ROLE_REPLICA)
      put(bad, j, "replica", json_integer(w / ti.T)), put(bad, j, "tensor_rank", json_integer(w % ti.T));
    push(bad, comms, j);
  }
  put(bad, o, "comms", comms);
  for (int s = 0; s < ti.nsplits; s++) {
    const ddp_tp_split *sp = &ti.splits[s];
    const ddp_tensor *w = &p->tensors[sp->whole];
    json_t *j = json_object(), *pieces = json_array();
    put(bad, j, "name", json_string(w->state_name));
    put(bad, j, "shape", dims(bad, w->shape, w->ndim > DDP_MAX_DIMS ? DDP_MAX_DIMS : w->ndim));
    put(bad, j, "split", json_string(sp->columns ? "columns" : "rows"));
    put(bad, j, "kind", json_string(split_kind(p, sp)));
    for (int64_t r = 0; r < ti.T; r++) {
      int32_t pc = sp->pieces[r];
      if (pc < 0) {
        push(bad, pieces, json_null());
        continue;
      }
      const ddp_tensor *t = &p->tensors[pc];
      int64_t shape[DDP_MAX_DIMS];
      int nd = (int)piece_shape(p, sp, pc, shape);
      json_t *q = json_object();
      put(bad, q, "tensor_rank", json_integer(r));
      put(bad, q, "tensor", json_string(ddp_plan_tensor_name(p, pc)));
      put(bad, q, "shape", dims(bad, shape, nd));
      put(bad, q, "elements", u64(ddp_tensor_numel(t)));
      put(bad, q, "bytes", u64(t->bytes));
      put(bad, q, "first", json_integer(t->piece_first));
      put(bad, q, "runs", json_integer(ddp_piece_runs(t)));
      put(bad, q, "stride", json_integer(t->piece_stride));
      push(bad, pieces, q);
    }
    put(bad, j, "pieces", pieces);
    push(bad, splits, j);
  }
  put(bad, o, "splits", splits);
  put(bad, o, "whole_params", json_integer(ti.nwhole));
  put(bad, o, "whole_param_bytes", u64(ti.whole_bytes));
  for (int64_t r = 0; r < ti.T; r++) push(bad, pb, u64(ti.rank_param_bytes[r]));
  put(bad, o, "param_bytes_per_tensor_rank", pb);
  put(bad, o, "param_bytes_one_rank", u64(ti.one_rank_param_bytes));
  for (int k = 0; k < ti.ncolls; k++) push(bad, ti.colls[k].timed ? colls : others, coll_json(bad, &ti.colls[k]));
  put(bad, o, "collectives", colls);
  put(bad, o, "other_tensor_collectives", others);
  put(bad, o, "volume", volume_json(bad, p, &ti));
  ddp_tp_info_free(&ti);
  return o;
}

/* compiler/model/builder.c: the builder's bookkeeping: tensors, views, instructions, ranges, GEMMs, parameter
 * units, gradient creation/accumulation flags and the tape. */
#include "models.h"
#include "vec.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The plan's tables answer -1 / NULL when out of memory; the builder has no way to report it, so it ends
 * the process with the checked allocators' one line (as base/vec.c does). */
static int32_t must(int32_t id) {
  if (id < 0) ddp_xmalloc(SIZE_MAX);
  return id;
}

void b_init(ddp_builder *b, ddp_plan *plan, const ddp_schedule *s, bool f64) {
  memset(b, 0, sizeof *b);
  b->plan = plan;
  b->s = s;
  b->layer = -1;
  b->fdt = f64 ? DT_F64 : DT_F32;
  b->act_dt = s->precision == PREC_BF16 ? DT_BF16 : b->fdt;
  b->res_dt = b->fdt;
  b->grad_dt = s->grad_dtype && !f64 ? s->grad_dtype : b->fdt;
  b->backward = s->mode != MODE_FORWARD;
  b->tokens = b->targets = b->loss = b->loss_rows = b->scalars = b->rope_freq = -1;
}

void b_free(ddp_builder *b) {
  ddp_program_free(&b->init);
  ddp_program_free(&b->step);
  free(b->units);
  free(b->params);
  free(b->tp_patches);
  free(b->tape);
  free(b->grad_of);
  free(b->grad_done);
  for (int i = 0; i < b->nnames; i++) free(b->names[i]);
  free(b->names);
  memset(b, 0, sizeof *b);
}

/* grad_of and grad_done cover every tensor so far; new entries: no gradient (-1), not yet written (0). */
static void grow_grad_maps(ddp_builder *b) {
  size_t old = b->grad_cap, done_cap = old;
  ddp_xvec_reserve(&b->grad_done, &done_cap, (size_t)b->plan->ntensors + 1, 1);
  ddp_xvec_reserve(&b->grad_of, &b->grad_cap, (size_t)b->plan->ntensors + 1, sizeof(int32_t));
  for (size_t i = old; i < b->grad_cap; i++) b->grad_of[i] = -1;
}

int32_t b_tensor(ddp_builder *b, const char *name, int dtype, int arena, uint32_t flags, int ndim,
                 const int64_t *shape) {
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)name;
  t.flags = flags;
  t.dtype = (uint8_t)dtype;
  t.arena = (uint8_t)arena;
  t.ndim = (uint8_t)ndim;
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    n *= (uint64_t)shape[i];
  }
  t.bytes = n * ddp_dtype_size(dtype);
  t.base = -1;
  t.param = -1;
  t.first_use = t.last_use = -1;
  int32_t id = must(ddp_plan_add_tensor(b->plan, &t));
  grow_grad_maps(b);
  return id;
}

int32_t b_act(ddp_builder *b, const char *name, int dtype, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  return b_tensor(b, name, dtype, ARENA_ACT, 0, cols > 0 ? 2 : 1, shape);
}

int32_t b_saved(ddp_builder *b, const char *name, int dtype, int ndim, const int64_t *shape) {
  return b->backward ? b_tensor(b, name, dtype, ARENA_ACT, 0, ndim, shape) : -1;
}

int32_t b_view(ddp_builder *b, const char *name, int32_t base, uint64_t byte_offset, int dtype, int ndim,
               const int64_t *shape, uint32_t flags) {
  const ddp_tensor *bt = b_t(b, base);
  int32_t id = b_tensor(b, name, dtype, bt->arena, flags, ndim, shape);
  ddp_tensor *t = &b->plan->tensors[id];
  t->base = base;
  t->view = byte_offset;
  return id;
}

const ddp_tensor *b_t(const ddp_builder *b, int32_t t) { return &b->plan->tensors[t]; }

ddp_instr b_kernel(int op) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = (uint16_t)op;
  return in;
}

void b_arg(ddp_instr *in, int slot, int32_t tensor, uint64_t view_bytes, int dtype) {
  in->p[slot].tensor = tensor;
  in->p[slot].view = view_bytes;
  in->dt[slot] = (uint8_t)dtype;
}

void b_buf(ddp_builder *b, ddp_instr *in, int slot, int32_t tensor) {
  b_arg(in, slot, tensor, 0, tensor >= 0 ? b_t(b, tensor)->dtype : DT_NONE);
}

ddp_instr *b_push(ddp_builder *b, ddp_program *prog, ddp_instr in, const char *name) {
  if (name) in.name = must(ddp_plan_add_string(b->plan, name));
  ddp_instr *at = ddp_program_push(prog, &in);
  if (!at) ddp_out_of_memory("building the plan's programs (one of them at %u instructions)", prog->n);
  return at;
}

ddp_instr *b_emit(ddp_builder *b, ddp_instr in, const char *name) {
  in.layer = b->layer;
  return b_push(b, &b->step, in, name);
}

ddp_instr *b_emit_init(ddp_builder *b, ddp_instr in, const char *name) {
  in.layer = -1;
  return b_push(b, &b->init, in, name);
}

void b_range_push(ddp_builder *b, int kind, const char *name) {
  ddp_instr in = ddp_instr_blank(I_RANGE_PUSH, STREAM_COMPUTE);
  in.i[RANGE_PUSH_I_KIND] = kind;
  b_emit(b, in, name);
}

void b_timer(ddp_builder *b, int role) {
  ddp_instr in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[TIMER_I_SLOT] = -1;
  in.i[TIMER_I_ROLE] = role;
  b_emit(b, in, NULL);
}

void b_range_pop(ddp_builder *b) { b_emit(b, ddp_instr_blank(I_RANGE_POP, STREAM_COMPUTE), NULL); }

ddp_instr *b_gemm(ddp_builder *b, const char *name, int32_t A, uint64_t a_view, int transA, int64_t lda,
                  int32_t B, uint64_t b_view, int transB, int64_t ldb, int32_t D, uint64_t d_view, int64_t ldd,
                  int64_t M, int64_t N, int64_t K, float beta) {
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  b_arg(&in, GEMM_P_A, A, a_view, b_t(b, A)->dtype);
  b_arg(&in, GEMM_P_B, B, b_view, b_t(b, B)->dtype);
  b_arg(&in, GEMM_P_C, D, d_view, b_t(b, D)->dtype);
  b_arg(&in, GEMM_P_D, D, d_view, b_t(b, D)->dtype);
  in.i[GEMM_I_M] = M;
  in.i[GEMM_I_N] = N;
  in.i[GEMM_I_K] = K;
  in.i[GEMM_I_TRANS_A] = transA;
  in.i[GEMM_I_TRANS_B] = transB;
  in.i[GEMM_I_LDA] = lda ? lda : (transA ? M : K);
  in.i[GEMM_I_LDB] = ldb ? ldb : (transB ? K : N);
  in.i[GEMM_I_LDC] = in.i[GEMM_I_LDD] = ldd ? ldd : N;
  in.i[GEMM_I_BATCH] = 1;
  in.f[GEMM_F_ALPHA] = 1.0f;
  in.f[GEMM_F_BETA] = beta;
  b->flops += 2.0 * (double)M * (double)N * (double)K;
  return b_emit(b, in, name);
}

int32_t b_as_dtype(ddp_builder *b, int32_t t, int dtype, const char *name) {
  const ddp_tensor *tt = b_t(b, t);
  if (tt->dtype == dtype) return t;
  int64_t shape[DDP_MAX_DIMS];
  memcpy(shape, tt->shape, sizeof shape);
  int ndim = tt->ndim;
  uint64_t n = ddp_tensor_numel(tt);
  int32_t out = b_tensor(b, name, dtype, ARENA_ACT, 0, ndim, shape);
  ddp_instr in = b_kernel(OP_CAST);
  b_buf(b, &in, CAST_P_IN, t);
  b_buf(b, &in, CAST_P_OUT, out);
  in.i[CAST_I_N] = (int64_t)n;
  b_emit(b, in, name);
  return out;
}

bool b_needs_grad(const ddp_builder *b, int32_t t) {
  return t >= 0 && !(b_t(b, t)->flags & (TF_TOKENS | TF_TARGETS));
}

int b_unit(ddp_builder *b, const char *name, int64_t numel, bool trainable, int init_kind, float a, float c,
           int64_t fan_in) {
  ddp_unit *u = DDP_VEC_PUSH(b->units, b->nunits, b->cap_units);
  snprintf(u->name, sizeof u->name, "%s", name);
  u->numel = numel;
  u->trainable = trainable;
  u->init_kind = init_kind;
  u->init_a = a;
  u->init_b = c;
  u->fan_in = fan_in;
  u->ready = -1;
  int64_t shape[1] = {numel};
  u->master = b_tensor(b, name, b->fdt, ARENA_PARAM,
                       TF_PARAM | TF_PERSISTENT | (trainable ? TF_TRAINABLE : 0), 1, shape);
  u->copy = u->master;
  if (b->act_dt != b->fdt) {
    u->copy = b_tensor(b, b_fmt(b, "%s.%s", name, ddp_dtype_name(b->act_dt)), b->act_dt, ARENA_PARAM,
                       TF_PARAM_COPY | TF_PERSISTENT, 1, shape);
    b->plan->tensors[u->copy].param = u->master;
  }
  u->grad = -1;
  if (trainable && b->backward) {
    u->grad = b_tensor(b, b_fmt(b, "%s.grad", name), b->grad_dt, ARENA_GRAD, TF_GRAD | TF_PERSISTENT, 1, shape);
    b->plan->tensors[u->grad].param = u->master;
  }
  return (int)(u - b->units);
}

void b_param(ddp_builder *b, int unit, const char *state_name, int64_t offset, int ndim, const int64_t *shape) {
  ddp_unit *u = &b->units[unit];
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  int32_t t = b_view(b, state_name, u->master, (uint64_t)offset * ddp_dtype_size(b->fdt), b->fdt, ndim, shape,
                     TF_PARAM | (u->trainable ? TF_TRAINABLE : 0));
  ddp_tensor *tt = &b->plan->tensors[t];
  tt->state_name = ddp_xstrdup(state_name);
  *DDP_VEC_PUSH(b->params, b->nparams, b->cap_params) =
      (ddp_model_param){.tensor = t, .unit = unit, .unit_offset = offset, .numel = n, .tp_split = TP_WHOLE,
                        .full_shape = {ndim > 0 ? shape[0] : 1, ndim > 1 ? shape[1] : 1}, .full_unit_offset = offset};
}

void b_param_tp(ddp_builder *b, int unit, const char *state_name, int64_t offset, int64_t rows, int64_t cols,
                int split, int64_t full_offset) {
  int T = b->tp > 1 ? b->tp : 1;
  if (T == 1) split = TP_WHOLE;
  int64_t shape[2] = {split == TP_ROWS ? rows / T : rows, split == TP_COLS ? cols / T : cols};
  b_param(b, unit, state_name, offset, 2, shape);
  ddp_model_param *pp = &b->params[b->nparams - 1];
  pp->tp_split = split;
  pp->full_shape[0] = rows, pp->full_shape[1] = cols;
  pp->full_unit_offset = full_offset;
  if (split != TP_WHOLE) b->units[unit].tp_split = true;
}

void b_tp_patch(ddp_builder *b, uint32_t instr, int kind, int slot, int64_t value) {
  *DDP_VEC_PUSH(b->tp_patches, b->ntp_patches, b->cap_tp_patches) =
      (ddp_tp_patch){.instr = instr, .kind = kind, .slot = slot, .value = value};
}

uint32_t b_last(const ddp_builder *b) { return b->step.n - 1; }

ddp_unit_params b_unit_params(const ddp_builder *b) {
  ddp_unit_params up = {ddp_xcalloc((size_t)b->nunits + 2, sizeof(int)),
                        ddp_xmalloc(sizeof(int) * ((size_t)b->nparams + 1))};
  for (int p = 0; p < b->nparams; p++) up.at[b->params[p].unit + 2]++;
  for (int u = 0; u < b->nunits; u++) up.at[u + 2] += up.at[u + 1];
  for (int p = 0; p < b->nparams; p++) up.param[up.at[b->params[p].unit + 1]++] = p; /* then at[u] is u's start */
  return up;
}

void b_unit_params_free(ddp_unit_params *up) {
  free(up->at);
  free(up->param);
  up->at = up->param = NULL;
}

int32_t b_grad(ddp_builder *b, int32_t t) {
  grow_grad_maps(b);
  if (b->grad_of[t] >= 0) return b->grad_of[t];
  const ddp_tensor *tt = b_t(b, t);
  int32_t g = b_tensor(b, b_fmt(b, "%s.grad", tt->name), tt->dtype, ARENA_ACT, 0, tt->ndim, tt->shape);
  b->grad_of[t] = g;
  return g;
}

bool b_has_grad(const ddp_builder *b, int32_t t) {
  return t >= 0 && (uint32_t)t < b->grad_cap && b->grad_of[t] >= 0;
}

int b_grad_acc(ddp_builder *b, int32_t grad) {
  grow_grad_maps(b);
  int acc = b->grad_done[grad];
  b->grad_done[grad] = 1;
  return acc;
}

int b_unit_grad_acc(ddp_builder *b, int unit) {
  ddp_unit *u = &b->units[unit];
  int acc = b_grad_acc(b, u->grad);
  if (!acc) u->ready = b->ready_counter++;
  return acc || b->unit_grads_accumulate;
}

uint32_t b_forward_end(const ddp_builder *b) {
  for (uint32_t k = 0; k < b->step.n; k++)
    if (b->step.v[k].opcode == I_TIMER && b->step.v[k].i[TIMER_I_ROLE] == TIMER_FORWARD_END) return k;
  return b->step.n;
}

int32_t *b_last_touch(const ddp_builder *b, const int32_t *owner_of, int nowners) {
  const ddp_plan *p = b->plan;
  int32_t *last = ddp_xmalloc(sizeof(int32_t) * ((size_t)nowners + 1));
  for (int o = 0; o < nowners; o++) last[o] = -1;
  for (uint32_t k = 0; k < b->step.n; k++)
    for (int sl = 0; sl < DDP_MAX_PTRS; sl++)
      for (int32_t t = b->step.v[k].p[sl].tensor; t >= 0; t = p->tensors[t].base)
        if (owner_of[t] >= 0) {
          last[owner_of[t]] = (int32_t)k;
          break;
        }
  return last;
}

ddp_node *b_record(ddp_builder *b, int kind, const char *name) {
  ddp_node *n = DDP_VEC_PUSH(b->tape, b->ntape, b->cap_tape);
  for (int i = 0; i < 12; i++) n->t[i] = -1;
  for (int i = 0; i < 4; i++) n->u[i] = -1;
  n->kind = kind;
  n->layer = b->layer;
  n->name = name ? must(ddp_plan_add_string(b->plan, name)) : -1;
  return n;
}

int32_t b_name(ddp_builder *b, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return must(ddp_plan_add_string(b->plan, buf));
}

const char *b_fmt(ddp_builder *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = ddp_xmalloc(n > 0 ? (size_t)n + 1 : 1);
  va_start(ap, fmt);
  vsnprintf(s, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
  va_end(ap);
  return *DDP_VEC_PUSH(b->names, b->nnames, b->cap_names) = s;
}

int ddp_model_build(ddp_builder *b, char *err, size_t errcap) {
  const ddp_schedule *s = b->s;
  /* rows of one program: the rank's share, or under a pipeline one microbatch of a replica's share */
  int64_t parts = s->stages > 0 ? (int64_t)s->replicas * s->microbatches : ddp_schedule_data_ranks(s);
  b->tp = s->mesh_tensor > 1 ? s->mesh_tensor : 1;
  b->rows = (s->global_batch / parts) * (s->model_kind == MODEL_TRANSFORMER ? s->context : 1);
  b->unit_grads_accumulate = s->stages > 0; /* microbatches add into the gradients (zeroed each step) */
  int64_t one[1] = {1}, eight[1] = {SCALAR_COUNT};
  b->loss = b_tensor(b, "loss", b->fdt, ARENA_IO, TF_LOSS | TF_PERSISTENT, 1, one);
  b->scalars = b_tensor(b, "optimizer.scalars", b->fdt, ARENA_IO, TF_SCALARS | TF_PERSISTENT, 1, eight);
  int rc = s->model_kind == MODEL_TRANSFORMER ? build_transformer(b, err, errcap) : build_mlp(b, err, errcap);
  if (rc == 0 && b->backward) b_backward(b);
  return rc;
}

int64_t b_partials(int64_t rows) {
  int64_t p = 528; /* 4 blocks per SM on Hopper (measured best for the norm backward); the reference is indifferent */
  return rows < p ? rows : p;
}

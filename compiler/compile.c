/* compiler/compile.c: the pipeline of compile.h, and the schedule summary recorded in the plan. */
#include "compile.h"
#include "builder.h"
#include "codegen.h"
#include "layout.h"
#include "memplan.h"
#include "verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dupstr(const char *s) { return s ? strdup(s) : NULL; }

static const char *sync_name(int s) {
  static const char *n[] = {"none", "naive", "flat", "individual", "bucketed"};
  return s >= 0 && s <= 4 ? n[s] : "?";
}

static void fill_meta(ddp_plan *p, const ddp_schedule *s, const char *arch, const ddp_builder *b) {
  ddp_meta *m = &p->meta;
  m->schedule_path = dupstr(s->path);
  m->schedule_source = dupstr(s->source ? s->source : "");
  m->arch = dupstr(arch);
  m->world = s->ranks;
  m->model_name = dupstr(s->model_name);
  m->model_kind = s->model_kind;
  m->vocab = s->vocab;
  m->context = s->context;
  m->d_model = s->d_model;
  m->d_ff = s->d_ff;
  m->layers = s->layers;
  m->heads = s->heads;
  m->rope_theta = s->rope_theta;
  m->mlp_in = s->mlp_in;
  m->mlp_out = s->mlp_out;
  m->precision = s->precision;
  m->act_dtype = b->act_dt;
  m->grad_dtype = b->grad_dt;
  m->global_batch = s->global_batch;
  m->batch_per_rank = s->global_batch / s->ranks;
  m->data_kind = s->data_kind;
  m->data_path = dupstr(s->data_path);
  m->data_rows = s->data_rows;
  m->data_seed = (int64_t)s->data_seed;
  m->steps = s->steps;
  m->warmup = s->warmup;
  m->seed = (int64_t)s->seed;
  m->identical_init = s->identical_init;
  m->optimizer = s->optimizer;
  m->lr = s->lr;
  m->lr_min = s->lr_min;
  m->beta1 = s->beta1;
  m->beta2 = s->beta2;
  m->eps = s->eps;
  m->weight_decay = s->weight_decay;
  m->lr_schedule = s->lr_schedule;
  m->lr_warmup = s->lr_warmup;
  m->lr_cycle = s->lr_cycle;
  m->clip_norm = s->clip_norm;
  char par[256], bucket[48] = "";
  if (s->sync == SYNC_BUCKETED) {
    if (s->bucket_policy) snprintf(bucket, sizeof bucket, " buckets=lua");
    else snprintf(bucket, sizeof bucket, " bucket_mb=%g", s->bucket_mb);
  }
  if (s->ranks == 1)
    snprintf(par, sizeof par, "single rank");
  else if (s->mode == MODE_FORWARD)
    snprintf(par, sizeof par, "ddp ranks=%d, no collectives (mode forward)", s->ranks);
  else
    snprintf(par, sizeof par, "ddp ranks=%d sync=%s%s%s%s%s", s->ranks, sync_name(s->sync), bucket,
             s->overlap_backward ? " overlap=backward" : "", s->optimizer_overlap ? " optimizer_overlap" : "",
             s->shard == SHARD_ZERO1 ? " shard=zero1" : s->shard == SHARD_OPTIMIZER ? " shard=optimizer" : "");
  m->parallel = dupstr(par);
  int64_t np = 0, nt = 0;
  for (int i = 0; i < b->nparams; i++) {
    np += b->params[i].numel;
    if (b->units[b->params[i].unit].trainable) nt += b->params[i].numel;
  }
  m->n_params = np;
  m->n_trainable = nt;
  m->flops_per_step = b->flops;
  m->attention = s->attention;
  m->tokens_tensor = b->tokens;
  m->targets_tensor = b->targets;
  m->loss_tensor = b->loss;
  m->scalars_tensor = b->scalars;
  m->mode = s->mode;
}

static void record_buckets(ddp_plan *p, const ddp_builder *b, const ddp_layout *L) {
  if (b->s->sync != SYNC_BUCKETED || L->world < 2 || !b->backward) return;
  uint64_t gsz = ddp_dtype_size(b->grad_dt);
  p->buckets = calloc((size_t)L->nbuckets, sizeof(ddp_bucket));
  p->nbuckets = p->cap_buckets = (uint32_t)L->nbuckets;
  for (int k = 0; k < L->nbuckets; k++) {
    ddp_bucket *bk = &p->buckets[k];
    int count = 0;
    for (int j = L->bucket_first[k]; j <= L->bucket_last[k]; j++)
      for (int q = 0; q < b->nparams; q++) count += b->params[q].unit == L->order[j];
    bk->params = malloc(sizeof(int32_t) * (size_t)(count ? count : 1));
    for (int j = L->bucket_first[k]; j <= L->bucket_last[k]; j++)
      for (int q = 0; q < b->nparams; q++)
        if (b->params[q].unit == L->order[j]) bk->params[bk->nparams++] = b->params[q].tensor;
    const ddp_unit *first = &b->units[L->order[L->bucket_first[k]]];
    const ddp_unit *last = &b->units[L->order[L->bucket_last[k]]];
    bk->offset = p->tensors[first->grad].offset;
    bk->bytes = (uint64_t)(last->flat_offset + last->numel - first->flat_offset) * gsz;
  }
}

static double comm_bytes(const ddp_plan *p) {
  double total = 0;
  const ddp_program *prog = &p->ranks[0].step;
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    double es = (double)ddp_dtype_size(in->dt[COLL_P_SEND]), n = (double)in->i[COLL_I_COUNT], w = (double)p->meta.world;
    switch (in->opcode) {
    case I_ALL_REDUCE: total += n * es; break;
    case I_REDUCE_SCATTER: case I_ALL_GATHER: total += n * es * w; break;
    case I_BROADCAST: total += n * es; break;
    default: break;
    }
  }
  return total;
}

ddp_plan *ddp_compile(const ddp_schedule *s, const ddp_compile_opts *o, char *err, size_t errcap) {
  ddp_plan *p = ddp_plan_new();
  p->nstreams = 2;
  p->meta.world = s->ranks;
  p->ranks = calloc((size_t)s->ranks, sizeof(ddp_rank_plan));
  ddp_builder b;
  b_init(&b, p, s, o->f64_reference);
  b.rows = (s->global_batch / s->ranks) * (s->model_kind == MODEL_TRANSFORMER ? s->context : 1);
  int64_t one[1] = {1}, eight[1] = {SCALAR_COUNT};
  b.loss = b_tensor(&b, "loss", b.fdt, ARENA_IO, TF_LOSS | TF_PERSISTENT, 1, one);
  b.scalars = b_tensor(&b, "optimizer.scalars", b.fdt, ARENA_IO, TF_SCALARS | TF_PERSISTENT, 1, eight);
  ddp_layout L;
  memset(&L, 0, sizeof L);
  int rc = s->model_kind == MODEL_TRANSFORMER ? build_transformer(&b, err, errcap) : build_mlp(&b, err, errcap);
  if (rc == 0 && b.backward) b_backward(&b);
  if (rc == 0) rc = ddp_layout_build(&b, &L, err, errcap);
  if (rc == 0) rc = ddp_assemble_programs(&b, &L, err, errcap);
  if (rc == 0) {
    fill_meta(p, s, o->arch, &b);
    rc = ddp_memplan(p, err, errcap);
  }
  if (rc == 0) {
    record_buckets(p, &b, &L);
    p->meta.comm_bytes_per_step = comm_bytes(p);
    rc = ddp_verify(p, err, errcap);
  }
  if (rc == 0 && !o->skip_codegen && !o->f64_reference) rc = ddp_codegen(p, o->arch, o->jobs, err, errcap);
  ddp_layout_free(&L);
  b_free(&b);
  if (rc != 0) {
    ddp_plan_free(p);
    return NULL;
  }
  return p;
}

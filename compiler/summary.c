/* compiler/summary.c: the schedule summary recorded in the plan (ddp_meta): the schedule fields that the
 * meta shares by name (copied through one X-macro), the parallel-layout line (ddp, fsdp or pipeline),
 * parameter counts, FLOPs, the model's well-known tensors and the bytes each rank sends per step. */
#include "summary.h"
#include "err.h"
#include <stdio.h>
#include <string.h>

/* Schedule fields stored in the meta under the same name. */
#define SHARED_NUMBERS(X)                                                                                     \
  X(model_kind) X(vocab) X(context) X(d_model) X(d_ff) X(layers) X(heads) X(rope_theta) X(mlp_in) X(mlp_out) \
  X(precision) X(global_batch) X(data_kind) X(data_rows) X(data_seed) X(steps) X(warmup) X(seed)            \
  X(identical_init) X(optimizer) X(lr) X(lr_min) X(beta1) X(beta2) X(eps) X(weight_decay) X(lr_schedule)    \
  X(lr_warmup) X(lr_cycle) X(clip_norm) X(attention) X(mode)
#define SHARED_STRINGS(X) X(model_name) X(data_path)

static char *dupstr(const char *s) { return s ? ddp_xstrdup(s) : NULL; }

/* The bytes of the communication buffers of one step, of the rank with the most: a collective's buffer
 * (all-reduce, broadcast: count elements; reduce-scatter, all-gather, all-to-all: count per rank times the
 * group's ranks), and every point-to-point message sent or received (a pipeline stage's activations and
 * their gradients). */
static double comm_bytes(const ddp_plan *p) {
  double most = 0;
  for (uint32_t r = 0; r < p->meta.world; r++) {
    double total = 0;
    const ddp_program *prog = &p->ranks[r].step;
    for (uint32_t k = 0; k < prog->n; k++) {
      const ddp_instr *in = &prog->v[k];
      double es = (double)ddp_dtype_size(in->dt[COLL_P_SEND]), n = (double)in->i[COLL_I_COUNT];
      double w = (double)ddp_plan_comm_size(p, in->i[COLL_I_COMM]); /* its group's ranks */
      switch (in->opcode) {
      case I_ALL_REDUCE: case I_BROADCAST: case I_SEND: case I_RECV: total += n * es; break;
      case I_REDUCE_SCATTER: case I_ALL_GATHER: case I_ALL_TO_ALL: total += n * es * w; break;
      default: break;
      }
    }
    if (total > most) most = total;
  }
  return most;
}

/* "pipeline stages=S replicas=R microbatches=M schedule=NAME[ virtual=V][ split=a,b,c]" */
static void pipeline_line(char *par, size_t cap, const ddp_schedule *s) {
  size_t n = (size_t)snprintf(par, cap, "pipeline stages=%d replicas=%d microbatches=%d schedule=%s", s->stages,
                              s->replicas, s->microbatches,
                              ddp_vocab_name(ddp_pipe_schedule_names, PIPE_COUNT, s->pipe_schedule));
  if (s->virtual_stages > 1 && n < cap) n += (size_t)snprintf(par + n, cap - n, " virtual=%d", s->virtual_stages);
  for (int i = 0; i < s->nsplit && n < cap; i++)
    n += (size_t)snprintf(par + n, cap - n, "%s%lld", i ? "," : " split=", (long long)s->split[i]);
}

void ddp_summary(ddp_plan *p, const ddp_schedule *s, const char *arch, const ddp_builder *b) {
  ddp_meta *m = &p->meta;
#define COPY_NUMBER(f) m->f = s->f;
#define COPY_STRING(f) m->f = dupstr(s->f);
  SHARED_NUMBERS(COPY_NUMBER)
  SHARED_STRINGS(COPY_STRING)
#undef COPY_NUMBER
#undef COPY_STRING
  m->schedule_path = dupstr(s->path);
  m->schedule_source = dupstr(s->source ? s->source : "");
  m->arch = dupstr(arch);
  m->world = s->ranks;
  m->act_dtype = b->act_dt;
  m->grad_dtype = b->grad_dt;
  /* a pipeline rank loads its replica's share, a tensor rank its data replica's */
  m->data_parallel = s->stages > 0 ? s->replicas : ddp_schedule_data_ranks(s);
  m->batch_per_rank = s->global_batch / m->data_parallel;
  m->tensor_parallel = s->mesh_tensor > 1 ? s->mesh_tensor : 1;
  m->nccl_cta_policy = s->nccl_cta_policy;
  m->nccl_max_ctas = s->nccl_max_ctas;
  m->nccl_register = s->nccl_register;
  if (s->stages > 0) {
    m->pipe_stages = s->stages;
    m->pipe_replicas = s->replicas;
    m->pipe_microbatches = s->microbatches;
    m->pipe_schedule = s->pipe_schedule;
    m->pipe_virtual = s->virtual_stages;
  }
  char par[1024], bucket[48] = "", shard[128] = "";
  if (s->sync == SYNC_BUCKETED) {
    if (s->bucket_policy) snprintf(bucket, sizeof bucket, " %s=lua", s->shard == SHARD_ZERO3 ? "units" : "buckets");
    else if (s->shard == SHARD_ZERO3 && s->bucket_mb == 0) snprintf(bucket, sizeof bucket, " units=per-block");
    else snprintf(bucket, sizeof bucket, " bucket_mb=%g", s->bucket_mb);
  }
  const char *rs = s->nccl_reduce_scatter == NCCL_RS_ALLTOALL ? " reduce_scatter=alltoall" : "";
  if (s->shard == SHARD_ZERO3)
    snprintf(shard, sizeof shard, " shard=zero3 prefetch=%d/%d reshard_after_forward=%s gather=%s%s",
             s->prefetch_forward, s->prefetch_backward, s->reshard_after_forward ? "true" : "false",
             s->gather_dtype == DT_BF16 ? "bf16" : "fp32", rs);
  else if (s->shard != SHARD_NONE)
    snprintf(shard, sizeof shard, " shard=%s%s%s%s", ddp_vocab_name(ddp_shard_names, SHARD_COUNT, s->shard),
             s->gather_before_forward ? " param_gather=before_forward" : "",
             s->master_group_last ? "" : " master_group=per_bucket", rs);
  if (s->stages > 0)
    pipeline_line(par, sizeof par, s);
  else if (s->ranks == 1)
    snprintf(par, sizeof par, "single rank");
  else if (s->mode == MODE_FORWARD)
    snprintf(par, sizeof par, "ddp ranks=%d, no collectives (mode forward)", s->ranks);
  else
    snprintf(par, sizeof par, "ddp ranks=%d sync=%s%s%s%s%s%s%s%s", s->ranks, ddp_sync_name(s->sync), bucket,
             s->overlap_backward ? " overlap=backward" : "", s->optimizer_overlap ? " optimizer_overlap" : "", shard,
             s->nccl_all_reduce != NCCL_AR_COLLECTIVE ? " all_reduce=" : "",
             s->nccl_all_reduce != NCCL_AR_COLLECTIVE ? ddp_vocab_name(ddp_nccl_all_reduce_names, NCCL_AR_COUNT, s->nccl_all_reduce) : "",
             s->nccl_movement == NCCL_MOVE_PEER_COPY ? " movement=peer_copy" : "");
  if (s->mesh_tensor > 1) {
    size_t n = strlen(par);
    snprintf(par + n, sizeof par - n, " mesh data=%d tensor=%d", s->mesh_data, s->mesh_tensor);
    if (s->stages > 0) snprintf(par + strlen(par), sizeof par - strlen(par), " pipeline=%d", s->mesh_pipeline);
  }
  m->parallel = dupstr(par);
  for (int i = 0; i < b->nparams; i++) { /* the whole model's, also when the tensor ranks split it */
    const ddp_model_param *pp = &b->params[i];
    int64_t n = pp->tp_split == TP_WHOLE ? pp->numel : pp->full_shape[0] * pp->full_shape[1];
    m->n_params += n;
    if (b->units[pp->unit].trainable) m->n_trainable += n;
  }
  /* the step's model FLOPs over all ranks / world (what each rank's MFU divides by its time): the builder
   * counted one program's rows, a rank's share, or under a pipeline one microbatch through every stage */
  m->flops_per_step = s->stages > 0 ? b->flops * (double)s->microbatches / (double)s->stages : b->flops;
  m->tokens_tensor = b->tokens;
  m->targets_tensor = b->targets;
  m->loss_tensor = b->loss;
  m->scalars_tensor = b->scalars;
  m->comm_bytes_per_step = comm_bytes(p);
  m->low_priority_streams = s->update_priority == UPDATE_PRIORITY_LOW ? (int64_t)b->update_streams : 0;
}

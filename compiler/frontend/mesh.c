/* compiler/frontend/mesh.c: the schedule's `mesh` field, the device mesh that names how the world's ranks
 * split over the parallel axes:
 *   mesh = { data = 2, tensor = 2, pipeline = 1 }
 *   data      data-parallel replicas: each trains its share of the global batch and the replicas average
 *             their gradients (ddp{}'s sync) on a communicator per tensor rank
 *   tensor    tensor-parallel ranks: every transformer block split Megatron-style (q/k/v and w1/w3 by
 *             output rows, i.e. heads and d_ff; the output projection and w2 by input columns), the
 *             embedding and the LM head by vocabulary rows; one communicator per data replica
 *   pipeline  pipeline stages: pipeline{stages = ...} (its replicas are the data axis; with tensor > 1 each
 *             stage's tensor ranks are a tensor group, compiler/passes/pipeline.c)
 * Every axis is optional (default 1; with pipeline{} the stages and replicas) and at least 1; their product
 * is the world size that parallel gives (ddp{ranks}, single(): 1), or with pipeline{} the world it makes
 * (stages x replicas x tensor: s->ranks becomes that world here). World rank
 * r = (d x pipeline + s) x tensor + t (compiler/schedule.h). Runs after fe_parallel and the model, before
 * the data (whose batch splits over the data axis). */
#include "fe.h"
#include "plan.h"

#define FE_MESH_NEED "a table such as { data = 2, tensor = 2 }"

void fe_mesh(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"data", "tensor", "pipeline", NULL};
  ddp_schedule *s = c->s;
  int pipe = s->stages > 0 ? s->stages : 1, replicas = s->stages > 0 ? s->replicas : s->ranks;
  s->mesh_data = replicas, s->mesh_tensor = 1, s->mesh_pipeline = pipe;
  int ty = fe_type(c, root, "mesh");
  if (ty == LUA_TNIL) return;
  fe_tab m;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "mesh", &m, FE_MESH_NEED) || fe_kind_of(c->L, m.idx) >= 0)
    fe_bad(c, root, "mesh", "must be %s", FE_MESH_NEED);
  snprintf(m.what, sizeof m.what, "mesh");
  fe_known(c, &m, fields);
  int64_t data = fe_int_in(c, &m, "data", 1, 1, 1024);
  int64_t tensor = fe_int_in(c, &m, "tensor", 1, 1, 1024);
  int64_t pipeline = fe_int_in(c, &m, "pipeline", 1, 1, 1024);
  if (s->stages > 0) { /* pipeline{} names its own axes; the mesh must agree */
    if (!fe_has(c, &m, "pipeline")) pipeline = s->stages;
    if (!fe_has(c, &m, "data")) data = s->replicas;
    if (pipeline != s->stages)
      fe_bad(c, &m, "pipeline", "must equal pipeline{stages} (%d)", s->stages);
    if (data != s->replicas) fe_bad(c, &m, "data", "must equal pipeline{replicas} (%d)", s->replicas);
  } else if (pipeline != 1) {
    fe_bad(c, &m, "pipeline", "needs parallel = pipeline{stages = %lld, ...}", (long long)pipeline);
  }
  /* a pipeline's world is stages x replicas x tensor: pipeline{} names no tensor axis, the mesh adds it */
  int64_t world = s->stages > 0 ? (int64_t)s->stages * s->replicas * tensor : s->ranks;
  if (s->stages > 0 && world > 1024)
    fe_bad(c, &m, "tensor", "= %lld gives %lld ranks (stages %d x replicas %d x tensor), more than 1024",
           (long long)tensor, (long long)world, s->stages, s->replicas);
  if (data * tensor * pipeline != world)
    fe_fail(c, root, "mesh", ": data %lld x tensor %lld x pipeline %lld = %lld ranks, but parallel has %lld",
            (long long)data, (long long)tensor, (long long)pipeline, (long long)(data * tensor * pipeline),
            (long long)world);
  if (tensor > 1) {
    if (s->model_kind != MODEL_TRANSFORMER)
      fe_bad(c, &m, "tensor", "splits a transformer's heads, d_ff and vocabulary; an mlp{} has none");
    const struct { const char *name; int64_t v; } dims[] = {{"heads", s->heads}, {"d_ff", s->d_ff}, {"vocab", s->vocab}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
      if (dims[k].v % tensor)
        fe_bad(c, &m, "tensor", "must divide model.%s (%lld): each tensor rank holds %s / tensor of them",
               dims[k].name, (long long)dims[k].v, dims[k].name);
    if (s->shard != SHARD_NONE && data == 1)
      fe_fail(c, &m, "tensor", "= %lld with sharding needs mesh.data > 1: the shards split the data axis, and mesh.data "
              "is 1", (long long)tensor);
    if (s->shard == SHARD_OPTIMIZER)
      fe_fail(c, &m, "tensor", "= %lld with shard = \"optimizer\" is not supported (use shard = \"zero1\", which keeps "
              "the same state per rank)", (long long)tensor);
  }
  s->mesh_data = (int)data, s->mesh_tensor = (int)tensor, s->mesh_pipeline = (int)pipeline;
  if (s->stages > 0) s->ranks = (int)world; /* the world: stages x replicas x tensor */
}

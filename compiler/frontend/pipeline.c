/* compiler/frontend/pipeline.c: parallel = pipeline{...}, into the ddp_schedule's pipeline fields: stages x
 * data-parallel replicas (the ranks), the microbatches and the schedule that orders them, virtual stages
 * (interleaved), the layer split (a list, or a Lua function called here, at load time, with the model's
 * layer count), initialisation; and, once data.global_batch is known, the batch rules (the replicas split
 * the batch, the microbatches split a replica's share). The model's layers are the transformer's blocks, or
 * every entry of an MLP's `layers` (relu() included). */
#include "fe.h"
#include "plan.h"
#include <stdio.h>
#include <string.h>

#define FE_SPLIT_NEED "a list of positive integers (the layers of each chunk)"
#define FE_SPLIT_KEY "split(info)" /* what the split function returned, in messages: parallel.split(info) */

static int64_t fe_model_layers(const ddp_schedule *s) {
  return s->model_kind == MODEL_MLP ? s->n_mlp_layers : s->layers;
}

/* " (every entry of model.layers, relu() included)" for an MLP: what its layers are. */
static const char *fe_layers_note(const ddp_schedule *s) {
  return s->model_kind == MODEL_MLP ? " (every entry of model.layers counts, relu() included)" : "";
}

/* Calls p.split(info) (protected) and leaves what it returned as holder["split(info)"], holder being a new
 * table on the stack that *h describes (so that messages say parallel.split(info)). */
static void fe_split_call(fe_conv *c, const fe_tab *p, fe_tab *h) {
  lua_State *L = c->L;
  const ddp_schedule *s = c->s;
  luaL_checkstack(L, 8, "split function");
  lua_newtable(L);
  *h = *p;
  h->idx = lua_gettop(L);
  lua_pushliteral(L, FE_SPLIT_KEY);
  lua_pushliteral(L, "split");
  lua_rawget(L, p->idx);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)fe_model_layers(s));
  lua_setfield(L, -2, "layers");
  lua_pushinteger(L, s->stages);
  lua_setfield(L, -2, "stages");
  lua_pushinteger(L, (lua_Integer)s->stages * s->virtual_stages);
  lua_setfield(L, -2, "chunks");
  int st = lua_pcall(L, 1, 1, 0);
  if (st != LUA_OK) {
    if (fe_sandbox_of(L)->tripped) lua_error(L); /* the instruction limit: its own line, as anywhere else */
    if (st == LUA_ERRMEM) fe_fail(c, p, "split", "used more than %d MB of Lua memory", (int)(FE_MEM_CAP >> 20));
    if (lua_type(L, -1) != LUA_TSTRING) {
      char got[160];
      fe_fail(c, p, "split", "raised an error that is not a string (%s)", fe_got(L, -1, got, sizeof got));
    }
    const char *msg = lua_tostring(L, -1);
    const char *colon = fe_located(msg) && strncmp(msg, "--set ", 6) != 0 ? strchr(strchr(msg, ':') + 1, ':') : NULL;
    if (colon) { /* "file:line: text" -> "file:line: parallel.split failed: text" (load.c unshortens the file) */
      lua_pushfstring(L, "%s parallel.split failed:%s", lua_pushlstring(L, msg, (size_t)(colon - msg + 1)), colon + 1);
      lua_error(L);
    }
    fe_fail(c, p, "split", "failed: %s", msg);
  }
  lua_rawset(L, h->idx);
}

/* p.split: absent (nsplit 0: the compiler balances), a list, or a function(info) returning one. */
static void fe_split(fe_conv *c, const fe_tab *p) {
  ddp_schedule *s = c->s;
  int64_t layers = fe_model_layers(s);
  int chunks = s->stages * s->virtual_stages;
  s->nsplit = 0;
  int ty = fe_type(c, p, "split");
  if (ty == LUA_TNIL) return;
  fe_tab h = *p, list;
  const char *key = "split";
  int n;
  if (ty == LUA_TFUNCTION) {
    fe_split_call(c, p, &h);
    key = FE_SPLIT_KEY;
    n = fe_list(c, &h, key, &list, FE_SPLIT_NEED);
    if (n < 0) fe_bad(c, &h, key, "must be " FE_SPLIT_NEED);
  } else {
    if (ty != LUA_TTABLE) fe_bad(c, p, "split", "must be " FE_SPLIT_NEED " or a function(info) returning one");
    n = fe_list(c, p, key, &list, FE_SPLIT_NEED);
  }
  if (n != chunks)
    fe_fail(c, &h, key, "has %d entr%s, but the pipeline has %d chunks (stages %d x virtual_stages %d): give the "
            "layers of each chunk", n, n == 1 ? "y" : "ies", chunks, s->stages, s->virtual_stages);
  int64_t sum = 0;
  for (int i = 1; i <= n; i++) {
    char k[32], need[96];
    snprintf(k, sizeof k, "[%d]", i);
    snprintf(need, sizeof need, "a positive integer (the layers of chunk %d)", i - 1);
    int64_t v = 0;
    fe_int(c, &list, k, &v, need);
    if (v < 1) fe_bad(c, &list, k, "must be %s", need);
    if (v > layers) fe_bad(c, &list, k, "is more than the model's %lld layers", (long long)layers);
    s->split[i - 1] = v;
    sum += v;
  }
  if (sum > layers)
    fe_fail(c, &h, key, "has %lld layers, the model %lld%s", (long long)sum, (long long)layers, fe_layers_note(s));
  if (sum < layers) {
    char out[96];
    bool mlp = s->model_kind == MODEL_MLP; /* transformer blocks from 0 (layers.N), MLP entries from 1 */
    if (sum + 1 == layers) snprintf(out, sizeof out, mlp ? "model.layers[%lld]" : "layer %lld", (long long)sum + mlp);
    else if (mlp) snprintf(out, sizeof out, "model.layers[%lld] to [%lld]", (long long)sum + 1, (long long)layers);
    else snprintf(out, sizeof out, "layers %lld to %lld", (long long)sum, (long long)layers - 1);
    fe_fail(c, &h, key, "leaves %s out (it holds %lld of the model's %lld layers)", out, (long long)sum,
            (long long)layers);
  }
  s->nsplit = n;
}

void fe_pipeline(fe_conv *c, const fe_tab *p) {
  static const char *const fields[] = {"stages", "replicas", "ranks", "microbatches", "schedule", "virtual_stages",
                                       "split", "broadcast", "identical_init", "bucket_mb", NULL};
  ddp_schedule *s = c->s;
  int64_t layers = fe_model_layers(s);
  fe_known(c, p, fields);
  fe_required(c, p, "stages");
  s->stages = (int)fe_int_in(c, p, "stages", 2, 1, DDP_MAX_STAGES);
  if (s->stages > layers)
    fe_fail(c, p, "stages", "= %d is more than the model's %lld layers%s", s->stages, (long long)layers,
            fe_layers_note(s));
  s->replicas = (int)fe_int_in(c, p, "replicas", 1, 1, 1024);
  if (s->stages * s->replicas > 1024)
    fe_fail(c, p, "replicas", "= %d gives %d ranks (stages x replicas), more than 1024", s->replicas,
            s->stages * s->replicas);
  s->ranks = s->stages * s->replicas;
  int64_t ranks = s->ranks;
  if (fe_int(c, p, "ranks", &ranks, "a positive integer") && ranks != s->ranks)
    fe_bad(c, p, "ranks", "must equal stages x replicas (%d x %d = %d): a pipeline's ranks follow from them",
           s->stages, s->replicas, s->ranks);

  int sched = PIPE_1F1B;
  fe_enum(c, p, "schedule", ddp_pipe_schedule_names, &sched);
  s->pipe_schedule = sched;
  const char *name = ddp_pipe_schedule_names[sched];

  bool has_v = fe_has(c, p, "virtual_stages");
  s->virtual_stages = (int)fe_int_in(c, p, "virtual_stages", 1, 1, DDP_MAX_STAGES);
  if (sched == PIPE_INTERLEAVED && !has_v)
    fe_fail(c, p, "virtual_stages", "is required with schedule = \"interleaved\" (the chunks each stage runs, at "
            "least 2)");
  if (sched == PIPE_INTERLEAVED && s->virtual_stages < 2)
    fe_bad(c, p, "virtual_stages", "must be at least 2 with schedule = \"interleaved\" (the chunks each stage runs)");
  if (sched != PIPE_INTERLEAVED && s->virtual_stages != 1)
    fe_bad(c, p, "virtual_stages", "must be 1 with schedule = \"%s\" (only \"interleaved\" runs several chunks per "
           "stage)", name);
  int chunks = s->stages * s->virtual_stages;
  if (chunks > DDP_MAX_STAGES)
    fe_fail(c, p, "virtual_stages", "= %d gives %d chunks (stages x virtual_stages), more than %d",
            s->virtual_stages, chunks, DDP_MAX_STAGES);
  if (chunks > layers)
    fe_fail(c, p, "virtual_stages", "= %d gives %d chunks (stages x virtual_stages), more than the model's %lld "
            "layers%s", s->virtual_stages, chunks, (long long)layers, fe_layers_note(s));

  s->microbatches =
      (int)fe_int_in(c, p, "microbatches", sched == PIPE_SEQUENTIAL ? 1 : s->stages, 1, DDP_MAX_MICROBATCHES);
  if (sched == PIPE_SEQUENTIAL && s->microbatches != 1)
    fe_bad(c, p, "microbatches", "must be 1 with schedule = \"sequential\" (the whole batch goes through the "
           "stages at once, each stage waiting for the previous)");
  if (sched == PIPE_INTERLEAVED && s->microbatches % s->stages)
    fe_bad(c, p, "microbatches", "must be a multiple of parallel.stages (%d) with schedule = \"interleaved\" "
           "(Megatron's rule)", s->stages);

  /* The replicas of a stage all-reduce its gradients as bucketed DDP does; one replica has nothing to sync. */
  s->shard = SHARD_NONE;
  s->optimizer_overlap = false;
  s->sync = s->replicas > 1 ? SYNC_BUCKETED : SYNC_NONE;
  s->overlap_backward = s->replicas > 1;
  s->bucket_mb = s->replicas > 1 ? 25 : 0;
  bool has_mb = fe_num(c, p, "bucket_mb", &s->bucket_mb, "a positive number (MB)");
  if (has_mb && s->replicas < 2)
    fe_fail(c, p, "bucket_mb", "only applies with replicas > 1 (the replicas of a stage all-reduce its gradients)");
  if (has_mb && !(s->bucket_mb > 0 && s->bucket_mb <= 1048576))
    fe_bad(c, p, "bucket_mb", "must be a positive number of MB (at most 1048576)");

  fe_split(c, p);
  fe_init_fields(c, p, s->replicas);
}

void fe_pipeline_batch(fe_conv *c, const fe_tab *root, const fe_tab *data) {
  const ddp_schedule *s = c->s;
  if (s->global_batch % s->replicas)
    fe_bad(c, data, "global_batch", "must be divisible by parallel.replicas (%d)", s->replicas);
  int64_t b = s->global_batch / s->replicas;
  if (b % s->microbatches == 0) return;
  fe_tab p;
  if (!fe_sub(c, root, "parallel", &p, "pipeline{...}")) return; /* cannot be: stages > 0 */
  char of[96] = "";
  if (s->replicas > 1)
    snprintf(of, sizeof of, " (data.global_batch %lld / replicas %d)", (long long)s->global_batch, s->replicas);
  fe_fail(c, &p, "microbatches", "= %d%s does not divide the replica's batch of %lld %s%s", s->microbatches,
          fe_has(c, &p, "microbatches") ? "" : " (the default: parallel.stages)", (long long)b,
          s->model_kind == MODEL_MLP ? "rows" : "sequences", of);
}

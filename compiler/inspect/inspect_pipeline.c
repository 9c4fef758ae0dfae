/* compiler/inspect/inspect_pipeline.c: `ddpc inspect`'s pipeline section, read from the plan alone: the
 * schedule, the chunks (from the step programs' "pp.fwd.mb<i>.chunk<c>" / "pp.bwd..." ranges: the rank
 * running each, the layers of its instructions, its GEMM FLOPs per microbatch, whether it holds the
 * embedding or the head), per rank the bytes of its arenas and its sends and receives per step, and the
 * bubble the schedule's formula predicts (ddp_pipe_bubble_formula, as ddpc plot timeline): (p-1)/(m+p-1)
 * for GPipe and 1F1B, (p-1)/(v m + p-1) for interleaved 1F1B, (p-1)/(3m+p-1) for zero bubble (ZB-H1, equal
 * F, B, W), (p-1)/p for sequential (per replica: the replicas run the same pipeline side by side).
 * With data-parallel replicas: the mesh (rank = replica x stages + stage) and the plan's communicators
 * (comm 1 + s: stage s's replicas, comm 1 + stages + r: replica r's stages). With tensor parallelism
 * (meta.tensor_parallel = T > 1) the mesh is 3-D, rank = (replica x stages + stage) x T + tensor rank, and
 * the communicators compiler/passes/pipeline.c's: per stage and tensor rank its replicas (with replicas),
 * per replica and tensor rank its stages, per replica and stage its tensor ranks. */
#include "inspect_pipeline.h"
#include "err.h"
#include "plot.h"
#include "vocab.h"
#include <stdlib.h>
#include <string.h>

static int chunk_of_range(const char *nm, int *mb) {
  int c = -1;
  if ((strncmp(nm, "pp.fwd.mb", 9) == 0 || strncmp(nm, "pp.bwd.mb", 9) == 0) && sscanf(nm + 9, "%d.chunk%d", mb, &c) == 2)
    return c;
  return -1;
}

int ddp_pipe_analyse(const ddp_plan *p, ddp_pipe_info *pi) {
  memset(pi, 0, sizeof *pi);
  if (p->meta.pipe_stages < 1 || !p->ranks) return 0;
  pi->stages = (int)p->meta.pipe_stages;
  pi->virtual_stages = p->meta.pipe_virtual > 0 ? (int)p->meta.pipe_virtual : 1;
  pi->microbatches = (int)p->meta.pipe_microbatches;
  pi->schedule = (int)p->meta.pipe_schedule;
  const int64_t nchunks = (int64_t)pi->stages * pi->virtual_stages; /* the reader bounds both */
  pi->nchunks = nchunks < 1 ? 1 : nchunks > 4096 ? 4096 : (int)nchunks;
  pi->chunks = ddp_xcalloc((size_t)pi->nchunks, sizeof *pi->chunks);
  for (int c = 0; c < pi->nchunks; c++) pi->chunks[c] = (ddp_pipe_chunk){-1, -1, -1, 0, false, false};
  for (int64_t r = 0; r < p->meta.world; r++) {
    const ddp_program *st = &p->ranks[r].step;
    int cur = -1, mb = -1;
    for (uint32_t k = 0; k < st->n; k++) {
      const ddp_instr *in = &st->v[k];
      if (in->opcode == I_RANGE_PUSH && (in->i[RANGE_PUSH_I_KIND] == RANGE_FORWARD || in->i[RANGE_PUSH_I_KIND] == RANGE_BACKWARD)) {
        cur = chunk_of_range(ddp_plan_string(p, in->name), &mb);
        if (cur >= pi->nchunks) cur = -1;
        if (cur >= 0 && pi->chunks[cur].rank < 0) pi->chunks[cur].rank = (int)r; /* replica 0's rank */
        continue;
      }
      if (in->opcode == I_RANGE_POP) continue;
      if (cur < 0 || mb != 0) continue;
      ddp_pipe_chunk *ch = &pi->chunks[cur];
      if (in->layer >= 0) {
        if (ch->first_layer < 0 || in->layer < ch->first_layer) ch->first_layer = in->layer;
        if (in->layer > ch->last_layer) ch->last_layer = in->layer;
      } else if (in->opcode == I_KERNEL && in->op == OP_EMBED_FWD) {
        ch->embedding = true;
      } else if (in->opcode == I_KERNEL && (in->op == OP_XENT || in->op == OP_XENT_VP || in->op == OP_MSE)) {
        ch->head = true;
      }
      if (in->opcode == I_GEMM)
        ch->flops += 2.0 * (double)in->i[GEMM_I_M] * (double)in->i[GEMM_I_N] * (double)in->i[GEMM_I_K] *
                     (double)(in->i[GEMM_I_BATCH] > 1 ? in->i[GEMM_I_BATCH] : 1);
    }
  }
  /* the schedule's own formula, as ddpc plot timeline gives it (zero bubble: ZB-H1 with equal F, B, W times;
   * sequential: one microbatch in flight) */
  const char *formula = NULL;
  const char *name = pi->schedule >= 0 && pi->schedule < PIPE_COUNT ? ddp_pipe_schedule_names[pi->schedule] : "";
  pi->bubble = ddp_pipe_bubble_formula(name, (int)pi->stages, pi->microbatches > 0 ? (int)pi->microbatches : 1,
                                       pi->virtual_stages > 0 ? (int)pi->virtual_stages : 1, NULL, &formula);
  pi->formula = formula ? formula : "(none)";
  return 1;
}

void ddp_pipe_info_free(ddp_pipe_info *pi) {
  free(pi->chunks);
  memset(pi, 0, sizeof *pi);
}

static void transfers(const ddp_plan *p, int64_t r, int *sends, int *recvs, double *bytes) {
  *sends = *recvs = 0;
  *bytes = 0;
  const ddp_program *st = &p->ranks[r].step;
  for (uint32_t k = 0; k < st->n; k++) {
    const ddp_instr *in = &st->v[k];
    if (in->opcode != I_SEND && in->opcode != I_RECV) continue;
    (in->opcode == I_SEND ? (*sends)++ : (*recvs)++);
    if (in->opcode == I_SEND) *bytes += (double)in->i[COLL_I_COUNT] * (double)ddp_dtype_size(in->dt[COLL_P_BUF]);
  }
}

void ddp_insp_pipeline(FILE *o, const ddp_plan *p) {
  fprintf(o, "== pipeline ==\n");
  ddp_pipe_info pi;
  if (!ddp_pipe_analyse(p, &pi)) {
    fprintf(o, "none\n\n");
    return;
  }
  fprintf(o, "schedule %s, %d stages x %d virtual stages = %d chunks, %d microbatches, %lld replicas\n",
          ddp_vocab_name(ddp_pipe_schedule_names, PIPE_COUNT, pi.schedule), pi.stages, pi.virtual_stages, pi.nchunks,
          pi.microbatches, (long long)(p->meta.pipe_replicas > 0 ? p->meta.pipe_replicas : 1));
  fprintf(o, "bubble (the schedule's formula %s): %.4f\n", pi.formula, pi.bubble);
  int64_t S = pi.stages, R = p->meta.pipe_replicas > 0 ? p->meta.pipe_replicas : 1;
  int64_t T = p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1;
  if (T > 1) {
    fprintf(o, "mesh: %lld stages x %lld replicas x %lld tensor ranks = %lld ranks (rank = (replica x stages + stage) x "
               "tensor + tensor rank)\n", (long long)S, (long long)R, (long long)T, (long long)p->meta.world);
    for (int64_t r = 0; r < p->meta.world; r++)
      fprintf(o, "  rank %lld: stage %lld, replica %lld, tensor %lld\n", (long long)r, (long long)(r / T % S),
              (long long)(r / T / S), (long long)(r % T));
  } else if (R > 1) {
    fprintf(o, "mesh: %lld stages x %lld replicas = %lld ranks (rank = replica x stages + stage)\n", (long long)S,
            (long long)R, (long long)p->meta.world);
    for (int64_t r = 0; r < p->meta.world; r++)
      fprintf(o, "  rank %lld: stage %lld, replica %lld\n", (long long)r, (long long)(r % S), (long long)(r / S));
  }
  if (p->ncomms) fprintf(o, "communicators (comm 0: every rank):\n");
  for (uint32_t c = 0; c < p->ncomms; c++) {
    fprintf(o, "  comm %u: ranks", c + 1);
    for (uint32_t i = 0; i < p->comms[c].n; i++) fprintf(o, " %d", p->comms[c].ranks[i]);
    int64_t Sn = R > 1 ? S * T : 0, Rn = R > 1 || T > 1 ? R * T : 0, k = c;
    if (T == 1 && k < Sn) fprintf(o, " (stage %lld)", (long long)k);
    else if (T == 1 && k < Sn + Rn) fprintf(o, " (replica %lld)", (long long)(k - Sn));
    else if (k < Sn) fprintf(o, " (stage %lld, tensor %lld: its replicas)", (long long)(k / T), (long long)(k % T));
    else if (k < Sn + Rn)
      fprintf(o, " (replica %lld, tensor %lld: its stages)", (long long)((k - Sn) / T), (long long)((k - Sn) % T));
    else if (k < Sn + Rn + R * S)
      fprintf(o, " (replica %lld, stage %lld: its tensor ranks)", (long long)((k - Sn - Rn) / S),
              (long long)((k - Sn - Rn) % S));
    fprintf(o, "\n");
  }
  fprintf(o, "%6s %5s %12s %16s  %s\n", "chunk", "rank", "layers", "GFLOP/microbatch", "also");
  for (int c = 0; c < pi.nchunks; c++) {
    const ddp_pipe_chunk *ch = &pi.chunks[c];
    char layers[48] = "-";
    if (ch->first_layer >= 0) snprintf(layers, sizeof layers, "%lld-%lld", (long long)ch->first_layer, (long long)ch->last_layer);
    fprintf(o, "%6d %5d %12s %16.4f  %s%s\n", c, ch->rank, layers, ch->flops / 1e9, ch->embedding ? "embedding " : "",
            ch->head ? "head+loss" : "");
  }
  fprintf(o, "%5s %14s %7s %7s %14s\n", "rank", "bytes", "sends", "recvs", "sent bytes");
  for (int64_t r = 0; r < p->meta.world; r++) {
    uint64_t total = 0;
    for (int a = 0; a < ARENA_COUNT; a++) total += p->ranks[r].arena_bytes[a];
    int s, rv;
    double sb;
    transfers(p, r, &s, &rv, &sb);
    fprintf(o, "%5lld %14llu %7d %7d %14.0f\n", (long long)r, (unsigned long long)total, s, rv, sb);
  }
  fprintf(o, "\n");
  ddp_pipe_info_free(&pi);
}

json_t *ddp_insp_pipeline_json(const ddp_plan *p, int *bad) {
  ddp_pipe_info pi;
  if (!ddp_pipe_analyse(p, &pi)) return json_null();
  json_t *o = json_object(), *chunks = json_array(), *ranks = json_array();
  if (!o || !chunks || !ranks) *bad = 1;
  json_object_set_new(o, "schedule", json_string(ddp_vocab_name(ddp_pipe_schedule_names, PIPE_COUNT, pi.schedule)));
  json_object_set_new(o, "stages", json_integer(pi.stages));
  json_object_set_new(o, "virtual_stages", json_integer(pi.virtual_stages));
  json_object_set_new(o, "microbatches", json_integer(pi.microbatches));
  json_object_set_new(o, "replicas", json_integer(p->meta.pipe_replicas > 0 ? p->meta.pipe_replicas : 1));
  json_object_set_new(o, "tensor", json_integer(p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1));
  json_t *comms = json_array();
  if (!comms) *bad = 1;
  for (uint32_t c = 0; c < p->ncomms; c++) {
    json_t *m = json_array();
    for (uint32_t i = 0; i < p->comms[c].n; i++)
      if (!m || json_array_append_new(m, json_integer(p->comms[c].ranks[i]))) *bad = 1;
    if (!m || json_array_append_new(comms, m)) *bad = 1;
  }
  json_object_set_new(o, "comms", comms);
  json_object_set_new(o, "bubble_formula", json_real(pi.bubble));
  for (int c = 0; c < pi.nchunks; c++) {
    const ddp_pipe_chunk *ch = &pi.chunks[c];
    json_t *x = json_object();
    json_object_set_new(x, "rank", json_integer(ch->rank));
    json_object_set_new(x, "first_layer", json_integer(ch->first_layer));
    json_object_set_new(x, "last_layer", json_integer(ch->last_layer));
    json_object_set_new(x, "flops_per_microbatch", json_real(ch->flops));
    json_object_set_new(x, "embedding", json_boolean(ch->embedding));
    json_object_set_new(x, "head", json_boolean(ch->head));
    if (!x || json_array_append_new(chunks, x)) *bad = 1;
  }
  for (int64_t r = 0; r < p->meta.world; r++) {
    uint64_t total = 0;
    for (int a = 0; a < ARENA_COUNT; a++) total += p->ranks[r].arena_bytes[a];
    int s, rv;
    double sb;
    transfers(p, r, &s, &rv, &sb);
    json_t *x = json_object();
    json_object_set_new(x, "bytes", json_integer((json_int_t)total));
    json_object_set_new(x, "sends", json_integer(s));
    json_object_set_new(x, "recvs", json_integer(rv));
    json_object_set_new(x, "sent_bytes", json_real(sb));
    int64_t T = p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1;
    json_object_set_new(x, "stage", json_integer(r / T % pi.stages));
    json_object_set_new(x, "replica", json_integer(r / T / pi.stages));
    if (T > 1) json_object_set_new(x, "tensor", json_integer(r % T));
    if (!x || json_array_append_new(ranks, x)) *bad = 1;
  }
  json_object_set_new(o, "chunks", chunks);
  json_object_set_new(o, "ranks", ranks);
  ddp_pipe_info_free(&pi);
  return o;
}

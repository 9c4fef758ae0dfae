/* compiler/explain/mesh.c: `ddpc explain mesh SCHEDULE.lua --device-memory SIZE [--max-ranks N] [--profile FILE]
 * [--json]` (docs/EXPLAIN.md, "Layouts without GPUs"): the schedule's model under candidate layouts (DDP,
 * ZeRO-1, ZeRO-2, FSDP, pipelines, tensor parallelism and data x tensor meshes) at 1, 2, 4, ... ranks, each
 * compiled without kernels: per-device bytes by memory class (the rank with the most), communication per
 * rank per step by collective kind (with the part on the tensor groups' communicators), the simulated step;
 * then the smallest layout that fits the device memory (fewest ranks; tie: least communication), tensor
 * layouts included.
 *
 * The work per step: at n ranks every layout trains n times the schedule's per-rank batch B per step, so the
 * rows of one rank count do the same tokens. A data-parallel rank trains its own B sequences; a pipeline of
 * n stages trains n microbatches of B; a tensor group of T ranks trains ONE replica's batch (its ranks split
 * each layer, not the batch), so a tensor layout gives each of its data = n / T replicas T x B sequences
 * (mesh = { data = n / T, tensor = T }, global batch n x B). The alternative, B per replica, would do T times
 * less work than the other rows of its rank count and look T times cheaper per step. The price of the
 * choice is visible in the activations: a tensor rank holds the replicated residual stream of T x B
 * sequences (the split layers' activations of T x B sequences cost it what B whole ones do).
 *
 * Tensor sizes: T = 2, 4, 8 (T <= n; T = n is the pure `tensor` layout, smaller T with data = n / T > 1 a
 * data x tensor mesh whose replicas sync their gradients with bucketed DDP), where T divides the model's
 * heads, d_ff and vocabulary (compiler/frontend/mesh.c's rule; the report prints why a size is left out).
 * Larger T is not tried: a tensor group all-reduces activations twice per layer in the forward and twice in
 * the backward on the critical path, which only NVLink inside one node (8 GPUs) carries at a tolerable
 * cost. The compiler refuses tensor parallelism with sharding or pipelines, so those meshes are not tried. */
#include "args.h"
#include "clock.h"
#include "err.h"
#include "xmodel.h"
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { L_SINGLE = 0, L_DDP, L_ZERO1, L_ZERO2, L_FSDP, L_PIPE, L_TENSOR, L_COUNT };
static const char *const layout_names[L_COUNT] = {"single", "ddp", "zero1", "zero2", "fsdp", "pipeline", "tensor"};
#define TP_MAX 8 /* the largest tensor group tried: one NVLink node */
static const int tp_sizes[] = {2, 4, 8};
#define NTP ((int)(sizeof tp_sizes / sizeof tp_sizes[0]))
#define ROUND_BUDGET_S 20.0 /* no more doubling once one rank count took this long to compile and simulate */

typedef struct cand {
  int ranks, layout, ok, fits, microbatches;
  int data, tensor; /* the mesh: data replicas x tensor ranks (tensor 1 but for L_TENSOR; a pipeline: data 1) */
  ddp_xeval e;
  char why[1024]; /* !ok: why the layout does not compile */
} cand;

static double comm_total(const cand *c) {
  double t = 0;
  for (int k = 0; k < COST_COLL_COUNT; k++) t += c->e.coll_bytes[k];
  return t;
}

/* Why the model cannot be split over t tensor ranks (compiler/frontend/mesh.c's rule), or NULL. */
static const char *tp_refusal(const ddp_schedule *s, int t, char *why, size_t cap) {
  if (s->model_kind != MODEL_TRANSFORMER) {
    snprintf(why, cap, "an mlp{} model has no heads, d_ff or vocabulary to split");
    return why;
  }
  const struct { const char *name; int64_t v; } dims[] = {{"heads", s->heads}, {"d_ff", s->d_ff}, {"vocab", s->vocab}};
  for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
    if (dims[k].v % t) {
      snprintf(why, cap, "model.%s (%lld) is not divisible by %d", dims[k].name, (long long)dims[k].v, t);
      return why;
    }
  return NULL;
}

/* s0 under `layout` at n ranks (L_TENSOR: tensor groups of `tp` ranks, n / tp replicas) into *s (a shallow
 * copy: s0 keeps ownership of its pointers); 0, or -1 when the layout cannot exist (why). */
static int make_layout(const ddp_schedule *s0, int64_t per_rank, int layout, int n, int tp, ddp_schedule *s,
                       int *micro, char *why, size_t cap) {
  int64_t layers = s0->model_kind == MODEL_TRANSFORMER ? s0->layers : s0->n_mlp_layers;
  *s = *s0;
  s->bucket_policy = NULL, s->bucket_policy_ctx = NULL;
  s->ranks = n;
  s->global_batch = per_rank * n;
  s->stages = 0, s->replicas = 1, s->microbatches = 1, s->virtual_stages = 1, s->nsplit = 0;
  s->sync = SYNC_BUCKETED, s->bucket_mb = 25, s->overlap_backward = true, s->optimizer_overlap = false;
  s->shard = SHARD_NONE;
  s->broadcast_init = true, s->identical_init = false;
  s->prefetch_forward = s->prefetch_backward = 1, s->reshard_after_forward = true;
  s->gather_dtype = s->precision == PREC_BF16 ? DT_BF16 : DT_F32;
  s->mesh_data = n, s->mesh_tensor = 1, s->mesh_pipeline = 1;
  *micro = 0;
  switch (layout) {
  case L_SINGLE: s->sync = SYNC_NONE, s->overlap_backward = false, s->bucket_mb = 0; break;
  case L_DDP: break;
  case L_ZERO1: s->shard = SHARD_ZERO1; break;
  case L_ZERO2: s->shard = SHARD_ZERO2; break;
  case L_FSDP: s->shard = SHARD_ZERO3, s->bucket_mb = 0; break;
  case L_PIPE:
    if (n > layers || n > DDP_MAX_STAGES) {
      snprintf(why, cap, "%d stages: the model has %lld layers", n, (long long)layers);
      return -1;
    }
    s->sync = SYNC_NONE, s->overlap_backward = false, s->bucket_mb = 0;
    s->stages = n, s->replicas = 1;
    s->pipe_schedule = PIPE_1F1B;
    s->microbatches = *micro = n; /* microbatches of per_rank sequences: the same tokens per step as n DP ranks */
    s->mesh_data = 1, s->mesh_pipeline = n;
    break;
  case L_TENSOR:
    if (tp_refusal(s0, tp, why, cap)) return -1;
    /* n / tp replicas of tp x per_rank sequences each: global_batch stays per_rank x n (the header comment) */
    s->mesh_data = n / tp, s->mesh_tensor = tp;
    if (s->mesh_data == 1) s->sync = SYNC_NONE, s->overlap_backward = false, s->bucket_mb = 0;
    break;
  }
  /* each candidate with its own defaults, not the input schedule's choices: ZeRO-1/2's master group "last"
   * and the all-gathers after the update; single()'s updates on the side stream, low, a quarter at the tail
   * (compiler/frontend/streams.c); equal priorities elsewhere */
  s->master_group_last = s->shard == SHARD_ZERO1 || s->shard == SHARD_ZERO2;
  s->gather_before_forward = false;
  s->single_optimizer_overlap = layout == L_SINGLE;
  s->update_priority = layout == L_SINGLE ? UPDATE_PRIORITY_LOW : UPDATE_PRIORITY_EQUAL;
  s->update_tail = layout == L_SINGLE ? 0.25 : 0;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: ddpc explain mesh SCHEDULE.lua --device-memory SIZE [--max-ranks N] [--profile FILE] [--json]\n"
             "The schedule's model under candidate layouts without GPUs (docs/EXPLAIN.md, \"Layouts without GPUs\"):\n"
             "DDP (bucketed, 25 MB), ZeRO-1, ZeRO-2, FSDP, 1F1B pipelines, tensor parallelism (tensor = n) and\n"
             "data x tensor meshes (tensor = 2, 4, 8 where it divides the heads, d_ff and vocabulary; data = n /\n"
             "tensor, bucketed DDP between the replicas) at 1, 2, 4, ... ranks, each compiled without kernels:\n"
             "memory per device by class, communication per rank per step by collective (tp_comm: the part on the\n"
             "tensor groups), the predicted step; then the smallest layout that fits SIZE per device. At n ranks\n"
             "every row trains n x the per-rank batch per step: a tensor group of T ranks trains one replica's\n"
             "T x per-rank batch.\n"
             "  --device-memory SIZE  bytes per device, e.g. 80GB, 141GB, 80GiB (required)\n"
             "  --max-ranks N         the largest rank count tried (a power of two up to 1024; default 1024)\n"
             "  --profile FILE        device profile (JSON; default: the built-in H100/H200 profile)\n"
             "  --json                one JSON document\n"
             "Exit status: 0 done (also when nothing fits: the report says so), 1 failed, 2 bad command line.\n");
}

static const char *layout_text(const cand *c, char *buf, size_t cap) {
  if (c->layout == L_PIPE && c->microbatches > 0) snprintf(buf, cap, "pipeline(1f1b, m=%d)", c->microbatches);
  else if (c->layout == L_TENSOR && c->data == 1) snprintf(buf, cap, "tensor(t=%d)", c->tensor);
  else if (c->layout == L_TENSOR) snprintf(buf, cap, "data x tensor(%dx%d)", c->data, c->tensor);
  else snprintf(buf, cap, "%s", layout_names[c->layout]);
  return buf;
}

static void print_text(const char *sched, const ddp_profile *pr, int defprof, uint64_t devmem, const cand *cs, int n,
                       int best, int stopped_at, double per_rank, char tp_why[][256]) {
  char b[64];
  /* GB for device-sized memories, MB for the toy ones */
  double unit = devmem >= 1000000000ull ? 1e9 : 1e6;
  const char *un = unit == 1e9 ? "GB" : "MB";
  printf("== explain mesh: %s ==\n", sched);
  printf("profile: %s%s\n", pr->name, defprof ? " (no --profile given)" : "");
  printf("device memory: %.2f %s; n ranks train n x %g sequences per step (a pipeline: n microbatches of %g); %s = %g B\n",
         (double)devmem / unit, un, per_rank, per_rank, un, unit);
  int ntp = 0;
  for (int k = 0; k < NTP; k++) ntp += !tp_why[k][0];
  printf("tensor parallelism: ");
  if (!ntp) printf("no tensor rows\n");
  for (int k = 0, j = 0; k < NTP; k++)
    if (!tp_why[k][0]) printf("%s%d", j++ ? ", " : "tensor = ", tp_sizes[k]);
  if (ntp)
    printf("; a tensor group of t ranks trains one replica of t x %g sequences\n"
           "(tensor(t=n): one replica; data x tensor(dxt): d = n / t replicas, bucketed DDP between them)\n", per_rank);
  for (int k = 0; k < NTP; k++)
    if (tp_why[k][0]) printf("tensor = %d: no rows: %s\n", tp_sizes[k], tp_why[k]);
  printf("tensor > %d: not tried (a tensor group beyond one NVLink node of 8 GPUs)\n\n", TP_MAX);
  printf("%5s %-20s %9s %9s %9s %9s %9s %9s %4s %10s %10s %10s %10s %10s %10s %9s %9s\n", "ranks", "layout", "params",
         "grads", "optim", "activ", "other", "total", "fits", "allreduce", "redscat", "allgath", "sendrecv", "tp_comm",
         "step_ms", "joules", "floor_ms");
  const char *sim_note = NULL;
  for (int i = 0; i < n; i++) {
    const cand *c = &cs[i];
    if (!c->ok) {
      printf("%5d %-20s n/a: %s\n", c->ranks, layout_text(c, b, sizeof b), c->why);
      continue;
    }
    const uint64_t *m = c->e.mem;
    double other = (double)(m[MEM_COMM] + m[MEM_WORK] + m[MEM_IO]);
    printf("%5d %-20s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %4s %10.3f %10.3f %10.3f %10.3f %10.3f ", c->ranks,
           layout_text(c, b, sizeof b), (double)m[MEM_PARAMS] / unit, (double)m[MEM_GRADS] / unit,
           (double)m[MEM_OPT] / unit, (double)m[MEM_ACT] / unit, other / unit, (double)c->e.mem_total / unit,
           c->fits ? "yes" : "no", c->e.coll_bytes[COST_ALL_REDUCE] / unit, c->e.coll_bytes[COST_REDUCE_SCATTER] / unit,
           c->e.coll_bytes[COST_ALL_GATHER] / unit, c->e.coll_bytes[COST_SEND_RECV] / unit, c->e.tp_bytes / unit);
    if (c->e.step_s >= 0) printf("%10.3f", c->e.step_s * 1e3);
    else printf("%10s", "n/a*"), sim_note = c->e.sim_err;
    if (c->e.energy_j >= 0) printf(" %9.3f %9.3f\n", c->e.energy_j, c->e.floor_s * 1e3);
    else printf(" %9s %9s\n", "n/a", "n/a");
  }
  printf("memory (%s): the rank with the most bytes, by class (other: communication buffers, workspace, inputs);\n"
         "communication (%s): bytes each rank sends per step (ring over the collective's communicator of n ranks:\n"
         "all-reduce 2(n-1)/n of the buffer, reduce-scatter and all-gather (n-1)/n of the whole buffer, send: the\n"
         "buffer), the largest over the ranks; tp_comm: the part of them on the tensor groups (activations);\n"
         "step_ms: the simulated step (the latest rank); joules: the largest energy per step above idle over the\n"
         "ranks, floor_ms the shortest step the power limit allows for it (the profile's power model; n/a without\n"
         "one); ddpc explain on a layout's plan predicts the larger of step_ms and floor_ms\n", un, un);
  if (sim_note) printf("n/a*: the simulator refuses the plan (e.g. %s)\n", sim_note);
  if (stopped_at > 0) printf("stopped before %d ranks: one rank count took over %.0f s to compile and simulate\n",
                             stopped_at, ROUND_BUDGET_S);
  if (best >= 0) {
    const cand *c = &cs[best];
    printf("smallest that fits %.2f %s: %d rank%s, %s: %.2f %s per device, %.3f %s sent per rank per step",
           (double)devmem / unit, un, c->ranks, c->ranks == 1 ? "" : "s", layout_text(c, b, sizeof b), (double)c->e.mem_total / unit, un, comm_total(c) / unit, un);
    if (c->e.step_s >= 0) printf(", simulated step %.3f ms\n", c->e.step_s * 1e3);
    else printf("\n");
  } else {
    printf("smallest that fits %.2f %s: none up to %d ranks\n", (double)devmem / unit, un, n ? cs[n - 1].ranks : 0);
  }
}

static json_t *json_cand(const cand *c) {
  char b[64];
  json_t *j = json_object();
  json_object_set_new(j, "ranks", json_integer(c->ranks));
  json_object_set_new(j, "layout", json_string(layout_names[c->layout]));
  json_object_set_new(j, "label", json_string(layout_text(c, b, sizeof b)));
  json_object_set_new(j, "ok", json_boolean(c->ok));
  json_t *mesh = json_object();
  json_object_set_new(mesh, "data", json_integer(c->data));
  json_object_set_new(mesh, "tensor", json_integer(c->tensor));
  json_object_set_new(mesh, "pipeline", json_integer(c->layout == L_PIPE ? c->ranks : 1));
  json_object_set_new(j, "mesh", mesh);
  if (!c->ok) {
    json_object_set_new(j, "why", json_string(c->why));
    return j;
  }
  json_t *mem = json_object(), *coll = json_object(), *calls = json_object();
  for (int k = 0; k < MEM_COUNT; k++) json_object_set_new(mem, ddp_mem_class_name(k), json_integer((json_int_t)c->e.mem[k]));
  json_object_set_new(mem, "total", json_integer((json_int_t)c->e.mem_total));
  json_object_set_new(j, "memory_bytes", mem);
  json_object_set_new(j, "memory_rank", json_integer(c->e.mem_rank));
  json_object_set_new(j, "fits", json_boolean(c->fits));
  for (int k = 0; k < COST_COLL_COUNT; k++) {
    json_object_set_new(coll, ddp_cost_coll_name(k), json_real(c->e.coll_bytes[k]));
    json_object_set_new(calls, ddp_cost_coll_name(k), json_integer(c->e.coll_calls[k]));
  }
  json_object_set_new(j, "comm_bytes_per_rank", coll);
  json_object_set_new(j, "comm_calls_per_rank", calls);
  json_object_set_new(j, "comm_bytes_total", json_real(comm_total(c)));
  json_object_set_new(j, "comm_bytes_tensor_groups", json_real(c->e.tp_bytes));
  json_object_set_new(j, "comm_calls_tensor_groups", json_integer(c->e.tp_calls));
  int sim = c->e.step_s >= 0;
  json_object_set_new(j, "step_ms", sim ? json_real(c->e.step_s * 1e3) : json_null());
  json_object_set_new(j, "energy_joules", c->e.energy_j >= 0 ? json_real(c->e.energy_j) : json_null());
  json_object_set_new(j, "power_floor_ms", c->e.energy_j >= 0 ? json_real(c->e.floor_s * 1e3) : json_null());
  json_object_set_new(j, "exposed_comm_ms", sim ? json_real((c->e.step_s - c->e.free_s) * 1e3) : json_null());
  if (!sim) json_object_set_new(j, "sim_error", json_string(c->e.sim_err));
  json_object_set_new(j, "compile_s", json_real(c->e.compile_s));
  if (c->layout == L_PIPE) json_object_set_new(j, "microbatches", json_integer(c->microbatches));
  return j;
}

int ddp_explain_mesh_main(int argc, char **argv) {
  static const struct option lo[] = {{"device-memory", required_argument, NULL, 'd'},
                                     {"max-ranks", required_argument, NULL, 'n'},
                                     {"profile", required_argument, NULL, 'p'},
                                     {"json", no_argument, NULL, 'J'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  char bad[1024] = "", err[1024];
  const char *profile = NULL;
  uint64_t devmem = 0;
  int64_t maxr = 1024;
  int json = 0, help = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 'J') json = 1;
    else if (c == 'p') profile = optarg;
    else if (c == 'd') {
      if (ddp_parse_bytes(optarg, "--device-memory", &devmem, err, sizeof err) && !bad[0])
        snprintf(bad, sizeof bad, "%s", err);
    } else if (c == 'n') {
      if (ddp_parse_i64(optarg, 1, 1024, "--max-ranks", &maxr, err, sizeof err) && !bad[0])
        snprintf(bad, sizeof bad, "%s", err);
    } else if (!bad[0]) ddp_getopt_error(c, argv, lo, "ddpc explain mesh", bad, sizeof bad);
  }
  if (help) return usage(stdout), 0;
  if (!bad[0] && optind >= argc) snprintf(bad, sizeof bad, "no schedule given (see ddpc explain mesh --help)");
  if (!bad[0] && optind + 1 < argc) snprintf(bad, sizeof bad, "more than one schedule given ('%s')", argv[optind + 1]);
  if (!bad[0] && !devmem) snprintf(bad, sizeof bad, "--device-memory SIZE is required (e.g. 80GB)");
  if (bad[0]) {
    fprintf(stderr, "ddpc explain mesh: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  const char *sched = argv[optind];
  ddp_profile pr;
  ddp_profile_default(&pr);
  if (profile && ddp_profile_read(profile, &pr, err, sizeof err)) {
    fprintf(stderr, "ddpc explain mesh: --profile: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  ddp_schedule *s0 = ddp_schedule_load(sched, NULL, 0, err, sizeof err);
  if (!s0) {
    fprintf(stderr, "ddpc explain mesh: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  int64_t copies = s0->stages > 0 ? s0->replicas : s0->ranks;
  int64_t per_rank = copies > 0 ? s0->global_batch / copies : s0->global_batch;
  if (per_rank < 1) per_rank = 1;
  int cap = 0, n = 0, best = -1, stopped_at = 0;
  char tp_why[NTP][256];
  for (int k = 0; k < NTP; k++) {
    tp_why[k][0] = 0;
    tp_refusal(s0, tp_sizes[k], tp_why[k], sizeof tp_why[k]);
  }
  for (int64_t r = 1; r <= maxr; r *= 2) cap += L_COUNT - 1 + NTP;
  cand *cs = ddp_xcalloc((size_t)cap, sizeof *cs);
  for (int r = 1; r <= maxr; r *= 2) {
    double t0 = ddp_now_s();
    for (int l = 0; l < L_COUNT; l++)
      for (int k = 0; k < (l == L_TENSOR ? NTP : 1); k++) {
        if ((r == 1) != (l == L_SINGLE)) continue;
        int tp = l == L_TENSOR ? tp_sizes[k] : 1;
        if (l == L_TENSOR && (tp > r || tp_why[k][0])) continue; /* no row: the header says why */
        cand *cd = &cs[n++];
        cd->ranks = r, cd->layout = l, cd->tensor = tp, cd->data = l == L_PIPE ? 1 : r / tp;
        ddp_schedule s;
        if (make_layout(s0, per_rank, l, r, tp, &s, &cd->microbatches, cd->why, sizeof cd->why)) continue;
        char e2[1000];
        if (ddp_xeval_schedule(&s, &pr, &cd->e, e2, sizeof e2)) {
          const char *colon = strncmp(e2, s0->path, strlen(s0->path)) ? e2 : e2 + strlen(s0->path);
          snprintf(cd->why, sizeof cd->why, "%s", colon[0] == ':' ? colon + 2 : colon);
          continue;
        }
        cd->ok = 1;
        cd->fits = cd->e.mem_total <= devmem;
        if (cd->fits && (best < 0 || cd->ranks < cs[best].ranks ||
                         (cd->ranks == cs[best].ranks && comm_total(cd) < comm_total(&cs[best]))))
          best = n - 1;
      }
    if (ddp_now_s() - t0 > ROUND_BUDGET_S && r < maxr) {
      stopped_at = 2 * r;
      break;
    }
  }
  if (json) {
    json_t *root = json_object(), *a = json_array();
    json_object_set_new(root, "schedule", json_string(sched));
    json_object_set_new(root, "profile", json_string(pr.name));
    json_object_set_new(root, "default_profile", json_boolean(profile == NULL));
    json_object_set_new(root, "device_memory", json_integer((json_int_t)devmem));
    json_object_set_new(root, "per_rank_batch", json_integer(per_rank));
    json_t *tpj = json_object(), *sizes = json_array(), *refused = json_array();
    for (int k = 0; k < NTP; k++) {
      if (!tp_why[k][0]) {
        json_array_append_new(sizes, json_integer(tp_sizes[k]));
        continue;
      }
      json_t *o = json_object();
      json_object_set_new(o, "tensor", json_integer(tp_sizes[k]));
      json_object_set_new(o, "why", json_string(tp_why[k]));
      json_array_append_new(refused, o);
    }
    json_object_set_new(tpj, "sizes", sizes);
    json_object_set_new(tpj, "refused", refused);
    json_object_set_new(tpj, "max_tensor", json_integer(TP_MAX));
    json_object_set_new(tpj, "replica_batch",
                        json_string("a tensor group of t ranks trains one replica of t x per_rank_batch sequences"));
    json_object_set_new(root, "tensor_parallel", tpj);
    for (int i = 0; i < n; i++) json_array_append_new(a, json_cand(&cs[i]));
    json_object_set_new(root, "layouts", a);
    json_object_set_new(root, "stopped_before", stopped_at ? json_integer(stopped_at) : json_null());
    json_object_set_new(root, "smallest_fit", best >= 0 ? json_cand(&cs[best]) : json_null());
    json_dumpf(root, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    fputc('\n', stdout);
    json_decref(root);
  } else {
    print_text(sched, &pr, profile == NULL, devmem, cs, n, best, stopped_at, (double)per_rank, tp_why);
  }
  free(cs);
  ddp_schedule_free(s0);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ddpc explain mesh: cannot write to stdout\n");
    return DDP_EXIT_FAILURE;
  }
  return 0;
}

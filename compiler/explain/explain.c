/* compiler/explain/explain.c: the report and command line of `ddpc explain PLAN [--profile FILE]
 * [--rank R] [--json] [--compare METRICS.jsonl]` (docs/EXPLAIN.md; --compare's report: compare.c): per rank, the predicted step time, compute and communication
 * per stream, exposed communication and overlap ratio, the step's energy and the power floor (energy.c), the
 * critical path's top instructions and the memory per class at the peak. */
#include "args.h"
#include "err.h"
#include "explain.h"
#include "inspect.h"
#include "xmodel.h"
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { TOP = 5 };

static const char *instr_label(const ddp_plan *p, const ddp_instr *in, char *buf, size_t cap) {
  const char *name = ddp_plan_string(p, in->name);
  snprintf(buf, cap, "%s%s%s%s%s", ddp_opcode_name(in->opcode), in->opcode == I_KERNEL ? " " : "",
           in->opcode == I_KERNEL ? ddp_op_name(in->op) : "", name[0] ? " " : "", name);
  return buf;
}

/* The critical path of rank r sorted by time, the top n into top[] (indices into ranks/idx). */
typedef struct path_item {
  int rank;
  int64_t idx;
  double t;
} path_item;
static int by_time(const void *a, const void *b) {
  const path_item *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? 1 : -1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t path_top(const ddp_plan *p, const ddp_sim *s, int r, path_item *top, size_t *plen, double *ptime) {
  size_t cap = 1; /* a path visits each instruction of each rank at most once */
  for (int q = 0; q < s->world; q++) cap += p->ranks[q].step.n;
  int *rk = ddp_xmalloc(cap * sizeof *rk);
  int64_t *ix = ddp_xmalloc(cap * sizeof *ix);
  size_t n = ddp_sim_critical_path(p, s, r, rk, ix, cap);
  path_item *all = ddp_xcalloc(n + 1, sizeof *all);
  double sum = 0;
  for (size_t k = 0; k < n; k++) {
    const ddp_sim_instr *si = &s->ranks[rk[k]].in[ix[k]];
    all[k] = (path_item){rk[k], ix[k], si->end - si->start};
    sum += all[k].t;
  }
  qsort(all, n, sizeof *all, by_time);
  size_t m = n < TOP ? n : TOP;
  memcpy(top, all, m * sizeof *top);
  free(all), free(rk), free(ix);
  *plen = n, *ptime = sum;
  return m;
}

static double overlap(const ddp_sim_rank *sr) { return sr->comm_s > 0 ? 1 - sr->exposed_s / sr->comm_s : 0; }

/* The power model's lines (energy.c): nothing when the profile has none. step_s: the predicted step. */
static void text_energy(const ddp_plan *p, const ddp_profile *pr, const ddp_sim_rank *sr, int r, double step_s,
                        FILE *o) {
  ddp_step_energy e;
  if (ddp_rank_energy(p, pr, r, &e)) return;
  char fp32[64] = "";
  if (e.tflop_fp32 > 0) snprintf(fp32, sizeof fp32, ", %.2f of them fp32", e.tflop_fp32);
  fprintf(o, "energy above idle       %10.3f J: compute %.3f (%.2f TFLOP%s), memory %.3f (%.2f GB), links %.3f "
             "(%.2f GB sent)\n", e.j, e.compute_j, e.tflop, fp32, e.memory_j, e.hbm_gb, e.link_j, e.link_gb);
  if (step_s > 0)
    fprintf(o, "mean power at that step %10.0f W (idle %.0f W + energy / predicted step; limit %.0f W)\n",
            pr->power.idle_w + e.j / step_s, pr->power.idle_w, pr->power.limit_w);
  fprintf(o, "power floor             %10.3f ms (the shortest step the %.0f W limit allows for that energy)%s\n",
          e.floor_s * 1e3, pr->power.limit_w, e.floor_s > sr->step_s ? ": above the simulated step" : "");
}

static void text_rank(const ddp_plan *p, const ddp_profile *pr, const ddp_sim *s, int r, FILE *o) {
  const ddp_sim_rank *sr = &s->ranks[r];
  char b2[160];
  fprintf(o, "== rank %d ==\n", r);
  int floor_bound;
  double step_s = ddp_rank_step_s(p, pr, r, sr->step_s, &floor_bound);
  fprintf(o, "predicted step time     %10.3f ms", step_s * 1e3);
  if (floor_bound) fprintf(o, " (the power floor; the simulated step %.3f ms)", sr->step_s * 1e3);
  fprintf(o, "\n");
  fprintf(o, "%-10s %12s %12s %12s\n", "stream", "busy ms", "compute ms", "comm ms");
  for (uint32_t k = 0; k < s->nstreams; k++)
    fprintf(o, "%-10s %12.3f %12.3f %12.3f\n", ddp_stream_name(k), sr->busy_s[k] * 1e3,
            sr->compute_s[k] * 1e3, (sr->busy_s[k] - sr->compute_s[k]) * 1e3);
  double ph[3];
  ddp_sim_phases(p, s, r, &ph[0], &ph[1], &ph[2]);
  fprintf(o, "phases (timers, as ddprun's metrics):");
  for (int k = 0; k < 3; k++) {
    static const char *const names[3] = {"forward", "backward", "optimizer"};
    if (ph[k] >= 0) fprintf(o, " %s %.3f ms%s", names[k], ph[k] * 1e3, k < 2 ? "," : "");
    else fprintf(o, " %s n/a%s", names[k], k < 2 ? "," : "");
  }
  fprintf(o, "\n");
  fprintf(o, "communication           %10.3f ms\n", sr->comm_s * 1e3);
  fprintf(o, "exposed communication   %10.3f ms\n", sr->exposed_s * 1e3);
  if (sr->comm_s > 0) fprintf(o, "overlap ratio           %10.3f\n", overlap(sr));
  else fprintf(o, "overlap ratio                  n/a (no communication)\n");
  text_energy(p, pr, sr, r, step_s, o);
  path_item top[TOP];
  size_t plen = 0;
  double ptime = 0;
  size_t m = path_top(p, s, r, top, &plen, &ptime);
  fprintf(o, "critical path: %zu instructions, %.3f ms of work; top %zu by time:\n", plen, ptime * 1e3, m);
  for (size_t k = 0; k < m; k++) {
    const ddp_instr *in = &p->ranks[top[k].rank].step.v[top[k].idx];
    fprintf(o, "  %10.3f ms  rank %d #%-6" PRId64 " %-8s %s\n", top[k].t * 1e3, top[k].rank, top[k].idx,
            ddp_stream_name(in->stream), instr_label(p, in, b2, sizeof b2));
  }
  uint64_t mem[MEM_COUNT], total = 0;
  ddp_memory_classes(p, r, mem);
  fprintf(o, "memory at the peak:\n");
  for (int c = 0; c < MEM_COUNT; c++) {
    fprintf(o, "  %-22s %14" PRIu64 " B %10.2f MiB\n", ddp_mem_class_name(c), mem[c], (double)mem[c] / 1048576.0);
    total += mem[c];
  }
  fprintf(o, "  %-22s %14" PRIu64 " B %10.2f MiB\n", "total", total, (double)total / 1048576.0);
  fprintf(o, "\n");
}

static json_t *json_rank(const ddp_plan *p, const ddp_profile *pr, const ddp_sim *s, int r) {
  const ddp_sim_rank *sr = &s->ranks[r];
  char b2[160];
  json_t *j = json_object(), *streams = json_array(), *path = json_array(), *mem = json_object();
  json_object_set_new(j, "rank", json_integer(r));
  int floor_bound;
  json_object_set_new(j, "step_ms", json_real(ddp_rank_step_s(p, pr, r, sr->step_s, &floor_bound) * 1e3));
  json_object_set_new(j, "simulated_step_ms", json_real(sr->step_s * 1e3));
  json_object_set_new(j, "step_bound", json_string(floor_bound ? "power floor" : "simulated"));
  double ph[3];
  ddp_sim_phases(p, s, r, &ph[0], &ph[1], &ph[2]);
  json_object_set_new(j, "forward_ms", ph[0] >= 0 ? json_real(ph[0] * 1e3) : json_null());
  json_object_set_new(j, "backward_ms", ph[1] >= 0 ? json_real(ph[1] * 1e3) : json_null());
  json_object_set_new(j, "optimizer_ms", ph[2] >= 0 ? json_real(ph[2] * 1e3) : json_null());
  json_object_set_new(j, "comm_ms", json_real(sr->comm_s * 1e3));
  json_object_set_new(j, "exposed_comm_ms", json_real(sr->exposed_s * 1e3));
  ddp_step_times mt; /* what ddprun's metrics would report from these timers (explain --compare's rows) */
  ddp_sim_step_times(p, s, r, &mt);
  json_object_set_new(j, "metrics_comm_ms", json_real(mt.comm_ms));
  json_object_set_new(j, "metrics_exposed_comm_ms", json_real(mt.exposed_comm_ms));
  json_object_set_new(j, "overlap_ratio", sr->comm_s > 0 ? json_real(overlap(sr)) : json_null());
  ddp_step_energy e;
  if (ddp_rank_energy(p, pr, r, &e) == 0) {
    json_t *en = json_object();
    json_object_set_new(en, "joules", json_real(e.j));
    json_object_set_new(en, "compute_joules", json_real(e.compute_j));
    json_object_set_new(en, "memory_joules", json_real(e.memory_j));
    json_object_set_new(en, "link_joules", json_real(e.link_j));
    json_object_set_new(en, "tflop", json_real(e.tflop));
    json_object_set_new(en, "tflop_fp32", json_real(e.tflop_fp32));
    json_object_set_new(en, "memory_gb", json_real(e.hbm_gb));
    json_object_set_new(en, "link_gb", json_real(e.link_gb));
    json_object_set_new(en, "power_floor_ms", json_real(e.floor_s * 1e3));
    json_object_set_new(j, "energy", en);
  } else {
    json_object_set_new(j, "energy", json_null());
  }
  for (uint32_t k = 0; k < s->nstreams; k++) {
    json_t *st = json_object();
    json_object_set_new(st, "stream", json_string(ddp_stream_name(k)));
    json_object_set_new(st, "busy_ms", json_real(sr->busy_s[k] * 1e3));
    json_object_set_new(st, "compute_ms", json_real(sr->compute_s[k] * 1e3));
    json_object_set_new(st, "comm_ms", json_real((sr->busy_s[k] - sr->compute_s[k]) * 1e3));
    json_array_append_new(streams, st);
  }
  json_object_set_new(j, "streams", streams);
  path_item top[TOP];
  size_t plen = 0;
  double ptime = 0;
  size_t m = path_top(p, s, r, top, &plen, &ptime);
  json_object_set_new(j, "critical_path_length", json_integer((json_int_t)plen));
  for (size_t k = 0; k < m; k++) {
    const ddp_instr *in = &p->ranks[top[k].rank].step.v[top[k].idx];
    json_t *e = json_object();
    json_object_set_new(e, "rank", json_integer(top[k].rank));
    json_object_set_new(e, "index", json_integer(top[k].idx));
    json_object_set_new(e, "ms", json_real(top[k].t * 1e3));
    json_object_set_new(e, "instr", json_string(instr_label(p, in, b2, sizeof b2)));
    json_array_append_new(path, e);
  }
  json_object_set_new(j, "critical_path_top", path);
  uint64_t mc[MEM_COUNT], total = 0;
  ddp_memory_classes(p, r, mc);
  for (int c = 0; c < MEM_COUNT; c++) {
    json_object_set_new(mem, ddp_mem_class_name(c), json_integer((json_int_t)mc[c]));
    total += mc[c];
  }
  json_object_set_new(mem, "total", json_integer((json_int_t)total));
  json_object_set_new(j, "memory_bytes", mem);
  return j;
}

/* What the model does not know about the ranks' own pulls (nccl.movement = "peer_copy"), said with the figures
 * (docs/EXPLAIN.md, the all_to_all row): no profile field prices them apart from NCCL's copy-engine path. */
#define MOVED_NOTE                                                                                                \
  "the all-to-alls and all-gathers moved by the ranks' own pulls (nccl.movement = \"peer_copy\") are priced as " \
  "NCCL's copy-engine collectives; measured, that held on 2 x H200 and was 11% short on 4 (docs/EXPLAIN.md)"

int ddp_explain(const ddp_plan *p, const ddp_profile *pr, int default_profile, int rank, int json, FILE *o,
                char *err, size_t errcap) {
  ddp_sim *s = ddp_explain_sim(p, pr, err, errcap);
  if (!s) return -1;
  int r0 = rank < 0 ? 0 : rank, r1 = rank < 0 ? s->world : rank + 1;
  if (json) {
    json_t *root = json_object(), *ranks = json_array();
    json_object_set_new(root, "profile", json_string(pr->name));
    json_object_set_new(root, "default_profile", json_boolean(default_profile));
    json_object_set_new(root, "world", json_integer(s->world));
    if (ddp_plan_peer_copied(p, 0)) json_object_set_new(root, "note", json_string(MOVED_NOTE));
    for (int r = r0; r < r1; r++) json_array_append_new(ranks, json_rank(p, pr, s, r));
    json_object_set_new(root, "ranks", ranks);
    int rc = json_dumpf(root, o, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    fputc('\n', o);
    json_decref(root);
    if (rc) ddp_fail(err, errcap, "cannot write the JSON report");
    ddp_sim_free(s);
    return rc ? -1 : 0;
  }
  fprintf(o, "== explain ==\n");
  if (default_profile)
    fprintf(o, "profile: %s; no --profile given, so the numbers are the default's, not this machine's\n", pr->name);
  else fprintf(o, "profile: %s\n", pr->name);
  fprintf(o, "ranks: %d; times are predictions of one step (docs/EXPLAIN.md)\n", s->world);
  if (ddp_plan_peer_copied(p, 0))
    fprintf(o, "note: %s\n", MOVED_NOTE);
  fprintf(o, "\n");
  for (int r = r0; r < r1; r++) text_rank(p, pr, s, r, o);
  ddp_sim_free(s);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: ddpc explain PLAN [--profile FILE] [--rank R] [--json] [--compare METRICS.jsonl]\n"
             "Predicts a plan's step from its streams, events and collectives (docs/EXPLAIN.md): per rank the\n"
             "step time, compute and communication per stream, exposed communication, overlap ratio, the\n"
             "step's energy above idle and the power floor it sets, the critical path's top instructions and\n"
             "the memory per class at the peak.\n"
             "  --profile FILE  device profile (JSON; default: the built-in H100/H200 profile, uncalibrated)\n"
             "  --rank R        only rank R (0 .. world - 1)\n"
             "  --json          one JSON document\n"
             "  --compare METRICS.jsonl  instead: per rank and phase, the prediction against ddprun's measurement\n"
             "                  in that metrics file (warm-up steps skipped, medians), ratio, error and the\n"
             "                  verdicts (step within 10%%, exposed communication within 2 ms)\n"
             "  -h, --help      this help\n"
             "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

int ddp_explain_main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "buckets")) return ddp_explain_buckets_main(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "mesh")) return ddp_explain_mesh_main(argc - 1, argv + 1);
  static const struct option lo[] = {{"profile", required_argument, NULL, 'p'},
                                     {"rank", required_argument, NULL, 'r'},
                                     {"json", no_argument, NULL, 'J'},
                                     {"compare", required_argument, NULL, 'c'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  char bad[1024] = "", err[1024];
  const char *profile = NULL, *compare = NULL;
  int64_t rank = -1;
  int json = 0, help = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 'J') json = 1;
    else if ((c == 'p' && profile) || (c == 'c' && compare)) { /* which one would win is not for us to guess */
      if (!bad[0]) snprintf(bad, sizeof bad, "%s given twice", c == 'p' ? "--profile" : "--compare");
    } else if (c == 'p') profile = optarg;
    else if (c == 'c') compare = optarg;
    else if (c == 'r') {
      if (ddp_parse_i64(optarg, 0, INT_MAX - 1, "--rank", &rank, err, sizeof err) && !bad[0])
        snprintf(bad, sizeof bad, "%s", err);
    } else if (!bad[0]) {
      ddp_getopt_error(c, argv, lo, "ddpc explain", bad, sizeof bad);
    }
  }
  if (help) {
    usage(stdout);
    return 0;
  }
  if (!bad[0] && optind >= argc) snprintf(bad, sizeof bad, "no plan given (see ddpc explain --help)");
  if (!bad[0] && optind + 1 < argc) snprintf(bad, sizeof bad, "more than one plan given ('%s')", argv[optind + 1]);
  if (bad[0]) {
    fprintf(stderr, "ddpc explain: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  ddp_profile pr;
  ddp_profile_default(&pr);
  if (profile && ddp_profile_read(profile, &pr, err, sizeof err)) {
    fprintf(stderr, "ddpc explain: --profile: %s\n", err);
    return DDP_EXIT_FAILURE;
  }
  const char *path = argv[optind];
  int status = 0;
  ddp_plan *p = ddp_inspect_open("ddpc explain", path, rank, &status);
  if (!p) return status;
  int rc = compare ? ddp_explain_compare(p, path, compare, &pr, profile == NULL, (int)rank, json, stdout, err, sizeof err)
                   : ddp_explain(p, &pr, profile == NULL, (int)rank, json, stdout, err, sizeof err);
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) rc = -1, snprintf(err, sizeof err, "cannot write to stdout");
  if (rc && compare) fprintf(stderr, "ddpc explain --compare: %s\n", err);
  else if (rc) fprintf(stderr, "ddpc explain: %s: %s\n", path, err);
  ddp_plan_free(p);
  return rc ? DDP_EXIT_FAILURE : 0;
}

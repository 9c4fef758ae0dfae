/* compiler/inspect/inspect.c: `ddpc inspect`, the EXPLAIN of a plan. Prints, in this order, each part under a
 * fixed heading line that tests and scripts grep for (every section is printed, "none" when empty):
 *
 *   == summary ==                  every meta field (DDP_META_FIELDS), table counts
 *   == tensors ==                  id, name, state name, shape, dtype, bytes, arena, offset, flags, view of
 *   == memory ==                   bytes per arena class per rank; total = predicted peak
 *   == buckets ==                  index, #params, bytes, offset, members; comm bytes per step
 *   == sharding ==                 level, N, units, all-gathers in prefetch order, resident gathered units
 *   == memory per rank ==          classes at the peak in GB next to the seeds' formula for the level
 *   == pipeline ==                 schedule, chunks (rank, layers, FLOPs), per-rank bytes and transfers, bubble
 *   == tensor parallelism ==       only when mesh.tensor > 1: mesh, comms, split shapes, TP collectives, volume
 *   == program rank R init ==      per selected rank: the init program, grouped per stream
 *   == program rank R step ==      per selected rank: the step program, grouped per stream
 *   == kernels ==                  index, op, template, entry, module hash, CUBIN bytes, spec; totals
 *
 * The program listings are in inspect_program.c, sharding and memory per rank in inspect_shard*.c, the
 * pipeline in inspect_pipeline.c, tensor parallelism in inspect_tensor.c. */
#include "inspect.h"
#include "args.h"
#include "inspect_program.h"
#include "inspect_shard.h"
#include "inspect_pipeline.h"
#include "inspect_tensor.h"
#include <inttypes.h>
#include <string.h>

static const char *human(char *buf, size_t cap, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
  if (u == 0) snprintf(buf, cap, "%" PRIu64 " B", bytes);
  else snprintf(buf, cap, "%.2f %s", v, units[u]);
  return buf;
}

/* ---- summary ---- */

/* A readable form of the coded meta fields; NULL when the value is printed as is. */
static const char *meta_decode(const ddp_plan *p, const char *field, int64_t v) {
  struct { const char *field; const char *const *names; int n; } enums[] = {
      {"model_kind", ddp_model_kind_names, MODEL_COUNT}, {"precision", ddp_precision_names, PREC_COUNT},
      {"data_kind", ddp_data_kind_names, DATA_COUNT},    {"optimizer", ddp_optimizer_names, OPTIM_COUNT},
      {"lr_schedule", ddp_lr_schedule_names, LR_COUNT}, {"nccl_cta_policy", ddp_nccl_cta_policy_names, NCCL_CTA_COUNT},
      {"nccl_register", ddp_nccl_register_names, NCCL_REGISTER_COUNT}};
  for (size_t k = 0; k < sizeof enums / sizeof enums[0]; k++)
    if (strcmp(field, enums[k].field) == 0) return ddp_vocab_name(enums[k].names, enums[k].n, v);
  if (strcmp(field, "act_dtype") == 0 || strcmp(field, "grad_dtype") == 0) return ddp_dtype_name((int)v);
  if (strcmp(field, "mode") == 0) return ddp_mode_name((int)v);
  size_t n = strlen(field);
  if (n > 7 && strcmp(field + n - 7, "_tensor") == 0) return ddp_plan_tensor_name(p, v);
  if (strcmp(field, "low_priority_streams") == 0) { /* the mask as stream indices */
    static char list[256];
    size_t k = (size_t)snprintf(list, sizeof list, "%s", v ? "streams" : "none");
    for (int s = 1; s < 63 && k < sizeof list - 8; s++)
      if ((v >> s) & 1) k += (size_t)snprintf(list + k, sizeof list - k, " %d", s);
    return list;
  }
  return NULL;
}

static int count_lines(const char *s) {
  if (!s || !*s) return 0;
  int n = 1;
  for (; *s; s++)
    if (*s == '\n' && s[1]) n++;
  return n;
}

static void print_summary(FILE *o, const ddp_plan *p) {
  fprintf(o, "== summary ==\n%-22s %s\n", "field", "value");
#define SUM_I(name)                                                       \
  do {                                                                    \
    const char *d = meta_decode(p, #name, p->meta.name);                 \
    if (d) fprintf(o, "%-22s %" PRId64 " (%s)\n", #name, p->meta.name, d); \
    else fprintf(o, "%-22s %" PRId64 "\n", #name, p->meta.name);         \
  } while (0);
#define SUM_F(name)                                                                              \
  if (strcmp(#name, "predicted_step_ms") == 0 && !(p->meta.name > 0))                            \
    fprintf(o, "%-22s %.6g (no prediction: %s)\n", #name, p->meta.name,                          \
            p->meta.predicted_error && *p->meta.predicted_error ? "see predicted_error"          \
                                                                : "the plan was compiled without one"); \
  else                                                                                           \
    fprintf(o, "%-22s %.6g\n", #name, p->meta.name);
#define SUM_S(name)                                                                        \
  if (strcmp(#name, "schedule_source") == 0)                                               \
    fprintf(o, "%-22s (%d lines)\n", #name, count_lines(p->meta.name));                    \
  else                                                                                     \
    fprintf(o, "%-22s %s\n", #name, p->meta.name && *p->meta.name ? p->meta.name : "-");
#define SUM(t, name) SUM_##t(name)
  DDP_META_FIELDS(SUM)
#undef SUM
#undef SUM_I
#undef SUM_F
#undef SUM_S
  fprintf(o, "%-22s %u\n%-22s %u\n%-22s %u\n%-22s %u\n%-22s %u\n%-22s %u\n%-22s %u\n\n", "tensors", p->ntensors,
          "modules", p->nmodules, "kernels", p->nkernels, "buckets", p->nbuckets, "strings", p->nstrings, "streams",
          p->nstreams, "communicators", p->ncomms);
}

/* nccl = { register = "window" } on more than one rank: the arenas the CUDA executor registers as NCCL
 * symmetric windows, per communicator, with their window sizes (plan/windows.c), e.g.
 * "nccl_windows           world: params 2.00 MiB, grads 2.00 MiB"; nothing for other plans. */
static void print_windows(FILE *o, const ddp_plan *p) {
  if (p->meta.nccl_register != NCCL_REGISTER_WINDOW || p->meta.world < 2) return;
  const uint32_t coll = ddp_plan_collective_arenas(p);
  fprintf(o, "%-22s", "nccl_windows");
  int any = 0;
  for (uint32_t c = 0; c <= p->ncomms; c++) {
    int here = 0;
    for (int a = 0; a < ARENA_COUNT; a++) {
      const uint64_t w = ddp_plan_window_bytes(p, coll, c, a);
      if (!w) continue;
      char h[32];
      if (!here && c) fprintf(o, "%scomm %u:", any ? "; " : " ", c);
      if (!here && !c) fprintf(o, " world:");
      fprintf(o, "%s %s %s", here ? "," : "", ddp_arena_name(a), human(h, sizeof h, w));
      here = any = 1;
    }
  }
  fprintf(o, "%s\n", any ? "" : coll ? " none (no collective's arena has one size on all its ranks)" : " none (no collectives)");
}

/* nccl = { movement = "peer_copy" }: "nccl_movement          peer_copy (12 all-to-alls and all-gathers in rank 0's
 * step)"; nothing for other plans. */
static void print_movement(FILE *o, const ddp_plan *p) {
  const uint32_t n = ddp_plan_peer_copied(p, 0);
  if (n) fprintf(o, "%-22s peer_copy (%u all-to-alls and all-gathers in rank 0's step: copy-engine pulls)\n", "nccl_movement", n);
}

/* The fused kernel instructions (the schedule's `fusion` field) in rank 0's step, by op: one line in the
 * summary, "fused_kernels 192 (RMSNORM_BWD_CAST 96, ATTN_BWD_DKV_ROPE 48, ATTN_BWD_DQ_ROPE 48)", or 0 when
 * the plan has none. */
static void print_fused(FILE *o, const ddp_plan *p) {
  static const int fused[] = {OP_RMSNORM_BWD_CAST, OP_ATTN_BWD_DKV_ROPE, OP_ATTN_BWD_DQ_ROPE, OP_ATTN_BWD_FUSED};
  enum { NF = sizeof fused / sizeof fused[0] };
  uint32_t n[NF] = {0}, total = 0;
  if (p->meta.world > 0 && p->ranks)
    for (uint32_t i = 0; i < p->ranks[0].step.n; i++) {
      const ddp_instr *in = &p->ranks[0].step.v[i];
      for (int f = 0; f < NF; f++)
        if (in->opcode == I_KERNEL && in->op == fused[f]) n[f]++, total++;
    }
  fprintf(o, "%-22s %u", "fused_kernels", total);
  for (int f = 0, k = 0; f < NF; f++)
    if (n[f]) fprintf(o, "%s%s %u", k++ ? ", " : " (", ddp_op_name(fused[f]), n[f]);
  fprintf(o, "%s\n\n", total ? ")" : "");
}

/* ---- tensors ---- */

static const char *const flag_words[] = {"param", "trainable", "param_copy", "grad",    "opt_m",     "opt_v",
                                         "tokens", "targets",  "loss",       "scalars", "persistent", "shape_only", "piece"};

static void flags_text(char *buf, size_t cap, uint32_t flags) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t b = 0; b < sizeof flag_words / sizeof flag_words[0]; b++)
    if (flags & (1u << b)) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? "," : "", flag_words[b]);
  if (flags >> (sizeof flag_words / sizeof flag_words[0]))
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s0x%x", n ? "," : "", flags);
  if (!n) snprintf(buf, cap, "-");
}

static void shape_text(char *buf, size_t cap, const ddp_tensor *t) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < t->ndim && d < DDP_MAX_DIMS; d++)
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%" PRId64, d ? "," : "", t->shape[d]);
  snprintf(buf + n, n < cap ? cap - n : 0, "]");
}

static void print_tensors(FILE *o, const ddp_plan *p) {
  fprintf(o, "== tensors ==\n");
  if (!p->ntensors) {
    fprintf(o, "none\n\n");
    return;
  }
  int wn = 4, ws = 5, wf = 5;
  for (uint32_t i = 0; i < p->ntensors; i++) {
    char flags[160];
    flags_text(flags, sizeof flags, p->tensors[i].flags);
    int a = (int)strlen(ddp_plan_tensor_name(p, i)), b = p->tensors[i].state_name ? (int)strlen(p->tensors[i].state_name) : 1,
        f = (int)strlen(flags);
    wn = a > wn ? a : wn;
    ws = b > ws ? b : ws;
    wf = f > wf ? f : wf;
  }
  fprintf(o, "%5s  %-*s  %-*s  %-18s %-5s %12s  %-11s %12s  %-*s  %s\n", "id", wn, "name", ws, "state", "shape", "dtype",
          "bytes", "arena", "offset", wf, "flags", "view-of");
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    char shape[96], flags[160], view[256] = "-";
    shape_text(shape, sizeof shape, t);
    flags_text(flags, sizeof flags, t->flags);
    if (t->base >= 0) snprintf(view, sizeof view, "%s+%" PRIu64, ddp_plan_tensor_name(p, t->base), t->view);
    if ((t->flags & TF_PIECE) && ddp_piece_runs(t) > 1) { /* a strided piece: where its runs lie */
      size_t vn = strlen(view);
      snprintf(view + vn, sizeof view - vn, " (rank %d: %" PRId64 " runs from element %" PRId64 ", %" PRId64 " apart)",
               t->piece_rank, t->piece_runs, t->piece_first, t->piece_stride);
    }
    fprintf(o, "%5u  %-*s  %-*s  %-18s %-5s %12" PRIu64 "  %-11s %12" PRIu64 "  %-*s  %s\n", i, wn,
            ddp_plan_tensor_name(p, i), ws, t->state_name ? t->state_name : "-", shape, ddp_dtype_name(t->dtype), t->bytes,
            ddp_arena_name(t->arena), t->offset, wf, flags, view);
  }
  fprintf(o, "\n");
}

/* ---- memory ---- */

static void print_memory(FILE *o, const ddp_plan *p) {
  fprintf(o, "== memory ==\n");
  if (!p->ranks || p->meta.world < 1) {
    fprintf(o, "none\n\n");
    return;
  }
  fprintf(o, "%5s", "rank");
  for (int a = 0; a < ARENA_COUNT; a++) fprintf(o, " %14s", ddp_arena_name(a));
  fprintf(o, " %14s  %s\n", "total", "(predicted peak)");
  for (int64_t r = 0; r < p->meta.world; r++) {
    uint64_t total = 0;
    fprintf(o, "%5" PRId64, r);
    for (int a = 0; a < ARENA_COUNT; a++) {
      fprintf(o, " %14" PRIu64, p->ranks[r].arena_bytes[a]);
      total += p->ranks[r].arena_bytes[a];
    }
    char h[32];
    fprintf(o, " %14" PRIu64 "  %s\n", total, human(h, sizeof h, total));
  }
  fprintf(o, "\n");
}

/* ---- buckets ---- */

static void print_buckets(FILE *o, const ddp_plan *p) {
  char h[32];
  fprintf(o, "== buckets ==\n");
  if (!p->nbuckets) fprintf(o, "none\n");
  else fprintf(o, "%6s %7s %14s %14s  %s\n", "bucket", "params", "bytes", "offset", "members (gradient-ready order)");
  for (uint32_t i = 0; i < p->nbuckets; i++) {
    const ddp_bucket *b = &p->buckets[i];
    fprintf(o, "%6u %7u %14" PRIu64 " %14" PRIu64 "  ", i, b->nparams, b->bytes, b->offset);
    for (uint32_t j = 0; j < b->nparams; j++) fprintf(o, "%s%s", j ? ", " : "", ddp_plan_tensor_name(p, b->params[j]));
    fprintf(o, "\n");
  }
  double comm = p->meta.comm_bytes_per_step;
  fprintf(o, "predicted communication per step: %.0f bytes (%s)\n\n", comm,
          human(h, sizeof h, comm > 0 && comm < 1.8e19 ? (uint64_t)comm : 0));
}

/* ---- kernels ---- */

static void print_spec(FILE *o, const char *spec) {
  if (!spec || !*spec) {
    fprintf(o, "-");
    return;
  }
  int first = 1;
  for (const char *s = spec; *s;) {
    size_t n = strcspn(s, "\n");
    if (n) fprintf(o, "%s%.*s", first ? "" : "; ", (int)n, s), first = 0;
    s += n;
    if (*s) s++;
  }
}

static void print_kernels(FILE *o, const ddp_plan *p) {
  fprintf(o, "== kernels ==\n");
  if (!p->nkernels) fprintf(o, "none\n");
  else
    fprintf(o, "%6s  %-22s %-16s %-24s %-16s %10s  %s\n", "kernel", "op", "template", "entry", "hash", "cubin", "spec");
  for (uint32_t i = 0; i < p->nkernels; i++) {
    const ddp_kernel *k = &p->kernels[i];
    const ddp_module *m = (k->module >= 0 && (uint32_t)k->module < p->nmodules) ? &p->modules[k->module] : NULL;
    fprintf(o, "%6u  %-22s %-16s %-24s %-16s %10" PRIu64 "  ", i, ddp_op_name(k->op),
            m && m->template_name ? m->template_name : "?", m && m->entry ? m->entry : "?", m ? m->hash : "?",
            m ? m->cubin_size : 0);
    print_spec(o, m ? m->spec : NULL);
    fprintf(o, "\n");
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < p->nmodules; i++) total += p->modules[i].cubin_size;
  char h[32];
  fprintf(o, "modules: %u, total CUBIN bytes: %" PRIu64 " (%s)\n", p->nmodules, total, human(h, sizeof h, total));
}

int ddp_inspect(const ddp_plan *p, int rank, FILE *out) {
  if (!p || !out || rank < -1 || (rank >= 0 && rank >= p->meta.world)) return -1;
  print_summary(out, p);
  print_windows(out, p);
  print_movement(out, p);
  print_fused(out, p);
  print_tensors(out, p);
  print_memory(out, p);
  print_buckets(out, p);
  ddp_shard_info si;
  ddp_shard_analyse(p, &si);
  ddp_insp_sharding(out, p, &si);
  ddp_insp_memory_per_rank(out, p, &si);
  ddp_shard_info_free(&si);
  ddp_insp_pipeline(out, p);
  ddp_insp_tensor(out, p); /* nothing unless mesh.tensor > 1 */
  for (int64_t r = 0; p->ranks && r < p->meta.world; r++) {
    if (rank >= 0 && r != rank) continue;
    ddp_insp_program(out, p, (int)r, "init", &p->ranks[r].init);
    ddp_insp_program(out, p, (int)r, "step", &p->ranks[r].step);
  }
  print_kernels(out, p);
  ddp_insp_ops(out, p);
  return ferror(out) ? -1 : 0;
}

ddp_plan *ddp_inspect_open(const char *prog, const char *path, int64_t rank, int *status) {
  char err[1024];
  ddp_plan *p = ddp_plan_read(path, err, sizeof err);
  if (!p) {
    fprintf(stderr, "%s: %s\n", prog, err);
    *status = DDP_EXIT_FAILURE;
    return NULL;
  }
  if (rank >= p->meta.world) {
    fprintf(stderr, "%s: --rank: %lld, but %s has %lld ranks (0..%lld)\n", prog, (long long)rank, path,
            (long long)p->meta.world, (long long)p->meta.world - 1);
    ddp_plan_free(p);
    *status = DDP_EXIT_USAGE;
    return NULL;
  }
  return p;
}

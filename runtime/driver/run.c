/* runtime/driver/run.c: see run.h. Each step: run -> sync -> read loss and scalars -> timers -> (trace) ->
 * one host sum over the ranks (the global loss and the stop request) -> report (a metrics line on rank 0,
 * a progress line) -> maybe save -> stop when a rank received SIGTERM/SIGINT. The next step is issued
 * before the host sum, which the executor queues behind it (exec.h allreduce_host_start) and which is
 * collected, and its step reported, once that next step is done: the GPU never waits for the host sum or
 * the reporting, only for the reads between two steps. Where this step is checkpointed, or a stop was
 * asked for, the sum is collected at once and nothing is issued ahead; a stop then takes effect after the
 * step in which every rank learns of it, the same step on every rank. The loss of a rank is the
 * mean over its own rows; `loss` is the global-batch mean, the ranks' shares (loss x rows / global rows)
 * summed; `loss_rank0` is rank 0's own mean. The metrics line is one JSON object per
 * step whose fields are the rows of DDP_METRIC_FIELDS below, in that order, then one array per row of
 * DDP_METRIC_RANK_FIELDS (element r: rank r's value, gathered by the same host sum, every rank adding its
 * own values at its own offset of a zeroed vector), preceded by one {"event": "run", ...} line (schedule,
 * parallel layout, world size, tokens per step, executor, and the plan's compile-time prediction as
 * "predicted": {profile, step_ms, forward_ms, backward_ms, optimizer_ms, comm_ms, exposed_comm_ms} when
 * it has one, and "power": how the energy is measured or why it is not) and one {"event": "memory", ...}
 * line after init with the planner's bytes per class. Energy (executors with `energy`: the GPUs' NVML
 * counters, sampled by a thread) is cumulative from the run's first reading, before step 1: a GPU's
 * counter advances in steps tens of milliseconds apart, so one step's difference would be 0 or double;
 * the difference of two steps' totals over the difference of their spans (rank_energy_span_s: the
 * counter's own times) is the mean power in between. Where a rank cannot read it, its values and the
 * totals print null. The closing line's J/step is the timed steps' mean power times their mean host
 * time per step (host_ms). A plan that does not train (mode "forward",
 * "forward_backward") reports lr and grad_norm 0 and the phases it lacks (backward_ms, optimizer_ms) as 0:
 * they come from timing points the plan does not have. */
#include "run.h"
#include "err.h"
#include "checkpoint.h"
#include "outfile.h"
#include "stop.h"
#include "trace.h"
#include "calibrate.h"
#include "clock.h"
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* What one step reports. */
typedef struct metrics_row {
  int64_t step; /* 1-based */
  float loss, loss_rank0, scalars[SCALAR_COUNT]; /* loss: the global mean */
  double grad_norm; /* scalars' grad norm where the step computes it (adamw{clip=}), else NaN: null */
  ddp_step_times t;
  double tokens_per_s, mfu;
  uint64_t in_use, peak;
  double issue_ms, host_ms; /* rank 0's host: time in the executor's run (issuing the step), and the wall time
                              from the previous step's end (its sync returning; the loop's start for the first,
                              the end of a checkpoint's writing after one) to this step's */
  double energy_J, energy_s, power_capped_ms; /* this rank's since the run's first reading; NAN: not measured */
  bool warm;
  int world;
  const double *ranks; /* world x DDP_METRIC_RANKS values: rank r's DDP_METRIC_RANK_FIELDS at r * RANKS */
} metrics_row;

/* v as %.7g into buf[32], or "null" when it is not a number (a value the step did not compute). */
static const char *g7(char *buf, double v) {
  if (isfinite(v)) snprintf(buf, 32, "%.7g", v);
  else snprintf(buf, 32, "null");
  return buf;
}

/* X(name, printf format, value from `r`): the metrics line's fields, in order. */
#define DDP_METRIC_FIELDS(X)                                         \
  X(step, "%lld", (long long)r->step)                                \
  X(loss, "%.7g", (double)r->loss)                                   \
  X(loss_rank0, "%s", g7((char[32]){0}, r->loss_rank0))              \
  X(lr, "%.7g", (double)r->scalars[SCALAR_LR])                       \
  X(grad_norm, "%s", g7((char[32]){0}, r->grad_norm))                \
  X(step_ms, "%.4f", r->t.step_ms)                                   \
  X(tokens_per_s, "%.1f", r->tokens_per_s)                           \
  X(mfu, "%.4f", r->mfu)                                             \
  X(compute_ms, "%.4f", r->t.compute_ms)                             \
  X(comm_ms, "%.4f", r->t.comm_ms)                                   \
  X(exposed_comm_ms, "%.4f", r->t.exposed_comm_ms)                   \
  X(overlap_ratio, "%.4f", r->t.overlap_ratio)                       \
  X(tp_comm_ms, "%.4f", r->t.tp_comm_ms)                             \
  X(forward_ms, "%.4f", r->t.forward_ms)                             \
  X(backward_ms, "%.4f", r->t.backward_ms)                           \
  X(optimizer_ms, "%.4f", r->t.optimizer_ms)                         \
  X(issue_ms, "%.4f", r->issue_ms)                                   \
  X(host_ms, "%.4f", r->host_ms)                                     \
  X(mem_in_use_GiB, "%.4f", gib(r->in_use))                          \
  X(peak_mem_GiB, "%.4f", gib(r->peak))                              \
  X(warmup, "%s", r->warm ? "true" : "false")

/* X(name, value from `r`, the rank's own row): the per-rank arrays after the fields above, printed "%.4f"
 * (ms; GiB; J; s), null where not measured (NAN). ddpc plot split derives a worker's compute, exposed
 * communication, optimizer and idle time from them (docs/CLI.md); forward, backward and comm (all its
 * bracketed collectives and sends/receives) give a pipeline stage's busy time: its idle (bubble) is
 * step - forward - backward - optimizer. */
#define DDP_METRIC_RANK_FIELDS(X)                \
  X(rank_step_ms, r->t.step_ms)                  \
  X(rank_exposed_comm_ms, r->t.exposed_comm_ms)  \
  X(rank_optimizer_ms, r->t.optimizer_ms)        \
  X(rank_optimizer_comm_ms, r->t.optimizer_comm_ms) \
  X(rank_peak_mem_GiB, gib(r->peak))             \
  X(rank_forward_ms, r->t.forward_ms)            \
  X(rank_backward_ms, r->t.backward_ms)          \
  X(rank_comm_ms, r->t.comm_ms)                  \
  X(rank_energy_total_J, r->energy_J)            \
  X(rank_energy_span_s, r->energy_s)             \
  X(rank_power_capped_total_ms, r->power_capped_ms)
#define DDP_METRIC_COUNT_ONE(name, value) +1
enum { DDP_METRIC_RANKS = 0 DDP_METRIC_RANK_FIELDS(DDP_METRIC_COUNT_ONE) };
#undef DDP_METRIC_COUNT_ONE

static double gib(uint64_t b) { return (double)b / (double)(1ull << 30); }

int ddp_exec_allreduce(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  if (x->world <= 1) return 0;
  if (!x->v->allreduce_host)
    return ddp_fail(err, errcap, "the %s executor cannot sum values over %d ranks", x->v->name, x->world);
  return x->v->allreduce_host(x, v, n, err, errcap);
}

/* Whether the host sums of this run go in two halves (exec.h allreduce_host_start / _finish). */
static bool sum_halves(const ddp_exec *x) {
  return x->world > 1 && x->v->allreduce_host_start && x->v->allreduce_host_finish;
}

int ddp_exec_allreduce_start(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  return sum_halves(x) ? x->v->allreduce_host_start(x, v, n, err, errcap) : ddp_exec_allreduce(x, v, n, err, errcap);
}

int ddp_exec_allreduce_finish(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  return sum_halves(x) ? x->v->allreduce_host_finish(x, v, n, err, errcap) : 0;
}

/* Reads the first n elements of `tensor` as floats, whatever its size and dtype say (a plan's meta may point
 * anywhere): a tensor of exactly n f32 is read in place, another through a heap copy of its bytes; a
 * tensor with fewer than n elements, or none (< 0), reads as zeros past its end. */
static int read_floats(ddp_exec *x, int64_t tensor, float *out, uint32_t n, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  memset(out, 0, sizeof *out * n);
  if (tensor < 0) return 0;
  if ((uint64_t)tensor >= p->ntensors)
    return ddp_fail(err, errcap, "the plan's tensor index %lld is out of range (%u tensors)", (long long)tensor,
                    p->ntensors);
  const ddp_tensor *t = &p->tensors[tensor];
  uint64_t numel = ddp_tensor_numel(t);
  if (t->dtype == DT_F32 && numel == n && t->bytes == (uint64_t)n * sizeof(float))
    return x->v->read(x, (int32_t)tensor, out, err, errcap);
  if (t->dtype >= DT_COUNT || t->bytes != numel * ddp_dtype_size(t->dtype) || t->bytes > ((uint64_t)1 << 34))
    return ddp_fail(err, errcap, "tensor '%s' (%llu bytes) cannot be read as the loss or scalars",
                    t->name ? t->name : "?", (unsigned long long)t->bytes);
  void *buf = malloc(t->bytes ? t->bytes : 1);
  if (!buf) return ddp_fail(err, errcap, "out of memory reading tensor '%s'", t->name);
  int rc = x->v->read(x, (int32_t)tensor, buf, err, errcap);
  for (uint64_t i = 0; rc == 0 && i < n && i < numel; i++) out[i] = (float)ddp_load(buf, t->dtype, (int64_t)i);
  free(buf);
  return rc;
}

/* This rank's loss weighted by its share of the global batch (equal shares when the plan says nothing;
 * under a pipeline only the last stages compute a loss). */
static double loss_share(const ddp_plan *p, int rank, int world, float loss) {
  const ddp_meta *m = &p->meta;
  if (m->pipe_stages > 0) { /* the last stage of each replica holds its replica's mean, on each tensor rank */
    int64_t T = m->tensor_parallel > 1 ? m->tensor_parallel : 1, R = m->pipe_replicas > 0 ? m->pipe_replicas : 1;
    return rank / T % m->pipe_stages == m->pipe_stages - 1 ? (double)loss / (double)(R * T) : 0.0;
  }
  if (m->batch_per_rank > 0 && m->global_batch > 0 && m->batch_per_rank * world == m->global_batch)
    return (double)loss * (double)m->batch_per_rank / (double)m->global_batch;
  return (double)loss / (double)(world > 0 ? world : 1);
}

int ddp_refresh_param_copies(ddp_exec *x, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *c = &p->tensors[t];
    if (!(c->flags & TF_PARAM_COPY) || c->base >= 0 || c->param < 0) continue;
    const ddp_tensor *m = &p->tensors[c->param];
    uint64_t n = ddp_tensor_numel(c);
    if (ddp_tensor_numel(m) != n) continue;
    float *master = malloc(m->bytes);
    void *copy = malloc(c->bytes);
    int rc = master && copy ? x->v->read(x, c->param, master, err, errcap)
                            : ddp_fail(err, errcap, "out of memory for tensor '%s'", c->name);
    for (uint64_t i = 0; rc == 0 && i < n; i++) ddp_store(copy, c->dtype, (int64_t)i, master[i]);
    if (rc == 0) rc = x->v->write(x, (int32_t)t, copy, err, errcap);
    free(master);
    free(copy);
    if (rc) return -1;
  }
  return 0;
}

static int64_t tokens_per_step(const ddp_plan *p) {
  return p->meta.global_batch * (p->meta.model_kind == MODEL_TRANSFORMER ? p->meta.context : 1);
}

/* The run's header line: what the plots label and group by. */
static void run_line(FILE *f, ddp_exec *x) {
  const ddp_meta *m = &x->plan->meta;
  fputs("{\"event\": \"run\", \"schedule\": ", f);
  ddp_json_str(f, m->schedule_path ? m->schedule_path : "");
  fputs(", \"parallel\": ", f);
  ddp_json_str(f, m->parallel ? m->parallel : "");
  fprintf(f, ", \"world\": %d, \"tokens_per_step\": %lld, \"executor\": ", x->world,
          (long long)tokens_per_step(x->plan));
  ddp_json_str(f, x->v->name);
  if (x->comm[0]) { /* the communicators as configured (CUDA: NCCL's version, CTA policy, registrations) */
    fputs(", \"nccl\": ", f);
    ddp_json_str(f, x->comm);
  }
  /* the point-to-point path the executor took (CUDA: copy engine or NCCL, and why; or the peer reads or copies) */
  if (x->p2p[0]) {
    fputs(", \"p2p\": ", f);
    ddp_json_str(f, x->p2p);
  }
  if (x->power[0]) { /* rank 0's energy counters (CUDA: NVML and the power limit), or why there are none */
    fputs(", \"power\": ", f);
    ddp_json_str(f, x->power);
  }
  if (m->predicted_step_ms > 0) { /* the compile-time prediction (ddpc explain), next to the measurements */
    fputs(", \"predicted\": {\"profile\": ", f);
    ddp_json_str(f, m->predicted_profile ? m->predicted_profile : "");
    fprintf(f, ", \"step_ms\": %.9g, \"forward_ms\": %.9g, \"backward_ms\": %.9g, \"optimizer_ms\": %.9g, "
            "\"comm_ms\": %.9g, \"exposed_comm_ms\": %.9g}", m->predicted_step_ms, m->predicted_forward_ms,
            m->predicted_backward_ms, m->predicted_optimizer_ms, m->predicted_comm_ms, m->predicted_exposed_comm_ms);
  }
  fputs("}\n", f);
}

/* This rank's DDP_METRIC_RANK_FIELDS into row[0 .. DDP_METRIC_RANKS). */
static void rank_values(const metrics_row *r, double *row) {
  int j = 0;
#define DDP_METRIC_RANK_PUT(name, value) row[j++] = (value);
  DDP_METRIC_RANK_FIELDS(DDP_METRIC_RANK_PUT)
#undef DDP_METRIC_RANK_PUT
}

static void memory_line(FILE *f, ddp_exec *x) {
  const ddp_rank_plan *rp = &x->plan->ranks[x->rank];
  uint64_t in_use = 0, peak = 0, total = 0;
  x->v->memory(x, &in_use, &peak);
  fprintf(f, "{\"event\": \"memory\", \"rank\": %d, \"point\": \"after_init\", \"mem_in_use_GiB\": %.4f, "
          "\"mem_base_GiB\": %.4f", x->rank, gib(in_use), gib(x->mem_base));
  for (int a = 0; a < ARENA_COUNT; a++) {
    fprintf(f, ", \"plan_%s_GiB\": %.4f", ddp_arena_name(a), gib(rp->arena_bytes[a]));
    total += rp->arena_bytes[a];
  }
  fprintf(f, ", \"plan_total_GiB\": %.4f}\n", gib(total));
}

/* SEP then v as "%.4f", or null where it is not a number (not measured). */
static void put_num(FILE *f, const char *sep, double v) {
  if (isfinite(v)) fprintf(f, "%s%.4f", sep, v);
  else fprintf(f, "%snull", sep);
}

/* Rank r's value of the per-rank field `field` (its index in DDP_METRIC_RANK_FIELDS). */
static double rank_value(const metrics_row *r, int rank, int field) {
  return r->ranks[(size_t)rank * DDP_METRIC_RANKS + (size_t)field];
}
#define DDP_METRIC_INDEX(name, value) DDP_METRIC_INDEX_##name,
enum { DDP_METRIC_RANK_FIELDS(DDP_METRIC_INDEX) DDP_METRIC_INDEX_END };
#undef DDP_METRIC_INDEX

/* Mean power of the GPUs (W, summed over the ranks) between two snapshots of the per-rank totals, each
 * rank's energy difference over its span's; NAN unless every rank measured both and its counter moved. */
static double power_between(int world, const double *e0, const double *s0, const double *e1, const double *s1) {
  double w = 0;
  for (int rank = 0; rank < world; rank++)
    w += s1[rank] > s0[rank] ? (e1[rank] - e0[rank]) / (s1[rank] - s0[rank]) : NAN;
  return w;
}

/* The run's energy so far: energy_total_J (every GPU's, summed), power_W (their mean power since the first
 * reading, summed over the GPUs) and power_capped_total_ms (the mean over the GPUs). */
static void energy_fields(FILE *f, const metrics_row *r) {
  double joules = 0, capped = 0, watts = 0;
  for (int rank = 0; rank < r->world; rank++) {
    const double e = rank_value(r, rank, DDP_METRIC_INDEX_rank_energy_total_J),
                 sp = rank_value(r, rank, DDP_METRIC_INDEX_rank_energy_span_s);
    joules += e;
    capped += rank_value(r, rank, DDP_METRIC_INDEX_rank_power_capped_total_ms) / r->world;
    watts += sp > 0 ? e / sp : NAN;
  }
  put_num(f, ", \"energy_total_J\": ", joules);
  put_num(f, ", \"power_W\": ", watts);
  put_num(f, ", \"power_capped_total_ms\": ", capped);
}

static void metrics_line(FILE *f, const metrics_row *r) {
  const char *sep = "{";
#define DDP_METRIC_PRINT(name, fmt, value) \
  fprintf(f, "%s\"" #name "\": " fmt, sep, value); \
  sep = ", ";
  DDP_METRIC_FIELDS(DDP_METRIC_PRINT)
#undef DDP_METRIC_PRINT
  energy_fields(f, r);
  int j = 0;
#define DDP_METRIC_RANK_PRINT(name, value)                                                   \
  fputs(", \"" #name "\": [", f);                                                          \
  for (int rank = 0; rank < r->world; rank++)                                             \
    put_num(f, rank ? ", " : "", r->ranks[(size_t)rank * DDP_METRIC_RANKS + j]);          \
  fputc(']', f);                                                                           \
  j++;
  DDP_METRIC_RANK_FIELDS(DDP_METRIC_RANK_PRINT)
#undef DDP_METRIC_RANK_PRINT
  fputs("}\n", f);
  fflush(f);
}

static void progress_line(const ddp_meta *m, const metrics_row *r) {
  char what[48]; /* the learning rate, or the mode of a plan without an optimizer */
  if (m->mode == MODE_TRAIN) snprintf(what, sizeof what, "lr %.3g", (double)r->scalars[SCALAR_LR]);
  else snprintf(what, sizeof what, "%s", ddp_mode_name((int)m->mode));
  printf("step %4lld  loss %.6f  %s  %8.2f ms  %10.0f tok/s%s\n", (long long)r->step, (double)r->loss, what,
         r->t.step_ms, r->tokens_per_s, r->warm ? "  (warmup)" : "");
}

/* A checkpoint of `step` completed steps, and its line. */
static int save(ddp_exec *x, const ddp_run_opts *o, int64_t step, char *err, size_t errcap) {
  if (ddp_ckpt_save_step(x, o->ckpt_dir, step, o->keep, err, errcap)) return -1;
  if (x->rank == 0 && !o->quiet) {
    printf("checkpoint written: %s/step-%06lld (step %lld)\n", o->ckpt_dir, (long long)step, (long long)step);
    fflush(stdout);
  }
  return 0;
}

/* The energy counters' first reading (ok: readings go on). */
typedef struct ddp_energy_clock {
  ddp_energy first;
  bool ok;
} ddp_energy_clock;

static void energy_start(ddp_exec *x, ddp_energy_clock *c) {
  c->ok = x->v->energy && x->v->energy(x, &c->first) == 0;
}

/* This rank's totals since the first reading into r (NAN where not measured, and from a failed reading or
 * a counter going backwards on). */
static void energy_step(ddp_exec *x, ddp_energy_clock *c, metrics_row *r) {
  r->energy_J = r->energy_s = r->power_capped_ms = NAN;
  ddp_energy now;
  if (!c->ok || x->v->energy(x, &now) != 0 || now.mJ < c->first.mJ || now.at_s < c->first.at_s) {
    c->ok = false;
    return;
  }
  r->energy_J = (double)(now.mJ - c->first.mJ) * 1e-3;
  r->energy_s = now.at_s - c->first.at_s;
  if (now.power_capped_ns != UINT64_MAX && c->first.power_capped_ns != UINT64_MAX &&
      now.power_capped_ns >= c->first.power_capped_ns)
    r->power_capped_ms = (double)(now.power_capped_ns - c->first.power_capped_ns) * 1e-6;
}

/* The Chrome trace of the step just run (x->trace was set for it). */
static int write_trace(ddp_exec *x, const char *trace_path, int64_t step, char *err, size_t errcap) {
  const ddp_program *prog = &x->plan->ranks[x->rank].step;
  double *ts = calloc(prog->n + 1, sizeof(double)), *te = calloc(prog->n + 1, sizeof(double));
  char path[4200];
  ddp_trace_path(trace_path, x->rank, x->world, path, sizeof path);
  int rc = ts && te ? x->v->instr_times(x, ts, te, err, errcap)
                    : ddp_fail(err, errcap, "out of memory for the trace");
  if (rc == 0) rc = ddp_trace_write(x->plan, x->rank, step, ts, te, path, err, errcap);
  free(ts);
  free(te);
  x->trace = false;
  return rc;
}

/* The step loop's totals over the timed steps, and every rank's energy totals and spans at the end of the
 * warm-up (zeros: the first reading) and at the latest step (world doubles each, one allocation). */
typedef struct loop_totals {
  double sum, sum2, timed_host_ms;
  int64_t timed;
  double *warm_e, *warm_s, *end_e, *end_s;
} loop_totals;

/* How long before the next step's expected end (this step's GPU time after this step's end) the executor
 * stops reading its energy counters (exec.h energy_window). */
#define ENERGY_WINDOW_MARGIN_S 0.005

/* Whether step s (0-based) records its instructions' times for --calibrate (rank 0, after the warm-up, every
 * other step: DDP_CALIB_TRACED). */
static bool calibrated(const ddp_run_opts *o, const ddp_meta *m, int rank, int64_t s) {
  return o->calibrate && rank == 0 && s >= m->warmup && DDP_CALIB_TRACED(s - m->warmup);
}

/* Issues step s of `steps` (asynchronous on the GPU), traced where --trace or --calibrate reads it. */
static int issue_step(ddp_exec *x, const ddp_run_opts *o, const ddp_rank_plan *rp, int64_t s, int64_t steps,
                      double *issue_ms, char *err, size_t errcap) {
  x->trace = (o->trace_path && s == steps - 1) || calibrated(o, &x->plan->meta, x->rank, s);
  const double t = ddp_now_s();
  const int rc = x->v->run(x, &rp->step, s, err, errcap);
  *issue_ms = (ddp_now_s() - t) * 1e3;
  return rc;
}

/* A step whose host sum v is in (v[0] the global loss, v[1] the ranks' stop requests, v + 2 every rank's
 * row): r takes them, the totals and energy snapshots take r, and rank 0 writes its metrics and progress
 * lines. *stop: some rank was asked to stop. */
static int report_step(ddp_exec *x, const ddp_run_opts *o, FILE *metrics, metrics_row *r, const double *v,
                       loop_totals *lt, bool *stop, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  r->world = x->world > 0 ? x->world : 1;
  r->ranks = v + 2;
  if (x->world > 1) r->loss = (float)v[0];
  *stop = v[1] > 0;
  for (int rank = 0; rank < r->world; rank++) {
    double *e = r->warm ? lt->warm_e : lt->end_e, *sp = r->warm ? lt->warm_s : lt->end_s;
    e[rank] = rank_value(r, rank, DDP_METRIC_INDEX_rank_energy_total_J);
    sp[rank] = rank_value(r, rank, DDP_METRIC_INDEX_rank_energy_span_s);
  }
  if (!r->warm) {
    lt->sum += r->t.step_ms;
    lt->sum2 += r->t.step_ms * r->t.step_ms;
    lt->timed_host_ms += r->host_ms;
    lt->timed++;
  }
  const double sec = r->t.step_ms * 1e-3;
  r->tokens_per_s = sec > 0 ? (double)tokens_per_step(p) / sec : 0;
  r->mfu = o->peak_tflops > 0 && sec > 0 ? p->meta.flops_per_step / sec / (o->peak_tflops * 1e12) : 0;
  if (metrics) {
    metrics_line(metrics, r);
    if (ddp_out_check(metrics, o->metrics_path, err, errcap)) return -1;
  }
  if (x->rank == 0 && !o->quiet) progress_line(&p->meta, r);
  return 0;
}

/* Collects the host sum v of a step (queued by ddp_exec_allreduce_start) and reports the step into r
 * (report_step); where some rank was asked to stop, *stop_sig becomes the signal to stop on. */
static int collect_step(ddp_exec *x, const ddp_run_opts *o, FILE *metrics, metrics_row *r, double *v, int n,
                        loop_totals *lt, int *stop_sig, char *err, size_t errcap) {
  bool stop = false;
  if (ddp_exec_allreduce_finish(x, v, n, err, errcap) || report_step(x, o, metrics, r, v, lt, &stop, err, errcap))
    return -1;
  if (stop) *stop_sig = ddp_stop_signal() ? ddp_stop_signal() : SIGTERM;
  return 0;
}

int ddp_run_rank(ddp_exec *x, const ddp_run_opts *o, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  const ddp_meta *m = &p->meta;
  const ddp_rank_plan *rp = &p->ranks[x->rank];
  bool lead = x->rank == 0;
  int64_t steps = o->steps >= 0 ? o->steps : m->steps;
  FILE *metrics = NULL; /* opened (and so emptied) only once the run is known to go ahead, below */
  double *timer_ms = calloc(rp->ntimers + 1, sizeof(double));
  /* The step's host sum: the loss share, the stop request, then every rank's DDP_METRIC_RANK_FIELDS. */
  size_t nsum = 2 + (size_t)(x->world > 0 ? x->world : 1) * DDP_METRIC_RANKS;
  double *vbuf = calloc(2 * nsum, sizeof(double)), *v = vbuf, *v_prev = vbuf ? vbuf + nsum : NULL; /* this step's, the previous' */
  int rc = timer_ms && v ? x->v->run(x, &rp->init, 0, err, errcap)
                         : ddp_fail(err, errcap, "out of memory");
  int64_t start = 0, last_saved = -1;
  if (rc == 0 && o->ckpt_dir) rc = ddp_checkpoint_check_plan(x, err, errcap);
  int lock = -1; /* rank 0's lock on the checkpoint folder, for the whole run */
  if (rc == 0 && lead && o->ckpt_dir && (lock = ddp_ckpt_lock(o->ckpt_dir, !o->resume, err, errcap)) < 0) rc = -1;
  if (rc == 0 && lead && o->ckpt_dir) rc = ddp_ckpt_clean_stray(o->ckpt_dir, o->quiet, err, errcap);
  if (rc == 0 && o->resume) {
    rc = ddp_ckpt_resume(x, o->ckpt_dir, o->quiet, &start, err, errcap);
    if (rc == 0 && rp->init_refresh > 0) { /* the plan's own derivation of the copies (ZeRO: gathers) */
      ddp_program tail = {rp->init.v + rp->init_refresh, rp->init.n - rp->init_refresh, 0};
      rc = x->v->run(x, &tail, 0, err, errcap);
    } else if (rc == 0) {
      rc = ddp_refresh_param_copies(x, err, errcap);
    }
  }
  if (rc == 0) rc = x->v->sync(x, err, errcap);
  if (rc == 0 && lead && !o->quiet && x->comm[0]) printf("communicators: %s\n", x->comm);
  if (rc == 0 && lead && !o->quiet && x->p2p[0]) printf("point-to-point: %s\n", x->p2p);
  if (rc == 0 && o->trace_path && !x->v->instr_times)
    rc = ddp_fail(err, errcap, "the %s executor cannot record traces", x->v->name);
  if (rc == 0 && o->calibrate && !x->v->instr_times)
    rc = ddp_fail(err, errcap, "--calibrate: the %s executor cannot time single instructions", x->v->name);
  if (rc == 0 && o->resume && start >= steps) { /* a finished run restarted: nothing to do, said once */
    if (o->trace_path || o->calibrate)
      rc = ddp_fail(err, errcap, "%s: the checkpoint is at step %lld and the run ends at step %lld, so no step runs "
                    "to be %s", o->trace_path ? "--trace" : "--calibrate", (long long)start, (long long)steps,
                    o->trace_path ? "traced" : "timed");
    else if (lead && !o->quiet)
      printf("nothing to run: the checkpoint is at step %lld and the run ends at step %lld\n", (long long)start,
             (long long)steps);
  }
  if (rc == 0 && lead && o->metrics_path && !(metrics = ddp_out_open(o->metrics_path, err, errcap))) rc = -1;
  if (rc == 0 && metrics) run_line(metrics, x);
  if (rc == 0 && metrics) memory_line(metrics, x);
  if (rc == 0 && metrics) rc = ddp_out_check(metrics, o->metrics_path, err, errcap);
  ddp_calib_rows calib = {0};
  if (rc == 0 && o->ckpt_dir && o->save_initial && !o->resume && (rc = save(x, o, 0, err, errcap)) == 0)
    last_saved = 0;
  loop_totals lt = {0};
  ddp_energy_clock ec;
  energy_start(x, &ec);
  /* every rank's energy totals and spans at the end of the warm-up (zeros: the first reading), and now */
  const int nw = x->world > 0 ? x->world : 1;
  lt.warm_e = calloc((size_t)nw * 4, sizeof(double));
  if (lt.warm_e) lt.warm_s = lt.warm_e + nw, lt.end_e = lt.warm_s + nw, lt.end_s = lt.end_e + nw;
  else if (rc == 0) rc = ddp_fail(err, errcap, "out of memory");
  int stop_sig = 0;
  bool stopped = false, issued = false, pending = false;
  metrics_row r = {0}, prev = {0}; /* prev: the step whose host sum is in flight (pending) */
  double issue_ms = 0, t_last = ddp_now_s();
  for (int64_t s = start; rc == 0 && s < steps; s++) {
    if (!issued) rc = issue_step(x, o, rp, s, steps, &issue_ms, err, errcap);
    issued = false;
    r = (metrics_row){.step = s + 1, .warm = s < m->warmup, .issue_ms = issue_ms};
    float own = 0;
    if (rc == 0) rc = x->v->sync(x, err, errcap);
    const double t_done = ddp_now_s();
    r.host_ms = (t_done - t_last) * 1e3;
    t_last = t_done;
    if (rc == 0) energy_step(x, &ec, &r);
    if (rc == 0) rc = read_floats(x, m->loss_tensor, &own, 1, err, errcap);
    if (rc == 0) rc = read_floats(x, m->scalars_tensor, r.scalars, SCALAR_COUNT, err, errcap);
    /* the norm is summed only to clip by it: without adamw{clip=} (or without training) nothing computed it */
    r.grad_norm = m->clip_norm > 0 && m->mode == MODE_TRAIN ? (double)r.scalars[SCALAR_GRAD_NORM] : NAN;
    if (rc == 0) rc = x->v->timers(x, timer_ms, err, errcap);
    if (rc == 0 && calibrated(o, m, x->rank, s)) rc = ddp_calib_record(&calib, x, err, errcap);
    if (rc == 0 && o->trace_path && s == steps - 1) rc = write_trace(x, o->trace_path, s + 1, err, errcap);
    x->trace = false;
    if (rc == 0 && !isfinite(own))
      rc = ddp_fail(err, errcap, "the loss is %f at step %lld", (double)own, (long long)s + 1);
    if (rc) break;
    ddp_step_times_from_timers(p, x->rank, timer_ms, &r.t);
    if (o->calibrate && x->rank == 0 && s >= m->warmup)
      ddp_calib_step(&calib, r.t.step_ms, calibrated(o, m, x->rank, s));
    x->v->memory(x, &r.in_use, &r.peak);
    r.loss = r.loss_rank0 = own; /* loss: the global mean once the host sum is in */
    /* rank 0 of a pipeline of several stages holds no loss (stage 0): its own mean is null, not 0 */
    if (m->pipe_stages > 1 && loss_share(p, 0, x->world, 1.0f) == 0.0) r.loss_rank0 = NAN;
    /* One host sum per step: the global loss, whether any rank was asked to stop (every rank then stops
     * after the same step), and every rank's times and peak memory for the metrics. */
    memset(v, 0, nsum * sizeof *v);
    v[0] = loss_share(p, x->rank, x->world, own);
    v[1] = ddp_stop_signal();
    rank_values(&r, v + 2 + (size_t)x->rank * DDP_METRIC_RANKS);
    if (pending) { /* the previous step's sum was queued behind this step, so it is in */
      pending = false;
      if ((rc = collect_step(x, o, metrics, &prev, v_prev, (int)nsum, &lt, &stop_sig, err, errcap)) != 0) break;
    }
    /* The next step goes to the GPU before this step's sum, so that the GPU does not wait for the host
     * between steps; not where a checkpoint of this step or a stop after it must come first. */
    const bool save_due = o->ckpt_dir && o->save_every > 0 && (s + 1) % o->save_every == 0;
    if (s + 1 < steps && !save_due && !stop_sig) {
      if ((rc = issue_step(x, o, rp, s + 1, steps, &issue_ms, err, errcap)) != 0) break;
      issued = true;
    }
    if ((rc = ddp_exec_allreduce_start(x, v, (int)nsum, err, errcap)) != 0) break;
    if (issued && x->v->energy_window) { /* until shortly before the next step should end, the host only waits */
      const double left = r.t.step_ms * 1e-3 - (ddp_now_s() - t_done) - ENERGY_WINDOW_MARGIN_S;
      if (left > 0) x->v->energy_window(x, left);
    }
    if (issued) { /* collected after the next step */
      double *t = v_prev;
      v_prev = v, v = t;
      prev = r;
      pending = true;
      continue;
    }
    if ((rc = collect_step(x, o, metrics, &r, v, (int)nsum, &lt, &stop_sig, err, errcap)) != 0) break;
    if (save_due) {
      rc = save(x, o, s + 1, err, errcap);
      last_saved = s + 1;
      t_last = ddp_now_s(); /* the next step's host_ms without the writing */
    }
    if (stop_sig && s + 1 < steps) {
      if (rc == 0 && o->ckpt_dir && last_saved != s + 1) rc = save(x, o, s + 1, err, errcap);
      if (rc == 0 && lead)
        fprintf(stderr, "ddprun: stopped after step %lld of %lld on %s%s\n", (long long)s + 1, (long long)steps,
                strsignal(stop_sig), o->ckpt_dir ? " (checkpoint written)" : "");
      if (metrics) fflush(metrics);
      ddp_stop_honoured(stop_sig);
      stopped = true;
      break;
    }
  }
  if (rc == 0 && !stopped && o->ckpt_dir && last_saved != steps && steps > start)
    rc = save(x, o, steps, err, errcap);
  if (rc == 0 && lead && !o->quiet && lt.timed > 0) {
    double mean = lt.sum / (double)lt.timed, var = lt.sum2 / (double)lt.timed - mean * mean;
    char energy[96] = "";
    const double watts = power_between(nw, lt.warm_e, lt.warm_s, lt.end_e, lt.end_s);
    if (isfinite(watts))
      snprintf(energy, sizeof energy, ", %.2f J/step (%.0f W per GPU)",
               watts * lt.timed_host_ms * 1e-3 / (double)lt.timed, watts / nw);
    printf("%s: %lld timed steps, %.3f ms/step (std %.3f), wall %.3f ms/step, %.0f tokens/s%s, final loss %.6f\n",
           o->device_desc ? o->device_desc : x->v->name, (long long)lt.timed, mean, sqrt(var > 0 ? var : 0),
           lt.timed_host_ms / (double)lt.timed, (double)tokens_per_step(p) / (mean * 1e-3), energy, (double)r.loss);
  }
  if (rc == 0 && o->calibrate && !stopped) rc = ddp_calib_sweep(&calib, x, lead, err, errcap);
  if (rc == 0 && o->calibrate && !stopped) rc = ddp_calib_gemm_sweep(&calib, x, err, errcap);
  if (rc == 0 && lead && o->calibrate && !stopped)
    rc = ddp_calib_finish(p, &calib, o->device_desc ? o->device_desc : x->v->name, o->calibrate_out, o->quiet, err,
                          errcap);
  ddp_calib_rows_free(&calib);
  free(lt.warm_e);
  free(timer_ms);
  free(vbuf);
  if (ddp_out_close(metrics, o->metrics_path, rc ? NULL : err, errcap)) rc = -1;
  ddp_ckpt_unlock(lock);
  return rc;
}

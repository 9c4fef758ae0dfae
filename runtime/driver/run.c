/* runtime/driver/run.c: see run.h. Each step: run -> sync -> read loss and scalars -> timers -> (trace) ->
 * report (a metrics line on rank 0, a progress line) -> maybe save. The metrics line is one JSON object per
 * step whose fields are the rows of DDP_METRIC_FIELDS below, in that order, plus one {"event": "memory",
 * ...} line after init with the planner's bytes per class. A plan that does not train (mode "forward",
 * "forward_backward") reports lr and grad_norm 0 and the phases it lacks (backward_ms, optimizer_ms) as 0:
 * they come from timing points the plan does not have. */
#include "run.h"
#include "err.h"
#include "checkpoint.h"
#include "outfile.h"
#include "trace.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one step reports. */
typedef struct metrics_row {
  int64_t step; /* 1-based */
  float loss, scalars[SCALAR_COUNT];
  ddp_step_times t;
  double tokens_per_s, mfu;
  uint64_t in_use, peak;
  bool warm;
} metrics_row;

/* X(name, printf format, value from `r`): the metrics line's fields, in order. */
#define DDP_METRIC_FIELDS(X)                                         \
  X(step, "%lld", (long long)r->step)                                \
  X(loss, "%.7g", (double)r->loss)                                   \
  X(lr, "%.7g", (double)r->scalars[SCALAR_LR])                       \
  X(grad_norm, "%.7g", (double)r->scalars[SCALAR_GRAD_NORM])         \
  X(step_ms, "%.4f", r->t.step_ms)                                   \
  X(tokens_per_s, "%.1f", r->tokens_per_s)                           \
  X(mfu, "%.4f", r->mfu)                                             \
  X(compute_ms, "%.4f", r->t.compute_ms)                             \
  X(comm_ms, "%.4f", r->t.comm_ms)                                   \
  X(exposed_comm_ms, "%.4f", r->t.exposed_comm_ms)                   \
  X(overlap_ratio, "%.4f", r->t.overlap_ratio)                       \
  X(forward_ms, "%.4f", r->t.forward_ms)                             \
  X(backward_ms, "%.4f", r->t.backward_ms)                           \
  X(optimizer_ms, "%.4f", r->t.optimizer_ms)                         \
  X(mem_in_use_GiB, "%.4f", gib(r->in_use))                          \
  X(peak_mem_GiB, "%.4f", gib(r->peak))                              \
  X(warmup, "%s", r->warm ? "true" : "false")

static double gib(uint64_t b) { return (double)b / (double)(1ull << 30); }

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
                            : ddp_fail(err, errcap, "rank %d: out of memory for tensor '%s'", x->rank, c->name);
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

static void memory_line(FILE *f, ddp_exec *x) {
  const ddp_rank_plan *rp = &x->plan->ranks[x->rank];
  uint64_t in_use = 0, peak = 0, total = 0;
  x->v->memory(x, &in_use, &peak);
  fprintf(f, "{\"event\": \"memory\", \"rank\": %d, \"point\": \"after_init\", \"mem_in_use_GiB\": %.4f", x->rank,
          gib(in_use));
  for (int a = 0; a < ARENA_COUNT; a++) {
    fprintf(f, ", \"plan_%s_GiB\": %.4f", ddp_arena_name(a), gib(rp->arena_bytes[a]));
    total += rp->arena_bytes[a];
  }
  fprintf(f, ", \"plan_total_GiB\": %.4f}\n", gib(total));
}

static void metrics_line(FILE *f, const metrics_row *r) {
  const char *sep = "{";
#define DDP_METRIC_PRINT(name, fmt, value) \
  fprintf(f, "%s\"" #name "\": " fmt, sep, value); \
  sep = ", ";
  DDP_METRIC_FIELDS(DDP_METRIC_PRINT)
#undef DDP_METRIC_PRINT
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

/* The Chrome trace of the step just run (x->trace was set for it). */
static int write_trace(ddp_exec *x, const char *trace_path, int64_t step, char *err, size_t errcap) {
  const ddp_program *prog = &x->plan->ranks[x->rank].step;
  double *ts = calloc(prog->n + 1, sizeof(double)), *te = calloc(prog->n + 1, sizeof(double));
  char path[4200];
  ddp_trace_path(trace_path, x->rank, x->world, path, sizeof path);
  int rc = ts && te ? x->v->instr_times(x, ts, te, err, errcap)
                    : ddp_fail(err, errcap, "rank %d: out of memory for the trace", x->rank);
  if (rc == 0) rc = ddp_trace_write(x->plan, x->rank, step, ts, te, path, err, errcap);
  free(ts);
  free(te);
  x->trace = false;
  return rc;
}

int ddp_run_rank(ddp_exec *x, const ddp_run_opts *o, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  const ddp_meta *m = &p->meta;
  const ddp_rank_plan *rp = &p->ranks[x->rank];
  bool lead = x->rank == 0;
  int64_t steps = o->steps >= 0 ? o->steps : m->steps;
  FILE *metrics = NULL;
  if (lead && o->metrics_path && !(metrics = ddp_out_open(o->metrics_path, err, errcap))) return -1;
  double *timer_ms = calloc(rp->ntimers + 1, sizeof(double));
  int rc = timer_ms ? x->v->run(x, &rp->init, 0, err, errcap) : ddp_fail(err, errcap, "rank %d: out of memory", x->rank);
  int64_t start = 0;
  if (rc == 0 && o->resume) {
    rc = ddp_checkpoint_load(x, o->ckpt_dir, &start, err, errcap);
    if (rc == 0) rc = ddp_refresh_param_copies(x, err, errcap);
    if (rc == 0 && lead && !o->quiet) printf("resumed from %s after %lld steps\n", o->ckpt_dir, (long long)start);
  }
  if (rc == 0) rc = x->v->sync(x, err, errcap);
  if (rc == 0 && metrics) memory_line(metrics, x);
  if (rc == 0 && metrics) rc = ddp_out_check(metrics, o->metrics_path, err, errcap);
  if (rc == 0 && o->trace_path && !x->v->instr_times)
    rc = ddp_fail(err, errcap, "the %s executor cannot record traces", x->v->name);
  double sum = 0, sum2 = 0;
  int64_t timed = 0, last_saved = -1;
  metrics_row r = {0};
  for (int64_t s = start; rc == 0 && s < steps; s++) {
    x->trace = o->trace_path && s == steps - 1;
    r = (metrics_row){.step = s + 1, .warm = s < m->warmup};
    rc = x->v->run(x, &rp->step, s, err, errcap);
    if (rc == 0) rc = x->v->sync(x, err, errcap);
    if (rc == 0) rc = x->v->read(x, (int32_t)m->loss_tensor, &r.loss, err, errcap);
    if (rc == 0) rc = x->v->read(x, (int32_t)m->scalars_tensor, r.scalars, err, errcap);
    if (rc == 0) rc = x->v->timers(x, timer_ms, err, errcap);
    if (rc == 0 && x->trace) rc = write_trace(x, o->trace_path, s + 1, err, errcap);
    if (rc == 0 && !isfinite(r.loss))
      rc = ddp_fail(err, errcap, "rank %d: the loss is %f at step %lld", x->rank, (double)r.loss, (long long)s + 1);
    if (rc) break;
    ddp_step_times_from_timers(p, x->rank, timer_ms, &r.t);
    if (!r.warm) {
      sum += r.t.step_ms;
      sum2 += r.t.step_ms * r.t.step_ms;
      timed++;
    }
    double sec = r.t.step_ms * 1e-3;
    r.tokens_per_s = sec > 0 ? (double)tokens_per_step(p) / sec : 0;
    r.mfu = o->peak_tflops > 0 && sec > 0 ? m->flops_per_step / sec / (o->peak_tflops * 1e12) : 0;
    x->v->memory(x, &r.in_use, &r.peak);
    if (metrics) metrics_line(metrics, &r);
    if (metrics && (rc = ddp_out_check(metrics, o->metrics_path, err, errcap)) != 0) break;
    if (lead && !o->quiet) progress_line(m, &r);
    if (o->ckpt_dir && o->save_every > 0 && (s + 1) % o->save_every == 0) {
      rc = ddp_checkpoint_save(x, o->ckpt_dir, s + 1, err, errcap);
      last_saved = s + 1;
    }
  }
  if (rc == 0 && o->ckpt_dir && last_saved != steps && steps > start)
    rc = ddp_checkpoint_save(x, o->ckpt_dir, steps, err, errcap);
  if (rc == 0 && lead && !o->quiet && timed > 0) {
    double mean = sum / (double)timed, var = sum2 / (double)timed - mean * mean;
    printf("%s: %lld timed steps, %.3f ms/step (std %.3f), %.0f tokens/s, final loss %.6f\n",
           o->device_desc ? o->device_desc : x->v->name, (long long)timed, mean, sqrt(var > 0 ? var : 0),
           (double)tokens_per_step(p) / (mean * 1e-3), (double)r.loss);
  }
  free(timer_ms);
  if (ddp_out_close(metrics, o->metrics_path, rc ? NULL : err, errcap)) rc = -1;
  return rc;
}

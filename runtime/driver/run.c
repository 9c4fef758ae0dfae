/* runtime/run.c: see run.h. Metrics, one JSON object per step:
 *   {"step", "loss", "lr", "grad_norm", "step_ms", "tokens_per_s", "mfu", "compute_ms", "comm_ms",
 *    "exposed_comm_ms", "overlap_ratio", "mem_in_use_GiB", "peak_mem_GiB", "warmup"}
 * plus one {"event": "memory", ...} line after init with the planner's bytes per class. A plan that does
 * not train (mode "forward", "forward_backward") reports lr and grad_norm 0 and the phases it lacks
 * (backward_ms, optimizer_ms) as 0: they come from timing points the plan does not have. */
#include "run.h"
#include "err.h"
#include "checkpoint.h"
#include "trace.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    int rc = x->v->read(x, c->param, master, err, errcap);
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

int ddp_run_rank(ddp_exec *x, const ddp_run_opts *o, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  const ddp_meta *m = &p->meta;
  bool lead = x->rank == 0;
  int64_t steps = o->steps >= 0 ? o->steps : m->steps;
  FILE *metrics = NULL;
  if (lead && o->metrics_path) {
    metrics = fopen(o->metrics_path, "w");
    if (!metrics) {
      ddp_fail(err, errcap, "%s: cannot write metrics file", o->metrics_path);
      return -1;
    }
  }
  int rc = x->v->run(x, &p->ranks[x->rank].init, 0, err, errcap);
  int64_t start = 0;
  if (rc == 0 && o->resume) {
    rc = ddp_checkpoint_load(x, o->ckpt_dir, &start, err, errcap);
    if (rc == 0) rc = ddp_refresh_param_copies(x, err, errcap);
    if (rc == 0 && lead && !o->quiet) printf("resumed from %s after %lld steps\n", o->ckpt_dir, (long long)start);
  }
  if (rc == 0) rc = x->v->sync(x, err, errcap);
  if (rc == 0 && metrics) memory_line(metrics, x);
  double *timer_ms = calloc(p->ranks[x->rank].ntimers + 1, sizeof(double));
  double sum = 0, sum2 = 0;
  int64_t timed = 0, last_saved = -1;
  float loss = 0, scalars[SCALAR_COUNT] = {0};
  if (o->trace_path && !x->v->instr_times) {
    ddp_fail(err, errcap, "the %s executor cannot record traces", x->v->name);
    rc = -1;
  }
  for (int64_t s = start; rc == 0 && s < steps; s++) {
    x->trace = o->trace_path && s == steps - 1;
    rc = x->v->run(x, &p->ranks[x->rank].step, s, err, errcap);
    if (rc == 0) rc = x->v->sync(x, err, errcap);
    if (rc == 0) rc = x->v->read(x, (int32_t)m->loss_tensor, &loss, err, errcap);
    if (rc == 0) rc = x->v->read(x, (int32_t)m->scalars_tensor, scalars, err, errcap);
    if (rc == 0) rc = x->v->timers(x, timer_ms, err, errcap);
    if (rc == 0 && x->trace) {
      const ddp_program *prog = &p->ranks[x->rank].step;
      double *ts = calloc(prog->n + 1, sizeof(double)), *te = calloc(prog->n + 1, sizeof(double));
      char path[4200];
      ddp_trace_path(o->trace_path, x->rank, x->world, path, sizeof path);
      rc = x->v->instr_times(x, ts, te, err, errcap);
      if (rc == 0) rc = ddp_trace_write(p, x->rank, s + 1, ts, te, path, err, errcap);
      free(ts);
      free(te);
      x->trace = false;
    }
    if (rc) break;
    if (!isfinite(loss)) {
      ddp_fail(err, errcap, "rank %d: the loss is %f at step %lld", x->rank, (double)loss, (long long)s + 1);
      rc = -1;
      break;
    }
    ddp_step_times t;
    ddp_step_times_from_timers(p, x->rank, timer_ms, &t);
    bool warm = s < m->warmup;
    if (!warm) {
      sum += t.step_ms;
      sum2 += t.step_ms * t.step_ms;
      timed++;
    }
    double tps = t.step_ms > 0 ? (double)tokens_per_step(p) / (t.step_ms * 1e-3) : 0;
    double mfu = (o->peak_tflops > 0 && t.step_ms > 0) ? m->flops_per_step / (t.step_ms * 1e-3) / (o->peak_tflops * 1e12)
                                                        : 0;
    uint64_t in_use = 0, peak = 0;
    x->v->memory(x, &in_use, &peak);
    if (metrics) {
      fprintf(metrics,
              "{\"step\": %lld, \"loss\": %.7g, \"lr\": %.7g, \"grad_norm\": %.7g, \"step_ms\": %.4f, "
              "\"tokens_per_s\": %.1f, \"mfu\": %.4f, \"compute_ms\": %.4f, \"comm_ms\": %.4f, "
              "\"exposed_comm_ms\": %.4f, \"overlap_ratio\": %.4f, \"forward_ms\": %.4f, \"backward_ms\": %.4f, "
              "\"optimizer_ms\": %.4f, \"mem_in_use_GiB\": %.4f, \"peak_mem_GiB\": %.4f, \"warmup\": %s}\n",
              (long long)s + 1, (double)loss, (double)scalars[SCALAR_LR], (double)scalars[SCALAR_GRAD_NORM], t.step_ms,
              tps, mfu, t.compute_ms, t.comm_ms, t.exposed_comm_ms, t.overlap_ratio, t.forward_ms, t.backward_ms,
              t.optimizer_ms, gib(in_use), gib(peak),
              warm ? "true" : "false");
      fflush(metrics);
    }
    if (lead && !o->quiet) {
      char what[48]; /* the learning rate, or the mode of a plan without an optimizer */
      if (m->mode == MODE_TRAIN) snprintf(what, sizeof what, "lr %.3g", (double)scalars[SCALAR_LR]);
      else snprintf(what, sizeof what, "%s", ddp_mode_name((int)m->mode));
      printf("step %4lld  loss %.6f  %s  %8.2f ms  %10.0f tok/s%s\n", (long long)s + 1, (double)loss, what,
             t.step_ms, tps, warm ? "  (warmup)" : "");
    }
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
           (double)tokens_per_step(p) / (mean * 1e-3), (double)loss);
  }
  free(timer_ms);
  if (metrics) fclose(metrics);
  return rc;
}

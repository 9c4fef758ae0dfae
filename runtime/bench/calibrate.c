/* runtime/bench/calibrate.c: `ddprun PLAN --calibrate` (calibrate.h): records rank 0's per-instruction
 * times of every timed step, and after the run fits the profile (calib_fit.c) and writes it, with the raw
 * samples, as JSON (jansson) through an atomic write: <cache>/profiles/<device>-world<N>.json. The format is
 * `ddpc explain --profile`'s (compiler/explain/profile.c, docs/EXPLAIN.md) with "defaults": "built-in":
 * a figure this plan could not measure is left out and the reader takes the built-in default's, and the
 * "fit" object says why for each. When the file already holds a calibrated profile of the same device and
 * world, the figures it has and this run did not measure are kept (calib_merge.c), so calibration plans
 * of different collectives or attention shapes add up to one profile. The GEMM sweep's table goes in with
 * gemm_table_scale, what the plan's own GEMMs took over the table's times for their shapes. */
#include "calibrate.h"
#include "calib_merge.h"
#include "args.h"
#include "cache_dir.h"
#include "err.h"
#include "file.h"
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ddp_calib_record(ddp_calib_rows *c, ddp_exec *x, char *err, size_t errcap) {
  const ddp_program *prog = &x->plan->ranks[x->rank].step;
  if (!x->v->instr_times)
    return ddp_fail(err, errcap, "--calibrate: the %s executor cannot time single instructions", x->v->name);
  if (c->rows && c->n != prog->n) return ddp_fail(err, errcap, "--calibrate: the step program changed size");
  c->n = prog->n;
  if (c->rows == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 32;
    c->s = ddp_xrealloc(c->s, c->cap * (c->n + 1) * sizeof *c->s);
    c->o = ddp_xrealloc(c->o, c->cap * (c->n + 1) * sizeof *c->o);
  }
  double *ts = ddp_xcalloc(c->n + 1, sizeof *ts), *te = ddp_xcalloc(c->n + 1, sizeof *te);
  int rc = x->v->instr_times(x, ts, te, err, errcap);
  double *row = c->s + c->rows * c->n, *orow = c->o + c->rows * c->n;
  for (size_t k = 0; rc == 0 && k < c->n; k++) row[k] = ts[k] >= 0 && te[k] >= ts[k] ? (te[k] - ts[k]) * 1e-3 : -1;
  /* each instruction's overlap with the step's collectives (a quadratic scan: a step has a few thousand
   * instructions and at most a few hundred collectives) */
  size_t *coll = ddp_xcalloc(c->n + 1, sizeof *coll), nc = 0;
  for (size_t k = 0; rc == 0 && k < c->n; k++) {
    ddp_work w;
    ddp_instr_work(x->plan, &prog->v[k], &w);
    if (w.kind == WORK_COLL && row[k] > 0) coll[nc++] = k;
  }
  for (size_t k = 0; rc == 0 && k < c->n; k++) {
    orow[k] = 0;
    if (row[k] <= 0) continue;
    double a = ts[k], b = te[k], cover = 0, cur = a; /* collectives on one stream run one after another */
    for (size_t j = 0; j < nc; j++) {
      size_t q = coll[j];
      if (q == k) {
        cover = 0;
        break;
      }
      double lo = ts[q] > cur ? ts[q] : cur, hi = te[q] < b ? te[q] : b;
      if (hi > lo) cover += hi - lo, cur = hi;
    }
    orow[k] = cover / (b - a) > 1 ? 1 : cover / (b - a);
  }
  free(coll);
  if (rc == 0) c->rows++;
  free(ts);
  free(te);
  return rc;
}

void ddp_calib_step(ddp_calib_rows *c, double step_ms, int traced) {
  const int t = traced != 0;
  if (c->nstep[t] == c->capstep[t]) {
    c->capstep[t] = c->capstep[t] ? 2 * c->capstep[t] : 16;
    c->step_ms[t] = ddp_xrealloc(c->step_ms[t], c->capstep[t] * sizeof *c->step_ms[t]);
  }
  c->step_ms[t][c->nstep[t]++] = step_ms;
}

void ddp_calib_rows_free(ddp_calib_rows *c) {
  free(c->step_ms[0]);
  free(c->step_ms[1]);
  free(c->s);
  free(c->o);
  free(c->sweep);
  free(c->gemm);
  memset(c, 0, sizeof *c);
}

static void slug(const char *device, char *out, size_t cap) {
  size_t j = 0;
  for (const char *s = device; *s && j + 1 < cap; s++) {
    if (*s == '(') break; /* "NVIDIA H200 (rank 0 of 2)" */
    char ch = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '_';
    if (ch == '_' && (j == 0 || out[j - 1] == '_')) continue;
    out[j++] = ch;
  }
  while (j > 0 && out[j - 1] == '_') j--;
  out[j] = 0;
  if (!j) snprintf(out, cap, "device");
}

static json_t *fig_note(const ddp_calib_fig *f) {
  json_t *o = json_object();
  if (f->measured) {
    json_object_set_new(o, "samples", json_integer(f->samples));
    if (f->why[0]) json_object_set_new(o, "note", json_string(f->why));
  } else {
    json_object_set_new(o, "not_measured", json_string(f->why));
  }
  return o;
}

static const char *work_name(const ddp_work *w) {
  switch (w->kind) {
  case WORK_GEMM: return w->gemm16 ? "gemm16" : "gemm32";
  case WORK_ATTENTION: return "attention";
  case WORK_MEMORY: return "memory";
  case WORK_COLL: return "collective";
  default: return "free";
  }
}

const char *const ddp_calib_coll_names[COST_COLL_COUNT] = {"all_reduce", "reduce_scatter", "all_gather",
                                                           "broadcast", "send_recv"};

/* gemm_table_scale: what the plan's 16-bit GEMMs that ran alone took in its timed steps over what the GEMM
 * sweep's table gives for their shapes, summed (the step's GEMMs read operands from HBM that a GEMM timed
 * back to back finds in L2, write wider and accumulating outputs, and run at the clocks of a loaded device:
 * 2 x H200, 2026-11-24, 1.13-1.34 times the table's time, 1.17 in sum). Sets it in root; returns its fit
 * note. */
static json_t *table_scale(const ddp_plan *p, const ddp_calib_rows *c, const double *med, const double *ovl,
                           json_t *root) {
  const ddp_program *prog = &p->ranks[0].step;
  double step_us = 0, table_us = 0;
  int used = 0;
  for (size_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    ddp_work w;
    ddp_instr_work(p, in, &w);
    if (w.kind != WORK_GEMM || !w.gemm16 || med[k] < 0 || ovl[k] >= DDP_CALIB_ALONE) continue;
    double t = ddp_gemm_table_us(c->gemm, (int)c->ngemm, (double)in->i[GEMM_I_M], (double)in->i[GEMM_I_N],
                                 (double)in->i[GEMM_I_K], in->i[GEMM_I_TRANS_A] != 0, in->i[GEMM_I_TRANS_B] != 0);
    if (t <= 0) continue;
    double b = in->i[GEMM_I_BATCH] > 1 ? (double)in->i[GEMM_I_BATCH] : 1;
    step_us += med[k] * 1e6, table_us += t * b, used++;
  }
  json_t *n = json_object();
  if (!used || table_us <= 0) {
    json_object_set_new(n, "not_measured", json_string("no 16-bit GEMM of the plan ran alone in its timed steps"));
    return n;
  }
  json_object_set_new(root, "gemm_table_scale", json_real(step_us / table_us));
  json_object_set_new(n, "samples", json_integer(used));
  return n;
}

static json_t *profile_json(const ddp_plan *p, const ddp_calib_rows *c, const double *med, const double *ovl,
                            const ddp_calib_fit *f, const char *device_name) {
  char date[64], name[400];
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  snprintf(name, sizeof name, "calibrated: %s, world %lld, %s", device_name, (long long)p->meta.world, date);
  json_t *root = json_object(), *fit = json_object(), *coll = json_object(), *samples = json_array();
  json_object_set_new(root, "name", json_string(name));
  json_object_set_new(root, "defaults", json_string("built-in"));
  json_object_set_new(root, "device", json_string(device_name));
  json_object_set_new(root, "date", json_string(date));
  json_object_set_new(root, "version", json_string("ddprun " DDP_VERSION));
  json_t *plan = json_object();
  json_object_set_new(plan, "schedule", json_string(p->meta.schedule_path ? p->meta.schedule_path : ""));
  json_object_set_new(plan, "parallel", json_string(p->meta.parallel ? p->meta.parallel : ""));
  json_object_set_new(plan, "world", json_integer(p->meta.world));
  json_object_set_new(plan, "timed_steps", json_integer((json_int_t)c->rows));
  json_object_set_new(plan, "untraced_steps", json_integer((json_int_t)c->nstep[0]));
  json_object_set_new(root, "plan", plan);
  for (int k = 0; k < CAL_NFIG; k++) {
    if (f->fig[k].measured) json_object_set_new(root, ddp_calib_fig_name(k), json_real(f->fig[k].v));
    json_object_set_new(fit, ddp_calib_fig_name(k), fig_note(&f->fig[k]));
  }
  if (f->fig[CAL_LAUNCH].measured) { /* how the untraced steps moved launch_us */
    json_t *l = json_object_get(fit, "launch_us");
    json_object_set_new(l, "traced_us", json_real(f->launch_traced_us));
    if (f->untraced_n > 0) {
      json_object_set_new(l, "step_traced_ms", json_real(f->step_traced_ms));
      json_object_set_new(l, "step_untraced_ms", json_real(f->step_untraced_ms));
      json_object_set_new(l, "instructions", json_integer(f->untraced_n));
    }
  }
  json_object_set_new(root, "gemm_small_dim", json_real(DDP_CALIB_SMALL_DIM));
  if (f->fig[CAL_ATTENTION].measured) {
    json_t *sh = json_object(), *arr = json_array(), *e = json_object();
    json_object_set_new(sh, "t", json_real(f->attn_t));
    json_object_set_new(sh, "dh", json_real(f->attn_dh));
    json_object_set_new(fit, "attention_shape", sh);
    json_object_set_new(e, "t", json_real(f->attn_t));
    json_object_set_new(e, "dh", json_real(f->attn_dh));
    json_object_set_new(e, "tflops", json_real(f->fig[CAL_ATTENTION].v));
    json_array_append_new(arr, e);
    json_object_set_new(root, "attention_by_shape", arr);
  }
  for (int k = 0; k < COST_COLL_COUNT; k++) {
    char key[64];
    snprintf(key, sizeof key, "collectives.%s", ddp_calib_coll_names[k]);
    json_object_set_new(fit, key, fig_note(&f->alpha[k]));
    if (!f->alpha[k].measured) continue;
    json_t *o = json_object();
    json_object_set_new(o, "alpha_us", json_real(f->alpha[k].v));
    json_object_set_new(o, "busbw_gbps", json_real(f->busbw[k].v));
    json_object_set_new(coll, ddp_calib_coll_names[k], o);
  }
  json_object_set_new(root, "collectives", coll);
  if (c->ngemm) { /* the GEMM sweep's points: what the cost model interpolates (compiler/explain/cost.c) */
    json_t *arr = json_array();
    for (size_t k = 0; k < c->ngemm; k++) {
      const ddp_gemm_point *g = &c->gemm[k];
      json_t *e = json_object();
      json_object_set_new(e, "m", json_integer((json_int_t)g->m));
      json_object_set_new(e, "n", json_integer((json_int_t)g->n));
      json_object_set_new(e, "k", json_integer((json_int_t)g->k));
      json_object_set_new(e, "ta", json_integer(g->ta));
      json_object_set_new(e, "tb", json_integer(g->tb));
      json_object_set_new(e, "us", json_real(g->us));
      json_array_append_new(arr, e);
    }
    json_object_set_new(root, "gemm_by_shape", arr);
    json_t *n = json_object();
    json_object_set_new(n, "samples", json_integer((json_int_t)c->ngemm));
    json_object_set_new(n, "note", json_string("bf16 GEMMs timed alone, back to back (the GEMM sweep)"));
    json_object_set_new(fit, "gemm_by_shape", n);
    json_object_set_new(fit, "gemm_table_scale", table_scale(p, c, med, ovl, root));
  }
  json_object_set_new(root, "fit", fit);
  const ddp_program *prog = &p->ranks[0].step;
  for (size_t k = 0; k < prog->n; k++) {
    ddp_work w;
    ddp_instr_work(p, &prog->v[k], &w);
    if (w.kind == WORK_FREE || med[k] < 0) continue;
    json_t *s = json_object();
    json_object_set_new(s, "instr", json_integer((json_int_t)k));
    json_object_set_new(s, "what", json_string(prog->v[k].opcode == I_KERNEL ? ddp_op_name(prog->v[k].op)
                                                                             : ddp_opcode_name(prog->v[k].opcode)));
    json_object_set_new(s, "work", json_string(work_name(&w)));
    if (w.kind == WORK_GEMM || w.kind == WORK_ATTENTION) json_object_set_new(s, "flops", json_real(w.flops));
    if (w.kind == WORK_GEMM) {
      json_object_set_new(s, "min_dim", json_real(w.gemm_min_dim));
      static const char *const dims[5] = {"m", "n", "k", "ta", "tb"};
      const int slot[5] = {GEMM_I_M, GEMM_I_N, GEMM_I_K, GEMM_I_TRANS_A, GEMM_I_TRANS_B};
      for (int d = 0; d < 5; d++) json_object_set_new(s, dims[d], json_integer((json_int_t)prog->v[k].i[slot[d]]));
      json_object_set_new(s, "batch", json_integer((json_int_t)(prog->v[k].i[GEMM_I_BATCH] > 1 ? prog->v[k].i[GEMM_I_BATCH] : 1)));
    }
    if (w.kind == WORK_MEMORY || w.kind == WORK_ATTENTION) json_object_set_new(s, "bytes", json_real(w.bytes));
    if (w.kind == WORK_COLL) {
      json_object_set_new(s, "collective", json_string(ddp_calib_coll_names[w.coll_kind]));
      json_object_set_new(s, "wire_bytes", json_real(w.wire_bytes));
    }
    json_object_set_new(s, "median_ms", json_real(med[k] * 1e3));
    if (ovl[k] > 0) json_object_set_new(s, "overlap", json_real(ovl[k]));
    json_array_append_new(samples, s);
  }
  for (size_t k = 0; k < c->nsweep; k++) { /* the collective sweep's points (timed alone) */
    json_t *s = json_object();
    json_object_set_new(s, "what", json_string("sweep"));
    json_object_set_new(s, "work", json_string("collective"));
    json_object_set_new(s, "collective", json_string(ddp_calib_coll_names[c->sweep[k].kind]));
    json_object_set_new(s, "wire_bytes", json_real(c->sweep[k].wire_bytes));
    json_object_set_new(s, "median_ms", json_real(c->sweep[k].s * 1e3));
    json_array_append_new(samples, s);
  }
  json_object_set_new(root, "samples", samples);
  return root;
}

int ddp_calib_finish(const ddp_plan *p, const ddp_calib_rows *c, const char *device, const char *out_path,
                     int quiet, char *err, size_t errcap) {
  if (c->rows == 0)
    return ddp_fail(err, errcap, "--calibrate: no timed step (the plan's warm-up is %lld steps: pass --steps above it)",
                    (long long)p->meta.warmup);
  char dev[200], path[4400], dir[4096];
  snprintf(dev, sizeof dev, "%s", device && *device ? device : "device");
  char *paren = strstr(dev, " (rank ");
  if (paren) *paren = 0;
  if (out_path) {
    if ((size_t)snprintf(path, sizeof path, "%s", out_path) >= sizeof path)
      return ddp_fail(err, errcap, "--calibrate-out: the path is too long");
  } else {
    if (!ddp_cache_dir("profiles", dir, sizeof dir))
      return ddp_fail(err, errcap,
                      "--calibrate: no cache directory for the profile (DDPC_CACHE_DIR, XDG_CACHE_HOME or HOME must "
                      "name a directory that can be created)");
    char s[160];
    slug(dev, s, sizeof s);
    snprintf(path, sizeof path, "%s/%s-world%lld.json", dir, s, (long long)p->meta.world);
  }
  double *med = ddp_xcalloc(c->n + 1, sizeof *med), *ovl = ddp_xcalloc(c->n + 1, sizeof *ovl);
  char merged[700] = "";
  ddp_calib_medians(c, med, ovl);
  ddp_calib_fit f;
  int rc = ddp_calib_fit_run(p, 0, med, ovl, c->sweep, c->nsweep, &f, err, errcap);
  if (rc == 0) ddp_calib_launch_untraced(p, 0, med, c, &f);
  if (rc == 0) {
    json_t *root = profile_json(p, c, med, ovl, &f, dev);
    ddp_calib_merge_earlier(root, path, dev, (long long)p->meta.world, merged, sizeof merged);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    json_decref(root);
    if (!text) rc = ddp_fail(err, errcap, "--calibrate: out of memory for the profile");
    else {
      rc = ddp_write_atomic(path, text, strlen(text), err, errcap);
      free(text);
    }
  }
  if (rc == 0) {
    printf("calibration: %zu timed steps of %zu instructions on %s\n", c->rows, c->n, dev);
    if (!quiet) {
      for (int k = 0; k < CAL_NFIG; k++)
        if (f.fig[k].measured) printf("  %-18s %12.4g  (%d samples)\n", ddp_calib_fig_name(k), f.fig[k].v, f.fig[k].samples);
        else printf("  %-18s %12s  (%s: the built-in default's)\n", ddp_calib_fig_name(k), "-", f.fig[k].why);
      if (c->ngemm) printf("  %-18s %12zu  (bf16 GEMMs timed alone)\n", "gemm_by_shape", c->ngemm);
      for (int k = 0; k < COST_COLL_COUNT; k++)
        if (f.alpha[k].measured)
          printf("  %-18s alpha %.4g us, busbw %.4g GB/s  (%d samples)\n", ddp_calib_coll_names[k], f.alpha[k].v, f.busbw[k].v,
                 f.alpha[k].samples);
    }
    if (merged[0]) printf("%s\n", merged);
    printf("profile written: %s\n", path);
    fflush(stdout);
  }
  free(med);
  free(ovl);
  return rc;
}

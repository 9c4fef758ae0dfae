/* compiler/explain/profile.c: the device profile of `ddpc explain`: the built-in H100/H200 default and
 * the JSON reader (jansson), which checks every field and names the one that is wrong. Format and the
 * default's sources: docs/EXPLAIN.md. A profile written by `ddprun --calibrate` says "defaults": "built-in":
 * the figures it leaves out (those its plan could not measure) are the built-in default's, and its record
 * of the measurement ("device", "date", "version", "plan", "fit", "samples", "compute_from") is type-checked
 * and kept out of the model. */
#include "err.h"
#include "explain.h"
#include "file.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char *const coll_names[COST_COLL_COUNT] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                                        "send_recv"};
const char *ddp_cost_coll_name(int k) { return k >= 0 && k < COST_COLL_COUNT ? coll_names[k] : "?"; }

void ddp_profile_default(ddp_profile *pr) {
  memset(pr, 0, sizeof *pr);
  snprintf(pr->name, sizeof pr->name, "built-in H100/H200 default (uncalibrated)");
  pr->launch_us = 4;            /* kernel launch + tail on a busy stream */
  pr->hbm_gbps = 4000;          /* measured device copy, H200 (docs/PERFORMANCE.md) */
  pr->gemm_tflops_16 = 650;     /* cuBLASLt bf16, measured 655 TFLOP/s on the XL shapes */
  pr->gemm_tflops_32 = 50;      /* f32 inputs (H100 SXM datasheet 67 TFLOP/s FP32, derated) */
  pr->gemm_small_dim = 1024;
  pr->gemm_small_scale = 1;     /* no derate in a step at the power limit: alone the small shapes run at 0.79 (min
                                 * dim 512) of the large ones' 857 TFLOP/s, but in the step the limit holds the
                                 * large ones to 650 (the end-to-end grid of 2026-11-28: 0.5 put the small and
                                 * medium models' steps 13-53% over, 1 within 9%) */
  pr->attention_tflops = 243;   /* the Hopper kernels at T 512, d 64: a calibration on an H200, 2026-11-28 (210
                                 * until then, the mma.sync forward) */
  pr->collective_share = 0.22;  /* 2 x H200: the backward's GEMMs at 508 TFLOP/s beside NCCL, 655 alone */
  pr->copy_engine_share = 0.09; /* 2 x H200: the XL GEMM mix 8.5-10.9% slower beside a copy-engine all-to-all */
  pr->gemm_table_scale = 1;     /* no table: unused */
  for (int k = 0; k < COST_COLL_COUNT; k++) pr->coll[k] = (ddp_coll_cost){20, 300};
  pr->coll[COST_SEND_RECV] = (ddp_coll_cost){10, 300};
  /* the power model: 2 x H200 SXM, 2026-11-28 (tests/bench/energy_per_byte.py, docs/PERFORMANCE.md) */
  pr->power.limit_w = 700;
  pr->power.idle_w = 118;
  pr->power.j_per_tflop = 1.15; /* fitted: the one-GPU XL step's measured energy with the other figures as measured
                                 * (four runs: 1.115-1.163); the 8192^3 bf16 GEMM alone at 667 TFLOP/s: 0.858 */
  pr->power.j_per_tflop_fp32 = 12.5; /* fitted: the fp32 grid steps of 2026-11-28 at the power limit (large 12.3,
                                      * XL 12.7, 2.7B 11.4 J per TFLOP after the memory's joules) */
  pr->power.j_per_gb_hbm = 0.117;        /* a 1 GiB device copy at 4.25 TB/s, read + written */
  pr->power.j_per_gb_copy_engine = 0.455; /* a peer copy at 390 GB/s: 0.200 J/GB receiving + 0.255 sending */
  pr->power.j_per_gb_nccl = 0.535;       /* NCCL's all-reduce of 256 MiB fp32, per GB of ring traffic sent */
}

/* Appends path+key to the list of figures a calibrated profile left to the built-in default (NULL: none). */
#define DFLT_CAP 300
static void defaulted(char *dflt, const char *path, const char *key) {
  if (!dflt) return;
  size_t n = strlen(dflt);
  snprintf(dflt + n, DFLT_CAP - n, "%s%s%s", n ? ", " : "", path, key);
}

/* One number field of obj: required (unless dflt, a calibrated profile's "defaults": "built-in": then *out
 * keeps the default's and the key is listed in dflt), finite, in [lo, hi] (lo exclusive when lo_open). */
static int num(char *dflt, json_t *obj, const char *path, const char *key, double lo, int lo_open, double hi, double *out,
               const char *label, char *err, size_t errcap) {
  json_t *v = json_object_get(obj, key);
  if (!v && dflt) {
    defaulted(dflt, path, key);
    return 0;
  }
  if (!v) return ddp_fail(err, errcap, "%s: %s%s: missing (a number)", label, path, key);
  if (!json_is_number(v)) return ddp_fail(err, errcap, "%s: %s%s: must be a number", label, path, key);
  double x = json_number_value(v);
  if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi) {
    char upper[64] = "";
    if (isfinite(hi)) snprintf(upper, sizeof upper, " and <= %g", hi);
    return ddp_fail(err, errcap, "%s: %s%s: must be a number %s %g%s (got %.6g)", label, path, key,
                    lo_open ? ">" : ">=", lo, upper, x);
  }
  *out = x;
  return 0;
}

/* Refuses the keys of obj not in allowed (NULL-terminated). */
static int known(json_t *obj, const char *path, const char *const *allowed, const char *label, char *err,
                 size_t errcap) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, key);
    if (!ok) return ddp_fail(err, errcap, "%s: %s%s: unknown field", label, path, key);
  }
  return 0;
}

/* An optional share in [0, 0.99] of the top level: *out = the default's when left out (listed in dflt when
 * that is not NULL). */
static int share(json_t *root, const char *key, double dflt_value, double *out, char *dflt, const char *label,
                 char *err, size_t errcap) {
  if (json_object_get(root, key)) return num(NULL, root, "", key, 0, 0, 0.99, out, label, err, errcap);
  *out = dflt_value;
  defaulted(dflt, "", key);
  return 0;
}

/* The optional "power" object: every field when present (limit_w 0 turns the model off); left out, the
 * built-in default's (listed in dflt when that is not NULL). */
static int power(json_t *root, const ddp_profile *def, ddp_profile *pr, char *dflt, const char *label, char *err,
                 size_t errcap) {
  static const char *const keys[] = {"limit_w",      "idle_w",   "j_per_tflop", "j_per_tflop_fp32",
                                     "j_per_gb_hbm", "j_per_gb_copy_engine", "j_per_gb_nccl", NULL};
  json_t *o = json_object_get(root, "power");
  pr->power = def->power;
  if (!o) {
    defaulted(dflt, "", "power");
    return 0;
  }
  if (!json_is_object(o)) return ddp_fail(err, errcap, "%s: power: must be an object", label);
  if (known(o, "power.", keys, label, err, errcap) ||
      num(NULL, o, "power.", "limit_w", 0, 0, 1e5, &pr->power.limit_w, label, err, errcap) ||
      num(NULL, o, "power.", "idle_w", 0, 0, 1e5, &pr->power.idle_w, label, err, errcap) ||
      num(NULL, o, "power.", "j_per_tflop", 0, 0, 1e6, &pr->power.j_per_tflop, label, err, errcap) ||
      num(NULL, o, "power.", "j_per_tflop_fp32", 0, 0, 1e6, &pr->power.j_per_tflop_fp32, label, err, errcap) ||
      num(NULL, o, "power.", "j_per_gb_hbm", 0, 0, 1e6, &pr->power.j_per_gb_hbm, label, err, errcap) ||
      num(NULL, o, "power.", "j_per_gb_copy_engine", 0, 0, 1e6, &pr->power.j_per_gb_copy_engine, label, err, errcap) ||
      num(NULL, o, "power.", "j_per_gb_nccl", 0, 0, 1e6, &pr->power.j_per_gb_nccl, label, err, errcap))
    return -1;
  if (pr->power.limit_w > 0 && !(pr->power.idle_w < pr->power.limit_w))
    return ddp_fail(err, errcap, "%s: power.idle_w: must be below power.limit_w (got %g >= %g)", label,
                    pr->power.idle_w, pr->power.limit_w);
  return 0;
}

static int parse_root(json_t *root, const char *label, ddp_profile *pr, char *err, size_t errcap) {
  static const char *const top[] = {"name", "launch_us", "hbm_gbps", "gemm_tflops_16", "gemm_tflops_32",
                                    "gemm_small_dim", "gemm_small_scale", "attention_tflops", "collectives",
                                    "collective_share", "copy_engine_share", "attention_by_shape", "gemm_by_shape", "gemm_table_scale", "defaults", "device", "date", "version", "plan", "fit", "samples",
                                    "compute_from", "power", NULL};
  static const char *const coll_keys[] = {"alpha_us", "busbw_gbps", NULL};
  const double big = 1e301; /* no upper bound */
  if (!json_is_object(root)) return ddp_fail(err, errcap, "%s: expected one JSON object", label);
  if (known(root, "", top, label, err, errcap)) return -1;
  json_t *defaults = json_object_get(root, "defaults");
  int optional_figures = 0;
  char dbuf[DFLT_CAP] = "";
  if (defaults) {
    if (!json_is_string(defaults) || strcmp(json_string_value(defaults), "built-in"))
      return ddp_fail(err, errcap, "%s: defaults: must be the string \"built-in\" (the figures left out are the "
                      "built-in default's)", label);
    ddp_profile_default(pr);
    optional_figures = 1;
  }
  static const char *const strs[] = {"device", "date", "version", "compute_from", NULL};
  for (const char *const *k = strs; *k; k++) {
    json_t *v = json_object_get(root, *k);
    if (v && !json_is_string(v)) return ddp_fail(err, errcap, "%s: %s: must be a string", label, *k);
  }
  if (json_object_get(root, "plan") && !json_is_object(json_object_get(root, "plan")))
    return ddp_fail(err, errcap, "%s: plan: must be an object", label);
  if (json_object_get(root, "fit") && !json_is_object(json_object_get(root, "fit")))
    return ddp_fail(err, errcap, "%s: fit: must be an object", label);
  if (json_object_get(root, "samples") && !json_is_array(json_object_get(root, "samples")))
    return ddp_fail(err, errcap, "%s: samples: must be an array", label);
  json_t *name = json_object_get(root, "name");
  if (!name || !json_is_string(name) || !json_string_length(name))
    return ddp_fail(err, errcap, "%s: name: %s", label, name ? "must be a non-empty string" : "missing (a string)");
  char own_name[400]; /* printed by explain and stored in plans: control characters become '?' */
  snprintf(own_name, sizeof own_name, "%s", json_string_value(name));
  for (char *ch = own_name; *ch; ch++)
    if ((unsigned char)*ch < 0x20 || *ch == 0x7f) *ch = '?';
  snprintf(pr->name, sizeof pr->name, "%s", own_name);
  if (num(optional_figures ? dbuf : NULL, root, "", "launch_us", 0, 0, 1e6, &pr->launch_us, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "hbm_gbps", 0, 1, big, &pr->hbm_gbps, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "gemm_tflops_16", 0, 1, big, &pr->gemm_tflops_16, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "gemm_tflops_32", 0, 1, big, &pr->gemm_tflops_32, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "gemm_small_dim", 1, 0, 1e12, &pr->gemm_small_dim, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "gemm_small_scale", 0, 1, 1, &pr->gemm_small_scale, label, err, errcap) ||
      num(optional_figures ? dbuf : NULL, root, "", "attention_tflops", 0, 1, big, &pr->attention_tflops, label, err, errcap))
    return -1;
  /* optional in every profile (older files lack them; no calibration measures copy_engine_share yet): the
   * built-in default's when left out */
  ddp_profile def;
  ddp_profile_default(&def);
  if (share(root, "collective_share", def.collective_share, &pr->collective_share, optional_figures ? dbuf : NULL,
            label, err, errcap) ||
      share(root, "copy_engine_share", def.copy_engine_share, &pr->copy_engine_share, optional_figures ? dbuf : NULL,
            label, err, errcap) ||
      power(root, &def, pr, optional_figures ? dbuf : NULL, label, err, errcap))
    return -1;
  json_t *coll = json_object_get(root, "collectives");
  json_t *shapes = json_object_get(root, "attention_by_shape");
  pr->nattn_shapes = 0;
  if (shapes && (!json_is_array(shapes) || json_array_size(shapes) > DDP_PROFILE_ATTN_SHAPES))
    return ddp_fail(err, errcap, "%s: attention_by_shape: must be an array of at most %d objects", label,
                    DDP_PROFILE_ATTN_SHAPES);
  static const char *const shape_keys[] = {"t", "dh", "tflops", NULL};
  for (size_t k = 0; shapes && k < json_array_size(shapes); k++) {
    char path[64];
    json_t *e = json_array_get(shapes, k);
    snprintf(path, sizeof path, "attention_by_shape[%zu].", k);
    if (!json_is_object(e)) return ddp_fail(err, errcap, "%s: attention_by_shape[%zu]: must be an object", label, k);
    if (known(e, path, shape_keys, label, err, errcap) ||
        num(NULL, e, path, "t", 1, 0, 1e9, &pr->attn_shape[k].t, label, err, errcap) ||
        num(NULL, e, path, "dh", 1, 0, 1e9, &pr->attn_shape[k].dh, label, err, errcap) ||
        num(NULL, e, path, "tflops", 0, 1, big, &pr->attn_shape[k].tflops, label, err, errcap))
      return -1;
    pr->nattn_shapes++;
  }
  json_t *gemms = json_object_get(root, "gemm_by_shape");
  pr->ngemm_shapes = 0;
  if (gemms && (!json_is_array(gemms) || json_array_size(gemms) > DDP_PROFILE_GEMM_SHAPES))
    return ddp_fail(err, errcap, "%s: gemm_by_shape: must be an array of at most %d objects", label,
                    DDP_PROFILE_GEMM_SHAPES);
  static const char *const gemm_keys[] = {"m", "n", "k", "ta", "tb", "us", NULL};
  for (size_t k = 0; gemms && k < json_array_size(gemms); k++) {
    char path[64];
    json_t *e = json_array_get(gemms, k);
    double ta = 0, tb = 0;
    snprintf(path, sizeof path, "gemm_by_shape[%zu].", k);
    if (!json_is_object(e)) return ddp_fail(err, errcap, "%s: gemm_by_shape[%zu]: must be an object", label, k);
    if (known(e, path, gemm_keys, label, err, errcap) ||
        num(NULL, e, path, "m", 1, 0, 1e9, &pr->gemm_shape[k].m, label, err, errcap) ||
        num(NULL, e, path, "n", 1, 0, 1e9, &pr->gemm_shape[k].n, label, err, errcap) ||
        num(NULL, e, path, "k", 1, 0, 1e9, &pr->gemm_shape[k].k, label, err, errcap) ||
        num(NULL, e, path, "ta", 0, 0, 1, &ta, label, err, errcap) ||
        num(NULL, e, path, "tb", 0, 0, 1, &tb, label, err, errcap) ||
        num(NULL, e, path, "us", 0, 1, 1e9, &pr->gemm_shape[k].us, label, err, errcap))
      return -1;
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
      return ddp_fail(err, errcap, "%s: gemm_by_shape[%zu]: ta and tb must be 0 or 1", label, k);
    pr->gemm_shape[k].ta = ta != 0, pr->gemm_shape[k].tb = tb != 0;
    pr->ngemm_shapes++;
  }
  pr->gemm_table_scale = 1; /* optional: a table's times as they were measured */
  if (json_object_get(root, "gemm_table_scale") &&
      num(NULL, root, "", "gemm_table_scale", 0, 1, 100, &pr->gemm_table_scale, label, err, errcap))
    return -1;
  int missing = 0;
  for (int k = 0; k < COST_COLL_COUNT && optional_figures; k++)
    missing += !coll || !json_object_get(coll, coll_names[k]);
  if (missing == COST_COLL_COUNT) defaulted(dbuf, "", "collectives");
  if (coll && !json_is_object(coll)) return ddp_fail(err, errcap, "%s: collectives: must be an object", label);
  if (!coll && !optional_figures) return ddp_fail(err, errcap, "%s: collectives: missing (an object)", label);
  static const char *const kinds[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv", NULL};
  if (coll && known(coll, "collectives.", kinds, label, err, errcap)) return -1;
  for (int k = 0; coll && k < COST_COLL_COUNT; k++) {
    char path[64];
    json_t *c = json_object_get(coll, coll_names[k]);
    if (!c && optional_figures) {
      if (missing < COST_COLL_COUNT) defaulted(dbuf, "collectives.", coll_names[k]);
      continue;
    }
    if (!c || !json_is_object(c))
      return ddp_fail(err, errcap, "%s: collectives.%s: %s", label, coll_names[k],
                      c ? "must be an object" : "missing (an object with alpha_us, busbw_gbps)");
    snprintf(path, sizeof path, "collectives.%s.", coll_names[k]);
    if (known(c, path, coll_keys, label, err, errcap) ||
        num(optional_figures ? dbuf : NULL, c, path, "alpha_us", 0, 0, 1e6, &pr->coll[k].alpha_us, label, err, errcap) ||
        num(optional_figures ? dbuf : NULL, c, path, "busbw_gbps", 0, 1, big, &pr->coll[k].busbw_gbps, label, err, errcap))
      return -1;
  }
  if (dbuf[0]) snprintf(pr->name, sizeof pr->name, "%.200s; built-in default for: %.280s", own_name, dbuf);
  return 0;
}

int ddp_profile_parse(const char *json, size_t len, const char *label, ddp_profile *pr, char *err, size_t errcap) {
  json_error_t je;
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) return ddp_fail(err, errcap, "%s: line %d: %s", label, je.line, je.text);
  ddp_profile tmp;
  memset(&tmp, 0, sizeof tmp);
  int rc = parse_root(root, label, &tmp, err, errcap);
  json_decref(root);
  if (rc == 0) *pr = tmp;
  return rc;
}

int ddp_profile_read(const char *path, ddp_profile *pr, char *err, size_t errcap) {
  size_t n = 0;
  char *text = ddp_read_file(path, 1 << 20, &n, err, errcap);
  if (!text) return -1;
  int rc = ddp_profile_parse(text, n, path, pr, err, errcap);
  free(text);
  return rc;
}

/* runtime/bench/calib_merge.c: what `ddprun --calibrate` keeps of the profile already at its path
 * (calib_merge.h), so calibration plans of different collectives, attention shapes and world sizes add up
 * to one profile. */
#include "calib_merge.h"
#include "calibrate.h"
#include "file.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A figure kept from the earlier profile: its fit entry says from when (and carries the earlier fit), and
 * its name joins the list the report prints. */
static void note_kept(json_t *fit, json_t *ofit, const char *key, const char *date, char *kept, size_t keptcap) {
  json_t *n = json_object();
  json_object_set_new(n, "kept_from", json_string(date));
  if (ofit && json_object_get(ofit, key)) json_object_set(n, "earlier", json_object_get(ofit, key));
  json_object_set_new(fit, key, n);
  size_t m = strlen(kept);
  snprintf(kept + m, keptcap - m, "%s%s", m ? ", " : "", key);
}

/* fit[key] says the figure came `from` the one-rank run, with that run's own note (carried as it is when
 * it already says where it came from, not nested). */
static void carry_note(json_t *fit, json_t *ofit, const char *key, const char *from) {
  json_t *onote = ofit ? json_object_get(ofit, key) : NULL;
  if (json_object_get(onote, "from")) {
    json_object_set(fit, key, onote);
    return;
  }
  json_t *n = json_object();
  json_object_set_new(n, "from", json_string(from));
  if (onote) json_object_set(n, "earlier", onote);
  json_object_set_new(fit, key, n);
}

/* The compute figures of a one-rank profile `old` (or of a multi-rank one that took them from one) replace
 * root's (a multi-rank run's, whose compute shared the device with NCCL's kernels and the skew of the other
 * ranks): launch, HBM, GEMM and attention, the attention and GEMM tables included; root says where they
 * came from ("compute_from"), and each figure's fit note is the one-rank run's. */
static void take_compute(json_t *root, json_t *old, const char *from) {
  json_t *fit = json_object_get(root, "fit"), *ofit = json_object_get(old, "fit");
  for (int k = 0; k < CAL_NFIG; k++) {
    if (k == CAL_SHARE) continue; /* measured only beside collectives: this run's */
    const char *key = ddp_calib_fig_name(k);
    json_t *v = json_object_get(old, key);
    if (v) json_object_set(root, key, v);
    else json_object_del(root, key);
    carry_note(fit, ofit, key, from);
  }
  static const char *const tables[] = {"attention_by_shape", "gemm_by_shape", "gemm_table_scale"};
  for (int k = 0; k < 3; k++) {
    json_t *t = json_object_get(old, tables[k]);
    if (!t) {
      json_object_del(root, tables[k]);
      continue;
    }
    json_object_set(root, tables[k], t);
    if (k > 0) carry_note(fit, ofit, tables[k], from);
  }
  json_object_set_new(root, "compute_from", json_string(from));
}

void ddp_calib_merge_earlier(json_t *root, const char *path, const char *dev, long long world, char *note,
                             size_t notecap) {
  char why[300];
  size_t len = 0;
  note[0] = 0;
  char *text = ddp_read_file(path, 64 << 20, &len, why, sizeof why);
  if (!text) return; /* no earlier profile */
  json_t *old = json_loadb(text, len, 0, NULL);
  free(text);
  json_t *od = old ? json_object_get(old, "device") : NULL, *ow = old ? json_object_get(json_object_get(old, "plan"), "world") : NULL;
  json_t *odf = old ? json_object_get(old, "defaults") : NULL, *odate = old ? json_object_get(old, "date") : NULL;
  if (!old || !json_is_object(old) || !odf || !json_is_string(odf) || strcmp(json_string_value(odf), "built-in") ||
      !od || !json_is_string(od) || strcmp(json_string_value(od), dev) || !ow || !json_is_integer(ow) ||
      (json_integer_value(ow) != world && !(world > 1 && json_integer_value(ow) == 1))) {
    snprintf(note, notecap, "replaced the earlier file (not a calibrated profile of %.200s at world %lld%s)", dev, world,
             world > 1 ? " or 1" : "");
    json_decref(old);
    return;
  }
  char date[64] = "?"; /* printed in the report: printable characters only, cut short */
  if (odate && json_is_string(odate)) {
    snprintf(date, sizeof date, "%s", json_string_value(odate));
    for (char *c = date; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  /* A multi-rank run over a one-rank profile of the device: that profile's compute figures, this run's
   * collectives and collective_share. Over a multi-rank profile that took its compute from one rank: the
   * same, and its collective kinds this run did not measure as below. */
  json_t *ofrom = json_object_get(old, "compute_from");
  if (world > 1 && (json_integer_value(ow) == 1 || json_is_string(ofrom))) {
    char from[200];
    snprintf(from, sizeof from, "%s", json_is_string(ofrom) ? json_string_value(ofrom) : "");
    if (!from[0]) snprintf(from, sizeof from, "the one-rank calibration of %.100s", date);
    take_compute(root, old, from);
    if (json_integer_value(ow) == 1) {
      snprintf(note, notecap, "compute figures from %s at this path; collectives from this run (world %lld)", from,
               world);
      json_decref(old);
      return;
    }
  }
  json_t *fit = json_object_get(root, "fit"), *ofit = json_object_get(old, "fit");
  char kept[400] = "";
  for (int k = 0; k < CAL_NFIG; k++) {
    const char *key = ddp_calib_fig_name(k);
    json_t *v = json_object_get(old, key);
    if (json_object_get(root, key) || !v) continue;
    json_object_set(root, key, v);
    note_kept(fit, ofit, key, date, kept, sizeof kept);
  }
  json_t *coll = json_object_get(root, "collectives"), *ocoll = json_object_get(old, "collectives");
  for (int k = 0; ocoll && json_is_object(ocoll) && k < COST_COLL_COUNT; k++) {
    json_t *v = json_object_get(ocoll, ddp_calib_coll_names[k]);
    if (json_object_get(coll, ddp_calib_coll_names[k]) || !v) continue;
    json_object_set(coll, ddp_calib_coll_names[k], v);
    char key[64];
    snprintf(key, sizeof key, "collectives.%s", ddp_calib_coll_names[k]);
    note_kept(fit, ofit, key, date, kept, sizeof kept);
  }
  json_t *ogemm = json_object_get(old, "gemm_by_shape");
  if (ogemm && !json_object_get(root, "gemm_by_shape")) {
    json_object_set(root, "gemm_by_shape", ogemm);
    note_kept(fit, ofit, "gemm_by_shape", date, kept, sizeof kept);
    json_t *oscale = json_object_get(old, "gemm_table_scale");
    if (oscale) json_object_set(root, "gemm_table_scale", oscale), note_kept(fit, ofit, "gemm_table_scale", date, kept, sizeof kept);
  }
  json_t *shapes = json_object_get(root, "attention_by_shape"), *oshapes = json_object_get(old, "attention_by_shape");
  int dropped = 0, shapes_kept = 0;
  for (size_t k = 0; oshapes && json_is_array(oshapes) && k < json_array_size(oshapes); k++) {
    json_t *e = json_array_get(oshapes, k);
    double t = json_number_value(json_object_get(e, "t")), dh = json_number_value(json_object_get(e, "dh")),
           tf = json_number_value(json_object_get(e, "tflops"));
    /* only entries the profile reader takes (compiler/explain/profile.c), and at most its number of them:
     * this run's shapes first, then the earlier file's in its order */
    int dup = 0; /* a shape this run measured again: this run's figure stands */
    for (size_t j = 0; shapes && j < json_array_size(shapes) && !dup; j++) {
      json_t *g = json_array_get(shapes, j);
      dup = json_number_value(json_object_get(g, "t")) == t && json_number_value(json_object_get(g, "dh")) == dh;
    }
    if (dup) continue;
    if (!json_is_object(e) || json_object_size(e) != 3 || !(t >= 1 && t <= 1e9) || !(dh >= 1 && dh <= 1e9) ||
        !(tf > 0 && isfinite(tf)) || (shapes && json_array_size(shapes) >= CALIB_MAX_ATTN_SHAPES)) {
      dropped++;
      continue;
    }
    if (!shapes) {
      shapes = json_array();
      json_object_set_new(root, "attention_by_shape", shapes);
    }
    json_array_append(shapes, e);
    if (++shapes_kept > 3) continue; /* the first three by name, the rest counted */
    size_t m = strlen(kept);
    snprintf(kept + m, sizeof kept - m, "%sattention T %g head dim %g", m ? ", " : "", t, dh);
  }
  if (shapes_kept > 3) {
    size_t m = strlen(kept);
    snprintf(kept + m, sizeof kept - m, " and %d more attention shapes", shapes_kept - 3);
  }
  if (dropped) {
    size_t m = strlen(kept);
    snprintf(kept + m, sizeof kept - m, "%s%d earlier attention shape(s) left out (malformed, or past the %d a "
             "profile holds)", m ? "; " : "", dropped, CALIB_MAX_ATTN_SHAPES);
  }
  snprintf(note, notecap, "kept from the earlier profile of %s at this path: %s", date, kept[0] ? kept : "nothing");
  json_decref(old);
}


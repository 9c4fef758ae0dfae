/* tests/unit/plan/test_inspect_json.c: `ddpc inspect --json` of the synthetic plan (every opcode): the output
 * parses as one JSON document whose counts, tensors, buckets, kernels and programs match the plan, a strided
 * piece shows its runs and stride, rank
 * selection keeps one rank's programs, a name that is not UTF-8 still gives valid JSON, a non-finite float
 * is null, a bad rank is refused and a write error is reported. */
#include "inspect_json.h"
#include "plan_fixture.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *dump(const ddp_plan *p, int rank, int *rc, char *err, size_t errcap) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  *rc = ddp_inspect_json(p, rank, f, err, errcap);
  fclose(f);
  json_error_t je;
  json_t *doc = json_loads(buf, 0, &je);
  if (!doc) fprintf(stderr, "  JSON error at line %d: %s\n", je.line, je.text);
  free(buf);
  return doc;
}

int main(void) {
  ddp_plan *p = fixture_plan();
  char err[256] = "";
  int rc;
  json_t *d = dump(p, -1, &rc, err, sizeof err);
  CHECK_INT("rc", 0, rc);
  if (!CHECK(d != NULL, "valid JSON")) return check_report("test_inspect_json");
  CHECK_STR("format", "ddpc-inspect", json_string_value(json_object_get(d, "format")));
  CHECK_INT("plan_format", DDP_PLAN_VERSION, json_integer_value(json_object_get(d, "plan_format")));
  json_t *meta = json_object_get(d, "meta");
  CHECK_INT("meta.world", p->meta.world, json_integer_value(json_object_get(meta, "world")));
  CHECK_STR("meta.mode_name", ddp_mode_name((int)p->meta.mode), json_string_value(json_object_get(meta, "mode_name")));
  CHECK_INT("tensors", p->ntensors, json_array_size(json_object_get(d, "tensors")));
  CHECK_INT("buckets", p->nbuckets, json_array_size(json_object_get(d, "buckets")));
  CHECK_INT("kernels", p->nkernels, json_array_size(json_object_get(d, "kernels")));
  json_t *ranks = json_object_get(d, "ranks");
  CHECK_INT("ranks", p->meta.world, json_array_size(ranks));
  for (int64_t r = 0; r < p->meta.world; r++) {
    json_t *progs = json_object_get(json_array_get(ranks, (size_t)r), "programs");
    CHECK_INT("init length", p->ranks[r].init.n, json_array_size(json_object_get(progs, "init")));
    CHECK_INT("step length", p->ranks[r].step.n, json_array_size(json_object_get(progs, "step")));
    json_t *step = json_object_get(progs, "step");
    for (uint32_t k = 0; k < p->ranks[r].step.n; k++)
      CHECK_STR("opcode", ddp_opcode_name(p->ranks[r].step.v[k].opcode),
                json_string_value(json_object_get(json_array_get(step, k), "opcode")));
  }
  const char *t0 = json_string_value(json_object_get(json_array_get(json_object_get(d, "tensors"), 0), "name"));
  CHECK_STR("first tensor", p->tensors[0].name, t0);
  json_decref(d);

  /* a strided piece (piece_runs > 1) shows its runs and stride; a contiguous one does not */
  for (int k = 0; k < 2; k++) {
    ddp_tensor t = {0};
    t.name = (char *)(k ? "w1.cols1" : "w1.rows0");
    t.state_name = (char *)"layers.0.weight";
    t.flags = TF_PARAM | TF_PIECE, t.dtype = DT_F32, t.arena = ARENA_PARAM, t.ndim = 1, t.shape[0] = 16, t.bytes = 64;
    t.base = 0, t.view = 64 * (uint64_t)k, t.offset = t.view, t.param = 0, t.first_use = t.last_use = -1;
    t.piece_rank = k, t.piece_first = k ? 4 : 0, t.piece_runs = k ? 4 : 0, t.piece_stride = k ? 8 : 0;
    ddp_plan_add_tensor(p, &t);
  }
  d = dump(p, -1, &rc, err, sizeof err);
  json_t *tens = json_object_get(d, "tensors"), *rows = json_array_get(tens, p->ntensors - 2),
         *cols = json_array_get(tens, p->ntensors - 1);
  CHECK(d && rc == 0, "strided pieces");
  CHECK(json_object_get(rows, "piece_first") && !json_object_get(rows, "piece_runs"), "a contiguous piece: no runs");
  CHECK_INT("piece_runs", 4, json_integer_value(json_object_get(cols, "piece_runs")));
  CHECK_INT("piece_stride", 8, json_integer_value(json_object_get(cols, "piece_stride")));
  CHECK_INT("piece_first", 4, json_integer_value(json_object_get(cols, "piece_first")));
  json_decref(d);

  /* one rank's programs */
  d = dump(p, 1, &rc, err, sizeof err);
  CHECK(d && rc == 0, "rank 1");
  ranks = json_object_get(d, "ranks");
  CHECK(json_object_get(json_array_get(ranks, 0), "programs") == NULL, "rank 0 programs left out");
  CHECK(json_object_get(json_array_get(ranks, 1), "programs") != NULL, "rank 1 programs kept");
  json_decref(d);

  /* a hostile plan: a name that is not UTF-8, a quote and a control character; a NaN float */
  free(p->tensors[0].name);
  p->tensors[0].name = strdup("bad\xff\"name\x01");
  p->ranks[0].step.v[0].f[0] = NAN;
  d = dump(p, 0, &rc, err, sizeof err);
  CHECK(d && rc == 0, "hostile names still give JSON");
  const char *nm = json_string_value(json_object_get(json_array_get(json_object_get(d, "tensors"), 0), "name"));
  CHECK_STR("escaped name", "bad?\"name\x01", nm);
  json_t *f0 = json_array_get(
      json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(d, "ranks"), 0),
                                                                     "programs"), "step"), 0), "floats"), 0);
  CHECK(json_is_null(f0), "NaN is null");
  json_decref(d);

  /* refusals */
  FILE *f = fopen("/dev/null", "w");
  CHECK_INT("rank out of range", -1, ddp_inspect_json(p, (int)p->meta.world, f, err, sizeof err));
  fclose(f);
  f = fopen("/dev/full", "w");
  if (f) {
    setvbuf(f, NULL, _IONBF, 0);
    CHECK_INT("write error", -1, ddp_inspect_json(p, -1, f, err, sizeof err));
    CHECK_CONTAINS("write error message", err, "cannot write");
    fclose(f);
  }
  ddp_plan_free(p);
  return check_report("test_inspect_json");
}

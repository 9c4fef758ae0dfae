/* compiler/compile.c: the pipeline of compile.h, one line per stage, each writing one named thing:
 *   model    ddp_builder: plan tensors, single-rank init + step, autodiff tape, parameter units (model/)
 *   layout   ddp_layout: flat order, offsets and tensors, buckets, ownership, optimizer state (layout/)
 *   passes   plan.ranks[r].init and .step (passes/)
 *   summary  plan.meta (summary.c)
 *   memplan  plan tensors' offsets, ranks' arena bytes (memplan/), checked against --device-memory
 *   buckets  plan.buckets, in bytes of the gradient arena (layout/buckets.c)
 *   verify   nothing: proves the ordering and the collectives (verify/)
 *   codegen  plan.modules and .kernels, every KERNEL's launch geometry (codegen/)
 *   predict  plan.meta.predicted_*: rank 0's step as `ddpc explain` predicts it (explain/predict.c) */
#include "compile.h"
#include "codegen.h"
#include "err.h"
#include "layout.h"
#include "memplan.h"
#include "passes.h"
#include "summary.h"
#include "verify.h"

/* The planner's per-rank bytes (every arena at its size: the activations at their planned peak) fit the
 * device's memory, or one line with the prediction by class. */
static int check_device_memory(const ddp_plan *p, const ddp_schedule *s, uint64_t cap, char *err, size_t errcap) {
  if (!cap) return 0;
  for (int64_t r = 0; r < p->meta.world; r++) {
    uint64_t total = 0;
    for (int a = 0; a < ARENA_COUNT; a++) total += p->ranks[r].arena_bytes[a];
    if (total <= cap) continue;
    char parts[512];
    size_t n = 0;
    for (int a = 0; a < ARENA_COUNT; a++)
      n += (size_t)snprintf(parts + n, n < sizeof parts ? sizeof parts - n : 0, "%s%s %.2f", a ? ", " : "",
                            ddp_arena_name(a), (double)p->ranks[r].arena_bytes[a] / 1e9);
    return ddp_fail(err, errcap, "%s: does not fit: rank %lld needs %.2f GB (%s GB), the device has %.2f GB "
                    "(--device-memory)%s", s->path, (long long)r, (double)total / 1e9, parts, (double)cap / 1e9,
                    s->shard == SHARD_ZERO3 ? "; use more ranks" : "; shard the parameters (fsdp{}) or use more ranks");
  }
  return 0;
}

ddp_plan *ddp_compile(const ddp_schedule *s, const ddp_compile_opts *o, char *err, size_t errcap) {
  ddp_plan *p = ddp_plan_new();
  if (!p) {
    ddp_fail(err, errcap, "%s: out of memory", s->path);
    return NULL;
  }
  ddp_builder b;
  ddp_layout lay = {0};
  b_init(&b, p, s, o->f64_reference);
  int rc = ddp_model_build(&b, err, errcap);
  if (rc == 0) rc = ddp_layout_build(&b, &lay, err, errcap);
  if (rc == 0) rc = ddp_assemble_programs(&b, &lay, err, errcap);
  if (rc == 0) ddp_summary(p, s, o->arch, &b);
  if (rc == 0) rc = ddp_memplan(p, err, errcap);
  if (rc == 0) ddp_layout_record_buckets(p, &b, &lay);
  if (rc == 0) rc = check_device_memory(p, s, o->device_memory, err, errcap);
  if (rc == 0) rc = ddp_verify(p, err, errcap);
  if (rc == 0 && !o->skip_codegen && !o->f64_reference)
    rc = ddp_codegen(p, o->arch, o->jobs, &o->codegen, err, errcap);
  if (rc == 0) {
    ddp_profile def;
    if (!o->profile) ddp_profile_default(&def);
    ddp_predict_meta(p, o->profile ? o->profile : &def);
  }
  ddp_layout_free(&lay);
  b_free(&b);
  if (rc != 0) {
    ddp_plan_free(p);
    return NULL;
  }
  return p;
}

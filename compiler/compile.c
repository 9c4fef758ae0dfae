/* compiler/compile.c: the pipeline of compile.h, one line per stage, each writing one named thing:
 *   model    ddp_builder: plan tensors, single-rank init + step, autodiff tape, parameter units (model/)
 *   layout   ddp_layout: flat order, offsets and tensors, buckets, ownership, optimizer state (layout/)
 *   passes   plan.ranks[r].init and .step (passes/)
 *   summary  plan.meta (summary.c)
 *   memplan  plan tensors' offsets, ranks' arena bytes (memplan/)
 *   buckets  plan.buckets, in bytes of the gradient arena (layout/buckets.c)
 *   verify   nothing: proves the ordering and the collectives (verify/)
 *   codegen  plan.modules and .kernels, every KERNEL's launch geometry (codegen/) */
#include "compile.h"
#include "codegen.h"
#include "err.h"
#include "layout.h"
#include "memplan.h"
#include "passes.h"
#include "summary.h"
#include "verify.h"

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
  if (rc == 0) rc = ddp_verify(p, err, errcap);
  if (rc == 0 && !o->skip_codegen && !o->f64_reference)
    rc = ddp_codegen(p, o->arch, o->jobs, &o->codegen, err, errcap);
  ddp_layout_free(&lay);
  b_free(&b);
  if (rc != 0) {
    ddp_plan_free(p);
    return NULL;
  }
  return p;
}

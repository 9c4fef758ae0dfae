/* tests/unit/model/test_model_gradcheck.c: the whole model's gradient against central finite differences, in double
 * precision on the reference executor: a small transformer (2 layers, RoPE attention, SwiGLU, untied
 * head, cross-entropy) and the toy MLPs (bias, frozen parameters, tied weights, LayerNorm). For every
 * state-dict parameter, a few random elements: (L(p+h) - L(p-h)) / 2h vs the plan's gradient. */
#include "check.h"
#include "compile.h"
#include "exec_ref.h"
#include "schedule.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double loss_at(ddp_exec *x, const ddp_plan *p) {
  char err[512];
  if (!CHECK(!x->v->run(x, &p->ranks[0].step, 0, err, sizeof err), "step failed: %s", err))
    exit(check_report("test_model_gradcheck"));
  double loss;
  x->v->read(x, (int32_t)p->meta.loss_tensor, &loss, err, sizeof err);
  return loss;
}

static void check(const char *schedule, const char *const *sets, int nsets) {
  char err[2048], path[2048];
  snprintf(path, sizeof path, "%s/%s", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".", schedule);
  ddp_schedule *s = ddp_schedule_load(path, sets, nsets, err, sizeof err);
  if (!CHECK(s, "%s: %s", schedule, err)) return;
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .f64_reference = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  if (!CHECK(p, "%s: compile: %s", schedule, err)) {
    ddp_schedule_free(s);
    return;
  }
  ddp_data *d = ddp_data_open(p, (uint64_t)p->meta.data_seed, err, sizeof err);
  ddp_exec *x = d ? ddp_exec_ref_new(p, 0, NULL, d, (uint64_t)p->meta.seed, err, sizeof err) : NULL;
  if (!CHECK(x && !x->v->run(x, &p->ranks[0].init, 0, err, sizeof err), "%s: %s", schedule, err))
    exit(check_report("test_model_gradcheck"));
  int32_t fp = ddp_plan_find_tensor(p, "flat.params"), fg = ddp_plan_find_tensor(p, "flat.grads");
  const ddp_tensor *tp = &p->tensors[fp];
  uint64_t n = ddp_tensor_numel(tp);
  double *params = malloc(tp->bytes), *grads = malloc(tp->bytes), *work = malloc(tp->bytes);
  x->v->read(x, fp, params, err, sizeof err);
  loss_at(x, p); /* the gradient at `params` */
  x->v->read(x, fg, grads, err, sizeof err);
  srand(1234);
  double worst = 0;
  int checked = 0;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *pt = &p->tensors[t];
    if (!(pt->flags & TF_TRAINABLE) || !pt->state_name || !(pt->flags & TF_PARAM)) continue;
    uint64_t base = (pt->offset - tp->offset) / sizeof(double), cnt = ddp_tensor_numel(pt);
    double worst_here = 0;
    for (int k = 0; k < 4; k++) {
      uint64_t i = base + (uint64_t)rand() % cnt;
      if (i >= n) continue;
      double h = 1e-5;
      memcpy(work, params, tp->bytes);
      work[i] = params[i] + h;
      x->v->write(x, fp, work, err, sizeof err);
      double lp = loss_at(x, p);
      work[i] = params[i] - h;
      x->v->write(x, fp, work, err, sizeof err);
      double lm = loss_at(x, p);
      double fd = (lp - lm) / (2 * h), g = grads[i];
      double rel = fabs(fd - g) / fmax(fabs(fd), 1e-6);
      CHECK(isfinite(g) && rel <= 1e-5, "%s: %s[%llu]: gradient %.10g, finite difference %.10g (rel %.2e)",
            schedule, pt->state_name, (unsigned long long)(i - base), g, fd, rel);
      if (rel > worst_here) worst_here = rel;
      checked++;
    }
    if (worst_here > worst) worst = worst_here;
  }
  /* frozen parameters have no gradient and keep their value */
  x->v->write(x, fp, params, err, sizeof err);
  printf("%-28s %3d elements checked, max rel error %.2e\n", schedule, checked, worst);
  CHECK(checked > 0, "%s: nothing checked", schedule);
  free(params);
  free(grads);
  free(work);
  x->v->destroy(x);
  ddp_data_close(d);
  ddp_plan_free(p);
  ddp_schedule_free(s);
}

int main(void) {
  const char *tiny[] = {"model.d_model=32", "model.heads=2", "model.d_ff=48", "model.vocab=13",
                        "model.context=6", "data.global_batch=2", "optimizer.clip=0"};
  check("schedules/tiny.lua", tiny, 7);
  const char *naive[] = {"model.d_model=32", "model.heads=2", "model.d_ff=48", "model.vocab=13",
                         "model.context=6", "data.global_batch=2", "optimizer.clip=0", "model.attention=naive"};
  check("schedules/tiny.lua", naive, 8);
  check("schedules/toy.lua", NULL, 0);
  check("schedules/toy_tied.lua", NULL, 0);
  check("schedules/toy_layernorm.lua", NULL, 0);
  if (!check_failed) printf("whole-model gradients match finite differences\n");
  return check_report("test_model_gradcheck");
}

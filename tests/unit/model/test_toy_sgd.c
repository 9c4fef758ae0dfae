/* tests/unit/model/test_toy_sgd.c: one SGD step of the seeds' ToyModel computed by hand here (forward, MSE, backward,
 * update, in double) equals the reference executor's step on the compiled toy.lua plan; frozen
 * parameters (fc2.bias, no_grad_fixed_param) do not move. */
#include "check.h"
#include "compile.h"
#include "exec_ref.h"
#include "schedule.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[2048];

static float *read_param(ddp_exec *x, const ddp_plan *p, const char *name, int64_t expect) {
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (p->tensors[t].state_name && !strcmp(p->tensors[t].state_name, name) && (p->tensors[t].flags & TF_PARAM)) {
      if (!CHECK((int64_t)ddp_tensor_numel(&p->tensors[t]) == expect, "%s has %llu elements, expected %lld", name,
                 (unsigned long long)ddp_tensor_numel(&p->tensors[t]), (long long)expect))
        exit(check_report("test_toy_sgd"));
      float *v = malloc(p->tensors[t].bytes);
      x->v->read(x, (int32_t)t, v, err, sizeof err);
      return v;
    }
  CHECK(false, "parameter %s not in the plan", name);
  exit(check_report("test_toy_sgd"));
}

static void expect_close(const char *name, const float *got, const double *want, int n, double tol) {
  double worst = 0;
  int bad = -1;
  for (int i = 0; i < n && bad < 0; i++) {
    double d = fabs(got[i] - want[i]) / fmax(fabs(want[i]), 1e-3);
    if (!(d <= tol)) bad = i;
    else if (d > worst) worst = d;
  }
  if (!CHECK(bad < 0, "%s[%d]: executor %.8g, by hand %.8g", name, bad, bad < 0 ? 0 : (double)got[bad],
             bad < 0 ? 0 : want[bad]))
    return;
  printf("%-22s max rel diff %.2e\n", name, worst);
}

int main(void) {
  char path[2048];
  snprintf(path, sizeof path, "%s/schedules/toy.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".");
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, sizeof err);
  if (!CHECK(s, "%s", err)) return check_report("test_toy_sgd");
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  if (!CHECK(p, "%s", err)) return check_report("test_toy_sgd");
  ddp_data *d = ddp_data_open(p, (uint64_t)p->meta.data_seed, err, sizeof err);
  ddp_exec *x = ddp_exec_ref_new(p, 0, NULL, d, (uint64_t)p->meta.seed, err, sizeof err);
  if (!CHECK(!x->v->run(x, &p->ranks[0].init, 0, err, sizeof err), "%s", err)) return check_report("test_toy_sgd");
  enum { N = 20, I = 10, H1 = 10, H2 = 50, O = 5 };
  float *w1 = read_param(x, p, "fc1.weight", H1 * I), *w2 = read_param(x, p, "fc2.weight", H2 * H1);
  float *b2 = read_param(x, p, "fc2.bias", H2), *w3 = read_param(x, p, "fc3.weight", O * H2);
  float *fixed = read_param(x, p, "no_grad_fixed_param", 2);
  float xin[N * I], tgt[N * O];
  if (!CHECK(!ddp_data_fill(d, 0, 0, 1, xin, tgt, err, sizeof err), "%s", err)) return check_report("test_toy_sgd");
  /* forward */
  static double h1[N][H1], h2[N][H2], dy[N][O], dh2[N][H2], dh1[N][H1];
  static double g1[H1 * I], g2[H2 * H1], g3[O * H2];
  for (int n = 0; n < N; n++) {
    for (int j = 0; j < H1; j++) {
      double a = 0;
      for (int k = 0; k < I; k++) a += (double)xin[n * I + k] * w1[j * I + k];
      h1[n][j] = a > 0 ? a : 0;
    }
    for (int j = 0; j < H2; j++) {
      double a = b2[j];
      for (int k = 0; k < H1; k++) a += h1[n][k] * w2[j * H1 + k];
      h2[n][j] = a > 0 ? a : 0;
    }
    for (int j = 0; j < O; j++) {
      double a = 0;
      for (int k = 0; k < H2; k++) a += h2[n][k] * w3[j * H2 + k];
      dy[n][j] = 2.0 * (a - tgt[n * O + j]) / (N * O);
    }
  }
  /* backward */
  for (int n = 0; n < N; n++) {
    for (int k = 0; k < H2; k++) {
      double a = 0;
      for (int j = 0; j < O; j++) a += dy[n][j] * w3[j * H2 + k];
      dh2[n][k] = h2[n][k] > 0 ? a : 0;
    }
    for (int k = 0; k < H1; k++) {
      double a = 0;
      for (int j = 0; j < H2; j++) a += dh2[n][j] * w2[j * H1 + k];
      dh1[n][k] = h1[n][k] > 0 ? a : 0;
    }
    for (int j = 0; j < O; j++)
      for (int k = 0; k < H2; k++) g3[j * H2 + k] += dy[n][j] * h2[n][k];
    for (int j = 0; j < H2; j++)
      for (int k = 0; k < H1; k++) g2[j * H1 + k] += dh2[n][j] * h1[n][k];
    for (int j = 0; j < H1; j++)
      for (int k = 0; k < I; k++) g1[j * I + k] += dh1[n][j] * xin[n * I + k];
  }
  static double n1[H1 * I], n2[H2 * H1], n3[O * H2], nb2[H2], nfixed[2];
  for (int i = 0; i < H1 * I; i++) n1[i] = w1[i] - 0.1 * g1[i];
  for (int i = 0; i < H2 * H1; i++) n2[i] = w2[i] - 0.1 * g2[i];
  for (int i = 0; i < O * H2; i++) n3[i] = w3[i] - 0.1 * g3[i];
  for (int i = 0; i < H2; i++) nb2[i] = b2[i];
  nfixed[0] = fixed[0];
  nfixed[1] = fixed[1];
  CHECK(fixed[0] == 2.0f && fixed[1] == 2.0f, "no_grad_fixed_param starts at %g %g, expected 2 2", fixed[0],
        fixed[1]);
  if (!CHECK(!x->v->run(x, &p->ranks[0].step, 0, err, sizeof err), "%s", err)) return check_report("test_toy_sgd");
  float *a1 = read_param(x, p, "fc1.weight", H1 * I), *a2 = read_param(x, p, "fc2.weight", H2 * H1);
  float *ab2 = read_param(x, p, "fc2.bias", H2), *a3 = read_param(x, p, "fc3.weight", O * H2);
  float *afixed = read_param(x, p, "no_grad_fixed_param", 2);
  expect_close("fc1.weight", a1, n1, H1 * I, 1e-5);
  expect_close("fc2.weight", a2, n2, H2 * H1, 1e-5);
  expect_close("fc3.weight", a3, n3, O * H2, 1e-5);
  expect_close("fc2.bias (frozen)", ab2, nb2, H2, 0);
  expect_close("no_grad_fixed_param", afixed, nfixed, 2, 0);
  /* the step must have moved the trainable weights at all */
  int moved = 0;
  for (int i = 0; i < O * H2; i++) moved |= a3[i] != w3[i];
  CHECK(moved, "fc3.weight did not change");
  free(w1), free(w2), free(b2), free(w3), free(fixed), free(a1), free(a2), free(ab2), free(a3), free(afixed);
  x->v->destroy(x);
  ddp_data_close(d);
  ddp_plan_free(p);
  ddp_schedule_free(s);
  if (!check_failed) printf("one SGD step of ToyModel matches the hand computation\n");
  return check_report("test_toy_sgd");
}

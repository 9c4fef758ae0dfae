/* runtime/ref/ref_optimizer.c: SUMSQ, OPT_SCALARS, ADAMW, SGD (plan/ops.h).
 *   SUMSQ:       part[c] = sum of x^2 over chunk c (P chunks of ceil(n/P) elements)
 *   OPT_SCALARS: t += 1; lr_t for it = t-1 (constant: max; cosine: linear warmup it/warmup*max, then
 *                min + 0.5*(1+cos(pi*(it-warmup)/(cycle-warmup)))*(max-min) up to it = cycle, then min);
 *                norm = sqrt(sum of the SUMSQ partials) (0 without them); clip scale = norm > max_norm ?
 *                max_norm/(norm+1e-6) : 1 when clipping, else 1.
 *   ADAMW (cs336): g = grad*clip; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *                alpha_t = lr sqrt(1-b2^t)/(1-b1^t); p -= alpha_t m/(sqrt(v)+eps); p -= lr wd p; copy = p.
 *   SGD:         p -= lr * grad * clip; copy = p.
 * Everything in double, stored in each buffer's dtype; the copy is made from the stored parameter, so it
 * is exactly the master value rounded to the copy's dtype. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>

void ref_sumsq(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[0], P = ref_parts(a->i[1]);
  for (int64_t c = 0; c < P; c++) {
    int64_t lo, hi;
    ref_chunk(n, P, c, &lo, &hi);
    double s = 0.0;
    for (int64_t i = lo; i < hi; i++) {
      const double x = ddp_load(a->p[0], dt[0], i);
      s += x * x;
    }
    ddp_store(a->p[1], dt[1], c, s);
  }
}

static double cosine_lr(double it, double warmup, double cycle, double lr_max, double lr_min) {
  if (it < warmup) return it / warmup * lr_max;
  if (it <= cycle) {
    const double frac = cycle > warmup ? (it - warmup) / (cycle - warmup) : 0.0;
    return lr_min + 0.5 * (1.0 + cos(3.14159265358979323846 * frac)) * (lr_max - lr_min);
  }
  return lr_min;
}

void ref_opt_scalars(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t P = a->i[0];
  void *sc = a->p[1];
  const double t = ddp_load(sc, dt[1], SCALAR_STEP) + 1.0;
  const double lr = a->i[1] == 1 ? cosine_lr(t - 1.0, (double)a->i[2], (double)a->i[3], a->f[0], a->f[1])
                                 : (double)a->f[0];
  double sumsq = 0.0;
  if (a->p[0])
    for (int64_t c = 0; c < P; c++) sumsq += ddp_load(a->p[0], dt[0], c);
  const double norm = sqrt(sumsq), max_norm = a->f[2];
  const double clip = a->i[4] && a->p[0] && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
  ddp_store(sc, dt[1], SCALAR_STEP, t);
  ddp_store(sc, dt[1], SCALAR_LR, lr);
  ddp_store(sc, dt[1], SCALAR_GRAD_NORM, norm);
  ddp_store(sc, dt[1], SCALAR_CLIP_SCALE, clip);
}

void ref_adamw(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[0];
  const double b1 = a->f[0], b2 = a->f[1], eps = a->f[2], wd = a->f[3];
  const double t = ddp_load(a->p[5], dt[5], SCALAR_STEP), lr = ddp_load(a->p[5], dt[5], SCALAR_LR);
  const double clip = ddp_load(a->p[5], dt[5], SCALAR_CLIP_SCALE);
  const double alpha = lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t));
  for (int64_t i = 0; i < n; i++) {
    const double g = ddp_load(a->p[1], dt[1], i) * clip;
    const double m = b1 * ddp_load(a->p[2], dt[2], i) + (1.0 - b1) * g;
    const double v = b2 * ddp_load(a->p[3], dt[3], i) + (1.0 - b2) * g * g;
    double p = ddp_load(a->p[0], dt[0], i);
    p -= alpha * m / (sqrt(v) + eps);
    p -= lr * wd * p;
    ddp_store(a->p[2], dt[2], i, m);
    ddp_store(a->p[3], dt[3], i, v);
    ddp_store(a->p[0], dt[0], i, p);
    if (a->p[4]) ddp_store(a->p[4], dt[4], i, ddp_load(a->p[0], dt[0], i));
  }
}

void ref_sgd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[0];
  const double lr = ddp_load(a->p[3], dt[3], SCALAR_LR), clip = ddp_load(a->p[3], dt[3], SCALAR_CLIP_SCALE);
  for (int64_t i = 0; i < n; i++) {
    const double p = ddp_load(a->p[0], dt[0], i) - lr * ddp_load(a->p[1], dt[1], i) * clip;
    ddp_store(a->p[0], dt[0], i, p);
    if (a->p[2]) ddp_store(a->p[2], dt[2], i, ddp_load(a->p[0], dt[0], i));
  }
}

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
  const int64_t n = a->i[SUMSQ_I_N], P = ref_parts(a->i[SUMSQ_I_P]);
  for (int64_t c = 0; c < P; c++) {
    int64_t lo, hi;
    ref_chunk(n, P, c, &lo, &hi);
    double s = 0.0;
    for (int64_t i = lo; i < hi; i++) {
      const double x = ddp_load(a->p[SUMSQ_P_X], dt[SUMSQ_P_X], i);
      s += x * x;
    }
    ddp_store(a->p[SUMSQ_P_PART], dt[SUMSQ_P_PART], c, s);
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
  const int64_t P = a->i[OPT_SCALARS_I_P];
  void *sc = a->p[OPT_SCALARS_P_SCALARS];
  const double t = ddp_load(sc, dt[OPT_SCALARS_P_SCALARS], SCALAR_STEP) + 1.0;
  const double lr = a->i[OPT_SCALARS_I_SCHEDULE] == 1
                        ? cosine_lr(t - 1.0, (double)a->i[OPT_SCALARS_I_WARMUP], (double)a->i[OPT_SCALARS_I_CYCLE],
                                    a->f[OPT_SCALARS_F_LR_MAX], a->f[OPT_SCALARS_F_LR_MIN])
                        : (double)a->f[OPT_SCALARS_F_LR_MAX];
  double sumsq = 0.0;
  if (a->p[OPT_SCALARS_P_PART])
    for (int64_t c = 0; c < P; c++) sumsq += ddp_load(a->p[OPT_SCALARS_P_PART], dt[OPT_SCALARS_P_PART], c);
  const double norm = sqrt(sumsq), max_norm = a->f[OPT_SCALARS_F_MAX_NORM];
  const double clip =
      a->i[OPT_SCALARS_I_CLIP] && a->p[OPT_SCALARS_P_PART] && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
  ddp_store(sc, dt[OPT_SCALARS_P_SCALARS], SCALAR_STEP, t);
  ddp_store(sc, dt[OPT_SCALARS_P_SCALARS], SCALAR_LR, lr);
  ddp_store(sc, dt[OPT_SCALARS_P_SCALARS], SCALAR_GRAD_NORM, norm);
  ddp_store(sc, dt[OPT_SCALARS_P_SCALARS], SCALAR_CLIP_SCALE, clip);
}

void ref_adamw(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[ADAMW_I_N];
  const double b1 = a->f[ADAMW_F_B1], b2 = a->f[ADAMW_F_B2], eps = a->f[ADAMW_F_EPS], wd = a->f[ADAMW_F_WD];
  const double t = ddp_load(a->p[ADAMW_P_SCALARS], dt[ADAMW_P_SCALARS], SCALAR_STEP),
               lr = ddp_load(a->p[ADAMW_P_SCALARS], dt[ADAMW_P_SCALARS], SCALAR_LR);
  const double clip = ddp_load(a->p[ADAMW_P_SCALARS], dt[ADAMW_P_SCALARS], SCALAR_CLIP_SCALE);
  const double alpha = lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t));
  for (int64_t i = 0; i < n; i++) {
    const double g = ddp_load(a->p[ADAMW_P_GRAD], dt[ADAMW_P_GRAD], i) * clip;
    const double m = b1 * ddp_load(a->p[ADAMW_P_M], dt[ADAMW_P_M], i) + (1.0 - b1) * g;
    const double v = b2 * ddp_load(a->p[ADAMW_P_V], dt[ADAMW_P_V], i) + (1.0 - b2) * g * g;
    double p = ddp_load(a->p[ADAMW_P_PARAM], dt[ADAMW_P_PARAM], i);
    p -= alpha * m / (sqrt(v) + eps);
    p -= lr * wd * p;
    ddp_store(a->p[ADAMW_P_M], dt[ADAMW_P_M], i, m);
    ddp_store(a->p[ADAMW_P_V], dt[ADAMW_P_V], i, v);
    ddp_store(a->p[ADAMW_P_PARAM], dt[ADAMW_P_PARAM], i, p);
    if (a->p[ADAMW_P_COPY])
      ddp_store(a->p[ADAMW_P_COPY], dt[ADAMW_P_COPY], i, ddp_load(a->p[ADAMW_P_PARAM], dt[ADAMW_P_PARAM], i));
  }
}

void ref_sgd(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[SGD_I_N];
  const double lr = ddp_load(a->p[SGD_P_SCALARS], dt[SGD_P_SCALARS], SCALAR_LR),
               clip = ddp_load(a->p[SGD_P_SCALARS], dt[SGD_P_SCALARS], SCALAR_CLIP_SCALE);
  for (int64_t i = 0; i < n; i++) {
    const double p =
        ddp_load(a->p[SGD_P_PARAM], dt[SGD_P_PARAM], i) - lr * ddp_load(a->p[SGD_P_GRAD], dt[SGD_P_GRAD], i) * clip;
    ddp_store(a->p[SGD_P_PARAM], dt[SGD_P_PARAM], i, p);
    if (a->p[SGD_P_COPY])
      ddp_store(a->p[SGD_P_COPY], dt[SGD_P_COPY], i, ddp_load(a->p[SGD_P_PARAM], dt[SGD_P_PARAM], i));
  }
}

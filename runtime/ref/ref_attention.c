/* runtime/ref/ref_attention.c: ATTN_FWD, ATTN_BWD_PREP, ATTN_BWD_DKV, ATTN_BWD_DQ, and the fused backward's
 * ATTN_BWD_FUSED (dk, dv, and dq added into the f32 tile accumulator) and ATTN_DQ_STORE (plan/ops.h), exact
 * softmax attention per (b, h), element (b,t,h,j) of q at q[(b*T+t)*sq + h*Dh + j] (k, v, o likewise with
 * their strides; do and dq use o's and q's strides, dk and dv k's and v's).
 *   forward:  s_tj = scale * q_t.k_j over the keys j visible to t (j <= t when causal),
 *             lse_t = max_j s_tj + log sum_j exp(s_tj - max), o_t = sum_j exp(s_tj - lse_t) v_j
 *   backward: P_tj = exp(scale * q_t.k_j - lse_t) (recomputed from the stored lse), delta_t = do_t.o_t,
 *             dV = P^T dO, dP = dO V^T, dS = P * (dP - delta), dQ = dS K * scale, dK = dS^T Q * scale.
 * Memory: one (b, h) slice of the operands in double scratch ([T, Dh] each) and one row of scores. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>
#include <stdlib.h>

static int64_t head_off(const ref_attn_dims *d, int64_t stride, int64_t b, int64_t t, int64_t h) {
  return (b * d->T + t) * stride + h * d->Dh;
}

/* dst[t*Dh + j] = element (b, t, h, j) of p. */
static void load_head(const ref_attn_dims *d, const void *p, int dt, int64_t stride, int64_t b, int64_t h,
                      double *dst) {
  for (int64_t t = 0; t < d->T; t++) ref_load_row(p, dt, head_off(d, stride, b, t, h), 1, d->Dh, dst + t * d->Dh);
}

static void store_head(const ref_attn_dims *d, void *p, int dt, int64_t stride, int64_t b, int64_t h,
                       const double *src) {
  for (int64_t t = 0; t < d->T; t++) ref_store_row(p, dt, head_off(d, stride, b, t, h), d->Dh, src + t * d->Dh, 0);
}

static double dot(const double *x, const double *y, int64_t n) {
  double s = 0.0;
  for (int64_t j = 0; j < n; j++) s += x[j] * y[j];
  return s;
}

static int64_t visible_keys(const ref_attn_dims *d, int64_t t) { return d->causal ? t + 1 : d->T; }

void ref_attn_fwd(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  const size_t td = (size_t)(d.T * d.Dh);
  double *q = ref_alloc(td, sizeof *q), *k = ref_alloc(td, sizeof *k), *v = ref_alloc(td, sizeof *v);
  double *o = ref_alloc(td, sizeof *o), *s = ref_alloc((size_t)d.T, sizeof *s);
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t h = 0; h < d.H; h++) {
      load_head(&d, a->p[ATTN_P_Q], dt[ATTN_P_Q], d.sq, b, h, q);
      load_head(&d, a->p[ATTN_P_K], dt[ATTN_P_K], d.sk, b, h, k);
      load_head(&d, a->p[ATTN_P_V], dt[ATTN_P_V], d.sv, b, h, v);
      for (int64_t t = 0; t < d.T; t++) {
        const int64_t nk = visible_keys(&d, t);
        const double *qt = q + t * d.Dh;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < nk; j++) {
          s[j] = d.scale * dot(qt, k + j * d.Dh, d.Dh);
          mx = s[j] > mx ? s[j] : mx;
        }
        for (int64_t j = 0; j < nk; j++) sum += exp(s[j] - mx);
        const double lse = mx + log(sum);
        double *ot = o + t * d.Dh;
        for (int64_t i = 0; i < d.Dh; i++) ot[i] = 0.0;
        for (int64_t j = 0; j < nk; j++) {
          const double p = exp(s[j] - lse);
          const double *vj = v + j * d.Dh;
          for (int64_t i = 0; i < d.Dh; i++) ot[i] += p * vj[i];
        }
        if (a->p[ATTN_P_LSE]) ddp_store(a->p[ATTN_P_LSE], dt[ATTN_P_LSE], (b * d.H + h) * d.T + t, lse);
      }
      store_head(&d, a->p[ATTN_P_O], dt[ATTN_P_O], d.so, b, h, o);
    }
  free(q);
  free(k);
  free(v);
  free(o);
  free(s);
}

/* ATTN_BWD_FUSED's dq accumulator (plan/op_slots.h): index of element (b, t, h, j), and the element count. */
static int64_t dq_acc_cols(const ref_attn_dims *d) { return (d->Dh + 63) / 64 * 64; }
static int64_t dq_acc_index(const ref_attn_dims *d, int64_t b, int64_t t, int64_t h, int64_t j) {
  const int64_t tiles = (d->T + 63) / 64, chunks = dq_acc_cols(d) / 8;
  return ((((b * d->H + h) * tiles + t / 64) * chunks + j / 8) * 64 + t % 64) * 8 + j % 8;
}

void ref_attn_bwd_prep(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  if (a->p[ATTN_BWD_PREP_P_DQACC]) {
    const int64_t n = d.B * d.H * ((d.T + 63) / 64 * 64) * dq_acc_cols(&d);
    for (int64_t i = 0; i < n; i++) ddp_store(a->p[ATTN_BWD_PREP_P_DQACC], dt[ATTN_BWD_PREP_P_DQACC], i, 0.0);
  }
  double *o = ref_alloc((size_t)d.Dh, sizeof *o), *g = ref_alloc((size_t)d.Dh, sizeof *g);
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t h = 0; h < d.H; h++)
      for (int64_t t = 0; t < d.T; t++) {
        ref_load_row(a->p[ATTN_BWD_PREP_P_O], dt[ATTN_BWD_PREP_P_O], head_off(&d, d.so, b, t, h), 1, d.Dh, o);
        ref_load_row(a->p[ATTN_BWD_PREP_P_DO], dt[ATTN_BWD_PREP_P_DO], head_off(&d, d.so, b, t, h), 1, d.Dh, g);
        ddp_store(a->p[ATTN_BWD_PREP_P_DELTA], dt[ATTN_BWD_PREP_P_DELTA], (b * d.H + h) * d.T + t, dot(o, g, d.Dh));
      }
  free(o);
  free(g);
}

/* The shared backward sweep over one (b, h): accumulates dq (when dq != NULL) and dk, dv (when dk != NULL)
 * in double; rows t in order, keys j in order. */
static void bwd_head(const ddp_kargs *a, const uint8_t *dt, const ref_attn_dims *d, int64_t b, int64_t h,
                     double *const buf[6], double *dq, double *dk, double *dv) {
  double *q = buf[0], *k = buf[1], *v = buf[2], *go = buf[3];
  load_head(d, a->p[ATTN_P_Q], dt[ATTN_P_Q], d->sq, b, h, q);
  load_head(d, a->p[ATTN_P_K], dt[ATTN_P_K], d->sk, b, h, k);
  load_head(d, a->p[ATTN_P_V], dt[ATTN_P_V], d->sv, b, h, v);
  load_head(d, a->p[ATTN_P_DO], dt[ATTN_P_DO], d->so, b, h, go);
  const size_t td = (size_t)(d->T * d->Dh);
  for (size_t i = 0; i < td; i++) {
    if (dq) dq[i] = 0.0;
    if (dk) dk[i] = 0.0, dv[i] = 0.0;
  }
  for (int64_t t = 0; t < d->T; t++) {
    const int64_t row = (b * d->H + h) * d->T + t, nk = visible_keys(d, t);
    const double lse = ddp_load(a->p[ATTN_P_LSE], dt[ATTN_P_LSE], row),
                 delta = ddp_load(a->p[ATTN_P_DELTA], dt[ATTN_P_DELTA], row);
    const double *qt = q + t * d->Dh, *got = go + t * d->Dh;
    for (int64_t j = 0; j < nk; j++) {
      const double *kj = k + j * d->Dh;
      const double p = exp(d->scale * dot(qt, kj, d->Dh) - lse);
      const double ds = p * (dot(got, v + j * d->Dh, d->Dh) - delta) * d->scale;
      if (dq)
        for (int64_t i = 0; i < d->Dh; i++) dq[t * d->Dh + i] += ds * kj[i];
      if (dk)
        for (int64_t i = 0; i < d->Dh; i++) {
          dk[j * d->Dh + i] += ds * qt[i];
          dv[j * d->Dh + i] += p * got[i];
        }
    }
  }
}

void ref_attn_bwd_dkv(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  const size_t td = (size_t)(d.T * d.Dh);
  double *buf[6];
  for (int i = 0; i < 6; i++) buf[i] = ref_alloc(td, sizeof(double));
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t h = 0; h < d.H; h++) {
      bwd_head(a, dt, &d, b, h, buf, NULL, buf[4], buf[5]);
      store_head(&d, a->p[ATTN_P_DK], dt[ATTN_P_DK], d.sk, b, h, buf[4]);
      store_head(&d, a->p[ATTN_P_DV], dt[ATTN_P_DV], d.sv, b, h, buf[5]);
    }
  for (int i = 0; i < 6; i++) free(buf[i]);
}

void ref_attn_bwd_dq(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  const size_t td = (size_t)(d.T * d.Dh);
  double *buf[6];
  for (int i = 0; i < 6; i++) buf[i] = ref_alloc(td, sizeof(double));
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t h = 0; h < d.H; h++) {
      bwd_head(a, dt, &d, b, h, buf, buf[4], NULL, NULL);
      store_head(&d, a->p[ATTN_P_DQ], dt[ATTN_P_DQ], d.sq, b, h, buf[4]);
    }
  for (int i = 0; i < 6; i++) free(buf[i]);
}

/* dk, dv as ATTN_BWD_DKV; dq (double, all keys, scale included) added into dq_acc's f32 elements once. */
void ref_attn_bwd_fused(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  const size_t td = (size_t)(d.T * d.Dh);
  double *buf[7];
  for (int i = 0; i < 7; i++) buf[i] = ref_alloc(td, sizeof(double));
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t h = 0; h < d.H; h++) {
      bwd_head(a, dt, &d, b, h, buf, buf[6], buf[4], buf[5]);
      store_head(&d, a->p[ATTN_P_DK], dt[ATTN_P_DK], d.sk, b, h, buf[4]);
      store_head(&d, a->p[ATTN_P_DV], dt[ATTN_P_DV], d.sv, b, h, buf[5]);
      for (int64_t t = 0; t < d.T; t++)
        for (int64_t j = 0; j < d.Dh; j++) {
          const int64_t x = dq_acc_index(&d, b, t, h, j);
          ddp_store(a->p[ATTN_P_DQACC], dt[ATTN_P_DQACC], x,
                    ddp_load(a->p[ATTN_P_DQACC], dt[ATTN_P_DQACC], x) + buf[6][t * d.Dh + j]);
        }
    }
  for (int i = 0; i < 7; i++) free(buf[i]);
}

void ref_attn_dq_store(const ddp_kargs *a, const uint8_t *dt) {
  const ref_attn_dims d = ref_attn_dims_of(a);
  for (int64_t b = 0; b < d.B; b++)
    for (int64_t t = 0; t < d.T; t++)
      for (int64_t h = 0; h < d.H; h++)
        for (int64_t j = 0; j < d.Dh; j++)
          ddp_store(a->p[ATTN_P_DQ], dt[ATTN_P_DQ], head_off(&d, d.sq, b, t, h) + j,
                    ddp_load(a->p[ATTN_P_DQACC], dt[ATTN_P_DQACC], dq_acc_index(&d, b, t, h, j)));
}

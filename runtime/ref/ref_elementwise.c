/* runtime/ref/ref_elementwise.c: the elementwise ops of plan/ops.h: CAST (out = in), ADD (out = a + b),
 * SCALE (x *= s), BIAS_ADD (y[n,m] += b[m]), RELU_FWD (y = max(x, 0), NaN kept), RELU_BWD
 * (dx (+)= dy where y > 0, else 0), SUM_CHUNKS (out[i] = scale * sum_w in[w*n + i]). Outputs may alias
 * inputs element for element (SUM_CHUNKS: out must not overlap in). SUM_CHUNKS alone computes in f32, not
 * double: its sum is specified in f32 in chunk order, the GPU kernel's, so both give the same bits. */
#include "ref_ops.h"
#include "ref_util.h"
#include <math.h>

void ref_cast(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[CAST_I_N]; i++)
    ddp_store(a->p[CAST_P_OUT], dt[CAST_P_OUT], i, ddp_load(a->p[CAST_P_IN], dt[CAST_P_IN], i));
}

void ref_add(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[ADD_I_N]; i++)
    ddp_store(a->p[ADD_P_OUT], dt[ADD_P_OUT], i,
              ddp_load(a->p[ADD_P_A], dt[ADD_P_A], i) + ddp_load(a->p[ADD_P_B], dt[ADD_P_B], i));
}

void ref_scale(const ddp_kargs *a, const uint8_t *dt) {
  const double s = a->f[SCALE_F_S];
  for (int64_t i = 0; i < a->i[SCALE_I_N]; i++)
    ddp_store(a->p[SCALE_P_X], dt[SCALE_P_X], i, s * ddp_load(a->p[SCALE_P_X], dt[SCALE_P_X], i));
}

void ref_bias_add(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t N = a->i[BIAS_ADD_I_N], M = a->i[BIAS_ADD_I_M];
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      ddp_store(a->p[BIAS_ADD_P_Y], dt[BIAS_ADD_P_Y], n * M + m,
                ddp_load(a->p[BIAS_ADD_P_Y], dt[BIAS_ADD_P_Y], n * M + m) +
                    ddp_load(a->p[BIAS_ADD_P_B], dt[BIAS_ADD_P_B], m));
}

void ref_relu_fwd(const ddp_kargs *a, const uint8_t *dt) {
  for (int64_t i = 0; i < a->i[RELU_FWD_I_N]; i++) {
    const double x = ddp_load(a->p[RELU_FWD_P_X], dt[RELU_FWD_P_X], i);
    ddp_store(a->p[RELU_FWD_P_Y], dt[RELU_FWD_P_Y], i, x > 0.0 || isnan(x) ? x : 0.0);
  }
}

void ref_relu_bwd(const ddp_kargs *a, const uint8_t *dt) {
  const int acc = a->i[RELU_BWD_I_ACC] != 0;
  for (int64_t i = 0; i < a->i[RELU_BWD_I_N]; i++) {
    const double g = ddp_load(a->p[RELU_BWD_P_Y], dt[RELU_BWD_P_Y], i) > 0.0
                         ? ddp_load(a->p[RELU_BWD_P_DY], dt[RELU_BWD_P_DY], i)
                         : 0.0;
    ddp_store(a->p[RELU_BWD_P_DX], dt[RELU_BWD_P_DX], i,
              acc ? ddp_load(a->p[RELU_BWD_P_DX], dt[RELU_BWD_P_DX], i) + g : g);
  }
}

void ref_sum_chunks(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t n = a->i[SUM_CHUNKS_I_N], P = a->i[SUM_CHUNKS_I_P];
  const void *in = a->p[SUM_CHUNKS_P_IN];
  const int dt_in = dt[SUM_CHUNKS_P_IN];
  const float scale = a->f[SUM_CHUNKS_F_SCALE];
  for (int64_t i = 0; i < n; i++) {
    float s = (float)ddp_load(in, dt_in, i);
    for (int64_t w = 1; w < P; w++) s += (float)ddp_load(in, dt_in, w * n + i); /* w in order, in f32 */
    s *= scale;
    ddp_store(a->p[SUM_CHUNKS_P_OUT], dt[SUM_CHUNKS_P_OUT], i, s);
  }
}

/* runtime/ref/ref_gemm.c: the reference GEMM of I_GEMM (plan/instr.h), row-major
 *   D[m,n] = alpha * sum_k op(A)[m,k] op(B)[k,n] + beta * C[m,n]   for each batch entry,
 * op(A)[m,k] = transA ? A[k*lda + m] : A[m*lda + k], op(B)[k,n] = transB ? B[n*ldb + k] : B[k*ldb + n],
 * C[m*ldc + n] read only when beta != 0 (C may alias D), D[m*ldd + n]; any mix of f32/bf16/f64 operands.
 * Every sum runs in double over k = 0..K-1 in order (f32 and bf16 products are exact in double), so the
 * result does not depend on the blocking. Blocking for speed: a [K, nb] panel of op(B) converted to double
 * stays in cache while rows of op(A) stream by four at a time; the inner loop runs over contiguous n. */
#include "ref_ops.h"
#include "ref_util.h"
#include <stdlib.h>

enum { GEMM_MB = 4, GEMM_PANEL_DOUBLES = 32768 };

typedef struct gemm_operand {
  const void *p;
  int dt;
  int64_t off, ld;
  int trans;
} gemm_operand;

/* panel[k*nb + j] = op(B)[k, n0+j]; brow: K doubles of scratch. */
static void pack_b(const gemm_operand *b, int64_t K, int64_t n0, int64_t nb, double *panel, double *brow) {
  if (!b->trans) {
    for (int64_t k = 0; k < K; k++) ref_load_row(b->p, b->dt, b->off + k * b->ld + n0, 1, nb, panel + k * nb);
    return;
  }
  for (int64_t j = 0; j < nb; j++) {
    ref_load_row(b->p, b->dt, b->off + (n0 + j) * b->ld, 1, K, brow);
    for (int64_t k = 0; k < K; k++) panel[k * nb + j] = brow[k];
  }
}

/* dst[k] = op(A)[m, k]. */
static void load_a(const gemm_operand *a, int64_t K, int64_t m, double *dst) {
  if (a->trans)
    ref_load_row(a->p, a->dt, a->off + m, a->ld, K, dst);
  else
    ref_load_row(a->p, a->dt, a->off + m * a->ld, 1, K, dst);
}

/* acc[i*nb + j] = sum_k arows[i*K + k] * panel[k*nb + j] for i < 4. */
static void kernel4(int64_t K, int64_t nb, const double *restrict arows, const double *restrict panel,
                    double *restrict acc) {
  double *restrict c0 = acc, *restrict c1 = acc + nb, *restrict c2 = acc + 2 * nb, *restrict c3 = acc + 3 * nb;
  for (int64_t j = 0; j < 4 * nb; j++) acc[j] = 0.0;
  for (int64_t k = 0; k < K; k++) {
    const double a0 = arows[k], a1 = arows[K + k], a2 = arows[2 * K + k], a3 = arows[3 * K + k];
    const double *restrict b = panel + k * nb;
    for (int64_t j = 0; j < nb; j++) {
      const double bj = b[j];
      c0[j] += a0 * bj;
      c1[j] += a1 * bj;
      c2[j] += a2 * bj;
      c3[j] += a3 * bj;
    }
  }
}

static void kernel1(int64_t K, int64_t nb, const double *restrict arow, const double *restrict panel,
                    double *restrict acc) {
  for (int64_t j = 0; j < nb; j++) acc[j] = 0.0;
  for (int64_t k = 0; k < K; k++) {
    const double a0 = arow[k];
    const double *restrict b = panel + k * nb;
    for (int64_t j = 0; j < nb; j++) acc[j] += a0 * b[j];
  }
}

void ref_gemm(const ddp_kargs *a, const uint8_t *dt) {
  const int64_t M = a->i[GEMM_I_M], N = a->i[GEMM_I_N], K = a->i[GEMM_I_K],
                batch = a->i[GEMM_I_BATCH] < 1 ? 1 : a->i[GEMM_I_BATCH];
  const double alpha = a->f[GEMM_F_ALPHA], beta = a->f[GEMM_F_BETA];
  if (M <= 0 || N <= 0) return;
  int64_t NB = GEMM_PANEL_DOUBLES / (K > 0 ? K : 1);
  NB = NB < 16 ? 16 : NB > 512 ? 512 : NB;
  NB = NB > N ? N : NB;
  double *panel = ref_alloc((size_t)(K * NB) + 1, sizeof *panel);
  double *arows = ref_alloc((size_t)(GEMM_MB * K) + 1, sizeof *arows);
  double *brow = ref_alloc((size_t)K + 1, sizeof *brow);
  double *acc = ref_alloc((size_t)(GEMM_MB * NB), sizeof *acc);
  double *crow = ref_alloc((size_t)NB, sizeof *crow);
  for (int64_t bt = 0; bt < batch; bt++) {
    const gemm_operand A = {a->p[GEMM_P_A], dt[GEMM_P_A], bt * a->i[GEMM_I_STRIDE_A], a->i[GEMM_I_LDA],
                            a->i[GEMM_I_TRANS_A] != 0};
    const gemm_operand B = {a->p[GEMM_P_B], dt[GEMM_P_B], bt * a->i[GEMM_I_STRIDE_B], a->i[GEMM_I_LDB],
                            a->i[GEMM_I_TRANS_B] != 0};
    const int64_t coff = bt * a->i[GEMM_I_STRIDE_C], doff = bt * a->i[GEMM_I_STRIDE_D];
    for (int64_t n0 = 0; n0 < N; n0 += NB) {
      const int64_t nb = N - n0 < NB ? N - n0 : NB;
      pack_b(&B, K, n0, nb, panel, brow);
      for (int64_t m0 = 0; m0 < M; m0 += GEMM_MB) {
        const int64_t mb = M - m0 < GEMM_MB ? M - m0 : GEMM_MB;
        for (int64_t i = 0; i < mb; i++) load_a(&A, K, m0 + i, arows + i * K);
        if (mb == GEMM_MB)
          kernel4(K, nb, arows, panel, acc);
        else
          for (int64_t i = 0; i < mb; i++) kernel1(K, nb, arows + i * K, panel, acc + i * nb);
        for (int64_t i = 0; i < mb; i++) {
          double *row = acc + i * nb;
          for (int64_t j = 0; j < nb; j++) row[j] *= alpha;
          if (beta != 0.0) {
            ref_load_row(a->p[GEMM_P_C], dt[GEMM_P_C], coff + (m0 + i) * a->i[GEMM_I_LDC] + n0, 1, nb, crow);
            for (int64_t j = 0; j < nb; j++) row[j] += beta * crow[j];
          }
          ref_store_row(a->p[GEMM_P_D], dt[GEMM_P_D], doff + (m0 + i) * a->i[GEMM_I_LDD] + n0, nb, row, 0);
        }
      }
    }
  }
  free(panel);
  free(arows);
  free(brow);
  free(acc);
  free(crow);
}

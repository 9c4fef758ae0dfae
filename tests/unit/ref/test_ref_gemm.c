/* tests/unit/ref/test_ref_gemm.c: the reference GEMM (I_GEMM layout, plan/instr.h): every transpose combination
 * with padded leading dimensions and beta = 1 accumulation against a direct triple loop (bit-identical:
 * both sum k in order in double) and against finite differences of L = sum(D * R) for A, B and C; C
 * aliasing D; batches with strides; mixed f32/bf16/f64 operands; panels and row blocks with ragged
 * edges; and the single-thread f32 throughput at 256^3 (printed, no threshold). */
#include "gradcheck.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gemm_case {
  int64_t M, N, K, ta, tb, lda, ldb, ldc, ldd, batch, sa, sb, sc, sd;
  double alpha, beta;
} gemm_case;

static void gemm(const gemm_case *g, const void *A, int da, const void *B, int db, const void *C, int dc, void *D,
                 int dd) {
  gc_call k;
  gc_call_init(&k);
  k.a.p[0] = (void *)A, k.a.p[1] = (void *)B, k.a.p[2] = (void *)C, k.a.p[3] = D;
  k.dt[0] = (uint8_t)da, k.dt[1] = (uint8_t)db, k.dt[2] = (uint8_t)dc, k.dt[3] = (uint8_t)dd;
  const int64_t ints[14] = {g->M, g->N, g->K, g->ta, g->tb, g->lda, g->ldb, g->ldc, g->ldd, g->batch,
                            g->sa, g->sb, g->sc, g->sd};
  memcpy(k.a.i, ints, sizeof ints);
  k.a.f[0] = (float)g->alpha, k.a.f[1] = (float)g->beta;
  ref_gemm(&k.a, k.dt);
}

/* Storage sizes of one batch entry of each operand. */
static int64_t rows_a(const gemm_case *g) { return g->ta ? g->K : g->M; }
static int64_t rows_b(const gemm_case *g) { return g->tb ? g->N : g->K; }
static int64_t size_a(const gemm_case *g) { return (g->batch - 1) * g->sa + rows_a(g) * g->lda; }
static int64_t size_b(const gemm_case *g) { return (g->batch - 1) * g->sb + rows_b(g) * g->ldb; }
static int64_t size_c(const gemm_case *g) { return (g->batch - 1) * g->sc + g->M * g->ldc; }
static int64_t size_d(const gemm_case *g) { return (g->batch - 1) * g->sd + g->M * g->ldd; }

/* The direct definition, in double, k in order; untouched padding of D keeps its value. */
static void gemm_direct(const gemm_case *g, const double *A, const double *B, const double *C, double *D) {
  const double alpha = (float)g->alpha, beta = (float)g->beta;
  for (int64_t b = 0; b < g->batch; b++)
    for (int64_t m = 0; m < g->M; m++)
      for (int64_t n = 0; n < g->N; n++) {
        double s = 0;
        for (int64_t k = 0; k < g->K; k++) {
          const double a = g->ta ? A[b * g->sa + k * g->lda + m] : A[b * g->sa + m * g->lda + k];
          const double x = g->tb ? B[b * g->sb + n * g->ldb + k] : B[b * g->sb + k * g->ldb + n];
          s += a * x;
        }
        s *= alpha;
        if (beta != 0) s += beta * C[b * g->sc + m * g->ldc + n];
        D[b * g->sd + m * g->ldd + n] = s;
      }
}

typedef struct gemm_ctx {
  const gemm_case *g;
  double *A, *B, *C, *D, *R;
} gemm_ctx;

static double gemm_loss(void *ctx) {
  gemm_ctx *c = ctx;
  memset(c->D, 0, (size_t)size_d(c->g) * sizeof(double));
  gemm(c->g, c->A, DT_F64, c->B, DT_F64, c->C, DT_F64, c->D, DT_F64);
  return gc_dot(c->D, c->R, (size_t)size_d(c->g));
}

static void test_transposes(int ta, int tb, uint64_t seed) {
  char name[64];
  snprintf(name, sizeof name, "gemm transA=%d transB=%d beta=1", ta, tb);
  gc_rng r;
  gc_case(&r, name, seed);
  const int64_t M = 5, N = 7, K = 6;
  gemm_case g = {M, N, K, ta, tb, (ta ? M : K) + 2, (tb ? K : N) + 3, N + 1, N + 4, 1, 0, 0, 0, 0, 0.75, 1.0};
  gemm_ctx c = {&g, gc_rand(&r, size_a(&g), -1, 1), gc_rand(&r, size_b(&g), -1, 1), gc_rand(&r, size_c(&g), -1, 1),
                gc_zeros(size_d(&g)), gc_rand(&r, size_d(&g), -1, 1)};
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = N; n < g.ldd; n++) c.R[m * g.ldd + n] = 0; /* D's padding is not an output */
  double *want = gc_zeros(size_d(&g));
  gemm_direct(&g, c.A, c.B, c.C, want);
  gemm_loss(&c);
  gc_expect_bits("D vs direct triple loop (bit-identical)", c.D, want, (size_t)size_d(&g) * sizeof(double));

  /* Analytic gradients with the GEMM itself: dA = alpha R op(B)^T, dB = alpha op(A)^T R (in storage
   * layout), dC = beta R. */
  double *dA = gc_zeros(size_a(&g)), *dB = gc_zeros(size_b(&g)), *dC = gc_zeros(size_c(&g));
  gemm_case ga = ta ? (gemm_case){K, M, N, tb, 1, g.ldb, g.ldd, 0, g.lda, 1, 0, 0, 0, 0, g.alpha, 0}
                    : (gemm_case){M, K, N, 0, !tb, g.ldd, g.ldb, 0, g.lda, 1, 0, 0, 0, 0, g.alpha, 0};
  if (ta)
    gemm(&ga, c.B, DT_F64, c.R, DT_F64, NULL, DT_F64, dA, DT_F64);
  else
    gemm(&ga, c.R, DT_F64, c.B, DT_F64, NULL, DT_F64, dA, DT_F64);
  gemm_case gb = tb ? (gemm_case){N, K, M, 1, ta, g.ldd, g.lda, 0, g.ldb, 1, 0, 0, 0, 0, g.alpha, 0}
                    : (gemm_case){K, N, M, !ta, 0, g.lda, g.ldd, 0, g.ldb, 1, 0, 0, 0, 0, g.alpha, 0};
  if (tb)
    gemm(&gb, c.R, DT_F64, c.A, DT_F64, NULL, DT_F64, dB, DT_F64);
  else
    gemm(&gb, c.A, DT_F64, c.R, DT_F64, NULL, DT_F64, dB, DT_F64);
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) dC[m * g.ldc + n] = g.beta * c.R[m * g.ldd + n];
  gc_fd_check("dA vs finite differences", gemm_loss, &c, c.A, (size_t)size_a(&g), dA, 1e-6);
  gc_fd_check("dB vs finite differences", gemm_loss, &c, c.B, (size_t)size_b(&g), dB, 1e-6);
  gc_fd_check("dC (beta=1 accumulation) vs finite differences", gemm_loss, &c, c.C, (size_t)size_c(&g), dC, 1e-6);

  /* C aliasing D (ldc = ldd). */
  gemm_case gal = g;
  gal.ldc = gal.ldd;
  double *DC = gc_rand(&r, size_d(&g), -1, 1), *want2 = gc_copy(DC, size_d(&g));
  gemm_direct(&gal, c.A, c.B, DC, want2);
  gemm(&gal, c.A, DT_F64, c.B, DT_F64, DC, DT_F64, DC, DT_F64);
  gc_expect_bits("C aliasing D", DC, want2, (size_t)size_d(&g) * sizeof(double));
  free(DC), free(want2), free(dA), free(dB), free(dC), free(want);
  free(c.A), free(c.B), free(c.C), free(c.D), free(c.R);
}

/* Batches with strides, beta = 0 with a NaN C (must not be read), ragged panels and row blocks. */
static void test_batch_and_blocks(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "gemm batch=3 strides, beta=0 ignores C, K=1000 (several panels)", seed);
  gemm_case g = {9, 70, 1000, 0, 1, 1001, 1003, 70, 72, 3, 9 * 1001 + 11, 70 * 1003 + 5, 0, 9 * 72 + 3, -1.5, 0};
  double *A = gc_rand(&r, size_a(&g), -1, 1), *B = gc_rand(&r, size_b(&g), -1, 1);
  double *C = gc_zeros(size_c(&g)), *D = gc_zeros(size_d(&g)), *want = gc_zeros(size_d(&g));
  for (int64_t i = 0; i < size_c(&g); i++) C[i] = NAN;
  gemm_direct(&g, A, B, C, want);
  gemm(&g, A, DT_F64, B, DT_F64, C, DT_F64, D, DT_F64);
  gc_expect_bits("batched D vs direct (bit-identical, gaps untouched)", D, want, (size_t)size_d(&g) * sizeof(double));
  gemm_case t = {13, 21, 17, 1, 0, 13, 21, 21, 21, 1, 0, 0, 0, 0, 1.0, 1.0};
  double *A2 = gc_rand(&r, size_a(&t), -1, 1), *B2 = gc_rand(&r, size_b(&t), -1, 1), *C2 = gc_rand(&r, size_c(&t), -1, 1);
  double *D2 = gc_zeros(size_d(&t)), *w2 = gc_zeros(size_d(&t));
  gemm_direct(&t, A2, B2, C2, w2);
  gemm(&t, A2, DT_F64, B2, DT_F64, C2, DT_F64, D2, DT_F64);
  gc_expect_bits("M=13 (ragged row block), transA", D2, w2, (size_t)size_d(&t) * sizeof(double));
  free(A), free(B), free(C), free(D), free(want), free(A2), free(B2), free(C2), free(D2), free(w2);
}

/* f32 A, bf16 B, f64 C, f32 D and bf16 D against the direct product of the stored values. */
static void test_mixed(uint64_t seed) {
  gc_rng r;
  gc_case(&r, "gemm mixed dtypes f32 x bf16 + f64 -> f32 / bf16", seed);
  gemm_case g = {6, 11, 9, 0, 1, 9, 9, 11, 11, 1, 0, 0, 0, 0, 0.5, 1.0};
  float *A = calloc((size_t)size_a(&g), 4), *Df = calloc((size_t)size_d(&g), 4);
  uint16_t *B = calloc((size_t)size_b(&g), 2), *Dh = calloc((size_t)size_d(&g), 2);
  double *Ad = gc_zeros(size_a(&g)), *Bd = gc_zeros(size_b(&g)), *C = gc_rand(&r, size_c(&g), -1, 1);
  double *want = gc_zeros(size_d(&g)), *got = gc_zeros(size_d(&g));
  for (int64_t i = 0; i < size_a(&g); i++) A[i] = (float)gc_uniform(&r, -1, 1), Ad[i] = A[i];
  for (int64_t i = 0; i < size_b(&g); i++)
    B[i] = ddp_f32_to_bf16((float)gc_uniform(&r, -1, 1)), Bd[i] = ddp_bf16_to_f32(B[i]);
  gemm_direct(&g, Ad, Bd, C, want);
  gemm(&g, A, DT_F32, B, DT_BF16, C, DT_F64, Df, DT_F32);
  for (int64_t i = 0; i < size_d(&g); i++) got[i] = Df[i];
  gc_expect_close("f32 D (rounded once)", got, want, (size_t)size_d(&g), 6e-8, 1e-300);
  gemm(&g, A, DT_F32, B, DT_BF16, C, DT_F64, Dh, DT_BF16);
  for (int64_t i = 0; i < size_d(&g); i++) got[i] = ddp_bf16_to_f32(Dh[i]);
  gc_expect_close("bf16 D (rounded once)", got, want, (size_t)size_d(&g), 4e-3, 1e-300);
  free(A), free(Df), free(B), free(Dh), free(Ad), free(Bd), free(C), free(want), free(got);
}

static double now(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC); /* C11; wall time is fine for a printed figure */
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void time_f32(int ta, int tb, uint64_t seed) {
  gc_rng r;
  gc_case(&r, "gemm f32 256x256x256 timing", seed);
  const int64_t S = 256;
  gemm_case g = {S, S, S, ta, tb, S, S, S, S, 1, 0, 0, 0, 0, 1.0, 0.0};
  float *A = malloc(S * S * 4), *B = malloc(S * S * 4), *D = malloc(S * S * 4);
  for (int64_t i = 0; i < S * S; i++) A[i] = (float)gc_uniform(&r, -1, 1), B[i] = (float)gc_uniform(&r, -1, 1);
  double best = INFINITY;
  for (int rep = 0; rep < 3; rep++) {
    const double t0 = now();
    gemm(&g, A, DT_F32, B, DT_F32, NULL, DT_F32, D, DT_F32);
    best = fmin(best, now() - t0);
  }
  printf("  info transA=%d transB=%d: %.3f ms, %.2f GFLOP/s (single thread, f64 accumulation)\n", ta, tb,
         best * 1e3, 2.0 * S * S * S / best * 1e-9);
  free(A), free(B), free(D);
}

int main(void) {
  uint64_t seed = 401;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) test_transposes(ta, tb, seed++);
  test_batch_and_blocks(405);
  test_mixed(406);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) time_f32(ta, tb, 407);
  return gc_finish("test_ref_gemm");
}

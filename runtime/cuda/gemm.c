/* runtime/cuda/gemm.c: I_GEMM through cuBLASLt. Descriptors, layouts and the algorithm are made
 * once per instruction at load; the replay is one cublasLtMatmul on the instruction's stream. cx_time_gemm
 * times a GEMM of any shape the same way (same descriptors, heuristic and tuned algorithm) on scratch
 * buffers, for the calibration's GEMM sweep.
 *
 * Row-major to column-major: the plan computes, row-major, D[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C.
 * A row-major matrix X (r x c, leading dimension ld) has the bytes of the column-major matrix X^T (c x r,
 * same ld), so the same bytes satisfy, column-major, D^T[N,M] = alpha op(B)^T op(A)^T + beta C^T. cuBLASLt
 * is therefore called with m = N, n = M, k = K and its operands swapped:
 *   cuBLASLt A := plan B, op = transB, layout (transB ? K x N : N x K), ld = ldb, batch stride of B;
 *   cuBLASLt B := plan A, op = transA, layout (transA ? M x K : K x M), ld = lda, batch stride of A;
 *   cuBLASLt C, D := plan C, D, layout N x M, ld = ldc / ldd.
 * Compute CUBLAS_COMPUTE_32F (never the TF32 variant), scale type f32. With beta == 0 the plan's C is not
 * read, so D stands in for it (same type and layout). Pointer alignments (offset in the 256-aligned arena,
 * and batch strides) are passed to the heuristic so it never picks an algorithm that needs more. */
#include "cx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cx_gemm_init(cx *x, char *err, size_t errcap) {
  CX_LT_TRY(cublasLtCreate(&x->lt), "GEMM handle");
  return 0;
}

void cx_gemm_fini(cx *x) {
  for (int k = 0; k < 3; k++)
    if (x->tg[k]) (void)cudaFree(x->tg[k]);
  for (uint32_t s = 0; x->ws_owned && s < x->nstreams; s++)
    if (x->ws_owned[s]) (void)cudaFree(x->ws_owned[s]);
  if (x->lt) (void)cublasLtDestroy(x->lt);
  x->lt = NULL;
}

void cx_gemm_free(cx_gemm *g) {
  if (g->la) (void)cublasLtMatrixLayoutDestroy(g->la);
  if (g->lb) (void)cublasLtMatrixLayoutDestroy(g->lb);
  if (g->lc && g->lc != g->ld) (void)cublasLtMatrixLayoutDestroy(g->lc);
  if (g->ld) (void)cublasLtMatrixLayoutDestroy(g->ld);
  if (g->desc) (void)cublasLtMatmulDescDestroy(g->desc);
  free(g);
}

/* The workspace of GEMMs on stream s: the plan's "workspace.gemm" for the first stream that needs one, a
 * 32 MiB allocation of its own for any other (GEMMs on two streams may run concurrently). */
static int workspace(cx *x, uint32_t s, char *err, size_t errcap) {
  if (x->ws[s]) return 0;
  const ddp_plan *p = x->base.plan;
  int32_t t = ddp_plan_find_tensor(p, "workspace.gemm");
  if (t >= 0 && !x->plan_ws_taken) {
    const ddp_tensor *w = &p->tensors[t];
    if (w->arena < ARENA_COUNT && x->arena[w->arena] && w->bytes > 0 &&
        w->offset + w->bytes <= x->arena_bytes[w->arena]) {
      x->ws[s] = (uint8_t *)x->arena[w->arena] + w->offset;
      x->ws_bytes[s] = (size_t)w->bytes;
      x->plan_ws_taken = 1;
      return 0;
    }
  }
  cudaError_t rc = cudaMalloc(&x->ws_owned[s], (size_t)DDP_GEMM_WORKSPACE_BYTES);
  if (rc != cudaSuccess) {
    x->ws_owned[s] = NULL;
    return ddp_fail(err, errcap, "%s:%d: cudaMalloc(GEMM workspace of stream %u, %zu bytes): %s: %s", __FILE__,
                   __LINE__, s, (size_t)DDP_GEMM_WORKSPACE_BYTES, cudaGetErrorName(rc), cudaGetErrorString(rc));
  }
  x->ws[s] = x->ws_owned[s];
  x->ws_bytes[s] = (size_t)DDP_GEMM_WORKSPACE_BYTES;
  return 0;
}

static int lt_type(int dt) { return dt == DT_F32 ? CUDA_R_32F : dt == DT_BF16 ? CUDA_R_16BF : -1; }

/* Largest power of two (<= 256) dividing the operand's offset in its arena and its batch stride in bytes. */
static uint32_t alignment(uint64_t offset, int64_t batch, int64_t stride, size_t es) {
  uint64_t v = offset | (batch > 1 ? (uint64_t)stride * es : 0);
  uint32_t a = 256;
  while (a > 1 && (v & (a - 1))) a >>= 1;
  return a;
}

/* Elements spanned by a row-major rows x cols matrix with leading dimension ld, batched. */
static uint64_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  return (uint64_t)((batch - 1) * stride + (rows - 1) * ld + cols);
}

static int layout(cublasLtMatrixLayout_t *l, int type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride, const char *what, char *err, size_t errcap) {
  CX_LT_TRY(cublasLtMatrixLayoutCreate(l, (cudaDataType_t)type, (uint64_t)rows, (uint64_t)cols, ld), what);
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    CX_LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), what);
    CX_LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                               sizeof stride),
              what);
  }
  return 0;
}

typedef struct gemm_shape {
  int64_t M, N, K, ta, tb, lda, ldb, ldc, ldd, batch, sa, sb, sc, sd;
  int dta, dtb, dtc, dtd;
} gemm_shape;

/* "GEMM 'name' (M 1024 N 4096 K 1024, A bf16 T, B bf16 N, C f32, D f32, batch 1)" */
static void describe(const char *label, const gemm_shape *s, char *buf, size_t cap) {
  snprintf(buf, cap, "GEMM '%s' (M %lld N %lld K %lld, A %s%s lda %lld, B %s%s ldb %lld, C %s ldc %lld, D %s ldd %lld, batch %lld)",
           label, (long long)s->M, (long long)s->N, (long long)s->K, ddp_dtype_name(s->dta), s->ta ? "^T" : "",
           (long long)s->lda, ddp_dtype_name(s->dtb), s->tb ? "^T" : "", (long long)s->ldb, ddp_dtype_name(s->dtc),
           (long long)s->ldc, ddp_dtype_name(s->dtd), (long long)s->ldd, (long long)s->batch);
}

static int check_shape(const gemm_shape *s, const char *what, char *err, size_t errcap) {
  if (s->K <= 0) return ddp_fail(err, errcap, "%s: K must be positive", what);
  if (s->batch > INT32_MAX) return ddp_fail(err, errcap, "%s: batch count too large", what);
  if (lt_type(s->dta) < 0 || s->dta != s->dtb)
    return ddp_fail(err, errcap, "%s: A and B must both be f32 or both bf16", what);
  if (lt_type(s->dtd) < 0) return ddp_fail(err, errcap, "%s: D must be f32 or bf16", what);
  if (s->dta == DT_F32 && s->dtd != DT_F32)
    return ddp_fail(err, errcap, "%s: f32 inputs need an f32 D (cuBLASLt has no f32 x f32 -> bf16)", what);
  if (s->dtc != s->dtd)
    return ddp_fail(err, errcap, "%s: C and D must have one dtype (cuBLASLt); convert C first", what);
  if (s->lda < (s->ta ? s->M : s->K) || s->ldb < (s->tb ? s->K : s->N) || s->ldc < s->N || s->ldd < s->N)
    return ddp_fail(err, errcap, "%s: a leading dimension is smaller than its row", what);
  if (s->batch > 1 && (s->sa < 0 || s->sb < 0 || s->sc < 0 || s->sd < 0))
    return ddp_fail(err, errcap, "%s: negative batch stride", what);
  return 0;
}

static int operands(cx *x, cx_op *op, cx_gemm *g, const gemm_shape *s, const char *what, char *err,
                    size_t errcap) {
  const ddp_instr *in = op->in;
  char why[768];
  size_t ea = ddp_dtype_size(s->dta), ec = ddp_dtype_size(s->dtc);
  void *pa = NULL, *pb = NULL, *pc = NULL, *pd = NULL;
  uint64_t na = span(s->ta ? s->K : s->M, s->ta ? s->M : s->K, s->lda, s->batch, s->sa);
  uint64_t nb = span(s->tb ? s->N : s->K, s->tb ? s->K : s->N, s->ldb, s->batch, s->sb);
  uint64_t nc = span(s->M, s->N, s->ldc, s->batch, s->sc), nd = span(s->M, s->N, s->ldd, s->batch, s->sd);
  if (cx_buffer(x, in, GEMM_P_A, na * ea, &pa, why, sizeof why) ||
      cx_buffer(x, in, GEMM_P_B, nb * ea, &pb, why, sizeof why) ||
      cx_buffer(x, in, GEMM_P_D, nd * ec, &pd, why, sizeof why) ||
      (g->beta != 0.0f && cx_buffer(x, in, GEMM_P_C, nc * ec, &pc, why, sizeof why)))
    return ddp_fail(err, errcap, "%s: %s", what, why);
  if (g->beta != 0.0f && pc != pd) {
    const uint8_t *c0 = pc, *d0 = pd;
    if (c0 < d0 + nd * ec && d0 < c0 + nc * ec)
      return ddp_fail(err, errcap, "%s: C and D overlap without being the same matrix", what);
  }
  if (g->beta != 0.0f && pc == pd && (s->ldc != s->ldd || (s->batch > 1 && s->sc != s->sd)))
    return ddp_fail(err, errcap, "%s: C aliases D with a different leading dimension or batch stride", what);
  /* cuBLASLt order: its A is the plan's B, its B the plan's A. */
  g->a = pb;
  g->b = pa;
  g->c = g->beta != 0.0f ? pc : pd;
  g->d = pd;
  return 0;
}

static gemm_shape shape_of(const ddp_instr *in) {
  gemm_shape s = {in->i[GEMM_I_M],        in->i[GEMM_I_N],        in->i[GEMM_I_K],
                  in->i[GEMM_I_TRANS_A] != 0, in->i[GEMM_I_TRANS_B] != 0,
                  in->i[GEMM_I_LDA],      in->i[GEMM_I_LDB],      in->i[GEMM_I_LDC],      in->i[GEMM_I_LDD],
                  in->i[GEMM_I_BATCH] < 1 ? 1 : in->i[GEMM_I_BATCH],
                  in->i[GEMM_I_STRIDE_A], in->i[GEMM_I_STRIDE_B], in->i[GEMM_I_STRIDE_C], in->i[GEMM_I_STRIDE_D],
                  in->dt[GEMM_P_A],       in->dt[GEMM_P_B],       in->dt[GEMM_P_C],       in->dt[GEMM_P_D]};
  if (in->f[GEMM_F_BETA] == 0.0f) s.dtc = s.dtd, s.ldc = s.ldd, s.sc = s.sd; /* C unread: D stands in */
  return s;
}

/* The layouts, descriptor and algorithm of g, whose operands and workspace are set, for shape s; al: the
 * alignments in bytes of cuBLASLt's A, B, C, D (the plan's B, A, C, D). */
static int build(cx *x, cx_gemm *g, const gemm_shape *s, const uint32_t al[4], int32_t sm_target, cudaStream_t stream,
                 const char *what, char *err, size_t errcap) {
  int tin = lt_type(s->dta), tout = lt_type(s->dtd);
  if (layout(&g->la, tin, s->tb ? s->K : s->N, s->tb ? s->N : s->K, s->ldb, s->batch, s->sb, what, err, errcap) ||
      layout(&g->lb, tin, s->ta ? s->M : s->K, s->ta ? s->K : s->M, s->lda, s->batch, s->sa, what, err, errcap) ||
      layout(&g->ld, tout, s->N, s->M, s->ldd, s->batch, s->sd, what, err, errcap))
    return -1;
  if (g->beta != 0.0f && (s->ldc != s->ldd || (s->batch > 1 && s->sc != s->sd))) {
    if (layout(&g->lc, tout, s->N, s->M, s->ldc, s->batch, s->sc, what, err, errcap)) return -1;
  } else {
    g->lc = g->ld;
  }
  CX_LT_TRY(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), what);
  cublasOperation_t opa = s->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = s->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  CX_LT_TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), what);
  CX_LT_TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), what);
  if (sm_target > 0)
    CX_LT_TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target),
              what);

  cublasLtMatmulPreference_t pref = NULL;
  CX_LT_TRY(cublasLtMatmulPreferenceCreate(&pref), what);
  uint64_t wsb = g->ws_bytes;
  const cublasLtMatmulPreferenceAttributes_t keys[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                                           sizeof wsb);
  for (int k = 0; k < 4 && st == CUBLAS_STATUS_SUCCESS; k++)
    st = cublasLtMatmulPreferenceSetAttribute(pref, keys[k], &al[k], sizeof al[k]);
  cublasLtMatmulHeuristicResult_t res[CX_TUNE_CANDIDATES];
  int nres = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(x->lt, g->desc, g->la, g->lb, g->lc, g->ld, pref, CX_TUNE_CANDIDATES, res,
                                        &nres);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS)
    return ddp_fail(err, errcap, "%s: cublasLtMatmulAlgoGetHeuristic (alignments A %u B %u C %u D %u bytes): %s: %s",
                   what, al[1], al[0], al[2], al[3], cublasLtGetStatusName(st), cublasLtGetStatusString(st));
  /* The tuning key: everything that decides which algorithms apply and how fast they run, not the name. */
  char key[512];
  snprintf(key, sizeof key,
           "M=%lld N=%lld K=%lld ta=%lld tb=%lld ld=%lld,%lld,%lld,%lld batch=%lld strides=%lld,%lld,%lld,%lld "
           "dt=%d,%d,%d,%d beta0=%d align=%u,%u,%u,%u",
           (long long)s->M, (long long)s->N, (long long)s->K, (long long)s->ta, (long long)s->tb, (long long)s->lda,
           (long long)s->ldb, (long long)s->ldc, (long long)s->ldd, (long long)s->batch, (long long)s->sa,
           (long long)s->sb, (long long)s->sc, (long long)s->sd, s->dta, s->dtb, s->dtc, s->dtd, g->beta == 0.0f,
           al[0], al[1], al[2], al[3]);
  if (sm_target > 0) snprintf(key + strlen(key), sizeof key - strlen(key), " sms=%d", (int)sm_target);
  int rc = cx_gemm_pick(x, g, key, res, nres, stream, err, errcap);
  if (rc < 0) return -1; /* err names the CUDA call; the caller adds the instruction */
  if (rc == 0) return 0;
  return ddp_fail(err, errcap, "%s: cuBLASLt found no algorithm (%d candidates; alignments A %u B %u C %u D %u bytes, workspace %zu bytes)",
                 what, nres, al[1], al[0], al[2], al[3], g->ws_bytes);
}

int cx_gemm_prepare(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_instr *in = op->in;
  gemm_shape s = shape_of(in);
  char what[512];
  describe(op->label, &s, what, sizeof what);
  if (s.M <= 0 || s.N <= 0) {
    op->skip = 1;
    return 0;
  }
  if (check_shape(&s, what, err, errcap)) return -1;
  cx_gemm *g = calloc(1, sizeof *g);
  if (!g) return ddp_fail(err, errcap, "%s: out of host memory", what);
  op->gemm = g;
  g->alpha = in->f[GEMM_F_ALPHA];
  g->beta = in->f[GEMM_F_BETA];
  if (operands(x, op, g, &s, what, err, errcap) || workspace(x, in->stream, err, errcap)) return -1;
  g->ws = x->ws[in->stream];
  g->ws_bytes = x->ws_bytes[in->stream];
  uint32_t al[4] = {alignment(in->p[GEMM_P_B].offset, s.batch, s.sb, ddp_dtype_size(s.dtb)),
                    alignment(in->p[GEMM_P_A].offset, s.batch, s.sa, ddp_dtype_size(s.dta)),
                    alignment(g->beta != 0.0f ? in->p[GEMM_P_C].offset : in->p[GEMM_P_D].offset, s.batch, s.sc,
                              ddp_dtype_size(s.dtc)),
                    alignment(in->p[GEMM_P_D].offset, s.batch, s.sd, ddp_dtype_size(s.dtd))};
  /* DDP_GEMM_SM_TARGET (experiments): the backward's GEMMs sized for fewer SMs than the device has, leaving
   * the rest to the updates and collectives beside them */
  const int32_t target = x->gemm_sm_target > 0 && x->prep_backward && in->stream == STREAM_COMPUTE
                             ? (int32_t)x->gemm_sm_target : 0;
  return build(x, g, &s, al, target, op->stream, what, err, errcap);
}

/* One scratch buffer of at least `bytes` for the timed GEMMs, kept until the executor goes (x->tg). */
static int scratch(cx *x, int k, size_t bytes, char *err, size_t errcap) {
  if (x->tg_bytes[k] >= bytes) return 0;
  if (x->tg[k]) (void)cudaFree(x->tg[k]);
  x->tg[k] = NULL;
  x->tg_bytes[k] = 0;
  cudaError_t rc = cudaMalloc(&x->tg[k], bytes);
  if (rc == cudaSuccess) rc = cudaMemset(x->tg[k], 0x3c, bytes); /* bf16 0x3c3c = 0.0115, f32 about 0.0115 */
  if (rc != cudaSuccess) {
    if (x->tg[k]) (void)cudaFree(x->tg[k]);
    x->tg[k] = NULL;
    return ddp_fail(err, errcap, "%s:%d: timing a GEMM: cudaMalloc/cudaMemset(%zu bytes): %s: %s", __FILE__, __LINE__,
                   bytes, cudaGetErrorName(rc), cudaGetErrorString(rc));
  }
  x->tg_bytes[k] = bytes;
  return 0;
}

int cx_time_gemm(ddp_exec *e, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap) {
  cx *x = e->impl;
  if (in->opcode != I_GEMM) return ddp_fail(err, errcap, "timing a GEMM: %s is not one", ddp_opcode_name(in->opcode));
  gemm_shape s = shape_of(in);
  char what[512];
  describe("calibration", &s, what, sizeof what);
  const int64_t lim = (int64_t)1 << 16;
  if (s.M < 1 || s.N < 1 || s.M > lim || s.N > lim || s.K > lim || s.batch != 1 || iters < 1)
    return ddp_fail(err, errcap, "timing a %s: dimensions 1..%lld and one batch only, %d runs", what, (long long)lim, iters);
  if (check_shape(&s, what, err, errcap)) return -1;
  size_t ea = ddp_dtype_size(s.dta), ed = ddp_dtype_size(s.dtd);
  if (scratch(x, 0, span(s.ta ? s.K : s.M, s.ta ? s.M : s.K, s.lda, 1, 0) * ea, err, errcap) ||
      scratch(x, 1, span(s.tb ? s.N : s.K, s.tb ? s.K : s.N, s.ldb, 1, 0) * ea, err, errcap) ||
      scratch(x, 2, span(s.M, s.N, s.ldd > s.ldc ? s.ldd : s.ldc, 1, 0) * ed, err, errcap) ||
      workspace(x, STREAM_COMPUTE, err, errcap))
    return -1;
  cx_gemm *g = calloc(1, sizeof *g);
  if (!g) return ddp_fail(err, errcap, "%s: out of host memory", what);
  g->alpha = in->f[GEMM_F_ALPHA];
  g->beta = in->f[GEMM_F_BETA];
  g->a = x->tg[1], g->b = x->tg[0], g->c = g->d = x->tg[2];
  g->ws = x->ws[STREAM_COMPUTE];
  g->ws_bytes = x->ws_bytes[STREAM_COMPUTE];
  const uint32_t al[4] = {256, 256, 256, 256};
  cudaStream_t st = x->streams[STREAM_COMPUTE];
  cudaEvent_t ev[2] = {NULL, NULL};
  int rc = build(x, g, &s, al, 0, st, what, err, errcap);
  cudaError_t ce = cudaSuccess;
  if (rc == 0 && (ce = cudaEventCreate(&ev[0])) == cudaSuccess) ce = cudaEventCreate(&ev[1]);
  if (rc == 0 && ce != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: cudaEventCreate: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  for (int k = -2; rc == 0 && k < iters; k++) {
    if (k == 0 && (ce = cudaEventRecord(ev[0], st)) != cudaSuccess)
      rc = ddp_fail(err, errcap, "%s:%d: cudaEventRecord: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
    if (rc) break;
    cublasStatus_t ls = cublasLtMatmul(x->lt, g->desc, &g->alpha, g->a, g->la, g->b, g->lb, &g->beta, g->c, g->lc,
                                       g->d, g->ld, &g->algo, g->ws, g->ws_bytes, st);
    if (ls != CUBLAS_STATUS_SUCCESS)
      rc = ddp_fail(err, errcap, "%s:%d: %s: cublasLtMatmul: %s: %s", __FILE__, __LINE__, what,
                   cublasLtGetStatusName(ls), cublasLtGetStatusString(ls));
  }
  if (rc == 0 && (ce = cudaEventRecord(ev[1], st)) != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: cudaEventRecord: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  if (rc == 0 && (ce = cudaEventSynchronize(ev[1])) != cudaSuccess)
    rc = ddp_fail(err, errcap, "%s:%d: cudaEventSynchronize: %s", __FILE__, __LINE__, cudaGetErrorString(ce));
  if (rc == 0) rc = cx_mean_ms(ev, iters, ms, err, errcap);
  for (int k = 0; k < 2; k++)
    if (ev[k]) (void)cudaEventDestroy(ev[k]);
  cx_gemm_free(g);
  return rc;
}

int cx_exec_GEMM(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  if (op->skip) return 0;
  const cx_gemm *g = op->gemm;
  cublasStatus_t st = cublasLtMatmul(x->lt, g->desc, &g->alpha, g->a, g->la, g->b, g->lb, &g->beta, g->c, g->lc,
                                     g->d, g->ld, &g->algo, g->ws, g->ws_bytes, op->stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    return ddp_fail(err, errcap, "%s:%d: cublasLtMatmul(M %lld N %lld K %lld): %s: %s", __FILE__, __LINE__,
                   (long long)op->in->i[GEMM_I_M], (long long)op->in->i[GEMM_I_N], (long long)op->in->i[GEMM_I_K],
                   cublasLtGetStatusName(st), cublasLtGetStatusString(st));
  return 0;
}

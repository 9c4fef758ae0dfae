/* runtime/bench/interference.c: `ddprun --bench interference`: how much a concurrent all-reduce slows the
 * compute beside it, per NCCL communication path. Every rank (one process per GPU) runs the XL layer's GEMM
 * mix (bf16 cuBLASLt GEMMs of M tokens: the QKV, output, FFN-up and FFN-down projections of d_model 1600,
 * forward shapes) alone, an all-reduce of MB MiB of fp32 alone, then both at once on two streams (the
 * all-reduces enqueued first, enough to outlast the GEMMs), timed with CUDA events on each stream. Paths:
 *   default     ncclCommInitRank's defaults
 *   maxctas8    ncclConfig_t maxCTAs = 8 (fewer SMs for NCCL)
 *   efficiency  ncclConfig_t CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY, the buffer registered (ncclCommRegister:
 *               the policy needs registered buffers to change anything)
 *   zero        CTAPolicy = NCCL_CTA_POLICY_ZERO (the copy-engine path; NCCL 2.28 offers it for all-gather
 *               on symmetric windows, not all-reduce: the table says what NCCL answered)
 *   window      the buffer from ncclMemAlloc, registered as a symmetric window (ncclCommWindowRegister):
 *               NCCL 2.28's symmetric kernels read and write the peers' buffers over NVLink directly
 *   window_zero the window with CTAPolicy = NCCL_CTA_POLICY_ZERO: the copy-engine all-gather (--coll allgather)
 *   copy        not NCCL's: ce_allreduce.c's two-GPU all-reduce, its data on the copy engines and only the
 *               sum on the SMs (a default communicator only exchanges its IPC handles and the run count)
 * --side-sms N runs the communication stream in a partition of N SMs of its own (a CUDA green context,
 * green.h) and has cuBLASLt size the GEMMs for the SMs left (--gemm-sms M overrides that count; alone it
 * only sizes the GEMMs): space-sharing the SMs instead of letting NCCL's blocks take them as they free.
 * --coll reducescatter / allgather times that collective over the buffer instead (in place, as ZeRO's);
 * --coll alltoall an all-to-all from the buffer into a second one of its size (both in the allocation, so
 * one window holds them): a reduce-scatter's data movement without the sum, which NCCL 2.28 can put on the
 * copy engines (window_zero) where it cannot put a reduce-scatter.
 * Rank 0 prints per path: GEMM TFLOP/s alone and during, the compute slowdown, the all-reduce's busbw alone
 * and during; --out appends one JSON object per path. */
#include "args.h"
#include "param.h"
#include "bench.h"
#include "ce_allreduce.h"
#include "cli.h"
#include "cuda_check.h"
#include "err.h"
#include "green.h"
#include "launch.h"
#include "outfile.h"
#include "plan.h"
#include "rendezvous.h"
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_OK(call)                                                                                        \
  do {                                                                                                       \
    ncclResult_t r_ = (call);                                                                                \
    if (r_ != ncclSuccess)                                                                                   \
      return ddp_fail(err, errcap, "%s:%d: %s: %s", __FILE__, __LINE__, #call, ncclGetErrorString(r_));     \
  } while (0)
#define LT_OK(call)                                                                                          \
  do {                                                                                                       \
    cublasStatus_t s_ = (call);                                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                         \
      return ddp_fail(err, errcap, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cublasLtGetStatusString(s_)); \
  } while (0)

enum { NPATHS = 7, NGEMMS = 4, PATH_COPY = 4, PATH_WINDOW = 5, PATH_WINDOW_ZERO = 6 };
static const char *const path_names[NPATHS] = {"default", "maxctas8", "efficiency", "zero", "copy", "window", "window_zero"};
enum { COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER, COLL_ALLTOALL, NCOLLS };
static const char *const coll_names[NCOLLS] = {"allreduce", "reducescatter", "allgather", "alltoall"};

typedef struct iopts {
  double mb;      /* all-reduce MiB */
  int64_t tokens; /* GEMM M */
  int rounds;     /* rounds of the GEMM mix per timing */
  int paths;      /* bit mask over path_names */
  int coll;       /* COLL_*: the collective timed */
  int side_sms;   /* the communication stream's SM partition (0: none) */
  int gemm_sms;   /* cuBLASLt's SM_COUNT_TARGET for the GEMMs (0: the device's, or what --side-sms leaves) */
  const char *out;
} iopts;

/* One bf16 GEMM, row-major D[M,N] = A[M,K] B[N,K]^T (a linear layer's forward), on scratch buffers. */
typedef struct bgemm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
  void *a, *b, *d;
  double flops;
} bgemm;

static int gemm_new(cublasLtHandle_t lt, bgemm *g, int64_t M, int64_t N, int64_t K, size_t wsb, int32_t sms,
                    char *err, size_t errcap) {
  memset(g, 0, sizeof *g);
  g->flops = 2.0 * (double)M * (double)N * (double)K;
  DDP_CUDA_TRY(cudaMalloc(&g->a, (size_t)(M * K) * 2));
  DDP_CUDA_TRY(cudaMalloc(&g->b, (size_t)(N * K) * 2));
  DDP_CUDA_TRY(cudaMalloc(&g->d, (size_t)(M * N) * 2));
  DDP_CUDA_TRY(cudaMemset(g->a, 0x3c, (size_t)(M * K) * 2));
  DDP_CUDA_TRY(cudaMemset(g->b, 0x3c, (size_t)(N * K) * 2));
  /* column-major: D^T[N,M] = B[N,K] (stored K x N, transposed) times A^T (stored K x M) */
  LT_OK(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  LT_OK(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  LT_OK(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
  if (sms > 0) LT_OK(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof sms));
  LT_OK(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K));
  LT_OK(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K));
  LT_OK(cublasLtMatrixLayoutCreate(&g->ld, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N));
  cublasLtMatmulPreference_t pref;
  LT_OK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t w = wsb;
  LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w, sizeof w));
  cublasLtMatmulHeuristicResult_t res;
  int nres = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, g->desc, g->la, g->lb, g->ld, g->ld, pref, 1, &res, &nres);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || nres < 1)
    return ddp_fail(err, errcap, "%s:%d: cublasLtMatmulAlgoGetHeuristic (M %lld N %lld K %lld): %s", __FILE__, __LINE__,
                    (long long)M, (long long)N, (long long)K, cublasLtGetStatusString(st));
  g->algo = res.algo;
  return 0;
}

static void gemm_free(bgemm *g) {
  if (g->desc) (void)cublasLtMatmulDescDestroy(g->desc);
  if (g->la) (void)cublasLtMatrixLayoutDestroy(g->la);
  if (g->lb) (void)cublasLtMatrixLayoutDestroy(g->lb);
  if (g->ld) (void)cublasLtMatrixLayoutDestroy(g->ld);
  (void)cudaFree(g->a), (void)cudaFree(g->b), (void)cudaFree(g->d);
}

typedef struct rig { /* one rank's GEMMs, buffer and streams */
  cublasLtHandle_t lt;
  bgemm g[NGEMMS];
  void *ws;
  float *buf;    /* the collective's buffer: cudaMalloc'd, or a window path's ncclMemAlloc'd one */
  size_t n;      /* its elements; a window path's allocation is n floats rounded up to whole windows */
  size_t alloc;  /* floats allocated: n, or 2n for the all-to-all (its receive buffer follows at buf + n) */
  int coll, rank, world;
  cudaStream_t sc, sm; /* compute, communication */
  cudaEvent_t e[4];
} rig;

static int mix(rig *r, int rounds, char *err, size_t errcap) {
  const float one = 1.0f, zero = 0.0f;
  for (int k = 0; k < rounds; k++)
    for (int j = 0; j < NGEMMS; j++) {
      bgemm *g = &r->g[j];
      LT_OK(cublasLtMatmul(r->lt, g->desc, &one, g->b, g->la, g->a, g->lb, &zero, g->d, g->ld, g->d, g->ld, &g->algo,
                           r->ws, 32u << 20, r->sc));
    }
  return 0;
}

static int elapsed(cudaEvent_t a, cudaEvent_t b, double *s, char *err, size_t errcap) {
  float ms = 0;
  DDP_CUDA_TRY(cudaEventSynchronize(b));
  DDP_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
  *s = ms * 1e-3;
  return 0;
}

typedef struct pathres {
  double gemm_s, gemm_during_s, ar_s, ar_during_s;
  int ars;
  char note[300];
} pathres;

/* One all-reduce of the buffer on the communication stream: NCCL's, or the copy-engine one when ce is set. */
static int all_reduce(rig *r, ncclComm_t comm, ddp_ce_ar *ce, char *err, size_t errcap) {
  if (ce) return ddp_ce_ar_run(ce, err, errcap);
  const size_t part = r->n / (size_t)r->world;
  if (r->coll == COLL_REDUCESCATTER)
    NCCL_OK(ncclReduceScatter(r->buf, r->buf + (size_t)r->rank * part, part, ncclFloat32, ncclSum, comm, r->sm));
  else if (r->coll == COLL_ALLGATHER)
    NCCL_OK(ncclAllGather(r->buf + (size_t)r->rank * part, r->buf, part, ncclFloat32, comm, r->sm));
  else if (r->coll == COLL_ALLTOALL)
    NCCL_OK(ncclAlltoAll(r->buf, r->buf + r->n, part, ncclFloat32, comm, r->sm));
  else
    NCCL_OK(ncclAllReduce(r->buf, r->buf, r->n, ncclFloat32, ncclSum, comm, r->sm));
  return 0;
}

/* The three timings on one communicator (comm set up for the path; the caller destroys it). */
static int measure(rig *r, ncclComm_t comm, ddp_ce_ar *ce, const iopts *o, int world, pathres *pr, char *err,
                   size_t errcap) {
  for (int w = 0; w < 3; w++)
    if (all_reduce(r, comm, ce, err, errcap)) return -1;
  if (mix(r, 2, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaDeviceSynchronize());
  /* GEMMs alone */
  DDP_CUDA_TRY(cudaEventRecord(r->e[0], r->sc));
  if (mix(r, o->rounds, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaEventRecord(r->e[1], r->sc));
  if (elapsed(r->e[0], r->e[1], &pr->gemm_s, err, errcap)) return -1;
  /* all-reduces alone */
  const int iters = 10;
  DDP_CUDA_TRY(cudaEventRecord(r->e[2], r->sm));
  for (int k = 0; k < iters; k++)
    if (all_reduce(r, comm, ce, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaEventRecord(r->e[3], r->sm));
  if (elapsed(r->e[2], r->e[3], &pr->ar_s, err, errcap)) return -1;
  pr->ar_s /= iters;
  /* both: the same number of all-reduces on every rank (rank 0's choice, through one all-reduce), enough to
   * outlast the GEMMs by a fifth */
  float want = (float)(1.2 * pr->gemm_s / pr->ar_s) + 1.0f, *dv = NULL;
  DDP_CUDA_TRY(cudaMalloc((void **)&dv, sizeof(float)));
  DDP_CUDA_TRY(cudaMemcpy(dv, &want, sizeof want, cudaMemcpyHostToDevice));
  NCCL_OK(ncclAllReduce(dv, dv, 1, ncclFloat32, ncclMax, comm, r->sm));
  DDP_CUDA_TRY(cudaStreamSynchronize(r->sm)); /* the copy below is on the legacy stream, which does not wait for sm */
  DDP_CUDA_TRY(cudaMemcpy(&want, dv, sizeof want, cudaMemcpyDeviceToHost));
  (void)cudaFree(dv);
  pr->ars = (int)want < 1 ? 1 : (int)want > 10000 ? 10000 : (int)want;
  DDP_CUDA_TRY(cudaDeviceSynchronize());
  DDP_CUDA_TRY(cudaEventRecord(r->e[2], r->sm));
  for (int k = 0; k < pr->ars; k++)
    if (all_reduce(r, comm, ce, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaEventRecord(r->e[3], r->sm));
  DDP_CUDA_TRY(cudaEventRecord(r->e[0], r->sc));
  if (mix(r, o->rounds, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaEventRecord(r->e[1], r->sc));
  if (elapsed(r->e[0], r->e[1], &pr->gemm_during_s, err, errcap) ||
      elapsed(r->e[2], r->e[3], &pr->ar_during_s, err, errcap))
    return -1;
  pr->ar_during_s /= pr->ars;
  (void)world;
  return 0;
}

/* The communicator of path p, or 0 with pr->note saying why NCCL refused it (then *comm is NULL). */
static int open_path(int p, const ncclUniqueId *uid, int world, int rank, rig *r, ncclComm_t *comm, void **reg,
                     pathres *pr, char *err, size_t errcap) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (p == 1) cfg.maxCTAs = 8;
  if (p == 2) cfg.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  if (p == 3 || p == PATH_WINDOW_ZERO) cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  *comm = NULL;
  *reg = NULL;
  ncclResult_t rc = ncclCommInitRankConfig(comm, world, *uid, rank, &cfg);
  if (rc != ncclSuccess) {
    snprintf(pr->note, sizeof pr->note, "ncclCommInitRankConfig: %s", ncclGetErrorString(rc));
    *comm = NULL;
    return 0;
  }
  if (p == 2) {
    rc = ncclCommRegister(*comm, r->buf, r->alloc * sizeof(float), reg);
    if (rc != ncclSuccess) snprintf(pr->note, sizeof pr->note, "ncclCommRegister: %s (unregistered)", ncclGetErrorString(rc));
  }
  if (p == PATH_WINDOW || p == PATH_WINDOW_ZERO) {
    ncclWindow_t win = NULL;
    rc = ncclCommWindowRegister(*comm, r->buf, (size_t)ddp_window_bytes(r->alloc * sizeof(float)), &win, NCCL_WIN_COLL_SYMMETRIC);
    if (rc != ncclSuccess) snprintf(pr->note, sizeof pr->note, "ncclCommWindowRegister: %s (no window)", ncclGetErrorString(rc));
    *reg = win;
  }
  (void)err, (void)errcap;
  return 0;
}

static int run_rank(const ddp_identity *id, void *ctx, char *err, size_t errcap) {
  const iopts *o = ctx;
  DDP_CUDA_TRY(cudaSetDevice(id->local_rank));
  rig r;
  memset(&r, 0, sizeof r);
  LT_OK(cublasLtCreate(&r.lt));
  DDP_CUDA_TRY(cudaMalloc(&r.ws, 32u << 20));
  ddp_green green;
  memset(&green, 0, sizeof green);
  if (o->side_sms && ddp_green_open(&green, id->local_rank, o->side_sms, 0, err, errcap)) return -1;
  const int32_t sms = o->gemm_sms ? o->gemm_sms : o->side_sms ? green.rest_sms : 0;
  static const int64_t nk[NGEMMS][2] = {{4800, 1600}, {1600, 1600}, {6400, 1600}, {1600, 6400}};
  for (int j = 0; j < NGEMMS; j++)
    if (gemm_new(r.lt, &r.g[j], o->tokens, nk[j][0], nk[j][1], 32u << 20, sms, err, errcap)) return -1;
  r.n = (size_t)(o->mb * 1048576.0 / 4.0) / (size_t)id->world * (size_t)id->world; /* whole parts per rank */
  r.coll = o->coll, r.rank = id->rank, r.world = id->world;
  r.alloc = r.n * (o->coll == COLL_ALLTOALL ? 2 : 1);
  DDP_CUDA_TRY(cudaMalloc((void **)&r.buf, r.alloc * sizeof(float)));
  DDP_CUDA_TRY(cudaMemset(r.buf, 0, r.alloc * sizeof(float)));
  DDP_CUDA_TRY(cudaStreamCreateWithFlags(&r.sc, cudaStreamNonBlocking));
  if (o->side_sms) {
    if (ddp_green_stream(&green, 0, 0, &r.sm, err, errcap)) return -1;
  } else {
    DDP_CUDA_TRY(cudaStreamCreateWithFlags(&r.sm, cudaStreamNonBlocking));
  }
  for (int k = 0; k < 4; k++) DDP_CUDA_TRY(cudaEventCreate(&r.e[k]));
  double flops = 0;
  for (int j = 0; j < NGEMMS; j++) flops += r.g[j].flops;
  flops *= o->rounds;
  ncclUniqueId uid[NPATHS]; /* one communicator per path, their ids exchanged at once */
  memset(uid, 0, sizeof uid);
  for (int p = 0; p < NPATHS && id->rank == 0; p++) NCCL_OK(ncclGetUniqueId(&uid[p]));
  double wait_s; /* DDP_RENDEZVOUS_TIMEOUT_S, as a plan's run reads it */
  if (ddp_param_seconds(PARAM_RENDEZVOUS_TIMEOUT_S, &wait_s, err, errcap)) return -1;
  if (id->world > 1 && ddp_rendezvous(id, uid, sizeof uid, wait_s, err, errcap)) return -1;
  FILE *out = NULL;
  if (id->rank == 0 && o->out && !(out = ddp_out_open(o->out, err, errcap))) return -1;
  if (id->rank == 0)
    printf("interference: %d GPUs (NCCL %d), GEMM mix of M %lld (d_model 1600) x %d rounds beside all-reduces of "
           "%g MiB fp32 (%s); communication on %s%d SMs, GEMMs sized for %d\n%-11s %12s %12s %9s %12s %12s  %s\n",
           id->world, NCCL_VERSION_CODE, (long long)o->tokens, o->rounds, o->mb, coll_names[o->coll], o->side_sms ? "a partition of " : "all ",
           o->side_sms ? green.sms : 0, sms ? sms : 0, "path", "GEMM TF/s", "during",
           "slowdown", "AR busbw", "during", "note");
  for (int p = 0; p < NPATHS; p++) {
    if (!(o->paths >> p & 1)) continue;
    pathres pr;
    memset(&pr, 0, sizeof pr);
    ncclComm_t comm;
    void *reg;
    float *plain = r.buf, *wbuf = NULL; /* a window path's buffer comes from ncclMemAlloc */
    const int window = p == PATH_WINDOW || p == PATH_WINDOW_ZERO;
    if (window) {
      const size_t whole = (size_t)ddp_window_bytes(r.alloc * sizeof(float)); /* whole windows, as the executor allocates them */
      ncclResult_t mr = ncclMemAlloc((void **)&wbuf, whole);
      if (mr != ncclSuccess)
        return ddp_fail(err, errcap, "%s:%d: ncclMemAlloc(%zu bytes): %s", __FILE__, __LINE__, whole, ncclGetErrorString(mr));
      DDP_CUDA_TRY(cudaMemset(wbuf, 0, r.alloc * sizeof(float)));
      r.buf = wbuf;
    }
    if (open_path(p, &uid[p], id->world, id->rank, &r, &comm, &reg, &pr, err, errcap)) return -1;
    int ok = comm != NULL;
    ddp_ce_ar *ce = NULL;
    if (ok && p == PATH_COPY && o->coll != COLL_ALLREDUCE) {
      snprintf(pr.note, sizeof pr.note, "the copy-engine path is an all-reduce only");
      ok = 0;
    }
    if (ok && p == PATH_COPY &&
        ddp_ce_ar_open(&ce, comm, id->rank, id->world, id->local_rank, r.buf, r.n, r.sm, err, errcap)) {
      snprintf(pr.note, sizeof pr.note, "%.290s", err);
      ok = 0;
      (void)cudaGetLastError();
    }
    if (ok && measure(&r, comm, ce, o, id->world, &pr, err, errcap)) {
      snprintf(pr.note, sizeof pr.note, "%.290s", err);
      ok = 0;
      (void)cudaGetLastError();
    }
    ddp_ce_ar_close(ce);
    if (reg && window) (void)ncclCommWindowDeregister(comm, (ncclWindow_t)reg);
    else if (reg) (void)ncclCommDeregister(comm, reg);
    if (comm) (void)ncclCommDestroy(comm);
    if (wbuf) (void)ncclMemFree(wbuf);
    r.buf = plain;
    double bus = (o->coll == COLL_ALLREDUCE ? 2.0 : 1.0) * (id->world - 1) / id->world * (double)r.n * 4.0 / 1e9;
    if (id->rank == 0) {
      if (ok)
        printf("%-11s %12.1f %12.1f %8.1f%% %12.1f %12.1f  %s\n", path_names[p], flops / pr.gemm_s / 1e12,
               flops / pr.gemm_during_s / 1e12, (pr.gemm_during_s / pr.gemm_s - 1) * 100, bus / pr.ar_s,
               bus / pr.ar_during_s, pr.note);
      else
        printf("%-11s %12s %12s %9s %12s %12s  %s\n", path_names[p], "-", "-", "-", "-", "-", pr.note);
      if (out) {
        fprintf(out, "{\"kind\": \"interference\", \"path\": \"%s\", \"world\": %d, \"tokens\": %lld, \"mb\": %g, \"coll\": \"%s\", "
                     "\"side_sms\": %d, \"gemm_sms\": %d, \"ok\": %s",
                path_names[p], id->world, (long long)o->tokens, o->mb, coll_names[o->coll], o->side_sms ? green.sms : 0, (int)sms,
                ok ? "true" : "false");
        if (ok)
          fprintf(out, ", \"gemm_tflops\": %.2f, \"gemm_tflops_during\": %.2f, \"ar_busbw_GBs\": %.2f, "
                       "\"ar_busbw_during_GBs\": %.2f, \"all_reduces_during\": %d",
                  flops / pr.gemm_s / 1e12, flops / pr.gemm_during_s / 1e12, bus / pr.ar_s, bus / pr.ar_during_s, pr.ars);
        fprintf(out, ", \"note\": \"%s\"}\n", pr.note);
      }
      fflush(stdout);
    }
  }
  int wrc = ddp_out_close(out, o->out, err, errcap);
  for (int j = 0; j < NGEMMS; j++) gemm_free(&r.g[j]);
  (void)cudaFree(r.buf), (void)cudaFree(r.ws);
  (void)cublasLtDestroy(r.lt);
  (void)cudaStreamDestroy(r.sm), (void)cudaStreamDestroy(r.sc);
  ddp_green_close(&green);
  return wrc;
}

int ddprun_bench_interference_main(int argc, char **argv) {
  static const struct option lo[] = {{"nproc", required_argument, NULL, 'n'},  {"mb", required_argument, NULL, 'm'},
                                     {"tokens", required_argument, NULL, 't'}, {"rounds", required_argument, NULL, 'r'},
                                     {"paths", required_argument, NULL, 'p'},  {"out", required_argument, NULL, 'o'},
                                     {"coll", required_argument, NULL, 'c'},
                                     {"side-sms", required_argument, NULL, 's'}, {"gemm-sms", required_argument, NULL, 'g'},
                                     {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
  iopts o = {.mb = 100, .tokens = 4096, .rounds = 20, .paths = (1 << NPATHS) - 1, .coll = COLL_ALLREDUCE};
  int nproc = 0, help = 0, c;
  char bad[1024] = "", msg[1024];
  opterr = 0;
  optind = 1; /* argv[0] is "interference" */
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    int64_t v = 0;
    int rc = 0;
    if (c == 'h') help = 1;
    else if (c == 'o') o.out = optarg;
    else if (c == 'n') rc = ddp_parse_i64(optarg, 1, 4096, "--nproc", &v, msg, sizeof msg), nproc = (int)v;
    else if (c == 't') rc = ddp_parse_i64(optarg, 1, 65536, "--tokens", &v, msg, sizeof msg), o.tokens = v;
    else if (c == 'c') {
      int k = 0;
      while (k < NCOLLS && strcmp(coll_names[k], optarg)) k++;
      if (k == NCOLLS) rc = ddp_fail(msg, sizeof msg, "--coll: '%.100s' is not one of allreduce, reducescatter, allgather, alltoall", optarg);
      else o.coll = k;
    } else if (c == 's') rc = ddp_parse_i64(optarg, 0, 1024, "--side-sms", &v, msg, sizeof msg), o.side_sms = (int)v;
    else if (c == 'g') rc = ddp_parse_i64(optarg, 0, 1024, "--gemm-sms", &v, msg, sizeof msg), o.gemm_sms = (int)v;
    else if (c == 'r') rc = ddp_parse_i64(optarg, 1, 100000, "--rounds", &v, msg, sizeof msg), o.rounds = (int)v;
    else if (c == 'm') rc = ddp_parse_double(optarg, 0, 1, 16384, "--mb", &o.mb, msg, sizeof msg);
    else if (c == 'p') {
      o.paths = 0;
      rc = ddp_check_list("--paths", optarg, msg, sizeof msg);
      char *list = ddp_xstrdup(optarg), *save = NULL;
      for (char *t = strtok_r(list, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < NPATHS && strcmp(path_names[k], t)) k++;
        if (k == NPATHS)
          rc = ddp_fail(msg, sizeof msg, "--paths: '%.100s' is not one of default, maxctas8, efficiency, zero, copy, window, window_zero", t);
        else o.paths |= 1 << k;
      }
      free(list);
    } else {
      ddp_getopt_error(c, argv, lo, "ddprun --bench interference", msg, sizeof msg), rc = -1;
    }
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", msg);
  }
  if (help) {
    printf("usage: ddprun --bench interference [--nproc N] [--mb 100] [--tokens 4096] [--rounds 20]\n"
           "                                   [--paths default,...,window_zero] [--coll allreduce] [--side-sms N]\n"
           "                                   [--gemm-sms M] [--out F.jsonl]\n"
           "The XL layer's GEMM mix alone and beside an all-reduce, per path: the compute slowdown.\n"
           "(copy: a 2-GPU all-reduce on the copy engines through CUDA IPC, only the sum on the SMs)\n"
           "  --mb MIB        the all-reduce's fp32 buffer, in (0, 16384] (default 100)\n"
           "  --tokens M      the GEMMs' M, 1..65536 (default 4096)\n"
           "  --rounds N      rounds of the four GEMMs per timing, 1..100000 (default 20)\n"
           "  --paths LIST    which set-ups: default, maxctas8, efficiency, zero, copy, window (symmetric window),\n"
           "                  window_zero (the window with the zero-CTA policy); default all seven\n"
           "  --coll C        allreduce (default), reducescatter or allgather, in place; or alltoall into a\n"
           "                  second buffer\n"
           "  --side-sms N    the communication stream on a partition of N SMs (a green context), the GEMMs\n"
           "                  sized for the SMs left (default 0: no partition)\n"
           "  --gemm-sms M    cuBLASLt sizes the GEMMs for M SMs (default: the device's, or what --side-sms leaves)\n"
           "  --out F.jsonl   one JSON object per path (rank 0)\n"
           "Exit status: 0 done, 1 failed, 2 bad command line.\n");
    return 0;
  }
  if (!bad[0] && optind < argc) snprintf(bad, sizeof bad, "unexpected argument '%s'", argv[optind]);
  if (bad[0]) {
    fprintf(stderr, "ddprun --bench interference: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  return ddp_bench_launch("interference", nproc, run_rank, &o);
}

/* runtime/cuda/gemm_tune.c: chooses each GEMM's cuBLASLt algorithm once, at load. cuBLASLt's
 * heuristic proposes up to CX_TUNE_CANDIDATES algorithms; each is timed on the GEMM's own operands (before
 * the init program runs, so nothing the run needs is in those buffers yet) and the fastest is kept.
 *
 * The choice must be reproducible: two runs of one plan, or two ranks of one run, computing the same GEMM
 * with different algorithms would round differently. So a choice is stored on disk under the cache
 * directory (plan/cache_dir.h, subdirectory "gemm"), keyed by the GPU model, the cuBLASLt version and the
 * GEMM's full description, and the first writer wins: whoever tuned, every run afterwards reads the same
 * file. Where no cache directory can be written, the heuristic's first proposal is used (deterministic)
 * and nothing is timed. DDP_GEMM_TUNE=0 also keeps the heuristic's first proposal.
 * Within one load, GEMMs with one key (the 48 layers' identical GEMMs) share the first one's choice.
 * DDP_GEMM_TUNE_MS = n > 0 (experiments): each candidate first runs back to back for n ms, so the GPU is at
 * its power limit as it is in a training step (docs/PERFORMANCE.md, "The power limit"), and is then timed
 * over n ms more: the choice is then the candidate fastest at the limit, which is the one that spends the
 * least energy, where the 5-run timing picks the fastest at full clock. Its choices have their own keys. */
#include "cache_dir.h"
#include "param.h"
#include "vec.h"
#include "cx.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CX_TUNE_REPS 5

typedef struct cx_tuned {
  char *key;
  cublasLtMatmulAlgo_t algo;
} cx_tuned;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static int remembered(const cx *x, const char *key, cublasLtMatmulAlgo_t *algo) {
  for (uint32_t i = 0; i < x->ntuned; i++)
    if (!strcmp(x->tuned[i].key, key)) {
      *algo = x->tuned[i].algo;
      return 1;
    }
  return 0;
}

static void remember(cx *x, const char *key, const cublasLtMatmulAlgo_t *algo) {
  char *k; /* out of memory is only a missed sharing: the next GEMM of this key is looked up on disk */
  if (ddp_vec_reserve(&x->tuned, &x->captuned, x->ntuned + 1, sizeof *x->tuned) || !(k = strdup(key))) return;
  x->tuned[x->ntuned].key = k;
  x->tuned[x->ntuned++].algo = *algo;
}

void cx_gemm_tune_free(cx *x) {
  for (uint32_t i = 0; i < x->ntuned; i++) free(x->tuned[i].key);
  free(x->tuned);
  x->tuned = NULL;
  x->ntuned = x->captuned = 0;
}

/* The stored choice for key, if the file holds that key and 64 hex bytes. */
static int load_choice(const char *path, const char *key, cublasLtMatmulAlgo_t *algo) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[1024], hex[200];
  int ok = fgets(line, sizeof line, f) && fgets(hex, sizeof hex, f);
  fclose(f);
  if (!ok) return 0;
  line[strcspn(line, "\n")] = 0;
  if (strcmp(line, key)) return 0;
  uint8_t *b = (uint8_t *)algo->data;
  for (size_t i = 0; i < sizeof algo->data; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 0;
    b[i] = (uint8_t)v;
  }
  return 1;
}

/* Writes the choice under a temporary name and links it into place, so that of several writers exactly
 * one succeeds and readers never see a partial file. */
static void store_choice(const char *path, const char *key, const cublasLtMatmulAlgo_t *algo) {
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%s\n", key);
  const uint8_t *b = (const uint8_t *)algo->data;
  for (size_t i = 0; i < sizeof algo->data; i++) fprintf(f, "%02x", b[i]);
  fprintf(f, "\n");
  if (fclose(f) == 0) (void)link(tmp, path); /* EEXIST: another writer was first */
  unlink(tmp);
}

/* Mean time of `timed` runs of g with algorithm a on stream s after `warm` unmeasured ones; < 0 when the
 * algorithm fails to run (it is then skipped). CUDA errors other than a failed launch are reported. */
static int time_runs(cx *x, const cx_gemm *g, const cublasLtMatmulAlgo_t *a, cudaStream_t s, cudaEvent_t e0,
                     cudaEvent_t e1, long warm, long timed, float *ms, char *err, size_t errcap) {
  *ms = -1.0f;
  for (long r = 0; r < warm + timed; r++) {
    if (r == warm) DDP_CUDA_TRY(cudaEventRecord(e0, s));
    if (cublasLtMatmul(x->lt, g->desc, &g->alpha, g->a, g->la, g->b, g->lb, &g->beta, g->c, g->lc, g->d, g->ld,
                       a, g->ws, g->ws_bytes, s) != CUBLAS_STATUS_SUCCESS)
      return 0;
  }
  DDP_CUDA_TRY(cudaEventRecord(e1, s));
  DDP_CUDA_TRY(cudaEventSynchronize(e1));
  float t = 0.0f;
  DDP_CUDA_TRY(cudaEventElapsedTime(&t, e0, e1));
  *ms = t / (float)timed;
  return 0;
}

/* The candidate's time: CX_TUNE_REPS runs after one warm-up; with DDP_GEMM_TUNE_MS = sustain_ms > 0, as
 * many runs as fill sustain_ms (estimated from those) unmeasured, then as many timed. */
static int time_algo(cx *x, const cx_gemm *g, const cublasLtMatmulAlgo_t *a, cudaStream_t s, cudaEvent_t e0,
                     cudaEvent_t e1, int64_t sustain_ms, float *ms, char *err, size_t errcap) {
  if (time_runs(x, g, a, s, e0, e1, 1, CX_TUNE_REPS, ms, err, errcap)) return -1;
  if (sustain_ms <= 0 || *ms < 0.0f) return 0;
  const long reps = (long)((double)sustain_ms / (*ms > 1e-4f ? (double)*ms : 1e-4)) + 1;
  return time_runs(x, g, a, s, e0, e1, reps, reps, ms, err, errcap);
}

int cx_gemm_pick(cx *x, cx_gemm *g, const char *desc, const cublasLtMatmulHeuristicResult_t *res, int nres,
                 cudaStream_t s, char *err, size_t errcap) {
  int first = -1;
  for (int k = 0; k < nres && first < 0; k++)
    if (res[k].state == CUBLAS_STATUS_SUCCESS && res[k].workspaceSize <= g->ws_bytes) first = k;
  if (first < 0) return 1; /* caller reports */
  g->algo = res[first].algo;
  int64_t tune, sustain_ms;
  if (ddp_param_int(PARAM_GEMM_TUNE, &tune, err, errcap) || ddp_param_int(PARAM_GEMM_TUNE_MS, &sustain_ms, err, errcap))
    return -1;
  if (!tune) return 0;
  char key[1024], sustained[48] = "";
  if (sustain_ms > 0) snprintf(sustained, sizeof sustained, " sustained_ms=%lld", (long long)sustain_ms);
  snprintf(key, sizeof key, "gpu=%s cublasLt=%zu ws=%zu%s %s", x->gpu_name, cublasLtGetVersion(), g->ws_bytes,
           sustained, desc);
  if (remembered(x, key, &g->algo)) return 0;
  char dir[4096], path[4200];
  if (!ddp_cache_dir("gemm", dir, sizeof dir)) return 0;
  snprintf(path, sizeof path, "%s/%016llx.algo", dir, (unsigned long long)fnv1a(key));
  cublasLtMatmulAlgo_t stored;
  cublasLtMatmulHeuristicResult_t chk;
  if (load_choice(path, key, &stored) &&
      cublasLtMatmulAlgoCheck(x->lt, g->desc, g->la, g->lb, g->lc, g->ld, &stored, &chk) == CUBLAS_STATUS_SUCCESS &&
      chk.workspaceSize <= g->ws_bytes) {
    g->algo = stored;
    remember(x, key, &stored);
    return 0;
  }
  cudaEvent_t e0 = NULL, e1 = NULL;
  DDP_CUDA_TRY(cudaEventCreate(&e0));
  if (DDP_CUDA_CHECK(cudaEventCreate(&e1), err, errcap)) {
    cudaEventDestroy(e0);
    return -1;
  }
  float best = -1.0f;
  int rc = 0;
  for (int k = 0; k < nres && !rc; k++) {
    if (res[k].state != CUBLAS_STATUS_SUCCESS || res[k].workspaceSize > g->ws_bytes) continue;
    float ms;
    rc = time_algo(x, g, &res[k].algo, s, e0, e1, sustain_ms, &ms, err, errcap);
    if (!rc && ms >= 0.0f && (best < 0.0f || ms < best)) best = ms, g->algo = res[k].algo;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (rc) return -1;
  /* A failed candidate may leave an error behind; a sticky one shows up here. */
  (void)cudaGetLastError();
  DDP_CUDA_TRY(cudaStreamSynchronize(s));
  store_choice(path, key, &g->algo);
  /* whoever wrote first; a choice that cannot be stored is not kept (the next run could time differently) */
  g->algo = load_choice(path, key, &stored) ? stored : res[first].algo;
  remember(x, key, &g->algo);
  x->gemm_timed = 1;
  return 0;
}

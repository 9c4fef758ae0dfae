/* tests/unit/cuda/gpu_kernels.c (label gpu): every kernel op of plan/ops.h on the GPU against the CPU reference
 * (runtime/ref, ddp_ref_ops). For each op, activation dtype (f32, bf16) and shape of tests/fixtures/kernel_cases.c:
 * fresh random inputs (seed printed; DDP_SEED=n repeats a run), the instruction specialised by
 * ddp_kernel_launch, compiled by ddp_nvrtc_compile, loaded and launched through runtime/cuda with every
 * output poisoned (NaN) first; the reference runs on the host copies of the same inputs. Each output is
 * compared by ||gpu - ref|| / ||ref|| (f32 < 1e-4, bf16 < 2e-2); a NaN where the reference has none fails.
 * One line per case, then a summary. No GPU (cudaGetDeviceCount fails or finds none): exit 77 (SKIP).
 * Options: --quick (fewer shapes), --op NAME[,NAME...] (those ops; an unknown name is an error, exit 2),
 * --verbose (print specs). */
#include "check.h"
#include "codegen.h"
#include "cuda_check.h"
#include "kernels.h"
#include "kernel_cases.h"
#include "param.h"
#include "ref_ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state;
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double rng_u01(void) { return ((rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double rng_normal(void) { return sqrt(-2.0 * log(rng_u01())) * cos(6.283185307179586 * rng_u01()); }

static void poison(void *p, int dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (dt == DT_F32) ((uint32_t *)p)[i] = 0x7fc00000u;
    else if (dt == DT_BF16) ((uint16_t *)p)[i] = 0x7fc0u;
    else if (dt == DT_I32) ((int32_t *)p)[i] = -999999;
  }
}

static void fill(void *p, const kc_buf *b) {
  for (int64_t i = 0; i < b->n; i++) {
    double v = 0;
    switch (b->init) {
    case KC_NORMAL: v = b->a * rng_normal(); break;
    case KC_UNIFORM: v = b->a + (b->b - b->a) * rng_u01(); break;
    case KC_INT: v = floor(b->a + (b->b - b->a) * rng_u01()); break;
    case KC_CONST: v = b->a; break;
    case KC_INV_FREQ: v = (float)pow(b->a, -2.0 * (double)i / b->b); break;
    case KC_SCALARS: {
      const double s[8] = {b->a, b->b, 1.0, 0.7, 0, 0, 0, 0};
      v = i < 8 ? s[i] : 0;
      break;
    }
    case KC_PROBS: v = rng_u01() * 2.0 / b->a; break;
    }
    ddp_store(p, b->dt, i, v);
  }
}

typedef struct result {
  int ok;
  double worst;
} result;

/* Compares one output; prints the details of a failure. */
static int compare(const char *label, int slot, const void *gpu, const void *ref, const kc_buf *b, double tol,
                   double floor_rms, double *rel_out) {
  double num = 0, den = 0, maxabs = 0;
  int64_t nan_bad = 0, first_nan = -1, worst_i = -1;
  for (int64_t i = 0; i < b->n; i++) {
    const double g = ddp_load(gpu, b->dt, i), r = ddp_load(ref, b->dt, i);
    if (isnan(g) || isnan(r)) {
      if (isnan(g) != isnan(r)) {
        if (first_nan < 0) first_nan = i;
        nan_bad++;
      }
      continue;
    }
    const double d = fabs(g - r);
    num += d * d;
    den += r * r;
    if (d > maxabs) maxabs = d, worst_i = i;
  }
  if (den < floor_rms * floor_rms * (double)b->n) den = floor_rms * floor_rms * (double)b->n;
  const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
  *rel_out = rel;
  if (nan_bad == 0 && rel < tol) return 1;
  printf("    p%d: rel %.3e (tol %.0e), max |gpu-ref| %.3e at [%lld] (gpu %.6g ref %.6g), %lld NaN mismatches%s",
         slot, rel, tol, maxabs, (long long)worst_i, worst_i >= 0 ? ddp_load(gpu, b->dt, worst_i) : 0.0,
         worst_i >= 0 ? ddp_load(ref, b->dt, worst_i) : 0.0, (long long)nan_bad, first_nan >= 0 ? "" : "\n");
  if (first_nan >= 0)
    printf(", first at [%lld] (gpu %.6g ref %.6g)\n", (long long)first_nan, ddp_load(gpu, b->dt, first_nan),
           ddp_load(ref, b->dt, first_nan));
  (void)label;
  return 0;
}

/* lse and delta for an attention-backward case, from the reference forward on its inputs. */
static void attention_stats(const kc_case *c, void **host) {
  const int64_t B = c->in.i[0], T = c->in.i[1], so = c->in.i[7];
  const int act = c->buf[0].dt;
  void *o = calloc((size_t)(B * T * so), ddp_dtype_size(act));
  ddp_kargs k = {0};
  uint8_t dt[DDP_MAX_PTRS] = {0};
  memcpy(k.i, c->in.i, sizeof k.i);
  memcpy(k.f, c->in.f, sizeof k.f);
  k.p[0] = host[0], k.p[1] = host[1], k.p[2] = host[2], k.p[3] = o, k.p[4] = host[4];
  dt[0] = dt[1] = dt[2] = dt[3] = (uint8_t)act, dt[4] = DT_F32;
  ref_attn_fwd(&k, dt);
  ddp_kargs kp = k;
  uint8_t dp[DDP_MAX_PTRS] = {0};
  kp.p[0] = o, kp.p[1] = host[5], kp.p[2] = host[6];
  dp[0] = dp[1] = (uint8_t)act, dp[2] = DT_F32;
  ref_attn_bwd_prep(&kp, dp);
  free(o);
}

static const char *g_arch;
static int g_verbose;
static ddp_codegen_opts g_opts; /* DDP_TUNE_* from the environment pick tile variants (DDP_TUNE_FWD_WGMMA=2: mma.sync) */

/* Runs one case; returns 1 pass, 0 fail. */
static int run_case(kc_case *c, int idx, uint64_t seed) {
  char err[2048];
  ddp_launch L;
  const int op = c->in.op;
  const double tol_act = c->buf[0].dt == DT_BF16 || c->in.dt[1] == DT_BF16 ? 2e-2 : 1e-4;
  if (ddp_kernel_launch(&c->in, g_arch, &g_opts, &L, err, sizeof err)) {
    printf("FAIL %s: launch refused: %s\n", c->label, err);
    return 0;
  }
  if (g_verbose) printf("  template %s, spec:\n%s  grid %u,%u block %u smem %u\n", L.tpl, L.spec, L.grid[0], L.grid[1], L.block[0], L.smem);
  uint8_t *cubin = NULL;
  uint64_t size = 0;
  char hash[17];
  if (ddp_nvrtc_compile(L.tpl, ddp_op_entry(op), L.spec, g_arch, &g_opts, &cubin, &size, hash, err, sizeof err)) {
    printf("FAIL %s: %s\n", c->label, err);
    return 0;
  }
  ddp_cuda_kernel kern;
  if (ddp_cuda_module_load(cubin, size, ddp_op_entry(op), L.spec, &kern, err, sizeof err)) {
    printf("FAIL %s: %s\n", c->label, err);
    free(cubin);
    return 0;
  }
  free(cubin);
  rng_state = seed * 1000003ull + (uint64_t)idx;
  void *host[DDP_MAX_PTRS] = {0}, *ref[DDP_MAX_PTRS] = {0}, *dev[DDP_MAX_PTRS] = {0}, *back[DDP_MAX_PTRS] = {0};
  int pass = 1;
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    const kc_buf *b = &c->buf[k];
    if (b->role == KC_UNUSED || b->alias >= 0) continue;
    const size_t bytes = (size_t)b->n * ddp_dtype_size(b->dt);
    host[k] = malloc(bytes);
    if (b->role == KC_OUT) poison(host[k], b->dt, b->n);
    else fill(host[k], b);
  }
  for (int k = 0; k < DDP_MAX_PTRS; k++)
    if (c->buf[k].role != KC_UNUSED && c->buf[k].alias >= 0) host[k] = host[c->buf[k].alias];
  if (c->needs_fwd) attention_stats(c, host);
  ddp_kargs ka = {0}, kr = {0};
  memcpy(ka.i, c->in.i, sizeof ka.i);
  memcpy(ka.f, c->in.f, sizeof ka.f);
  kr = ka;
  for (int k = 0; k < DDP_MAX_PTRS && pass; k++) {
    const kc_buf *b = &c->buf[k];
    if (b->role == KC_UNUSED) continue;
    const size_t bytes = (size_t)b->n * ddp_dtype_size(b->dt);
    if (b->alias >= 0) {
      dev[k] = dev[b->alias], ref[k] = ref[b->alias];
    } else {
      ref[k] = malloc(bytes);
      memcpy(ref[k], host[k], bytes);
      if (DDP_CUDA_CHECK(cudaMalloc(&dev[k], bytes), err, sizeof err) ||
          DDP_CUDA_CHECK(cudaMemcpy(dev[k], host[k], bytes, cudaMemcpyHostToDevice), err, sizeof err)) {
        printf("FAIL %s: p%d (%zu bytes): %s\n", c->label, k, bytes, err);
        pass = 0;
      }
    }
    ka.p[k] = dev[k];
    kr.p[k] = ref[k];
  }
  ddp_instr geo = c->in;
  memcpy(geo.grid, L.grid, sizeof geo.grid);
  memcpy(geo.block, L.block, sizeof geo.block);
  geo.smem = L.smem;
  if (pass && (ddp_cuda_launch(&kern, &geo, &ka, 0, err, sizeof err) ||
               DDP_CUDA_CHECK(cudaDeviceSynchronize(), err, sizeof err))) {
    printf("FAIL %s: %s (grid %u,%u block %u smem %u)\n", c->label, err, L.grid[0], L.grid[1], L.block[0], L.smem);
    pass = 0;
  }
  double worst = 0;
  if (pass) {
    ddp_ref_ops[op](&kr, c->in.dt);
    for (int k = 0; k < DDP_MAX_PTRS; k++) {
      const kc_buf *b = &c->buf[k];
      if ((b->role != KC_OUT && b->role != KC_INOUT) || b->alias >= 0) continue;
      const size_t bytes = (size_t)b->n * ddp_dtype_size(b->dt);
      back[k] = malloc(bytes);
      if (DDP_CUDA_CHECK(cudaMemcpy(back[k], dev[k], bytes, cudaMemcpyDeviceToHost), err, sizeof err)) {
        printf("FAIL %s: %s\n", c->label, err);
        pass = 0;
        break;
      }
      const double tol = b->dt == DT_BF16 ? 2e-2 : tol_act;
      double rel = 0;
      /* Attention gradients at T = 1 are exactly 0 (dS = P (dP - delta) with P = 1, o = v): the outputs are
       * pure cancellation noise, so errors there are measured against an rms floor of 1e-2. */
      const double floor_rms = (op == OP_ATTN_BWD_DKV || op == OP_ATTN_BWD_DQ || op == OP_ATTN_BWD_DKV_ROPE ||
                                op == OP_ATTN_BWD_DQ_ROPE || op == OP_ATTN_BWD_FUSED) ? 1e-2 : 0.0;
      if (!compare(c->label, k, back[k], ref[k], b, tol, floor_rms, &rel)) pass = 0;
      if (rel > worst) worst = rel;
    }
  }
  printf("%s %-70s rel %.2e\n", pass ? "ok  " : "FAIL", c->label, worst);
  fflush(stdout);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    if (c->buf[k].role == KC_UNUSED || c->buf[k].alias >= 0) continue;
    free(host[k]);
    free(ref[k]);
    free(back[k]);
    if (dev[k]) cudaFree(dev[k]);
  }
  ddp_cuda_module_unload(&kern);
  return pass;
}

/* Marks in want[] the ops of a comma-separated list of op names; 0, or -1 naming the first unknown one. */
static int parse_ops(const char *list, int want[OP_COUNT]) {
  for (const char *p = list; *p;) {
    const size_t n = strcspn(p, ",");
    int found = 0;
    for (int op = 0; op < OP_COUNT; op++)
      if (strlen(ddp_op_name(op)) == n && !strncmp(p, ddp_op_name(op), n)) want[op] = found = 1;
    if (!found) {
      fprintf(stderr, "gpu_kernels: --op: '%.*s' is not an op name (plan/ops.h, e.g. ATTN_FWD)\n", (int)n, p);
      return -1;
    }
    p += n + (p[n] == ',');
  }
  return 0;
}

int main(int argc, char **argv) {
  int quick = 0;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
    else if (!strcmp(argv[i], "--op") && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: gpu_kernels [--quick] [--op NAME[,NAME...]] [--verbose]\n");
      return 2;
    }
  }
  static int want[OP_COUNT];
  if (only && parse_ops(only, want)) return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  int ndev = 0;
  cudaError_t rc = cudaGetDeviceCount(&ndev);
  if (rc != cudaSuccess || ndev == 0) {
    printf("SKIP: no usable GPU (cudaGetDeviceCount: %s, %d devices)\n",
           rc != cudaSuccess ? cudaGetErrorString(rc) : "ok", ndev);
    return 77;
  }
  struct cudaDeviceProp prop;
  char err[512];
  if (!CHECK(!DDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0), err, sizeof err), "%s", err))
    return check_report("gpu_kernels");
  if (!CHECK(!ddp_codegen_opts_from_env(&g_opts, err, sizeof err), "%s", err)) return check_report("gpu_kernels");
  int64_t cap = 0; /* DDP_PERSISTENT_BLOCKS: persistent kernels' blocks walk more work tiles */
  if (!CHECK(!ddp_param_int(PARAM_PERSISTENT_BLOCKS, &cap, err, sizeof err), "%s", err)) return check_report("gpu_kernels");
  ddp_cuda_set_persistent_blocks((unsigned)cap);
  static char arch[32];
  snprintf(arch, sizeof arch, "sm_%d%d%s", prop.major, prop.minor, prop.major == 9 ? "a" : "");
  g_arch = arch;
  const char *se = getenv("DDP_SEED");
  const uint64_t seed = se && *se ? strtoull(se, NULL, 10) : (uint64_t)time(NULL);
  printf("gpu_kernels: %s (%s, %d SMs), seed %llu (DDP_SEED=%llu repeats this run)\n", prop.name, arch,
         prop.multiProcessorCount, (unsigned long long)seed, (unsigned long long)seed);
  int nfail = 0, idx = 0;
  char failed[64][160];
  for (int op = 0; op < OP_COUNT; op++) {
    if (only && !want[op]) continue;
    if (op == OP_ATTN_BWD_FUSED && strcmp(g_arch, "sm_90a") != 0) { /* wgmma and TMA: Hopper only */
      printf("skip %s: needs sm_90a (this GPU is %s)\n", ddp_op_name(op), g_arch);
      continue;
    }
    kc_shape shapes[128];
    const int ns = kc_shapes(op, shapes, 128, quick);
    for (int a = 0; a < 2; a++)
      for (int s = 0; s < ns; s++) {
        kc_case c;
        if (kc_make(op, a ? DT_BF16 : DT_F32, shapes[s], &c)) continue;
        if (!CHECK(run_case(&c, idx++, seed), "%s", c.label)) {
          if (nfail < 64) snprintf(failed[nfail], sizeof failed[0], "%s", c.label);
          nfail++;
        }
      }
  }
  printf("\nseed %llu\n", (unsigned long long)seed);
  for (int i = 0; i < nfail && i < 64; i++) printf("  failed: %s\n", failed[i]);
  return check_report("gpu_kernels"); /* the last line: "gpu_kernels: N passed, N failed" */
}

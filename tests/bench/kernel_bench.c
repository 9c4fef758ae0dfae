/* tests/bench/kernel_bench.c (target ddpbench_kernels, not a test): times the plan's kernels on the GPU.
 *   (a) RMSNorm f32, 50000 x {1024, 2048, 4096, 8192}: ours forward, backward (+ REDUCE_ROWS of the dg
 *       table), forward+backward, an unfused three-kernel baseline forward, and our LayerNorm; GB/s count
 *       each input read once and each output written once. Also the backward for several P.
 *   (b) attention, batch 1 x 16 heads, causal: flash (ATTN_FWD; ATTN_BWD_PREP + DKV + DQ) against the
 *       naive path with materialised [16, T, T] f32 scores (a plain batched GEMM of this benchmark's own,
 *       ATTN_NAIVE_SOFTMAX(_BWD)), for d in {16, 32, 64, 128}, T in 256 .. 65536, bf16 and f32, forward,
 *       backward, both; OOM where the memory runs out. Then the leaderboard configuration on its own line.
 * Timing: CUDA events around each repetition after a warm-up, median. Every CUDA call is checked.
 * Usage: ddpbench_kernels [--quick] [--out FILE.json] [--only rmsnorm|attention|seeds|leaderboard|none] [--naive-max T]
 *        [--tune] [--tune-shape B:H:T] [--tune-d 64|128] [--variants "A;B"] [--inner N] [--gpu-time N] [--fused] [--pdl]
 * (--only leaderboard: the leaderboard configuration once, at head dims 64 and 128, for a profiler)
 * (--tune first times the leaderboard configuration, or --tune-shape's, under attention tile variants, at head
 * dims 64 and 128 or --tune-d's, or --variants' sets of DDP_TUNE_* settings, ";"-separated; --inner N times N
 * runs back to back per repetition, for short kernels.)
 * (--fused: the bf16 d 64 / 128 backward as ATTN_BWD_PREP + ATTN_BWD_FUSED + ATTN_DQ_STORE on sm_90a; the
 * leaderboard line then gives prep, fused and store in place of prep, dkv and dq.)
 * (--pdl: every template kernel launched with programmatic stream serialisation, as ddprun under DDP_PDL=1.)
 * (--gpu-time N: N runs back to back queued behind a GPU spin, three rounds, as torch_extra.py times SDPA.) */
#include "bench_naive.h"
#include "codegen.h"
#include "cuda_check.h"
#include "kernels.h"
#include <math.h>
#include <nvrtc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_err[2048];
static char g_arch[32];
static int g_sms;
#define DIE(...)                                  \
  do {                                            \
    fprintf(stderr, "ddpbench_kernels: ");        \
    fprintf(stderr, __VA_ARGS__);                 \
    fprintf(stderr, "\n");                        \
    exit(1);                                      \
  } while (0)
#define CK(call)                                              \
  do {                                                        \
    if (DDP_CUDA_CHECK(call, g_err, sizeof g_err)) DIE("%s", g_err); \
  } while (0)

/* ---- JSON records ---------------------------------------------------------------------------- */
static char *g_json;
static size_t g_json_len, g_json_cap;
static void jrec(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  const size_t n = strlen(line) + 4;
  if (g_json_len + n >= g_json_cap) {
    g_json_cap = (g_json_cap + n) * 2;
    g_json = realloc(g_json, g_json_cap);
  }
  g_json_len += (size_t)sprintf(g_json + g_json_len, "%s  %s", g_json_len ? ",\n" : "", line);
}

/* ---- kernels: plan ops (templates) and the benchmark's own ------------------------------------- */
typedef struct prep {
  ddp_instr geo;
  ddp_cuda_kernel *k;
} prep;

typedef struct cached {
  int op;
  char spec[2048];
  ddp_cuda_kernel k;
} cached;
static cached *g_cache[512];
static int g_ncache;

static prep prepare(const ddp_instr *in) {
  ddp_launch L;
  ddp_codegen_opts o; /* read each time: --tune sets DDP_TUNE_* between variants */
  if (ddp_codegen_opts_from_env(&o, g_err, sizeof g_err)) DIE("%s", g_err);
  if (ddp_kernel_launch(in, g_arch, &o, &L, g_err, sizeof g_err)) DIE("%s", g_err);
  prep p = {.geo = *in};
  memcpy(p.geo.grid, L.grid, sizeof L.grid);
  memcpy(p.geo.block, L.block, sizeof L.block);
  p.geo.smem = L.smem;
  char key[sizeof g_cache[0]->spec]; /* the template and the spec: two templates may share a spec's text */
  if (snprintf(key, sizeof key, "%s\n%s", L.tpl, L.spec) >= (int)sizeof key) DIE("kernel spec too long");
  for (int i = 0; i < g_ncache; i++)
    if (g_cache[i]->op == in->op && !strcmp(g_cache[i]->spec, key)) return p.k = &g_cache[i]->k, p;
  if (g_ncache == (int)(sizeof g_cache / sizeof g_cache[0])) DIE("too many kernels");
  cached *c = calloc(1, sizeof *c);
  c->op = in->op;
  snprintf(c->spec, sizeof c->spec, "%s", key);
  uint8_t *cubin = NULL;
  uint64_t size = 0;
  char hash[17];
  if (ddp_nvrtc_compile(L.tpl, ddp_op_entry(in->op), L.spec, g_arch, &o, &cubin, &size, hash, g_err,
                        sizeof g_err))
    DIE("%s", g_err);
  if (ddp_cuda_module_load(cubin, size, ddp_op_entry(in->op), L.spec, &c->k, g_err, sizeof g_err)) DIE("%s", g_err);
  free(cubin);
  g_cache[g_ncache++] = c;
  p.k = &c->k;
  return p;
}
static void go(prep *p, const ddp_kargs *a) {
  if (ddp_cuda_launch(p->k, &p->geo, a, 0, g_err, sizeof g_err)) DIE("%s", g_err);
}

static uint8_t *g_local_cubin;
static size_t g_local_size;
static void compile_local(void) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, bench_naive_src, "bench_naive.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
    DIE("nvrtcCreateProgram(bench_naive.cu) failed");
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=%s", g_arch);
  const char *opts[] = {arch, "--std=c++17"};
  if (nvrtcCompileProgram(prog, 2, opts) != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    char *log = malloc(n + 1);
    nvrtcGetProgramLog(prog, log);
    log[n] = 0;
    DIE("bench_naive.cu: NVRTC compile failed:\n%s", log);
  }
  if (nvrtcGetCUBINSize(prog, &g_local_size) != NVRTC_SUCCESS) DIE("nvrtcGetCUBINSize(bench_naive.cu) failed");
  g_local_cubin = malloc(g_local_size);
  if (nvrtcGetCUBIN(prog, (char *)g_local_cubin) != NVRTC_SUCCESS) DIE("nvrtcGetCUBIN(bench_naive.cu) failed");
  nvrtcDestroyProgram(&prog);
}
static prep local(const char *name, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t block) {
  cached *c = NULL;
  for (int i = 0; i < g_ncache && !c; i++)
    if (g_cache[i]->op < 0 && !strcmp(g_cache[i]->spec, name)) c = g_cache[i];
  if (!c) {
    if (g_ncache == (int)(sizeof g_cache / sizeof g_cache[0])) DIE("too many kernels");
    c = calloc(1, sizeof *c);
    c->op = -1;
    snprintf(c->spec, sizeof c->spec, "%s", name);
    if (ddp_cuda_module_load(g_local_cubin, g_local_size, name, NULL, &c->k, g_err, sizeof g_err)) DIE("%s", g_err);
    g_cache[g_ncache++] = c;
  }
  prep p = {.geo = ddp_instr_blank(I_KERNEL, 0), .k = &c->k};
  p.geo.grid[0] = gx, p.geo.grid[1] = gy, p.geo.grid[2] = gz;
  p.geo.block[0] = block, p.geo.block[1] = p.geo.block[2] = 1;
  return p;
}

/* ---- memory --------------------------------------------------------------------------------- */
static void *dalloc(size_t bytes) { /* NULL on out-of-memory (the error is cleared) */
  void *p = NULL;
  cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 1);
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return NULL;
  }
  CK(rc);
  return p;
}
static void dfree(void *p) {
  if (p) CK(cudaFree(p));
}
static prep g_fill;
static void fill_normal(void *p, int64_t n, int bf16, float std, uint64_t seed) {
  ddp_kargs a = {0};
  a.p[0] = p, a.i[0] = n, a.i[1] = bf16, a.i[2] = (int64_t)seed, a.f[0] = std;
  g_fill.geo.grid[0] = (uint32_t)(g_sms * 16);
  go(&g_fill, &a);
}

/* ---- timing --------------------------------------------------------------------------------- */
typedef void (*work_fn)(void *ctx);
static int cmp_f(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}
static double g_budget_ms = 300; /* per measurement */
/* --inner N: each timed repetition runs the work up to N times back to back between its events, as many
 * as make about 1 ms (the time is per run), so a kernel of a few microseconds is not timed with the host's
 * launch latency in front of it */
static int g_inner = 1;
/* --gpu-time N: three rounds, each N runs back to back queued behind a GPU spin of 10^8 cycles (about 50 ms),
 * the median run time: no host latency in front of any run, and the GPU's clocks and power over N runs in a
 * row, as torch_extra.py times SDPA (torch.cuda._sleep(10^8), 50 runs, three rounds) */
static int g_gpu_time;
static void spin(void) {
  prep p = local("ddp_spin", 1, 1, 1, 32);
  ddp_kargs a = {0};
  a.i[0] = 100000000;
  go(&p, &a);
}
/* One timed repetition: n runs of f back to back between two events (behind a GPU spin when asked), the
 * time per run in ms. */
static float rep_ms(work_fn f, void *ctx, int n, int behind_spin, cudaEvent_t e0, cudaEvent_t e1) {
  if (behind_spin) spin();
  CK(cudaEventRecord(e0, 0));
  for (int i = 0; i < n; i++) f(ctx);
  CK(cudaEventRecord(e1, 0));
  CK(cudaEventSynchronize(e1));
  float t = 0;
  CK(cudaEventElapsedTime(&t, e0, e1));
  return t / (float)n;
}
/* The median over repetitions: --gpu-time's three rounds, else as many repetitions as fit g_budget_ms (3..25)
 * of --inner's runs each (one without it). */
static double time_ms(work_fn f, void *ctx) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  f(ctx); /* warm-up */
  int inner = g_gpu_time, reps = 3;
  if (!g_gpu_time) {
    const float t0 = rep_ms(f, ctx, 1, 0, e0, e1);
    inner = 1;
    if (g_inner > 1 && t0 > 0) {
      const double need = ceil(1.0 / t0);
      inner = need >= g_inner ? g_inner : (int)need;
    }
    reps = t0 > 0 ? (int)(g_budget_ms / (t0 * inner)) : 20;
    reps = reps < 3 ? 3 : reps > 25 ? 25 : reps;
  }
  float ts[25];
  for (int r = 0; r < reps; r++) ts[r] = rep_ms(f, ctx, inner, g_gpu_time > 0, e0, e1);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  qsort(ts, (size_t)reps, sizeof ts[0], cmp_f);
  return ts[reps / 2];
}

/* ---- (a) RMSNorm ---------------------------------------------------------------------------- */
typedef struct rms_ctx {
  prep fwd, bwd, red, lnf, lnb, lred, n1, n2, n3;
  ddp_kargs af, ab, ar, alf, alb, alr1, alr2, an1, an2, an3;
} rms_ctx;
static void w_rms_fwd(void *c) { rms_ctx *x = c; go(&x->fwd, &x->af); }
static void w_rms_bwd(void *c) {
  rms_ctx *x = c;
  go(&x->bwd, &x->ab);
  go(&x->red, &x->ar);
}
static void w_rms_both(void *c) {
  w_rms_fwd(c);
  w_rms_bwd(c);
}
static void w_rms_naive(void *c) {
  rms_ctx *x = c;
  go(&x->n1, &x->an1);
  go(&x->n2, &x->an2);
  go(&x->n3, &x->an3);
}
static void w_ln_fwd(void *c) { rms_ctx *x = c; go(&x->lnf, &x->alf); }
static void w_ln_bwd(void *c) {
  rms_ctx *x = c;
  go(&x->lnb, &x->alb);
  go(&x->lred, &x->alr1);
  go(&x->lred, &x->alr2);
}

static ddp_instr kinstr(int op) {
  ddp_instr in = ddp_instr_blank(I_KERNEL, 0);
  in.op = (uint16_t)op;
  return in;
}

static void bench_rmsnorm(int quick) {
  const int64_t N = 50000, Ds[] = {1024, 2048, 4096, 8192};
  const int64_t P = 4 * g_sms;
  printf("\n(a) RMSNorm f32, N = %lld rows: time (ms) and GB/s (each input read once, each output written once);\n"
         "    dg partials P = %lld folded by REDUCE_ROWS; copy ceiling H200 4.12 TB/s\n",
         (long long)N, (long long)P);
  printf("%6s | %-17s | %-17s | %-17s | %-17s | %-17s | %-17s\n", "D", "ours fwd", "ours bwd", "ours fwd+bwd",
         "naive fwd (3 k.)", "layernorm fwd", "layernorm bwd");
  for (int di = 0; di < 4; di++) {
    const int64_t D = Ds[di];
    if (quick && D != 4096) continue;
    const size_t nd = (size_t)(N * D) * 4;
    float *x = dalloc(nd), *y = dalloc(nd), *dy = dalloc(nd), *dx = dalloc(nd), *t = dalloc(nd);
    float *g = dalloc((size_t)D * 4), *b = dalloc((size_t)D * 4), *dg = dalloc((size_t)D * 4), *db = dalloc((size_t)D * 4);
    float *rstd = dalloc((size_t)N * 4), *mean = dalloc((size_t)N * 4);
    float *part = dalloc((size_t)(P * D) * 4), *part2 = dalloc((size_t)(P * D) * 4);
    if (!x || !y || !dy || !dx || !t || !part || !part2) DIE("RMSNorm D=%lld: out of memory", (long long)D);
    fill_normal(x, N * D, 0, 1.f, 1);
    fill_normal(dy, N * D, 0, 0.02f, 2);
    fill_normal(g, D, 0, 0.1f, 3);
    fill_normal(b, D, 0, 0.1f, 4);
    rms_ctx c;
    memset(&c, 0, sizeof c);
    ddp_instr in = kinstr(OP_RMSNORM_FWD);
    in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
    in.i[0] = N, in.i[1] = D, in.f[0] = 1e-5f;
    c.fwd = prepare(&in);
    c.af.p[0] = x, c.af.p[1] = g, c.af.p[2] = y, c.af.p[3] = rstd;
    memcpy(c.af.i, in.i, sizeof in.i), memcpy(c.af.f, in.f, sizeof in.f);
    in = kinstr(OP_RMSNORM_BWD);
    for (int k = 0; k < 6; k++) in.dt[k] = DT_F32;
    in.i[0] = N, in.i[1] = D, in.i[2] = 0, in.i[3] = P;
    c.bwd = prepare(&in);
    c.ab.p[0] = x, c.ab.p[1] = g, c.ab.p[2] = dy, c.ab.p[3] = rstd, c.ab.p[4] = dx, c.ab.p[5] = part;
    memcpy(c.ab.i, in.i, sizeof in.i);
    in = kinstr(OP_REDUCE_ROWS);
    in.dt[0] = in.dt[1] = DT_F32;
    in.i[0] = P, in.i[1] = D, in.i[2] = 0, in.f[0] = 1.f;
    c.red = prepare(&in);
    c.ar.p[0] = part, c.ar.p[1] = dg;
    memcpy(c.ar.i, in.i, sizeof in.i), memcpy(c.ar.f, in.f, sizeof in.f);
    c.alr1 = c.ar, c.alr2 = c.ar;
    c.alr2.p[0] = part2, c.alr2.p[1] = db;
    c.lred = c.red;
    in = kinstr(OP_LAYERNORM_FWD);
    for (int k = 0; k < 6; k++) in.dt[k] = DT_F32;
    in.i[0] = N, in.i[1] = D, in.f[0] = 1e-5f;
    c.lnf = prepare(&in);
    c.alf.p[0] = x, c.alf.p[1] = g, c.alf.p[2] = b, c.alf.p[3] = y, c.alf.p[4] = mean, c.alf.p[5] = rstd;
    memcpy(c.alf.i, in.i, sizeof in.i), memcpy(c.alf.f, in.f, sizeof in.f);
    in = kinstr(OP_LAYERNORM_BWD);
    for (int k = 0; k < 8; k++) in.dt[k] = DT_F32;
    in.i[0] = N, in.i[1] = D, in.i[2] = 0, in.i[3] = P;
    c.lnb = prepare(&in);
    c.alb.p[0] = x, c.alb.p[1] = g, c.alb.p[2] = dy, c.alb.p[3] = mean, c.alb.p[4] = rstd, c.alb.p[5] = dx;
    c.alb.p[6] = part, c.alb.p[7] = part2;
    memcpy(c.alb.i, in.i, sizeof in.i);
    c.n1 = local("ddp_rms_sumsq", (uint32_t)N, 1, 1, 256);
    c.n2 = local("ddp_rms_scale", (uint32_t)(g_sms * 16), 1, 1, 256);
    c.n3 = local("ddp_rms_mul", (uint32_t)(g_sms * 16), 1, 1, 256);
    c.an1.p[0] = x, c.an1.p[1] = rstd, c.an1.i[0] = N, c.an1.i[1] = D, c.an1.f[0] = 1e-5f;
    c.an2 = c.an1, c.an2.p[2] = t;
    c.an3.p[0] = t, c.an3.p[1] = g, c.an3.p[2] = y, c.an3.i[0] = N, c.an3.i[1] = D;
    w_ln_fwd(&c); /* mean/rstd for the LayerNorm backward */
    const double bf = (double)nd * 2 + N * 4 + D * 4;                      /* x, g -> y, rstd */
    const double bb = (double)nd * 3 + N * 4 + D * 4 * 2 + P * D * 4 * 2.; /* x, dy, rstd, g -> dx, table -> dg */
    const double blf = (double)nd * 2 + N * 8 + D * 8;
    const double blb = (double)nd * 3 + N * 8 + D * 4 * 3 + P * D * 4 * 4.;
    const double tf = time_ms(w_rms_fwd, &c), tb = time_ms(w_rms_bwd, &c), tfb = time_ms(w_rms_both, &c);
    const double tn = time_ms(w_rms_naive, &c), tlf = time_ms(w_ln_fwd, &c), tlb = time_ms(w_ln_bwd, &c);
#define GBS(bytes, ms) ((bytes) / ((ms) * 1e-3) / 1e9)
    printf("%6lld | %7.3f %7.0f  | %7.3f %7.0f  | %7.3f %7.0f  | %7.3f %7.0f  | %7.3f %7.0f  | %7.3f %7.0f\n",
           (long long)D, tf, GBS(bf, tf), tb, GBS(bb, tb), tfb, GBS(bf + bb, tfb), tn, GBS(bf, tn), tlf, GBS(blf, tlf),
           tlb, GBS(blb, tlb));
    jrec("{\"bench\":\"rmsnorm\",\"N\":%lld,\"D\":%lld,\"fwd_ms\":%.4f,\"fwd_gbs\":%.1f,\"bwd_ms\":%.4f,\"bwd_gbs\":%.1f,"
         "\"fwdbwd_ms\":%.4f,\"naive_fwd_ms\":%.4f,\"ln_fwd_ms\":%.4f,\"ln_bwd_ms\":%.4f,\"P\":%lld}",
         (long long)N, (long long)D, tf, GBS(bf, tf), tb, GBS(bb, tb), tfb, tn, tlf, tlb, (long long)P);
    if (D == 4096 && !quick) { /* the backward against the partial-table size */
      const int64_t Ps[] = {g_sms, 2 * g_sms, 4 * g_sms, 8 * g_sms, 16 * g_sms};
      printf("       RMSNorm bwd (+REDUCE_ROWS) at D=4096 by P:");
      for (int pi = 0; pi < 5; pi++) {
        if ((size_t)Ps[pi] > (size_t)P) {
          dfree(part);
          part = dalloc((size_t)(Ps[pi] * D) * 4);
          if (!part) DIE("out of memory");
          c.ab.p[5] = c.ar.p[0] = part;
        }
        ddp_instr ib = c.bwd.geo, ir = c.red.geo;
        ib.i[3] = Ps[pi], ir.i[0] = Ps[pi];
        c.bwd = prepare(&ib), c.red = prepare(&ir);
        c.ab.i[3] = Ps[pi], c.ar.i[0] = Ps[pi];
        const double tp = time_ms(w_rms_bwd, &c);
        printf("  P=%lld %.3f ms", (long long)Ps[pi], tp);
        jrec("{\"bench\":\"rmsnorm_bwd_P\",\"D\":4096,\"P\":%lld,\"ms\":%.4f}", (long long)Ps[pi], tp);
      }
      printf("\n");
    }
    void *ptrs[] = {x, y, dy, dx, t, g, b, dg, db, rstd, mean, part, part2};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) dfree(ptrs[i]);
  }
}

/* ---- (b) attention -------------------------------------------------------------------------- */
typedef struct attn_ctx {
  prep fwd, prep_, dkv, dq, sm, smb, g_qk, g_pv, g_dv, g_dp, g_dq, g_dk;
  ddp_kargs af, ap, adkv, adq, asm_, asmb, aqk, apv, adv, adp, adqn, adkn;
} attn_ctx;
static void w_fl_fwd(void *c) { attn_ctx *x = c; go(&x->fwd, &x->af); }
static void w_fl_bwd(void *c) {
  attn_ctx *x = c;
  go(&x->prep_, &x->ap);
  go(&x->dkv, &x->adkv);
  go(&x->dq, &x->adq);
}
static void w_fl_prep(void *c) { attn_ctx *x = c; go(&x->prep_, &x->ap); }
static void w_fl_dkv(void *c) { attn_ctx *x = c; go(&x->dkv, &x->adkv); }
static void w_fl_dq(void *c) { attn_ctx *x = c; go(&x->dq, &x->adq); }
static void w_fl_both(void *c) {
  w_fl_fwd(c);
  w_fl_bwd(c);
}
static void w_nv_fwd(void *c) {
  attn_ctx *x = c;
  go(&x->g_qk, &x->aqk);
  go(&x->sm, &x->asm_);
  go(&x->g_pv, &x->apv);
}
static void w_nv_bwd(void *c) {
  attn_ctx *x = c;
  go(&x->g_dv, &x->adv);
  go(&x->g_dp, &x->adp);
  go(&x->smb, &x->asmb);
  go(&x->g_dq, &x->adqn);
  go(&x->g_dk, &x->adkn);
}
static void w_nv_both(void *c) {
  w_nv_fwd(c);
  w_nv_bwd(c);
}

/* GEMM kargs: C (m,n) = alpha * sum_k A(m,k) B(k,n) per head */
static ddp_kargs gk(void *A, void *B, void *C, int64_t M, int64_t N, int64_t K, int64_t sam, int64_t sak, int64_t sbk,
                    int64_t sbn, int64_t ldc, int64_t bsa, int64_t bsb, int64_t bsc) {
  ddp_kargs a = {0};
  a.p[0] = A, a.p[1] = B, a.p[2] = C;
  const int64_t v[] = {M, N, K, sam, sak, sbk, sbn, ldc, bsa, bsb, bsc};
  memcpy(a.i, v, sizeof v);
  a.f[0] = 1.f;
  return a;
}

typedef struct attn_res {
  double ms[6]; /* flash fwd, bwd, both; naive fwd, bwd, both (<0: OOM, 0: skipped) */
  double parts[3]; /* flash-only runs: ATTN_BWD_PREP, ATTN_BWD_DKV, ATTN_BWD_DQ */
} attn_res;

static int64_t g_attn_B = 1, g_attn_H = 16; /* the shape's batch and heads: 1 x 16, the seeds' grid 8 x 1 */
/* --fused: the backward as ATTN_BWD_PREP (zeroing dq_acc) + ATTN_BWD_FUSED + ATTN_DQ_STORE where the fused
 * kernel exists (bf16, d 64 / 128, sm_90a); the parts then read prep, fused, store */
static int g_fused;
static attn_res bench_attn_one(int bf16, int64_t d, int64_t T, int causal, int naive_max, int flash_only) {
  const int64_t H = g_attn_H, B = g_attn_B, hd = H * d;
  const size_t es = bf16 ? 2 : 4, act = bf16 ? DT_BF16 : DT_F32;
  const size_t tb = (size_t)(B * T * hd) * es;
  attn_res r;
  memset(&r, 0, sizeof r);
  void *q = dalloc(tb), *k = dalloc(tb), *v = dalloc(tb), *o = dalloc(tb), *dO = dalloc(tb), *dq = dalloc(tb),
       *dk = dalloc(tb), *dv = dalloc(tb);
  float *lse = dalloc((size_t)(B * H * T) * 4), *delta = dalloc((size_t)(B * H * T) * 4);
  const int fused = g_fused && bf16 && (d == 64 || d == 128) && !strcmp(g_arch, "sm_90a");
  float *acc = fused ? dalloc((size_t)(B * H * ((T + 63) / 64 * 64) * d) * 4) : NULL; /* dq_acc: d is 64 or 128 */
  void *all[] = {q, k, v, o, dO, dq, dk, dv, lse, delta, acc};
  int oom = fused && !acc;
  for (int i = 0; i < 10; i++) oom |= all[i] == NULL;
  if (oom) {
    for (int i = 0; i < 11; i++) dfree(all[i]);
    for (int i = 0; i < 6; i++) r.ms[i] = -1;
    return r;
  }
  fill_normal(q, B * T * hd, bf16, 1.f, 11);
  fill_normal(k, B * T * hd, bf16, 1.f, 12);
  fill_normal(v, B * T * hd, bf16, 1.f, 13);
  fill_normal(dO, B * T * hd, bf16, 1.f, 14);
  attn_ctx c;
  memset(&c, 0, sizeof c);
  ddp_instr in = kinstr(OP_ATTN_FWD);
  const int64_t ints[] = {B, T, H, d, hd, hd, hd, hd, causal};
  memcpy(in.i, ints, sizeof ints);
  in.f[0] = 1.f / sqrtf((float)d);
  ddp_kargs base = {0};
  memcpy(base.i, in.i, sizeof in.i);
  memcpy(base.f, in.f, sizeof in.f);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = (uint8_t)act, in.dt[4] = DT_F32;
  c.fwd = prepare(&in);
  c.af = base;
  c.af.p[0] = q, c.af.p[1] = k, c.af.p[2] = v, c.af.p[3] = o, c.af.p[4] = lse;
  in.op = OP_ATTN_BWD_PREP;
  memset(in.dt, 0, sizeof in.dt);
  in.dt[0] = in.dt[1] = (uint8_t)act, in.dt[2] = DT_F32;
  if (fused) in.dt[ATTN_BWD_PREP_P_DQACC] = DT_F32;
  c.prep_ = prepare(&in);
  c.ap = base;
  c.ap.p[0] = o, c.ap.p[1] = dO, c.ap.p[2] = delta, c.ap.p[ATTN_BWD_PREP_P_DQACC] = acc;
  in.op = fused ? OP_ATTN_BWD_FUSED : OP_ATTN_BWD_DKV;
  memset(in.dt, 0, sizeof in.dt);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[5] = in.dt[7] = in.dt[8] = (uint8_t)act, in.dt[4] = in.dt[6] = DT_F32;
  if (fused) in.dt[ATTN_P_DQACC] = DT_F32;
  c.dkv = prepare(&in);
  c.adkv = base;
  c.adkv.p[0] = q, c.adkv.p[1] = k, c.adkv.p[2] = v, c.adkv.p[4] = lse, c.adkv.p[5] = dO, c.adkv.p[6] = delta;
  c.adkv.p[7] = dk, c.adkv.p[8] = dv, c.adkv.p[ATTN_P_DQACC] = acc;
  in.op = fused ? OP_ATTN_DQ_STORE : OP_ATTN_BWD_DQ;
  in.dt[7] = in.dt[8] = 0, in.dt[9] = (uint8_t)act;
  c.dq = prepare(&in);
  c.adq = c.adkv;
  c.adq.p[7] = c.adq.p[8] = NULL, c.adq.p[9] = dq;
  r.ms[0] = time_ms(w_fl_fwd, &c);
  w_fl_fwd(&c);
  r.ms[1] = time_ms(w_fl_bwd, &c);
  r.ms[2] = time_ms(w_fl_both, &c);
  if (flash_only) {
    r.parts[0] = time_ms(w_fl_prep, &c);
    r.parts[1] = time_ms(w_fl_dkv, &c);
    r.parts[2] = time_ms(w_fl_dq, &c);
  }
  if (!flash_only && T <= naive_max && B == 1) {
    const size_t sb = (size_t)(H * T) * (size_t)T * 4;
    float *S = dalloc(sb), *dP = S ? dalloc(sb) : NULL;
    if (!S || !dP) {
      r.ms[3] = r.ms[4] = r.ms[5] = -1;
    } else {
      const uint32_t gt = (uint32_t)((T + 63) / 64), gd = (uint32_t)((d + 63) / 64);
      const char *g_bb_f = bf16 ? "ddp_gemm_bb_f" : "ddp_gemm_ff_f", *g_fb_b = bf16 ? "ddp_gemm_fb_b" : "ddp_gemm_ff_f";
      const int64_t TT = T * T;
      c.g_qk = local(g_bb_f, gt, gt, (uint32_t)H, 256); /* S = Q K^T */
      c.aqk = gk(q, k, S, T, T, d, hd, 1, 1, hd, T, d, d, TT);
      c.g_pv = local(g_fb_b, gd, gt, (uint32_t)H, 256); /* O = P V */
      c.apv = gk(S, v, o, T, d, T, T, 1, hd, 1, hd, TT, d, d);
      c.g_dv = local(g_fb_b, gd, gt, (uint32_t)H, 256); /* dV = P^T dO */
      c.adv = gk(S, dO, dv, T, d, T, 1, T, hd, 1, hd, TT, d, d);
      c.g_dp = local(g_bb_f, gt, gt, (uint32_t)H, 256); /* dP = dO V^T */
      c.adp = gk(dO, v, dP, T, T, d, hd, 1, 1, hd, T, d, d, TT);
      c.g_dq = local(g_fb_b, gd, gt, (uint32_t)H, 256); /* dQ = dS K */
      c.adqn = gk(dP, k, dq, T, d, T, T, 1, hd, 1, hd, TT, d, d);
      c.g_dk = local(g_fb_b, gd, gt, (uint32_t)H, 256); /* dK = dS^T Q */
      c.adkn = gk(dP, q, dk, T, d, T, 1, T, hd, 1, hd, TT, d, d);
      in = kinstr(OP_ATTN_NAIVE_SOFTMAX);
      in.dt[0] = in.dt[1] = DT_F32;
      in.i[0] = B, in.i[1] = T, in.i[2] = H, in.i[8] = causal, in.f[0] = 1.f / sqrtf((float)d);
      c.sm = prepare(&in);
      c.asm_.p[0] = S, c.asm_.p[1] = lse;
      memcpy(c.asm_.i, in.i, sizeof in.i), memcpy(c.asm_.f, in.f, sizeof in.f);
      in.op = OP_ATTN_NAIVE_SOFTMAX_BWD;
      c.smb = prepare(&in);
      c.asmb = c.asm_;
      c.asmb.p[0] = S, c.asmb.p[1] = dP;
      r.ms[3] = time_ms(w_nv_fwd, &c);
      w_nv_fwd(&c);
      r.ms[4] = time_ms(w_nv_bwd, &c);
      r.ms[5] = time_ms(w_nv_both, &c);
    }
    dfree(S);
    dfree(dP);
  }
  for (int i = 0; i < 11; i++) dfree(all[i]);
  return r;
}

static void cell(double ms) {
  if (ms < 0) printf(" %9s", "OOM");
  else if (ms == 0) printf(" %9s", "-");
  else printf(" %9.3f", ms);
}

static void bench_attention(int quick, int naive_max) {
  const int64_t dims[] = {16, 32, 64, 128};
  const int64_t Ts[] = {256, 1024, 4096, 8192, 16384, 32768, 65536};
  printf("\n(b) attention, batch 1 x 16 heads, causal: time (ms) per pass; TFLOP/s of flash fwd+bwd counts\n"
         "    the causal half (fwd 2*2*T*T*d*16/2, bwd 2.5x); naive = materialised [16,T,T] f32 scores\n");
  for (int bf = 1; bf >= 0; bf--) {
    for (int di = 0; di < 4; di++) {
      const int64_t d = dims[di];
      if (quick && d != 64 && d != 128) continue;
      printf("%s d=%lld\n%7s | %9s %9s %9s %8s | %9s %9s %9s\n", bf ? "bf16" : "f32", (long long)d, "T", "flash fwd",
             "bwd", "fwd+bwd", "TFLOP/s", "naive fwd", "bwd", "fwd+bwd");
      for (int ti = 0; ti < 7; ti++) {
        const int64_t T = Ts[ti];
        if (quick && T != 1024 && T != 4096 && T != 16384) continue;
        if (!bf && T > 16384) continue; /* f32 FFMA: minutes per point beyond this */
        const attn_res r = bench_attn_one(bf, d, T, 1, naive_max, 0);
        const double fl = 4.0 * 16 * (double)T * T * d / 2;
        printf("%7lld |", (long long)T);
        for (int i = 0; i < 3; i++) cell(r.ms[i]);
        printf(" %8.1f |", r.ms[2] > 0 ? fl * 3.5 / (r.ms[2] * 1e-3) / 1e12 : 0.0);
        for (int i = 3; i < 6; i++) cell(r.ms[i]);
        printf("\n");
        jrec("{\"bench\":\"attention\",\"dtype\":\"%s\",\"heads\":16,\"batch\":1,\"causal\":1,\"d\":%lld,\"T\":%lld,"
             "\"flash_fwd_ms\":%.4f,\"flash_bwd_ms\":%.4f,\"flash_fwdbwd_ms\":%.4f,\"naive_fwd_ms\":%.4f,"
             "\"naive_bwd_ms\":%.4f,\"naive_fwdbwd_ms\":%.4f}",
             bf ? "bf16" : "f32", (long long)d, (long long)T, r.ms[0], r.ms[1], r.ms[2], r.ms[3], r.ms[4], r.ms[5]);
      }
    }
  }
  const attn_res lb = bench_attn_one(1, 64, 16384, 1, 0, 1);
  printf("\nLEADERBOARD attention fwd+bwd, 16 heads, d 64, seq 16384, bf16, causal: %.3f ms (fwd %.3f, bwd %.3f"
         " = prep %.3f + dkv %.3f + dq %.3f); PyTorch SDPA: torch_extra.py --attention in the same call\n",
         lb.ms[2], lb.ms[0], lb.ms[1], lb.parts[0], lb.parts[1], lb.parts[2]);
  jrec("{\"bench\":\"leaderboard_attention\",\"heads\":16,\"d\":64,\"T\":16384,\"dtype\":\"bf16\",\"causal\":1,"
       "\"fwdbwd_ms\":%.4f,\"fwd_ms\":%.4f,\"bwd_ms\":%.4f}",
       lb.ms[2], lb.ms[0], lb.ms[1]);
}

/* --only seeds: the course's attention grid (batch 8, one head, no mask; head dims 16-128, sequences
 * 256-16384, bf16 and f32): forward, backward and forward+backward ms, TFLOP/s of forward+backward
 * (fwd 4*B*T*T*d, bwd 2.5x). PyTorch's side: torch_extra.py --seeds. */
static void bench_seeds(void) {
  const int64_t dims[] = {16, 32, 64, 128}, Ts[] = {256, 1024, 4096, 8192, 16384};
  g_attn_B = 8, g_attn_H = 1;
  printf("\n(c) the seeds' attention grid, batch 8 x 1 head, no mask: ms per pass\n%5s %4s %6s | %9s %9s %9s %8s\n",
         "dtype", "d", "T", "fwd", "bwd", "fwd+bwd", "TFLOP/s");
  for (int bf = 1; bf >= 0; bf--)
    for (int di = 0; di < 4; di++)
      for (int ti = 0; ti < 5; ti++) {
        const int64_t d = dims[di], T = Ts[ti];
        const attn_res r = bench_attn_one(bf, d, T, 0, 0, 0);
        const double fl = 4.0 * 8 * (double)T * T * d;
        printf("%5s %4lld %6lld | %9.3f %9.3f %9.3f %8.1f\n", bf ? "bf16" : "f32", (long long)d, (long long)T, r.ms[0],
               r.ms[1], r.ms[2], r.ms[2] > 0 ? fl * 3.5 / (r.ms[2] * 1e-3) / 1e12 : 0.0);
        jrec("{\"bench\":\"seeds_attention\",\"dtype\":\"%s\",\"batch\":8,\"heads\":1,\"causal\":0,\"d\":%lld,"
             "\"T\":%lld,\"fwd_ms\":%.4f,\"bwd_ms\":%.4f,\"fwdbwd_ms\":%.4f}",
             bf ? "bf16" : "f32", (long long)d, (long long)T, r.ms[0], r.ms[1], r.ms[2]);
      }
  g_attn_B = 1, g_attn_H = 16;
}

/* --tune: the leaderboard configuration (or --tune-shape B:H:T, e.g. XL's 4:25:512) under tile variants
 * (DDP_TUNE_* of compiler/codegen/launch.c). */
static int64_t g_tune_B = 1, g_tune_H = 16, g_tune_T = 16384;
static const char *g_variants;
static void tune_attention(int64_t d) {
  static const char *const vars[] = {
      "",
      "DDP_TUNE_FWD_CONSUMERS=2",
      "DDP_TUNE_FWD_NBUF=2",
      "DDP_TUNE_FWD_BN=64",
      "DDP_TUNE_DQ_CONSUMERS=2",
      "DDP_TUNE_DQ_CONSUMERS=3",
      "DDP_TUNE_DQ_BN=128 DDP_TUNE_DQ_CONSUMERS=2",
      "DDP_TUNE_DKV_BN=128",
      "DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_DKV_WGMMA=3 DDP_TUNE_DQ_WGMMA=3",
      "DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_FWD_BN=128",
      "DDP_TUNE_DQ_WGMMA=3 DDP_TUNE_DQ_MINB=1",
      "DDP_TUNE_FWD_WGMMA=3 DDP_TUNE_DQ_WGMMA=3",
      "DDP_TUNE_FWD_WGMMA=2 DDP_TUNE_DKV_WGMMA=2 DDP_TUNE_DQ_WGMMA=2",
      /* one kernel at a time in another form, for short sequences (XL's T 512) */
      "DDP_TUNE_FWD_WGMMA=2",
      "DDP_TUNE_FWD_WGMMA=3",
      "DDP_TUNE_DKV_WGMMA=2",
      "DDP_TUNE_DKV_WGMMA=3",
      "DDP_TUNE_DQ_WGMMA=2",
      "DDP_TUNE_DQ_WGMMA=3",
      "DDP_TUNE_FWD_BN=64 DDP_TUNE_FWD_NBUF=2",
      /* the TMA kernels one block per tile instead of persistent; persistent TMA at short sequences too */
      "DDP_TUNE_ATTN_PERSISTENT=2",
      "DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4",
      "DDP_TUNE_FWD_WGMMA=4 DDP_TUNE_DQ_WGMMA=4 DDP_TUNE_FWD_CONSUMERS=2 DDP_TUNE_DQ_CONSUMERS=2",
  };
  static const char *const names[] = {"FWD_MT", "FWD_BN", "DKV_MT", "DKV_BN", "DQ_MT", "DQ_BN", "FWD_MINB", "DKV_MINB", "DQ_MINB", "FWD_WARPS", "FWD_WGMMA", "DKV_WGMMA", "DQ_WGMMA", "DKV_WARPS", "DQ_WARPS", "FWD_CONSUMERS", "FWD_NBUF", "DQ_CONSUMERS", "FUSED_SPLIT", "ATTN_PERSISTENT"};
  /* --variants "A;B;...": these instead of the list above (each a space-separated DDP_TUNE_*=V set; "defaults") */
  const char *list[64];
  size_t nv = 0;
  static char own[4096];
  if (g_variants) {
    snprintf(own, sizeof own, "%s", g_variants);
    for (char *save = NULL, *tok = strtok_r(own, ";", &save); tok && nv < 64; tok = strtok_r(NULL, ";", &save))
      list[nv++] = strcmp(tok, "defaults") ? tok : "";
  } else {
    for (; nv < sizeof vars / sizeof vars[0]; nv++) list[nv] = vars[nv];
  }
  printf("\ntile variants, bf16 causal, batch %lld x %lld heads, T %lld, d %lld (ms%s): fwd | prep %s | fwd+bwd\n",
         (long long)g_tune_B, (long long)g_tune_H, (long long)g_tune_T, (long long)d,
         g_inner > 1 ? ", a run of many back to back" : "", g_fused ? "fused store" : "dkv dq");
  const int64_t B0 = g_attn_B, H0 = g_attn_H;
  g_attn_B = g_tune_B, g_attn_H = g_tune_H;
  for (size_t v = 0; v < nv; v++) {
    char env[64];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) snprintf(env, sizeof env, "DDP_TUNE_%s", names[k]), unsetenv(env);
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", list[v]) >= (int)sizeof buf) DIE("--variants: a variant longer than 255 characters");
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
      char *eq = strchr(tok, '=');
      int known = 0; /* a NAME of names[]: cleared before every variant, so none carries over into the next */
      for (size_t k = 0; eq && !strncmp(tok, "DDP_TUNE_", 9) && k < sizeof names / sizeof names[0]; k++)
        known |= (size_t)(eq - tok - 9) == strlen(names[k]) && !strncmp(tok + 9, names[k], strlen(names[k]));
      if (!known) DIE("--variants: '%s' is not DDP_TUNE_NAME=VALUE for a NAME of this benchmark's attention tiles", tok);
      *eq = 0;
      setenv(tok, eq + 1, 1);
    }
    const attn_res r = bench_attn_one(1, d, g_tune_T, 1, 0, 1);
    printf("  %-75s %7.4f | %6.4f %7.4f %7.4f | %7.4f\n", list[v][0] ? list[v] : "(defaults)", r.ms[0], r.parts[0],
           r.parts[1], r.parts[2], r.ms[2]);
    jrec("{\"bench\":\"attention_tune\",\"batch\":%lld,\"heads\":%lld,\"T\":%lld,\"d\":%lld,\"fused\":%d,"
         "\"variant\":\"%s\",\"fwd_ms\":%.4f,\"prep_ms\":%.4f,\"dkv_ms\":%.4f,\"dq_ms\":%.4f,\"fwdbwd_ms\":%.4f}",
         (long long)g_tune_B, (long long)g_tune_H, (long long)g_tune_T, (long long)d, g_fused, list[v], r.ms[0],
         r.parts[0], r.parts[1], r.parts[2], r.ms[2]);
  }
  g_attn_B = B0, g_attn_H = H0;
  char env[64];
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) snprintf(env, sizeof env, "DDP_TUNE_%s", names[k]), unsetenv(env);
}

/* An option's integer value: the whole of s, within [lo, hi]; else one error line and 0. */
static int int_option(const char *opt, const char *s, long lo, long hi, int *out) {
  char *end = NULL;
  const long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "ddpbench_kernels: %s wants an integer in %ld..%ld (got %s)\n", opt, lo, hi, s);
    return 0;
  }
  *out = (int)v;
  return 1;
}

int main(int argc, char **argv) {
  int quick = 0, naive_max = 65536, tune = 0, tune_d = 0;
  const char *out = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--naive-max") && i + 1 < argc) naive_max = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tune")) tune = 1;
    else if (!strcmp(argv[i], "--fused")) g_fused = 1;
    else if (!strcmp(argv[i], "--tune-shape") && i + 1 < argc) {
      long long b, h, t;
      char tail;
      if (sscanf(argv[++i], "%lld:%lld:%lld%c", &b, &h, &t, &tail) != 3 || b < 1 || h < 1 || t < 1 ||
          (double)b * (double)h * (double)t > (double)(1LL << 28)) {
        fprintf(stderr, "ddpbench_kernels: --tune-shape wants B:H:T, positive, e.g. 4:25:512 (got %s)\n", argv[i]);
        return 2;
      }
      g_tune_B = b, g_tune_H = h, g_tune_T = t;
    } else if (!strcmp(argv[i], "--tune-d") && i + 1 < argc) {
      if (!int_option("--tune-d", argv[++i], 64, 128, &tune_d)) return 2;
      if (tune_d != 64 && tune_d != 128) {
        fprintf(stderr, "ddpbench_kernels: --tune-d wants 64 or 128 (got %s)\n", argv[i]);
        return 2;
      }
    } else if (!strcmp(argv[i], "--gpu-time") && i + 1 < argc) {
      if (!int_option("--gpu-time", argv[++i], 1, 1000, &g_gpu_time)) return 2;
    } else if (!strcmp(argv[i], "--pdl")) {
      ddp_cuda_set_grid_overlap(1);
    } else if (!strcmp(argv[i], "--variants") && i + 1 < argc) {
      g_variants = argv[++i];
    } else if (!strcmp(argv[i], "--inner") && i + 1 < argc) {
      if (!int_option("--inner", argv[++i], 1, 1000, &g_inner)) return 2;
    } else {
      fprintf(stderr, "usage: ddpbench_kernels [--quick] [--out FILE.json] [--only rmsnorm|attention|seeds|leaderboard|none] [--naive-max T] [--tune] [--tune-shape B:H:T] [--tune-d 64|128] [--variants \"A;B\"] [--inner N] [--gpu-time N] [--fused] [--pdl]\n");
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  int ndev = 0;
  cudaError_t rc = cudaGetDeviceCount(&ndev);
  if (rc != cudaSuccess || ndev == 0) {
    fprintf(stderr, "ddpbench_kernels: no usable GPU (cudaGetDeviceCount: %s, %d devices)\n",
            rc != cudaSuccess ? cudaGetErrorString(rc) : "ok", ndev);
    return 1;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  snprintf(g_arch, sizeof g_arch, "sm_%d%d%s", prop.major, prop.minor, prop.major == 9 ? "a" : "");
  g_sms = prop.multiProcessorCount;
  if (quick) g_budget_ms = 100;
  printf("ddpbench_kernels: %s (%s, %d SMs, %.0f GiB)%s\n", prop.name, g_arch, g_sms,
         (double)prop.totalGlobalMem / (1 << 30), quick ? ", --quick" : "");
  compile_local();
  g_fill = local("ddp_fill_normal", 1, 1, 1, 256);
  if (tune && tune_d != 128) tune_attention(64);
  if (tune && tune_d != 64) tune_attention(128);
  if (!only || !strcmp(only, "rmsnorm")) bench_rmsnorm(quick);
  if (!only || !strcmp(only, "attention")) bench_attention(quick, naive_max);
  if (only && !strcmp(only, "seeds")) bench_seeds();
  if (only && !strcmp(only, "leaderboard")) /* and the same at head dim 128 */
    for (int64_t d = 64; d <= 128; d += 64) {
      const attn_res r = bench_attn_one(1, d, 16384, 1, 0, 1);
      printf("leaderboard d %lld%s: fwd %.3f ms, prep %.3f, %s %.3f, %s %.3f, fwd+bwd %.3f\n", (long long)d,
             g_fused ? " (fused backward)" : "", r.ms[0], r.parts[0], g_fused ? "fused" : "dkv", r.parts[1],
             g_fused ? "store" : "dq", r.parts[2], r.ms[2]);
      jrec("{\"bench\":\"leaderboard\",\"d\":%lld,\"fused\":%d,\"fwd_ms\":%.4f,\"prep_ms\":%.4f,\"dkv_ms\":%.4f,"
           "\"dq_ms\":%.4f,\"fwdbwd_ms\":%.4f}",
           (long long)d, g_fused, r.ms[0], r.parts[0], r.parts[1], r.parts[2], r.ms[2]);
    }
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f) DIE("cannot write %s", out);
    fprintf(f, "{\"device\":\"%s\",\"arch\":\"%s\",\"sms\":%d,\"results\":[\n%s\n]}\n", prop.name, g_arch, g_sms,
            g_json ? g_json : "");
    if (fclose(f)) DIE("cannot write %s", out);
    printf("wrote %s\n", out);
  }
  return 0;
}

/* tests/unit/cuda/test_cuda_exec_gpu.c (gpu): the CUDA executor on a GPU, plans built in memory.
 *   gemm:      every layout/dtype mix the compiler emits (trans flags, padded leading dimensions, views at
 *              unaligned offsets, bf16 in / f32 out, bf16 out, C aliasing D, residual C != D, batches),
 *              compared with ref_gemm (fp32 tolerance tight enough to catch TF32), padding untouched;
 *   pipeline:  INIT_TENSOR (bitwise = ddp_init_fill), MEMSET, LOAD_BATCH (bitwise = ddp_data_fill for 4
 *              steps: double buffering), GEMM, events across two streams, COPY, a one-rank collective,
 *              timers, NVTX ranges; eagerly and with DDP_CUDA_GRAPH=1;
 *   kernel:    a KERNEL from a CUBIN built here with NVRTC: module load, ddp_kargs (pointers = arena + offset,
 *              ints, floats), 64 KB of dynamic shared memory reserved at load;
 *   errors:    load-time refusals are one line naming the instruction;
 *   nccl:      (2 GPUs) two ranks as processes: all-reduce sum/avg, reduce-scatter, all-gather, broadcast,
 *              send/recv exchange (eager and graph), then a peer that exits: the survivor fails within the
 *              DDP_NCCL_TIMEOUT_S bound with a message naming the peer.
 * Exits 77 (skip) without a GPU. */
#include "exec_cuda.h"
#include "clock.h"
#include "cuda_exec_util.h"
#include "ref_ops.h"
#include <math.h>
#include <nccl.h>
#include <nvrtc.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

/* ---------------------------------------------------------------- GEMM ---------------------------------- */

typedef struct gcase {
  const char *name;
  int64_t M, N, K;
  int ta, tb, dtab, dtc, dtd;
  float alpha, beta;
  int64_t batch;
  int64_t pad; /* added to every leading dimension */
  int sep_c;   /* C is its own tensor (residual add) instead of aliasing D */
  int64_t view; /* elements of offset of every operand inside its tensor */
} gcase;

typedef struct gops {
  int32_t t[4];   /* A B C D tensors (C may equal D) */
  int64_t ld[4], stride[4], rows[4], cols[4], size[4];
} gops;

static void gemm_geometry(const gcase *c, gops *g) {
  g->rows[0] = c->ta ? c->K : c->M, g->cols[0] = c->ta ? c->M : c->K;
  g->rows[1] = c->tb ? c->N : c->K, g->cols[1] = c->tb ? c->K : c->N;
  g->rows[2] = g->rows[3] = c->M, g->cols[2] = g->cols[3] = c->N;
  for (int k = 0; k < 4; k++) {
    g->ld[k] = g->cols[k] + c->pad + (k == 2 ? 2 * c->pad : 0); /* C's ld differs from D's when padded */
    g->stride[k] = g->rows[k] * g->ld[k] + (c->batch > 1 ? 8 : 0);
    g->size[k] = c->view + c->batch * g->stride[k];
  }
}

static void fill_random(void *p, int dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) ddp_store(p, dt, i, urand());
}

static int64_t ref_bytes(int dt, int64_t n) { return n * (int64_t)ddp_dtype_size(dt); }

static void run_gemm_case(const gcase *c, int device) {
  ddp_plan *p = cxt_plan_new(1, 2);
  gops g;
  gemm_geometry(c, &g);
  const int dts[4] = {c->dtab, c->dtab, c->dtc, c->dtd};
  char names[4][32];
  for (int k = 0; k < 4; k++) {
    snprintf(names[k], sizeof names[k], "%c", "ABCD"[k]);
    g.t[k] = (k == 2 && !c->sep_c) ? -1 : cxt_tensor(p, names[k], dts[k], ARENA_ACT, 1, g.size[k]);
  }
  if (!c->sep_c) g.t[2] = g.t[3];
  const int64_t ldc = c->sep_c ? g.ld[2] : g.ld[3], sc = c->sep_c ? g.stride[2] : g.stride[3];
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  for (int k = 0; k < 4; k++) {
    in.p[k] = cxt_ref(p, g.t[k], (uint64_t)ref_bytes(dts[k], c->view));
    in.dt[k] = (uint8_t)(k == 2 && !c->sep_c ? c->dtd : dts[k]);
  }
  in.name = ddp_plan_add_string(p, c->name);
  in.i[0] = c->M, in.i[1] = c->N, in.i[2] = c->K, in.i[3] = c->ta, in.i[4] = c->tb;
  in.i[5] = g.ld[0], in.i[6] = g.ld[1], in.i[7] = ldc, in.i[8] = g.ld[3], in.i[9] = c->batch;
  in.i[10] = g.stride[0], in.i[11] = g.stride[1], in.i[12] = sc, in.i[13] = g.stride[3];
  in.f[0] = c->alpha, in.f[1] = c->beta;
  cxt_push(p, 0, 0, &in);

  void *host[4] = {0}, *want = NULL, *got = NULL;
  for (int k = 0; k < 4; k++)
    if (g.t[k] >= 0 && (k != 2 || c->sep_c)) {
      host[k] = calloc((size_t)g.size[k], 8);
      fill_random(host[k], dts[k], g.size[k]);
    }
  if (!c->sep_c) host[2] = host[3];
  want = calloc((size_t)g.size[3], 8);
  got = calloc((size_t)g.size[3], 8);
  memcpy(want, host[3], (size_t)ref_bytes(c->dtd, g.size[3]));
  ddp_kargs a;
  memset(&a, 0, sizeof a);
  for (int k = 0; k < 4; k++)
    a.p[k] = (uint8_t *)(k == 3 ? want : host[k]) + ref_bytes(k == 2 && !c->sep_c ? c->dtd : dts[k], c->view);
  memcpy(a.i, in.i, sizeof a.i);
  memcpy(a.f, in.f, sizeof a.f);
  ref_gemm(&a, in.dt);

  char err[1024];
  ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, device, NULL, NULL, 1, err, sizeof err);
  CHECK(x, "gemm %s: executor: %s", c->name, err);
  if (x) {
    int rc = 0;
    for (int k = 0; k < 4 && !rc; k++)
      if (host[k] && (k != 2 || c->sep_c)) rc = x->v->write(x, g.t[k], host[k], err, sizeof err);
    if (!rc) rc = x->v->run(x, &p->ranks[0].step, 0, err, sizeof err);
    if (!rc) rc = x->v->sync(x, err, sizeof err);
    if (!rc) rc = x->v->read(x, g.t[3], got, err, sizeof err);
    CHECK(!rc, "gemm %s: %s", c->name, err);
    double worst = 0, tol_worst = 0;
    int64_t bad = 0;
    for (int64_t i = 0; !rc && i < g.size[3]; i++) {
      double w = ddp_load(want, c->dtd, i), v = ddp_load(got, c->dtd, i);
      /* fp32 accumulation over K terms of |a b| <= 1, plus the storage rounding of D */
      double tol = 2.5e-7 * (double)c->K * fabs(c->alpha) + 1e-6 + (c->dtd == DT_BF16 ? fabs(w) / 256.0 : 0.0);
      double e = fabs(w - v);
      if (!(e <= tol)) bad++;
      if (e > worst) worst = e, tol_worst = tol;
    }
    CHECK(!bad, "gemm %s: %lld of %lld elements off (worst |err| %.3g, tolerance %.3g)", c->name,
              (long long)bad, (long long)g.size[3], worst, tol_worst);
    printf("gemm %-28s M %4lld N %4lld K %4lld batch %lld: max |err| %.3g %s\n", c->name, (long long)c->M,
           (long long)c->N, (long long)c->K, (long long)c->batch, worst, bad ? "FAILED" : "ok");
    x->v->destroy(x);
  }
  for (int k = 0; k < 4; k++)
    if (host[k] && (k != 2 || c->sep_c)) free(host[k]);
  free(want);
  free(got);
  ddp_plan_free(p);
}

static void test_gemm(int device) {
  const gcase cases[] = {
      {"f32 NN", 33, 47, 65, 0, 0, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 0, 0, 0},
      {"f32 TN padded", 64, 32, 48, 1, 0, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 3, 0, 0},
      {"f32 NT", 40, 24, 56, 0, 1, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 0, 0, 0},
      {"f32 TT alpha", 17, 19, 23, 1, 1, DT_F32, DT_F32, DT_F32, 0.5f, 0.0f, 1, 0, 0, 0},
      {"f32 K=1024 (no TF32)", 64, 64, 1024, 0, 1, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 0, 0, 0},
      {"f32 accumulate (beta 1)", 48, 40, 32, 1, 0, DT_F32, DT_F32, DT_F32, 1.0f, 1.0f, 1, 0, 0, 0},
      {"bf16->f32 dW acc", 64, 96, 128, 1, 0, DT_BF16, DT_F32, DT_F32, 1.0f, 1.0f, 1, 0, 0, 0},
      {"bf16->bf16 linear", 128, 96, 64, 0, 1, DT_BF16, DT_BF16, DT_BF16, 1.0f, 0.0f, 1, 0, 0, 0},
      {"bf16 residual C!=D", 64, 64, 64, 0, 1, DT_BF16, DT_BF16, DT_BF16, 1.0f, 1.0f, 1, 0, 1, 0},
      {"f32 residual C!=D ldc", 31, 33, 35, 0, 0, DT_F32, DT_F32, DT_F32, 1.0f, 1.0f, 1, 2, 1, 0},
      {"bf16 view+4B, odd ld", 30, 34, 38, 0, 1, DT_BF16, DT_F32, DT_F32, 1.0f, 0.0f, 1, 1, 0, 2},
      {"f32 view+4B", 21, 27, 29, 1, 0, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 1, 0, 1},
      {"f32 batched scores", 17, 17, 16, 0, 1, DT_F32, DT_F32, DT_F32, 0.25f, 0.0f, 3, 0, 0, 0},
      {"bf16 batched ->f32", 32, 16, 32, 0, 0, DT_BF16, DT_F32, DT_F32, 1.0f, 0.0f, 4, 0, 0, 0},
      {"f32 gemv M=1", 1, 50, 70, 0, 1, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 0, 0, 0},
      {"f32 N=1", 50, 1, 70, 0, 0, DT_F32, DT_F32, DT_F32, 1.0f, 0.0f, 1, 0, 0, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) run_gemm_case(&cases[k], device);
}

/* ---------------------------------------------------------------- pipeline ------------------------------ */

enum { PB = 8, PIN = 16, POUT = 4, PH = 24 };

typedef struct pipe_plan {
  ddp_plan *p;
  int32_t x, y, w, wb, h, z, q, ms;
} pipe_plan;

static pipe_plan pipeline_plan(void) {
  pipe_plan pp;
  ddp_plan *p = pp.p = cxt_plan_new(1, 2);
  pp.x = cxt_tensor(p, "inputs", DT_F32, ARENA_IO, PB, PIN);
  pp.y = cxt_tensor(p, "targets", DT_F32, ARENA_IO, PB, POUT);
  pp.w = cxt_tensor(p, "w", DT_F32, ARENA_PARAM, PIN, PH);
  pp.wb = cxt_tensor(p, "w.bf16", DT_BF16, ARENA_PARAM, PIN, PH);
  pp.h = cxt_tensor(p, "h", DT_F32, ARENA_ACT, PB, PH);
  pp.z = cxt_tensor(p, "z", DT_F32, ARENA_ACT, PB, PH);
  pp.q = cxt_tensor(p, "q", DT_F32, ARENA_GRAD, PB, PH);
  pp.ms = cxt_tensor(p, "ms", DT_F32, ARENA_OPT, 1, 100);
  cxt_tensor(p, "workspace.gemm", DT_I32, ARENA_WORK, 1, (32 << 20) / 4);
  p->meta.model_kind = MODEL_MLP;
  p->meta.data_kind = DATA_RANDOM_DENSE;
  p->meta.mlp_in = PIN;
  p->meta.mlp_out = POUT;
  p->meta.batch_per_rank = PB;
  p->meta.global_batch = PB;
  p->meta.data_rows = 20;
  p->meta.tokens_tensor = pp.x;
  p->meta.targets_tensor = pp.y;
  p->ranks[0].nevents = 2;
  p->ranks[0].ntimers = 2;
  /* init */
  ddp_instr in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, pp.w, 0), in.dt[0] = DT_F32;
  in.i[0] = INIT_UNIFORM, in.i[1] = PIN * PH, in.i[2] = 5, in.f[0] = -1.0f, in.f[1] = 1.0f;
  cxt_push(p, 0, 1, &in);
  in = ddp_instr_blank(I_INIT_TENSOR, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, pp.wb, 0), in.dt[0] = DT_BF16;
  in.i[0] = INIT_TRUNC_NORMAL, in.i[1] = PIN * PH, in.i[2] = 6, in.f[0] = 0.02f, in.f[1] = 0.06f;
  cxt_push(p, 0, 1, &in);
  in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, pp.ms, 0), in.i[0] = 400, in.i[1] = 0x3f;
  cxt_push(p, 0, 1, &in);
  /* step */
  in = ddp_instr_blank(I_RANGE_PUSH, STREAM_COMPUTE);
  in.i[0] = RANGE_STEP, in.name = ddp_plan_add_string(p, "step");
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[0] = 0, in.i[1] = TIMER_STEP_BEGIN;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_LOAD_BATCH, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, pp.x, 0), in.p[1] = cxt_ref(p, pp.y, 0);
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_RANGE_PUSH, STREAM_COMPUTE);
  in.i[0] = RANGE_FORWARD;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE); /* h = x @ w */
  in.p[0] = cxt_ref(p, pp.x, 0), in.p[1] = cxt_ref(p, pp.w, 0), in.p[2] = in.p[3] = cxt_ref(p, pp.h, 0);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[0] = PB, in.i[1] = PH, in.i[2] = PIN, in.i[5] = PIN, in.i[6] = PH, in.i[7] = in.i[8] = PH, in.i[9] = 1;
  in.f[0] = 1.0f;
  in.name = ddp_plan_add_string(p, "h=x@w");
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_RANGE_POP, STREAM_COMPUTE);
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_EVENT_RECORD, STREAM_COMPUTE);
  in.i[0] = 0;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_EVENT_WAIT, STREAM_COMM);
  in.i[0] = 0;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_COPY, STREAM_COMM);
  in.p[0] = cxt_ref(p, pp.h, 0), in.p[1] = cxt_ref(p, pp.z, 0), in.i[0] = PB * PH * 4;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_ALL_REDUCE, STREAM_COMM); /* one rank: a copy */
  in.p[0] = cxt_ref(p, pp.z, 0), in.p[1] = cxt_ref(p, pp.q, 0), in.dt[0] = DT_F32;
  in.i[0] = PB * PH, in.i[1] = REDOP_AVG;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_EVENT_RECORD, STREAM_COMM);
  in.i[0] = 1;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_EVENT_WAIT, STREAM_COMPUTE);
  in.i[0] = 1;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_TIMER, STREAM_COMPUTE);
  in.i[0] = 1, in.i[1] = TIMER_STEP_END;
  cxt_push(p, 0, 0, &in);
  in = ddp_instr_blank(I_RANGE_POP, STREAM_COMPUTE);
  cxt_push(p, 0, 0, &in);
  return pp;
}

static void test_pipeline(int device, int graph) {
  const char *mode = graph ? "graph" : "eager";
  pipe_plan pp = pipeline_plan();
  ddp_plan *p = pp.p;
  char err[1024];
  ddp_data *data = ddp_data_open(p, 11, err, sizeof err);
  CHECK(data, "data: %s", err);
  if (!data) return;
  if (graph) setenv("DDP_CUDA_GRAPH", "1", 1);
  ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, device, NULL, data, 1234, err, sizeof err);
  unsetenv("DDP_CUDA_GRAPH");
  CHECK(x, "pipeline %s: executor: %s", mode, err);
  if (!x) {
    ddp_data_close(data);
    ddp_plan_free(p);
    return;
  }
  float w[PIN * PH], w_host[PIN * PH], xin[PB * PIN], yin[PB * POUT], xh[PB * PIN], yh[PB * POUT], q[PB * PH];
  float ms[100];
  uint16_t wb[PIN * PH], wb_host[PIN * PH];
  int rc = x->v->run(x, &p->ranks[0].init, 0, err, sizeof err);
  if (!rc) rc = x->v->sync(x, err, sizeof err);
  if (!rc) rc = x->v->read(x, pp.w, w, err, sizeof err);
  if (!rc) rc = x->v->read(x, pp.wb, wb, err, sizeof err);
  if (!rc) rc = x->v->read(x, pp.ms, ms, err, sizeof err);
  CHECK(!rc, "pipeline %s init: %s", mode, err);
  ddp_init_fill(&p->ranks[0].init.v[0], 1234, w_host);
  ddp_init_fill(&p->ranks[0].init.v[1], 1234, wb_host);
  CHECK(!memcmp(w, w_host, sizeof w), "pipeline %s: INIT_TENSOR f32 differs from ddp_init_fill", mode);
  CHECK(!memcmp(wb, wb_host, sizeof wb), "pipeline %s: INIT_TENSOR bf16 differs from ddp_init_fill", mode);
  uint8_t pattern[400];
  memset(pattern, 0x3f, sizeof pattern);
  CHECK(!memcmp(ms, pattern, sizeof ms), "pipeline %s: MEMSET pattern", mode);
  for (int64_t s = 0; s < 5 && !rc; s++) {
    rc = x->v->run(x, &p->ranks[0].step, s, err, sizeof err);
    if (!rc) rc = x->v->sync(x, err, sizeof err);
    if (!rc) rc = x->v->read(x, pp.x, xin, err, sizeof err);
    if (!rc) rc = x->v->read(x, pp.y, yin, err, sizeof err);
    if (!rc) rc = x->v->read(x, pp.q, q, err, sizeof err);
    double ms_t[2] = {-1, -1};
    if (!rc) rc = x->v->timers(x, ms_t, err, sizeof err);
    CHECK(!rc, "pipeline %s step %lld: %s", mode, (long long)s, err);
    if (rc) break;
    CHECK(!ddp_data_fill(data, s, 0, 1, xh, yh, err, sizeof err), "data fill: %s", err);
    CHECK(!memcmp(xin, xh, sizeof xh) && !memcmp(yin, yh, sizeof yh),
              "pipeline %s step %lld: LOAD_BATCH differs from ddp_data_fill", mode, (long long)s);
    double worst = 0;
    for (int i = 0; i < PB; i++)
      for (int j = 0; j < PH; j++) {
        double acc = 0;
        for (int k = 0; k < PIN; k++) acc += (double)xh[i * PIN + k] * (double)w_host[k * PH + j];
        double e = fabs(acc - q[i * PH + j]);
        if (e > worst) worst = e;
      }
    CHECK(worst < 1e-4, "pipeline %s step %lld: GEMM/COPY/collective result off by %.3g", mode, (long long)s,
              worst);
    CHECK(ms_t[0] == 0.0 && ms_t[1] >= 0.0 && ms_t[1] < 1e4, "pipeline %s step %lld: timers %g %g", mode,
              (long long)s, ms_t[0], ms_t[1]);
    printf("pipeline %s step %lld: ok (step %.3f ms, max |err| %.2g)\n", mode, (long long)s, ms_t[1], worst);
  }
  uint64_t in_use = 0, peak = 0;
  CHECK(!x->v->memory(x, &in_use, &peak) && in_use > 0 && peak >= in_use, "memory %llu peak %llu",
            (unsigned long long)in_use, (unsigned long long)peak);
  x->v->destroy(x);
  ddp_data_close(data);
  ddp_plan_free(p);
}


/* ---------------------------------------------------------------- KERNEL ------------------------------- */

static const char *axpb_src =
    "struct ddp_kargs { void *p[12]; long long i[16]; float f[8]; };\n"
    "extern \"C\" __global__ void ddp_test_axpb(ddp_kargs a) {\n"
    "  extern __shared__ float buf[];\n"
    "  long long n = a.i[0];\n"
    "  const float *x = (const float *)a.p[0];\n"
    "  float *y = (float *)a.p[1];\n"
    "  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += gridDim.x * (long long)blockDim.x) {\n"
    "    buf[a.i[2] - 1 - threadIdx.x] = x[k];\n"
    "    y[k] = a.f[0] * buf[a.i[2] - 1 - threadIdx.x] + (float)a.i[1];\n"
    "  }\n"
    "}\n";

static uint8_t *nvrtc_cubin(const char *arch, size_t *size) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, axpb_src, "axpb.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return NULL;
  char opt[64];
  snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
  const char *opts[] = {opt};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
  uint8_t *cubin = NULL;
  if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, size) == NVRTC_SUCCESS && (cubin = malloc(*size)) &&
      nvrtcGetCUBIN(prog, (char *)cubin) != NVRTC_SUCCESS) {
    free(cubin);
    cubin = NULL;
  }
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    char *log = calloc(n + 1, 1);
    nvrtcGetProgramLog(prog, log);
    fprintf(stderr, "NVRTC: %s\n%s\n", nvrtcGetErrorString(r), log);
    free(log);
  }
  nvrtcDestroyProgram(&prog);
  return cubin;
}

static void test_kernel(int device) {
  char arch[16], name[128], err[1024];
  CHECK(!ddp_cuda_device_arch(device, arch, sizeof arch, name, sizeof name, err, sizeof err), "%s", err);
  size_t size = 0;
  uint8_t *cubin = nvrtc_cubin(arch, &size);
  CHECK(cubin, "NVRTC could not build the test kernel for %s", arch);
  if (!cubin) return;
  enum { N = 5000, SMEM_FLOATS = 16384 };
  ddp_plan *p = cxt_plan_new(1, 2);
  free(p->meta.arch);
  p->meta.arch = strdup(arch);
  int32_t xt = cxt_tensor(p, "x", DT_F32, ARENA_ACT, 1, N + 64), yt = cxt_tensor(p, "y", DT_F32, ARENA_GRAD, 1, N + 64);
  p->modules = calloc(1, sizeof *p->modules);
  p->nmodules = p->cap_modules = 1;
  p->modules[0].template_name = strdup("test");
  p->modules[0].entry = strdup("test_axpb");
  p->modules[0].spec = strdup("");
  p->modules[0].cubin = cubin;
  p->modules[0].cubin_size = size;
  p->kernels = calloc(1, sizeof *p->kernels);
  p->nkernels = p->cap_kernels = 1;
  p->kernels[0] = (ddp_kernel){OP_SCALE, 0};
  ddp_instr in = ddp_instr_blank(I_KERNEL, STREAM_COMM);
  in.op = OP_SCALE;
  in.kernel = 0;
  in.grid[0] = 4, in.grid[1] = in.grid[2] = 1;
  in.block[0] = 256, in.block[1] = in.block[2] = 1;
  in.smem = SMEM_FLOATS * 4;
  in.p[0] = cxt_ref(p, xt, 64 * 4); /* views: the kernel must get arena + resolved offset */
  in.p[1] = cxt_ref(p, yt, 32 * 4);
  in.dt[0] = in.dt[1] = DT_F32;
  in.i[0] = N, in.i[1] = 7, in.i[2] = SMEM_FLOATS;
  in.f[0] = 0.5f;
  cxt_push(p, 0, 0, &in);
  ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, device, NULL, NULL, 1, err, sizeof err);
  CHECK(x, "kernel: executor: %s", err);
  if (x) {
    static float xs[N + 64], ys[N + 64];
    for (int i = 0; i < N + 64; i++) xs[i] = (float)i, ys[i] = -1.0f;
    int rc = x->v->write(x, xt, xs, err, sizeof err);
    if (!rc) rc = x->v->write(x, yt, ys, err, sizeof err);
    if (!rc) rc = x->v->run(x, &p->ranks[0].step, 0, err, sizeof err);
    if (!rc) rc = x->v->sync(x, err, sizeof err);
    if (!rc) rc = x->v->read(x, yt, ys, err, sizeof err);
    CHECK(!rc, "kernel: %s", err);
    int bad = 0;
    for (int i = 0; !rc && i < N + 64; i++) {
      float want = (i >= 32 && i < 32 + N) ? 0.5f * (float)(i - 32 + 64) + 7.0f : -1.0f;
      bad += ys[i] != want;
    }
    CHECK(!bad, "kernel: %d of %d outputs wrong", bad, N + 64);
    printf("kernel from CUBIN (%s, %zu bytes, 64 KB smem): %s\n", arch, size, bad || rc ? "FAILED" : "ok");
    x->v->destroy(x);
  }
  ddp_plan_free(p);
}

/* ---------------------------------------------------------------- load-time errors ---------------------- */

static void expect_refusal(ddp_plan *p, int device, const char *needle, const char *what) {
  char err[1024] = "";
  ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, device, NULL, NULL, 1, err, sizeof err);
  CHECK(!x, "%s: accepted", what);
  if (x) x->v->destroy(x);
  CHECK(cxt_one_line(err) && strstr(err, needle), "%s: message '%s' lacks '%s'", what, err, needle);
  printf("refused (%s): %s\n", what, err);
  ddp_plan_free(p);
}

static void test_errors(int device) {
  /* a GEMM reading past its tensor */
  ddp_plan *p = cxt_plan_new(1, 2);
  int32_t a = cxt_tensor(p, "a", DT_F32, ARENA_ACT, 8, 8), d = cxt_tensor(p, "d", DT_F32, ARENA_ACT, 8, 8);
  ddp_instr in = ddp_instr_blank(I_GEMM, STREAM_COMPUTE);
  in.p[0] = in.p[1] = cxt_ref(p, a, 0), in.p[2] = in.p[3] = cxt_ref(p, d, 0);
  in.dt[0] = in.dt[1] = in.dt[2] = in.dt[3] = DT_F32;
  in.i[0] = 8, in.i[1] = 8, in.i[2] = 16, in.i[5] = 16, in.i[6] = 8, in.i[7] = in.i[8] = 8, in.i[9] = 1;
  in.f[0] = 1;
  in.name = ddp_plan_add_string(p, "too.far");
  cxt_push(p, 0, 0, &in);
  expect_refusal(p, device, "too.far", "GEMM past its tensor");
  /* mixed A/B dtypes */
  p = cxt_plan_new(1, 2);
  a = cxt_tensor(p, "a", DT_F32, ARENA_ACT, 8, 8);
  int32_t b = cxt_tensor(p, "b", DT_BF16, ARENA_ACT, 8, 8);
  d = cxt_tensor(p, "d", DT_F32, ARENA_ACT, 8, 8);
  in.p[0] = cxt_ref(p, a, 0), in.p[1] = cxt_ref(p, b, 0), in.p[2] = in.p[3] = cxt_ref(p, d, 0);
  in.dt[1] = DT_BF16;
  in.i[2] = 8, in.i[5] = 8;
  in.name = ddp_plan_add_string(p, "mixed");
  cxt_push(p, 0, 0, &in);
  expect_refusal(p, device, "both bf16", "mixed GEMM dtypes");
  /* a copy past the end of the arena's tensor */
  p = cxt_plan_new(1, 2);
  a = cxt_tensor(p, "a", DT_F32, ARENA_ACT, 8, 8);
  d = cxt_tensor(p, "d", DT_F32, ARENA_ACT, 8, 8);
  in = ddp_instr_blank(I_COPY, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, a, 0), in.p[1] = cxt_ref(p, d, 128), in.i[0] = 256;
  cxt_push(p, 0, 0, &in);
  expect_refusal(p, device, "outside its storage", "COPY past its tensor");
  /* a kernel without CUBIN */
  p = cxt_plan_new(1, 2);
  in = ddp_instr_blank(I_KERNEL, STREAM_COMPUTE);
  in.op = OP_RELU_FWD;
  cxt_push(p, 0, 1, &in);
  expect_refusal(p, device, "no compiled kernel", "KERNEL without CUBIN");
}

/* ---------------------------------------------------------------- NCCL (2 ranks) ------------------------ */

enum { NA = 1000, NB = 512, NS = 256, NG = 128, NT = 300, NP = 100 };

typedef struct nccl_plan {
  ddp_plan *p;
  int32_t a, bb, bo, s, g, t, ps, pr;
} nccl_plan;

static void coll(ddp_plan *p, int r, int opc, int32_t send, uint64_t sv, int32_t recv, uint64_t rv, int dt,
                 int64_t count, int64_t redop, int64_t root) {
  ddp_instr in = ddp_instr_blank(opc, STREAM_COMM);
  if (send >= 0) in.p[0] = cxt_ref(p, send, sv);
  if (recv >= 0) in.p[1] = cxt_ref(p, recv, rv);
  in.dt[0] = (uint8_t)dt;
  in.i[0] = count, in.i[1] = redop, in.i[2] = root;
  cxt_push(p, r, 0, &in);
}

static nccl_plan nccl_ops_plan(int p2p) {
  nccl_plan np;
  ddp_plan *p = np.p = cxt_plan_new(2, 2);
  np.a = cxt_tensor(p, "a", DT_F32, ARENA_GRAD, 1, NA);
  np.bb = cxt_tensor(p, "b", DT_BF16, ARENA_GRAD, 1, NB);
  np.bo = cxt_tensor(p, "b.avg", DT_BF16, ARENA_GRAD, 1, NB);
  np.s = cxt_tensor(p, "s", DT_F32, ARENA_GRAD, 2, NS);
  np.g = cxt_tensor(p, "g", DT_F32, ARENA_PARAM, 2, NG);
  np.t = cxt_tensor(p, "t", DT_F32, ARENA_PARAM, 1, NT);
  np.ps = cxt_tensor(p, "p.send", DT_F32, ARENA_ACT, 1, NP);
  np.pr = cxt_tensor(p, "p.recv", DT_F32, ARENA_ACT, 1, NP);
  for (int r = 0; r < 2; r++) {
    coll(p, r, I_ALL_REDUCE, np.a, 0, np.a, 0, DT_F32, NA, REDOP_SUM, 0);
    coll(p, r, I_ALL_REDUCE, np.bb, 0, np.bo, 0, DT_BF16, NB, REDOP_AVG, 0);
    coll(p, r, I_REDUCE_SCATTER, np.s, 0, np.s, (uint64_t)r * NS * 4, DT_F32, NS, REDOP_SUM, 0);
    coll(p, r, I_ALL_GATHER, np.g, (uint64_t)r * NG * 4, np.g, 0, DT_F32, NG, 0, 0);
    coll(p, r, I_BROADCAST, np.t, 0, np.t, 0, DT_F32, NT, 0, 1);
    if (!p2p) continue;
    ddp_instr in = ddp_instr_blank(I_SEND, STREAM_COMM); /* both ranks send first: one NCCL group */
    in.p[0] = cxt_ref(p, np.ps, 0), in.dt[0] = DT_F32, in.i[0] = NP, in.i[2] = 1 - r;
    cxt_push(p, r, 0, &in);
    in = ddp_instr_blank(I_RECV, STREAM_COMM);
    in.p[0] = cxt_ref(p, np.pr, 0), in.dt[0] = DT_F32, in.i[0] = NP, in.i[2] = 1 - r;
    cxt_push(p, r, 0, &in);
  }
  return np;
}

static float val(int r, int64_t i, int salt) { return (float)((i * 7 + salt) % 13) + 100.0f * (float)r; }

static int nccl_child_ops(int rank, const void *id, int graph, int p2p) {
  nccl_plan np = nccl_ops_plan(p2p);
  ddp_plan *p = np.p;
  char err[1024];
  if (graph) setenv("DDP_CUDA_GRAPH", "1", 1);
  ddp_exec *x = ddp_exec_cuda_new(p, rank, 2, rank, id, NULL, 1, err, sizeof err);
  CHECK(x, "rank %d: executor: %s", rank, err);
  if (!x) return 1;
  static float a[NA], s[2 * NS], g[2 * NG], t[NT], ps[NP], pr[NP];
  static uint16_t bb[NB], bo[NB];
  for (int step = 0; step < 4; step++) {
    for (int64_t i = 0; i < NA; i++) a[i] = val(rank, i, step);
    for (int64_t i = 0; i < NB; i++) bb[i] = ddp_f32_to_bf16((float)(2 * rank + i % 4));
    for (int64_t i = 0; i < 2 * NS; i++) s[i] = val(rank, i, 1);
    for (int64_t i = 0; i < 2 * NG; i++) g[i] = (i / NG == rank) ? val(rank, i, 2) : -1.0f;
    for (int64_t i = 0; i < NT; i++) t[i] = val(rank, i, 3);
    for (int64_t i = 0; i < NP; i++) ps[i] = val(rank, i, 4);
    int rc = x->v->write(x, np.a, a, err, sizeof err);
    if (!rc) rc = x->v->write(x, np.bb, bb, err, sizeof err);
    if (!rc) rc = x->v->write(x, np.s, s, err, sizeof err);
    if (!rc) rc = x->v->write(x, np.g, g, err, sizeof err);
    if (!rc) rc = x->v->write(x, np.t, t, err, sizeof err);
    if (!rc) rc = x->v->write(x, np.ps, ps, err, sizeof err);
    if (!rc) rc = x->v->run(x, &p->ranks[rank].step, step, err, sizeof err);
    if (!rc) rc = x->v->sync(x, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.a, a, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.bo, bo, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.s, s, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.g, g, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.t, t, err, sizeof err);
    if (!rc) rc = x->v->read(x, np.pr, pr, err, sizeof err);
    CHECK(!rc, "rank %d step %d: %s", rank, step, err);
    if (rc) break;
    fprintf(stderr, "rank %d step %d done\n", rank, step);
    int bad = 0;
    for (int64_t i = 0; i < NA; i++) bad += a[i] != val(0, i, step) + val(1, i, step);
    CHECK(!bad, "rank %d step %d: all-reduce sum: %d wrong", rank, step, bad);
    bad = 0;
    for (int64_t i = 0; i < NB; i++) bad += ddp_bf16_to_f32(bo[i]) != (float)(1 + i % 4);
    CHECK(!bad, "rank %d step %d: all-reduce avg bf16: %d wrong", rank, step, bad);
    bad = 0;
    for (int64_t i = 0; i < NS; i++) {
      int64_t j = rank * NS + i;
      bad += s[j] != val(0, j, 1) + val(1, j, 1);
    }
    CHECK(!bad, "rank %d step %d: reduce-scatter: %d wrong", rank, step, bad);
    bad = 0;
    for (int64_t i = 0; i < 2 * NG; i++) bad += g[i] != val((int)(i / NG), i, 2);
    CHECK(!bad, "rank %d step %d: all-gather: %d wrong", rank, step, bad);
    bad = 0;
    for (int64_t i = 0; i < NT; i++) bad += t[i] != val(1, i, 3);
    CHECK(!bad, "rank %d step %d: broadcast from rank 1: %d wrong", rank, step, bad);
    bad = 0;
    for (int64_t i = 0; p2p && i < NP; i++) bad += pr[i] != val(1 - rank, i, 4);
    CHECK(!bad, "rank %d step %d: send/recv: %d wrong", rank, step, bad);
  }
  x->v->destroy(x);
  ddp_plan_free(p);
  printf("nccl %s rank %d: %s\n", graph ? "graph" : "eager", rank, check_failed ? "FAILED" : "ok");
  return check_failed ? 1 : 0;
}

/* Rank 1 joins the communicator and exits; rank 0's all-reduce must fail within the deadline. */
static int nccl_child_dead(int rank, const void *id) {
  ddp_plan *p = cxt_plan_new(2, 2);
  int32_t a = cxt_tensor(p, "a", DT_F32, ARENA_GRAD, 1, 1 << 20);
  for (int r = 0; r < 2; r++) coll(p, r, I_ALL_REDUCE, a, 0, a, 0, DT_F32, 1 << 20, REDOP_SUM, 0);
  char err[1024] = "";
  setenv("DDP_NCCL_TIMEOUT_S", "5", 1);
  ddp_exec *x = ddp_exec_cuda_new(p, rank, 2, rank, id, NULL, 1, err, sizeof err);
  CHECK(x, "dead-peer rank %d: executor: %s", rank, err);
  if (!x) return 1;
  if (rank == 1) _exit(0); /* dies without a word */
  double t0 = ddp_now_s();
  int rc = x->v->run(x, &p->ranks[0].step, 0, err, sizeof err);
  if (!rc) rc = x->v->sync(x, err, sizeof err);
  double t1 = ddp_now_s();
  CHECK(rc, "dead-peer: rank 0's all-reduce with a dead peer succeeded");
  CHECK(t1 - t0 < 30.0, "dead-peer: took %.1f s with a 5 s deadline", t1 - t0);
  CHECK(cxt_one_line(err) && strstr(err, "peer rank 1"), "dead-peer message: '%s'", err);
  printf("dead peer detected after %.1f s: %s\n", t1 - t0, err);
  double t2 = ddp_now_s();
  x->v->destroy(x);
  CHECK(ddp_now_s() - t2 < 30.0, "dead-peer: destroy took %.1f s", ddp_now_s() - t2);
  ddp_plan_free(p);
  return check_failed ? 1 : 0;
}

/* A hung rank prints its main thread's stack (resolve with addr2line) and exits 3. */
static pthread_t main_thread;
static void on_hang(int sig) {
  (void)sig;
  static const char m[] = "rank hung; main thread backtrace:\n";
  if (write(2, m, sizeof m - 1) < 0) _exit(3);
  void *bt[64];
  int n = backtrace(bt, 64);
  backtrace_symbols_fd(bt, n, 2);
  _exit(3);
}
static void *hang_watch(void *arg) {
  sleep((unsigned)(intptr_t)arg);
  pthread_kill(main_thread, SIGUSR1);
  return NULL;
}
static void arm_watchdog(unsigned seconds) {
  pthread_t t;
  main_thread = pthread_self();
  signal(SIGUSR1, on_hang);
  if (pthread_create(&t, NULL, hang_watch, (void *)(intptr_t)seconds) == 0) pthread_detach(t);
}

static int hexval(char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; }

static int nccl_child(int argc, char **argv) {
  if (argc < 5) return 2;
  int rank = atoi(argv[2]);
  uint8_t id[DDP_NCCL_ID_BYTES];
  for (int i = 0; i < DDP_NCCL_ID_BYTES; i++) id[i] = (uint8_t)(hexval(argv[3][2 * i]) << 4 | hexval(argv[3][2 * i + 1]));
  arm_watchdog(argc > 5 ? (unsigned)atoi(argv[5]) : 150);
  if (!strcmp(argv[4], "dead")) return nccl_child_dead(rank, id);
  return nccl_child_ops(rank, id, strstr(argv[4], "graph") != NULL, strstr(argv[4], "nop2p") == NULL);
}

/* Runs both ranks as fresh processes (exec: CUDA is already initialised in this one); 0 when both pass. */
static int run_two_ranks(const char *mode, double limit_s) {
  char child_limit[16];
  snprintf(child_limit, sizeof child_limit, "%d", (int)(limit_s * 0.75));
  ncclUniqueId uid;
  ncclResult_t r = ncclGetUniqueId(&uid);
  CHECK(r == ncclSuccess, "ncclGetUniqueId: %s", ncclGetErrorString(r));
  if (r != ncclSuccess) return 1;
  char hex[2 * DDP_NCCL_ID_BYTES + 1];
  for (int i = 0; i < DDP_NCCL_ID_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", (uint8_t)uid.internal[i]);
  pid_t pid[2];
  fflush(NULL);
  for (int rk = 0; rk < 2; rk++) {
    pid[rk] = fork();
    if (pid[rk] == 0) {
      char rs[16];
      snprintf(rs, sizeof rs, "%d", rk);
      execl("/proc/self/exe", "test_cuda_exec_gpu", "--nccl-rank", rs, hex, mode, child_limit, (char *)NULL);
      _exit(127);
    }
  }
  int status[2] = {-1, -1}, live = 2;
  double t0 = ddp_now_s();
  while (live > 0) {
    for (int rk = 0; rk < 2; rk++)
      if (pid[rk] > 0 && waitpid(pid[rk], &status[rk], WNOHANG) == pid[rk]) pid[rk] = 0, live--;
    if (live > 0 && ddp_now_s() - t0 > limit_s) {
      for (int rk = 0; rk < 2; rk++)
        if (pid[rk] > 0) kill(pid[rk], SIGKILL), waitpid(pid[rk], &status[rk], 0), pid[rk] = 0;
      CHECK(0, "nccl %s: ranks still running after %.0f s (killed)", mode, limit_s);
      return 1;
    }
    usleep(20000);
  }
  int bad = 0;
  for (int rk = 0; rk < 2; rk++) {
    int ok = WIFEXITED(status[rk]) && WEXITSTATUS(status[rk]) == 0;
    CHECK(ok, "nccl %s: rank %d exited with status 0x%x", mode, rk, status[rk]);
    bad += !ok;
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--nccl-rank")) return nccl_child(argc, argv);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int ndev = 0;
  char why[512];
  if (ddp_cuda_probe(&ndev, why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  const char *only = getenv("DDP_TEST_ONLY"); /* gemm, pipeline, kernel, errors, nccl */
  if (!only || strstr(only, "gemm")) test_gemm(0);
  if (!only || strstr(only, "pipeline")) {
    test_pipeline(0, 0);
    test_pipeline(0, 1);
  }
  if (!only || strstr(only, "kernel")) test_kernel(0);
  if (!only || strstr(only, "errors")) test_errors(0);
  if (!only || strstr(only, "nccl")) {
    const char *modes = getenv("DDP_TEST_NCCL_MODES"); /* e.g. "graph,graph-nop2p" */
    if (ndev >= 2 && modes) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", modes);
      for (char *m = strtok(buf, ","); m; m = strtok(NULL, ",")) run_two_ranks(m, 60);
    } else if (ndev >= 2) {
      run_two_ranks("eager", 180);
      run_two_ranks("graph", 180);
      run_two_ranks("dead", 120);
    } else {
      printf("nccl: skipped (%d GPU; needs 2)\n", ndev);
    }
  }
  return check_report("test_cuda_exec_gpu");
}

/* runtime/driver/init_fill.c: the host implementation of INIT_TENSOR shared by both executors (so a GPU run and
 * a reference run start from the same bits). Values are counter-based draws (runtime/driver/rng.h) of
 * (run seed mixed with the instruction's rank salt i4, stream i2, and the element's index in the stream: first
 * i5 + i, or with run i6 > 0 first + (i / run) * stride i7 + i % run, a tensor-parallel rank's runs of a
 * row-split unit), so the result does not depend on how many threads fill it, nor on how a unit is split into
 * pieces, contiguous or strided.
 *   ZEROS, CONST f0, UNIFORM [f0, f1), NORMAL std f0,
 *   TRUNC_NORMAL std f0 cut at +-f1 (redrawn from a disjoint index range until inside, as
 *     torch.nn.init.trunc_normal_ does by its own method: the distribution is the same),
 *   ROPE_INV_FREQ: element m = 1 / theta^(2m/d_head) with theta = f0, d_head = i3, computed in f32 as
 *     PyTorch does (exponent and power rounded to f32). */
#include "exec.h"
#include "rng.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
  const ddp_instr *in;
  uint64_t seed;
  void *dst;
  int64_t lo, hi;
} fill_job;

/* Element i's index in the stream (computed in u64: the reader proves it fits int64, an unchecked plan wraps). */
static int64_t stream_index(const ddp_instr *in, int64_t i) {
  int64_t run = in->i[INIT_TENSOR_I_RUN];
  uint64_t k = run > 0 ? (uint64_t)(i / run) * (uint64_t)in->i[INIT_TENSOR_I_STRIDE] + (uint64_t)(i % run) : (uint64_t)i;
  return (int64_t)(k + (uint64_t)in->i[INIT_TENSOR_I_FIRST]);
}

static double value_at(const ddp_instr *in, uint64_t seed, int64_t i) {
  i = stream_index(in, i);
  uint64_t stream = (uint64_t)in->i[INIT_TENSOR_I_STREAM];
  switch (in->i[INIT_TENSOR_I_KIND]) {
  case INIT_CONST:
    return in->f[INIT_TENSOR_F_A];
  case INIT_UNIFORM: {
    double u = ddp_rng_uniform53(ddp_rng_u64(seed, stream, (uint64_t)i));
    return in->f[INIT_TENSOR_F_A] + (in->f[INIT_TENSOR_F_B] - in->f[INIT_TENSOR_F_A]) * u;
  }
  case INIT_NORMAL:
    return in->f[INIT_TENSOR_F_A] * ddp_rng_normal(seed, stream, (uint64_t)i);
  case INIT_TRUNC_NORMAL: {
    double std = in->f[INIT_TENSOR_F_A], cut = in->f[INIT_TENSOR_F_B];
    for (uint64_t attempt = 0;; attempt++) {
      double v = std * ddp_rng_normal(seed, stream, (uint64_t)i + (attempt << 40));
      if (fabs(v) <= cut || attempt > 64) return fabs(v) <= cut ? v : 0.0;
    }
  }
  case INIT_ROPE_INV_FREQ: {
    float e = (float)(2.0 * (double)i) / (float)in->i[INIT_TENSOR_I_FAN_IN];
    float pw = (float)pow((double)in->f[INIT_TENSOR_F_A], (double)e);
    return 1.0f / pw;
  }
  default: return 0.0;
  }
}

static void *fill_range(void *arg) {
  fill_job *j = arg;
  for (int64_t i = j->lo; i < j->hi; i++)
    ddp_store(j->dst, j->in->dt[INIT_TENSOR_P_TENSOR], i, value_at(j->in, j->seed, i));
  return NULL;
}

void ddp_init_fill(const ddp_instr *in, uint64_t seed, void *dst) {
  int64_t n = in->i[INIT_TENSOR_I_ELEMENTS];
  uint64_t s = seed + (uint64_t)in->i[INIT_TENSOR_I_SALT] * 0x9e3779b97f4a7c15ull;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = n < (1 << 20) ? 1 : (int)(cores < 1 ? 1 : cores > 32 ? 32 : cores);
  fill_job jobs[32];
  pthread_t th[32];
  for (int t = 0; t < threads; t++) {
    jobs[t] = (fill_job){in, s, dst, n * t / threads, n * (t + 1) / threads};
    if (threads == 1) fill_range(&jobs[t]);
    else pthread_create(&th[t], NULL, fill_range, &jobs[t]);
  }
  if (threads > 1)
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
}

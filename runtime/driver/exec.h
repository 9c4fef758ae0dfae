/* runtime/driver/exec.h: the executor interface. An executor owns one rank's memory (one arena per class) and
 * replays a plan program on it: `cuda` (runtime/cuda/) on a GPU with NCCL, `ref` (runtime/ref/) on the CPU
 * with ranks as threads. The driver (run.c) is shared: init, resume, the step loop, metrics, checkpoints. */
#ifndef DDP_EXEC_H
#define DDP_EXEC_H
#include "data.h"
#include "plan.h"
#include "step_times.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct ddp_exec ddp_exec;

/* A GPU's energy counters: the energy since the driver loaded (mJ), when that value was first seen
 * (at_s, base/clock.h's clock: the counter advances in steps tens of milliseconds apart, so power is the
 * difference of two readings over the difference of their at_s), and the time the power limit has held
 * the clocks below their application clocks (ns; UINT64_MAX where the GPU does not report it). */
typedef struct ddp_energy {
  uint64_t mJ, power_capped_ns;
  double at_s;
} ddp_energy;

typedef struct ddp_exec_vtbl {
  const char *name;
  /* Replays `prog` (an init or step program of this rank); `step` is the step index LOAD_BATCH uses. */
  int (*run)(ddp_exec *x, const ddp_program *prog, int64_t step, char *err, size_t errcap);
  /* Waits for the rank's streams. */
  int (*sync)(ddp_exec *x, char *err, size_t errcap);
  /* Copies a tensor (or view) to or from host memory (synchronous). */
  int (*read)(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap);
  int (*write)(ddp_exec *x, int32_t tensor, const void *src, char *err, size_t errcap);
  /* Milliseconds of every timer slot of the last step relative to its first (after sync). */
  int (*timers)(ddp_exec *x, double *ms, char *err, size_t errcap);
  /* Device memory: bytes in use now and the peak since start (the ref reports its arenas). */
  int (*memory)(ddp_exec *x, uint64_t *in_use, uint64_t *peak);
  void (*destroy)(ddp_exec *x);
  /* Optional (NULL when unsupported): while x->trace is set, the executor records when every
   * instruction of the step program started and ended; this returns the last step's, in ms relative to
   * the step's first timing point (start[k] < 0: not recorded). */
  int (*instr_times)(ddp_exec *x, double *start, double *end, char *err, size_t errcap);
  /* Sums n host doubles over the ranks (every rank calls it, in the same order; afterwards every rank
   * holds the sum). Used by the driver for the global loss, the stop decision and checkpoint agreement.
   * NULL is allowed for an executor that only ever runs one rank. */
  int (*allreduce_host)(ddp_exec *x, double *v, int n, char *err, size_t errcap);
  /* Optional (both or neither; NULL: allreduce_host is used, at once): the same sum in two halves, so that
   * the driver can issue the next step in between. `start` queues the sum of v behind the work issued so
   * far (v may be reused as soon as it returns); `finish` waits for it and writes the sums to v. At most
   * one in flight; every rank starts its sums in the same order as all its other host sums. */
  int (*allreduce_host_start)(ddp_exec *x, const double *v, int n, char *err, size_t errcap);
  int (*allreduce_host_finish)(ddp_exec *x, double *v, int n, char *err, size_t errcap);
  /* Optional (NULL: unsupported), every rank calls it with the same `in`: times `in` (ALL_REDUCE,
   * REDUCE_SCATTER or ALL_GATHER of COLL_I_COUNT fp32 elements, REDOP_SUM, over the world; or SEND: each
   * even rank sends COLL_I_COUNT elements to the next rank, which receives them, an odd world's last rank
   * idle) on scratch buffers, alone on the device: 2 unmeasured runs, then `iters` back to back; *ms is
   * this rank's mean per run (`ddprun --calibrate`'s collective sweep, runtime/bench/calib_sweep.c). */
  int (*time_collective)(ddp_exec *x, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap);
  /* Optional (NULL: unsupported), one rank: times `in`, a GEMM instruction whose operands name no tensor
   * (its shape, layout, leading dimensions and dtypes only), on scratch buffers the executor fills with a
   * constant, alone on the device: 2 unmeasured runs, then `iters` back to back; *ms is the mean per run
   * (`ddprun --calibrate`'s GEMM sweep, runtime/bench/calib_gemm.c). */
  int (*time_gemm)(ddp_exec *x, const ddp_instr *in, int iters, double *ms, char *err, size_t errcap);
  /* Optional (NULL: unsupported): this rank's GPU's latest counters, without waiting (CUDA: a sampler
   * thread reads NVML; the reads take milliseconds and stay off the step's path). 0, or 1 when they
   * cannot be read here (x->power says why); never a failure of the run. */
  int (*energy)(ddp_exec *x, ddp_energy *out);
  /* Optional (NULL: nothing to do): the step just issued keeps the GPU busy for about `seconds` more, in
   * which the driver only waits for it; the executor may read its counters then (CUDA: NVML's reads keep
   * the other threads' CUDA calls waiting, so the sampler reads only in such windows). */
  void (*energy_window)(ddp_exec *x, double seconds);
} ddp_exec_vtbl;

struct ddp_exec {
  const ddp_exec_vtbl *v;
  const ddp_plan *plan;
  int rank, world;
  ddp_data *data;        /* the batch source for LOAD_BATCH */
  uint64_t seed;         /* the run's seed (INIT_TENSOR); data has its own */
  bool trace;            /* record per-instruction times of the step program (see instr_times) */
  char p2p[192];         /* how the step's SEND/RECV move (executor's words), "" when the plan has none */
  char comm[320];        /* the communicators' configuration as NCCL took it, "" without one */
  char power[200];       /* how the energy is measured (CUDA: NVML and the power limit) or why it is not;
                            "" on an executor without `energy` */
  uint64_t mem_base;     /* device bytes in use before the arenas were allocated (the CUDA context and
                            libraries; 0 on the reference executor): peak - mem_base is what the run
                            itself allocated, comparable with the planner's bytes */
  void *impl;
};

/* allreduce_host when the run has more than one rank, else nothing (0 or -1 with err). */
int ddp_exec_allreduce(ddp_exec *x, double *v, int n, char *err, size_t errcap);
/* The same in two halves (allreduce_host_start / _finish, or the whole sum in _start where the executor has
 * no halves): pass the same v to both; after _finish it holds the sums. */
int ddp_exec_allreduce_start(ddp_exec *x, double *v, int n, char *err, size_t errcap);
int ddp_exec_allreduce_finish(ddp_exec *x, double *v, int n, char *err, size_t errcap);


/* Host implementation of INIT_TENSOR, shared by both executors so their initial values are identical:
 * fills `numel` elements of dtype in->dt[INIT_TENSOR_P_TENSOR] at dst. seed: the run seed. Multi-threaded
 * for large tensors; counter-based, so the result does not depend on the thread count. */
void ddp_init_fill(const ddp_instr *in, uint64_t seed, void *dst);
#endif

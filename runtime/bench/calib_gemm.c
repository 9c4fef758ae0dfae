/* runtime/bench/calib_gemm.c: the GEMM sweep of `ddprun --calibrate` on one rank (calibrate.h): after the
 * timed steps, the executor's time_gemm times GEMMs with bf16 inputs and output alone on the device, many
 * runs back to back, over a grid of shapes: M, N, K each of 256, 512, .. 8192 (the reference executor: 8,
 * 16, 32, a few runs: its figures are the CPU's and only the path is tested) in the three layouts of a
 * linear layer (forward X W^T: A plain, B transposed; input gradient dY W: both plain; weight gradient
 * dY^T X: A transposed). The profile keeps every point (gemm_by_shape) and the cost model interpolates
 * them (compiler/explain/cost.c): one throughput for every GEMM priced the 512-token microbatches of a
 * pipeline like the calibration plan's 4096-token GEMMs, and their step 35% over its measured time
 * (2 x H200, 2026-11-23). Each point's time is what a GEMM of that shape costs in an untraced step: its
 * kernel and the gap to the next, no timing events around it. */
#include "calibrate.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

const int ddp_calib_gemm_layouts[3][2] = {{0, 1}, {0, 0}, {1, 0}};

int ddp_calib_gemm_sweep(ddp_calib_rows *c, ddp_exec *x, char *err, size_t errcap) {
  if (x->world != 1) return 0;
  if (!x->v->time_gemm)
    return ddp_fail(err, errcap, "--calibrate: the %s executor cannot time a GEMM alone", x->v->name);
  static const int64_t gpu_dims[] = {256, 512, 1024, 2048, 4096, 8192}, cpu_dims[] = {8, 16, 32};
  int cpu = !strcmp(x->v->name, "ref"), nd = cpu ? 3 : 6;
  const int64_t *dims = cpu ? cpu_dims : gpu_dims;
  for (int l = 0; l < 3; l++)
    for (int a = 0; a < nd; a++)
      for (int b = 0; b < nd; b++)
        for (int k = 0; k < nd; k++) {
          int64_t M = dims[a], N = dims[b], K = dims[k];
          int ta = ddp_calib_gemm_layouts[l][0], tb = ddp_calib_gemm_layouts[l][1];
          ddp_instr in;
          memset(&in, 0, sizeof in);
          in.opcode = I_GEMM;
          for (int s = 0; s < DDP_MAX_PTRS; s++) in.p[s].tensor = -1;
          in.dt[GEMM_P_A] = in.dt[GEMM_P_B] = in.dt[GEMM_P_C] = in.dt[GEMM_P_D] = DT_BF16;
          in.i[GEMM_I_M] = M, in.i[GEMM_I_N] = N, in.i[GEMM_I_K] = K;
          in.i[GEMM_I_TRANS_A] = ta, in.i[GEMM_I_TRANS_B] = tb;
          in.i[GEMM_I_LDA] = ta ? M : K, in.i[GEMM_I_LDB] = tb ? K : N;
          in.i[GEMM_I_LDC] = in.i[GEMM_I_LDD] = N;
          in.i[GEMM_I_BATCH] = 1;
          in.f[GEMM_F_ALPHA] = 1.0f;
          /* about 2 ms of runs per point on the GPU (at 700 TFLOP/s and 10 us each), 3 to 50 */
          double est = 2.0 * (double)M * (double)N * (double)K / 700e12 + 10e-6;
          int iters = cpu ? 2 : (int)(2e-3 / est);
          if (!cpu) iters = iters < 3 ? 3 : iters > 50 ? 50 : iters;
          double ms = 0;
          if (x->v->time_gemm(x, &in, iters, &ms, err, errcap)) return -1;
          if (c->ngemm == c->capgemm) {
            c->capgemm = c->capgemm ? 2 * c->capgemm : 64;
            c->gemm = ddp_xrealloc(c->gemm, c->capgemm * sizeof *c->gemm);
          }
          c->gemm[c->ngemm++] = (ddp_gemm_point){(double)M, (double)N, (double)K, ms * 1e3, ta, tb};
        }
  return 0;
}

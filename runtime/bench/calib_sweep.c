/* runtime/bench/calib_sweep.c: the collective sweep of `ddprun --calibrate` on more than one rank
 * (calibrate.h): after the timed steps every rank times all-reduce, reduce-scatter, all-gather and a
 * send/receive between rank pairs alone on the device (the executor's time_collective: nothing else runs,
 * the ranks start together, many runs back to back), over message sizes from 64 KiB to 1 GiB (the
 * reference executor: 4 KiB to 1 MiB, a few runs: its figures are the CPU's and only the path is tested).
 * Rank 0 keeps each (kind, wire bytes, seconds) for the alpha-beta fits (calib_fit.c). The plan's own
 * collectives run beside the backward, their kernels sharing the SMs and the HBM with it and each rank's
 * start skewed by the other's compute, so fits from them price a collective slower than it runs alone
 * (2 x H200, 2026-11-23: all-reduce alpha 125 us and reduce-scatter 109 GB/s from calibrate_ddp/zero);
 * the simulator slows the compute beside a collective by collective_share instead. */
#include "calibrate.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

int ddp_calib_sweep(ddp_calib_rows *c, ddp_exec *x, int record, char *err, size_t errcap) {
  if (x->world <= 1) return 0;
  if (!x->v->time_collective)
    return ddp_fail(err, errcap, "--calibrate: the %s executor cannot time a collective alone", x->v->name);
  static const int kinds[4] = {I_ALL_REDUCE, I_REDUCE_SCATTER, I_ALL_GATHER, I_SEND};
  static const double gpu_bytes[6] = {65536, 1048576, 8388608, 67108864, 268435456, 1073741824};
  static const double cpu_bytes[3] = {4096, 65536, 1048576};
  int cpu = !strcmp(x->v->name, "ref"), nsizes = cpu ? 3 : 6, iters = cpu ? 3 : 20;
  const double *bytes = cpu ? cpu_bytes : gpu_bytes;
  for (int k = 0; k < 4; k++)
    for (int z = 0; z < nsizes; z++) {
      ddp_instr in;
      memset(&in, 0, sizeof in);
      in.opcode = (uint8_t)kinds[k];
      in.dt[COLL_P_SEND] = in.dt[COLL_P_RECV] = DT_F32;
      in.i[COLL_I_REDOP] = REDOP_SUM;
      in.i[COLL_I_PEER] = 1;
      in.p[COLL_P_SEND].tensor = in.p[COLL_P_RECV].tensor = -1;
      /* the buffer the cost model counts: all-reduce and send its elements, reduce-scatter and
       * all-gather the whole (world x count) */
      double per = kinds[k] == I_REDUCE_SCATTER || kinds[k] == I_ALL_GATHER ? x->world : 1;
      in.i[COLL_I_COUNT] = (int64_t)(bytes[z] / 4 / per) > 0 ? (int64_t)(bytes[z] / 4 / per) : 1;
      double ms = 0;
      if (x->v->time_collective(x, &in, iters, &ms, err, errcap)) return -1;
      if (!record) continue;
      ddp_work w;
      ddp_instr_work(x->plan, &in, &w);
      if (w.kind != WORK_COLL) continue;
      if (c->nsweep == c->capsweep) {
        c->capsweep = c->capsweep ? 2 * c->capsweep : 32;
        c->sweep = ddp_xrealloc(c->sweep, c->capsweep * sizeof *c->sweep);
      }
      c->sweep[c->nsweep++] = (ddp_calib_point){w.coll_kind, w.wire_bytes, ms * 1e-3};
    }
  return 0;
}

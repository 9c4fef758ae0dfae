/* runtime/driver/run.h: the driver every executor shares for one rank: init (or resume from a checkpoint), the
 * step loop, per-step metrics (JSON lines), checkpoints, the final summary. */
#ifndef DDP_RUN_H
#define DDP_RUN_H
#include "exec.h"
#include <stdbool.h>
#include <stdio.h>

typedef struct ddp_run_opts {
  int64_t steps;           /* < 0: the plan's */
  const char *metrics_path;
  const char *ckpt_dir;
  int64_t save_every;      /* 0: only at the end (when ckpt_dir is set) */
  int keep;                /* --keep-checkpoints: complete step folders kept (<= 0: all) */
  bool save_initial;       /* also save step 0 (the initialised state) before the first step */
  bool resume;
  double peak_tflops;      /* for MFU; 0: not reported */
  bool quiet;
  const char *device_desc; /* printed in the summary, e.g. "NVIDIA H200" or "cpu reference" */
  const char *trace_path;  /* Chrome trace of the last step (one file per rank), or NULL */
  bool calibrate;          /* --calibrate: rank 0 times every instruction of the steps after the warm-up and
                              writes the fitted device profile at the end (runtime/bench/calibrate.h) */
  const char *calibrate_out; /* the profile's path (NULL: under the cache directory) */
} ddp_run_opts;

/* Runs one rank to completion, or until a SIGTERM/SIGINT (stop.h) that every rank agrees on at a step
 * boundary: then a checkpoint is written (when ckpt_dir is set) and ddp_stop_exit_status() says 128 + the
 * signal. Rank 0 prints progress and writes metrics. Returns 0 or -1 with err. */
int ddp_run_rank(ddp_exec *x, const ddp_run_opts *o, char *err, size_t errcap);

/* Rewrites every standalone GEMM copy of a parameter from its fp32 master (used after a resume). */
int ddp_refresh_param_copies(ddp_exec *x, char *err, size_t errcap);
#endif

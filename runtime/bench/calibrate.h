/* runtime/bench/calibrate.h: `ddprun PLAN --calibrate` (docs/EXPLAIN.md, "Calibrating a profile"): the
 * driver records every timed step's per-instruction times of rank 0 (the executor's instr_times), the fits
 * (calib_fit.c) turn their medians into the device profile's figures from the same FLOPs and bytes the cost
 * model counts (plan/work.h), and calibrate.c writes the profile JSON under the cache directory. */
#ifndef DDP_CALIBRATE_H
#define DDP_CALIBRATE_H
#include "exec.h"
#include "gemm_table.h"
#include "work.h"
#include <stddef.h>

/* The attention shapes a profile holds at most: DDP_PROFILE_ATTN_SHAPES of the reader (compiler/explain/
 * explain.h), which ddprun does not link; test_calibrate.sh reads a merged profile back with ddpc explain. */
#define CALIB_MAX_ATTN_SHAPES 32

/* The model name that marks a calibration plan (schedules/calibrate.lua). */
#define DDP_CALIB_MODEL "calibrate"
/* The GEMM class boundary the built-in profile uses (gemm_small_dim): the calibration classifies by it. */
#define DDP_CALIB_SMALL_DIM 1024

/* A collective timed alone by the sweep (calib_sweep.c): its kind (COST_*), wire bytes as the cost model
 * counts them, and the mean seconds per run. */
typedef struct ddp_calib_point {
  int kind;
  double wire_bytes, s;
} ddp_calib_point;

/* The sweep's layouts (ta, tb): a linear layer's forward, input gradient and weight gradient. */
extern const int ddp_calib_gemm_layouts[3][2];

/* Per-instruction durations of rank 0's step program, one row (step.n values, seconds; < 0: not
 * recorded) per timed step, and in o the same shape the fraction of each instruction's interval during
 * which one of the rank's collectives ran (0 for the collectives themselves). */
typedef struct ddp_calib_rows {
  double *s, *o;
  size_t n, rows, cap;
  ddp_calib_point *sweep; /* rank 0's collective sweep (more than one rank) */
  size_t nsweep, capsweep;
  ddp_gemm_point *gemm;   /* the GEMM sweep (one rank): bf16 GEMMs timed alone, mean us per run */
  size_t ngemm, capgemm;
  double *step_ms[2];     /* the GPU step times (ms) of the steps after the warm-up: [0] untraced, [1] traced */
  size_t nstep[2], capstep[2];
} ddp_calib_rows;

/* Which steps after the warm-up are timed instruction by instruction: every other one, from the first.
 * The others run as in any run, so their step times against the traced ones' price the two events a
 * traced instruction carries (ddp_calib_launch_untraced). */
#define DDP_CALIB_TRACED(s_after_warmup) ((s_after_warmup) % 2 == 0)

/* Appends the step just run (x->trace was set for it). */
int ddp_calib_record(ddp_calib_rows *c, ddp_exec *x, char *err, size_t errcap);
/* Appends the GPU step time (ms) of a step after the warm-up, traced or not. */
void ddp_calib_step(ddp_calib_rows *c, double step_ms, int traced);
void ddp_calib_rows_free(ddp_calib_rows *c);
/* After the timed steps of a multi-rank plan, on every rank (the same calls in the same order): the
 * collective sweep; rank 0 (record) keeps the points in c. Nothing on one rank. */
int ddp_calib_sweep(ddp_calib_rows *c, ddp_exec *x, int record, char *err, size_t errcap);
/* After the timed steps of a one-rank plan: the GEMM sweep into c. Nothing on more than one rank (their
 * profile takes its compute figures from the device's one-rank profile). */
int ddp_calib_gemm_sweep(ddp_calib_rows *c, ddp_exec *x, char *err, size_t errcap);

/* y = a + b x by least squares over n points; returns the number of distinct x (a and b are set only when
 * it is >= 2). */
int ddp_fit_line(const double *x, const double *y, size_t n, double *a, double *b);

/* One figure of the profile: its value, whether the plan measured it, from how many samples, and why not. */
typedef struct ddp_calib_fig {
  double v;
  int measured, samples;
  char why[200];
} ddp_calib_fig;

enum { CAL_LAUNCH = 0, CAL_HBM, CAL_GEMM16, CAL_GEMM32, CAL_SMALL_SCALE, CAL_ATTENTION, CAL_SHARE, CAL_NFIG };
/* An instruction counts as alone below this overlap with collectives, as beside them at or above ALONGSIDE. */
#define DDP_CALIB_ALONE 0.1
#define DDP_CALIB_ALONGSIDE 0.9

typedef struct ddp_calib_fit {
  ddp_calib_fig fig[CAL_NFIG];            /* launch_us, hbm_gbps, gemm_tflops_16, gemm_tflops_32,
                                             gemm_small_scale, attention_tflops, collective_share */
  ddp_calib_fig alpha[COST_COLL_COUNT];   /* collectives: alpha_us ... */
  ddp_calib_fig busbw[COST_COLL_COUNT];   /* ... and busbw_gbps */
  double attn_t, attn_dh;                 /* the attention shape measured (the first attention kernel's) */
  /* launch_us as timed instruction by instruction (the memory-bound fit's intercept), and what
   * ddp_calib_launch_untraced made of it: the median step times traced and untraced and the instructions
   * priced with a launch (untraced_n 0: not applied) */
  double launch_traced_us, step_traced_ms, step_untraced_ms;
  int untraced_n;
} ddp_calib_fit;

const char *ddp_calib_fig_name(int f); /* "launch_us", ... */
/* The profile's names of the collective kinds (COST_*): "all_reduce", ... "send_recv". */
extern const char *const ddp_calib_coll_names[COST_COLL_COUNT];

/* Fits the figures from the per-instruction medians (seconds, < 0: not recorded) of `rank`'s step program
 * and their overlaps with collectives (NULL: none): the rates from the instructions that ran alone
 * (overlap < DDP_CALIB_ALONE; all of a kind when none did), collective_share = 1 - (their predicted time
 * alone) / (measured time) over the compute that ran beside a collective (overlap >= DDP_CALIB_ALONGSIDE).
 * A collective kind with points in the sweep (NULL, 0: none) is fitted from them alone, else from the
 * plan's instructions of that kind.
 * A figure the plan has no samples for is left unmeasured with its reason; returns -1 with one line in err
 * only when the plan measures nothing of the memory-bound work (no launch overhead, no bandwidth). */
int ddp_calib_fit_run(const ddp_plan *p, int rank, const double *median_s, const double *overlap,
                      const ddp_calib_point *sweep, size_t nsweep, ddp_calib_fit *f, char *err, size_t errcap);

/* The launch overhead of an untraced step: a traced step records two events around each instruction, so
 * launch_us (fitted from traced instructions) is lowered by (median traced step - median untraced step) /
 * the number of instructions the cost model prices with a launch (GEMMs, attention, memory-bound work),
 * within [0, launch_us]. Needs two steps of each; otherwise launch_us stays the traced one. */
void ddp_calib_launch_untraced(const ddp_plan *p, int rank, const double *median_s, const ddp_calib_rows *c,
                               ddp_calib_fit *f);

/* Medians of the rows' durations (per instruction, over the rows where it was recorded; -1 where never),
 * and of their overlaps when ovl is not NULL. */
void ddp_calib_medians(const ddp_calib_rows *c, double *out, double *ovl);

/* Is p a calibration plan? 0, or -1 with one line in err (no path: callers prefix theirs). */
int ddp_calib_check_plan(const ddp_plan *p, char *err, size_t errcap);

/* After the run, on rank 0: the medians, the fits, the profile JSON written atomically to
 * <cache>/profiles/<device>.json (out_path: the path when non-NULL instead), and one line saying where.
 * device: the device's name ("NVIDIA H200", "cpu reference executor"). Returns 0 or -1 with err. */
int ddp_calib_finish(const ddp_plan *p, const ddp_calib_rows *c, const char *device, const char *out_path,
                     int quiet, char *err, size_t errcap);
#endif

/* compiler/plot/plot.h: `ddpc plot split|throughput` (docs/CLI.md): SVG plots of ddprun metrics files.
 * Files: read.c (a metrics file into a ddp_plot_run), split.c (per-worker split of the step time),
 * throughput.c (tokens/s against workers), timeline.c (one step per worker from ddprun traces), cmd.c (the
 * command line). The SVG kit is base/svg.h. */
#ifndef DDP_PLOT_H
#define DDP_PLOT_H
#include <stddef.h>
#include <stdio.h>

/* One metrics file, reduced to what the plots draw. The steps used are those not marked warmup (all the
 * step lines when every one is). Per worker r, with S_r its step time and T the slowest worker's at the
 * same step: exposed communication E_r = rank_exposed_comm_ms, optimizer O_r = rank_optimizer_ms minus
 * rank_optimizer_comm_ms (the collectives inside the optimizer phase, already in E_r), compute C_r = S_r -
 * E_r - O_r (forward, backward and whatever else the step does outside exposed collectives and the
 * optimizer), idle I_r = T - S_r (waiting for the slowest worker); each the mean over the steps used, so
 * C + E + O + I is the mean step time of the slowest worker for every worker (unless C was clipped at 0).
 * A pipeline run whose step lines carry rank_forward_ms and rank_backward_ms (F_r, B_r) has its pipeline
 * bubble P_r = C_r - F_r - B_r (>= 0; waits for the neighbour stages, sends and receives) taken out of C_r:
 * then C + P + E + O + I is that step. */
typedef struct ddp_plot_run {
  char *path, *label, *schedule, *parallel;
  int world, nsteps;         /* world size of the run; steps used */
  double tokens_per_step;
  double step_ms;            /* mean `step_ms` (rank 0's) over the steps used */
  double tokens_per_s;       /* tokens_per_step / step_ms, as ddprun's summary line */
  double slowest_ms;         /* mean of the slowest worker's step time */
  double *compute, *comm, *opt, *idle, *peak_GiB; /* per worker (peak: the largest over all steps) */
  double *bubble;            /* per worker, P_r above (0 unless has_bubble) */
  int has_bubble;            /* a pipeline run with per-rank forward and backward times */
} ddp_plot_run;

/* Reads `path` (label: NULL for the default, the schedule's file name without ".lua"). 0, or -1 with one
 * line naming the file (and line) in err; *run is then empty. */
int ddp_plot_read(const char *path, const char *label, ddp_plot_run *run, char *err, size_t errcap);
void ddp_plot_run_free(ddp_plot_run *run);

/* The plots, written atomically to `out`; 0 or -1 with one line. */
int ddp_plot_split_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap);
int ddp_plot_throughput_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap);

/* The pipeline settings a trace carries (otherData pipe_*; stages 0: not a pipeline plan). */
typedef struct ddp_timeline_meta {
  char *schedule, *parallel; /* schedule: a PIPE_* name (plan/vocab.h) */
  int stages, microbatches, virtual_stages, replicas;
} ddp_timeline_meta;

/* One worker's step, from its trace (docs/CLI.md "ddpc plot timeline"), in ms. A worker's step runs from its
 * trace's step_begin to its step_end timing points (else its "step" range, else its first to last span);
 * rows are aligned at their step_begin, and T is the slowest worker's step (the others wait for it before
 * the next step). forward = the time covered by its forward ranges (pp.fwd.*, or the plan's forward range
 * when it has no pipeline ranges), backward = by its backward ranges (pp.bwd.* and pp.bwdw.*), optimizer =
 * by its optimizer range, sendrecv = by its pp.send.* / pp.recv.* instructions (hidden behind compute or
 * not), idle = T minus the time covered by the forward, backward and optimizer ranges together (waits for
 * a neighbour stage, exposed send/receive, anything else outside those ranges, and the wait for the
 * slowest worker), bubble = idle / (T - optimizer): the idle share of the step's pipeline part. */
typedef struct ddp_timeline_worker {
  int rank;
  double step_ms; /* this worker's own step; the times below are in the slowest worker's step T */
  double forward_ms, backward_ms, sendrecv_ms, optimizer_ms, idle_ms, bubble;
} ddp_timeline_worker;

/* The bubble fraction the schedule predicts with p stages, m microbatches per replica and v chunks per
 * stage, equal forward and backward times per chunk and free communication: gpipe, 1f1b (p-1)/(m+p-1);
 * interleaved (p-1)/(v m+p-1); zero_bubble (ZB-H1, backward split into B and W): with fbw = the mean F, B, W
 * times (all > 0, F + B > W) (p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W)), else (fbw NULL or incomplete) the same with
 * F = B = W, (p-1)/(3m+p-1); sequential (one microbatch in flight) (p-1)/p. -1 (formula NULL) for another
 * name or p, m < 1. */
double ddp_pipe_bubble_formula(const char *schedule, int p, int m, int v, const double *fbw, const char **formula);

/* `ddpc plot timeline`: reads the n traces (one per rank, any order), writes the SVG atomically to `out`
 * and then, on `report`, one JSON line per worker (ddp_timeline_worker) and a summary line (the mean
 * bubble over the workers, the schedule's formula and its value). 0, or -1 with one line in err and
 * nothing written. */
int ddp_plot_timeline(const char *out, const char *const *paths, int n, FILE *report, char *err, size_t errcap);

/* `ddpc plot ...` (argv[0] is "plot"): the exit status. */
int ddp_cmd_plot(int argc, char **argv);
#endif

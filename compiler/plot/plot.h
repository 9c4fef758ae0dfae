/* compiler/plot/plot.h: `ddpc plot split|throughput` (docs/CLI.md): SVG plots of ddprun metrics files.
 * Files: read.c (a metrics file into a ddp_plot_run), split.c (per-worker split of the step time),
 * throughput.c (tokens/s against workers), cmd.c (the command line). The SVG kit is base/svg.h. */
#ifndef DDP_PLOT_H
#define DDP_PLOT_H
#include <stddef.h>

/* One metrics file, reduced to what the plots draw. The steps used are those not marked warmup (all the
 * step lines when every one is). Per worker r, with S_r its step time and T the slowest worker's at the
 * same step: exposed communication E_r = rank_exposed_comm_ms, optimizer O_r = rank_optimizer_ms minus
 * rank_optimizer_comm_ms (the collectives inside the optimizer phase, already in E_r), compute C_r = S_r -
 * E_r - O_r (forward, backward and whatever else the step does outside exposed collectives and the
 * optimizer), idle I_r = T - S_r (waiting for the slowest worker); each the mean over the steps used, so
 * C + E + O + I is the mean step time of the slowest worker for every worker (unless C was clipped at 0). */
typedef struct ddp_plot_run {
  char *path, *label, *schedule, *parallel;
  int world, nsteps;         /* world size of the run; steps used */
  double tokens_per_step;
  double step_ms;            /* mean `step_ms` (rank 0's) over the steps used */
  double tokens_per_s;       /* tokens_per_step / step_ms, as ddprun's summary line */
  double slowest_ms;         /* mean of the slowest worker's step time */
  double *compute, *comm, *opt, *idle, *peak_GiB; /* per worker (peak: the largest over all steps) */
} ddp_plot_run;

/* Reads `path` (label: NULL for the default, the schedule's file name without ".lua"). 0, or -1 with one
 * line naming the file (and line) in err; *run is then empty. */
int ddp_plot_read(const char *path, const char *label, ddp_plot_run *run, char *err, size_t errcap);
void ddp_plot_run_free(ddp_plot_run *run);

/* The plots, written atomically to `out`; 0 or -1 with one line. */
int ddp_plot_split_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap);
int ddp_plot_throughput_svg(const char *out, const ddp_plot_run *runs, int n, char *err, size_t errcap);

/* `ddpc plot ...` (argv[0] is "plot"): the exit status. */
int ddp_cmd_plot(int argc, char **argv);
#endif

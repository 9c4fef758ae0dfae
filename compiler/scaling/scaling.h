/* compiler/scaling/scaling.h: IsoFLOPs scaling laws (docs/SCALING.md). `ddpc scaling fit` reads runs
 * (parameters N, compute budget C in FLOPs, final loss), fits per budget a parabola of loss against log10 N
 * (Chinchilla approach 2) for the loss-minimising N_opt and D_opt = C / (6 N_opt), then the power laws
 * N_opt = k C^a and D_opt = k' C^b by least squares in log10-log10, and extrapolates them. `ddpc scaling
 * plan` proposes transformer shapes around the expected optimum per budget as .lua schedules.
 * Files: read.c (the runs JSON and ddprun metrics), fit.c (the fits), svg.c (the plots), plan.c (the
 * shapes and schedules), cmd.c (the two subcommands). */
#ifndef DDP_SCALING_H
#define DDP_SCALING_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ddp_scaling_run {
  double params;  /* N, parameters */
  double compute; /* C, FLOPs */
  double loss;    /* final loss */
} ddp_scaling_run;

typedef enum { DDP_FIT_PARABOLA, DDP_FIT_FEW_RUNS, DDP_FIT_DOWNWARD } ddp_fit_method;

typedef struct ddp_scaling_budget {
  double compute;        /* C */
  int nruns, first;      /* runs[first .. first + nruns) after ddp_scaling_fit sorted them */
  double coef[3];        /* loss = coef[0] + coef[1] x + coef[2] x^2, x = log10 N (parabola only) */
  double n_opt, d_opt;   /* the loss-minimising parameters and tokens */
  double loss_min;       /* the parabola's minimum, or the lowest run's loss */
  ddp_fit_method method;
} ddp_scaling_budget;

typedef struct ddp_power_law { /* log10 y = slope log10 C + intercept */
  double slope, intercept, r2;
} ddp_power_law;

typedef struct ddp_scaling_fit {
  ddp_scaling_budget *budgets; /* ascending compute */
  int nbudgets;
  ddp_power_law n_law, d_law;
} ddp_scaling_fit;

/* The runs of a JSON document `text` (named `name` in errors): an array of objects {"parameters",
 * "compute_budget", "final_loss"}, or with "metrics": "FILE" instead of "final_loss" (ddprun's
 * --metrics JSON lines, resolved against `dir` when relative; the loss of its last step line). Numbers
 * positive and finite. 0, or -1 with one line naming the entry and field. */
int ddp_scaling_parse(const char *text, const char *name, const char *dir, ddp_scaling_run **runs, int *nruns,
                      char *err, size_t errcap);
/* The same from a file. */
int ddp_scaling_read(const char *path, ddp_scaling_run **runs, int *nruns, char *err, size_t errcap);
/* The final loss of a ddprun metrics file: the "loss" of its last line with a "step" (the memory event
 * lines skipped). 0, or -1 with one line. */
int ddp_scaling_metrics_loss(const char *path, double *loss, char *err, size_t errcap);

/* Sorts `runs` by (compute, params) and fits. Needs at least two budgets (runs whose compute agrees to a
 * relative 1e-9 share one). 0, or -1 with one line; ddp_scaling_fit_free after success. */
int ddp_scaling_fit_runs(ddp_scaling_run *runs, int nruns, ddp_scaling_fit *fit, char *err, size_t errcap);
void ddp_scaling_fit_free(ddp_scaling_fit *fit);
/* The law's value at compute c. */
static inline double ddp_power_law_at(const ddp_power_law *l, double c) {
  return pow(10.0, l->slope * log10(c) + l->intercept);
}
const char *ddp_fit_method_name(ddp_fit_method m);
/* The tables of `ddpc scaling fit`: per budget, the laws, the extrapolations to `at` (n_at of them). */
void ddp_scaling_print(FILE *f, const ddp_scaling_fit *fit, const double *at, int n_at);

/* The plots, written atomically into `dir` (which must exist): isoflops.svg (every budget's runs and
 * parabola, loss against log N), n_opt.svg and d_opt.svg (the optima, the fitted law, the extrapolations
 * to `at`). 0, or -1 with one line. */
int ddp_scaling_svg(const char *dir, const ddp_scaling_run *runs, const ddp_scaling_fit *fit, const double *at,
                    int n_at, char *err, size_t errcap);

/* The transformer of compiler/model/transformer.c: its parameter count. */
typedef struct ddp_shape {
  int64_t d_model, d_ff, layers, heads, vocab;
} ddp_shape;
double ddp_shape_params(const ddp_shape *s);
/* The shape nearest `target` parameters at the given vocabulary: d_model a multiple of 64, heads d/64,
 * d_ff 4 d, layers chosen for the count, d_model / layers near 64 among shapes within 5% of the target. */
ddp_shape ddp_shape_for(double target, int64_t vocab);

/* What `ddpc scaling plan` proposes (plan.c). */
typedef struct ddp_plan_opts {
  const double *budgets;
  int nbudgets, sizes;
  double spacing, tokens_per_param, lr;
  int64_t batch, context, vocab;
  const char *dir, *tokens, *precision;
} ddp_plan_opts;

/* Writes the schedules and runs.json into o->dir (which must exist) and a table to `out`; 0 or -1. */
int ddp_scaling_plan(const ddp_plan_opts *o, FILE *out, char *err, size_t errcap);

/* The `ddpc scaling` subcommands (argv[0] "scaling"); returns the exit status. */
int ddp_cmd_scaling(int argc, char **argv);
#endif

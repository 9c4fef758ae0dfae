/* compiler/scaling/fit.c: the IsoFLOPs fits of scaling.h. Per budget a least-squares parabola of loss in
 * x = log10 N (x centred on the budget's mean for conditioning; 3x3 normal equations by Gaussian
 * elimination with partial pivoting); its vertex is N_opt when the budget has at least 3 runs and the
 * parabola opens upward, else the lowest-loss run is taken and the method says why. Then straight lines
 * through (log10 C, log10 N_opt) and (log10 C, log10 D_opt) with their R^2. */
#include "err.h"
#include "scaling.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *ddp_fit_method_name(ddp_fit_method m) {
  switch (m) {
  case DDP_FIT_PARABOLA: return "parabola";
  case DDP_FIT_FEW_RUNS: return "lowest run (fewer than 3 runs)";
  case DDP_FIT_DOWNWARD: return "lowest run (parabola opens downward)";
  }
  return "?";
}

static int by_compute_params(const void *a, const void *b) {
  const ddp_scaling_run *x = a, *y = b;
  if (x->compute != y->compute) return x->compute < y->compute ? -1 : 1;
  return x->params < y->params ? -1 : x->params > y->params;
}

/* Solves the 3x3 system m x = v in place; -1 when singular. */
static int solve3(double m[3][3], double v[3], double x[3]) {
  for (int c = 0; c < 3; c++) {
    int piv = c;
    for (int r = c + 1; r < 3; r++)
      if (fabs(m[r][c]) > fabs(m[piv][c])) piv = r;
    if (fabs(m[piv][c]) < 1e-300) return -1;
    for (int k = 0; k < 3; k++) {
      double t = m[c][k];
      m[c][k] = m[piv][k];
      m[piv][k] = t;
    }
    double t = v[c];
    v[c] = v[piv];
    v[piv] = t;
    for (int r = c + 1; r < 3; r++) {
      double f = m[r][c] / m[c][c];
      for (int k = c; k < 3; k++) m[r][k] -= f * m[c][k];
      v[r] -= f * v[c];
    }
  }
  for (int c = 2; c >= 0; c--) {
    double s = v[c];
    for (int k = c + 1; k < 3; k++) s -= m[c][k] * x[k];
    x[c] = s / m[c][c];
  }
  return 0;
}

/* Fits one budget's runs r[0..n). */
static void fit_budget(const ddp_scaling_run *r, int n, ddp_scaling_budget *b) {
  int lowest = 0;
  for (int i = 1; i < n; i++)
    if (r[i].loss < r[lowest].loss) lowest = i;
  b->method = DDP_FIT_FEW_RUNS;
  if (n >= 3) {
    double mean = 0;
    for (int i = 0; i < n; i++) mean += log10(r[i].params);
    mean /= n;
    double m[3][3] = {{0}}, v[3] = {0}, q[3] = {0};
    for (int i = 0; i < n; i++) {
      double x = log10(r[i].params) - mean, p[3] = {1, x, x * x};
      for (int j = 0; j < 3; j++) {
        v[j] += p[j] * r[i].loss;
        for (int k = 0; k < 3; k++) m[j][k] += p[j] * p[k];
      }
    }
    b->method = DDP_FIT_DOWNWARD; /* also when the sizes are too few distinct ones for a parabola */
    if (solve3(m, v, q) == 0 && q[2] > 0) {
      double xv = -q[1] / (2 * q[2]);
      b->method = DDP_FIT_PARABOLA;
      /* back to uncentred x: loss = q0 + q1 (x - mean) + q2 (x - mean)^2 */
      b->coef[0] = q[0] - q[1] * mean + q[2] * mean * mean;
      b->coef[1] = q[1] - 2 * q[2] * mean;
      b->coef[2] = q[2];
      b->n_opt = pow(10.0, xv + mean);
      b->loss_min = q[0] + q[1] * xv + q[2] * xv * xv;
    }
  }
  if (b->method != DDP_FIT_PARABOLA) {
    b->n_opt = r[lowest].params;
    b->loss_min = r[lowest].loss;
  }
  b->d_opt = b->compute / (6.0 * b->n_opt);
}

/* Least squares y = slope x + intercept over n points, with R^2. */
static ddp_power_law line_fit(const double *x, const double *y, int n) {
  double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;
  for (int i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= n, my /= n;
  for (int i = 0; i < n; i++) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  ddp_power_law l = {.slope = sxy / sxx};
  l.intercept = my - l.slope * mx;
  l.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 1.0;
  return l;
}

int ddp_scaling_fit_runs(ddp_scaling_run *runs, int nruns, ddp_scaling_fit *fit, char *err, size_t errcap) {
  memset(fit, 0, sizeof *fit);
  for (int i = 0; i < nruns; i++)
    if (!(runs[i].params > 0 && runs[i].compute > 0 && isfinite(runs[i].params) && isfinite(runs[i].compute) &&
          isfinite(runs[i].loss)))
      return ddp_fail(err, errcap, "run %d: parameters, compute_budget and final_loss must be positive finite "
                                   "numbers (the loss finite)", i);
  qsort(runs, (size_t)nruns, sizeof *runs, by_compute_params);
  int nb = 0;
  for (int i = 0; i < nruns; i++)
    if (i == 0 || runs[i].compute > runs[i - 1].compute * (1 + 1e-9)) nb++;
  if (nb < 2)
    return ddp_fail(err, errcap, "%d run%s in %d compute budget%s: the power laws need at least 2 budgets", nruns,
                    nruns == 1 ? "" : "s", nb, nb == 1 ? "" : "s");
  fit->budgets = ddp_xcalloc((size_t)nb, sizeof *fit->budgets);
  fit->nbudgets = nb;
  for (int i = 0, k = -1; i < nruns; i++) {
    if (i == 0 || runs[i].compute > runs[i - 1].compute * (1 + 1e-9)) {
      fit->budgets[++k] = (ddp_scaling_budget){.compute = runs[i].compute, .first = i};
    }
    fit->budgets[k].nruns++;
  }
  double *lc = ddp_xcalloc((size_t)nb * 3, sizeof *lc), *ln = lc + nb, *ld = lc + 2 * nb;
  for (int k = 0; k < nb; k++) {
    ddp_scaling_budget *b = &fit->budgets[k];
    fit_budget(runs + b->first, b->nruns, b);
    lc[k] = log10(b->compute);
    ln[k] = log10(b->n_opt);
    ld[k] = log10(b->d_opt);
  }
  fit->n_law = line_fit(lc, ln, nb);
  fit->d_law = line_fit(lc, ld, nb);
  free(lc);
  /* the runs' values are each finite, but extreme ones (parameters 1e308) still give no finite law */
  int finite = isfinite(fit->n_law.slope) && isfinite(pow(10.0, fit->n_law.intercept)) &&
               isfinite(fit->d_law.slope) && isfinite(pow(10.0, fit->d_law.intercept));
  for (int k = 0; k < nb && finite; k++)
    finite = fit->budgets[k].n_opt > 0 && fit->budgets[k].d_opt > 0 &&
             isfinite(fit->budgets[k].d_opt / fit->budgets[k].n_opt) && isfinite(fit->budgets[k].loss_min);
  if (!finite) {
    ddp_scaling_fit_free(fit);
    return ddp_fail(err, errcap, "the runs give no finite fit (N_opt, D_opt or a power law is not a finite positive "
                                 "number): check their parameters and compute_budget");
  }
  return 0;
}

void ddp_scaling_fit_free(ddp_scaling_fit *fit) {
  free(fit->budgets);
  memset(fit, 0, sizeof *fit);
}

void ddp_scaling_print(FILE *f, const ddp_scaling_fit *fit, const double *at, int n_at) {
  fprintf(f, "%-10s %5s %12s %12s %9s %10s  %s\n", "budget", "runs", "N_opt", "D_opt", "D/N", "min loss",
          "method");
  for (int k = 0; k < fit->nbudgets; k++) {
    const ddp_scaling_budget *b = &fit->budgets[k];
    fprintf(f, "%-10.3g %5d %12.4g %12.4g %9.2f %10.5f  %s\n", b->compute, b->nruns, b->n_opt, b->d_opt,
            b->d_opt / b->n_opt, b->loss_min, ddp_fit_method_name(b->method));
  }
  fprintf(f, "N_opt(C) = %.4g * C^%.4f   (R^2 %.4f)\n", pow(10.0, fit->n_law.intercept), fit->n_law.slope,
          fit->n_law.r2);
  fprintf(f, "D_opt(C) = %.4g * C^%.4f   (R^2 %.4f)\n", pow(10.0, fit->d_law.intercept), fit->d_law.slope,
          fit->d_law.r2);
  if (n_at > 0) fprintf(f, "%-10s %12s %12s %9s\n", "budget", "N_opt", "D_opt", "D/N");
  for (int i = 0; i < n_at; i++) {
    double n = ddp_power_law_at(&fit->n_law, at[i]), d = ddp_power_law_at(&fit->d_law, at[i]);
    fprintf(f, "%-10.3g %12.4g %12.4g %9.2f  (extrapolated)\n", at[i], n, d, d / n);
  }
}

/* plan/gemm_table.c: see gemm_table.h. */
#include "gemm_table.h"
#include <math.h>
#include <string.h>

enum { GRID_MAX = 32 };

/* Inserts v into the sorted set g of n values (at most GRID_MAX; later ones dropped). */
static void grid_add(double *g, int *n, double v) {
  int i = 0;
  while (i < *n && g[i] < v) i++;
  if ((i < *n && g[i] == v) || *n == GRID_MAX) return;
  memmove(g + i + 1, g + i, sizeof *g * (size_t)(*n - i));
  g[i] = v;
  (*n)++;
}

/* Where v falls on the grid g: the lower index *i and the weight *w of the upper point in log space,
 * clamped to the grid's ends; returns v's factor beyond the largest point (1 inside). */
static double grid_place(const double *g, int n, double v, int *i, double *w) {
  double f = 1, c = v;
  if (c > g[n - 1]) f = c / g[n - 1], c = g[n - 1];
  if (c < g[0]) c = g[0];
  *i = 0, *w = 0;
  if (n == 1) return f;
  while (*i < n - 2 && g[*i + 1] < c) (*i)++;
  *w = (log(c) - log(g[*i])) / (log(g[*i + 1]) - log(g[*i]));
  return f;
}

double ddp_gemm_table_us(const ddp_gemm_point *v, int n, double M, double N, double K, int ta, int tb) {
  if (!(M >= 1 && N >= 1 && K >= 1)) return -1;
  double g[3][GRID_MAX];
  int cnt[3] = {0, 0, 0};
  for (int e = 0; e < n; e++)
    if (v[e].ta == ta && v[e].tb == tb) {
      grid_add(g[0], &cnt[0], v[e].m);
      grid_add(g[1], &cnt[1], v[e].n);
      grid_add(g[2], &cnt[2], v[e].k);
    }
  if (!cnt[0]) return -1;
  const double q[3] = {M, N, K};
  int lo[3];
  double w[3], f = 1;
  for (int d = 0; d < 3; d++) f *= grid_place(g[d], cnt[d], q[d], &lo[d], &w[d]);
  double lt = 0;
  for (int corner = 0; corner < 8; corner++) {
    double at[3], wt = 1;
    for (int d = 0; d < 3; d++) {
      int up = (corner >> d) & 1;
      wt *= up ? w[d] : 1 - w[d];
      at[d] = g[d][lo[d] + (up && cnt[d] > 1)];
    }
    if (wt == 0) continue;
    int hit = -1;
    for (int e = 0; e < n && hit < 0; e++)
      if (v[e].ta == ta && v[e].tb == tb && v[e].m == at[0] &&
          v[e].n == at[1] && v[e].k == at[2])
        hit = e;
    if (hit < 0) return -1;
    lt += wt * log(v[hit].us);
  }
  return exp(lt) * f;
}


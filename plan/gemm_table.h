/* plan/gemm_table.h: a device's GEMM times by shape (the profile's gemm_by_shape, from `ddprun --calibrate`'s
 * GEMM sweep) and their interpolation, shared by the cost model (compiler/explain/cost.c) and the
 * calibration that scales the table to the GEMMs of a real step (runtime/bench/calibrate.c). */
#ifndef DDP_GEMM_TABLE_H
#define DDP_GEMM_TABLE_H

/* One bf16 GEMM timed alone: M, N, K, the layout (ta, tb: A, B transposed, row-major as the plan's GEMM
 * instruction) and its microseconds. */
typedef struct ddp_gemm_point {
  double m, n, k, us;
  int ta, tb;
} ddp_gemm_point;

/* The microseconds of an M x N x K GEMM of layout (ta, tb): log time interpolated linearly in log M, log N,
 * log K between the eight grid points around it among the points of that layout; a dimension beyond the
 * grid's largest scales the time with it (more tiles of the same kind), one below its smallest costs the
 * smallest's. -1 when no point has this layout, a corner is missing or a dimension is below 1. */
double ddp_gemm_table_us(const ddp_gemm_point *v, int n, double M, double N, double K, int ta, int tb);
#endif

/* tests/gradcheck.h: shared helpers of the reference-kernel tests (test_ref_*.c): a seeded RNG whose seed
 * is printed per case, f64 buffers, central finite-difference gradient checks, value and bit comparisons
 * that print expected vs got, and the pass/fail tally that becomes the exit code.
 *
 * Gradient error metric: max_i |analytic_i - fd_i| / max_i |fd_i| (relative to the gradient's largest
 * entry, so tiny entries are not swamped by finite-difference round-off), fd_i = (L(x+h e_i) -
 * L(x-h e_i)) / 2h with h = 1e-6. */
#ifndef DDP_GRADCHECK_H
#define DDP_GRADCHECK_H
#include "ops.h"
#include <stddef.h>
#include <stdint.h>

typedef struct gc_rng {
  uint64_t s;
} gc_rng;

/* Starts a case: prints "[case] seed N" and seeds the generator. */
void gc_case(gc_rng *r, const char *name, uint64_t seed);
double gc_uniform(gc_rng *r, double lo, double hi);
double *gc_rand(gc_rng *r, size_t n, double lo, double hi); /* malloc'd f64 in [lo, hi) */
double *gc_zeros(size_t n);                                 /* calloc'd f64 */
double *gc_copy(const double *x, size_t n);
double gc_dot(const double *x, const double *y, size_t n);

/* A kargs block with every pointer dtype f64. */
typedef struct gc_call {
  ddp_kargs a;
  uint8_t dt[DDP_MAX_PTRS];
} gc_call;
void gc_call_init(gc_call *c);

/* The scalar loss L(x) of a finite-difference check: recomputes the forward from the current inputs. */
typedef double (*gc_loss_fn)(void *ctx);

/* Central differences of f with respect to every element of x (restored afterwards) vs analytic;
 * prints and tallies; returns the error. */
double gc_fd_check(const char *what, gc_loss_fn f, void *ctx, double *x, size_t n, const double *analytic,
                   double tol);
/* The same over the elements x[idx[i]], i < n, only (analytic indexed like x). */
double gc_fd_check_at(const char *what, gc_loss_fn f, void *ctx, double *x, const size_t *idx, size_t n,
                      const double *analytic, double tol);

/* max_i |got_i - want_i| / max(max_i |want_i|, floor) <= tol, printing the worst element. */
double gc_expect_close(const char *what, const double *got, const double *want, size_t n, double tol,
                       double floor);
/* Identical bytes. */
void gc_expect_bits(const char *what, const void *got, const void *want, size_t bytes);
/* A boolean expectation with a message. */
void gc_expect(const char *what, int ok);

/* Prints the tally; returns the process exit code (0 only if nothing failed). */
int gc_finish(const char *suite);
#endif

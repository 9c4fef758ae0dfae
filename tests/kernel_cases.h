/* tests/kernel_cases.h: one KERNEL instruction per test case (op, activation dtype, shape), with what each
 * pointer slot holds: element count, dtype, role (input, output, in-place) and how to fill it. Shared by
 * the template compile test (tests/test_templates_compile.c), the GPU correctness test
 * (tests/gpu_kernels.c) and the kernel benchmark (tests/bench/kernel_bench.c). */
#ifndef DDP_KERNEL_CASES_H
#define DDP_KERNEL_CASES_H
#include "instr.h"
#include <stdint.h>

enum { KC_UNUSED = 0, KC_IN, KC_OUT, KC_INOUT };
enum {
  KC_NORMAL = 0, /* N(0, a) */
  KC_UNIFORM,    /* U(a, b) */
  KC_INT,        /* integers in [a, b) */
  KC_CONST,      /* a */
  KC_INV_FREQ,   /* theta^(-2m/Dh), a = theta, b = Dh */
  KC_SCALARS,    /* optimizer scalars: t = a, lr = b, norm 1, clip 0.7 */
  KC_PROBS,      /* softmax rows of length a (U(0,1) normalised) */
};

typedef struct kc_buf {
  int64_t n;     /* elements */
  uint8_t dt;
  uint8_t role;
  uint8_t init;
  int8_t alias;  /* >= 0: this slot is the same memory as slot `alias` */
  float a, b;
} kc_buf;

typedef struct kc_shape {
  int64_t a, b, c, d; /* op-specific (see kernel_cases.c) */
  int flag;           /* acc / causal / inverse / alias, op-specific */
} kc_shape;

typedef struct kc_case {
  ddp_instr in;
  kc_buf buf[DDP_MAX_PTRS];
  int needs_fwd; /* attention backward: lse / delta come from the reference forward on the inputs */
  char label[160];
} kc_case;

/* Fills c for op with activation dtype act (DT_F32 or DT_BF16). Returns 0, or -1 for an op it lacks. */
int kc_make(int op, int act, kc_shape s, kc_case *c);

/* A default list of shapes for op (realistic and odd); returns the count written (<= cap). quick: fewer. */
int kc_shapes(int op, kc_shape *out, int cap, int quick);
#endif

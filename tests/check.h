/* tests/check.h: the assertion macros the C tests share. Each failure prints file:line, what was checked
 * and what was found, and counts into the test's `failures` (the test exits non-zero when it is > 0). */
#ifndef DDP_TEST_CHECK_H
#define DDP_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int failures;
#define CHECK(what, cond)                                                                                    \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      failures++;                                                                                            \
      fprintf(stderr, "%s:%d: %s: failed: %s\n", __FILE__, __LINE__, what, #cond);                           \
    }                                                                                                        \
  } while (0)
#define CHECK_HAS(what, hay, needle)                                                                         \
  do {                                                                                                       \
    if (!strstr(hay, needle)) {                                                                              \
      failures++;                                                                                            \
      fprintf(stderr, "%s:%d: %s: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, what, hay, needle);            \
    }                                                                                                        \
  } while (0)
#endif

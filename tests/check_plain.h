/* tests/check_plain.h: the assertion macros of the launch and rendezvous tests: CHECK(cond) and
 * CHECK_STR(got, expected), counting failures into g_fail (the test exits non-zero when it is > 0). */
#ifndef DDP_TEST_CHECK_PLAIN_H
#define DDP_TEST_CHECK_PLAIN_H
#include <stdio.h>
#include <string.h>

static int g_fail;
#define CHECK(c)                                                                                        \
  do {                                                                                                  \
    if (!(c)) {                                                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                             \
      g_fail++;                                                                                         \
    }                                                                                                   \
  } while (0)
#define CHECK_STR(a, b)                                                                                 \
  do {                                                                                                  \
    const char *a_ = (a), *b_ = (b);                                                                    \
    if (strcmp(a_, b_)) {                                                                               \
      fprintf(stderr, "%s:%d: got \"%s\"\n    expected \"%s\"\n", __FILE__, __LINE__, a_, b_);          \
      g_fail++;                                                                                         \
    }                                                                                                   \
  } while (0)
#endif

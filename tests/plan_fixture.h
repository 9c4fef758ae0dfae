/* tests/plan_fixture.h: a small synthetic plan shared by the plan-format and inspect tests, and the
 * assertion helpers they use (each failure prints what was expected and what was got). */
#ifndef DDP_TEST_PLAN_FIXTURE_H
#define DDP_TEST_PLAN_FIXTURE_H
#include "plan.h"

/* Two ranks; tensors including views into a gradient bucket; one module with a fake 100-byte CUBIN and
 * its kernel; one bucket; strings; meta; init and step programs that together use every opcode. */
ddp_plan *fixture_plan(void);
/* A buffer reference to tensor t at byte `view`, resolved like the memory planner does. */
ddp_bufref fixture_ref(const ddp_plan *p, int32_t t, uint64_t view);

extern int test_failures;
void check_int_at(const char *file, int line, const char *what, long long expected, long long got);
void check_str_at(const char *file, int line, const char *what, const char *expected, const char *got);
void check_contains_at(const char *file, int line, const char *what, const char *haystack, const char *needle);
void check_lacks_at(const char *file, int line, const char *what, const char *haystack, const char *needle);
#define CHECK_INT(what, expected, got) check_int_at(__FILE__, __LINE__, what, (long long)(expected), (long long)(got))
#define CHECK_STR(what, expected, got) check_str_at(__FILE__, __LINE__, what, expected, got)
#define CHECK_CONTAINS(what, hay, needle) check_contains_at(__FILE__, __LINE__, what, hay, needle)
#define CHECK_LACKS(what, hay, needle) check_lacks_at(__FILE__, __LINE__, what, hay, needle)
#endif

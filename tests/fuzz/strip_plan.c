/* tests/fuzz/strip_plan.c: `strip_plan IN OUT`: reads a plan, drops every module's CUBIN (the reference
 * executor needs none; megabytes of machine code would only dilute the fuzzer's mutations) and writes the
 * rest. Seeds fuzz_plan's corpus from the plans ddpc compiles (make_corpus.sh). */
#include "plan.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: strip_plan IN.bin OUT.bin\n");
    return 2;
  }
  char err[1024];
  ddp_plan *p = ddp_plan_read(argv[1], err, sizeof err);
  if (!p) {
    fprintf(stderr, "strip_plan: %s\n", err);
    return 1;
  }
  for (uint32_t i = 0; i < p->nmodules; i++) {
    free(p->modules[i].cubin);
    p->modules[i].cubin = NULL;
    p->modules[i].cubin_size = 0;
  }
  int rc = ddp_plan_write(p, argv[2], err, sizeof err);
  if (rc) fprintf(stderr, "strip_plan: %s\n", err);
  ddp_plan_free(p);
  return rc ? 1 : 0;
}

/* runtime/main.c: the ddprun command line (placeholder until the executors land). */
#include <stdio.h>
int main(void) { fprintf(stderr, "ddprun: not built yet\n"); return 1; }

/* compiler/main.c: the ddpc command line (placeholder until the stages land). */
#include <stdio.h>
int main(void) { fprintf(stderr, "ddpc: not built yet\n"); return 1; }

/* tests/tools/nvrtc_ptx.c: compiles one CUDA source to PTX with NVRTC, the options of
 * compiler/codegen/nvrtc.c minus -lineinfo (so that moved lines do not show up as PTX changes).
 * usage: nvrtc_ptx SRC OUT.ptx [-Idir ...]; built and run by ptx_compare.sh. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: nvrtc_ptx SRC OUT.ptx [-Idir ...]\n"), 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror(argv[1]), 2;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *src = calloc((size_t)n + 1, 1);
  if (!src || fread(src, 1, (size_t)n, f) != (size_t)n) return fprintf(stderr, "%s: read failed\n", argv[1]), 2;
  fclose(f);
  const char *opts[64] = {"--gpu-architecture=compute_90a", "-I/usr/local/cuda/include", "--std=c++17", "-DNDEBUG"};
  int no = 4;
  for (int i = 3; i < argc && no < 64; i++) opts[no++] = argv[i];
  nvrtcProgram p;
  size_t len = 0;
  if (nvrtcCreateProgram(&p, src, "spec.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return 2;
  if (nvrtcCompileProgram(p, no, opts) != NVRTC_SUCCESS) {
    nvrtcGetProgramLogSize(p, &len);
    char *log = malloc(len + 1);
    if (log && nvrtcGetProgramLog(p, log) == NVRTC_SUCCESS) fprintf(stderr, "%s: %s\n", argv[1], log);
    return 1;
  }
  nvrtcGetPTXSize(p, &len);
  char *ptx = malloc(len);
  if (!ptx || nvrtcGetPTX(p, ptx) != NVRTC_SUCCESS) return 2;
  FILE *o = fopen(argv[2], "w");
  if (!o || fputs(ptx, o) < 0 || fclose(o) != 0) return perror(argv[2]), 2;
  return 0;
}

/* runtime/version.c: `ddprun --version`: ddpc's version, the plan format this build reads, and the CUDA
 * runtime and NCCL versions it is linked against, asked of the libraries (neither call needs a GPU). */
#include "args.h"
#include "cli.h"
#include <cuda_runtime_api.h>
#include <nccl.h>

int ddprun_version(FILE *out) {
  int cuda = 0, nccl = 0;
  char cuda_s[32] = "unknown", nccl_s[32] = "unknown";
  if (cudaRuntimeGetVersion(&cuda) == cudaSuccess)
    snprintf(cuda_s, sizeof cuda_s, "%d.%d", cuda / 1000, (cuda % 1000) / 10);
  if (ncclGetVersion(&nccl) == ncclSuccess) /* NCCL >= 2.9: major * 10000 + minor * 100 + patch */
    snprintf(nccl_s, sizeof nccl_s, "%d.%d.%d", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  fprintf(out, "ddprun %s (plan format %u, CUDA %s runtime, NCCL %s)\n", DDP_VERSION, DDP_PLAN_VERSION, cuda_s,
          nccl_s);
  return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

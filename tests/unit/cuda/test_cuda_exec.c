/* tests/unit/cuda/test_cuda_exec.c (cpu): the CUDA executor's behaviour that needs no GPU. On a machine without a
 * driver or GPU, ddp_cuda_probe fails with one clear line and ddp_exec_cuda_new refuses with one line (no
 * crash); argument errors are refused before the GPU is touched; NCCL_NVLS_ENABLE is forced to 0 unless
 * set. On a GPU machine it checks that the probe finds the GPU and names its architecture. A module's
 * specialisation says whether its kernel takes tensor maps (ddp_tma_spec), and a malformed one is refused. */
#include "exec_cuda.h"
#include "tma.h"
#include "cuda_exec_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ddp_plan *tiny_plan(void) {
  ddp_plan *p = cxt_plan_new(1, 2);
  int32_t a = cxt_tensor(p, "a", DT_F32, ARENA_ACT, 4, 4);
  ddp_instr in = ddp_instr_blank(I_MEMSET, STREAM_COMPUTE);
  in.p[0] = cxt_ref(p, a, 0);
  in.i[0] = 64;
  cxt_push(p, 0, 0, &in);
  return p;
}

int main(void) {
  char err[1024], why[512];
  ddp_plan *p = tiny_plan();

  /* Tensor-map kernels are told by their specialisation; anything but DDP_TMA 1 with box rows 1..256 fails. */
  ddp_tma_rows rows;
  CHECK(!ddp_tma_spec("#define DDP_HEAD_DIM 64\n#define DDP_BM 128\n", &rows, err, sizeof err) && !rows.resident,
        "a spec without DDP_TMA takes maps");
  CHECK(!ddp_tma_spec(NULL, &rows, err, sizeof err) && !rows.resident, "no spec takes maps");
  CHECK(!ddp_tma_spec("#define DDP_BM 192\n#define DDP_BN 128\n#define DDP_TMA 1\n", &rows, err, sizeof err) &&
            rows.resident == 192 && rows.streamed == 128,
        "DDP_TMA spec read as %u / %u", rows.resident, rows.streamed);
  CHECK(!rows.persistent, "a spec without DDP_PERSISTENT read as persistent");
  CHECK(!ddp_tma_spec("#define DDP_BM 128\n#define DDP_BN 128\n#define DDP_TMA 1\n#define DDP_PERSISTENT 1\n", &rows,
                      err, sizeof err) && rows.persistent && rows.resident == 128,
        "DDP_PERSISTENT 1 read as %u", rows.persistent);
  const char *bad[] = {"#define DDP_TMA 1\n#define DDP_BN 128\n", "#define DDP_TMA 1\n#define DDP_BM 512\n#define DDP_BN 64\n",
                       "#define DDP_TMA 2\n#define DDP_BM 64\n#define DDP_BN 64\n", "#define DDP_TMA x\n",
                       "#define DDP_TMA 1\n#define DDP_BM 64\n#define DDP_BN 64\n#define DDP_PERSISTENT 2\n",
                       "#define DDP_TMA 1\n#define DDP_BM 64\n#define DDP_BN 64\n#define DDP_PERSISTENT y\n"};
  for (int i = 0; i < 6; i++) {
    err[0] = 0;
    CHECK(ddp_tma_spec(bad[i], &rows, err, sizeof err) == -1 && cxt_one_line(err) && strstr(err, i < 4 ? "DDP_TMA" : "DDP_PERSISTENT"),
          "malformed TMA spec %d accepted or unclear: '%s'", i, err);
  }

  /* Argument errors: one line each, before any CUDA call. */
  err[0] = 0;
  CHECK(!ddp_exec_cuda_new(p, 3, 2, 0, NULL, NULL, 1, err, sizeof err), "rank 3 of 2 accepted");
  CHECK(cxt_one_line(err) && strstr(err, "rank 3"), "bad rank message: '%s'", err);
  err[0] = 0;
  CHECK(!ddp_exec_cuda_new(p, 0, 2, 0, NULL, NULL, 1, err, sizeof err), "world 2 without NCCL id accepted");
  CHECK(cxt_one_line(err) && strstr(err, "NCCL id"), "missing id message: '%s'", err);
  err[0] = 0;
  CHECK(!ddp_exec_cuda_new(NULL, 0, 1, 0, NULL, NULL, 1, err, sizeof err), "NULL plan accepted");
  CHECK(cxt_one_line(err), "NULL plan message: '%s'", err);

  unsetenv("NCCL_NVLS_ENABLE");
  int ndev = -1;
  why[0] = 0;
  int probe = ddp_cuda_probe(&ndev, why, sizeof why);
  if (probe != 0) {
    printf("probe: %s\n", why);
    CHECK(cxt_one_line(why), "probe message is not one line: '%s'", why);
    CHECK(strstr(why, "no CUDA driver") || strstr(why, "no GPU"), "probe message: '%s'", why);
    CHECK(strstr(why, "cudaGetDeviceCount"), "probe message names no call site: '%s'", why);
    CHECK(ndev == 0, "ndevices %d after a failed probe", ndev);
    err[0] = 0;
    ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, 0, NULL, NULL, 1, err, sizeof err);
    CHECK(!x, "executor created without a GPU");
    printf("ddp_exec_cuda_new: %s\n", err);
    CHECK(cxt_one_line(err) && strstr(err, "cuda executor") && (strstr(err, "no CUDA driver") || strstr(err, "no GPU")),
              "executor message: '%s'", err);
    if (x) x->v->destroy(x);
  } else {
    char arch[16], name[128];
    printf("probe: %d GPU(s)\n", ndev);
    CHECK(ndev >= 1, "probe succeeded with %d devices", ndev);
    CHECK(ddp_cuda_device_arch(0, arch, sizeof arch, name, sizeof name, err, sizeof err) == 0, "arch: %s", err);
    CHECK(!strncmp(arch, "sm_", 3), "arch '%s'", arch);
    printf("GPU 0: %s (%s)\n", name, arch);
    err[0] = 0;
    CHECK(!ddp_exec_cuda_new(p, 0, 1, ndev, NULL, NULL, 1, err, sizeof err), "GPU %d accepted", ndev);
    CHECK(cxt_one_line(err) && strstr(err, "does not exist"), "bad GPU message: '%s'", err);
  }
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  CHECK(nvls && !strcmp(nvls, "0"), "NCCL_NVLS_ENABLE is '%s' after ddp_exec_cuda_new", nvls ? nvls : "(unset)");
  setenv("NCCL_NVLS_ENABLE", "7", 1); /* a user's setting is kept */
  ddp_exec *x = ddp_exec_cuda_new(p, 0, 1, probe == 0 ? ndev : 0, NULL, NULL, 1, err, sizeof err);
  if (x) x->v->destroy(x);
  CHECK(!strcmp(getenv("NCCL_NVLS_ENABLE"), "7"), "a user's NCCL_NVLS_ENABLE was overwritten");

  ddp_plan_free(p);
  return check_report("test_cuda_exec");
}

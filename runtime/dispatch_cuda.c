/* runtime/dispatch_cuda.c: runs a plan on GPUs, one process per rank: identity from the launcher (or
 * --nproc N forking local ranks), the plan's world checked against the launch, the NCCL unique id from
 * rank 0 through the TCP rendezvous, the local rank's GPU, then the shared driver. */
#include "cli.h"
#include "cuda_check.h"
#include "exec_cuda.h"
#include "launch.h"
#include "param.h"
#include "rendezvous.h"
#include "stop.h"
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const ddp_plan *p;
  ddprun_args *a;
} cuda_ctx;

/* Dense peak of the GPU for MFU (datasheet: H100/H200 SXM bf16 989 TFLOP/s, fp32 67 TFLOP/s). */
static double peak_tflops(const char *name, int precision) {
  if (strstr(name, "H100") || strstr(name, "H200") || strstr(name, "GH200"))
    return precision == PREC_BF16 ? 989.0 : 67.0;
  if (strstr(name, "A100")) return precision == PREC_BF16 ? 312.0 : 19.5;
  return 0;
}

static int cuda_rank_main(const ddp_identity *id, void *arg) {
  cuda_ctx *c = arg;
  const ddp_plan *p = c->p;
  ddprun_args *a = c->a;
  char err[1024];
  if (ddp_plan_check_launch(p, NULL, id->world, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s: %s (rank %d, from %s)\n", a->plan_path, err, id->rank, id->source);
    return 1;
  }
  ncclUniqueId uid;
  memset(&uid, 0, sizeof uid);
  if (id->world > 1) {
    if (id->rank == 0) {
      ncclResult_t r = ncclGetUniqueId(&uid);
      if (r != ncclSuccess) {
        fprintf(stderr, "ddprun: rank 0: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
        return 1;
      }
    }
    double timeout_s;
    if (ddp_param_seconds(PARAM_RENDEZVOUS_TIMEOUT_S, &timeout_s, err, sizeof err) ||
        ddp_rendezvous(id, &uid, sizeof uid, timeout_s, err, sizeof err)) {
      fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
      return 1;
    }
  }
  uint64_t dseed = a->has_seed ? a->seed : (uint64_t)p->meta.data_seed;
  uint64_t seed = a->has_seed ? a->seed : (uint64_t)p->meta.seed;
  ddp_data *data = ddp_data_open(p, dseed, err, sizeof err);
  if (!data) {
    fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
    return 1;
  }
  ddp_exec *x = ddp_exec_cuda_new(p, id->rank, id->world, id->local_rank, id->world > 1 ? &uid : NULL, data, seed,
                                  err, sizeof err);
  int rc = 1;
  if (x) {
    struct cudaDeviceProp prop;
    char desc[300] = "cuda";
    ddp_run_opts run = a->run;
    if (cudaGetDeviceProperties(&prop, id->local_rank) == cudaSuccess) {
      snprintf(desc, sizeof desc, "%s (rank %d of %d)", prop.name, id->rank, id->world);
      if (run.peak_tflops <= 0) run.peak_tflops = peak_tflops(prop.name, (int)p->meta.precision);
    }
    run.device_desc = desc;
    rc = ddp_run_rank(x, &run, err, sizeof err) ? 1 : ddp_stop_exit_status(); /* 128 + signal when stopped */
    if (rc) fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
    x->v->destroy(x);
  } else {
    fprintf(stderr, "ddprun: rank %d: %s\n", id->rank, err);
  }
  ddp_data_close(data);
  return rc;
}

int ddprun_cuda(const ddp_plan *p, ddprun_args *a) {
  char err[1024];
  cuda_ctx c = {p, a};
  setenv("NCCL_NVLS_ENABLE", "0", 0); /* NVLink multicast stays off (it can take shared GPUs down) */
  /* Lazy loading (CUDA's default since 12.2) may synchronise the context at a kernel's first launch (CUDA
   * Programming Guide, "Lazy Loading", potential hazards). With a NCCL receive spinning on the device for a
   * peer whose progress waits on this rank's host, that is a cross-rank deadlock. GPipe's step-0 hang on 2
   * GPUs (2026-11-23) had one on the tiny model (gone with eager loading) and another on XL: NCCL's lazy
   * point-to-point connection behind a full launch queue, now connected at load (cuda/comm.c), after which
   * lazy loading ran GPipe too. Eager loading stays for multi-rank plans (1.3 s of start-up on the tiny
   * pipeline) since any receive spinning ahead of a first launch is exposed to the same hazard; the user's
   * CUDA_MODULE_LOADING wins. */
  if (p->meta.world > 1) setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  if (a->nproc > 0) {
    int rc = ddp_launch_local(a->nproc, cuda_rank_main, &c, err, sizeof err);
    if (rc == -1) fprintf(stderr, "ddprun: %s\n", err);
    return rc == 0 ? 0 : (rc > 0 ? rc : 1);
  }
  ddp_identity id;
  if (ddp_launch_identity(&id, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  return cuda_rank_main(&id, &c);
}

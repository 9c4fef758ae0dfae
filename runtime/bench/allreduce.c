/* runtime/bench/allreduce.c: `ddprun --bench allreduce [--device cuda|ref]`: NCCL all-reduce of float32 buffers from 1 MB to
 * 1 GB (MB = 2^20 bytes, as the seeds' benchmark), one process per GPU (--nproc N or a launcher), timed
 * with CUDA events over many iterations after a warm-up. Prints algbw and busbw (busbw = algbw x 2(n-1)/n)
 * as a table on rank 0 and, with --out, one JSON object per size. Correctness is checked first: every
 * rank contributes rank+1 and every element must equal n(n+1)/2. `ddprun --bench plot` (plot.c) draws the SVG.
 * --device ref runs the same table on CPU ranks instead (allreduce_cpu.c). */
#include "args.h"
#include "param.h"
#include "cli.h"
#include "bench.h"
#include "err.h"
#include "cuda_check.h"
#include "launch.h"
#include "outfile.h"
#include "rendezvous.h"
#include <cuda_runtime_api.h>
#include <getopt.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ddprun_plot_main(int argc, char **argv); /* plot.c */

#define NCCL_TRY(call)                                                                                  \
  do {                                                                                                  \
    ncclResult_t r_ = (call);                                                                           \
    if (r_ != ncclSuccess) {                                                                            \
      ddp_fail(err, errcap, "%s:%d: %s: %s", __FILE__, __LINE__, #call, ncclGetErrorString(r_));       \
      return -1;                                                                                        \
    }                                                                                                   \
  } while (0)

static int check_sum(float *dev, size_t n, int world, char *err, size_t errcap) {
  float probe[3];
  size_t at[3] = {0, n / 2, n - 1};
  for (int k = 0; k < 3; k++) DDP_CUDA_TRY(cudaMemcpy(&probe[k], dev + at[k], sizeof(float), cudaMemcpyDeviceToHost));
  float want = (float)world * (float)(world + 1) / 2.0f;
  for (int k = 0; k < 3; k++)
    if (probe[k] != want) {
      ddp_fail(err, errcap, "all-reduce gave %g at element %zu, expected %g", (double)probe[k], at[k], (double)want);
      return -1;
    }
  return 0;
}

static void fill_host(float *host, size_t n, float v) {
  for (size_t i = 0; i < n; i++) host[i] = v;
}

static int bench_rank(const ddp_identity *id, void *ctx, char *err, size_t errcap) {
  const bench_opts *o = ctx;
  ncclUniqueId uid;
  memset(&uid, 0, sizeof uid);
  if (id->rank == 0) NCCL_TRY(ncclGetUniqueId(&uid));
  double wait_s; /* DDP_RENDEZVOUS_TIMEOUT_S, as a plan's run reads it */
  if (ddp_param_seconds(PARAM_RENDEZVOUS_TIMEOUT_S, &wait_s, err, errcap)) return -1;
  if (id->world > 1 && ddp_rendezvous(id, &uid, sizeof uid, wait_s, err, errcap)) return -1;
  DDP_CUDA_TRY(cudaSetDevice(id->local_rank));
  ncclComm_t comm;
  NCCL_TRY(ncclCommInitRank(&comm, id->world, uid, id->rank));
  double max_mb = 0;
  for (int s = 0; s < o->nsizes; s++)
    if (o->sizes_mb[s] > max_mb) max_mb = o->sizes_mb[s];
  size_t max_n = (size_t)(max_mb * 1048576.0 / 4.0);
  float *buf = NULL;
  cudaStream_t st;
  cudaEvent_t e0, e1;
  DDP_CUDA_TRY(cudaMalloc((void **)&buf, max_n * sizeof(float)));
  DDP_CUDA_TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  DDP_CUDA_TRY(cudaEventCreate(&e0));
  DDP_CUDA_TRY(cudaEventCreate(&e1));
  /* correctness on the largest buffer */
  float *host = ddp_xmalloc(max_n * sizeof(float));
  fill_host(host, max_n, (float)(id->rank + 1));
  DDP_CUDA_TRY(cudaMemcpy(buf, host, max_n * sizeof(float), cudaMemcpyHostToDevice));
  free(host);
  NCCL_TRY(ncclAllReduce(buf, buf, max_n, ncclFloat32, ncclSum, comm, st));
  DDP_CUDA_TRY(cudaStreamSynchronize(st));
  if (check_sum(buf, max_n, id->world, err, errcap)) return -1;
  FILE *out = NULL;
  if (id->rank == 0 && o->out && !(out = ddp_out_open(o->out, err, errcap))) return -1;
  if (id->rank == 0)
    printf("all-reduce float32, %d GPUs (NCCL %d)\n%10s %12s %12s %12s\n", id->world, NCCL_VERSION_CODE, "MB", "ms",
           "algbw GB/s", "busbw GB/s");
  for (int s = 0; s < o->nsizes; s++) {
    size_t n = (size_t)(o->sizes_mb[s] * 1048576.0 / 4.0);
    int iters = o->iters > 0 ? o->iters : (o->sizes_mb[s] >= 500 ? 10 : 20);
    for (int w = 0; w < 5; w++) NCCL_TRY(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, st));
    DDP_CUDA_TRY(cudaEventRecord(e0, st));
    for (int it = 0; it < iters; it++) NCCL_TRY(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, st));
    DDP_CUDA_TRY(cudaEventRecord(e1, st));
    DDP_CUDA_TRY(cudaEventSynchronize(e1));
    float ms = 0;
    DDP_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
    double t = (double)ms / 1e3 / iters, bytes = (double)n * 4.0;
    double alg = bytes / t / 1e9, bus = alg * 2.0 * (id->world - 1) / id->world;
    if (id->rank == 0) {
      printf("%10.1f %12.4f %12.2f %12.2f\n", o->sizes_mb[s], t * 1e3, alg, bus);
      if (out)
        fprintf(out, "{\"kind\": \"allreduce\", \"impl\": \"ddpc\", \"world\": %d, \"mb\": %g, \"ms\": %.5f, "
                     "\"algbw_GBs\": %.3f, \"busbw_GBs\": %.3f}\n",
                id->world, o->sizes_mb[s], t * 1e3, alg, bus);
    }
  }
  int wrc = ddp_out_close(out, o->out, err, errcap);
  ncclCommDestroy(comm);
  cudaFree(buf);
  cudaStreamDestroy(st);
  return wrc;
}

int ddprun_bench_main(int argc, char **argv) {
  if (argc < 1) {
    fprintf(stderr, "ddprun --bench: which benchmark? (allreduce, interference, plot)\n");
    return DDP_EXIT_USAGE;
  }
  if (!strcmp(argv[0], "plot")) return ddprun_plot_main(argc, argv); /* argv[0] is "plot" */
  if (!strcmp(argv[0], "interference")) return ddprun_bench_interference_main(argc, argv); /* interference.c */
  if (strcmp(argv[0], "allreduce")) {
    fprintf(stderr, "ddprun --bench: unknown benchmark '%s' (allreduce, interference, plot)\n", argv[0]);
    return DDP_EXIT_USAGE;
  }
  static const struct option lo[] = {{"nproc", required_argument, NULL, 'n'}, {"iters", required_argument, NULL, 'i'},
                                     {"out", required_argument, NULL, 'o'},   {"sizes-mb", required_argument, NULL, 's'},
                                     {"device", required_argument, NULL, 'd'},
                                     {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
  bench_opts o = {.sizes_mb = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}, .nsizes = 10};
  int nproc = 0, help = 0, cpu = 0, c;
  char bad[1024] = "", msg[1024];
  opterr = 0;
  optind = 1; /* argv[0] is "allreduce" */
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    int64_t v = 0;
    int rc = 0;
    if (c == 'h') help = 1;
    else if (c == 'o') o.out = optarg;
    else if (c == 'd') {
      if (strcmp(optarg, "ref") && strcmp(optarg, "cuda"))
        rc = ddp_fail(msg, sizeof msg, "--device: '%.100s' is not one of cuda, ref", optarg);
      cpu = !strcmp(optarg, "ref");
    }
    else if (c == 'n') rc = ddp_parse_i64(optarg, 1, 4096, "--nproc", &v, msg, sizeof msg), nproc = (int)v;
    else if (c == 'i') rc = ddp_parse_i64(optarg, 1, 1000000, "--iters", &v, msg, sizeof msg), o.iters = (int)v;
    else if (c == 's') {
      o.nsizes = 0;
      rc = ddp_check_list("--sizes-mb", optarg, msg, sizeof msg);
      char *list = ddp_xstrdup(optarg), *save = NULL;
      for (char *t = strtok_r(list, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save))
        if (o.nsizes == 32) rc = ddp_fail(msg, sizeof msg, "--sizes-mb: more than 32 sizes");
        else rc = ddp_parse_double(t, 0, 1, 65536, "--sizes-mb", &o.sizes_mb[o.nsizes++], msg, sizeof msg);
      if (rc == 0 && o.nsizes == 0) rc = ddp_fail(msg, sizeof msg, "--sizes-mb: no sizes in '%s'", optarg);
      free(list);
    } else {
      ddp_getopt_error(c, argv, lo, "ddprun --bench allreduce", msg, sizeof msg), rc = -1;
    }
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", msg);
  }
  if (help) {
    printf("usage: ddprun --bench allreduce [--device cuda|ref] [--nproc N] [--sizes-mb 1,10,100,1000] [--iters N]\n"
           "                                [--out F.jsonl]\n"
           "NCCL all-reduce of float32 buffers, one process per GPU (--nproc N forks N local ranks, 1..4096);\n"
           "--device ref: the reference executor's collectives on CPU ranks (processes under mpirun/srun,\n"
           "threads with --nproc).\n"
           "  --sizes-mb LIST  sizes in MiB, in (0, 65536] (default 1,2,5,...,1000)\n"
           "  --iters N        timed iterations per size, 1..1000000 (default 20, 10 from 500 MB)\n"
           "  --out F.jsonl    one JSON object per size (rank 0)\n"
           "Exit status: 0 done, 1 failed, 2 bad command line.\n");
    return 0;
  }
  if (!bad[0] && optind < argc) snprintf(bad, sizeof bad, "unexpected argument '%s'", argv[optind]);
  if (bad[0]) {
    fprintf(stderr, "ddprun --bench allreduce: %s\n", bad);
    return DDP_EXIT_USAGE;
  }
  if (cpu) return ddprun_bench_allreduce_cpu(&o, nproc);
  return ddp_bench_launch("allreduce", nproc, bench_rank, &o);
}

/* base/param.h: every DDP_* / DDPC_* environment knob of ddpc and ddprun, declared once (as NCCL's
 * NCCL_PARAM). A row names the variable, its kind, default, accepted range and one line of documentation;
 * ddp_param_* parse and validate it the same way everywhere, so a malformed value is one clear line
 * naming the variable, never a silent default. `ddprun --help-env` prints the table and
 * docs/ENVIRONMENT.md is that output. Only main.c files and the runtime's start-up read knobs: the
 * compiler's stages below main.c receive the values in their options, so a plan is a function of the
 * schedule and the command line.
 *
 * Kinds: BOOL (0 or 1), INT (an integer in lo..hi), POW2 (a power of two in lo..hi), SECONDS (a finite
 * number of seconds in (lo, hi]), PATH (a file or folder: any non-empty string), TEXT (any non-empty string
 * that is not a path). */
#ifndef DDP_PARAM_H
#define DDP_PARAM_H
#include <stddef.h>
#include <stdint.h>

/* X(id, variable, kind, default, lo, hi, doc) */
#define DDP_PARAMS(X)                                                                                      \
  X(CACHE_DIR, "DDPC_CACHE_DIR", PATH, 0, 0, 0,                                                             \
    "where compiled kernels and chosen GEMM algorithms are cached (default $XDG_CACHE_HOME/ddpc or ~/.cache/ddpc)") \
  X(TEMPLATE_DIR, "DDP_TEMPLATE_DIR", PATH, 0, 0, 0,                                                        \
    "the folder of the CUDA templates ddpc specialises (default: the one installed with ddpc, <prefix>/share/ddpc/templates; where that is missing, as for a binary in its build folder, the source tree it was built from)")             \
  X(NVRTC_LOG, "DDPC_NVRTC_LOG", BOOL, 0, 0, 1, "1: ddpc prints NVRTC's compile log of every kernel")       \
  X(TUNE_FWD_MT, "DDP_TUNE_FWD_MT", POW2, 0, 1, 2, "benchmarks: bf16 attention forward, query tiles per warp") \
  X(TUNE_FWD_BN, "DDP_TUNE_FWD_BN", POW2, 0, 16, 128, "benchmarks: bf16 attention forward, key block")      \
  X(TUNE_FWD_MINB, "DDP_TUNE_FWD_MINB", INT, 0, 1, 4, "benchmarks: bf16 attention forward, min blocks/SM")   \
  X(TUNE_FWD_WARPS, "DDP_TUNE_FWD_WARPS", POW2, 0, 4, 8, "benchmarks: bf16 attention forward, warps per block") \
  X(TUNE_FWD_WGMMA, "DDP_TUNE_FWD_WGMMA", INT, 0, 1, 4,                                                  \
    "benchmarks: bf16 attention forward on sm_90a (head dims 64, 128), 1 the compiler's choice (default), 2 the mma.sync kernel, 3 the cp.async wgmma one, 4 the warp-specialised TMA one wherever the tensors allow it") \
  X(TUNE_FWD_CONSUMERS, "DDP_TUNE_FWD_CONSUMERS", INT, 0, 2, 3,                                            \
    "benchmarks: bf16 attention forward, consumer warpgroups of the warp-specialised TMA kernel")           \
  X(TUNE_FWD_NBUF, "DDP_TUNE_FWD_NBUF", INT, 0, 2, 3, "benchmarks: bf16 attention forward on sm_90a, stages of the K/V tiles") \
  X(TUNE_DKV_WGMMA, "DDP_TUNE_DKV_WGMMA", INT, 0, 1, 4, "benchmarks: bf16 attention dK/dV on sm_90a (head dims 64, 128), 1 the compiler's choice (default), 2 the mma.sync kernel, 3 the cp.async wgmma one, 4 the warp-specialised TMA one wherever the tensors allow it") \
  X(TUNE_DQ_WGMMA, "DDP_TUNE_DQ_WGMMA", INT, 0, 1, 4, "benchmarks: bf16 attention dQ on sm_90a (head dims 64, 128), 1 the compiler's choice (default), 2 the mma.sync kernel, 3 the cp.async wgmma one, 4 the warp-specialised TMA one wherever the tensors allow it") \
  X(TUNE_DQ_CONSUMERS, "DDP_TUNE_DQ_CONSUMERS", INT, 0, 2, 3, "benchmarks: bf16 attention dQ, consumer warpgroups of the warp-specialised TMA kernel") \
  X(TUNE_DKV_MT, "DDP_TUNE_DKV_MT", POW2, 0, 1, 2, "benchmarks: attention backward dK/dV, key tiles per warp") \
  X(TUNE_DKV_BN, "DDP_TUNE_DKV_BN", POW2, 0, 16, 128, "benchmarks: attention backward dK/dV, query block")   \
  X(TUNE_DKV_MINB, "DDP_TUNE_DKV_MINB", INT, 0, 1, 4, "benchmarks: attention backward dK/dV, min blocks/SM") \
  X(TUNE_DKV_WARPS, "DDP_TUNE_DKV_WARPS", POW2, 0, 4, 8, "benchmarks: attention backward dK/dV, warps")       \
  X(TUNE_DQ_MT, "DDP_TUNE_DQ_MT", POW2, 0, 1, 2, "benchmarks: attention backward dQ, query tiles per warp")  \
  X(TUNE_DQ_BN, "DDP_TUNE_DQ_BN", POW2, 0, 16, 128, "benchmarks: attention backward dQ, key block")         \
  X(TUNE_DQ_MINB, "DDP_TUNE_DQ_MINB", INT, 0, 1, 4, "benchmarks: attention backward dQ, min blocks/SM")     \
  X(TUNE_DQ_WARPS, "DDP_TUNE_DQ_WARPS", POW2, 0, 4, 8, "benchmarks: attention backward dQ, warps")          \
  X(TUNE_FUSED_SPLIT, "DDP_TUNE_FUSED_SPLIT", INT, 0, 1, 2,                                                 \
    "benchmarks: the fused attention backward at head dim 64, how its two warpgroups share dQ: 1 half the columns of every tile each, 2 (the default) all columns of every other tile each") \
  X(TUNE_ATTN_PERSISTENT, "DDP_TUNE_ATTN_PERSISTENT", INT, 0, 1, 2,                                          \
    "benchmarks: the warp-specialised TMA attention kernels (forward, dK/dV, dQ), 1 one block per multiprocessor walking the work tiles, 2 one block per tile and the cp.async kernels for the forward and dQ below T 1024; unset, the compiler's choice (persistent except dK/dV at head dim 128 from T 1024)") \
  X(TUNE_ADAMW_VEC, "DDP_TUNE_ADAMW_VEC", INT, 0, 4, 8, "benchmarks: AdamW elements per vector access")     \
  X(TUNE_ADAMW_UNROLL, "DDP_TUNE_ADAMW_UNROLL", INT, 0, 1, 4, "benchmarks: AdamW packs per thread")          \
  X(TUNE_ADAMW_GRID, "DDP_TUNE_ADAMW_GRID", INT, 0, 1, 1048576, "benchmarks: AdamW grid size")              \
  X(TUNE_ADAMW_MAX_GRID, "DDP_TUNE_ADAMW_MAX_GRID", INT, 0, 1, 1048576,                                     \
    "benchmarks: the largest AdamW grid (default 4096 blocks of 256 threads, each looping over the rest); larger gives each block less work, so an update on a side stream frees its SMs sooner") \
  X(NCCL_TIMEOUT_S, "DDP_NCCL_TIMEOUT_S", SECONDS, 60, 0, 1e9,                                              \
    "ddprun: a collective or NCCL set-up that takes longer is an error naming the rank")                    \
  X(RENDEZVOUS_TIMEOUT_S, "DDP_RENDEZVOUS_TIMEOUT_S", SECONDS, 60, 0, 1e9,                                  \
    "ddprun: how long ranks wait for rank 0's NCCL id")                                                     \
  X(RENDEZVOUS_SECRET, "DDP_RENDEZVOUS_SECRET", TEXT, 0, 0, 0,                                             \
    "ddprun: the job's secret (16+ characters) that ranks prove at the rendezvous; --nproc sets a random one") \
  X(LAUNCH_GRACE_S, "DDP_LAUNCH_GRACE_S", SECONDS, 5, 0, 3600,                                              \
    "ddprun --nproc: when a rank fails, SIGTERM to the others, then SIGKILL this long after")               \
  X(CUDA_GRAPH, "DDP_CUDA_GRAPH", BOOL, 0, 0, 1, "ddprun: 1 captures the step once into a CUDA graph")      \
  X(STREAM_PRIORITY, "DDP_STREAM_PRIORITY", INT, 0, 0, 2,                                                   \
    "ddprun, overriding the plan's low_priority_streams (experiments): 1 the compute stream above every other stream, 2 the streams that carry collectives above every other stream") \
  X(SIDE_SMS, "DDP_SIDE_SMS", INT, 0, 0, 1024,                                                               \
    "ddprun, experiments: n > 0 runs the side streams (DDP_SIDE_STREAMS) in a partition of n SMs of their own (a CUDA green context; Hopper rounds to 8)") \
  X(SIDE_STREAMS, "DDP_SIDE_STREAMS", INT, 0, 0, 1073741824,                                                  \
    "ddprun, experiments: the bit mask of streams DDP_SIDE_SMS partitions (0: every stream but the compute stream)") \
  X(SIDE_COMPUTE, "DDP_SIDE_COMPUTE", BOOL, 0, 0, 1,                                                          \
    "ddprun, experiments: 1 confines the other streams to the SMs DDP_SIDE_SMS leaves")                     \
  X(GEMM_SM_TARGET, "DDP_GEMM_SM_TARGET", INT, 0, 0, 1024,                                                    \
    "ddprun, experiments: n > 0 has cuBLASLt size the backward's GEMMs on the compute stream for n SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET)") \
  X(NCCL_MEM_ARENAS, "DDP_NCCL_MEM_ARENAS", INT, 0, 0, 63,                                                   \
    "ddprun, experiments on more than one rank (the same on every rank): the arenas allocated by ncclMemAlloc instead of cudaMalloc, a bit mask (1 params, 2 grads, 4 optimizer, 8 activations, 16 workspace, 32 io), overriding nccl.register = \"window\"'s every arena; only those can be windows") \
  X(LINK_LOAD_MB, "DDP_LINK_LOAD_MB", INT, 0, 0, 1048576,                                                    \
    "ddprun, experiments: n > 0 pulls n MiB a step from the next visible GPU by copy-engine copies on a low-priority stream of their own, with no dependence on the step: what a collective's bytes cost the compute (tests/bench/device_link_floor.sh)") \
  X(LINK_LOAD_DIR, "DDP_LINK_LOAD_DIR", PATH, 0, 0, 0,                                                       \
    "ddprun, experiments, with DDP_LINK_LOAD_MB: a fresh folder the two processes share; each exports its GPU's source chunk there by CUDA IPC and pulls the other's, as data-parallel ranks map their peers' memory (unset: the source is allocated on the other GPU by this process)") \
  X(LINK_LOAD_MODE, "DDP_LINK_LOAD_MODE", INT, 0, 0, 2,                                                      \
    "ddprun, experiments, with DDP_LINK_LOAD_MB: 0 pulls from the other GPU, 1 sets the source up and copies nothing, 2 copies within this GPU (controls that split what the load costs)") \
  X(P2P_COPY, "DDP_P2P_COPY", BOOL, 0, 0, 1,                                                               \
    "ddprun: 1 moves the step's SEND/RECV between GPUs of one host by copy-engine copies over CUDA IPC (0: NCCL)") \
  X(PEER_COPY_BATCH, "DDP_PEER_COPY_BATCH", BOOL, 1, 0, 1,                                                 \
    "ddprun: 1 issues each instruction's copy-engine copies between GPUs (nccl.movement, nccl.all_reduce = \"peer_copy\") as one cudaMemcpyBatchAsync with the hint to overlap compute, as NCCL's copy-engine collectives do; 0 one cudaMemcpyAsync per peer (a moved collective's on streams of their own). A step captured into a CUDA graph, which cannot hold a batch, copies one by one") \
  X(PDL, "DDP_PDL", BOOL, 0, 0, 1,                                                                          \
    "ddprun, experiments: 1 launches the templates' kernels with programmatic stream serialisation, so each may start while the kernel before it on its stream finishes (it waits in its first statement, DDP_GRID_DEPENDENCY)") \
  X(PERSISTENT_BLOCKS, "DDP_PERSISTENT_BLOCKS", INT, 0, 1, 1048576,                                          \
    "ddprun, gpu_kernels: the most blocks a persistent attention kernel (attention_tma.cu) is launched with (default: one per multiprocessor); fewer make each block walk more work tiles (tests)") \
  X(GEMM_TUNE, "DDP_GEMM_TUNE", BOOL, 1, 0, 1, "ddprun: 0 takes cuBLASLt's first proposal instead of timing them") \
  X(GEMM_TUNE_MS, "DDP_GEMM_TUNE_MS", INT, 0, 0, 10000,                                                     \
    "ddprun, experiments: n > 0 times each GEMM candidate at load under sustained load (n ms back to back, then n ms timed), so the choice is the fastest at the power limit; choices stored apart from the default's") \
  X(ENERGY, "DDP_ENERGY", BOOL, 1, 0, 1,                                                                    \
    "ddprun: 0 reads no GPU energy counters (NVML) and reports none in the metrics")                      \
  X(ENERGY_PERIOD_MS, "DDP_ENERGY_PERIOD_MS", INT, 20, 1, 1000,                                            \
    "ddprun: how often the sampler thread reads the GPU's energy counter (NVML), ms, while a step keeps "  \
    "the GPU busy (docs/CLI.md, *Energy*)")                                                               \
  X(NCCL_BLOCKING, "DDP_NCCL_BLOCKING", BOOL, 0, 0, 1,                                                      \
    "ddprun: 1 makes the NCCL communicator blocking (diagnosis; no set-up deadline)")                     \
  X(MPI_LIBRARY, "DDP_MPI_LIBRARY", PATH, 0, 0, 0,                                                          \
    "ddprun --device ref under mpirun/srun: the Open MPI library to load (default libmpi.so.40)")           \
  X(MPI_TIMEOUT_S, "DDP_MPI_TIMEOUT_S", SECONDS, 300, 0, 1e9,                                               \
    "ddprun --device ref under mpirun/srun: MPI's start (every rank must reach it), or a collective or SEND/RECV group, that waits longer for the other ranks is an error")

typedef enum {
#define DDP_PARAM_ENUM(id, var, kind, def, lo, hi, doc) PARAM_##id,
  DDP_PARAMS(DDP_PARAM_ENUM)
#undef DDP_PARAM_ENUM
  PARAM_COUNT
} ddp_param;

typedef enum { PARAM_BOOL, PARAM_INT, PARAM_POW2, PARAM_SECONDS, PARAM_PATH, PARAM_TEXT } ddp_param_kind;

/* The variable's name ("DDP_NCCL_TIMEOUT_S"). */
const char *ddp_param_var(ddp_param id);
/* 1 when the variable is set to a non-empty value. */
int ddp_param_is_set(ddp_param id);
/* The value of a BOOL/INT/POW2 knob (the default when unset); -1 with one line when malformed. */
/* Every knob whose variable starts with prefix ("DDP_") and is set, parsed as its kind: 0, or -1 with the
 * first malformed one's line. A program calls it at its start, so that a knob its path does not read (the
 * reference executor's run of a CUDA knob) is not silently ignored when malformed. */
int ddp_param_check_all(const char *prefix, char *err, size_t errcap);
int ddp_param_int(ddp_param id, int64_t *out, char *err, size_t errcap);
/* The value of a SECONDS knob (the default when unset); -1 with one line when malformed. */
int ddp_param_seconds(ddp_param id, double *out, char *err, size_t errcap);
/* The value of a PATH knob, or NULL when unset or empty. */
const char *ddp_param_path(ddp_param id);
/* The value of a TEXT knob, or NULL when unset or empty. */
const char *ddp_param_text(ddp_param id);
/* Writes the table (variable, kind and range, default, documentation) as Markdown. */
void ddp_param_print_table(void *file);
#endif

/* compiler/explain/explain.h: `ddpc explain` (docs/EXPLAIN.md). A device profile (profile.c) gives the
 * cost of each instruction (cost.c); the simulator (sim.c) replays every rank's step program on one clock
 * per stream, with events ordering streams and collectives as cross-rank barriers; memory.c splits each
 * rank's arenas into memory classes; explain.c prints the report. */
#ifndef DDP_EXPLAIN_H
#define DDP_EXPLAIN_H
#include "plan.h"
#include "step_times.h"
#include "gemm_table.h"
#include "work.h" /* COST_* collective kinds */
#include <stdio.h>

const char *ddp_cost_coll_name(int k);

typedef struct ddp_coll_cost {
  double alpha_us;   /* fixed latency of one call */
  double busbw_gbps; /* bus bandwidth (nccl-tests' definition), GB/s = 1e9 B/s */
} ddp_coll_cost;

#define DDP_PROFILE_ATTN_SHAPES 32
#define DDP_PROFILE_GEMM_SHAPES 1024

typedef struct ddp_profile {
  char name[512];           /* a calibrated profile's ends "; built-in default for: FIELD, ..." */
  double launch_us;         /* per kernel, GEMM, memset, copy, load, init */
  double hbm_gbps;          /* bytes moved by memory-bound work, GB/s */
  double gemm_tflops_16;    /* GEMMs with 16-bit inputs (bf16, f16), TFLOP/s = 1e12 FLOP/s */
  double gemm_tflops_32;    /* GEMMs with 32-bit or wider inputs */
  double gemm_small_dim;    /* a GEMM whose smallest of M, N, K is below this is "small" ... */
  double gemm_small_scale;  /* ... and runs at this fraction of its throughput, (0, 1] */
  double attention_tflops;  /* the attention kernels (ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ, ATTN_BWD_FUSED) */
  struct {                  /* attention_by_shape: the throughput measured at exactly this T and head dim */
    double t, dh, tflops;
  } attn_shape[DDP_PROFILE_ATTN_SHAPES];
  int nattn_shapes;
  ddp_gemm_point gemm_shape[DDP_PROFILE_GEMM_SHAPES]; /* gemm_by_shape: bf16 GEMMs timed alone */
  int ngemm_shapes;
  double gemm_table_scale;  /* a GEMM of the table costs its time times this (in a step, not alone) */
  double collective_share;  /* [0, 1): the fraction of a rank's compute throughput its running collectives
                               take (NCCL's kernels use SMs and HBM): compute beside one runs at 1 - this */
  double copy_engine_share; /* [0, 1): the same for a collective NCCL runs on the copy engines (an all-gather or
                               all-to-all of a plan with symmetric windows and the zero-CTA policy): only HBM */
  ddp_coll_cost coll[COST_COLL_COUNT];
  struct {                  /* the power model (energy.c); limit_w 0: off */
    double limit_w;         /* the GPU's power limit, W */
    double idle_w;          /* its power with nothing running, W */
    double j_per_tflop;     /* joules above idle per TFLOP of GEMM or attention with 16-bit inputs (tensor cores;
                               their memory traffic included) */
    double j_per_tflop_fp32; /* the same with 4-byte inputs (fp32 plans: FFMA, no TF32) */
    double j_per_gb_hbm;    /* per GB a memory-bound kernel reads or writes */
    double j_per_gb_copy_engine; /* per GB a rank sends (and receives as much) on the copy engines over NVLink */
    double j_per_gb_nccl;   /* per GB of ring traffic a rank sends through NCCL's kernels (its reduction included) */
  } power;
} ddp_profile;

/* The built-in H100/H200 profile (documented with its sources in docs/EXPLAIN.md). */
void ddp_profile_default(ddp_profile *pr);
/* A profile from JSON text; label names it in errors. Every field is required and checked; unknown fields
 * are refused. Returns 0, or -1 with one line such as "prof.json: hbm_gbps: must be a number > 0 (got 0)". */
int ddp_profile_parse(const char *json, size_t len, const char *label, ddp_profile *pr, char *err, size_t errcap);
int ddp_profile_read(const char *path, ddp_profile *pr, char *err, size_t errcap);

/* Does this collective run on the copy engines (no SM: its compute-side share is copy_engine_share, its
 * energy j_per_gb_copy_engine)? */
int ddp_coll_on_copy_engines(const ddp_plan *p, const ddp_instr *in);

/* ---- the power model (energy.c) ---- */
/* One rank's step priced in joules above idle by the profile's power figures, and the shortest step the
 * power limit allows for that energy: (limit_w - idle_w) * floor_s = joules. */
typedef struct ddp_step_energy {
  double tflop, hbm_gb, link_gb;         /* the work: GEMM + attention TFLOP, memory-bound GB, GB a rank sends */
  double tflop_fp32;                     /* the part of tflop with 4-byte inputs, priced at j_per_tflop_fp32 */
  double compute_j, memory_j, link_j, j; /* their joules and the sum */
  double floor_s;                        /* j / (limit_w - idle_w); 0 when the model is off */
} ddp_step_energy;
/* Returns 0, or -1 when the profile has no power model (limit_w 0). */
int ddp_rank_energy(const ddp_plan *p, const ddp_profile *pr, int rank, ddp_step_energy *out);
/* The predicted step of rank r: the larger of the simulated step sim_s and the power floor (sim_s without a
 * power model). Sets *floor_bound when the floor is the larger. */
double ddp_rank_step_s(const ddp_plan *p, const ddp_profile *pr, int rank, double sim_s, int *floor_bound);

/* The predicted seconds of one instruction of a plan with `world` ranks; 0 for events, ranges, timers.
 * Sets *is_comm for the collectives. An instruction whose footprint is invalid costs its launch only. */
double ddp_instr_cost(const ddp_plan *p, const ddp_instr *in, const ddp_profile *pr, int *is_comm);

/* ---- the simulator ---- */
enum { DEP_NONE = 0, DEP_STREAM, DEP_EVENT, DEP_COLLECTIVE };

typedef struct ddp_sim_instr {
  double start, end;
  int dep;                 /* what set the start: DEP_* */
  int dep_rank;            /* ... the instruction it waited for (rank, index), or -1 */
  int64_t dep_index;
} ddp_sim_instr;

typedef struct ddp_sim_rank {
  double step_s;           /* the latest end on any stream */
  double comm_s;           /* sum of the collectives' own costs (no waiting) */
  double exposed_s;        /* step_s minus the step with zero-cost collectives (filled by ddp_explain_sim) */
  double *busy_s;          /* [nstreams]: sum of costs of the instructions of each stream */
  double *compute_s;       /* [nstreams]: the non-collective part of busy_s */
  ddp_sim_instr *in;       /* [step.n] */
} ddp_sim_rank;

typedef struct ddp_sim {
  int world;
  uint32_t nstreams;
  ddp_sim_rank *ranks;
} ddp_sim;

/* Simulates every rank's step program; zero_comm: collectives cost nothing (still barriers). Returns NULL
 * with one line in err (a deadlock: ranks whose collectives never match; an event waited before any
 * record is free, as in CUDA). */
ddp_sim *ddp_simulate(const ddp_plan *p, const ddp_profile *pr, int zero_comm, char *err, size_t errcap);
void ddp_sim_free(ddp_sim *s);
/* Both runs: fills exposed_s of every rank. Returns NULL with err as ddp_simulate. */
ddp_sim *ddp_explain_sim(const ddp_plan *p, const ddp_profile *pr, char *err, size_t errcap);

/* The critical path of `rank`: walks back from its last-finishing instruction through the dependency that
 * set each start. Writes up to cap (rank, index) pairs, last first; returns the path's length. */
size_t ddp_sim_critical_path(const ddp_plan *p, const ddp_sim *s, int rank, int *ranks, int64_t *idx, size_t cap);

/* Every metric of rank r's step (ms) computed by ddprun's own function from the simulated timers. */
void ddp_sim_step_times(const ddp_plan *p, const ddp_sim *s, int rank, ddp_step_times *out);
/* The phases of rank r as ddprun's metrics define them from the plan's timers (plan/step_times.c):
 * forward = FORWARD_END - STEP_BEGIN, backward = BACKWARD_END - FORWARD_END (a pipeline: the sums of its
 * microbatch brackets), optimizer = STEP_END - OPT_BEGIN, in seconds at the timers' simulated times; a
 * phase without its timers is -1. */
void ddp_sim_phases(const ddp_plan *p, const ddp_sim *s, int rank, double *forward, double *backward,
                    double *optimizer);

/* ---- memory classes ---- */
#define DDP_MEM_CLASSES(X) X(PARAMS, "parameters") X(GRADS, "gradients") X(OPT, "optimizer state") \
  X(ACT, "activations") X(COMM, "communication buffers") X(WORK, "workspace") X(IO, "inputs and scalars")
enum {
#define DDP_MEM_ENUM(id, name) MEM_##id,
  DDP_MEM_CLASSES(DDP_MEM_ENUM)
#undef DDP_MEM_ENUM
  MEM_COUNT
};
const char *ddp_mem_class_name(int c);
/* Bytes per class of rank r at the peak; the classes sum to the rank's arena bytes. */
void ddp_memory_classes(const ddp_plan *p, int rank, uint64_t out[MEM_COUNT]);

/* The activation arena at its liveness peak over rank 0's step program (the indices of first_use and
 * last_use): `at` is the first instruction where the live activations (each rounded up to DDP_ALIGN, as
 * the planner places them) are largest, or -1 when the step uses none; `live` their bytes then, and of
 * those, `params` the gathered parameter buffers (ddp_gathered_params) and `grads` the transient
 * gradient buffers (TF_GRAD: ZeRO-2/3's bucket<k>.grads). */
typedef struct ddp_act_peak {
  int64_t at;
  uint64_t live, params, grads;
} ddp_act_peak;
void ddp_act_peak_find(const ddp_plan *p, ddp_act_peak *pk);
/* Is tensor t a transient activation root (no view, activation arena, not persistent, not shape-only)? */
int ddp_act_transient(const ddp_plan *p, uint32_t t);
/* Per tensor (ntensors bytes, caller frees): 1 for the gathered parameter buffers: transient activations
 * that are TF_PARAM_COPY (ZeRO-3's unit<k>.gathered) or that an ALL_GATHER of rank 0's step writes (the
 * fp32 buffer a cast to the compute dtype reads). */
unsigned char *ddp_gathered_params(const ddp_plan *p);

/* ---- the compile-time prediction (predict.c) ---- */
/* Fills the plan's predicted_* meta fields (plan/plan.h) from ddp_explain_sim with profile pr: rank 0's
 * step, forward, backward, optimizer, communication and exposed communication in ms (a phase without its
 * timers: 0), predicted_profile = pr->name. Never fails: a simulator that cannot run leaves the times 0
 * and its one-line reason in predicted_error. */
void ddp_predict_meta(ddp_plan *p, const ddp_profile *pr);

/* ---- predicted against measured (compare.c) ---- */
/* `ddpc explain PLAN --compare METRICS`: reads ddprun's metrics (the run line must name the plan's schedule,
 * parallel layout and world; warm-up steps skipped, medians over the rest), prints per rank (rank < 0:
 * every rank) each phase's prediction, measurement, ratio and error, and the verdicts. plan_path and
 * metrics_path label the output and errors. Returns 0, or -1 with one line in err. */
int ddp_explain_compare(const ddp_plan *p, const char *plan_path, const char *metrics_path, const ddp_profile *pr,
                        int default_profile, int rank, int json, FILE *o, char *err, size_t errcap);

/* ---- the report ---- */
/* rank < 0: every rank. default_profile: say that the built-in profile was used. Returns 0 or -1 (err). */
int ddp_explain(const ddp_plan *p, const ddp_profile *pr, int default_profile, int rank, int json, FILE *o,
                char *err, size_t errcap);
/* `ddpc explain` (argv[0] = "explain"): the command line; returns the exit status. */
int ddp_explain_main(int argc, char **argv);
#endif

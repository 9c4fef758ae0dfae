/* compiler/explain/xmodel.h: the seeds' models as commands, `ddpc explain buckets` (buckets.c: the DDP
 * overhead as a function of bucket size) and `ddpc explain mesh` (mesh.c: memory and communication of
 * candidate layouts without GPUs); both compile schedules without kernels (xmodel.c) and simulate them
 * (sim.c). docs/EXPLAIN.md, "Bucket size" and "Layouts without GPUs". */
#ifndef DDP_XMODEL_H
#define DDP_XMODEL_H
#include "explain.h"
#include "schedule.h"

/* One compiled-and-simulated plan, rank 0's view (and the largest arena total over the ranks). */
typedef struct ddp_xeval {
  int world;
  uint32_t nbuckets;
  uint64_t grad_bytes;     /* sum of the plan's bucket bytes */
  double step_s, free_s;   /* step, and the step with every collective free (max over ranks) */
  double comm_s;           /* rank 0's collectives' own costs */
  double backward_s;       /* rank 0's backward phase in the free-communication run (-1: no timers) */
  uint64_t mem[MEM_COUNT]; /* per class, of the rank with the most bytes */
  uint64_t mem_total;
  int mem_rank;
  double coll_bytes[COST_COLL_COUNT]; /* per rank per step (max over ranks): bytes each rank's buffer holds */
  int coll_calls[COST_COLL_COUNT];    /* ... and calls (max over ranks) */
  double tp_bytes;                    /* the part of coll_bytes on the tensor groups' communicators (max over ranks) */
  int tp_calls;                       /* ... and its calls */
  double energy_j, floor_s; /* the largest energy above idle per step over the ranks and the power floor it
                              sets (energy.c); -1: the profile has no power model */
  double compile_s;
  char parallel[1024];     /* the plan's meta.parallel: what a ddprun run line of it says */
  char sim_err[512];       /* the simulator's refusal (step_s, free_s, comm_s, backward_s are then -1), or "" */
} ddp_xeval;

/* Compiles s without kernels and simulates it (both with and without communication costs). 0 or -1 (err:
 * the compiler's refusal). A plan the simulator refuses still gives its memory and communication; its
 * times are -1 and sim_err says why. */
int ddp_xeval_schedule(const ddp_schedule *s, const ddp_profile *pr, ddp_xeval *out, char *err, size_t errcap);

int ddp_explain_buckets_main(int argc, char **argv);
int ddp_explain_mesh_main(int argc, char **argv);
#endif

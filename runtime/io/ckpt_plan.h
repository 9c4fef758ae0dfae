/* runtime/io/ckpt_plan.h: what a plan's checkpoint holds and where each of its elements lives (checkpoint.c
 * saves and loads through it). Built from the plan alone, so every rank computes the same description.
 * Every state-dict tensor of the files (a parameter under its state name, "<name>.exp_avg",
 * "<name>.exp_avg_sq", "optimizer.scalars") is one entry whose elements come from
 *   a whole tensor that every rank holds (unsharded: the parameter's fp32 master view, the moments' named
 *   views, the scalars block): rank 0 writes it, every rank reads it; and/or
 *   TF_PIECE tensors (plan/plan.h): piece k holds elements [piece_first, piece_first + numel) of the
 *   flattened tensor, or with piece_runs > 1 numel / piece_runs elements from each of piece_first + j *
 *   piece_stride (a tensor-parallel rank's column block), and only rank piece_rank holds it (with data
 *   replicas of a pipeline or tensor-parallel mesh also its replicas, checkpoint.c): that rank writes it.
 * The pieces' runs of an entry must cover each of its elements exactly once (checked here, since a plan the
 * reader accepts can still describe them badly). */
#ifndef DDP_CKPT_PLAN_H
#define DDP_CKPT_PLAN_H
#include "plan.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct ck_entry {
  char *key; /* the name in the file (owned) */
  int dtype, ndim;
  int64_t shape[DDP_MAX_DIMS]; /* the full (unsharded) shape */
  uint64_t numel;
  int32_t whole;   /* a tensor every rank holds with all the elements, or -1 */
  int32_t *pieces; /* TF_PIECE tensors, sorted by piece_first (ck_plan_build) */
  uint32_t npieces;
  size_t cap;
} ck_entry;

typedef struct ck_file {
  char name[64]; /* inside the checkpoint folder */
  ck_entry *v;
  uint32_t n;
  size_t cap;
} ck_file;

typedef struct ck_plan {
  ck_file model, opt;
} ck_plan;

/* The description of the plan for a run of `world` ranks (the same on every rank); -1 with one line in err for a plan whose pieces or optimizer
 * state do not describe its state dict (a gap, an overlap, a piece beyond its tensor or on a rank the run
 * lacks, mismatched dtypes or shapes). */
int ck_plan_build(const ddp_plan *p, int world, ck_plan *c, char *err, size_t errcap);
void ck_plan_free(ck_plan *c);
/* True when some piece lives on a rank other than 0, so that saving needs every rank (checkpoint.c);
 * read from the plan alone, so every rank answers the same. */
bool ck_plan_shared(const ddp_plan *p);
#endif

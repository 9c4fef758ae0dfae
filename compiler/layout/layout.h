/* compiler/layout/layout.h: the flat parameter layout. Trainable units are laid out contiguously in
 * gradient-ready order in four parallel flat tensors (fp32 masters, GEMM copies, gradients, optimizer
 * state), so a bucket is a contiguous range of the gradient arena (no copies) and the optimizer is one
 * fused kernel over any range. The layout owns the buckets: ranges of its unit order. */
#ifndef DDP_LAYOUT_H
#define DDP_LAYOUT_H
#include "builder.h"
#include "err.h"

#define DDP_FLAT_ALIGN 64 /* elements: 256 bytes of f32 */

typedef struct ddp_layout_bucket {
  int first, last; /* inclusive indices into the layout's order */
} ddp_layout_bucket;

/* A group of the ZeRO levels (shard.c): units order[first..last], read through the compute copies
 * (SG_COPY) or as fp32 masters (SG_MASTER), flat elements [lo, lo + len) with len a multiple of world x
 * DDP_FLAT_ALIGN; rank r owns [lo + r len/world, lo + (r+1) len/world), at lo/world in its shard. */
enum { SG_COPY = 0, SG_MASTER = 1 };
typedef struct ddp_shard_group {
  int first, last;
  int form;
  int unit;           /* the bucket or FSDP unit it was split from (prefetch counts these) */
  int dtype;          /* the compute-side dtype of its parameters */
  int64_t lo, len;
  int64_t form_lo;    /* offset among the groups of its form (zero1/2's full parameter tensors) */
  int32_t params;     /* compute-side parameters: zero1/2 a persistent view, zero3 the forward's gather */
  int32_t params_bwd; /* zero3 with reshard_after_forward: the backward's gather, else -1 */
  int32_t grads;      /* zero2/3: the group's full gradients (an activation), else -1 */
  int32_t gather32, gather32_bwd; /* zero3, gather_dtype fp32 under bf16: the fp32 gathers cast into params */
} ddp_shard_group;

/* A pipeline stage's own flat tensors (stages.c); -1 when absent. */
typedef struct ddp_stage_flat {
  int32_t params, copies, grads, m, v;
  int64_t n;
} ddp_stage_flat;

typedef struct ddp_layout {
  int world;
  int64_t nflat;          /* elements of the flat tensors (padded to world * DDP_FLAT_ALIGN) */
  int64_t used;           /* elements up to the end of the last unit (before the padding) */
  int32_t flat_params, flat_copies, flat_grads, flat_m, flat_v;
  int64_t state_elems;    /* elements of m and v per rank */
  int *order;             /* trainable unit indices in flat order */
  int norder;
  /* ownership for optimizer sharding: rank r updates flat elements [own_lo[r], own_hi[r]) */
  int64_t *own_lo, *own_hi;
  ddp_layout_bucket *buckets; /* one bucket over the whole order unless the sync is bucketed */
  int nbuckets;
  int32_t sumsq_partials; /* f32 [P] in IO, or -1 */
  int tp_slice_tables;    /* ZeRO x tensor parallelism: gradient-norm tables per group (else 1) */
  int64_t sumsq_p;
  int32_t workspace;
  /* ZeRO levels (shard.c): the groups and the rank's shard tensors (-1 when absent) */
  bool zero;
  ddp_shard_group *groups;
  int ngroups;
  int32_t shard_master, shard_grads, shard_copy;
  int32_t *peer_received; /* nccl.all_reduce = "peer_copy": per bucket, the other ranks' copies of it
                           * (sync.peer_received.bucket<k>), or NULL */
  int32_t a2a_received; /* the all-to-all reductions' receive buffer (zero.received: nccl.reduce_scatter =
                         * "alltoall"; sync.received: nccl.all_reduce = "alltoall"), or -1 */
  /* pipelines (stages.c) */
  bool pipe;
  int nchunks;
  int *chunk_of_layer;        /* [layers] */
  int32_t *instr_chunk;       /* [builder step length]: the chunk of each instruction, -1: a phase marker */
  int64_t split[64];          /* layers per chunk */
  int *stage_of_unit;         /* [units] */
  ddp_stage_flat *stage_flat; /* [stages] */
} ddp_layout;

int ddp_layout_build(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap);
/* Tensor t becomes a view of `base` at byte_off, in base's arena. */
void ddp_layout_rebase(ddp_builder *b, int32_t t, int32_t base, uint64_t byte_off);
void ddp_layout_free(ddp_layout *lay);

/* The ZeRO layout (shard.c): groups, offsets, shard tensors, units as views of the groups' tensors; then,
 * once the moments exist, the state-dict parameters as shape-only tensors described by pieces. */
int ddp_layout_shard(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap);
void ddp_layout_shard_pieces(ddp_builder *b, ddp_layout *lay);

/* The pipeline layout (stages.c): the split into chunks, each instruction's chunk, each unit's stage, the
 * stages' flat tensors and the parameters' pieces. */
int ddp_layout_pipeline(ddp_builder *b, ddp_layout *lay, char *err, size_t errcap);

/* Tensor parallelism (tensor.c): the split state-dict tensors as shape-only tensors described by each
 * tensor rank's pieces (after the optimizer state exists); the runs of the flat order of split or whole
 * units (returns their count; lo/hi/split filled when given). */
void ddp_layout_tensor_pieces(ddp_builder *b, ddp_layout *lay);
/* A tensor rank's local elements [a, b) of parameter pp (in its local order) as at most 3 segments of the
 * whole parameter: `n` local elements from local offset `at`, holding whole-parameter elements from `first`
 * in `runs` runs of n / runs elements, `stride` apart (runs 1: contiguous). A row-parallel weight's local
 * range cut mid-row gives a partial first and last row around the whole rows. Returns the count. */
typedef struct ddp_tp_seg {
  int64_t at, n, first, runs, stride;
} ddp_tp_seg;
int ddp_tp_segments(const ddp_model_param *pp, int T, int t, int64_t a, int64_t b, ddp_tp_seg seg[3]);
int ddp_layout_tp_runs(const ddp_builder *b, const ddp_layout *lay, int64_t *lo, int64_t *hi, bool *split);
/* ... the runs inside data rank r's slice of ZeRO group g (flat elements) */
int ddp_layout_tp_slice_runs(const ddp_builder *b, const ddp_layout *lay, int g, int r, int64_t *lo, int64_t *hi,
                             bool *split);
/* ... the runs of one pipeline stage's units (offsets in the stage's flat; stage -1: every unit) */
int ddp_layout_tp_stage_runs(const ddp_builder *b, const ddp_layout *lay, int stage, int64_t *lo, int64_t *hi,
                             bool *split);
/* Unit u's flat elements inside a rank's slice [slo, shi): [*lo, *hi); false when none. */
static inline bool ddp_unit_in_slice(const ddp_unit *u, int64_t slo, int64_t shi, int64_t *lo, int64_t *hi) {
  *lo = u->flat_offset > slo ? u->flat_offset : slo;
  *hi = u->flat_offset + u->numel < shi ? u->flat_offset + u->numel : shi;
  return *hi > *lo;
}
/* Tensor `id` (1-D, split parameter pp's local elements on tensor rank t) as that tensor rank's piece of pp,
 * held on world rank `rank` (rows: one range; columns: a run of C/T per row). */
void ddp_layout_tp_piece(ddp_builder *b, int32_t id, const ddp_model_param *pp, const char *state_name, int t,
                         int rank);
/* Split parameter pp's state-dict tensor takes its whole shape [rows, cols] (not this tensor rank's). */
void ddp_layout_whole_shape(ddp_builder *b, const ddp_model_param *pp);
/* Optimizer ownership (ownership.c): fills own_lo/own_hi and state_elems. */
void ddp_layout_ownership(const ddp_builder *b, ddp_layout *lay);

/* Bucket assignment (bucketed sync): fills bucket_of[k] for the trainable units order[0..n) given in
 * gradient-ready order: by size (bucket_mb, a unit larger than the cap gets a bucket of its own), or by
 * the schedule's Lua policy. Returns the number of buckets, or -1 with an error. */
int ddp_layout_assign_buckets(ddp_builder *b, const int *order, int n, int *bucket_of, char *err, size_t errcap);

/* The plan's bucket table (bucketed sync, after the memory planner has placed the gradient arena). */
void ddp_layout_record_buckets(ddp_plan *p, const ddp_builder *b, const ddp_layout *lay);
#endif

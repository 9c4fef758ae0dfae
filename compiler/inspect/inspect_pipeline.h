/* compiler/inspect/inspect_pipeline.h: `ddpc inspect`'s pipeline section (inspect_pipeline.c). */
#ifndef DDP_INSPECT_PIPELINE_H
#define DDP_INSPECT_PIPELINE_H
#include "plan.h"
#include <jansson.h>
#include <stdio.h>

/* What a pipeline plan's programs say: per chunk its rank, layers and FLOPs per microbatch; per rank its
 * bytes and transfers; the schedule's bubble formula. */
typedef struct ddp_pipe_chunk {
  int rank;
  int64_t first_layer, last_layer; /* -1 when the chunk holds only the embedding or the head */
  double flops;                    /* GEMM FLOPs of one microbatch, forward and backward */
  bool embedding, head;
} ddp_pipe_chunk;

typedef struct ddp_pipe_info {
  int stages, virtual_stages, microbatches, schedule, nchunks;
  ddp_pipe_chunk *chunks;
  double bubble; /* the schedule's formula */
  const char *formula;
} ddp_pipe_info;

int ddp_pipe_analyse(const ddp_plan *p, ddp_pipe_info *pi); /* 0: not a pipeline plan */
void ddp_pipe_info_free(ddp_pipe_info *pi);
void ddp_insp_pipeline(FILE *o, const ddp_plan *p);                 /* "== pipeline ==" */
json_t *ddp_insp_pipeline_json(const ddp_plan *p, int *bad);        /* null when not a pipeline */
#endif

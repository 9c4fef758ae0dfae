/* tests/cuda_exec_util.c: see cuda_exec_util.h. */
#include "cuda_exec_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cxt_failures;

ddp_plan *cxt_plan_new(int world, uint32_t nstreams) {
  ddp_plan *p = ddp_plan_new();
  if (!p) return NULL;
  p->meta.world = world;
  p->meta.arch = strdup("sm_90a");
  p->meta.act_dtype = DT_F32;
  p->meta.grad_dtype = DT_F32;
  p->nstreams = nstreams;
  p->ranks = calloc((size_t)world, sizeof *p->ranks);
  return p;
}

int32_t cxt_tensor(ddp_plan *p, const char *name, int dt, int arena, int64_t rows, int64_t cols) {
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)name;
  t.dtype = (uint8_t)dt;
  t.arena = (uint8_t)arena;
  t.ndim = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.base = -1;
  t.param = -1;
  t.first_use = t.last_use = -1;
  t.flags = TF_PERSISTENT;
  t.bytes = (uint64_t)(rows * cols) * ddp_dtype_size(dt);
  uint64_t at = (p->ranks[0].arena_bytes[arena] + DDP_ALIGN - 1) / DDP_ALIGN * DDP_ALIGN;
  t.offset = at;
  for (int64_t r = 0; r < p->meta.world; r++) p->ranks[r].arena_bytes[arena] = at + t.bytes;
  return ddp_plan_add_tensor(p, &t);
}

ddp_bufref cxt_ref(const ddp_plan *p, int32_t t, uint64_t view) {
  ddp_bufref b = {t, p->tensors[t].arena, view, p->tensors[t].offset + view};
  return b;
}

ddp_instr *cxt_push(ddp_plan *p, int rank, int init, const ddp_instr *in) {
  return ddp_program_push(init ? &p->ranks[rank].init : &p->ranks[rank].step, in);
}

int cxt_one_line(const char *s) { return s && *s && !strchr(s, '\n'); }

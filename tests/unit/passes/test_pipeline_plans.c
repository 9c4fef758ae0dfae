/* tests/unit/passes/test_pipeline_plans.c: the pipeline compiler (compiler/layout/stages.c,
 * compiler/passes/pipeline.c) on the tiny transformer and the toy MLP, every schedule, 2-4 stages: the plan
 * verifies (the p2p simulation included), passes the reader's checks after a write/read round trip, each
 * rank's arenas hold only its stage, 1F1B's activation arena on the first stage is smaller than GPipe's, and
 * the per-stage memory is printed. Broken copies (a send moved after the receives that need it: deadlock;
 * two sends of equal size swapped) are refused with a line naming ranks and instructions.
 * `test_pipeline_plans DIR` keeps the plans in DIR (for ddpc inspect). */
#include "check.h"
#include "compile.h"
#include "schedule.h"
#include "verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ddp_plan *compile_pipe(const char *sched, int stages, int m, int pipe, int virt, char *err, size_t errcap) {
  char path[2048];
  snprintf(path, sizeof path, "%s/schedules/%s.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".", sched);
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, errcap);
  if (!s) return NULL;
  s->stages = stages;
  s->replicas = 1;
  s->ranks = stages;
  s->microbatches = m;
  s->pipe_schedule = pipe;
  s->virtual_stages = virt;
  s->sync = SYNC_NONE;
  s->shard = SHARD_NONE;
  s->global_batch = 8;
  if (virt > 1) s->layers = 4; /* 2 stages x 2 chunks */
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, errcap);
  ddp_schedule_free(s);
  return p;
}

static uint64_t total(const ddp_plan *p, int r) {
  uint64_t t = 0;
  for (int a = 0; a < ARENA_COUNT; a++) t += p->ranks[r].arena_bytes[a];
  return t;
}

int main(int argc, char **argv) {
  char err[4096];
  const char *dir = argc > 1 ? argv[1] : NULL; /* keep the plans there (for inspect) */
  static const struct { const char *sched; int stages, m, pipe, virt; } cases[] = {
      {"tiny_ddp", 2, 1, PIPE_SEQUENTIAL, 1}, {"tiny_ddp", 2, 4, PIPE_GPIPE, 1}, {"tiny_ddp", 2, 4, PIPE_1F1B, 1},
      {"tiny_ddp", 2, 4, PIPE_INTERLEAVED, 2}, {"tiny_ddp", 2, 4, PIPE_ZERO_BUBBLE, 1}, {"toy_ddp", 3, 4, PIPE_1F1B, 1}, {"toy_ddp", 3, 2, PIPE_GPIPE, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ddp_plan *p = compile_pipe(cases[i].sched, cases[i].stages, cases[i].m, cases[i].pipe, cases[i].virt, err, sizeof err);
    const char *nm = ddp_pipe_schedule_names[cases[i].pipe];
    if (!CHECK(p, "%s %s x%d: %s", cases[i].sched, nm, cases[i].stages, err)) continue;
    CHECK(ddp_verify(p, err, sizeof err) == 0, "%s %s: verify: %s", cases[i].sched, nm, err);
    char out[1024];
    snprintf(out, sizeof out, "%s/%s_%s_%d.bin", dir ? dir : "/tmp", cases[i].sched, nm, cases[i].stages);
    if (CHECK(ddp_plan_write(p, out, err, sizeof err) == 0, "write: %s", err)) {
      ddp_plan *q = ddp_plan_read(out, err, sizeof err);
      CHECK(q, "%s %s: the reader refuses the plan: %s", cases[i].sched, nm, err);
      if (q) ddp_plan_free(q);
      if (!dir) remove(out);
    }
    printf("%s %s %d stages %d microbatches:", cases[i].sched, nm, cases[i].stages, cases[i].m);
    for (int r = 0; r < p->meta.world; r++) printf(" rank %d %llu B (%u instr)", r, (unsigned long long)total(p, r), p->ranks[r].step.n);
    printf("\n");
    ddp_plan_free(p);
  }
  /* broken copies of the 2-stage 1F1B plan */
  ddp_plan *p = compile_pipe("tiny_ddp", 2, 4, PIPE_1F1B, 1, err, sizeof err);
  if (CHECK(p, "1f1b: %s", err)) {
    ddp_program *s0 = &p->ranks[0].step;
    ddp_instr *saved = malloc(sizeof(ddp_instr) * s0->n);
    memcpy(saved, s0->v, sizeof(ddp_instr) * s0->n);
    uint32_t n0 = s0->n, first_send = n0, k2 = n0;
    for (uint32_t k = 0; k < n0; k++)
      if (s0->v[k].opcode == I_SEND) {
        if (first_send == n0) first_send = k;
        else if (k2 == n0 && strstr(ddp_plan_string(p, s0->v[k].name), "mb1")) k2 = k;
      }
    if (CHECK(first_send < n0 && k2 < n0, "1f1b: rank 0 sends activations of microbatches 0 and 1")) {
      /* 1. rank 0's first receive (microbatch 0's gradient) moved before its first forward: the same
       *    messages in the same order, but rank 0 now waits for a gradient rank 1 cannot compute before
       *    rank 0's activations arrive */
      uint32_t kr = n0, kf = n0;
      for (uint32_t k = 0; k < n0; k++) {
        if (kr == n0 && s0->v[k].opcode == I_RECV) kr = k;
        if (kf == n0 && s0->v[k].opcode == I_RANGE_PUSH && s0->v[k].i[RANGE_PUSH_I_KIND] == RANGE_FORWARD) kf = k;
      }
      if (CHECK(kr < n0 && kf < kr, "rank 0 receives after its first forward")) {
        ddp_instr moved = s0->v[kr];
        memmove(&s0->v[kf + 1], &s0->v[kf], sizeof(ddp_instr) * (kr - kf));
        s0->v[kf] = moved;
        CHECK(ddp_verify(p, err, sizeof err) != 0 && strstr(err, "can deadlock") && strstr(err, "rank 0 at instruction"),
              "a receive before the send it depends on: %s", err);
      }
      printf("refused: %s\n", err);
      memcpy(s0->v, saved, sizeof(ddp_instr) * n0);
      /* 2. two sends of equal size swapped: microbatch 1's activations would land as microbatch 0's */
      ddp_instr t = s0->v[first_send];
      s0->v[first_send] = s0->v[k2];
      s0->v[k2] = t;
      CHECK(ddp_verify(p, err, sizeof err) != 0 && strstr(err, "not the same message"),
            "two sends swapped: %s", err);
      printf("refused: %s\n", err);
      memcpy(s0->v, saved, sizeof(ddp_instr) * n0);
      CHECK(ddp_verify(p, err, sizeof err) == 0, "restored: %s", err);
    }
    free(saved);
    ddp_plan_free(p);
  }
  return check_report("test_pipeline_plans");
}

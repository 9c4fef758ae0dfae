/* tests/unit/passes/test_p2p_slots.c: the pairing of pipeline messages as the CUDA executor's copy path
 * uses it (plan/p2p_slots.c), on compiled plans of every schedule (the tiny transformer; 2 stages, and 2
 * stages x 2 replicas; the toy MLP on 3 stages): for every message, the sender's remote flag is the
 * receiver's own AVAIL slot and the receiver's remote flag the sender's own DONE slot, the partners are a
 * SEND and a RECV naming each other with equal bytes, every slot is inside its rank's flags and no two ops
 * of a rank share one. A step with a SEND removed has a message without a partner: refused in one line. */
#include "check.h"
#include "compile.h"
#include "p2p_slots.h"
#include "schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ddp_plan *compile_pipe(const char *sched, int stages, int replicas, int m, int pipe, int virt, char *err,
                              size_t errcap) {
  char path[2048];
  snprintf(path, sizeof path, "%s/schedules/%s.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".", sched);
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, errcap);
  if (!s) return NULL;
  s->stages = stages;
  s->replicas = replicas;
  s->ranks = stages * replicas;
  s->microbatches = m;
  s->pipe_schedule = pipe;
  s->virtual_stages = virt;
  s->sync = replicas > 1 ? SYNC_BUCKETED : SYNC_NONE;
  if (replicas > 1 && s->bucket_mb <= 0) s->bucket_mb = 25;
  s->shard = SHARD_NONE;
  s->global_batch = 8 * replicas;
  if (virt > 1) s->layers = 4;
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, errcap);
  ddp_schedule_free(s);
  return p;
}

/* Checks every rank's slots against its partners'; returns the number of messages. */
static int check_plan(const ddp_plan *p, const char *what) {
  int W = (int)p->meta.world, messages = 0;
  ddp_p2p_slot **v = calloc((size_t)W, sizeof *v);
  uint32_t *n = calloc((size_t)W, sizeof *n), *ns = calloc((size_t)W, sizeof *ns);
  char err[1024];
  for (int r = 0; r < W; r++)
    if (!CHECK(ddp_p2p_slots(p, r, &v[r], &n[r], &ns[r], err, sizeof err) == 0, "%s rank %d: %s", what, r, err)) goto done;
  for (int r = 0; r < W; r++) {
    uint8_t *used = calloc(ns[r] + 1, 1);
    for (uint32_t k = 0; k < n[r]; k++) {
      const ddp_p2p_slot *s = &v[r][k];
      CHECK(s->local >= 1 && s->local < ns[r], "%s rank %d instr %u: local slot %u of %u", what, r, s->instr, s->local, ns[r]);
      if (s->local < ns[r]) {
        CHECK(!used[s->local], "%s rank %d: slot %u taken twice", what, r, s->local);
        used[s->local] = 1;
      }
      if (!s->bytes) continue;
      messages += s->send;
      const ddp_p2p_slot *q = NULL; /* the partner's entry */
      for (uint32_t j = 0; j < n[s->peer]; j++)
        if (v[s->peer][j].instr == s->peer_instr) q = &v[s->peer][j];
      if (!CHECK(q, "%s rank %d instr %u: partner instruction %u of rank %d is not a SEND/RECV", what, r, s->instr,
                 s->peer_instr, s->peer))
        continue;
      CHECK(q->send != s->send && q->peer == r && q->peer_instr == s->instr && q->bytes == s->bytes,
            "%s rank %d instr %u and rank %d instr %u do not name each other (%llu / %llu bytes)", what, r, s->instr,
            s->peer, q->instr, (unsigned long long)s->bytes, (unsigned long long)q->bytes);
      CHECK(s->remote == q->local, "%s rank %d instr %u sets rank %d's flag %u, which is instr %u's %u", what, r,
            s->instr, s->peer, s->remote, q->instr, q->local);
      CHECK(s->remote < ns[s->peer], "%s rank %d instr %u: remote slot %u of %u", what, r, s->instr, s->remote, ns[s->peer]);
    }
    free(used);
  }
done:
  for (int r = 0; r < W; r++) free(v[r]);
  free(v), free(n), free(ns);
  return messages;
}

int main(void) {
  char err[4096];
  static const struct { const char *sched; int stages, replicas, m, pipe, virt; } cases[] = {
      {"tiny_ddp", 2, 1, 1, PIPE_SEQUENTIAL, 1}, {"tiny_ddp", 2, 1, 4, PIPE_GPIPE, 1},
      {"tiny_ddp", 2, 1, 4, PIPE_1F1B, 1},       {"tiny_ddp", 2, 1, 4, PIPE_INTERLEAVED, 2},
      {"tiny_ddp", 2, 1, 4, PIPE_ZERO_BUBBLE, 1}, {"tiny_ddp", 2, 2, 4, PIPE_1F1B, 1},
      {"toy_ddp", 3, 1, 4, PIPE_1F1B, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char what[128];
    snprintf(what, sizeof what, "%s %s %dx%d m%d", cases[i].sched, ddp_pipe_schedule_names[cases[i].pipe],
             cases[i].stages, cases[i].replicas, cases[i].m);
    ddp_plan *p = compile_pipe(cases[i].sched, cases[i].stages, cases[i].replicas, cases[i].m, cases[i].pipe,
                               cases[i].virt, err, sizeof err);
    if (!CHECK(p, "%s: %s", what, err)) continue;
    int msgs = check_plan(p, what);
    CHECK(msgs > 0, "%s: no messages", what);
    printf("%s: %d messages paired\n", what, msgs);
    ddp_plan_free(p);
  }
  /* a SEND turned into a no-op timer: its receiver's message has no partner */
  ddp_plan *p = compile_pipe("tiny_ddp", 2, 1, 4, PIPE_1F1B, 1, err, sizeof err);
  if (CHECK(p, "1f1b: %s", err)) {
    ddp_program *s0 = &p->ranks[0].step;
    for (uint32_t k = 0; k < s0->n; k++)
      if (s0->v[k].opcode == I_SEND) {
        s0->v[k].opcode = I_RANGE_POP; /* any non-p2p opcode */
        break;
      }
    ddp_p2p_slot *v = NULL;
    uint32_t n = 0, ns = 0;
    int rc = ddp_p2p_slots(p, 1, &v, &n, &ns, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "has no partner") && !strchr(err, '\n'), "a lost SEND: rc %d, '%s'", rc, err);
    if (rc == 0) free(v);
    else printf("ok: %s\n", err);
    ddp_plan_free(p);
  }
  return check_report("test_p2p_slots");
}

/* tests/unit/passes/test_zero_plans.c: the ZeRO levels' plans (compiler/layout/shard.c, compiler/passes/zero.c)
 * on the tiny transformer, 2 ranks: their structure, the memory planner's residency bound, and the
 * verifier on deliberately broken copies.
 *  - zero3, one unit per block: at most prefetch + 1 units' gathered parameters are live at any point of
 *    the forward (prefetch 0, 1, 2), every all-gather of the forward precedes its unit's first use by
 *    exactly `prefetch` units, and the step reduce-scatters every group once;
 *  - the optimizer's compute waits on reduce-scatter events are needed (removing one is refused as a race:
 *    the update would read a gradient shard being written) unless the backward already waited for that
 *    reduce-scatter; so is the wait before a gathered unit's first use;
 *  - zero2: the gradient buffers are reused: at least one of the backward's waits for an earlier group's
 *    reduce-scatter guards memory a later group writes (removing it is refused);
 *  - rank 1 issuing two all-gathers in the other order, or a reduce-scatter of another size, is refused;
 *  - a balanced shard is refused when a rank would hold only padding. */
#include "check.h"
#include "compile.h"
#include "schedule.h"
#include "verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ddp_plan *compile_tiny(int shard, int ranks, int prefetch, bool reshard, char *err, size_t errcap) {
  char path[2048];
  snprintf(path, sizeof path, "%s/schedules/tiny_ddp.lua", getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".");
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, errcap);
  if (!s) return NULL;
  s->shard = shard;
  s->ranks = ranks;
  s->global_batch = 4 * ranks;
  s->prefetch_forward = s->prefetch_backward = prefetch;
  s->reshard_after_forward = reshard;
  if (shard == SHARD_ZERO3) s->bucket_mb = 0; /* one unit per block */
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, errcap);
  ddp_schedule_free(s);
  return p;
}

static ddp_program copy_program(const ddp_program *src) {
  ddp_program c = *src;
  c.v = malloc(sizeof(ddp_instr) * (src->n + 1));
  memcpy(c.v, src->v, sizeof(ddp_instr) * src->n);
  c.cap = src->n;
  return c;
}

static bool refused(const ddp_plan *p, char *err, size_t errcap) { return ddp_verify(p, err, errcap) != 0; }

/* The largest number of unit<g>.gathered tensors live at one step-program index before the forward's end. */
static int max_resident_forward(const ddp_plan *p) {
  const ddp_program *st = &p->ranks[0].step;
  int32_t fe = (int32_t)st->n;
  for (uint32_t k = 0; k < st->n; k++)
    if (st->v[k].opcode == I_TIMER && st->v[k].i[TIMER_I_ROLE] == TIMER_FORWARD_END) {
      fe = (int32_t)k;
      break;
    }
  int best = 0;
  for (int32_t k = 0; k < fe; k++) {
    int live = 0;
    for (uint32_t t = 0; t < p->ntensors; t++) {
      const ddp_tensor *x = &p->tensors[t];
      const char *dot = strstr(x->name, ".gathered");
      if (x->base < 0 && !strncmp(x->name, "unit", 4) && dot && !strcmp(dot, ".gathered") && x->first_use >= 0 &&
          x->first_use <= k && k <= x->last_use)
        live++;
    }
    if (live > best) best = live;
  }
  return best;
}

static int count_op(const ddp_program *st, int opcode) {
  int n = 0;
  for (uint32_t k = 0; k < st->n; k++) n += st->v[k].opcode == opcode;
  return n;
}

/* The compute waits on events recorded right after a REDUCE_SCATTER (its COMM_END timer between). */
static int rs_waits(const ddp_program *st, uint32_t *at, int cap, bool optimizer_only) {
  int n = 0;
  bool in_opt = false;
  for (uint32_t k = 0; k < st->n; k++) {
    const ddp_instr *in = &st->v[k];
    if (in->opcode == I_TIMER && in->i[TIMER_I_ROLE] == TIMER_OPT_BEGIN) in_opt = true;
    if (in->opcode != I_EVENT_WAIT || in->stream != STREAM_COMPUTE || (optimizer_only && !in_opt) ||
        (!optimizer_only && in_opt))
      continue;
    for (uint32_t j = 0; j < k; j++)
      if (st->v[j].opcode == I_EVENT_RECORD && st->v[j].i[EVENT_I_EVENT] == in->i[EVENT_I_EVENT] && j >= 2 &&
          st->v[j - 2].opcode == I_REDUCE_SCATTER && n < cap)
        at[n++] = k;
  }
  return n;
}

static void remove_instr(ddp_program *prog, uint32_t k) {
  memmove(&prog->v[k], &prog->v[k + 1], sizeof(ddp_instr) * (prog->n - k - 1));
  prog->n--;
}

int main(void) {
  char err[4096];
  /* residency and prefetch order */
  for (int prefetch = 0; prefetch <= 2; prefetch++) {
    ddp_plan *p = compile_tiny(SHARD_ZERO3, 2, prefetch, true, err, sizeof err);
    if (!CHECK(p, "zero3 prefetch %d: %s", prefetch, err)) continue;
    int live = max_resident_forward(p);
    CHECK(live == prefetch + 1, "zero3 prefetch %d: %d units' gathered parameters live at once in the forward, "
          "want %d", prefetch, live, prefetch + 1);
    int rs = count_op(&p->ranks[0].step, I_REDUCE_SCATTER);
    CHECK(rs == (int)p->nbuckets, "zero3: %d reduce-scatters for %u groups", rs, p->nbuckets);
    printf("zero3 prefetch %d: %d units resident at most in the forward, %d all-gathers, %d reduce-scatters\n",
           prefetch, live, count_op(&p->ranks[0].step, I_ALL_GATHER), rs);
    ddp_plan_free(p);
  }

  /* broken zero3 plans */
  ddp_plan *p = compile_tiny(SHARD_ZERO3, 2, 1, true, err, sizeof err);
  if (!CHECK(p, "zero3: %s", err)) return check_report("test_zero_plans");
  CHECK(ddp_verify(p, err, sizeof err) == 0, "zero3: the correct plan was refused: %s", err);
  ddp_program *st = &p->ranks[0].step, saved = copy_program(st);
  uint32_t at[256];
  int n = rs_waits(st, at, 256, true);
  CHECK(n == (int)p->nbuckets, "zero3: %d optimizer waits on reduce-scatters for %u groups", n, p->nbuckets);
  int needed = 0;
  for (int i = 0; i < n; i++) {
    remove_instr(st, at[i]);
    needed += refused(p, err, sizeof err);
    ddp_program_free(st);
    *st = copy_program(&saved);
  }
  /* a group whose reduce-scatter the backward already waited for (to reuse its gradient memory) needs no
   * second wait; every other one does, the last group's above all */
  int backward_waits = rs_waits(st, at + 128, 128, false);
  CHECK(needed >= n - backward_waits && needed >= 1, "zero3: only %d of the %d optimizer waits on reduce-scatters "
        "are needed (%d were waited for in the backward)", needed, n, backward_waits);
  printf("zero3: %d of %d optimizer waits on reduce-scatters are needed (%d waited for in the backward)\n", needed, n,
         backward_waits);
  /* the wait before the first gathered unit's first use: the first compute wait of the step */
  for (uint32_t k = 0; k < st->n; k++)
    if (st->v[k].opcode == I_EVENT_WAIT && st->v[k].stream == STREAM_COMPUTE) {
      remove_instr(st, k);
      CHECK(refused(p, err, sizeof err) && strstr(err, "unordered access across streams"),
            "zero3: the compute stream reading a unit before its all-gather finished was accepted (%s)", err);
      break;
    }
  ddp_program_free(st);
  *st = copy_program(&saved);
  /* rank 1: two all-gathers swapped; a reduce-scatter of another size */
  ddp_program *st1 = &p->ranks[1].step, saved1 = copy_program(st1);
  int first = -1;
  for (uint32_t k = 0; k < st1->n; k++)
    if (st1->v[k].opcode == I_ALL_GATHER) {
      if (first < 0) {
        first = (int)k;
        continue;
      }
      ddp_instr t = st1->v[first];
      st1->v[first] = st1->v[k];
      st1->v[k] = t;
      break;
    }
  CHECK(refused(p, err, sizeof err) && strstr(err, "differs between rank 0"), "zero3: all-gathers in another order "
        "on rank 1 accepted (%s)", err);
  ddp_program_free(st1);
  *st1 = copy_program(&saved1);
  for (uint32_t k = 0; k < st1->n; k++)
    if (st1->v[k].opcode == I_REDUCE_SCATTER) {
      st1->v[k].i[COLL_I_COUNT] -= 1;
      break;
    }
  CHECK(refused(p, err, sizeof err) && strstr(err, "differs between rank 0"),
        "zero3: a reduce-scatter of another size on rank 1 accepted (%s)", err);
  ddp_program_free(st1);
  *st1 = saved1;
  ddp_program_free(&saved);
  ddp_plan_free(p);

  /* zero2: the gradient buffers are reused behind the backward's waits */
  p = compile_tiny(SHARD_ZERO2, 2, 1, true, err, sizeof err);
  if (CHECK(p, "zero2: %s", err)) {
    st = &p->ranks[0].step;
    saved = copy_program(st);
    n = rs_waits(st, at, 256, false);
    needed = 0;
    for (int i = 0; i < n; i++) {
      remove_instr(st, at[i]);
      needed += refused(p, err, sizeof err);
      ddp_program_free(st);
      *st = copy_program(&saved);
    }
    CHECK(n > 0 && needed > 0, "zero2: %d backward waits on reduce-scatters, %d needed: no gradient buffer is reused",
          n, needed);
    printf("zero2: %d of %d backward waits on earlier reduce-scatters guard reused gradient memory\n", needed, n);
    ddp_program_free(&saved);
    ddp_plan_free(p);
  }

  /* a shard of only padding */
  p = compile_tiny(SHARD_ZERO1, 1024, 1, true, err, sizeof err);
  CHECK(!p && strstr(err, "cannot be balanced"), "1024 ranks of the tiny model: %s", p ? "accepted" : err);
  if (p) ddp_plan_free(p);
  else printf("refused: %s\n", err);
  return check_report("test_zero_plans");
}

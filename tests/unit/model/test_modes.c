/* tests/unit/model/test_modes.c: the schedule's `mode` on the reference executor. For schedules/tiny.lua (fp32 and
 * bf16), the toy MLP on 1 rank (toy.lua) and on 2 ranks (toy_ddp.lua), and a small MLP on 2 ranks under
 * ZeRO-1, optimizer sharding and optimizer overlap, the plans compiled with mode "forward" and
 * "forward_backward" against the same schedule in mode "train" (same seed and data):
 *   - the step-1 loss of every rank equals the train plan's bit for bit, the parameters (fp32 masters and
 *     bf16 copies, as the init program wrote them) equal the train plan's after init and never change;
 *     forward and forward_backward give the same losses at every step (and, where every step sees the
 *     same rows, the same loss at every step);
 *   - forward: GRAD and OPT arenas of 0 bytes, no gradient or optimizer tensors, less activation memory
 *     and fewer total bytes than train, no attention lse, no collectives in any program, timing points
 *     STEP_BEGIN, FORWARD_END, STEP_END only (ddp_step_times reports backward and optimizer as 0);
 *   - forward_backward: an OPT arena of 0 bytes, the train plan's gradients and gradient collectives,
 *     BACKWARD_END but no OPT_BEGIN, no optimizer kernels. */
#include "check.h"
#include "compile.h"
#include "exec_ref.h"
#include "schedule.h"
#include "test_files.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { STEPS = 3, MAXR = 2 };

typedef struct run_out {
  float loss[MAXR][STEPS];
  uint8_t *before[MAXR], *after[MAXR]; /* parameters and their copies (snapshot()), after init and at the end */
  uint64_t nbytes;
} run_out;

typedef struct rank_job {
  const ddp_plan *p;
  ddp_ref_comm *comm;
  ddp_data *data;
  run_out *out;
  int rank, rc;
  char err[1024];
} rank_job;

/* Every state-dict parameter and every parameter's GEMM copy (bf16), in tensor order (model order in every
 * mode; the flat layout itself follows the gradient-ready order, which a forward plan does not have). */
static bool snapshotted(const ddp_tensor *t) {
  if (t->flags & TF_SHAPE_ONLY) return false; /* sharded: its pieces (TF_PIECE, this rank's) hold the values */
  if ((t->flags & TF_PIECE) && !(t->flags & TF_PARAM)) return false;
  return ((t->flags & TF_PARAM) && t->state_name) || ((t->flags & TF_PARAM_COPY) && t->param >= 0);
}

static uint8_t *snapshot(ddp_exec *x, uint64_t *n, char *err, size_t errcap) {
  const ddp_plan *p = x->plan;
  uint64_t total = 0;
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (snapshotted(&p->tensors[t])) total += p->tensors[t].bytes;
  uint8_t *buf = malloc(total + 1), *at = buf;
  for (uint32_t t = 0; t < p->ntensors; t++)
    if (snapshotted(&p->tensors[t])) {
      if (x->v->read(x, (int32_t)t, at, err, errcap)) return free(buf), NULL;
      at += p->tensors[t].bytes;
    }
  *n = total;
  return buf;
}

static void *rank_main(void *arg) {
  rank_job *j = arg;
  j->rc = -1;
  ddp_exec *x = ddp_exec_ref_new(j->p, j->rank, j->comm, j->data, (uint64_t)j->p->meta.seed, j->err, sizeof j->err);
  if (!x) {
    ddp_ref_comm_abort(j->comm, j->rank);
    return NULL;
  }
  uint64_t n = 0;
  if (x->v->run(x, &j->p->ranks[j->rank].init, 0, j->err, sizeof j->err)) goto out;
  if (!(j->out->before[j->rank] = snapshot(x, &n, j->err, sizeof j->err))) goto out;
  for (int s = 0; s < STEPS; s++)
    if (x->v->run(x, &j->p->ranks[j->rank].step, s, j->err, sizeof j->err) ||
        x->v->read(x, (int32_t)j->p->meta.loss_tensor, &j->out->loss[j->rank][s], j->err, sizeof j->err))
      goto out;
  if (!(j->out->after[j->rank] = snapshot(x, &n, j->err, sizeof j->err))) goto out;
  j->out->nbytes = n;
  j->rc = 0;
out:
  if (j->rc) ddp_ref_comm_abort(j->comm, j->rank);
  x->v->destroy(x);
  return NULL;
}

/* Runs STEPS steps on every rank (threads, as ddprun --device ref does). */
static int run_plan(const ddp_plan *p, run_out *out) {
  char err[1024];
  int W = (int)p->meta.world;
  ddp_data *d = ddp_data_open(p, (uint64_t)p->meta.data_seed, err, sizeof err);
  if (!d) return fprintf(stderr, "FAIL: data: %s\n", err), -1;
  ddp_ref_comm *comm = ddp_ref_comm_new(W);
  rank_job jobs[MAXR];
  pthread_t th[MAXR];
  for (int r = 0; r < W; r++) {
    jobs[r] = (rank_job){.p = p, .comm = comm, .data = d, .out = out, .rank = r};
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  int rc = 0;
  for (int r = 0; r < W; r++) {
    pthread_join(th[r], NULL);
    if (jobs[r].rc) rc = -1, fprintf(stderr, "FAIL: rank %d: %s\n", r, jobs[r].err);
  }
  ddp_ref_comm_free(comm);
  ddp_data_close(d);
  return rc;
}

static void free_out(run_out *o) {
  for (int r = 0; r < MAXR; r++) free(o->before[r]), free(o->after[r]);
}

static ddp_plan *compile_mode(const char *path, const char *const *sets, int nsets, const char *mode) {
  const char *all[8];
  char modeset[64];
  snprintf(modeset, sizeof modeset, "mode=%s", mode);
  for (int i = 0; i < nsets; i++) all[i] = sets[i];
  all[nsets] = modeset;
  char err[2048];
  ddp_schedule *s = ddp_schedule_load(path, all, nsets + 1, err, sizeof err);
  if (!s) return fprintf(stderr, "FAIL: %s\n", err), NULL;
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  ddp_schedule_free(s);
  if (!p) fprintf(stderr, "FAIL: %s\n", err);
  return p;
}

static uint64_t total_bytes(const ddp_plan *p) {
  uint64_t t = 0;
  for (int a = 0; a < ARENA_COUNT; a++) t += p->ranks[0].arena_bytes[a];
  return t;
}

static bool has_timer(const ddp_program *prog, int role) {
  for (uint32_t k = 0; k < prog->n; k++)
    if (prog->v[k].opcode == I_TIMER && prog->v[k].i[1] == role) return true;
  return false;
}

/* Collectives of a program; with before_opt, only those before the optimizer's timing point (the
 * gradient sync, not the sharded optimizers' exchange of parameters). */
static int count_collectives(const ddp_program *prog, bool before_opt) {
  int n = 0;
  for (uint32_t k = 0; k < prog->n; k++) {
    int op = prog->v[k].opcode;
    if (before_opt && op == I_TIMER && prog->v[k].i[1] == TIMER_OPT_BEGIN) break;
    n += op == I_ALL_REDUCE || op == I_REDUCE_SCATTER || op == I_ALL_GATHER || op == I_BROADCAST || op == I_SEND ||
         op == I_RECV;
  }
  return n;
}

static bool has_optimizer_op(const ddp_program *prog) {
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode == I_KERNEL &&
        (in->op == OP_ADAMW || in->op == OP_SGD || in->op == OP_OPT_SCALARS || in->op == OP_SUMSQ))
      return true;
  }
  return false;
}

static bool has_tensor(const ddp_plan *p, uint32_t flags, const char *suffix) {
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const char *nm = p->tensors[t].name;
    size_t n = strlen(nm), m = suffix ? strlen(suffix) : 0;
    if ((flags && (p->tensors[t].flags & flags)) || (suffix && n >= m && !strcmp(nm + n - m, suffix))) return true;
  }
  return false;
}

/* The plan's static shape in each mode (see the top comment). */
static void check_structure(const char *name, const ddp_plan *tr, const ddp_plan *fw, const ddp_plan *fb) {
  const uint64_t *ta = tr->ranks[0].arena_bytes;
  printf("%s: train %llu bytes (grads %llu, optimizer %llu, activations %llu), forward %llu (activations %llu), "
         "forward_backward %llu\n",
         name, (unsigned long long)total_bytes(tr), (unsigned long long)ta[ARENA_GRAD],
         (unsigned long long)ta[ARENA_OPT], (unsigned long long)ta[ARENA_ACT], (unsigned long long)total_bytes(fw),
         (unsigned long long)fw->ranks[0].arena_bytes[ARENA_ACT], (unsigned long long)total_bytes(fb));
  CHECK(tr->meta.mode == MODE_TRAIN && fw->meta.mode == MODE_FORWARD &&
        fb->meta.mode == MODE_FORWARD_BACKWARD, "meta mode");
  for (int64_t r = 0; r < fw->meta.world; r++) {
    const ddp_rank_plan *f = &fw->ranks[r], *g = &fb->ranks[r], *t = &tr->ranks[r];
    CHECK(f->arena_bytes[ARENA_GRAD] == 0, "forward: no gradient arena");
    CHECK(f->arena_bytes[ARENA_OPT] == 0, "forward: no optimizer arena");
    CHECK(f->arena_bytes[ARENA_ACT] < t->arena_bytes[ARENA_ACT], "forward: less activation memory");
    CHECK(g->arena_bytes[ARENA_OPT] == 0, "forward_backward: no optimizer arena");
    CHECK(g->arena_bytes[ARENA_GRAD] == t->arena_bytes[ARENA_GRAD] &&
          g->arena_bytes[ARENA_GRAD] > 0, "forward_backward: the train plan's gradients");
    CHECK(count_collectives(&f->init, false) == 0, "forward: no collectives in init");
    CHECK(count_collectives(&f->step, false) == 0, "forward: no collectives in the step");
    CHECK(count_collectives(&g->step, false) == count_collectives(&t->step, true),
          "forward_backward: the train plan's gradient sync");
    CHECK(count_collectives(&g->init, false) ==
          count_collectives(&t->init, false), "forward_backward: the train plan's init");
    if (fw->meta.world > 1) CHECK(count_collectives(&g->step, false) > 0, "multi-rank: gradient sync");
    CHECK(!has_optimizer_op(&f->step), "forward: no optimizer");
    CHECK(!has_optimizer_op(&g->step), "forward_backward: no optimizer");
    CHECK(has_optimizer_op(&t->step), "train: an optimizer");
    CHECK(has_timer(&f->step, TIMER_STEP_BEGIN) && has_timer(&f->step, TIMER_FORWARD_END) &&
          has_timer(&f->step, TIMER_STEP_END) && !has_timer(&f->step, TIMER_BACKWARD_END) &&
          !has_timer(&f->step, TIMER_OPT_BEGIN), "forward timers");
    CHECK(has_timer(&g->step, TIMER_BACKWARD_END) && !has_timer(&g->step, TIMER_OPT_BEGIN) &&
          has_timer(&g->step, TIMER_STEP_END), "forward_backward timers");
    CHECK(has_timer(&t->step, TIMER_BACKWARD_END) && has_timer(&t->step, TIMER_OPT_BEGIN), "train timers");
  }
  CHECK(total_bytes(fw) < total_bytes(tr), "forward: fewer bytes in all");
  CHECK(tr->ranks[0].arena_bytes[ARENA_OPT]
        ? total_bytes(fb) < total_bytes(tr)
        : total_bytes(fb) == total_bytes(tr), "forward_backward: no more bytes than train");
  CHECK(!has_tensor(fw, TF_GRAD | TF_OPT_M | TF_OPT_V, NULL), "forward: no gradient or optimizer tensors");
  CHECK(!has_tensor(fb, TF_OPT_M | TF_OPT_V, NULL), "forward_backward: no optimizer tensors");
  CHECK(!has_tensor(fw, 0, ".lse"), "forward: no attention lse");
  CHECK(fw->meta.flops_per_step < fb->meta.flops_per_step, "forward: FLOPs of the forward only");

  /* the metrics of a forward step: the phases it lacks are 0 */
  double *ms = calloc(fw->ranks[0].ntimers + 1, sizeof(double));
  for (uint32_t k = 0; k < fw->ranks[0].ntimers; k++) ms[k] = 2.0 * k;
  ddp_step_times st;
  ddp_step_times_from_timers(fw, 0, ms, &st);
  CHECK(st.step_ms > 0 && st.forward_ms > 0 && st.backward_ms == 0 && st.optimizer_ms == 0 &&
        st.comm_ms == 0 && st.exposed_comm_ms == 0 && st.compute_ms == st.step_ms, "forward step times");
  free(ms);
}

static void one_case(const char *name, const char *path, const char *const *sets, int nsets, bool same_rows) {
  ddp_plan *tr = compile_mode(path, sets, nsets, "train"), *fw = compile_mode(path, sets, nsets, "forward"),
           *fb = compile_mode(path, sets, nsets, "forward_backward");
  run_out ot = {0}, of = {0}, ob = {0};
  if (!CHECK(tr && fw && fb, "%s: the three modes compile", name)) goto done;
  check_structure(name, tr, fw, fb);
  if (!CHECK(!run_plan(tr, &ot) && !run_plan(fw, &of) && !run_plan(fb, &ob), "%s: the three plans run", name))
    goto done;
  /* A sharded train plan (zero1/zero2) keeps its forward plan unsharded: their parameters are laid out
   * differently, so only the losses compare them; train and forward_backward shard alike. */
  bool sharded = false;
  for (uint32_t t = 0; t < tr->ntensors; t++) sharded |= (tr->tensors[t].flags & TF_PIECE) != 0;
  CHECK((sharded || ot.nbytes == of.nbytes) && ot.nbytes == ob.nbytes, "parameter bytes agree");
  for (int64_t r = 0; r < tr->meta.world; r++) {
    printf("%s rank %lld: step-1 loss train %.9g forward %.9g forward_backward %.9g; forward steps", name,
           (long long)r, (double)ot.loss[r][0], (double)of.loss[r][0], (double)ob.loss[r][0]);
    for (int s = 0; s < STEPS; s++) printf(" %.9g", (double)of.loss[r][s]);
    printf("\n");
    CHECK(!memcmp(&of.loss[r][0], &ot.loss[r][0], sizeof(float)), "forward step-1 loss == train's, bitwise");
    CHECK(!memcmp(&ob.loss[r][0], &ot.loss[r][0], sizeof(float)), "forward_backward step-1 loss == train's");
    CHECK(!memcmp(of.loss[r], ob.loss[r], sizeof of.loss[r]), "forward == forward_backward at every step");
    if (same_rows)
      for (int s = 1; s < STEPS; s++)
        CHECK(!memcmp(&of.loss[r][s], &of.loss[r][0], sizeof(float)), "forward loss equal across steps");
    CHECK(sharded || !memcmp(of.before[r], ot.before[r], ot.nbytes), "init: forward parameters (and copies) == train's");
    CHECK(!memcmp(ob.before[r], ot.before[r], ot.nbytes), "init: forward_backward parameters == train's");
    CHECK(!memcmp(of.after[r], of.before[r], of.nbytes), "forward: parameters unchanged");
    CHECK(!memcmp(ob.after[r], ob.before[r], ob.nbytes), "forward_backward: parameters unchanged");
    CHECK(memcmp(ot.after[r], ot.before[r], ot.nbytes) != 0, "train: parameters changed");
  }
done:
  free_out(&ot), free_out(&of), free_out(&ob);
  ddp_plan_free(tr), ddp_plan_free(fw), ddp_plan_free(fb);
}

int main(void) {
  const char *src = getenv("DDP_SOURCE_DIR") ? getenv("DDP_SOURCE_DIR") : ".";
  char path[2048];
  snprintf(path, sizeof path, "%s/schedules/tiny.lua", src);
  one_case("tiny", path, NULL, 0, false);
  const char *bf16[] = {"precision=bf16"};
  one_case("tiny bf16", path, bf16, 1, false);
  /* FLOPs per step are the step's over all ranks / world: the same for one rank, one rank cutting the
   * batch into 4 microbatches, and 2 stages at half each (the builder counts one microbatch's) */
  snprintf(path, sizeof path, "%s/schedules/tiny_pipeline.lua", src);
  const char *one_stage[] = {"parallel.stages=1"};
  ddp_plan *p1 = compile_mode(path, one_stage, 1, "train"), *p2 = compile_mode(path, NULL, 0, "train");
  snprintf(path, sizeof path, "%s/schedules/tiny_ddp.lua", src);
  const char *one_rank[] = {"parallel.ranks=1"};
  ddp_plan *p0 = compile_mode(path, one_rank, 1, "train");
  if (p0 && p1 && p2) {
    CHECK(p0->meta.flops_per_step == p1->meta.flops_per_step, "4 microbatches on one stage: %g, one rank %g",
          p1->meta.flops_per_step, p0->meta.flops_per_step);
    CHECK(p2->meta.flops_per_step == p0->meta.flops_per_step / 2, "2 stages: %g, half of one rank's %g",
          p2->meta.flops_per_step, p0->meta.flops_per_step);
    /* and its communication is the stages' messages: stage 0 sends each microbatch's activations (2
     * sequences x context 32 x d_model 64, fp32) and receives their gradients: 4 x 2 x 16 KiB */
    CHECK(p2->meta.comm_bytes_per_step == 4.0 * 2 * (2 * 32 * 64 * 4), "2 stages: communication %g bytes",
          p2->meta.comm_bytes_per_step);
  }
  ddp_plan_free(p0), ddp_plan_free(p1), ddp_plan_free(p2);
  /* a pipeline's replicas share their stage's parameters, gradients and state, and no rank holds another
   * stage's: 2 stages x 2 replicas of the tiny model keep half the model's 460032 parameter bytes a rank,
   * as 2 stages alone do (every rank had held the whole model) */
  snprintf(path, sizeof path, "%s/schedules/tiny_pipeline.lua", src);
  const char *two_by_two[] = {"parallel.replicas=2"};
  ddp_plan *pr = compile_mode(path, two_by_two, 1, "train"), *ps = compile_mode(path, NULL, 0, "train");
  for (int r = 0; pr && ps && r < 4; r++)
    CHECK(pr->ranks[r].arena_bytes[ARENA_PARAM] == ps->ranks[r % 2].arena_bytes[ARENA_PARAM] &&
              pr->ranks[r].arena_bytes[ARENA_OPT] == ps->ranks[r % 2].arena_bytes[ARENA_OPT] &&
              pr->ranks[r].arena_bytes[ARENA_PARAM] < 460032,
          "rank %d of 2 x 2: %llu parameter bytes, stage alone %llu", r,
          (unsigned long long)pr->ranks[r].arena_bytes[ARENA_PARAM], (unsigned long long)ps->ranks[r % 2].arena_bytes[ARENA_PARAM]);
  ddp_plan_free(pr), ddp_plan_free(ps);
  /* bucket_mb is MiB of gradient bytes: at 0.094 MiB (98566 B; 94000 would be MB) the first bucket holds
   * lm_head, ln_final and layers.1's w2, 98560 B, and closes before w1 */
  snprintf(path, sizeof path, "%s/schedules/tiny_ddp.lua", src);
  const char *mib[] = {"parallel.bucket_mb=0.094"};
  ddp_plan *pb = compile_mode(path, mib, 1, "train");
  if (pb) CHECK(pb->nbuckets > 1 && pb->buckets[0].bytes == 98560 && pb->buckets[0].nparams == 3,
                "the first bucket at 0.094 MiB: %llu bytes, %u parameters", pb->nbuckets ? (unsigned long long)pb->buckets[0].bytes : 0ULL,
                pb->nbuckets ? pb->buckets[0].nparams : 0u);
  ddp_plan_free(pb);
  snprintf(path, sizeof path, "%s/schedules/toy.lua", src);
  one_case("toy", path, NULL, 0, true);
  snprintf(path, sizeof path, "%s/schedules/toy_ddp.lua", src);
  one_case("toy_ddp (2 ranks, bucketed)", path, NULL, 0, true);

  /* a small MLP on 2 ranks under the sharded optimizers and optimizer overlap */
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ddp_test_modes.XXXXXX");
  if (!mkdtemp(tmpdir)) return perror("mkdtemp"), 1;
  FILE *f = fopen(tmp_path("mlp2.lua"), "w");
  fprintf(f, "return schedule {\n"
             "  model = mlp { layers = { linear { in_features = 6, out_features = 12 }, relu(),\n"
             "                           linear { in_features = 12, out_features = 3, bias = false } } },\n"
             "  data = { global_batch = 8, rows = 8, seed = 2 },\n"
             "  optimizer = adamw { lr = 0.05, clip = 1.0 },\n"
             "  parallel = ddp { ranks = 2, sync = \"bucketed\", bucket_mb = 0.0001, overlap = \"backward\" },\n"
             "  steps = 3, seed = 4,\n"
             "}\n");
  fclose(f);
  const char *zero1[] = {"parallel.sync=flat", "parallel.bucket_mb=nil", "parallel.overlap=nil",
                         "parallel.shard=zero1"};
  one_case("mlp zero1", tmp_path("mlp2.lua"), zero1, 4, true);
  const char *sharded[] = {"parallel.shard=optimizer"};
  one_case("mlp sharded optimizer", tmp_path("mlp2.lua"), sharded, 1, true);
  const char *overlap[] = {"parallel.optimizer_overlap=true", "optimizer.clip=nil"};
  one_case("mlp optimizer overlap", tmp_path("mlp2.lua"), overlap, 2, true);
  unlink(tmp_path("mlp2.lua"));
  rmdir(tmpdir);
  if (!check_failed)
    printf("forward and forward_backward plans: same losses as train, parameters unchanged, no gradient/optimizer "
           "memory where none is needed\n");
  return check_report("test_modes");
}

/* tests/unit/ref/test_comm_groups.c: communicator groups (plan.h ddp_comm, COLL_I_COMM) on hand-built plans of
 * 4 ranks (tests/fixtures/p2p_plan.h buffers): comm 1 = ranks {0, 2}, comm 2 = ranks {3, 1} (group order
 * 3, 1: the order is the plan's, not the ranks').
 *   - the reference executor (ranks as threads) all-reduces, broadcasts and all-gathers inside each group
 *     at once: every element checked; a group all-reduce interleaved with a SEND/RECV that a world-wide
 *     barrier would deadlock on (rank 0 all-reduces with rank 2, then sends to rank 1, which receives
 *     first and then all-reduces with rank 3) runs, and the verifier's deadlock proof accepts it;
 *   - the reverse (rank 2 receives from rank 0 before their all-reduce, rank 0 sends after it) deadlocks:
 *     the verifier refuses it statically and the executor fails every rank with one line instead of hanging;
 *     so do two groups of the same ranks whose all-reduces ranks 0 and 2 issue in crossed orders (each
 *     group's own order matches: only the progress proof sees it);
 *   - the plan reader round-trips the comm table and refuses, with one line each: a member that skips the
 *     group's collective, a count that differs inside a group, a rank issuing a collective on a comm it is
 *     not a member of, a comm id past the table, a broadcast root past the group size, a comm naming a rank
 *     twice or a rank past the world, a SEND with a comm; ddp_verify refuses the same broken plans;
 *   - `ddpc explain`'s cost model times a group all-reduce with the group's size (2(n-1)/n of the bytes:
 *     n = 2, not the world's 4) and its simulator runs the two groups' all-reduces independently: a group
 *     whose members are both late does not hold the other group back.
 * alarm() bounds the whole test: a hang fails it. */
#include "check.h"
#include "exec_ref.h"
#include "explain.h"
#include "p2p_plan.h"
#include "test_files.h"
#include "verify.h"
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { W = 4, N = 64 };
static const int32_t comm1[2] = {0, 2}, comm2[2] = {3, 1};

static ddp_plan *groups_plan(void) {
  ddp_plan *p = p2p_plan_new(W);
  CHECK_INT("comm 1", 1, ddp_plan_add_comm(p, comm1, 2));
  CHECK_INT("comm 2", 2, ddp_plan_add_comm(p, comm2, 2));
  return p;
}

/* a collective on rank r's step: buf k (f32) in place, or send buf k -> recv buf k2 */
static ddp_instr *coll(ddp_plan *p, int r, int opcode, int comm, int k, int k2, int64_t count, int root) {
  ddp_instr in = ddp_instr_blank(opcode, STREAM_COMM);
  in.p[COLL_P_SEND] = (ddp_bufref){k, ARENA_ACT, 0, p->tensors[k].offset};
  in.p[COLL_P_RECV] = (ddp_bufref){k2, ARENA_ACT, 0, p->tensors[k2].offset};
  in.dt[COLL_P_SEND] = in.dt[COLL_P_RECV] = DT_F32;
  in.i[COLL_I_COUNT] = count;
  in.i[COLL_I_REDOP] = REDOP_SUM;
  in.i[COLL_I_ROOT] = root;
  in.i[COLL_I_COMM] = comm;
  return ddp_program_push(&p->ranks[r].step, &in);
}

static int comm_of(int r) { return r == 0 || r == 2 ? 1 : 2; }
static int group_rank(int r) { return r == 0 || r == 3 ? 0 : 1; }
static int partner(int r) { return r == 0 ? 2 : r == 2 ? 0 : r == 1 ? 3 : 1; }
static float value(int r, int k, int j) { return (float)(r + 1) * 100.0f + (float)k + (float)j * 0.25f; }

typedef struct job {
  const ddp_plan *p;
  ddp_ref_comm *comm;
  int rank, rc;
  float out[P2P_NT][N];
  char err[1024];
} job;

static void *rank_main(void *arg) {
  job *j = arg;
  j->rc = -1;
  ddp_exec *x = ddp_exec_ref_new(j->p, j->rank, j->comm, NULL, 1, j->err, sizeof j->err);
  if (!x) {
    ddp_ref_comm_abort(j->comm, j->rank);
    return NULL;
  }
  int rc = 0;
  for (int k = 0; k < P2P_NT && rc == 0; k += 2) { /* the f32 buffers */
    float v[N];
    for (int e = 0; e < N; e++) v[e] = value(j->rank, k, e);
    rc = x->v->write(x, k, v, j->err, sizeof j->err);
  }
  if (rc == 0) rc = x->v->run(x, &j->p->ranks[j->rank].step, 0, j->err, sizeof j->err);
  for (int k = 0; k < P2P_NT && rc == 0; k += 2) rc = x->v->read(x, k, j->out[k], j->err, sizeof j->err);
  if (rc) ddp_ref_comm_abort(j->comm, j->rank);
  else ddp_ref_comm_leave(j->comm, j->rank);
  j->rc = rc;
  x->v->destroy(x);
  return NULL;
}

static void run_threads(const ddp_plan *p, job *jobs) {
  ddp_ref_comm *comm = ddp_ref_comm_new(W);
  pthread_t th[W];
  for (int r = 0; r < W; r++) {
    jobs[r] = (job){.p = p, .comm = comm, .rank = r};
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int r = 0; r < W; r++) pthread_join(th[r], NULL);
  ddp_ref_comm_free(comm);
}

/* all-reduce buf 0, broadcast buf 2 from group rank 1, all-gather buf 4 (16 elements) into buf 6, each
 * inside the rank's group */
static void test_executor(void) {
  ddp_plan *p = groups_plan();
  for (int r = 0; r < W; r++) {
    coll(p, r, I_ALL_REDUCE, comm_of(r), 0, 0, N, 0);
    coll(p, r, I_BROADCAST, comm_of(r), 2, 2, N, 1);
    ddp_instr *in = coll(p, r, I_ALL_GATHER, comm_of(r), 4, 6, 16, 0);
    in->p[COLL_P_RECV].view = 0;
  }
  char err[512];
  CHECK(ddp_verify(p, err, sizeof err) == 0, "verify refuses group collectives: %s", err);
  job jobs[W];
  run_threads(p, jobs);
  int wrong = 0;
  for (int r = 0; r < W; r++) {
    if (!CHECK(jobs[r].rc == 0, "rank %d: %s", r, jobs[r].err)) continue;
    int q = partner(r), root = comm_of(r) == 1 ? comm1[1] : comm2[1];
    for (int e = 0; e < N; e++) {
      float sum = (float)((double)value(comm_of(r) == 1 ? 0 : 3, 0, e) + (double)value(comm_of(r) == 1 ? 2 : 1, 0, e));
      wrong += jobs[r].out[0][e] != sum;
      wrong += jobs[r].out[2][e] != value(root, 2, e);
      int who = e / 16 == 0 ? (group_rank(r) == 0 ? r : q) : (group_rank(r) == 1 ? r : q);
      if (e < 32) wrong += jobs[r].out[6][e] != value(who, 4, e % 16);
      else wrong += jobs[r].out[6][e] != value(r, 6, e);
    }
  }
  CHECK_INT("wrong elements", 0, wrong);
  if (!wrong) printf("ok: all-reduce, broadcast and all-gather inside groups {0, 2} and {3, 1}, every element\n");
  ddp_plan_free(p);
}

/* rank 0: all-reduce (comm 1) then SEND to 1; rank 1: RECV from 0 then all-reduce (comm 2); ranks 2, 3:
 * their all-reduce. `reverse`: rank 2 receives from rank 0 before its all-reduce, rank 0 sends after its
 * own: a deadlock. */
static ddp_plan *interleaved(bool reverse) {
  ddp_plan *p = groups_plan();
  int to = reverse ? 2 : 1;
  coll(p, 0, I_ALL_REDUCE, 1, 0, 0, N, 0);
  p2p_push(p, 0, I_SEND, to, 8, N, STREAM_COMPUTE, "pp.send.act.mb0");
  p2p_push(p, to, I_RECV, 0, 10, N, STREAM_COMPUTE, "pp.recv.act.mb0");
  coll(p, 1, I_ALL_REDUCE, 2, 0, 0, N, 0);
  coll(p, 2, I_ALL_REDUCE, 1, 0, 0, N, 0);
  coll(p, 3, I_ALL_REDUCE, 2, 0, 0, N, 0);
  return p;
}

static void test_interleaved(void) {
  char err[1024];
  ddp_plan *p = interleaved(false);
  CHECK(ddp_verify(p, err, sizeof err) == 0, "verify: %s", err);
  job jobs[W];
  run_threads(p, jobs);
  int ok = 1;
  for (int r = 0; r < W; r++) ok &= CHECK(jobs[r].rc == 0, "interleaved rank %d: %s", r, jobs[r].err);
  if (ok) {
    for (int e = 0; e < N; e++) ok &= jobs[1].out[10][e] == value(0, 8, e);
    CHECK(ok, "rank 1 did not receive rank 0's buf 8");
  }
  if (ok) printf("ok: a group all-reduce interleaved with a send/receive another group waits on runs\n");
  ddp_plan_free(p);

  p = interleaved(true);
  CHECK(ddp_verify(p, err, sizeof err) != 0 && strstr(err, "can deadlock") && strstr(err, "rank 0 at instruction 0") &&
            strstr(err, "rank 2 at instruction 0"),
        "verify accepts the crossed plan: %s", err);
  printf("ok: verify: %s\n", err);
  run_threads(p, jobs);
  for (int r = 0; r < W; r += 2)
    CHECK(jobs[r].rc != 0 && strstr(jobs[r].err, "deadlock") && strstr(jobs[r].err, "waits in a collective on comm 1"),
          "rank %d: rc %d '%s'", r, jobs[r].rc, jobs[r].err);
  printf("ok: executor: %s\n", jobs[0].err);
  ddp_plan_free(p);
}

static void test_crossed(void) {
  ddp_plan *p = groups_plan();
  static const int32_t comm3[2] = {2, 0};
  CHECK_INT("comm 3", 3, ddp_plan_add_comm(p, comm3, 2));
  coll(p, 0, I_ALL_REDUCE, 1, 0, 0, N, 0);
  coll(p, 0, I_ALL_REDUCE, 3, 2, 2, N, 0);
  coll(p, 2, I_ALL_REDUCE, 3, 2, 2, N, 0);
  coll(p, 2, I_ALL_REDUCE, 1, 0, 0, N, 0);
  char err[1024];
  CHECK(ddp_verify(p, err, sizeof err) != 0 && strstr(err, "can deadlock") && strstr(err, "rank 0 at instruction 0") &&
            strstr(err, "rank 2 at instruction 0"),
        "verify accepts crossed group collectives: %s", err);
  printf("ok: verify: %s\n", err);
  job jobs[W];
  run_threads(p, jobs);
  CHECK(jobs[0].rc != 0 && strstr(jobs[0].err, "collective deadlock, no rank can move: rank 0 waits in a collective on comm 1") &&
            strstr(jobs[0].err, "rank 2 waits in a collective on comm 3"),
        "crossed: rank 0: rc %d '%s'", jobs[0].rc, jobs[0].err);
  printf("ok: executor: %s\n", jobs[0].err);
  ddp_plan_free(p);
}

/* Written and read back: the reader's verdict (NULL: accepted) contains `want`; ddp_verify's too (vwant). */
static void refused(const char *what, ddp_plan *p, const char *want, const char *vwant) {
  char err[1024] = "", verr[1024] = "";
  const char *path = tmp_path("groups.bin");
  if (!CHECK(ddp_plan_write(p, path, err, sizeof err) == 0, "%s: write: %s", what, err)) goto out;
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  if (!want) {
    if (CHECK(q != NULL, "%s: refused: %s", what, err)) {
      CHECK_INT("ncomms", p->ncomms, q->ncomms);
      for (uint32_t c = 0; c < p->ncomms && c < q->ncomms; c++)
        CHECK(q->comms[c].n == p->comms[c].n && !memcmp(q->comms[c].ranks, p->comms[c].ranks, 4 * p->comms[c].n),
              "comm %u differs after the round trip", c + 1);
      printf("ok: %s: read back with its %u communicators\n", what, q->ncomms);
    }
  } else {
    CHECK(q == NULL, "%s: accepted", what);
    CHECK_CONTAINS(what, err, want);
    CHECK(!strchr(err, '\n'), "%s: more than one line", what);
    printf("ok: %s: %s\n", what, err);
  }
  ddp_plan_free(q);
  if (vwant) {
    CHECK(ddp_verify(p, verr, sizeof verr) != 0, "%s: verify accepts it", what);
    CHECK_CONTAINS(what, verr, vwant);
  }
out:
  ddp_plan_free(p);
}

static ddp_plan *pairs_plan(void) { /* every rank all-reduces buf 0 on its group */
  ddp_plan *p = groups_plan();
  for (int r = 0; r < W; r++) coll(p, r, I_ALL_REDUCE, comm_of(r), 0, 0, N, 0);
  return p;
}

static void test_reader(void) {
  refused("a valid group plan", pairs_plan(), NULL, NULL);
  ddp_plan *p = pairs_plan();
  p->ranks[2].step.n = 0; /* rank 2 skips comm 1's all-reduce */
  refused("a member skips the collective", p, "rank 2 step program has 0 collectives on comm 1, rank 0 has more",
          "on comm 1, rank 0 and rank 2 issue different numbers of collectives");
  p = pairs_plan();
  p->ranks[1].step.v[0].i[COLL_I_COUNT] = 32;
  refused("a count mismatch inside a group", p,
          "rank 1 step instruction 0 (all_reduce): i[0] (count) = 32, rank 3's collective #0 on comm 2", "comm 2");
  p = pairs_plan();
  coll(p, 1, I_ALL_REDUCE, 1, 0, 0, N, 0);
  refused("a non-member issues the collective", p, "rank 1 step instruction 1 (all_reduce): rank 1 is not a member of comm 1",
          "which rank 1 is not a member of");
  p = pairs_plan();
  p->ranks[3].step.v[0].i[COLL_I_COMM] = 3;
  refused("a comm past the table", p, "rank 3 step instruction 0 (all_reduce): comm 3, plan has 2 communicators",
          "names comm 3");
  p = pairs_plan();
  for (int r = 0; r < W; r++) coll(p, r, I_BROADCAST, comm_of(r), 2, 2, N, 2);
  refused("a root past the group", p, "root 2, comm 1 has 2 ranks", NULL);
  p = pairs_plan();
  p->comms[1].ranks[0] = 1;
  refused("a comm naming a rank twice", p, "comm 2 names rank 1 twice", NULL);
  p = pairs_plan();
  p->comms[0].ranks[1] = 4;
  refused("a comm member past the world", p, "comm 1 member 1 is rank 4, world size 4", NULL);
  p = groups_plan();
  p2p_push(p, 0, I_SEND, 1, 8, N, STREAM_COMM, NULL);
  p2p_push(p, 1, I_RECV, 0, 8, N, STREAM_COMM, NULL);
  p->ranks[0].step.v[0].i[COLL_I_COMM] = 1;
  refused("a send with a comm", p, "rank 0 step instruction 0 (send): comm 1 (point-to-point names world ranks", NULL);
}

static void test_explain(void) {
  ddp_profile pr;
  ddp_profile_default(&pr);
  ddp_plan *p = pairs_plan();
  int is_comm = 0;
  ddp_instr world = p->ranks[0].step.v[0];
  world.i[COLL_I_COMM] = 0;
  double alpha = pr.coll[COST_ALL_REDUCE].alpha_us * 1e-6;
  double g = ddp_instr_cost(p, &p->ranks[0].step.v[0], &pr, &is_comm) - alpha, w = ddp_instr_cost(p, &world, &pr, &is_comm) - alpha;
  CHECK(is_comm && g > 0 && fabs(w / g - 1.5) < 1e-9, "all-reduce on a group of 2 vs the world of 4: %g vs %g s", g, w);
  /* ranks 1 and 3 (comm 2) first run a long copy: comm 1's all-reduce must not wait for them */
  for (int r = 1; r < W; r += 2) {
    ddp_instr cp = ddp_instr_blank(I_COPY, STREAM_COMM);
    cp.p[COPY_P_SRC] = (ddp_bufref){12, ARENA_ACT, 0, p->tensors[12].offset};
    cp.p[COPY_P_DST] = (ddp_bufref){14, ARENA_ACT, 0, p->tensors[14].offset};
    cp.i[COPY_I_BYTES] = P2P_BYTES;
    ddp_program *s = &p->ranks[r].step;
    ddp_program_push(s, &cp);
    for (int k = 0; k < 2000; k++) ddp_program_push(s, &cp);
    ddp_instr ar = s->v[0]; /* the all-reduce after the copies */
    s->v[0] = cp;
    ddp_program_push(s, &ar);
  }
  char err[512];
  ddp_sim *sim = ddp_simulate(p, &pr, 0, err, sizeof err);
  if (CHECK(sim != NULL, "simulate: %s", err)) {
    double a0 = sim->ranks[0].in[0].start, a1 = sim->ranks[1].in[p->ranks[1].step.n - 1].start;
    CHECK(a0 == 0 && a1 > 0 && sim->ranks[0].step_s < sim->ranks[1].step_s,
          "comm 1's all-reduce starts at %g s, comm 2's at %g s", a0, a1);
    printf("ok: explain: a group all-reduce costs %.3g us of bandwidth on 2 ranks, %.3g us on 4; group {0, 2} "
           "starts at 0, group {3, 1} at %.3g ms after its copies\n", g * 1e6, w * 1e6, a1 * 1e3);
    ddp_sim_free(sim);
  }
  ddp_plan_free(p);
}

int main(void) {
  alarm(120);
  snprintf(tmpdir, sizeof tmpdir, "%s/ddp_groups_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) return 1;
  test_executor();
  test_interleaved();
  test_crossed();
  test_reader();
  test_explain();
  unlink(tmp_path("groups.bin"));
  rmdir(tmpdir);
  return check_report("test_comm_groups");
}

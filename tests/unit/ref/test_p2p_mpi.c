/* tests/unit/ref/test_p2p_mpi.c: SEND/RECV of the reference executor with ranks as processes (comm_mpi.c)
 * against ranks as threads (comm_p2p.c), issue 13. Run under `mpirun -n W` (tests/e2e/test_mpi_p2p.sh:
 * W = 3 and 2): every process runs the plans of tests/fixtures/p2p_plan.h (ring, exchange, fifo; two steps)
 * once as its own rank over MPI and once with W threads in-process, and checks every byte of its rank's
 * buffers against the expectation and against the threads run. A dtype mismatch fails both ranks of the
 * pair with the threads backend's line, and the job goes on. Outside mpirun it exits 77 = SKIP.
 * `test_p2p_mpi --deadlock` (2 ranks, DDP_MPI_TIMEOUT_S=1): both ranks SEND first in groups of their own;
 * each must fail after about 1 s with the line naming DDP_MPI_TIMEOUT_S, print it, and end the job with
 * MPI_Abort (exit 3), as the dispatcher does.
 * `test_p2p_mpi --write-plans DIR` (no mpirun): writes DIR/exchange.bin, the synthetic fixture plan of
 * tests/fixtures/plan_fixture.h (2 ranks, every opcode, one grouped exchange; data rows set so that ddprun
 * runs it), and DIR/ungrouped.bin, the same with the exchange ungrouped (p2p_ungroup), for ddprun. */
#include "check.h"
#include "comm_mpi.h"
#include "exec_ref.h"
#include "p2p_plan.h"
#include "plan_fixture.h"
#include <stdlib.h>
#include <string.h>

/* This process's rank of p over MPI; returns rc, buffers in out, the line in err. */
static int run_mpi(const ddp_plan *p, ddp_ref_comm *mc, int me, int reps, uint8_t out[P2P_NT][P2P_BYTES], char *err,
                   size_t errcap) {
  ddp_exec *x = ddp_exec_ref_new(p, me, mc, NULL, 1, err, errcap);
  if (!x) return -1;
  int rc = p2p_fill(x, me, err, errcap);
  for (int s = 0; rc == 0 && s < reps; s++) rc = x->v->run(x, &p->ranks[me].step, s, err, errcap);
  if (rc == 0) rc = p2p_read(x, out, err, errcap);
  x->v->destroy(x);
  return rc;
}

static int deadlock(ddp_mpi *m, ddp_ref_comm *mc) {
  int me = ddp_mpi_rank(m);
  char err[1024] = "";
  uint8_t out[P2P_NT][P2P_BYTES];
  ddp_plan *p = p2p_exchange(1);
  int rc = run_mpi(p, mc, me, 1, out, err, sizeof err);
  CHECK(rc == -1);
  CHECK_CONTAINS("timeout line", err, "waited more than 1 s for rank");
  CHECK_CONTAINS("timeout line", err, "DDP_MPI_TIMEOUT_S");
  CHECK_CONTAINS("timeout line", err, "(send \"pp.send.act.mb0\", 64 x f32 to rank");
  printf("rank %d: %s\n", me, err);
  char name[64];
  snprintf(name, sizeof name, "test_p2p_mpi --deadlock rank %d", me);
  check_report(name);
  fflush(NULL);
  ddp_plan_free(p);
  ddp_mpi_abort(m, check_failed ? 1 : 3);
}

static int write_plans(const char *dir) {
  char err[1024], path[4096];
  for (int ungrouped = 0; ungrouped < 2; ungrouped++) {
    ddp_plan *p = fixture_plan();
    p->meta.data_rows = 64;
    if (ungrouped) p2p_ungroup(p);
    snprintf(path, sizeof path, "%s/%s.bin", dir, ungrouped ? "ungrouped" : "exchange");
    int rc = ddp_plan_write(p, path, err, sizeof err);
    ddp_plan_free(p);
    if (rc) return fprintf(stderr, "test_p2p_mpi: %s\n", err), 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  char err[1024];
  if (argc > 2 && !strcmp(argv[1], "--write-plans")) return write_plans(argv[2]);
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
    printf("test_p2p_mpi: not started by mpirun or srun: SKIP\n");
    return 77;
  }
  ddp_mpi *m = ddp_mpi_open(err, sizeof err);
  if (!CHECK(m != NULL, "%s", err)) return check_report("test_p2p_mpi");
  int me = ddp_mpi_rank(m), W = ddp_mpi_world(m);
  if (!CHECK(W >= 2 && W <= P2P_MAXW, "world %d", W)) return check_report("test_p2p_mpi");
  ddp_ref_comm *mc = ddp_ref_comm_new_mpi(m);
  if (argc > 1 && !strcmp(argv[1], "--deadlock")) return deadlock(m, mc);
  p2p_case cases[8];
  int n = p2p_cases(W, cases, 8);
  static p2p_job jobs[P2P_MAXW];
  uint8_t out[P2P_NT][P2P_BYTES];
  for (int c = 0; c < n; c++) {
    p2p_run_threads(cases[c].p, 2, -1, jobs);
    CHECK(jobs[me].rc == 0, "%s threads: %s", cases[c].name, jobs[me].err);
    int rc = run_mpi(cases[c].p, mc, me, 2, out, err, sizeof err);
    if (CHECK(rc == 0, "%s processes: %s", cases[c].name, err)) {
      CHECK_INT(cases[c].name, 0, p2p_check(&cases[c], me, out));
      CHECK(memcmp(out, jobs[me].out, sizeof out) == 0, "%s rank %d: processes differ from threads", cases[c].name, me);
      printf("ok: rank %d of %d: %s: processes == threads == expected (%d bytes)\n", me, W, cases[c].name,
             (int)sizeof out);
    }
    p2p_case_free(&cases[c]);
  }
  /* a dtype mismatch: the pair fails with the threads backend's line, the others are untouched */
  ddp_plan *p = p2p_plan_new(W);
  p2p_push(p, 0, I_SEND, 1, 0, 8, STREAM_COMM, "a");
  p2p_push(p, 1, I_RECV, 0, 1, 8, STREAM_COMM, "b");
  p2p_run_threads(p, 1, -1, jobs);
  int rc = run_mpi(p, mc, me, 1, out, err, sizeof err);
  if (me < 2) {
    CHECK(rc == -1);
    CHECK_STR("mismatch line equals the threads one", jobs[me].err, err);
    CHECK_CONTAINS("mismatch", err, "point-to-point mismatch: rank 0 step instruction 0 (send \"a\", 8 x f32 to rank 1) "
                                    "pairs with rank 1 step instruction 0 (recv \"b\", 8 x bf16 from rank 0)");
    printf("ok: rank %d: %s\n", me, err);
  } else {
    CHECK(rc == 0, "rank %d: %s", me, err);
  }
  ddp_plan_free(p);
  ddp_ref_comm_free(mc);
  ddp_mpi_close(m);
  char name[64];
  snprintf(name, sizeof name, "test_p2p_mpi rank %d of %d", me, W);
  return check_report(name);
}

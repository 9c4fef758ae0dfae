/* tests/unit/ref/test_comm_mpi.c: the reference executor's process backend (comm_mpi.c) against its
 * threads backend (comm_ref.c), bit for bit. Run under `mpirun -n W` (tests/e2e/test_mpi.sh does, W = 3):
 * every process builds the inputs of ALL ranks from a seed, runs the collective once over MPI as its own
 * rank and once with W threads in-process, and compares its rank's result bytes. Cases: all-reduce sum and
 * average (fp32, bf16, f64; counts 1, 7, 1000, 100003, none a multiple of W; in place and not),
 * reduce-scatter, all-gather (in place and not), broadcast from rank 1. Inputs mix magnitudes (1e-3 .. 1e7,
 * both signs): fp32 and bf16 sums of a few ranks in double rarely change with the order once rounded, but
 * f64 ones do, so a reduction in another order (e.g. MPI_Allreduce's) fails the f64 cases. Outside mpirun
 * (one process) it exits 77 = SKIP.
 * `test_comm_mpi --stall` (run with DDP_MPI_TIMEOUT_S=1): rank 1 sleeps 4 s before its all-reduce; rank 0's
 * must fail after about 1 s with the line naming DDP_MPI_TIMEOUT_S, print it, and end the job with
 * MPI_Abort (exit 3), as the dispatcher does. */
#include "check.h"
#include "comm_mpi.h"
#include "comm_ref.h"
#include "err.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* Rank r's input element i. */
static double value(int r, int64_t i, int salt) {
  uint64_t h = mix(((uint64_t)r << 48) ^ ((uint64_t)salt << 40) ^ (uint64_t)i);
  double mag[] = {1e-3, 1.0, 3e2, 1e7};
  double u = (double)(h >> 11) / 9007199254740992.0; /* [0, 1) */
  return (h & 1 ? -1 : 1) * mag[(h >> 1) & 3] * (0.5 + u);
}

typedef struct {
  ddp_ref_comm *c;
  const ddp_instr *in;
  void *send, *recv;
  int rank, rc;
  char err[256];
} thr;

static void *thr_main(void *arg) {
  thr *t = arg;
  t->rc = ddp_ref_collective(t->c, t->rank, t->in, t->send, t->recv, t->err, sizeof t->err);
  return NULL;
}

/* in place: recv is send (all-reduce) or send sits at the rank's slot of recv (all-gather). */
static void run_case(ddp_ref_comm *mc, int me, int W, int opcode, int dt, int64_t count, int redop, int root,
                     int in_place, int salt) {
  ddp_instr in;
  memset(&in, 0, sizeof in);
  in.opcode = (uint16_t)opcode;
  in.dt[COLL_P_SEND] = (uint8_t)dt;
  in.i[COLL_I_COUNT] = count;
  in.i[COLL_I_REDOP] = redop;
  in.i[COLL_I_ROOT] = root;
  size_t es = ddp_dtype_size(dt);
  int64_t nsend = opcode == I_REDUCE_SCATTER ? count * W : count;
  int64_t nrecv = opcode == I_ALL_GATHER ? count * W : count;
  int64_t nbuf = nsend > nrecv ? nsend : nrecv;
  unsigned char *bufs[2][16]; /* [0]: threads, [1]: this process over MPI; per rank */
  unsigned char *sends[2][16], *recvs[2][16];
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < W; r++) {
      bufs[k][r] = ddp_xcalloc((size_t)(2 * nbuf) + 1, es);
      for (int64_t i = 0; i < nsend; i++) ddp_store(bufs[k][r] + (size_t)nbuf * es, dt, i, value(r, i, salt));
      sends[k][r] = bufs[k][r] + (size_t)nbuf * es;
      recvs[k][r] = bufs[k][r];
      if (in_place && opcode == I_ALL_REDUCE) recvs[k][r] = sends[k][r];
      if (in_place && opcode == I_ALL_GATHER) {
        recvs[k][r] = bufs[k][r];
        memcpy(recvs[k][r] + (size_t)r * (size_t)count * es, sends[k][r], (size_t)count * es);
        sends[k][r] = recvs[k][r] + (size_t)r * (size_t)count * es;
      }
    }
  ddp_ref_comm *tc = ddp_ref_comm_new(W);
  thr t[16];
  pthread_t th[16];
  for (int r = 0; r < W; r++) {
    t[r] = (thr){.c = tc, .in = &in, .send = sends[0][r], .recv = recvs[0][r], .rank = r};
    pthread_create(&th[r], NULL, thr_main, &t[r]);
  }
  for (int r = 0; r < W; r++) pthread_join(th[r], NULL);
  ddp_ref_comm_free(tc);
  char err[256] = "";
  int rc = ddp_ref_collective(mc, me, &in, sends[1][me], recvs[1][me], err, sizeof err);
  CHECK(t[me].rc == 0, "threads: %s", t[me].err);
  CHECK(rc == 0, "processes: %s", err);
  int same = memcmp(recvs[0][me], recvs[1][me], (size_t)nrecv * es) == 0;
  CHECK(same, "rank %d: %s dt %d count %lld redop %d in_place %d: the process result differs from the threads one",
        me, ddp_opcode_name(opcode), dt, (long long)count, redop, in_place);
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < W; r++) free(bufs[k][r]);
}

/* The bounded wait: rank 1 arrives late, rank 0 gives up with a line and ends the job. */
static int stall(ddp_mpi *m, ddp_ref_comm *mc) {
  char err[512] = "";
  float x[4] = {1, 2, 3, 4};
  ddp_instr in;
  memset(&in, 0, sizeof in);
  in.opcode = I_ALL_REDUCE;
  in.dt[COLL_P_SEND] = DT_F32;
  in.i[COLL_I_COUNT] = 4;
  if (ddp_mpi_rank(m) == 1) sleep(4);
  int rc = ddp_ref_collective(mc, ddp_mpi_rank(m), &in, x, x, err, sizeof err);
  if (ddp_mpi_rank(m) == 0) {
    CHECK(rc == -1);
    CHECK_CONTAINS("timeout line", err, "waited more than 1 s for the other ranks (DDP_MPI_TIMEOUT_S)");
    printf("rank 0: %s\n", err);
    check_report("test_comm_mpi --stall rank 0");
    fflush(NULL);
    ddp_mpi_abort(m, check_failed ? 1 : 3);
  }
  return 0; /* rank 1: MPI_Abort from rank 0 ends it */
}

int main(int argc, char **argv) {
  char err[512];
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
    printf("test_comm_mpi: not started by mpirun or srun: SKIP\n");
    return 77;
  }
  ddp_mpi *m = ddp_mpi_open(err, sizeof err);
  if (!CHECK(m != NULL, "%s", err)) return check_report("test_comm_mpi");
  int me = ddp_mpi_rank(m), W = ddp_mpi_world(m);
  if (!CHECK(W >= 2 && W <= 16, "world %d", W)) return check_report("test_comm_mpi");
  ddp_ref_comm *mc = ddp_ref_comm_new_mpi(m);
  if (argc > 1 && !strcmp(argv[1], "--stall")) return stall(m, mc);
  int salt = 0;
  const int64_t counts[] = {1, 7, 1000, 100003};
  const int dts[] = {DT_F32, DT_BF16, DT_F64}; /* f64: a sum in another order differs in the last bits */
  for (int d = 0; d < 3; d++) {
    int dt = dts[d];
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (int redop = REDOP_SUM; redop <= REDOP_AVG; redop++)
        for (int ip = 0; ip < 2; ip++) run_case(mc, me, W, I_ALL_REDUCE, dt, counts[k], redop, 0, ip, ++salt);
    run_case(mc, me, W, I_REDUCE_SCATTER, dt, 5, REDOP_SUM, 0, 0, ++salt);
    run_case(mc, me, W, I_REDUCE_SCATTER, dt, 333, REDOP_AVG, 0, 0, ++salt);
    for (int ip = 0; ip < 2; ip++) run_case(mc, me, W, I_ALL_GATHER, dt, 9, 0, 0, ip, ++salt);
    run_case(mc, me, W, I_BROADCAST, dt, 77, 0, 1, 0, ++salt);
  }
  /* SEND through the collective entry point is one line, not a hang (point-to-point: test_p2p_mpi.c) */
  ddp_instr bad;
  memset(&bad, 0, sizeof bad);
  bad.opcode = I_SEND;
  bad.dt[COLL_P_SEND] = DT_F32;
  float x = 0;
  CHECK(ddp_ref_collective(mc, me, &bad, &x, &x, err, sizeof err) == -1);
  CHECK_CONTAINS("refusal", err, "send is not a collective (SEND and RECV go through ddp_ref_p2p_group)");
  ddp_ref_comm_free(mc);
  ddp_mpi_close(m);
  char name[64];
  snprintf(name, sizeof name, "test_comm_mpi rank %d of %d", me, W);
  return check_report(name);
}

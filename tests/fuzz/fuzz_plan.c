/* tests/fuzz/fuzz_plan.c: fuzz target of the plan reader and its consumers. Every input goes through
 * ddp_plan_read_buffer (container checks, decoding, index validation); a refused input must come back with
 * one non-empty line. A plan the reader accepts is then printed by `ddpc inspect` (to /dev/null), written
 * and read back (a valid plan must survive its own writer and reader), and, when it is small (arenas,
 * instruction count, GEMM work, world size under the limits below) and needs no token file, its init
 * program and one step run on the reference executor, every rank a thread as in `ddprun --device ref`.
 * The custom mutator lives in fuzz_plan_mutator.c (libFuzzer builds only). */
#include "comm_ref.h"
#include "exec_ref.h"
#include "fuzz_util.h"
#include "inspect.h"
#include "plan.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_MAX_WORLD 4
#define RUN_MAX_ARENA_BYTES ((uint64_t)64 << 20) /* all arenas of one rank */
#define RUN_MAX_INSTRS 4096u                    /* init + step, per rank */
#define RUN_MAX_GEMM_MACS 4e6                   /* multiply-adds of all GEMMs of one rank */
#define RUN_MAX_DENSE_VALUES 1e6                /* a synthetic dense dataset (toy MLPs): rows x width */
#define RUN_MAX_INIT_VALUES 4e6 /* elements all INIT_TENSORs of one rank draw (a normal draw: ~50 ns each) */

/* Small enough to run here in a few milliseconds? Limits come from the plan itself, which the reader has
 * checked: arena sizes, instruction counts, GEMM shapes. */
static int runnable(const ddp_plan *p) {
  if (p->meta.world < 1 || p->meta.world > RUN_MAX_WORLD || p->meta.data_kind == DATA_TOKEN_FILE) return 0;
  /* ddp_data_open draws the whole dense dataset up front (up to 1 GiB: seconds, not a bug) */
  if ((double)p->meta.data_rows * ((double)p->meta.mlp_in + (double)p->meta.mlp_out) > RUN_MAX_DENSE_VALUES) return 0;
  for (int64_t r = 0; r < p->meta.world; r++) {
    const ddp_rank_plan *rp = &p->ranks[r];
    uint64_t bytes = 0;
    for (int a = 0; a < ARENA_COUNT; a++) {
      if (rp->arena_bytes[a] > RUN_MAX_ARENA_BYTES) return 0;
      bytes += rp->arena_bytes[a];
    }
    if (bytes > RUN_MAX_ARENA_BYTES || rp->init.n + rp->step.n > RUN_MAX_INSTRS) return 0;
    double macs = 0, inits = 0;
    const ddp_program *progs[2] = {&rp->init, &rp->step};
    for (int g = 0; g < 2; g++)
      for (uint32_t k = 0; k < progs[g]->n; k++) {
        const ddp_instr *in = &progs[g]->v[k];
        /* thousands of INIT_TENSORs over one 64 MiB arena draw 10^10 values: hours, not a hang (a plan may
         * initialise what it likes; tests/fuzz/regress/README.md) */
        if (in->opcode == I_INIT_TENSOR) inits += in->i[INIT_TENSOR_I_ELEMENTS] > 0 ? (double)in->i[INIT_TENSOR_I_ELEMENTS] : 0;
        if (in->opcode != I_GEMM) continue;
        double m = (double)in->i[0], n = (double)in->i[1], kk = (double)in->i[2], b = (double)in->i[9];
        if (m < 0 || n < 0 || kk < 0 || b < 0) return 0;
        macs += m * n * kk * (b > 1 ? b : 1);
      }
    if (macs > RUN_MAX_GEMM_MACS || inits > RUN_MAX_INIT_VALUES) return 0;
  }
  return 1;
}

typedef struct {
  const ddp_plan *p;
  ddp_ref_comm *comm;
  ddp_data *data;
  int rank, rc;
  char err[1024];
} rank_job;

static void *run_rank(void *arg) {
  rank_job *j = arg;
  j->err[0] = 0;
  ddp_exec *x = ddp_exec_ref_new(j->p, j->rank, j->comm, j->data, (uint64_t)j->p->meta.seed, j->err, sizeof j->err);
  const ddp_rank_plan *rp = &j->p->ranks[j->rank];
  j->rc = !x || x->v->run(x, &rp->init, 0, j->err, sizeof j->err) || x->v->run(x, &rp->step, 0, j->err, sizeof j->err) ||
          x->v->sync(x, j->err, sizeof j->err);
  if (j->rc) ddp_ref_comm_abort(j->comm, j->rank);
  else ddp_ref_comm_leave(j->comm, j->rank); /* ranks left waiting on it fail (deadlock), not hang */
  if (x) x->v->destroy(x);
  return NULL;
}

static void run_ref(const ddp_plan *p) {
  char err[1024] = "";
  ddp_data *data = ddp_data_open(p, (uint64_t)p->meta.data_seed, err, sizeof err);
  if (!data) {
    fuzz_check_message("ddp_data_open", err);
    return;
  }
  int W = (int)p->meta.world;
  ddp_ref_comm *comm = ddp_ref_comm_new(W);
  rank_job jobs[RUN_MAX_WORLD];
  pthread_t th[RUN_MAX_WORLD];
  int started = 0;
  for (int r = 0; r < W; r++) {
    jobs[r] = (rank_job){.p = p, .comm = comm, .data = data, .rank = r};
    if (pthread_create(&th[r], NULL, run_rank, &jobs[r]) != 0) {
      ddp_ref_comm_abort(comm, r);
      break;
    }
    started++;
  }
  for (int r = 0; r < started; r++) {
    pthread_join(th[r], NULL);
    if (jobs[r].rc) fuzz_check_message("reference executor", jobs[r].err);
  }
  ddp_ref_comm_free(comm);
  ddp_data_close(data);
}

/* A plan the reader accepted must be written and read back by this build. */
static void round_trip(const ddp_plan *p) {
  char path[4200], err[1024] = "";
  snprintf(path, sizeof path, "%s/roundtrip.bin", fuzz_tmp_dir());
  if (ddp_plan_write(p, path, err, sizeof err) != 0) fuzz_die("a plan the reader accepted cannot be written", err);
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  if (!q) fuzz_die("a plan the reader accepted does not read back after writing", err);
  if (q->ntensors != p->ntensors || q->meta.world != p->meta.world || q->nstrings != p->nstrings)
    fuzz_die("a plan read back differs from the one written", "");
  ddp_plan_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *null_out;
  if (!null_out && !(null_out = fopen("/dev/null", "w"))) fuzz_die("cannot open /dev/null", "");
  char err[1024] = "";
  ddp_plan *p = ddp_plan_read_buffer(data, size, "fuzz.plan", err, sizeof err);
  if (!p) {
    fuzz_check_message("ddp_plan_read_buffer", err);
    return 0;
  }
  ddp_inspect(p, -1, null_out);
  round_trip(p);
  int run = runnable(p);
  if (run) run_ref(p);
  if (getenv("DDP_FUZZ_VERBOSE"))
    fprintf(stderr, "fuzz_plan: read, inspected, round-tripped%s\n", run ? ", ran init + 1 step on the reference executor" : "");
  ddp_plan_free(p);
  return 0;
}

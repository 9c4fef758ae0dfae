/* tests/unit/io/ckpt_fake.h: a fake executor for the checkpoint tests (test_checkpoint.c, test_ckpt_pieces.c):
 * host arenas sized from the plan; read/write copy a tensor at its planned arena offset; ranks of one run
 * share a fake_comm (allreduce_host over threads, summed in rank order) and are run as threads by
 * fake_run. */
#ifndef DDP_TEST_CKPT_FAKE_H
#define DDP_TEST_CKPT_FAKE_H
#include "checkpoint.h"
#include <pthread.h>
#include <stdbool.h>

#define FAKE_MAX_RANKS 8

typedef struct fake_comm {
  pthread_barrier_t bar;
  int world;
  double slot[FAKE_MAX_RANKS][8];
} fake_comm;

typedef struct fake {
  ddp_exec x;
  uint8_t *arena[ARENA_COUNT];
  uint64_t bytes[ARENA_COUNT];
  int32_t fail_read; /* tensor whose read fails, or -1 */
  int writes;
  fake_comm *comm; /* NULL: no allreduce_host (a lone rank) */
} fake;

/* A hand-built plan's tensor: name, state-dict name (or NULL), TF_* flags, dtype, arena and offset, a shape of
 * ndim (1 or 2) dimensions d0 x d1; no base, no parameter, no uses. Its index in p. */
int32_t fake_add_tensor(ddp_plan *p, const char *name, const char *state, uint32_t flags, int dt, int arena,
                        uint64_t offset, int ndim, int64_t d0, int64_t d1);

/* Arenas zeroed (fill_seed 0) or filled with a pattern of the seed. */
fake *fake_new(const ddp_plan *p, int rank, int world, uint64_t fill_seed);
void fake_free(fake *f);
const uint8_t *fake_at(const fake *f, const ddp_plan *p, int32_t t);
bool fake_same_tensor(const fake *a, const fake *b, const ddp_plan *p, int32_t t);
bool fake_same_arenas(const fake *a, const fake *b);

/* The ranks f[0..world) join one communicator (world <= FAKE_MAX_RANKS). */
void fake_comm_join(fake_comm *c, fake **f, int world);
void fake_comm_destroy(fake_comm *c);

/* What fake_run does on every rank. */
typedef enum { FAKE_SAVE, FAKE_LOAD, FAKE_SAVE_STEP, FAKE_RESUME } fake_op;
typedef struct fake_result {
  int rc;
  int64_t steps;
  char err[1024];
} fake_result;
/* Runs op on every rank of f[0..world) as threads (one call of ddp_checkpoint_save / _load /
 * ddp_ckpt_save_step / ddp_ckpt_resume each, with dir and step) and waits for all. */
void fake_run(fake **f, int world, fake_op op, const char *dir, int64_t step, fake_result *out);
#endif

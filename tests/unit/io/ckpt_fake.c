/* tests/unit/io/ckpt_fake.c: the checkpoint tests' fake executor and its threads (ckpt_fake.h). */
#include "ckpt_fake.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fake_read(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap) {
  fake *f = (fake *)x;
  const ddp_tensor *t = &x->plan->tensors[tensor];
  if (tensor == f->fail_read) {
    snprintf(err, errcap, "fake: cannot read %s", t->name);
    return -1;
  }
  memcpy(dst, f->arena[t->arena] + t->offset, t->bytes);
  return 0;
}

static int fake_write(ddp_exec *x, int32_t tensor, const void *src, char *err, size_t errcap) {
  (void)err, (void)errcap;
  fake *f = (fake *)x;
  const ddp_tensor *t = &x->plan->tensors[tensor];
  memcpy(f->arena[t->arena] + t->offset, src, t->bytes);
  f->writes++;
  return 0;
}

static int fake_sync(ddp_exec *x, char *err, size_t errcap) {
  (void)x, (void)err, (void)errcap;
  return 0;
}

static int fake_allreduce(ddp_exec *x, double *v, int n, char *err, size_t errcap) {
  fake_comm *c = ((fake *)x)->comm;
  if (!c) {
    snprintf(err, errcap, "fake: rank %d has no communicator", x->rank);
    return -1;
  }
  memcpy(c->slot[x->rank], v, sizeof *v * (size_t)n);
  pthread_barrier_wait(&c->bar);
  for (int k = 0; k < n; k++) {
    double s = 0;
    for (int r = 0; r < c->world; r++) s += c->slot[r][k];
    v[k] = s;
  }
  pthread_barrier_wait(&c->bar); /* every rank has read the slots before any writes them again */
  return 0;
}

static const ddp_exec_vtbl fake_vtbl = {
    .name = "fake", .sync = fake_sync, .read = fake_read, .write = fake_write, .allreduce_host = fake_allreduce};

fake *fake_new(const ddp_plan *p, int rank, int world, uint64_t fill_seed) {
  fake *f = calloc(1, sizeof *f);
  if (!f) abort();
  f->x = (ddp_exec){.v = &fake_vtbl, .plan = p, .rank = rank, .world = world, .seed = 1};
  f->fail_read = -1;
  for (uint32_t t = 0; t < p->ntensors; t++) {
    const ddp_tensor *x = &p->tensors[t];
    if (x->offset + x->bytes > f->bytes[x->arena]) f->bytes[x->arena] = x->offset + x->bytes;
  }
  for (int a = 0; a < ARENA_COUNT; a++) {
    if (!(f->arena[a] = calloc(1, f->bytes[a] + 1))) abort();
    if (fill_seed)
      for (uint64_t k = 0; k < f->bytes[a]; k++)
        f->arena[a][k] = (uint8_t)((k * 131 + (uint64_t)a * 7 + fill_seed * 29) >> 2);
  }
  return f;
}

void fake_free(fake *f) {
  if (!f) return;
  for (int a = 0; a < ARENA_COUNT; a++) free(f->arena[a]);
  free(f);
}

const uint8_t *fake_at(const fake *f, const ddp_plan *p, int32_t t) {
  return f->arena[p->tensors[t].arena] + p->tensors[t].offset;
}

bool fake_same_tensor(const fake *a, const fake *b, const ddp_plan *p, int32_t t) {
  return memcmp(fake_at(a, p, t), fake_at(b, p, t), p->tensors[t].bytes) == 0;
}

bool fake_same_arenas(const fake *a, const fake *b) {
  for (int k = 0; k < ARENA_COUNT; k++)
    if (a->bytes[k] != b->bytes[k] || memcmp(a->arena[k], b->arena[k], a->bytes[k])) return false;
  return true;
}

void fake_comm_join(fake_comm *c, fake **f, int world) {
  memset(c, 0, sizeof *c);
  c->world = world;
  pthread_barrier_init(&c->bar, NULL, (unsigned)world);
  for (int r = 0; r < world; r++) f[r]->comm = c;
}

void fake_comm_destroy(fake_comm *c) { pthread_barrier_destroy(&c->bar); }

typedef struct job {
  fake *f;
  fake_op op;
  const char *dir;
  int64_t step;
  fake_result *out;
} job;

static void *run_job(void *arg) {
  job *j = arg;
  ddp_exec *x = &j->f->x;
  fake_result *o = j->out;
  o->err[0] = 0;
  o->steps = -1;
  switch (j->op) {
  case FAKE_SAVE: o->rc = ddp_checkpoint_save(x, j->dir, j->step, o->err, sizeof o->err); break;
  case FAKE_LOAD: o->rc = ddp_checkpoint_load(x, j->dir, &o->steps, o->err, sizeof o->err); break;
  case FAKE_SAVE_STEP: o->rc = ddp_ckpt_save_step(x, j->dir, j->step, 2, o->err, sizeof o->err); break;
  case FAKE_RESUME: o->rc = ddp_ckpt_resume(x, j->dir, true, &o->steps, o->err, sizeof o->err); break;
  }
  return NULL;
}

void fake_run(fake **f, int world, fake_op op, const char *dir, int64_t step, fake_result *out) {
  fake_comm c;
  fake_comm_join(&c, f, world);
  pthread_t th[FAKE_MAX_RANKS];
  job jobs[FAKE_MAX_RANKS];
  for (int r = 0; r < world; r++) {
    jobs[r] = (job){f[r], op, dir, step, &out[r]};
    if (pthread_create(&th[r], NULL, run_job, &jobs[r])) abort();
  }
  for (int r = 0; r < world; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < world; r++) f[r]->comm = NULL;
  fake_comm_destroy(&c);
}

int32_t fake_add_tensor(ddp_plan *p, const char *name, const char *state, uint32_t flags, int dt, int arena,
                        uint64_t offset, int ndim, int64_t d0, int64_t d1) {
  ddp_tensor t;
  memset(&t, 0, sizeof t);
  t.name = (char *)name;
  t.state_name = (char *)state;
  t.flags = flags;
  t.dtype = (uint8_t)dt;
  t.arena = (uint8_t)arena;
  t.ndim = (uint8_t)ndim;
  t.shape[0] = d0;
  t.shape[1] = d1;
  t.base = t.param = -1;
  t.offset = offset;
  t.bytes = ddp_tensor_numel(&t) * ddp_dtype_size(dt);
  t.first_use = t.last_use = -1;
  return ddp_plan_add_tensor(p, &t);
}

/* compiler/codegen.c: specialises every KERNEL instruction of a plan (kernel_launch.c), deduplicates the
 * resulting (template, entry, specialisation) modules, compiles them with NVRTC on `jobs` threads and
 * records modules, kernels and launch geometry in the plan. */
#include "codegen.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  memcpy(d, s, n);
  return d;
}

static int32_t find_or_add_module(ddp_plan *p, int op, const char *tpl, const char *spec) {
  const char *entry = ddp_op_entry(op);
  for (uint32_t m = 0; m < p->nmodules; m++) {
    const ddp_module *md = &p->modules[m];
    if (!strcmp(md->template_name, tpl) && !strcmp(md->entry, entry) && !strcmp(md->spec, spec))
      return (int32_t)m;
  }
  if (p->nmodules == p->cap_modules) {
    p->cap_modules = p->cap_modules ? 2 * p->cap_modules : 32;
    p->modules = realloc(p->modules, sizeof(ddp_module) * p->cap_modules);
  }
  ddp_module *md = &p->modules[p->nmodules];
  memset(md, 0, sizeof *md);
  md->template_name = dupstr(tpl);
  md->entry = dupstr(entry);
  md->spec = dupstr(spec);
  return (int32_t)p->nmodules++;
}

static int32_t find_or_add_kernel(ddp_plan *p, int op, int32_t module) {
  for (uint32_t k = 0; k < p->nkernels; k++)
    if (p->kernels[k].module == module) return (int32_t)k;
  if (p->nkernels == p->cap_kernels) {
    p->cap_kernels = p->cap_kernels ? 2 * p->cap_kernels : 32;
    p->kernels = realloc(p->kernels, sizeof(ddp_kernel) * p->cap_kernels);
  }
  p->kernels[p->nkernels] = (ddp_kernel){.op = op, .module = module};
  return (int32_t)p->nkernels++;
}

static int specialise_program(ddp_plan *p, ddp_program *prog, const char *arch, char *err, size_t errcap) {
  ddp_launch L;
  for (uint32_t i = 0; i < prog->n; i++) {
    ddp_instr *in = &prog->v[i];
    if (in->opcode != I_KERNEL) continue;
    if (ddp_kernel_launch(in, arch, &L, err, errcap) != 0) return -1;
    int32_t m = find_or_add_module(p, in->op, L.tpl, L.spec);
    in->kernel = find_or_add_kernel(p, in->op, m);
    memcpy(in->grid, L.grid, sizeof L.grid);
    memcpy(in->block, L.block, sizeof L.block);
    in->smem = L.smem;
  }
  return 0;
}

typedef struct {
  ddp_plan *plan;
  const char *arch;
  uint32_t next;
  int failed;
  char err[1024];
  pthread_mutex_t lock;
} compile_queue;

static void *compile_worker(void *arg) {
  compile_queue *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    uint32_t m = q->next++;
    int stop = q->failed || m >= q->plan->nmodules;
    pthread_mutex_unlock(&q->lock);
    if (stop) return NULL;
    ddp_module *md = &q->plan->modules[m];
    if (md->cubin) continue;
    char err[1024];
    if (ddp_nvrtc_compile(md->template_name, md->entry, md->spec, q->arch, &md->cubin, &md->cubin_size,
                          md->hash, err, sizeof err) != 0) {
      pthread_mutex_lock(&q->lock);
      if (!q->failed) snprintf(q->err, sizeof q->err, "%s", err);
      q->failed = 1;
      pthread_mutex_unlock(&q->lock);
      return NULL;
    }
  }
}

int ddp_codegen(ddp_plan *p, const char *arch, int jobs, char *err, size_t errcap) {
  for (int64_t r = 0; r < p->meta.world; r++) {
    if (specialise_program(p, &p->ranks[r].init, arch, err, errcap) ||
        specialise_program(p, &p->ranks[r].step, arch, err, errcap))
      return -1;
  }
  if (jobs < 1) jobs = 1;
  if (jobs > 32) jobs = 32;
  compile_queue q = {.plan = p, .arch = arch};
  pthread_mutex_init(&q.lock, NULL);
  pthread_t th[32];
  for (int t = 0; t < jobs; t++) pthread_create(&th[t], NULL, compile_worker, &q);
  for (int t = 0; t < jobs; t++) pthread_join(th[t], NULL);
  pthread_mutex_destroy(&q.lock);
  if (q.failed) {
    snprintf(err, errcap, "%s", q.err);
    return -1;
  }
  return 0;
}

/* compiler/codegen/codegen.c: specialises every KERNEL instruction of a plan (launch.c), deduplicates the
 * resulting (template, entry, specialisation) modules, compiles them with NVRTC on `jobs` threads and
 * records modules, kernels and launch geometry in the plan. */
#include "cache_dir.h"
#include "codegen.h"
#include "err.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int32_t find_or_add_module(ddp_plan *p, int op, const char *tpl, const char *spec) {
  const char *entry = ddp_op_entry(op);
  for (uint32_t m = 0; m < p->nmodules; m++) {
    const ddp_module *md = &p->modules[m];
    if (!strcmp(md->template_name, tpl) && !strcmp(md->entry, entry) && !strcmp(md->spec, spec))
      return (int32_t)m;
  }
  if (p->nmodules == p->cap_modules) {
    p->cap_modules = p->cap_modules ? 2 * p->cap_modules : 32;
    p->modules = ddp_xrealloc(p->modules, sizeof(ddp_module) * p->cap_modules);
  }
  ddp_module *md = &p->modules[p->nmodules];
  memset(md, 0, sizeof *md);
  md->template_name = ddp_xstrdup(tpl);
  md->entry = ddp_xstrdup(entry);
  md->spec = ddp_xstrdup(spec);
  return (int32_t)p->nmodules++;
}

static int32_t find_or_add_kernel(ddp_plan *p, int op, int32_t module) {
  for (uint32_t k = 0; k < p->nkernels; k++)
    if (p->kernels[k].module == module) return (int32_t)k;
  if (p->nkernels == p->cap_kernels) {
    p->cap_kernels = p->cap_kernels ? 2 * p->cap_kernels : 32;
    p->kernels = ddp_xrealloc(p->kernels, sizeof(ddp_kernel) * p->cap_kernels);
  }
  p->kernels[p->nkernels] = (ddp_kernel){.op = op, .module = module};
  return (int32_t)p->nkernels++;
}

static int specialise_program(ddp_plan *p, ddp_program *prog, const char *arch, const ddp_codegen_opts *o,
                              char *err, size_t errcap) {
  ddp_launch launch;
  for (uint32_t i = 0; i < prog->n; i++) {
    ddp_instr *in = &prog->v[i];
    if (in->opcode != I_KERNEL) continue;
    if (ddp_kernel_launch(in, arch, o, &launch, err, errcap) != 0) return -1;
    int32_t m = find_or_add_module(p, in->op, launch.tpl, launch.spec);
    in->kernel = find_or_add_kernel(p, in->op, m);
    memcpy(in->grid, launch.grid, sizeof launch.grid);
    memcpy(in->block, launch.block, sizeof launch.block);
    in->smem = launch.smem;
  }
  return 0;
}

typedef struct {
  ddp_plan *plan;
  const char *arch;
  const ddp_codegen_opts *o;
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
    if (ddp_nvrtc_compile(md->template_name, md->entry, md->spec, q->arch, q->o, &md->cubin, &md->cubin_size,
                          md->hash, err, sizeof err) != 0) {
      pthread_mutex_lock(&q->lock);
      if (!q->failed) snprintf(q->err, sizeof q->err, "%s", err);
      q->failed = 1;
      pthread_mutex_unlock(&q->lock);
      return NULL;
    }
  }
}

int ddp_codegen_opts_from_env(ddp_codegen_opts *o, char *err, size_t errcap) {
  *o = (ddp_codegen_opts){.template_dir = ddp_param_path(PARAM_TEMPLATE_DIR)};
  if (!ddp_cache_dir(NULL, o->cache_dir, sizeof o->cache_dir)) o->cache_dir[0] = '\0'; /* no cache */
  int64_t log = 0;
  if (ddp_param_int(PARAM_NVRTC_LOG, &log, err, errcap)) return -1;
  o->nvrtc_log = (int)log;
  for (int k = 0; k < DDP_TUNE_COUNT; k++)
    if (ddp_param_int((ddp_param)(PARAM_TUNE_FWD_MT + k), &o->tune[k], err, errcap)) return -1;
  return 0;
}

int ddp_codegen(ddp_plan *p, const char *arch, int jobs, const ddp_codegen_opts *o, char *err, size_t errcap) {
  for (int64_t r = 0; r < p->meta.world; r++) {
    if (specialise_program(p, &p->ranks[r].init, arch, o, err, errcap) ||
        specialise_program(p, &p->ranks[r].step, arch, o, err, errcap))
      return -1;
  }
  if (jobs < 1) jobs = 1;
  if (jobs > 32) jobs = 32;
  compile_queue q = {.plan = p, .arch = arch, .o = o};
  pthread_mutex_init(&q.lock, NULL);
  pthread_t th[32];
  for (int t = 0; t < jobs; t++) pthread_create(&th[t], NULL, compile_worker, &q);
  for (int t = 0; t < jobs; t++) pthread_join(th[t], NULL);
  pthread_mutex_destroy(&q.lock);
  return q.failed ? ddp_fail(err, errcap, "%s", q.err) : 0;
}

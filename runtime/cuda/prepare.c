/* runtime/cuda/prepare.c: turns a rank program into cx_ops once, at load: streams, events and
 * timers resolved, device pointers (arena base + resolved offset) with per-opcode extent checks, kernel
 * modules loaded with their shared memory reserved and every KERNEL's ddp_kargs built, GEMMs, collectives,
 * batches and INIT staging delegated to their files. After this, replaying an instruction only issues it. */
#include "cx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int prepare_kernel(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_instr *in = op->in;
  char why[768];
  if (in->kernel < 0 || (uint32_t)in->kernel >= p->nkernels)
    return ddp_fail(err, errcap, "op %s has no compiled kernel (kernel index %d): was the plan built without CUBIN?",
                   ddp_op_name(in->op), in->kernel);
  const ddp_kernel *k = &p->kernels[in->kernel];
  if (k->module < 0 || (uint32_t)k->module >= p->nmodules)
    return ddp_fail(err, errcap, "kernel %d names module %d, plan has %u", in->kernel, k->module, p->nmodules);
  const ddp_module *m = &p->modules[k->module];
  ddp_cuda_kernel *ck = &x->modules[k->module];
  if (!ck->fn && ddp_cuda_module_load(m->cubin, (size_t)m->cubin_size, m->entry, m->spec, ck, why, sizeof why))
    return ddp_fail(err, errcap, "module %d (template %s, entry %s, hash %s): %s", k->module, m->template_name,
                   m->entry, m->hash, why);
  if (ddp_cuda_kernel_reserve_smem(ck, in->smem, why, sizeof why)) return ddp_fail(err, errcap, "%s", why);
  if (!in->grid[0] || !in->grid[1] || !in->block[0])
    return ddp_fail(err, errcap, "empty launch geometry: grid %u,%u,%u block %u,%u,%u", in->grid[0], in->grid[1],
                   in->grid[2], in->block[0], in->block[1], in->block[2]);
  op->kernel = ck;
  memset(&op->args, 0, sizeof op->args);
  for (int s = 0; s < DDP_MAX_PTRS; s++)
    if (in->p[s].tensor >= 0 && cx_buffer(x, in, s, 0, &op->args.p[s], err, errcap)) return -1;
  memcpy(op->args.i, in->i, sizeof op->args.i);
  memcpy(op->args.f, in->f, sizeof op->args.f);
  if (!ck->tma.resident) return 0;
  if (!(op->maps = aligned_alloc(64, sizeof *op->maps))) return ddp_fail(err, errcap, "out of host memory");
  return ddp_tma_attention_maps(ck->op, &op->args, &ck->tma, op->maps, err, errcap);
}

static int prepare_copy(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_instr *in = op->in;
  if (in->i[COPY_I_BYTES] < 0) return ddp_fail(err, errcap, "negative byte count %lld", (long long)in->i[COPY_I_BYTES]);
  op->bytes = (size_t)in->i[COPY_I_BYTES];
  if (op->bytes == 0) {
    op->skip = 1;
    return 0;
  }
  if (cx_buffer(x, in, COPY_P_SRC, op->bytes, &op->ptr[COPY_P_SRC], err, errcap) ||
      cx_buffer(x, in, COPY_P_DST, op->bytes, &op->ptr[COPY_P_DST], err, errcap))
    return -1;
  const uint8_t *s = op->ptr[COPY_P_SRC], *d = op->ptr[COPY_P_DST];
  if (s == d) {
    op->skip = 1;
    return 0;
  }
  if (s < d + op->bytes && d < s + op->bytes)
    return ddp_fail(err, errcap, "source and destination overlap (%zu bytes, %td apart)", op->bytes, d - s);
  return 0;
}

static int prepare_op(cx *x, cx_op *op, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  const ddp_rank_plan *rp = &p->ranks[x->base.rank];
  const ddp_instr *in = op->in;
  if (in->stream >= x->nstreams) return ddp_fail(err, errcap, "stream %u, plan has %u", in->stream, x->nstreams);
  op->stream = x->streams[in->stream];
  op->label = in->name >= 0 ? ddp_plan_string(p, in->name) : "";
  const int64_t i0 = in->i[MEMSET_I_BYTES]; /* = EVENT_I_EVENT, RANGE_PUSH_I_KIND, TIMER_I_SLOT */
  switch ((ddp_opcode)in->opcode) {
  case I_KERNEL: return prepare_kernel(x, op, err, errcap);
  case I_GEMM: return cx_gemm_prepare(x, op, err, errcap);
  case I_MEMSET:
    if (i0 < 0) return ddp_fail(err, errcap, "negative byte count %lld", (long long)i0);
    if (in->i[MEMSET_I_VALUE] < 0 || in->i[MEMSET_I_VALUE] > 255) return ddp_fail(err, errcap, "byte value %lld", (long long)in->i[MEMSET_I_VALUE]);
    op->bytes = (size_t)i0;
    op->skip = op->bytes == 0;
    return op->skip ? 0 : cx_buffer(x, in, MEMSET_P_DST, op->bytes, &op->ptr[MEMSET_P_DST], err, errcap);
  case I_COPY: return prepare_copy(x, op, err, errcap);
  case I_EVENT_RECORD:
  case I_EVENT_WAIT:
    if (i0 < 0 || i0 >= (int64_t)rp->nevents)
      return ddp_fail(err, errcap, "event %lld, rank has %u", (long long)i0, rp->nevents);
    op->event = x->events[i0];
    return 0;
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST:
  case I_SEND:
  case I_RECV: return cx_comm_prepare(x, op, err, errcap);
  case I_PEER_BARRIER: /* peer.c numbers and executes it; one rank has no peer to meet */
    if (in->i[COLL_I_COMM] != 0 || in->i[COLL_I_COUNT] != 0)
      return ddp_fail(err, errcap, "peer barrier on comm %lld with %lld elements (comm 0, none)",
                     (long long)in->i[COLL_I_COMM], (long long)in->i[COLL_I_COUNT]);
    op->skip = x->base.world < 2;
    return 0;
  case I_PEER_COPY: { /* the receive buffer here; peer.c maps the sources */
    if (in->i[COLL_I_COMM] != 0 || in->i[COLL_I_COUNT] < 0)
      return ddp_fail(err, errcap, "peer copy on comm %lld of %lld elements", (long long)in->i[COLL_I_COMM],
                     (long long)in->i[COLL_I_COUNT]);
    op->count = (size_t)in->i[COLL_I_COUNT];
    op->bytes = op->count * ddp_dtype_size(in->dt[COLL_P_SEND]);
    op->skip = x->base.world < 2 || op->bytes == 0;
    return op->skip ? 0
                    : cx_buffer(x, in, COLL_P_RECV, op->bytes * (size_t)(x->base.world - 1), &op->ptr[COLL_P_RECV], err,
                                errcap);
  }
  case I_RANGE_PUSH:
    if (i0 < 0 || i0 >= RANGE_COUNT) return ddp_fail(err, errcap, "range kind %lld", (long long)i0);
    if (!*op->label) op->label = ddp_range_name((int)i0);
    return 0;
  case I_RANGE_POP: return 0;
  case I_TIMER:
    if (i0 < 0 || i0 >= (int64_t)rp->ntimers)
      return ddp_fail(err, errcap, "timer %lld, rank has %u", (long long)i0, rp->ntimers);
    op->event = x->timers[i0];
    return 0;
  case I_LOAD_BATCH: return cx_batch_prepare(x, op, err, errcap);
  case I_INIT_TENSOR: return cx_init_prepare(x, op, err, errcap);
  case I_COUNT: break;
  }
  return ddp_fail(err, errcap, "opcode %u is not executable", in->opcode);
}

static int is_p2p(const cx_op *op) { return op->in->opcode == I_SEND || op->in->opcode == I_RECV; }

/* Consecutive SEND/RECV on one stream go out as one NCCL group (a pairwise exchange then cannot deadlock). */
static void group_p2p(cx_prog *pg) {
  for (uint32_t i = 0; i < pg->n; i++) {
    cx_op *op = &pg->ops[i];
    if (!is_p2p(op)) continue;
    const cx_op *prev = i > 0 ? &pg->ops[i - 1] : NULL, *next = i + 1 < pg->n ? &pg->ops[i + 1] : NULL;
    op->group_begin = !(prev && is_p2p(prev) && prev->stream == op->stream);
    op->group_end = !(next && is_p2p(next) && next->stream == op->stream);
  }
}

static int collect_timers(cx_prog *pg, char *err, size_t errcap) {
  pg->timer_base = -1;
  uint32_t n = 0;
  for (uint32_t i = 0; i < pg->n; i++) n += pg->ops[i].in->opcode == I_TIMER;
  if (!n) return 0;
  pg->timer_slots = calloc(n, sizeof *pg->timer_slots);
  if (!pg->timer_slots) return ddp_fail(err, errcap, "out of host memory");
  for (uint32_t i = 0; i < pg->n; i++) {
    const ddp_instr *in = pg->ops[i].in;
    if (in->opcode != I_TIMER) continue;
    if (pg->timer_base < 0) pg->timer_base = (int32_t)in->i[TIMER_I_SLOT];
    pg->timer_slots[pg->ntimer_slots++] = (uint32_t)in->i[TIMER_I_SLOT];
  }
  return 0;
}

int cx_prog_prepare(cx *x, cx_prog *pg, const ddp_program *prog, const char *what, char *err, size_t errcap) {
  memset(pg, 0, sizeof *pg);
  pg->src = prog;
  pg->what = what;
  pg->timer_base = -1;
  if (!prog->n) return 0;
  pg->ops = calloc(prog->n, sizeof *pg->ops);
  if (!pg->ops) return ddp_fail(err, errcap, "out of host memory for %u instructions", prog->n);
  for (uint32_t i = 0; i < prog->n; i++) {
    cx_op *op = &pg->ops[i];
    op->in = &prog->v[i];
    op->index = i;
    pg->n = i + 1;
    if (op->in->opcode == I_TIMER && op->in->i[TIMER_I_ROLE] == TIMER_FORWARD_END) x->prep_backward = 1;
    if (op->in->opcode == I_TIMER && op->in->i[TIMER_I_ROLE] == TIMER_BACKWARD_END) x->prep_backward = 0;
    if (prepare_op(x, op, err, errcap)) return cx_fail_at(x, pg, op, err, errcap);
  }
  x->prep_backward = 0;
  group_p2p(pg);
  return collect_timers(pg, err, errcap);
}

void cx_prog_free(cx *x, cx_prog *pg) {
  (void)x;
  for (uint32_t i = 0; i < pg->n; i++) {
    if (pg->ops[i].gemm) cx_gemm_free(pg->ops[i].gemm);
    if (pg->ops[i].batch) cx_batch_free(pg->ops[i].batch);
    free(pg->ops[i].maps);
  }
  cx_graph_free(pg);
  free(pg->ops);
  free(pg->timer_slots);
  memset(pg, 0, sizeof *pg);
}

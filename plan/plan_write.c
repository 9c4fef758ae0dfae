/* plan/plan_write.c: the plan.bin writer. The whole file is encoded in memory, field by field in
 * little-endian (never a raw struct dump): header, section table, the sections, CRC32. It is then
 * written with ddp_write_atomic (base/file.h), so a plan is either complete or absent; any failure
 * removes the temporary file. Format: docs/PLAN_FORMAT.md. */
#include "file.h"
#include "plan_codec.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_meta(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, (uint32_t)ddp_meta_field_count);
  const char *base = (const char *)&p->meta;
  for (int k = 0; k < ddp_meta_field_count; k++) {
    const ddp_meta_field *f = &ddp_meta_fields[k];
    ddp_wb_str(b, f->name);
    ddp_wb_u8(b, (uint8_t)f->type);
    if (f->type == 'I') {
      int64_t v;
      memcpy(&v, base + f->offset, sizeof v);
      ddp_wb_i64(b, v);
    } else if (f->type == 'F') {
      double v;
      memcpy(&v, base + f->offset, sizeof v);
      ddp_wb_f64(b, v);
    } else {
      const char *v;
      memcpy(&v, base + f->offset, sizeof v);
      ddp_wb_str(b, v);
    }
  }
}

static void put_strings(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->nstrings);
  for (uint32_t i = 0; i < p->nstrings; i++) ddp_wb_str(b, p->strings[i] ? p->strings[i] : "");
}

static void put_tensors(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->ntensors);
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    ddp_wb_str(b, t->name);
    ddp_wb_str(b, t->state_name);
    ddp_wb_u32(b, t->flags);
    ddp_wb_u8(b, t->dtype);
    ddp_wb_u8(b, t->arena);
    ddp_wb_u8(b, t->ndim);
    for (int d = 0; d < DDP_MAX_DIMS; d++) ddp_wb_i64(b, t->shape[d]);
    ddp_wb_i32(b, t->base);
    ddp_wb_u64(b, t->view);
    ddp_wb_u64(b, t->offset);
    ddp_wb_u64(b, t->bytes);
    ddp_wb_i32(b, t->param);
    ddp_wb_i32(b, t->first_use);
    ddp_wb_i32(b, t->last_use);
    ddp_wb_i32(b, t->piece_rank);
    ddp_wb_i64(b, t->piece_first);
    ddp_wb_i64(b, t->piece_runs);
    ddp_wb_i64(b, t->piece_stride);
  }
}

static void put_modules(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->nmodules);
  for (uint32_t i = 0; i < p->nmodules; i++) {
    const ddp_module *m = &p->modules[i];
    char hash[DDP_PLAN_HASH_BYTES] = {0};
    memcpy(hash, m->hash, strnlen(m->hash, DDP_PLAN_HASH_BYTES));
    ddp_wb_str(b, m->template_name);
    ddp_wb_str(b, m->entry);
    ddp_wb_str(b, m->spec);
    ddp_wb_bytes(b, hash, DDP_PLAN_HASH_BYTES);
    uint64_t size = m->cubin ? m->cubin_size : 0;
    ddp_wb_u64(b, size);
    ddp_wb_bytes(b, m->cubin, (size_t)size);
  }
}

static void put_kernels(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->nkernels);
  for (uint32_t i = 0; i < p->nkernels; i++) {
    ddp_wb_i32(b, p->kernels[i].op);
    ddp_wb_i32(b, p->kernels[i].module);
  }
}

static void put_buckets(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->nbuckets);
  for (uint32_t i = 0; i < p->nbuckets; i++) {
    const ddp_bucket *k = &p->buckets[i];
    ddp_wb_u64(b, k->offset);
    ddp_wb_u64(b, k->bytes);
    ddp_wb_u32(b, k->nparams);
    for (uint32_t j = 0; j < k->nparams; j++) ddp_wb_i32(b, k->params[j]);
  }
}

static void put_program(ddp_wbuf *b, const ddp_program *prog) {
  ddp_wb_u32(b, prog->n);
  if (ddp_wb_reserve(b, (size_t)prog->n * DDP_PLAN_INSTR_BYTES)) return;
  for (uint32_t i = 0; i < prog->n; i++) ddp_wb_instr(b, &prog->v[i]);
}

static void put_ranks(ddp_wbuf *b, const ddp_plan *p) {
  uint32_t world = (uint32_t)p->meta.world;
  ddp_wb_u32(b, world);
  ddp_wb_u32(b, ARENA_COUNT);
  for (uint32_t r = 0; r < world; r++) {
    const ddp_rank_plan *rp = &p->ranks[r];
    ddp_wb_u32(b, rp->nevents);
    ddp_wb_u32(b, rp->ntimers);
    ddp_wb_u32(b, rp->init_refresh);
    for (int a = 0; a < ARENA_COUNT; a++) ddp_wb_u64(b, rp->arena_bytes[a]);
    put_program(b, &rp->init);
    put_program(b, &rp->step);
  }
}

static void put_streams(ddp_wbuf *b, const ddp_plan *p) { ddp_wb_u32(b, p->nstreams); }

/* u32 count, then per communicator (ids 1 ..): u32 n, n x i32 world ranks */
static void put_comms(ddp_wbuf *b, const ddp_plan *p) {
  ddp_wb_u32(b, p->ncomms);
  for (uint32_t i = 0; i < p->ncomms; i++) {
    ddp_wb_u32(b, p->comms[i].n);
    for (uint32_t j = 0; j < p->comms[i].n; j++) ddp_wb_i32(b, p->comms[i].ranks[j]);
  }
}

/* One encoder per section; a section added to DDP_PLAN_SECTIONS without one is caught by the assert. */
typedef void (*put_fn)(ddp_wbuf *, const ddp_plan *);
static const put_fn section_writers[SEC_COUNT] = {
    [SEC_META] = put_meta,       [SEC_STRINGS] = put_strings, [SEC_TENSORS] = put_tensors,
    [SEC_MODULES] = put_modules, [SEC_KERNELS] = put_kernels, [SEC_BUCKETS] = put_buckets,
    [SEC_RANKS] = put_ranks,     [SEC_STREAMS] = put_streams, [SEC_COMMS] = put_comms,
};
_Static_assert(SEC_COUNT == 9, "a new plan section needs its writer here and its reader in plan_io_read.c");


/* Encodes the whole file into b; 0 or -1 (out of memory). */
static int encode(const ddp_plan *p, ddp_wbuf *b) {
  size_t table = DDP_PLAN_HEADER_BYTES, header = table + (size_t)SEC_COUNT * DDP_PLAN_SECTION_ENTRY_BYTES;
  if (ddp_wb_reserve(b, header)) return -1;
  memset(b->v, 0, header);
  b->n = header;
  for (int s = 0; s < SEC_COUNT; s++) {
    size_t start = b->n;
    section_writers[s](b, p);
    if (b->oom) return -1;
    uint8_t *e = b->v + table + (size_t)s * DDP_PLAN_SECTION_ENTRY_BYTES;
    ddp_put_le32(e, ddp_io_section_num(s));
    ddp_put_le32(e + 4, 0);
    ddp_put_le64(e + 8, start);
    ddp_put_le64(e + 16, b->n - start);
  }
  memcpy(b->v, DDP_PLAN_MAGIC, 8);
  ddp_put_le32(b->v + 8, DDP_PLAN_VERSION);
  ddp_put_le32(b->v + 12, SEC_COUNT);
  ddp_put_le64(b->v + 16, (uint64_t)b->n + DDP_PLAN_CRC_BYTES);
  uint32_t crc = (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), b->v, b->n);
  ddp_wb_u32(b, crc);
  return b->oom ? -1 : 0;
}

/* What the writer refuses to encode because it cannot be represented, not because it is invalid: a
 * semantically bad plan is written as is and refused by the reader. */
static int check_encodable(const ddp_plan *p, const char *path, char *err, size_t errcap) {
  if (p->meta.world < 0 || p->meta.world > DDP_PLAN_MAX_WORLD)
    return ddp_io_fail(err, errcap, path, "cannot write a plan for world size %lld", (long long)p->meta.world);
  if (p->meta.world > 0 && !p->ranks)
    return ddp_io_fail(err, errcap, path, "plan for %lld ranks has no rank programs", (long long)p->meta.world);
  for (uint32_t i = 0; i < p->nmodules; i++)
    if (!p->modules[i].cubin && p->modules[i].cubin_size)
      return ddp_io_fail(err, errcap, path, "module %u has a CUBIN size but no CUBIN", i);
  return 0;
}

int ddp_plan_write(const ddp_plan *p, const char *path, char *err, size_t errcap) {
  if (!p || !path) return ddp_io_fail(err, errcap, path, "no plan to write");
  if (check_encodable(p, path, err, errcap)) return -1;
  ddp_wbuf b = {0};
  if (encode(p, &b)) {
    free(b.v);
    return ddp_io_fail(err, errcap, path, "out of memory while encoding the plan");
  }
  int rc = ddp_write_atomic(path, b.v, b.n, err, errcap);
  free(b.v);
  return rc;
}

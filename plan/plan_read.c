/* plan/plan_io_read.c: the plan.bin reader. Checks, in order and each with one line naming the path:
 * readable, magic, format version, size (truncated), CRC32, section table bounds; then decodes every
 * section with a bounds-checked cursor (counts are checked against the bytes left before anything is
 * allocated) and finally validates every index (plan_io_check.c), so that no plan file, however
 * corrupted or hostile, can make a consumer index out of bounds. Format: docs/PLAN_FORMAT.md. */
#include "plan_codec.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct rctx {
  const char *path;
  char *err;
  size_t errcap;
  int oom;
} rctx;

static int read_whole(const char *path, uint8_t **data, size_t *size, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO is refused below, not waited on */
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    int e = errno;
    if (fd >= 0) close(fd);
    return ddp_io_fail(err, errcap, path, "cannot open: %s", strerror(e));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return ddp_io_fail(err, errcap, path, "cannot read: not a regular file");
  }
  size_t n = (size_t)st.st_size;
  uint8_t *v = malloc(n ? n : 1);
  if (!v) {
    fclose(f);
    return ddp_io_fail(err, errcap, path, "out of memory reading %zu bytes", n);
  }
  size_t got = fread(v, 1, n, f);
  int failed = ferror(f);
  fclose(f);
  if (failed) {
    free(v);
    return ddp_io_fail(err, errcap, path, "cannot read: I/O error");
  }
  *data = v;
  *size = got;
  return 0;
}

typedef struct slice {
  const uint8_t *v;
  size_t n;
} slice;

/* Header, size, CRC and section table; fills one slice per section. */
static int check_container(const uint8_t *d, size_t size, slice sec[SEC_COUNT], const rctx *c) {
  size_t magic_len = size < 8 ? size : 8;
  if (memcmp(d, DDP_PLAN_MAGIC, magic_len) != 0) return ddp_io_fail(c->err, c->errcap, c->path, "not a ddpc plan (bad magic)");
  if (size >= 12 && ddp_le32(d + 8) != DDP_PLAN_VERSION)
    return ddp_io_fail(c->err, c->errcap, c->path,
                       "plan format version %u, this build reads version %u (recompile the schedule with this ddpc)",
                       ddp_le32(d + 8), DDP_PLAN_VERSION);
  if (size < DDP_PLAN_HEADER_BYTES)
    return ddp_io_fail(c->err, c->errcap, c->path, "truncated: expected at least %u bytes, got %zu",
                       DDP_PLAN_HEADER_BYTES, size);
  uint32_t nsec = ddp_le32(d + 12);
  uint64_t expected = ddp_le64(d + 16);
  if (size < expected)
    return ddp_io_fail(c->err, c->errcap, c->path, "truncated: expected %llu bytes, got %zu",
                       (unsigned long long)expected, size);
  if (size > expected)
    return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: expected %llu bytes, got %zu",
                       (unsigned long long)expected, size);
  size_t table_end = DDP_PLAN_HEADER_BYTES + (size_t)nsec * DDP_PLAN_SECTION_ENTRY_BYTES;
  if (nsec > 64 || table_end + DDP_PLAN_CRC_BYTES > size)
    return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: section table out of bounds (%u sections)", nsec);
  size_t body = size - DDP_PLAN_CRC_BYTES;
  uint32_t crc = (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), d, body);
  if (crc != ddp_le32(d + body)) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: checksum mismatch");
  int seen[SEC_COUNT] = {0};
  for (uint32_t k = 0; k < nsec; k++) {
    const uint8_t *e = d + DDP_PLAN_HEADER_BYTES + (size_t)k * DDP_PLAN_SECTION_ENTRY_BYTES;
    uint32_t num = ddp_le32(e);
    uint64_t off = ddp_le64(e + 8), len = ddp_le64(e + 16);
    int s = ddp_io_section_index(num);
    if (s < 0) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: unknown section id %u", num);
    if (seen[s]) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: section '%s' appears twice", ddp_io_section_name(s));
    if (off < table_end || off > body || len > body - off)
      return ddp_io_fail(c->err, c->errcap, c->path,
                         "corrupted: section '%s' out of bounds (offset %llu, size %llu, file %zu bytes)",
                         ddp_io_section_name(s), (unsigned long long)off, (unsigned long long)len, size);
    seen[s] = 1;
    sec[s].v = d + off;
    sec[s].n = (size_t)len;
  }
  for (int s = 0; s < SEC_COUNT; s++)
    if (!seen[s]) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: missing section '%s'", ddp_io_section_name(s));
  return 0;
}

/* A count of records of at least `min_bytes` each must fit in what is left of the section. */
static int count_fits(ddp_rbuf *b, uint64_t count, size_t min_bytes) {
  if (count > ddp_rb_left(b) / min_bytes) {
    b->bad = 1;
    return 0;
  }
  return 1;
}

static int get_meta(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 4 + 1 + 4)) return 0;
  char seen[256] = {0};
  _Static_assert(sizeof seen >= sizeof(ddp_meta) / 4, "meta table larger than the seen set");
  char *base = (char *)&p->meta;
  for (uint32_t r = 0; r < count && !b->bad; r++) {
    char *key = ddp_rb_str(b, &c->oom);
    uint8_t type = ddp_rb_u8(b);
    if (b->bad || !key) {
      free(key);
      b->bad = 1;
      return 0;
    }
    int k = 0;
    while (k < ddp_meta_field_count && strcmp(ddp_meta_fields[k].name, key) != 0) k++;
    if (k == ddp_meta_field_count) {
      ddp_io_fail(c->err, c->errcap, c->path, "unknown meta field '%.64s' (written by a newer ddpc?)", key);
      free(key);
      return -1;
    }
    const ddp_meta_field *f = &ddp_meta_fields[k];
    int dup = seen[k]++, mistyped = type != (uint8_t)f->type;
    free(key);
    if (dup) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: meta field '%s' appears twice", f->name);
    if (mistyped)
      return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: meta field '%s' has type %u, expected '%c'",
                         f->name, type, f->type);
    if (f->type == 'I') {
      int64_t v = ddp_rb_i64(b);
      memcpy(base + f->offset, &v, sizeof v);
    } else if (f->type == 'F') {
      double v = ddp_rb_f64(b);
      memcpy(base + f->offset, &v, sizeof v);
    } else {
      char *v = ddp_rb_str(b, &c->oom);
      memcpy(base + f->offset, &v, sizeof v);
    }
  }
  return 0;
}

static int get_strings(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 4)) return 0;
  if (count && !(p->strings = calloc(count, sizeof *p->strings))) return c->oom = 1, 0;
  p->cap_strings = count;
  for (uint32_t i = 0; i < count && !b->bad && !c->oom; i++) {
    char *s = ddp_rb_str(b, &c->oom);
    if (!s) {
      if (!b->bad && !c->oom) return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: string %u is null", i);
      break;
    }
    p->strings[p->nstrings++] = s;
  }
  return 0;
}

static int get_tensors(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 4 + 4 + 4 + 3 + 8 * DDP_MAX_DIMS + 4 + 24 + 12 + 12 + 16)) return 0;
  if (count && !(p->tensors = calloc(count, sizeof *p->tensors))) return c->oom = 1, 0;
  p->cap_tensors = count;
  for (uint32_t i = 0; i < count && !b->bad && !c->oom; i++) {
    ddp_tensor *t = &p->tensors[p->ntensors++];
    t->name = ddp_rb_str(b, &c->oom);
    t->state_name = ddp_rb_str(b, &c->oom);
    t->flags = ddp_rb_u32(b);
    t->dtype = ddp_rb_u8(b);
    t->arena = ddp_rb_u8(b);
    t->ndim = ddp_rb_u8(b);
    for (int d = 0; d < DDP_MAX_DIMS; d++) t->shape[d] = ddp_rb_i64(b);
    t->base = ddp_rb_i32(b);
    t->view = ddp_rb_u64(b);
    t->offset = ddp_rb_u64(b);
    t->bytes = ddp_rb_u64(b);
    t->param = ddp_rb_i32(b);
    t->first_use = ddp_rb_i32(b);
    t->last_use = ddp_rb_i32(b);
    t->piece_rank = ddp_rb_i32(b);
    t->piece_first = ddp_rb_i64(b);
    t->piece_runs = ddp_rb_i64(b);
    t->piece_stride = ddp_rb_i64(b);
  }
  return 0;
}

static int get_modules(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 3 * 4 + DDP_PLAN_HASH_BYTES + 8)) return 0;
  if (count && !(p->modules = calloc(count, sizeof *p->modules))) return c->oom = 1, 0;
  p->cap_modules = count;
  for (uint32_t i = 0; i < count && !b->bad && !c->oom; i++) {
    ddp_module *m = &p->modules[p->nmodules++];
    m->template_name = ddp_rb_str(b, &c->oom);
    m->entry = ddp_rb_str(b, &c->oom);
    m->spec = ddp_rb_str(b, &c->oom);
    const uint8_t *h = ddp_rb_take(b, DDP_PLAN_HASH_BYTES);
    if (h) memcpy(m->hash, h, DDP_PLAN_HASH_BYTES);
    m->hash[DDP_PLAN_HASH_BYTES] = '\0';
    uint64_t size = ddp_rb_u64(b);
    if (size > ddp_rb_left(b)) {
      b->bad = 1;
      break;
    }
    const uint8_t *bytes = ddp_rb_take(b, (size_t)size);
    if (size) {
      if (!(m->cubin = malloc((size_t)size))) return c->oom = 1, 0;
      memcpy(m->cubin, bytes, (size_t)size);
      m->cubin_size = size;
    }
  }
  return 0;
}

static int get_kernels(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 8)) return 0;
  if (count && !(p->kernels = calloc(count, sizeof *p->kernels))) return c->oom = 1, 0;
  p->cap_kernels = count;
  for (uint32_t i = 0; i < count && !b->bad; i++) {
    p->kernels[i].op = ddp_rb_i32(b);
    p->kernels[i].module = ddp_rb_i32(b);
    p->nkernels++;
  }
  return 0;
}

static int get_buckets(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 8 + 8 + 4)) return 0;
  if (count && !(p->buckets = calloc(count, sizeof *p->buckets))) return c->oom = 1, 0;
  p->cap_buckets = count;
  for (uint32_t i = 0; i < count && !b->bad; i++) {
    ddp_bucket *k = &p->buckets[p->nbuckets++];
    k->offset = ddp_rb_u64(b);
    k->bytes = ddp_rb_u64(b);
    uint32_t n = ddp_rb_u32(b);
    if (!count_fits(b, n, 4)) break;
    if (n && !(k->params = malloc((size_t)n * sizeof *k->params))) return c->oom = 1, 0;
    for (uint32_t j = 0; j < n; j++) k->params[j] = ddp_rb_i32(b);
    k->nparams = n;
  }
  return 0;
}

static void get_program(ddp_rbuf *b, ddp_program *prog, rctx *c) {
  uint32_t n = ddp_rb_u32(b);
  if (!count_fits(b, n, DDP_PLAN_INSTR_BYTES) || n == 0) return;
  if (!(prog->v = malloc((size_t)n * sizeof *prog->v))) {
    c->oom = 1;
    return;
  }
  prog->cap = n;
  for (uint32_t i = 0; i < n; i++) ddp_rb_instr(b, &prog->v[i]);
  prog->n = n;
}

static int get_ranks(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t world = ddp_rb_u32(b), narenas = ddp_rb_u32(b);
  if (b->bad) return 0;
  if (p->meta.world < 1 || p->meta.world > DDP_PLAN_MAX_WORLD)
    return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: world size %lld out of range [1, %d]",
                       (long long)p->meta.world, DDP_PLAN_MAX_WORLD);
  if ((int64_t)world != p->meta.world)
    return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: %u rank programs for world size %lld", world,
                       (long long)p->meta.world);
  if (narenas != ARENA_COUNT)
    return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: %u arena classes, this build has %d", narenas,
                       ARENA_COUNT);
  if (!count_fits(b, world, 12 + 8 * ARENA_COUNT + 8)) return 0;
  if (!(p->ranks = calloc(world, sizeof *p->ranks))) return c->oom = 1, 0;
  for (uint32_t r = 0; r < world && !b->bad && !c->oom; r++) {
    ddp_rank_plan *rp = &p->ranks[r];
    rp->nevents = ddp_rb_u32(b);
    rp->ntimers = ddp_rb_u32(b);
    rp->init_refresh = ddp_rb_u32(b);
    for (int a = 0; a < ARENA_COUNT; a++) rp->arena_bytes[a] = ddp_rb_u64(b);
    get_program(b, &rp->init, c);
    get_program(b, &rp->step, c);
  }
  return 0;
}

static int get_streams(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  (void)c;
  p->nstreams = ddp_rb_u32(b);
  return 0;
}

static int get_comms(ddp_rbuf *b, ddp_plan *p, rctx *c) {
  uint32_t count = ddp_rb_u32(b);
  if (!count_fits(b, count, 4)) return 0;
  if (count && !(p->comms = calloc(count, sizeof *p->comms))) return c->oom = 1, 0;
  p->cap_comms = count;
  for (uint32_t i = 0; i < count && !b->bad; i++) {
    ddp_comm *m = &p->comms[p->ncomms++];
    uint32_t n = ddp_rb_u32(b);
    if (!count_fits(b, n, 4)) break;
    if (n && !(m->ranks = malloc((size_t)n * sizeof *m->ranks))) return c->oom = 1, 0;
    for (uint32_t j = 0; j < n; j++) m->ranks[j] = ddp_rb_i32(b);
    m->n = n;
  }
  return 0;
}

/* One decoder per section, run in section order (meta first: the ranks section needs the world size). */
typedef int (*get_fn)(ddp_rbuf *, ddp_plan *, rctx *);
static const get_fn section_readers[SEC_COUNT] = {
    [SEC_META] = get_meta,       [SEC_STRINGS] = get_strings, [SEC_TENSORS] = get_tensors,
    [SEC_MODULES] = get_modules, [SEC_KERNELS] = get_kernels, [SEC_BUCKETS] = get_buckets,
    [SEC_RANKS] = get_ranks,     [SEC_STREAMS] = get_streams, [SEC_COMMS] = get_comms,
};
_Static_assert(SEC_COUNT == 9, "a new plan section needs its reader here and its writer in plan_io.c");

static int decode(ddp_plan *p, const slice sec[SEC_COUNT], rctx *c) {
  for (int s = 0; s < SEC_COUNT; s++) {
    ddp_rbuf b = {sec[s].v, sec[s].n, 0, 0};
    if (section_readers[s](&b, p, c)) return -1;
    if (c->oom) return ddp_io_fail(c->err, c->errcap, c->path, "out of memory decoding section '%s'", ddp_io_section_name(s));
    if (b.bad)
      return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: section '%s' is truncated or malformed",
                         ddp_io_section_name(s));
    if (b.pos != b.n)
      return ddp_io_fail(c->err, c->errcap, c->path, "corrupted: section '%s' has %zu unexpected trailing bytes",
                         ddp_io_section_name(s), b.n - b.pos);
  }
  return 0;
}

ddp_plan *ddp_plan_read_buffer(const void *data, size_t size, const char *label, char *err, size_t errcap) {
  rctx c = {label, err, errcap, 0};
  slice sec[SEC_COUNT];
  ddp_plan *p = NULL;
  if (!data || check_container(data, size, sec, &c)) {
    if (!data) ddp_io_fail(err, errcap, label, "no plan bytes given");
    return NULL;
  }
  if (!(p = calloc(1, sizeof *p))) {
    ddp_io_fail(err, errcap, label, "out of memory");
    return NULL;
  }
  if (decode(p, sec, &c) || ddp_plan_validate(p, label, err, errcap)) {
    ddp_plan_free(p);
    return NULL;
  }
  p->file_crc = ddp_le32((const uint8_t *)data + size - DDP_PLAN_CRC_BYTES); /* check_container proved it */
  p->file_bytes = size;
  return p;
}

ddp_plan *ddp_plan_read(const char *path, char *err, size_t errcap) {
  if (!path) {
    ddp_io_fail(err, errcap, path, "no plan path given");
    return NULL;
  }
  uint8_t *data = NULL;
  size_t size = 0;
  if (read_whole(path, &data, &size, err, errcap)) return NULL;
  ddp_plan *p = ddp_plan_read_buffer(data, size, path, err, errcap);
  free(data);
  return p;
}

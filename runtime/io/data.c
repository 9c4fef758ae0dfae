/* runtime/io/data.c: the batch source of runtime/data.h. Step s, rank r of W ranks with B rows per rank
 * takes stream rows j in [s*B*W + r*B, s*B*W + (r+1)*B); local row i = j - (s*B*W + r*B) fills
 *   tokens:  inputs[i*context + k] = window(j)[k], targets[i*context + k] = window(j)[k + 1], k < context
 *   dense:   inputs[i*mlp_in + c], targets[i*mlp_out + c] from dataset row j mod data_rows.
 * Token windows (context + 1 tokens of row j):
 *   random:  token k = ddp_rng_u64(seed, DDP_RNG_STREAM_DATA_TOKENS, j*(context+1) + k) mod vocab
 *   pattern: g = j*context + k, token = (g*7 + g/23) mod min(vocab, 61)   (unsigned 64-bit arithmetic)
 *   file:    tokens [start, start + context] of the file, start = (j mod W) * context, W = (n_tokens - 1) / context;
 *            a file of exactly context + 1 tokens has the single window start = 0. Bad-token errors give
 *            the token's offset as its index in the file (numpy.memmap(path, dtype=uint16)[offset]).
 * Dense dataset, generated once at open, row-major, data_rows rows of (mlp_in + mlp_out) values:
 *   value c of row i = (float)ddp_rng_normal(seed, DDP_RNG_STREAM_DATA_DENSE, i*(mlp_in+mlp_out) + c),
 *   c < mlp_in: input c; c >= mlp_in: target c - mlp_in.
 * ddp_data_fill only reads the source, so ranks running as threads may share one. */
#include "data.h"
#include "err.h"
#include "dtype.h"
#include "rng.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ddp_data {
  int kind;
  uint64_t seed;
  int64_t vocab, context, batch, mlp_in, mlp_out, rows;
  int in_dt, tg_dt;
  char *path;     /* token file */
  int fd;         /* open on it (-1: none); read with pread, which threads share safely */
  uint64_t ntokens; /* at open: the windows are taken from these */
  float *dense; /* rows x (mlp_in + mlp_out) */
};


static inline uint16_t le16(const uint8_t *b, uint64_t k) { return (uint16_t)(b[2 * k] | (b[2 * k + 1] << 8)); }

static int bad_token(const ddp_data *d, uint64_t at, unsigned value, char *err, size_t errcap) {
  ddp_fail(err, errcap, "%s: token %u at offset %llu is >= vocab %lld", d->path, value, (unsigned long long)at,
           (long long)d->vocab);
  return -1;
}

/* Tokens [at, at + n) of the file into buf (2n bytes). The file is read, not mapped: a file cut short while a
 * run reads it is one error line here (a mapping would take SIGBUS). */
static int read_tokens(const ddp_data *d, uint64_t at, uint64_t n, uint8_t *buf, char *err, size_t errcap) {
  size_t want = (size_t)(2 * n), got = 0;
  while (got < want) {
    ssize_t r = pread(d->fd, buf + got, want - got, (off_t)(2 * at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return ddp_fail(err, errcap, "%s: cannot read tokens %llu..%llu (%s): the file held %llu tokens when the run "
                      "began; was it changed during the run?", d->path, (unsigned long long)at,
                      (unsigned long long)(at + n - 1), r < 0 ? strerror(errno) : "it ends sooner",
                      (unsigned long long)d->ntokens);
    got += (size_t)r;
  }
  return 0;
}

/* The plan's batch tensor `id` must exist and hold `want` elements, in shape and in bytes. */
static int check_tensor(const ddp_plan *p, const char *field, int64_t id, uint64_t want, const char *rule, int *dtype,
                        char *err, size_t errcap) {
  if (id < 0 || (uint64_t)id >= p->ntensors) {
    ddp_fail(err, errcap, "data: plan's %s %lld is not a tensor of the plan", field, (long long)id);
    return -1;
  }
  const ddp_tensor *t = &p->tensors[id];
  uint64_t n = ddp_tensor_numel(t);
  if (n != want) {
    ddp_fail(err, errcap, "data: plan's %s %s holds %llu elements, expected %s = %llu", field, t->name ? t->name : "?",
             (unsigned long long)n, rule, (unsigned long long)want);
    return -1;
  }
  if (ddp_dtype_size(t->dtype) == 0) {
    ddp_fail(err, errcap, "data: plan's %s %s has no element type", field, t->name ? t->name : "?");
    return -1;
  }
  /* the loader writes `want` elements of the dtype: the tensor's bytes must hold exactly that */
  uint64_t bytes;
  if (__builtin_mul_overflow(want, (uint64_t)ddp_dtype_size(t->dtype), &bytes) || t->bytes != bytes) {
    ddp_fail(err, errcap, "data: plan's %s %s has %llu bytes, expected %s = %llu %s elements", field,
             t->name ? t->name : "?", (unsigned long long)t->bytes, rule, (unsigned long long)want,
             ddp_dtype_name(t->dtype));
    return -1;
  }
  *dtype = t->dtype;
  return 0;
}

/* The largest token id a batch tensor of dtype dt holds exactly (ids are stored by ddp_store). */
static int64_t max_token_id(int dt) {
  if (dt == DT_I32) return INT32_MAX;
  if (dt == DT_U16) return UINT16_MAX;
  if (dt == DT_F32) return (int64_t)1 << 24;
  if (dt == DT_BF16) return 256;
  if (dt == DT_F64) return (int64_t)1 << 53;
  return -1;
}

/* Every id 0 .. vocab - 1 must fit the tokens and targets tensors (a larger one would overflow the store). */
static int check_vocab_fits(const ddp_data *d, char *err, size_t errcap) {
  for (int k = 0; k < 2; k++) {
    int dt = k ? d->tg_dt : d->in_dt;
    if (d->vocab - 1 > max_token_id(dt)) {
      ddp_fail(err, errcap, "data: plan's vocab %lld does not fit its %s tensor of dtype %s (token ids up to %lld)",
               (long long)d->vocab, k ? "targets" : "tokens", ddp_dtype_name(dt), (long long)max_token_id(dt));
      return -1;
    }
  }
  return 0;
}

static int open_token_file(ddp_data *d, const char *path, char *err, size_t errcap) {
  d->path = strdup(path);
  if (!d->path) {
    ddp_fail(err, errcap, "%s: out of memory", path);
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO is refused, not waited on */
  if (fd < 0) {
    ddp_fail(err, errcap, "%s: cannot open token file: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ddp_fail(err, errcap, "%s: cannot open token file: not a regular file", path);
    close(fd);
    return -1;
  }
  const int fl = fcntl(fd, F_GETFL); /* O_NONBLOCK only kept a FIFO from blocking the open: reads block as usual */
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  uint64_t size = (uint64_t)st.st_size;
  if (size % 2) {
    ddp_fail(err, errcap, "%s: token file size %llu bytes is not a whole number of uint16 tokens", path,
             (unsigned long long)size);
    close(fd);
    return -1;
  }
  if (size / 2 < (uint64_t)d->context + 1) {
    ddp_fail(err, errcap, "%s: token file holds %llu tokens (%llu bytes), fewer than context + 1 = %lld", path,
             (unsigned long long)(size / 2), (unsigned long long)size, (long long)d->context + 1);
    close(fd);
    return -1;
  }
  d->fd = fd;
  d->ntokens = size / 2;
  return ddp_data_validate(d, err, errcap); /* every token < vocab, checked at load (before step 1) */
}

/* The synthetic dense dataset of the toy MLP schedules lives in host memory; one larger than this is a
 * corrupted or mistaken plan, refused before it is allocated. */
#define DDP_DENSE_MAX_BYTES ((uint64_t)1 << 30)

static int make_dense(ddp_data *d, char *err, size_t errcap) {
  uint64_t width = (uint64_t)d->mlp_in + (uint64_t)d->mlp_out, rows = (uint64_t)d->rows;
  if (rows > DDP_DENSE_MAX_BYTES / sizeof(float) / width)
    return ddp_fail(err, errcap,
                    "data: the dense dataset of %llu rows x %llu values is more than the %llu MiB a synthetic dataset "
                    "may take (data_rows)",
                    (unsigned long long)rows, (unsigned long long)width,
                    (unsigned long long)(DDP_DENSE_MAX_BYTES >> 20));
  if (!(d->dense = malloc(rows * width * sizeof(float)))) {
    ddp_fail(err, errcap, "data: dense dataset of %llu rows x %llu values: out of memory", (unsigned long long)rows,
             (unsigned long long)width);
    return -1;
  }
  for (uint64_t k = 0; k < rows * width; k++)
    d->dense[k] = (float)ddp_rng_normal(d->seed, DDP_RNG_STREAM_DATA_DENSE, k);
  return 0;
}

ddp_data *ddp_data_open(const ddp_plan *p, uint64_t seed, char *err, size_t errcap) {
  const ddp_meta *m = &p->meta;
  ddp_data *d = calloc(1, sizeof *d);
  if (!d) {
    ddp_fail(err, errcap, "data: out of memory");
    return NULL;
  }
  d->kind = (int)m->data_kind;
  d->fd = -1;
  d->seed = seed;
  d->vocab = m->vocab;
  d->context = m->context;
  d->batch = m->batch_per_rank;
  d->mlp_in = m->mlp_in;
  d->mlp_out = m->mlp_out;
  d->rows = m->data_rows;
  char rule[128];
  int rc = -1;
  if (d->batch < 1) {
    ddp_fail(err, errcap, "data: plan's batch_per_rank is %lld, must be at least 1", (long long)d->batch);
    goto out;
  }
  switch (d->kind) {
  case DATA_RANDOM_TOKENS:
  case DATA_PATTERN_TOKENS:
  case DATA_TOKEN_FILE: {
    if (d->vocab < 1 || d->context < 1) {
      ddp_fail(err, errcap, "data: plan's vocab %lld and context %lld must be at least 1", (long long)d->vocab,
               (long long)d->context);
      goto out;
    }
    uint64_t want = (uint64_t)d->batch * (uint64_t)d->context;
    snprintf(rule, sizeof rule, "batch_per_rank %lld x context %lld", (long long)d->batch, (long long)d->context);
    if (check_tensor(p, "tokens_tensor", m->tokens_tensor, want, rule, &d->in_dt, err, errcap) ||
        check_tensor(p, "targets_tensor", m->targets_tensor, want, rule, &d->tg_dt, err, errcap) ||
        check_vocab_fits(d, err, errcap))
      goto out;
    if (d->kind == DATA_TOKEN_FILE) {
      if (!m->data_path || !m->data_path[0]) {
        ddp_fail(err, errcap, "data: plan reads a token file but names none (meta.data_path is empty)");
        goto out;
      }
      if (open_token_file(d, m->data_path, err, errcap)) goto out;
    }
    break;
  }
  case DATA_RANDOM_DENSE:
    if (d->mlp_in < 1 || d->mlp_out < 1 || d->rows < 1) {
      ddp_fail(err, errcap, "data: plan's mlp_in %lld, mlp_out %lld and data_rows %lld must be at least 1",
               (long long)d->mlp_in, (long long)d->mlp_out, (long long)d->rows);
      goto out;
    }
    snprintf(rule, sizeof rule, "batch_per_rank %lld x mlp_in %lld", (long long)d->batch, (long long)d->mlp_in);
    if (check_tensor(p, "tokens_tensor", m->tokens_tensor, (uint64_t)d->batch * (uint64_t)d->mlp_in, rule, &d->in_dt,
                     err, errcap))
      goto out;
    snprintf(rule, sizeof rule, "batch_per_rank %lld x mlp_out %lld", (long long)d->batch, (long long)d->mlp_out);
    if (check_tensor(p, "targets_tensor", m->targets_tensor, (uint64_t)d->batch * (uint64_t)d->mlp_out, rule, &d->tg_dt,
                     err, errcap))
      goto out;
    if (make_dense(d, err, errcap)) goto out;
    break;
  default:
    ddp_fail(err, errcap, "data: plan's data_kind %lld is unknown", (long long)d->kind);
    goto out;
  }
  rc = 0;
out:
  if (rc) {
    ddp_data_close(d);
    return NULL;
  }
  return d;
}

void ddp_data_close(ddp_data *d) {
  if (!d) return;
  if (d->fd >= 0) close(d->fd);
  free(d->path);
  free(d->dense);
  free(d);
}

/* First token of row j's window in the file: the file holds W = (n_tokens - 1) / context whole windows of
 * context + 1 tokens at a stride of context (each window's last token is the next one's first), and row j
 * takes window j mod W. So an epoch reads every token once as a target, but the last (n_tokens - 1) mod
 * context tokens, too few for a window. (The rule before took the start mod n_tokens - context - 1, which
 * never read the file's last token and skipped a whole window of a file of k * context + 1 tokens.) */
static uint64_t file_window(const ddp_data *d, uint64_t j) {
  uint64_t windows = (d->ntokens - 1) / (uint64_t)d->context; /* >= 1: the file holds context + 1 tokens */
  return (j % windows) * (uint64_t)d->context;
}

/* Token k (0..context) of row j's window (a token file's: window holds the row's tokens from start on). */
static int window_token(const ddp_data *d, uint64_t j, uint64_t start, const uint8_t *window, int64_t k,
                        int64_t *tok, char *err, size_t errcap) {
  switch (d->kind) {
  case DATA_RANDOM_TOKENS:
    *tok = (int64_t)(ddp_rng_u64(d->seed, DDP_RNG_STREAM_DATA_TOKENS, j * (uint64_t)(d->context + 1) + (uint64_t)k) %
                     (uint64_t)d->vocab);
    return 0;
  case DATA_PATTERN_TOKENS: {
    uint64_t g = j * (uint64_t)d->context + (uint64_t)k, period = d->vocab < 61 ? (uint64_t)d->vocab : 61;
    *tok = (int64_t)((g * 7 + g / 23) % period);
    return 0;
  }
  default: {
    uint16_t t = le16(window, (uint64_t)k);
    if ((int64_t)t >= d->vocab) return bad_token(d, start + (uint64_t)k, t, err, errcap);
    *tok = t;
    return 0;
  }
  }
}

int ddp_data_fill(ddp_data *d, int64_t step, int rank, int world, void *inputs, void *targets, char *err,
                  size_t errcap) {
  if (world < 1 || rank < 0 || rank >= world || step < 0) {
    ddp_fail(err, errcap, "data: bad batch request: step %lld, rank %d of %d", (long long)step, rank, world);
    return -1;
  }
  uint64_t B = (uint64_t)d->batch, row0 = (uint64_t)step * B * (uint64_t)world + (uint64_t)rank * B;
  if (d->kind == DATA_RANDOM_DENSE) {
    uint64_t width = (uint64_t)(d->mlp_in + d->mlp_out);
    for (uint64_t i = 0; i < B; i++) {
      const float *src = d->dense + ((row0 + i) % (uint64_t)d->rows) * width;
      for (int64_t c = 0; c < d->mlp_in; c++) ddp_store(inputs, d->in_dt, (int64_t)i * d->mlp_in + c, src[c]);
      for (int64_t c = 0; c < d->mlp_out; c++)
        ddp_store(targets, d->tg_dt, (int64_t)i * d->mlp_out + c, src[d->mlp_in + c]);
    }
    return 0;
  }
  int64_t C = d->context;
  uint8_t *window = NULL;
  if (d->kind == DATA_TOKEN_FILE && !(window = malloc(2 * (size_t)(C + 1))))
    return ddp_fail(err, errcap, "%s: out of memory for a window of %lld tokens", d->path, (long long)C + 1);
  int rc = 0;
  for (uint64_t i = 0; i < B && rc == 0; i++) {
    uint64_t j = row0 + i, start = d->kind == DATA_TOKEN_FILE ? file_window(d, j) : 0;
    int64_t base = (int64_t)i * C;
    if (window) rc = read_tokens(d, start, (uint64_t)C + 1, window, err, errcap);
    for (int64_t k = 0; k <= C && rc == 0; k++) {
      int64_t tok;
      rc = window_token(d, j, start, window, k, &tok, err, errcap);
      if (rc == 0 && k < C) ddp_store(inputs, d->in_dt, base + k, (double)tok);
      if (rc == 0 && k > 0) ddp_store(targets, d->tg_dt, base + k - 1, (double)tok);
    }
  }
  free(window);
  return rc;
}

/* Scans the whole token file once (0 for the generated sources); the first bad token is the error. */
int ddp_data_validate(ddp_data *d, char *err, size_t errcap) {
  if (d->kind != DATA_TOKEN_FILE || d->vocab > 65535) return 0;
  enum { CHUNK = 1 << 19 }; /* tokens per read (1 MiB) */
  uint8_t *buf = malloc(2 * (size_t)CHUNK);
  if (!buf) return ddp_fail(err, errcap, "%s: out of memory for the token check", d->path);
  int rc = 0;
  for (uint64_t at = 0; at < d->ntokens && rc == 0; at += CHUNK) {
    const uint64_t n = d->ntokens - at < CHUNK ? d->ntokens - at : CHUNK;
    rc = read_tokens(d, at, n, buf, err, errcap);
    for (uint64_t k = 0; k < n && rc == 0; k++)
      if (le16(buf, k) >= d->vocab) rc = bad_token(d, at + k, le16(buf, k), err, errcap);
  }
  free(buf);
  return rc;
}

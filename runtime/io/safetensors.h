/* runtime/io/safetensors.h: the safetensors format (what safetensors.torch.load_file/save_file read and
 * write): an 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"key": "value", ...}, "name": {"dtype": "F32", "shape": [2, 3],
 *    "data_offsets": [begin, end]}, ...}
 * padded with spaces to a multiple of 8, then the data section; offsets are relative to the data section,
 * tensors are row-major little-endian, and together they cover the data section exactly (no gaps, no
 * overlaps). The writer orders tensors by element size (largest first, so every tensor is aligned) and then
 * by name, like the reference implementation, and replaces the file atomically (st_write.c). The reader
 * (st_read.c, jansson) accepts any key order, whitespace and string escapes, and refuses a malformed file
 * or a repeated key with one line naming it. */
#ifndef DDP_SAFETENSORS_H
#define DDP_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#define DDP_ST_MAX_DIMS 8
#define DDP_ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */

typedef struct ddp_st_tensor {
  const char *name;
  char dtype_name[12]; /* as in the header: "F32", "BF16", "I32", ... */
  int dtype;           /* DT_* of plan/dtype.h, or -1 for a safetensors type ddpc has no DT_ for */
  int ndim;
  int64_t shape[DDP_ST_MAX_DIMS];
  uint64_t begin, end; /* byte offsets inside the data section */
} ddp_st_tensor;

typedef struct ddp_st_file {
  char *label;            /* the path (or ddp_st_parse's label), used in messages */
  ddp_st_tensor *tensors; /* in header order */
  uint32_t ntensors;
  uint32_t nmeta;          /* __metadata__ entries (ddp_st_meta reads them) */
  void *json;              /* the parsed header (jansson), owner of every name and value */
  ddp_st_tensor **by_name; /* tensors sorted by name (ddp_st_find) */
  const uint8_t *data; /* the data section */
  uint64_t data_bytes;
  void *map; /* the file's mapping (ddp_st_open), or NULL */
  size_t map_bytes;
} ddp_st_file;

/* Reading. ddp_st_parse reads a whole file image held by the caller (kept alive while `f` is used);
 * ddp_st_open maps the file. NULL with one line in err ("<label>: ...") when malformed. */
ddp_st_file *ddp_st_parse(const void *buf, size_t size, const char *label, char *err, size_t errcap);
ddp_st_file *ddp_st_open(const char *path, char *err, size_t errcap);
void ddp_st_close(ddp_st_file *f);
const ddp_st_tensor *ddp_st_find(const ddp_st_file *f, const char *name); /* NULL when absent */
const char *ddp_st_meta(const ddp_st_file *f, const char *key);           /* NULL when absent */
const void *ddp_st_data(const ddp_st_file *f, const ddp_st_tensor *t);    /* may be unaligned */

/* Writing. An entry's bytes come from `data`, or, when data is NULL, from fill(ctx, i, dst) called with a
 * buffer of the entry's size (i: the entry's index in v), so large tensors can be streamed one at a time.
 * meta: nmeta key, value pairs (meta[2k], meta[2k + 1]). The file is written through ddp_atomic_* (base/
 * file.h): on any failure the temporary file is removed and path is untouched. */
typedef struct ddp_st_entry {
  const char *name;
  int dtype; /* DT_* */
  int ndim;
  int64_t shape[DDP_ST_MAX_DIMS];
  const void *data;
} ddp_st_entry;
typedef int (*ddp_st_fill_fn)(void *ctx, uint32_t i, void *dst, char *err, size_t errcap);
int ddp_st_write(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                 ddp_st_fill_fn fill, void *ctx, char *err, size_t errcap);

/* The file ddp_st_write would write for these entries, for writers that fill one file from several
 * processes (checkpoint.c): *header (malloc'd; the caller frees it) gets its first *header_bytes bytes (the
 * 8-byte length and the padded JSON header), offset[i] the file offset of entry i's data, *file_bytes the
 * file's size. 0, or -1 with one line in err (as ddp_st_write refuses the entries). */
int ddp_st_header(const char *path, const ddp_st_entry *v, uint32_t n, const char *const *meta, uint32_t nmeta,
                  void **header, size_t *header_bytes, uint64_t *offset, uint64_t *file_bytes, char *err,
                  size_t errcap);

/* Names of plan dtypes in safetensors ("F32", "BF16", "F64", "I32", "U16"); NULL for none. */
const char *ddp_st_dtype_name(int dt);
/* numel(shape) x size into *out; -1 on a negative dimension or overflow. */
int ddp_st_span_bytes(int ndim, const int64_t *shape, uint64_t size, uint64_t *out);
/* Copies s for a one-line message: control characters become '?', long names are cut with "...". */
const char *ddp_st_printable(const char *s, char *buf, size_t cap);
#endif

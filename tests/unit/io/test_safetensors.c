/* tests/unit/io/test_safetensors.c: runtime/io/st_*.c: a write/read round trip of f32, bf16 and i32 tensors
 * (plus a scalar and an empty tensor) with escaped metadata and a streamed entry; the exact file layout
 * (length prefix, space padding, aligned order); hand-written headers with odd whitespace, key order,
 * escapes, unknown keys and null metadata; every refusal of malformed files; and atomic writes (a failed
 * write leaves neither a temporary file nor a changed target). `--sample DIR` / `--verify FILE` (see
 * sample_mode) serve tests/fixtures/tools/check_safetensors_torch.py. */
#include "dtype.h"
#include "safetensors.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#include "test_files.h"

/* 8-byte length + header (+ spaces to a multiple of 8 when pad) + data. */
static uint8_t *image(const char *header, const void *data, size_t ndata, int pad, size_t *size) {
  size_t h = strlen(header), hp = pad ? (h + 7) / 8 * 8 : h;
  uint8_t *v = malloc(8 + hp + ndata + 1);
  for (int k = 0; k < 8; k++) v[k] = (uint8_t)((uint64_t)hp >> (8 * k));
  memcpy(v + 8, header, h);
  memset(v + 8 + h, ' ', hp - h);
  if (ndata) memcpy(v + 8 + hp, data, ndata);
  *size = 8 + hp + ndata;
  return v;
}

static int stream_fill(void *ctx, uint32_t i, void *dst, char *err, size_t errcap) {
  int *mode = ctx;
  if (*mode == 1) {
    snprintf(err, errcap, "fill: tensor %u cannot be read", i);
    return -1;
  }
  for (int k = 0; k < 6; k++) ((int32_t *)dst)[k] = 1000 + k;
  return 0;
}

static void test_round_trip(void) {
  char err[512] = "";
  float w[6] = {1.5f, -2.25f, 3.0f, 0.0f, -0.0f, 1e-30f};
  uint16_t hb[4] = {ddp_f32_to_bf16(1.0f), ddp_f32_to_bf16(-3.5f), ddp_f32_to_bf16(65504.0f), ddp_f32_to_bf16(1e-3f)};
  float scalar = 42.0f;
  ddp_st_entry e[5] = {
      {.name = "z.bf16", .dtype = DT_BF16, .ndim = 1, .shape = {4}, .data = hb},
      {.name = "layers.0.attn.q_proj.weight", .dtype = DT_F32, .ndim = 2, .shape = {2, 3}, .data = w},
      {.name = "a.ids", .dtype = DT_I32, .ndim = 2, .shape = {3, 2}, .data = NULL}, /* streamed */
      {.name = "s", .dtype = DT_F32, .ndim = 0, .data = &scalar},
      {.name = "empty", .dtype = DT_F32, .ndim = 2, .shape = {0, 5}, .data = w},
  };
  const char *meta[] = {"format", "ddpc", "step", "12", "schedule", "sch\"ed\\ules/\xc3\xa9t\xc3\xa9\n.lua"};
  const char *path = tmp_path("rt.safetensors");
  int mode = 0;
  CHECK(ddp_st_write(path, e, 5, meta, 3, stream_fill, &mode, err, sizeof err) == 0, "write");
  if (err[0]) fprintf(stderr, "  %s\n", err);
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary left");
  size_t n = 0;
  uint8_t *raw = slurp(path, &n);
  uint64_t hl = 0;
  for (int k = 7; k >= 0; k--) hl = (hl << 8) | raw[k];
  CHECK(hl % 8 == 0 && raw[8] == '{', "header padded to 8");
  CHECK(n == 8 + hl + 24 + 8 + 24 + 4 + 0, "file size");
  free(raw);

  ddp_st_file *f = ddp_st_open(path, err, sizeof err);
  CHECK(f != NULL, "open");
  if (!f) {
    fprintf(stderr, "  %s\n", err);
    return;
  }
  CHECK(f->ntensors == 5, "count");
  CHECK(ddp_st_meta(f, "format") && strcmp(ddp_st_meta(f, "format"), "ddpc") == 0, "meta format");
  CHECK(ddp_st_meta(f, "step") && strcmp(ddp_st_meta(f, "step"), "12") == 0, "meta step");
  CHECK(ddp_st_meta(f, "schedule") && strcmp(ddp_st_meta(f, "schedule"), meta[5]) == 0, "meta escapes");
  CHECK(ddp_st_meta(f, "nope") == NULL, "meta absent");
  const ddp_st_tensor *q = ddp_st_find(f, "layers.0.attn.q_proj.weight"), *b = ddp_st_find(f, "z.bf16"),
                      *ids = ddp_st_find(f, "a.ids"), *s = ddp_st_find(f, "s"), *em = ddp_st_find(f, "empty");
  CHECK(q && b && ids && s && em, "found");
  if (q && b && ids && s && em) {
    CHECK(q->dtype == DT_F32 && strcmp(q->dtype_name, "F32") == 0 && q->ndim == 2 && q->shape[0] == 2 &&
          q->shape[1] == 3 && memcmp(ddp_st_data(f, q), w, 24) == 0, "f32");
    CHECK(b->dtype == DT_BF16 && strcmp(b->dtype_name, "BF16") == 0 && b->ndim == 1 && b->shape[0] == 4 &&
          memcmp(ddp_st_data(f, b), hb, 8) == 0, "bf16");
    int32_t want[6] = {1000, 1001, 1002, 1003, 1004, 1005};
    CHECK(ids->dtype == DT_I32 && ids->ndim == 2 && memcmp(ddp_st_data(f, ids), want, 24) == 0, "i32 streamed");
    CHECK(s->ndim == 0 && s->end - s->begin == 4 && memcmp(ddp_st_data(f, s), &scalar, 4) == 0, "scalar");
    CHECK(em->ndim == 2 && em->shape[0] == 0 && em->begin == em->end, "empty");
    /* 4-byte tensors first (by name), then 2-byte ones: every tensor aligned. */
    CHECK(ids->begin == 0 && q->begin == 24 && s->begin == 48 && b->begin == 52, "order");
  }
  ddp_st_close(f);

  /* Rewriting replaces the file; a failing fill leaves the old file as it was and no temporary. */
  raw = slurp(path, &n);
  mode = 1;
  err[0] = 0;
  CHECK(ddp_st_write(path, e, 5, meta, 3, stream_fill, &mode, err, sizeof err) == -1, "failed write");
  CHECK_CONTAINS("failed write", err, "cannot be read");
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary after failure");
  size_t n2 = 0;
  uint8_t *raw2 = slurp(path, &n2);
  CHECK(n2 == n && memcmp(raw, raw2, n) == 0, "old file intact");
  free(raw), free(raw2);
  const char *fresh = tmp_path("never.safetensors");
  CHECK(ddp_st_write(fresh, e, 5, meta, 3, stream_fill, &mode, err, sizeof err) == -1, "failed write of a new file");
  CHECK(access(fresh, F_OK) != 0 && count_files(tmpdir, ".tmp.") == 0, "no partial file");
  CHECK(ddp_st_write(tmp_path("no/such/dir.safetensors"), e, 1, NULL, 0, NULL, NULL, err, sizeof err) == -1,
        "missing directory");
  CHECK_CONTAINS("missing directory", err, "No such file or directory");
  ddp_st_entry dup[2] = {e[1], e[1]};
  CHECK(ddp_st_write(fresh, dup, 2, NULL, 0, NULL, NULL, err, sizeof err) == -1, "duplicate names");
  CHECK_CONTAINS("duplicate names", err, "duplicate tensor 'layers.0.attn.q_proj.weight'");
  ddp_st_entry bad = {.name = "u", .dtype = DT_NONE, .ndim = 1, .shape = {1}, .data = w};
  CHECK(ddp_st_write(fresh, &bad, 1, NULL, 0, NULL, NULL, err, sizeof err) == -1, "bad dtype");
  CHECK(access(fresh, F_OK) != 0, "no file after refusals");

  ddp_st_entry reserved = {.name = "__metadata__", .dtype = DT_F32, .ndim = 1, .shape = {1}, .data = w};
  CHECK(ddp_st_write(fresh, &reserved, 1, NULL, 0, NULL, NULL, err, sizeof err) == -1, "reserved name");
  CHECK_CONTAINS("reserved name", err, "cannot write tensor '__metadata__'");

  /* A relative path (temporary beside it in the current folder); invalid UTF-8 written as U+FFFD. */
  char cwd[512];
  CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(tmpdir) == 0, "cwd");
  const char *odd[] = {"path", "a\xff"
                               "b\xc3"};
  CHECK(ddp_st_write("rel.safetensors", e, 1, odd, 1, NULL, NULL, err, sizeof err) == 0, "relative path");
  f = ddp_st_open("rel.safetensors", err, sizeof err);
  CHECK(f && ddp_st_meta(f, "path") && strcmp(ddp_st_meta(f, "path"), "a\xef\xbf\xbd"
                                                                       "b\xef\xbf\xbd") == 0,
        "invalid UTF-8 replaced");
  ddp_st_close(f);
  CHECK(chdir(cwd) == 0, "cwd back");
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary");

  /* No tensors, no metadata: "{}" padded. */
  CHECK(ddp_st_write(fresh, NULL, 0, NULL, 0, NULL, NULL, err, sizeof err) == 0, "empty file");
  f = ddp_st_open(fresh, err, sizeof err);
  CHECK(f && f->ntensors == 0 && f->nmeta == 0 && f->data_bytes == 0, "empty file reads");
  ddp_st_close(f);
}

/* Headers as other writers (PyTorch's safetensors, hand edits) produce them. */
static void test_foreign_headers(void) {
  char err[512] = "";
  float d[6] = {1, 2, 3, 4, 5, 6};
  size_t n;
  const char *h1 =
      " {\n\t\"b\" : { \"data_offsets\" : [ 8 , 24 ] ,\"shape\":[2,2], \"dtype\" : \"F32\" } ,\r\n"
      "  \"a\\\"q\\\\\\/\\u00e9\\ud83d\\ude00\\n\":{\"shape\":[2],\"dtype\":\"F32\",\"data_offsets\":[0,8],"
      "\"extra\":{\"k\":[1,-2.5e3,true,false,null,\"s\",{}],\"e\":[]}},\n"
      "  \"__metadata__\" : {\"step\":\"3\" , \"\\u0066ormat\":\"ddpc\"}\n}  ";
  uint8_t *img = image(h1, d, 24, 1, &n);
  ddp_st_file *f = ddp_st_parse(img, n, "odd.safetensors", err, sizeof err);
  CHECK(f != NULL, "odd whitespace, order, escapes");
  if (!f) fprintf(stderr, "  %s\n", err);
  if (f) {
    const ddp_st_tensor *a = ddp_st_find(f, "a\"q\\/\xc3\xa9\xf0\x9f\x98\x80\n"), *b = ddp_st_find(f, "b");
    CHECK(a && a->ndim == 1 && a->shape[0] == 2 && a->begin == 0 && a->end == 8, "escaped name");
    CHECK(b && b->ndim == 2 && b->begin == 8 && b->end == 24, "reordered keys");
    CHECK(f->ntensors == 2 && strcmp(f->tensors[0].name, "b") == 0, "header order kept");
    CHECK(b && ((const float *)ddp_st_data(f, b))[0] == 3.0f, "data");
    CHECK(ddp_st_meta(f, "format") && strcmp(ddp_st_meta(f, "format"), "ddpc") == 0, "metadata after tensors");
  }
  ddp_st_close(f);
  free(img);

  /* Unpadded header, null metadata, other dtypes ddpc has no DT_ for (still valid files). */
  const char *h2 = "{\"__metadata__\":null,\"x\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                   "\"y\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[8,10]},"
                   "\"z\":{\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[10,10]}}";
  img = image(h2, d, 10, 0, &n);
  f = ddp_st_parse(img, n, "plain.safetensors", err, sizeof err);
  CHECK(f && f->nmeta == 0 && f->ntensors == 3, "unpadded, null metadata");
  if (!f) fprintf(stderr, "  %s\n", err);
  if (f) CHECK(ddp_st_find(f, "x")->dtype == -1 && ddp_st_find(f, "y")->ndim == 0, "foreign dtype");
  ddp_st_close(f);
  free(img);

  img = image("{}", NULL, 0, 1, &n);
  f = ddp_st_parse(img, n, "empty.safetensors", err, sizeof err);
  CHECK(f && f->ntensors == 0, "empty object");
  ddp_st_close(f);
  free(img);
}

static void refused(const char *what, const char *header, size_t ndata, const char *needle) {
  static uint8_t data[64];
  char err[512] = "";
  size_t n;
  uint8_t *img = image(header, data, ndata, 1, &n);
  ddp_st_file *f = ddp_st_parse(img, n, "bad.safetensors", err, sizeof err);
  CHECK(f == NULL, "%s", what);
  if (f) fprintf(stderr, "  %s: accepted\n", what);
  CHECK_CONTAINS(what, err, "bad.safetensors: ");
  CHECK_CONTAINS(what, err, needle);
  CHECK(strchr(err, '\n') == NULL, "%s", what);
  ddp_st_close(f);
  free(img);
}

#define T(name, dt, shape, b, e)                                                                                       \
  "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_refusals(void) {
  char err[512] = "";
  /* Truncated files. */
  uint8_t small[5] = {0};
  CHECK(ddp_st_parse(small, 5, "bad.safetensors", err, sizeof err) == NULL, "tiny");
  CHECK_CONTAINS("tiny", err, "too few for the 8-byte header length");
  size_t n;
  uint8_t *img = image("{" T("a", "F32", "[4]", 0, 16) "}", NULL, 0, 1, &n);
  for (size_t cut = 9; cut < n; cut += 7) {
    CHECK(ddp_st_parse(img, cut, "bad.safetensors", err, sizeof err) == NULL, "truncated header");
    CHECK_CONTAINS("truncated header", err, "runs past the end");
  }
  CHECK(ddp_st_parse(img, n, "bad.safetensors", err, sizeof err) == NULL, "truncated data");
  CHECK_CONTAINS("truncated data", err, "out of bounds of the 0-byte data section");
  img[0] = 0, img[1] = 0, img[2] = 0, img[3] = 0x10; /* 256 MiB */
  CHECK(ddp_st_parse(img, n, "bad.safetensors", err, sizeof err) == NULL, "huge header");
  CHECK_CONTAINS("huge header", err, "over the 100 MiB limit");
  memset(img, 0, 8);
  CHECK(ddp_st_parse(img, n, "bad.safetensors", err, sizeof err) == NULL, "zero header");
  CHECK_CONTAINS("zero header", err, "header length 0 is zero");
  free(img);
  CHECK(ddp_st_open(tmp_path("absent.safetensors"), err, sizeof err) == NULL, "missing file");
  CHECK_CONTAINS("missing file", err, "absent.safetensors: cannot open: No such file or directory");

  /* Bad JSON. */
  refused("not an object", "[]", 0, "expected '{'");
  refused("missing colon", "{\"a\" {}}", 0, "':' expected near '{' at byte 14");
  refused("trailing comma", "{" T("a", "F32", "[1]", 0, 4) ",}", 4, "string or '}' expected near '}'");
  refused("unterminated object", "{" T("a", "F32", "[1]", 0, 4), 4, "'}' expected near end of file");
  refused("unterminated string", "{\"abc", 0, "premature end of input near '\"abc");
  refused("bad escape", "{\"a\\x\":{}}", 0, "invalid escape near '\"a\\x'");
  refused("bad unicode escape", "{\"a\\u12g4\":{}}", 0, "invalid escape near '\"a\\u12g'");
  refused("lone surrogate", "{\"a\\ud800x\":{}}", 0, "invalid Unicode '\\uD800'");
  refused("nul escape", "{\"a\\u0000\":{}}", 0, "NUL byte in object key not supported");
  refused("raw control", "{\"a\tb\":{}}", 0, "control character 0x9 near '\"a' at byte 11");
  refused("invalid utf-8", "{\"a\xff\":{}}", 0, "unable to decode byte 0xff");
  refused("text after object", "{} x", 0, "end of file expected near 'x'");
  refused("two objects", "{}{}", 0, "end of file expected near '{'");
  refused("bare word",
          "{\"a\":{\"x\":nope,"
          "\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
          4, "invalid token near 'nope'");
  refused("metadata not strings", "{\"__metadata__\":{\"step\":3}}", 0, "__metadata__ values must be strings");
  refused("duplicate metadata key", "{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0,
          "duplicate object key near '\"a\"' at byte 36");
  refused("duplicate tensor", "{" T("a", "F32", "[1]", 0, 4) "," T("a", "F32", "[1]", 4, 8) "}", 8,
          "duplicate object key near '\"a\"' at byte 65");
  refused("negative dim", "{" T("a", "F32", "[-1]", 0, 4) "}", 4, "a dimension must be a non-negative integer");
  refused("float offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}", 4,
          "an offset must be an integer");
  refused("leading zero", "{" T("a", "F32", "[01]", 0, 4) "}", 4, "invalid token near '0'");
  refused("huge number", "{" T("a", "F32", "[99999999999999999999]", 0, 4) "}", 4,
          "too big integer near '99999999999999999999'");
  refused("three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4,
          "data_offsets must hold 2 numbers");
  refused("one offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 4,
          "data_offsets must hold 2 numbers");
  refused("too many dims", "{" T("a", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4, "more than 8 dimensions");
  refused("no dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a' has no \"dtype\"");
  refused("no shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'a' has no \"shape\"");
  refused("no offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a' has no \"data_offsets\"");
  refused("dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
          "dtype must be a string");
  refused("tensor not an object", "{\"a\":[1]}", 0, "expected '{'");
  char deep[400] = "{\"a\":{\"x\":";
  for (int k = 0; k < 80; k++) strcat(deep, "[");
  for (int k = 0; k < 80; k++) strcat(deep, "]");
  strcat(deep, "}}");
  refused("deep nesting", deep, 0, "nested too deeply");

  /* The format's checks. */
  refused("unknown dtype", "{" T("a", "Q8", "[1]", 0, 4) "}", 4, "tensor 'a' has unsupported dtype \"Q8\"");
  refused("out of bounds", "{" T("a", "F32", "[2]", 0, 8) "}", 4,
          "tensor 'a': data_offsets [0, 8] are out of bounds of the 4-byte data section");
  refused("reversed offsets", "{" T("a", "F32", "[0]", 4, 0) "}", 4, "out of bounds");
  refused("size mismatch", "{" T("a", "F32", "[3]", 0, 8) "}", 8,
          "tensor 'a': data_offsets [0, 8] span 8 bytes, dtype F32 and its shape need 12");
  refused("bf16 size mismatch", "{" T("a", "BF16", "[2,2]", 0, 16) "}", 16,
          "span 16 bytes, dtype BF16 and its shape need 8");
  refused("overlap", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}", 12,
          "tensors 'a' and 'b' overlap");
  refused("gap", "{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}", 12,
          "tensors 'a' and 'b' leave a gap");
  refused("not from zero", "{" T("a", "F32", "[1]", 4, 8) "}", 8, "tensor 'a' starts at byte 4, not 0");
  refused("trailing data", "{" T("a", "F32", "[1]", 0, 4) "}", 12,
          "the data section holds 12 bytes, the tensors cover 4");
  refused("overflowing shape", "{" T("a", "F32", "[4294967296,4294967296]", 0, 4) "}", 4, "shape is too large");
  /* Messages stay on one line even for names with newlines. */
  refused("newline in name", "{" T("a\\nb", "F32", "[3]", 0, 8) "}", 8, "tensor 'a?b'");
}

/* For tests/fixtures/tools/check_safetensors_torch.py: `--sample DIR` writes DIR/sample.safetensors (f32, bf16, i32
 * with known values) and prints the expected tensors; `--verify FILE` checks those values in FILE (e.g. the
 * file PyTorch saved back). */
static int sample_mode(const char *mode, const char *where) {
  char err[512] = "", path[600];
  float w[6];
  uint16_t hb[4];
  int32_t ids[6];
  for (int k = 0; k < 6; k++) w[k] = (float)k * 0.5f - 1.25f, ids[k] = k * 1000 - 2;
  for (int k = 0; k < 4; k++) hb[k] = ddp_f32_to_bf16((float)k * 1.5f - 2.0f);
  if (strcmp(mode, "--sample") == 0) {
    ddp_st_entry e[5] = {{.name = "w", .dtype = DT_F32, .ndim = 2, .shape = {2, 3}, .data = w},
                         {.name = "h", .dtype = DT_BF16, .ndim = 1, .shape = {4}, .data = hb},
                         {.name = "ids", .dtype = DT_I32, .ndim = 2, .shape = {3, 2}, .data = ids},
                         {.name = "scalar", .dtype = DT_F32, .ndim = 0, .data = w},
                         {.name = "empty", .dtype = DT_F32, .ndim = 2, .shape = {0, 5}, .data = w}};
    const char *meta[] = {"format", "ddpc", "step", "3", "schedule", "a \"q\" \\ \xc3\xa9\n\x01 \xff.lua"};
    snprintf(path, sizeof path, "%s/sample.safetensors", where);
    if (!CHECK(!ddp_st_write(path, e, 5, meta, 3, NULL, NULL, err, sizeof err), "%s", err)) return 1;
    printf("wrote %s; expected tensors:\nw=F32[2,3]\nh=BF16[4]\nids=I32[3,2]\nscalar=F32[]\nempty=F32[0,5]\n", path);
    return 0;
  }
  ddp_st_file *f = ddp_st_open(where, err, sizeof err);
  if (!CHECK(f, "%s", err)) return 1;
  const ddp_st_tensor *tw = ddp_st_find(f, "w"), *th = ddp_st_find(f, "h"), *ti = ddp_st_find(f, "ids");
  bool ok = CHECK(tw && th && ti && tw->dtype == DT_F32 && th->dtype == DT_BF16 && ti->dtype == DT_I32 &&
                     memcmp(ddp_st_data(f, tw), w, sizeof w) == 0 && memcmp(ddp_st_data(f, th), hb, sizeof hb) == 0 &&
                     memcmp(ddp_st_data(f, ti), ids, sizeof ids) == 0 && ddp_st_meta(f, "schedule") &&
                     strcmp(ddp_st_meta(f, "schedule"), "a \"q\" \\ \xc3\xa9\n\x01 \xef\xbf\xbd.lua") == 0,
                 "%s: values differ", where);
  printf("%s: %s\n", where, ok ? "f32, bf16 and i32 values bit for bit, escaped metadata: OK" : "values differ");
  ddp_st_close(f);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && (strcmp(argv[1], "--sample") == 0 || strcmp(argv[1], "--verify") == 0))
    return sample_mode(argv[1], argv[2]);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ddp_test_st.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trip();
  test_foreign_headers();
  test_refusals();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_report("test_safetensors");
}

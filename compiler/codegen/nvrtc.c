/* compiler/codegen/nvrtc.c: compiles one specialised template to CUBIN with NVRTC, through an on-disk
 * cache keyed by a content hash of (every template source, the specialisation, the arch, the NVRTC
 * version, the options). */
#include "codegen.h"
#include "bytes.h"
#include "err.h"
#include "cache_dir.h"
#include "file.h"
#include "share_dir.h"
#include <dirent.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DDP_TEMPLATE_DIR
#define DDP_TEMPLATE_DIR "templates"
#endif
#ifndef DDP_CUDA_INCLUDE_DIR
#define DDP_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

#define MAX_FILE_BYTES ((size_t)1 << 30) /* a template, a header or a cached CUBIN */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Hash of every shared header (*.cuh, and op_slots.h) in a folder (the template folder, plan/), in name
 * order: a change to a common header invalidates every cached kernel. */
static uint64_t hash_headers(uint64_t h, const char *dir) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    size_t l = strlen(nm);
    if ((l > 4 && strcmp(nm + l - 4, ".cuh") == 0) || strcmp(nm, "op_slots.h") == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, nm);
      size_t len = 0;
      char *src = ddp_read_file(path, MAX_FILE_BYTES, &len, NULL, 0);
      if (src) {
        h = fnv1a(h, nm, l);
        h = fnv1a(h, src, len);
        free(src);
      }
    }
    free(names[i]);
  }
  free(names);
  return h;
}

/* A cache entry is the CUBIN followed by a trailer: "ddpcubin", then the CUBIN's size and FNV-1a hash
 * (little endian). An entry whose trailer, size, hash or ELF magic does not match (truncated, edited, or
 * written by an older ddpc without the trailer) is a miss: the kernel is compiled again and the entry
 * replaced, so a damaged cache never reaches a plan. */
#define CACHE_TRAILER_MAGIC "ddpcubin"
#define CACHE_TRAILER_BYTES 24

static int cache_load(const char *dir, const char *hash, uint8_t **cubin, uint64_t *size) {
  if (!dir) return -1;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.cubin", dir, hash);
  size_t len = 0;
  uint8_t *data = (uint8_t *)ddp_read_file(path, MAX_FILE_BYTES, &len, NULL, 0);
  const uint8_t *t = data && len > CACHE_TRAILER_BYTES + 4 ? data + len - CACHE_TRAILER_BYTES : NULL;
  const uint64_t n = len - CACHE_TRAILER_BYTES;
  if (!t || memcmp(t, CACHE_TRAILER_MAGIC, 8) != 0 || ddp_le64(t + 8) != n ||
      ddp_le64(t + 16) != fnv1a(0xcbf29ce484222325ull, data, n) || memcmp(data, "\x7f" "ELF", 4) != 0) {
    free(data);
    return -1;
  }
  *cubin = data;
  *size = n;
  return 0;
}

static void cache_store(const char *dir, const char *hash, const uint8_t *cubin, uint64_t size) {
  if (!dir) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.cubin", dir, hash);
  uint8_t *entry = malloc(size + CACHE_TRAILER_BYTES);
  if (!entry) return; /* a cache: a failed write only costs a later compile */
  memcpy(entry, cubin, size);
  memcpy(entry + size, CACHE_TRAILER_MAGIC, 8);
  ddp_put_le64(entry + size + 8, size);
  ddp_put_le64(entry + size + 16, fnv1a(0xcbf29ce484222325ull, cubin, size));
  ddp_write_atomic(path, entry, size + CACHE_TRAILER_BYTES, NULL, 0);
  free(entry);
}

static void first_error_line(const char *log, char *out, size_t cap) {
  const char *e = strstr(log, "error");
  if (!e) e = log;
  const char *start = e;
  while (start > log && start[-1] != '\n') start--;
  const char *end = strchr(e, '\n');
  size_t n = end ? (size_t)(end - start) : strlen(start);
  if (n >= cap) n = cap - 1;
  memcpy(out, start, n);
  out[n] = 0;
}

#define NVRTC_TRY(call, what)                                                                        \
  do {                                                                                               \
    nvrtcResult r_ = (call);                                                                         \
    if (r_ != NVRTC_SUCCESS) {                                                                       \
      ddp_fail(err, errcap, "%s: %s failed: %s", what, #call, nvrtcGetErrorString(r_));            \
      goto fail;                                                                                     \
    }                                                                                                \
  } while (0)

int ddp_nvrtc_compile(const char *template_name, const char *entry, const char *spec, const char *arch,
                      const ddp_codegen_opts *o, uint8_t **cubin, uint64_t *size, char hash[17], char *err,
                      size_t errcap) {
  char dir_buf[4096]; /* $DDP_TEMPLATE_DIR (through the options), else the installed copy, else the source tree */
  const char *dir = ddp_share_dir("templates", o ? o->template_dir : NULL, DDP_TEMPLATE_DIR, dir_buf, sizeof dir_buf);
  char path[4096], what[512];
  snprintf(path, sizeof path, "%s/%s.cu", dir, template_name);
  snprintf(what, sizeof what, "templates/%s.cu (%s)", template_name, entry);
  size_t srclen = 0;
  char *src = ddp_read_file(path, MAX_FILE_BYTES, &srclen, err, errcap); /* "<path>: cannot open: ..." */
  if (!src) return -1;
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  char arch_opt[64], inc_cuda[1100], inc_tpl[4200], inc_plan[4300], plan_dir[4200];
  snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
  snprintf(inc_cuda, sizeof inc_cuda, "-I%s", DDP_CUDA_INCLUDE_DIR);
  snprintf(inc_tpl, sizeof inc_tpl, "-I%s", dir);
  snprintf(plan_dir, sizeof plan_dir, "%s/../plan", dir); /* op_slots.h, included by common.cuh */
  snprintf(inc_plan, sizeof inc_plan, "-I%s", plan_dir);
  const char *opts[] = {arch_opt, inc_cuda, inc_tpl, inc_plan, "--std=c++17", "-lineinfo", "-DNDEBUG"};
  int nopts = (int)(sizeof opts / sizeof opts[0]);

  /* The compiled source: entry selector, specialisation, then the template. */
  size_t cap = srclen + strlen(spec) + strlen(entry) + 256;
  char *full = ddp_xmalloc(cap);
  snprintf(full, cap, "#define DDP_ENTRY_%s 1\n%s\n#line 1 \"%s.cu\"\n%s", entry, spec, template_name, src);
  free(src);

  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, full, strlen(full));
  h = fnv1a(h, &major, sizeof major);
  h = fnv1a(h, &minor, sizeof minor);
  for (int i = 0; i < nopts; i++) h = fnv1a(h, opts[i], strlen(opts[i]) + 1);
  h = hash_headers(h, dir);
  h = hash_headers(h, plan_dir);
  snprintf(hash, 17, "%016llx", (unsigned long long)h);

  char cdir_buf[4096];
  const char *cdir = !o ? ddp_cache_dir(NULL, cdir_buf, sizeof cdir_buf) : o->cache_dir[0] ? o->cache_dir : NULL;
  if (cache_load(cdir, hash, cubin, size) == 0) {
    free(full);
    return 0;
  }

  nvrtcProgram prog = NULL;
  char *log = NULL;
  NVRTC_TRY(nvrtcCreateProgram(&prog, full, path, 0, NULL, NULL), what);
  nvrtcResult rc = nvrtcCompileProgram(prog, nopts, opts);
  if (rc != NVRTC_SUCCESS) {
    size_t loglen = 0;
    nvrtcGetProgramLogSize(prog, &loglen);
    log = ddp_xmalloc(loglen + 1);
    nvrtcGetProgramLog(prog, log);
    log[loglen] = 0;
    char line[512];
    first_error_line(log, line, sizeof line);
    ddp_fail(err, errcap, "%s: NVRTC compile failed: %s", what, line);
    if (o && o->nvrtc_log) fprintf(stderr, "%s\n", log);
    goto fail;
  }
  size_t n = 0;
  NVRTC_TRY(nvrtcGetCUBINSize(prog, &n), what);
  *cubin = ddp_xmalloc(n);
  NVRTC_TRY(nvrtcGetCUBIN(prog, (char *)*cubin), what);
  *size = n;
  nvrtcDestroyProgram(&prog);
  free(full);
  cache_store(cdir, hash, *cubin, *size);
  return 0;
fail:
  if (prog) nvrtcDestroyProgram(&prog);
  free(log);
  free(full);
  return -1;
}

int ddp_arch_supported(const char *arch) {
  int num = 0;
  char suffix[8] = "";
  if (!arch || sscanf(arch, "sm_%d%7s", &num, suffix) < 1) return 0;
  if (suffix[0] && strcmp(suffix, "a") != 0) return 0;
  if (suffix[0] == 'a' && num < 90) return 0;
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return 0;
  int *archs = ddp_xmalloc(sizeof(int) * (size_t)count);
  int ok = 0;
  if (nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS)
    for (int i = 0; i < count; i++) ok |= archs[i] == num;
  free(archs);
  return ok;
}

/* tests/unit/cuda/test_templates_compile.c (label cpu): every kernel template compiles. For every op of
 * plan/ops.h, both activation dtypes (f32, bf16) and the shapes of tests/fixtures/kernel_cases.c (head dims 16..128
 * and odd ones for attention), ddp_kernel_launch specialises the instruction and ddp_nvrtc_compile builds
 * it for sm_90a: a non-empty CUBIN naming ddp_<entry> and exporting ddp_grid_dependency (the marker that
 * lets the runtime overlap its launches) must come back. Unsupported combinations (odd or out-of-range head
 * dims, f64 slots, mixed attention dtypes, an f32 ATTN_BWD_*_ROPE) must be refused with a one-line
 * message. The attention kernel choice by target, dtype and head dim, and every wgmma tile variant
 * (attention_choice below). Every case also against its op's footprint (footprint_case).
 * DDP_DUMP_SPECS=dir writes each distinct specialised source to dir (for nvcc -Xptxas -v). */
#include "access.h"
#include "check.h"
#include "codegen.h"
#include "kernel_cases.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct seen {
  char key[2300];
} seen;
static seen *done;
static int ndone, capdone;

static int already(const char *tpl, const char *entry, const char *spec) {
  char key[2300];
  snprintf(key, sizeof key, "%s|%s|%s", tpl, entry, spec);
  for (int i = 0; i < ndone; i++)
    if (!strcmp(done[i].key, key)) return 1;
  if (ndone == capdone) {
    capdone = capdone ? 2 * capdone : 64;
    done = realloc(done, sizeof *done * (size_t)capdone);
  }
  snprintf(done[ndone++].key, sizeof done[0].key, "%s", key);
  return 0;
}

static int contains(const uint8_t *buf, uint64_t n, const char *s) {
  size_t l = strlen(s);
  for (uint64_t i = 0; i + l <= n; i++)
    if (!memcmp(buf + i, s, l)) return 1;
  return 0;
}

static void dump(const char *dir, const char *tpl, const char *entry, const char *spec, int id) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%03d_%s_%s.cu", dir, id, tpl, entry);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "#define DDP_ENTRY_%s 1\n%s#include \"%s.cu\"\n", entry, spec, tpl);
  fclose(f);
}

static void compile_with(const kc_case *c, const char *arch, const ddp_codegen_opts *o) {
  ddp_launch L;
  char err[1024];
  if (!CHECK(!ddp_kernel_launch(&c->in, arch, o, &L, err, sizeof err), "%s: launch refused: %s", c->label, err)) return;
  const char *tpl = L.tpl, *entry = ddp_op_entry(c->in.op);
  CHECK(L.block[0] != 0 && L.block[0] <= 1024 && L.grid[0] != 0, "%s: bad geometry grid %u block %u", c->label,
        L.grid[0], L.block[0]);
  if (already(tpl, entry, L.spec)) return;
  uint8_t *cubin = NULL;
  uint64_t size = 0;
  char hash[17];
  if (!CHECK(!ddp_nvrtc_compile(tpl, entry, L.spec, arch, o, &cubin, &size, hash, err, sizeof err), "%s: %s\n  spec:\n%s",
             c->label, err, L.spec))
    return;
  char name[128];
  snprintf(name, sizeof name, "ddp_%s", entry);
  /* and the marker that lets the runtime overlap its launches (templates/common.cuh, DDP_GRID_DEPENDENCY) */
  if (CHECK(size != 0 && contains(cubin, size, name), "%s: CUBIN of %llu bytes lacks %s", c->label,
            (unsigned long long)size, name) &&
      CHECK(contains(cubin, size, "ddp_grid_dependency"), "%s: CUBIN lacks the marker ddp_grid_dependency", c->label))
    printf("ok   %-60s %6llu bytes  smem %u\n", c->label, (unsigned long long)size, L.smem);
  const char *d = getenv("DDP_DUMP_SPECS");
  if (d && *d) dump(d, tpl, entry, L.spec, ndone);
  free(cubin);
}

static void compile_case(const kc_case *c, const char *arch) { compile_with(c, arch, NULL); }

/* The case against the op's footprint (plan/footprint.c, what the plan reader proves inside each tensor):
 * its integer slots are accepted, every slot the op needs has a buffer holding the bytes the op touches
 * (exactly those bytes, but for the strided operands of ROPE and attention, whose cases carry rows wider
 * than they read), and the slots the op writes are outputs. */
static int strided_case(int op) {
  switch (op) {
  case OP_ROPE: case OP_ATTN_FWD: case OP_ATTN_BWD_PREP: case OP_ATTN_BWD_DKV: case OP_ATTN_BWD_DQ:
  case OP_ATTN_BWD_DKV_ROPE: case OP_ATTN_BWD_DQ_ROPE: case OP_ATTN_BWD_FUSED: case OP_ATTN_DQ_STORE: return 1;
  default: return 0;
  }
}

static void footprint_case(const kc_case *c) {
  ddp_slot_use use[DDP_MAX_PTRS];
  char why[160];
  if (!CHECK(!ddp_instr_footprint(&c->in, 1, use, why, sizeof why), "%s: footprint refused: %s", c->label, why)) return;
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    const kc_buf *b = &c->buf[k];
    if (b->role == KC_UNUSED) {
      CHECK(!use[k].used || use[k].optional, "%s: p%d is required by the footprint but the case has none", c->label, k);
      continue;
    }
    if (!CHECK(use[k].used, "%s: p%d has a buffer the footprint does not use", c->label, k)) continue;
    const uint64_t bytes = (uint64_t)b->n * ddp_dtype_size(b->dt);
    CHECK(strided_case(c->in.op) ? use[k].bytes <= bytes : use[k].bytes == bytes,
          "%s: p%d footprint %llu bytes, the case's buffer %llu", c->label, k, (unsigned long long)use[k].bytes,
          (unsigned long long)bytes);
    CHECK(!use[k].write || b->role == KC_OUT || b->role == KC_INOUT, "%s: p%d is written but the case's input",
          c->label, k);
  }
}

/* The attention kernel choice (compiler/codegen/launch.c): on sm_90a, for bf16 at head dims 64 and 128
 * (ATTN_FWD, ATTN_BWD_DKV, ATTN_BWD_DQ; not the fused inverse RoPE), templates/attention_tma.cu where tensor
 * maps are allowed (the forward from T 512; persistent except dK/dV at head dim 128 from T 1024; two consumer
 * warpgroups for the forward and dQ below T 1024), attention_wgmma.cu otherwise; attention_mma.cu for bf16
 * elsewhere and under DDP_TUNE_{FWD,DKV,DQ}_WGMMA=2, attention_f32.cu for f32. Then every wgmma tile variant
 * the DDP_TUNE_* knobs can pick (warps 4 or 8, the forward's 64- or 128-key tiles) fits in shared memory
 * (227 KiB a block) and compiles. */
static void attention_choice(void) {
  const int ops[] = {OP_ATTN_FWD, OP_ATTN_BWD_DKV, OP_ATTN_BWD_DQ, OP_ATTN_BWD_DKV_ROPE, OP_ATTN_BWD_DQ_ROPE};
  const int64_t dims[] = {32, 64, 96, 128};
  const char *const archs[] = {"sm_90a", "sm_90", "sm_80"};
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
    for (int di = 0; di < 4; di++)
      for (int ai = 0; ai < 3; ai++)
        for (int bf = 0; bf < 2; bf++) {
          kc_case c;
          const int op = ops[oi];
          if (kc_make(op, bf ? DT_BF16 : DT_F32, (kc_shape){.a = 2, .b = 300, .c = dims[di], .flag = 1}, &c)) continue;
          ddp_launch L;
          char err[1024];
          if (!CHECK(!ddp_kernel_launch(&c.in, archs[ai], NULL, &L, err, sizeof err), "%s on %s: %s", c.label, archs[ai], err))
            continue;
          const int wg = bf && !strcmp(archs[ai], "sm_90a") && (dims[di] == 64 || dims[di] == 128) &&
                         (op == OP_ATTN_FWD || op == OP_ATTN_BWD_DKV || op == OP_ATTN_BWD_DQ);
          /* T 300: the persistent TMA kernels for dK/dV and dQ, the cp.async one for the forward (TMA from T 512) */
          const char *want = wg ? (op == OP_ATTN_FWD ? "attention_wgmma" : "attention_tma") : bf ? "attention_mma" : "attention_f32";
          CHECK(!strcmp(L.tpl, want), "%s on %s: template %s, expected %s", c.label, archs[ai], L.tpl, want);
        }
  for (size_t oi = 0; oi < 3; oi++) /* T 1100 and DDP_TUNE_*_WGMMA=4: TMA for all three */
    for (int force = 0; force < 2; force++) {
      kc_case c;
      kc_make(ops[oi], DT_BF16, (kc_shape){.a = 2, .b = force ? 300 : 1100, .c = 64, .flag = 1}, &c);
      ddp_codegen_opts o = {0};
      const int wp[] = {PARAM_TUNE_FWD_WGMMA, PARAM_TUNE_DKV_WGMMA, PARAM_TUNE_DQ_WGMMA};
      if (force) o.tune[wp[oi] - PARAM_TUNE_FWD_MT] = 4;
      ddp_launch L;
      char err[1024];
      if (CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s: %s", c.label, err))
        CHECK(!strcmp(L.tpl, "attention_tma"), "%s%s: template %s, expected attention_tma", c.label,
              force ? " with DDP_TUNE_*_WGMMA=4" : "", L.tpl);
      /* their work tiles in one grid dimension, persistent unless DDP_TUNE_ATTN_PERSISTENT=2 (T 300: forced) */
      const long long T = c.in.i[ATTN_I_T], bm = 16LL * (L.block[0] - 128) / 32,
                      tiles = c.in.i[ATTN_I_B] * c.in.i[ATTN_I_H] * ((T + bm - 1) / bm);
      CHECK(L.grid[0] == tiles && L.grid[1] == 1 && strstr(L.spec, "#define DDP_PERSISTENT 1\n"),
            "%s: grid %u x %u for %lld work tiles, persistent %d", c.label, L.grid[0], L.grid[1], tiles,
            strstr(L.spec, "DDP_PERSISTENT") != NULL);
      o.tune[PARAM_TUNE_ATTN_PERSISTENT - PARAM_TUNE_FWD_MT] = 2;
      if (CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s: %s", c.label, err))
        CHECK(!strcmp(L.tpl, "attention_tma") && !strstr(L.spec, "DDP_PERSISTENT") && L.grid[0] == tiles,
              "%s with DDP_TUNE_ATTN_PERSISTENT=2: template %s, grid %u, spec\n%s", c.label, L.tpl, L.grid[0], L.spec);
    }
  for (size_t oi = 0; oi < 3; oi++) { /* so much work that a block's count of streamed tiles could overflow */
    kc_case c;
    kc_make(ops[oi], DT_BF16, (kc_shape){.a = 2, .b = 1100, .c = 64, .flag = 1}, &c);
    c.in.i[ATTN_I_H] = 1 << 20, c.in.i[ATTN_I_T] = 8192; /* (the case's buffers are only read by the choice) */
    ddp_launch L;
    char err[1024];
    if (CHECK(!ddp_kernel_launch(&c.in, "sm_90a", NULL, &L, err, sizeof err), "%s, 2^21 heads: %s", c.label, err))
      CHECK(!strcmp(L.tpl, "attention_tma") && !strstr(L.spec, "DDP_PERSISTENT"),
            "%s, 2^21 heads x T 8192: template %s, persistent %d", c.label, L.tpl, strstr(L.spec, "DDP_PERSISTENT") != NULL);
  }
  for (size_t oi = 0; oi < 3; oi++) /* d 128: dK/dV from T 1024 one block per tile; below T 1024 two consumers */
    for (int longt = 0; longt < 2; longt++) {
      kc_case c;
      kc_make(ops[oi], DT_BF16, (kc_shape){.a = 2, .b = longt ? 1100 : 600, .c = 128, .flag = 1}, &c);
      ddp_launch L;
      char err[1024];
      if (!CHECK(!ddp_kernel_launch(&c.in, "sm_90a", NULL, &L, err, sizeof err), "%s: %s", c.label, err)) continue;
      const int want_persistent = !(ops[oi] == OP_ATTN_BWD_DKV && longt);
      CHECK(!strcmp(L.tpl, "attention_tma") && (strstr(L.spec, "#define DDP_PERSISTENT 1\n") != NULL) == want_persistent &&
                (longt || ops[oi] == OP_ATTN_BWD_DKV || L.block[0] == 384),
            "%s: template %s, persistent %d (want %d), block %u", c.label, L.tpl, strstr(L.spec, "DDP_PERSISTENT") != NULL,
            want_persistent, L.block[0]);
    }
  const int param[] = {PARAM_TUNE_FWD_WGMMA, PARAM_TUNE_DKV_WGMMA, PARAM_TUNE_DQ_WGMMA};
  const int first[] = {PARAM_TUNE_FWD_MT, PARAM_TUNE_DKV_MT, PARAM_TUNE_DQ_MT}; /* MT, BN, MINB, WARPS follow */
  int variants = 0;
  for (int k = 0; k < 3; k++)
    for (int di = 1; di < 4; di += 2) {
      kc_case c;
      kc_make(ops[k], DT_BF16, (kc_shape){.a = 2, .b = 300, .c = dims[di], .flag = 1}, &c);
      ddp_codegen_opts o = {0};
      o.tune[param[k] - PARAM_TUNE_FWD_MT] = 2;
      ddp_launch L;
      char err[1024];
      if (CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s: %s", c.label, err))
        CHECK(!strcmp(L.tpl, "attention_mma"), "%s with %s=2: template %s", c.label, ddp_param_var((ddp_param)param[k]), L.tpl);
      for (int warps = 4; warps <= 8; warps += 4)
        for (int bn = 64; bn <= (k == 0 ? 128 : 64); bn += 64) {
          o = (ddp_codegen_opts){0};
          o.tune[first[k] + 3 - PARAM_TUNE_FWD_MT] = warps;
          o.tune[first[k] + 1 - PARAM_TUNE_FWD_MT] = bn;
          o.tune[param[k] - PARAM_TUNE_FWD_MT] = 3; /* the cp.async kernel */
          if (!CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s warps %d bn %d: %s", c.label, warps, bn, err))
            continue;
          CHECK(!strcmp(L.tpl, "attention_wgmma") && L.smem <= 227 * 1024 && L.block[0] == 32u * (unsigned)warps,
                "%s warps %d bn %d: template %s, smem %u, block %u", c.label, warps, bn, L.tpl, L.smem, L.block[0]);
          compile_with(&c, "sm_90a", &o);
          variants++;
        }
    }
  /* the warp-specialised TMA forward: two or three consumer warpgroups, 64- or 128-key tiles, 2 or 3 stages
   * (three d128 stages of 128 keys do not fit and fall back to two); a row stride that is not a multiple of
   * 8 elements cannot be a tensor map and keeps the cp.async kernel */
  int tma_variants = 0;
  for (int k = 1; k < 3; k++) /* dK/dV (two consumers); dQ with two or three */
    for (int di = 1; di < 4; di += 2)
      for (int cons = 2; cons <= (k == 2 ? 3 : 2); cons++) {
        kc_case c;
        kc_make(ops[k], DT_BF16, (kc_shape){.a = 2, .b = 1100, .c = dims[di], .flag = 1}, &c);
        ddp_codegen_opts o = {0};
        if (k == 2) o.tune[PARAM_TUNE_DQ_CONSUMERS - PARAM_TUNE_FWD_MT] = cons;
        ddp_launch L;
        char err[1024];
        if (!CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s TMA %d: %s", c.label, cons, err))
          continue;
        CHECK(!strcmp(L.tpl, "attention_tma") && strstr(L.spec, "#define DDP_TMA 1\n") && L.smem <= 227 * 1024 &&
                  L.block[0] == 128u * (unsigned)(cons + 1),
              "%s TMA %d: template %s, smem %u, block %u", c.label, cons, L.tpl, L.smem, L.block[0]);
        compile_with(&c, "sm_90a", &o);
        tma_variants++;
      }
  /* the fused backward: dQ shared by columns (the default) or, at d 64, by turns */
  for (int di = 1; di < 4; di += 2)
    for (int split = 1; split <= (dims[di] == 64 ? 2 : 1); split++) {
      kc_case c;
      kc_make(OP_ATTN_BWD_FUSED, DT_BF16, (kc_shape){.a = 2, .b = 1100, .c = dims[di], .flag = 1}, &c);
      ddp_codegen_opts o = {0};
      o.tune[PARAM_TUNE_FUSED_SPLIT - PARAM_TUNE_FWD_MT] = split;
      ddp_launch L;
      char err[1024];
      if (!CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s split %d: %s", c.label, split, err))
        continue;
      CHECK(!strcmp(L.tpl, "attention_tma") && L.smem <= 227 * 1024 - 256 && L.block[0] == 384 &&
                (strstr(L.spec, "#define DDP_DQ_TURNS 1\n") != NULL) == (split == 2),
            "%s split %d: template %s, smem %u, block %u", c.label, split, L.tpl, L.smem, L.block[0]);
      compile_with(&c, "sm_90a", &o);
      tma_variants++;
    }
  for (int di = 1; di < 4; di += 2)
    for (int cons = 2; cons <= 3; cons++)
      for (int bn = 64; bn <= 128; bn += 64)
        for (int nbuf = 2; nbuf <= 3; nbuf++) {
          kc_case c;
          kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 2, .b = 1100, .c = dims[di], .flag = 1}, &c);
          ddp_codegen_opts o = {0};
          o.tune[PARAM_TUNE_FWD_CONSUMERS - PARAM_TUNE_FWD_MT] = cons;
          o.tune[PARAM_TUNE_FWD_BN - PARAM_TUNE_FWD_MT] = bn;
          o.tune[PARAM_TUNE_FWD_NBUF - PARAM_TUNE_FWD_MT] = nbuf;
          ddp_launch L;
          char err[1024];
          if (!CHECK(!ddp_kernel_launch(&c.in, "sm_90a", &o, &L, err, sizeof err), "%s TMA %d/%d/%d: %s", c.label, cons, bn, nbuf, err))
            continue;
          CHECK(!strcmp(L.tpl, "attention_tma") && strstr(L.spec, "#define DDP_TMA 1\n") && L.smem <= 227 * 1024 &&
                    L.block[0] == 128u * (unsigned)(cons + 1),
                "%s TMA %d/%d/%d: template %s, smem %u, block %u", c.label, cons, bn, nbuf, L.tpl, L.smem, L.block[0]);
          compile_with(&c, "sm_90a", &o);
          tma_variants++;
        }
  kc_case c;
  kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 2, .b = 1100, .c = 64, .flag = 1}, &c);
  c.in.i[ATTN_I_KSTRIDE] += 4; /* (the case's buffers are only read by the choice, never run) */
  ddp_launch L;
  char err[1024];
  if (CHECK(!ddp_kernel_launch(&c.in, "sm_90a", NULL, &L, err, sizeof err), "%s, odd k stride: %s", c.label, err))
    CHECK(!strcmp(L.tpl, "attention_wgmma") && !strstr(L.spec, "DDP_TMA"), "%s, k stride %% 8 != 0: template %s",
          c.label, L.tpl);
  printf("ok   the attention kernel choice; %d wgmma and %d TMA tile variants specialised\n", variants, tma_variants);
}

static void expect_refusal(kc_case *c, const char *what, const char *needle) {
  ddp_launch L;
  char err[1024] = "";
  if (!CHECK(ddp_kernel_launch(&c->in, "sm_90a", NULL, &L, err, sizeof err) != 0, "%s: %s was accepted", c->label, what))
    return;
  if (CHECK(strstr(err, needle) && !strchr(err, '\n'), "%s: %s refused with an unclear message: %s", c->label, what,
            err))
    printf("ok   refused %s: %s\n", what, err);
}

int main(void) {
  const char *arch = "sm_90a";
  if (!CHECK(ddp_arch_supported(arch), "NVRTC here does not support %s", arch))
    return check_report("test_templates_compile");
  for (int op = 0; op < OP_COUNT; op++) {
    kc_shape shapes[128];
    const int ns = kc_shapes(op, shapes, 128, 1);
    CHECK(ns > 0, "%s: no test shapes", ddp_op_name(op));
    for (int a = 0; a < 2; a++)
      for (int s = 0; s < ns; s++) {
        kc_case c;
        if (kc_make(op, a ? DT_BF16 : DT_F32, shapes[s], &c)) { /* the fused inverse RoPE: bf16 only, refused below */
          CHECK(!a && (op == OP_ATTN_BWD_DKV_ROPE || op == OP_ATTN_BWD_DQ_ROPE || op == OP_ATTN_BWD_FUSED), "%s: no test case",
                ddp_op_name(op));
          continue;
        }
        footprint_case(&c);
        compile_case(&c, arch);
      }
  }
  attention_choice();
  /* refusals */
  kc_case c;
  kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 15}, &c);
  expect_refusal(&c, "odd head dim 15", "head dim");
  kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 130}, &c);
  expect_refusal(&c, "head dim 130", "head dim");
  kc_make(OP_ATTN_BWD_DQ, DT_F32, (kc_shape){.a = 1, .b = 64, .c = 8}, &c);
  expect_refusal(&c, "head dim 8", "head dim");
  for (int op = OP_ATTN_BWD_DKV_ROPE; op <= OP_ATTN_BWD_DQ_ROPE; op++) {
    kc_make(op, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
    for (int k = 0; k <= ATTN_P_DQ; k++)
      if (c.in.dt[k] == DT_BF16) c.in.dt[k] = DT_F32;
    expect_refusal(&c, "an f32 fused inverse RoPE", "bf16 tensor-core path");
  }
  /* the fused backward: bf16, head dims 56/64/120/128, sm_90a */
  kc_make(OP_ATTN_BWD_FUSED, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 96}, &c);
  c.in.i[ATTN_I_DH] = 96;
  expect_refusal(&c, "a fused backward at head dim 96", "head dim of 56, 64, 120 or 128");
  kc_make(OP_ATTN_BWD_FUSED, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
  c.in.dt[ATTN_P_Q] = DT_F32;
  expect_refusal(&c, "an f32 fused backward", "bf16 only");
  kc_make(OP_ATTN_BWD_FUSED, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
  c.in.i[ATTN_I_KSTRIDE] += 4;
  expect_refusal(&c, "a fused backward with a row stride not a multiple of 8", "multiples of 8");
  {
    kc_make(OP_ATTN_BWD_FUSED, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
    ddp_launch L;
    char err[512] = "";
    if (CHECK(ddp_kernel_launch(&c.in, "sm_80", NULL, &L, err, sizeof err) != 0 && strstr(err, "sm_90a"),
              "the fused backward for sm_80: %s", err[0] ? err : "accepted"))
      printf("ok   refused the fused backward on sm_80: %s\n", err);
  }
  kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
  c.in.dt[1] = DT_F32;
  expect_refusal(&c, "mixed q/k dtypes", "share one dtype");
  kc_make(OP_RMSNORM_FWD, DT_F32, (kc_shape){.a = 4, .b = 64}, &c);
  c.in.dt[0] = DT_F64;
  expect_refusal(&c, "an f64 slot", "f64");
  kc_make(OP_RMSNORM_FWD, DT_F32, (kc_shape){.a = 4, .b = 64}, &c);
  c.in.dt[3] = DT_BF16;
  expect_refusal(&c, "a bf16 rstd", "must be f32");
  kc_make(OP_RMSNORM_FWD, DT_F32, (kc_shape){.a = 4, .b = 1 << 20}, &c);
  expect_refusal(&c, "D = 2^20", "too long");
  kc_make(OP_ATTN_FWD, DT_BF16, (kc_shape){.a = 1, .b = 64, .c = 64}, &c);
  ddp_launch L;
  char err[512];
  CHECK(ddp_kernel_launch(&c.in, "sm_75", NULL, &L, err, sizeof err) != 0, "bf16 attention accepted for sm_75");
  printf("%d distinct modules compiled\n", ndone);
  free(done);
  return check_report("test_templates_compile");
}

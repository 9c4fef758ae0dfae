/* runtime/cuda/tma.c: encodes the tensor maps of the warp-specialised attention kernels; see tma.h. Each
 * attention tensor (element (b, t, h, j) at base[(b T + t) stride + h Dh + j], templates/attention.cuh) is
 * described as four dimensions (Dh, H, T, B) with byte strides (2 Dh, 2 stride, 2 T stride), so a box of
 * 64 columns x rows of one head never reaches into the next sequence: rows past T and columns past Dh come
 * back as zeros. Boxes are 128 bytes wide in the 128-byte swizzle, the layout the wgmma descriptors read. */
#include "tma.h"
#include "err.h"
#include "op_slots.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static encode_tiled_fn g_encode;
static cudaError_t g_lookup_rc;
static enum cudaDriverEntryPointQueryResult g_lookup_status;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void lookup(void) {
  void *fn = NULL;
  g_lookup_rc = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &g_lookup_status);
  if (g_lookup_rc == cudaSuccess && g_lookup_status == cudaDriverEntryPointSuccess) g_encode = (encode_tiled_fn)fn;
}

/* The value of "#define DDP_<name> <integer>" in a specialisation: 0, 1 when absent, -1 when not an integer.
 * (Names are given without the prefix: these are template parameters, not environment variables.) */
static int spec_int(const char *spec, const char *name, long long *v) {
  const size_t n = strlen(name);
  for (const char *s = spec; s && (s = strstr(s, "#define DDP_")) != NULL; s += 12) {
    const char *p = s + 12;
    if (strncmp(p, name, n) == 0 && p[n] == ' ') {
      char *end = NULL;
      *v = strtoll(p + n + 1, &end, 10);
      return end != p + n + 1 && (*end == '\n' || *end == 0) ? 0 : -1;
    }
  }
  return 1; /* absent */
}

int ddp_tma_spec(const char *spec, ddp_tma_rows *rows, char *err, size_t errcap) {
  memset(rows, 0, sizeof *rows);
  long long tma = 0, bm = 0, bn = 0;
  const int has = spec ? spec_int(spec, "TMA", &tma) : 1;
  if (has > 0 || (has == 0 && tma == 0)) return 0;
  if (has < 0 || tma != 1 || spec_int(spec, "BM", &bm) || spec_int(spec, "BN", &bn) || bm < 1 || bm > 256 ||
      bn < 1 || bn > 256)
    return ddp_fail(err, errcap, "a TMA kernel's specialisation needs DDP_TMA 1 and DDP_BM, DDP_BN in 1..256 (got TMA %lld, BM %lld, BN %lld)",
                    tma, bm, bn);
  long long persistent = 0;
  const int hp = spec_int(spec, "PERSISTENT", &persistent);
  if (hp < 0 || (hp == 0 && persistent != 0 && persistent != 1))
    return ddp_fail(err, errcap, "a TMA kernel's specialisation has DDP_PERSISTENT other than 0 or 1");
  rows->resident = (uint32_t)bm;
  rows->streamed = (uint32_t)bn;
  rows->persistent = hp == 0 && persistent == 1;
  return 0;
}

static int encode(CUtensorMap *map, const char *what, const void *base, const ddp_kargs *a, long long stride,
                  uint32_t rows, char *err, size_t errcap) {
  const long long B = a->i[ATTN_I_B], T = a->i[ATTN_I_T], H = a->i[ATTN_I_H], Dh = a->i[ATTN_I_DH];
  if (!base || B < 1 || T < 1 || H < 1 || Dh < 1 || stride < H * Dh)
    return ddp_fail(err, errcap, "tensor map of %s: B %lld, T %lld, H %lld, Dh %lld, row stride %lld, pointer %p",
                    what, B, T, H, Dh, stride, base);
  const cuuint64_t dim[4] = {(cuuint64_t)Dh, (cuuint64_t)H, (cuuint64_t)T, (cuuint64_t)B};
  const cuuint64_t strides[3] = {(cuuint64_t)Dh * 2, (cuuint64_t)stride * 2, (cuuint64_t)T * (cuuint64_t)stride * 2};
  const cuuint32_t box[4] = {64, 1, rows, 1}, estride[4] = {1, 1, 1, 1};
  const CUresult rc = g_encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)base, dim, strides, box, estride,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS)
    return ddp_fail(err, errcap, "%s:%d: cuTensorMapEncodeTiled(%s: %p, dims %lld x %lld x %lld x %lld, strides %lld/%lld bytes, box 64 x %u): CUresult %d",
                    __FILE__, __LINE__, what, base, Dh, H, T, B, Dh * 2, stride * 2, rows, (int)rc);
  return 0;
}

int ddp_tma_attention_maps(int op, const ddp_kargs *a, const ddp_tma_rows *rows, ddp_tmaps *maps, char *err,
                           size_t errcap) {
  pthread_once(&g_once, lookup);
  if (!g_encode)
    return ddp_fail(err, errcap, "%s:%d: cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled, 12000): %s (driver status %d)",
                    __FILE__, __LINE__, g_lookup_rc == cudaSuccess ? "not found" : cudaGetErrorString(g_lookup_rc),
                    (int)g_lookup_status);
  memset(maps, 0, sizeof *maps);
  const uint32_t R = rows->resident, S = rows->streamed;
  const long long sq = a->i[ATTN_I_QSTRIDE], sk = a->i[ATTN_I_KSTRIDE], sv = a->i[ATTN_I_VSTRIDE], so = a->i[ATTN_I_OSTRIDE];
  const void *q = a->p[ATTN_P_Q], *k = a->p[ATTN_P_K], *v = a->p[ATTN_P_V], *dout = a->p[ATTN_P_DO];
  switch (op) { /* maps 0, 1: the resident tiles; 2, 3: the streamed ones (templates/attention_tma.cu) */
  case OP_ATTN_FWD:
    return encode(&maps->m[0], "q", q, a, sq, R, err, errcap) || encode(&maps->m[2], "k", k, a, sk, S, err, errcap) ||
                   encode(&maps->m[3], "v", v, a, sv, S, err, errcap)
               ? -1
               : 0;
  case OP_ATTN_BWD_DKV:
  case OP_ATTN_BWD_FUSED:
    return encode(&maps->m[0], "k", k, a, sk, R, err, errcap) || encode(&maps->m[1], "v", v, a, sv, R, err, errcap) ||
                   encode(&maps->m[2], "q", q, a, sq, S, err, errcap) || encode(&maps->m[3], "do", dout, a, so, S, err, errcap)
               ? -1
               : 0;
  case OP_ATTN_BWD_DQ:
    return encode(&maps->m[0], "q", q, a, sq, R, err, errcap) || encode(&maps->m[1], "do", dout, a, so, R, err, errcap) ||
                   encode(&maps->m[2], "k", k, a, sk, S, err, errcap) || encode(&maps->m[3], "v", v, a, sv, S, err, errcap)
               ? -1
               : 0;
  default: return ddp_fail(err, errcap, "op %s has no tensor-map kernel", ddp_op_name(op));
  }
}

/* runtime/cuda/green.c: SM partitions for streams through CUDA green contexts (green.h). The driver calls
 * are found with cudaGetDriverEntryPointByVersion at the versions that introduced them (12.4, and 12.5 for
 * cuGreenCtxStreamCreate), so the executables start where no driver is installed. */
#include "green.h"
#include "cuda_check.h"
#include "driver_entry.h"
#include "err.h"
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

typedef struct green_fns {
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDeviceGetDevResource_v12040 get_resource;
  PFN_cuDevSmResourceSplitByCount_v12040 split;
  PFN_cuDevResourceGenerateDesc_v12040 gen_desc;
  PFN_cuGreenCtxCreate_v12040 create;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create;
  PFN_cuGreenCtxDestroy_v12040 destroy;
} green_fns;

/* The driver functions, found once (driver_entry.c); green_api(err) is NULL with the reason when the driver
 * lacks one (it has no green contexts). */
static green_fns g_fns;
static int g_loaded;

static const green_fns *green_api(char *err, size_t errcap) {
  if (g_loaded) return &g_fns;
  green_fns a;
  if (ddp_driver_entry("cuDeviceGet", 2000, (void **)&a.device_get, err, errcap) ||
      ddp_driver_entry("cuDeviceGetDevResource", 12040, (void **)&a.get_resource, err, errcap) ||
      ddp_driver_entry("cuDevSmResourceSplitByCount", 12040, (void **)&a.split, err, errcap) ||
      ddp_driver_entry("cuDevResourceGenerateDesc", 12040, (void **)&a.gen_desc, err, errcap) ||
      ddp_driver_entry("cuGreenCtxCreate", 12040, (void **)&a.create, err, errcap) ||
      ddp_driver_entry("cuGreenCtxStreamCreate", 12050, (void **)&a.stream_create, err, errcap) ||
      ddp_driver_entry("cuGreenCtxDestroy", 12040, (void **)&a.destroy, err, errcap))
    return NULL;
  g_fns = a;
  g_loaded = 1;
  return &g_fns;
}

#define CU_TRY(call, what)                                                                                     \
  do {                                                                                                         \
    CUresult r_ = (call);                                                                                      \
    if (r_ != CUDA_SUCCESS)                                                                                    \
      return ddp_fail(err, errcap, "%s:%d: %s: CUresult %d", __FILE__, __LINE__, what, (int)r_);              \
  } while (0)

static int make_ctx(const green_fns *a, CUdevResource *res, CUdevice dev, void **out, char *err, size_t errcap) {
  CUdevResourceDesc desc;
  CU_TRY(a->gen_desc(&desc, res, 1), "cuDevResourceGenerateDesc");
  CUgreenCtx g = NULL;
  CU_TRY(a->create(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  *out = g;
  return 0;
}

int ddp_green_open(ddp_green *g, int device, int sms, int with_rest, char *err, size_t errcap) {
  memset(g, 0, sizeof *g);
  const green_fns *a = green_api(err, errcap);
  if (!a) return -1;
  DDP_CUDA_TRY(cudaFree(NULL)); /* the primary context exists before the green ones retain it */
  CUdevice dev;
  CU_TRY(a->device_get(&dev, device), "cuDeviceGet");
  CUdevResource all, part, rest;
  memset(&all, 0, sizeof all), memset(&part, 0, sizeof part), memset(&rest, 0, sizeof rest);
  CU_TRY(a->get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource(SM)");
  g->device_sms = (int)all.sm.smCount;
  if (sms < 1 || sms >= g->device_sms)
    return ddp_fail(err, errcap, "a partition of %d SMs: GPU %d has %d (the partition needs 1 .. %d)", sms, device,
                    g->device_sms, g->device_sms - 1);
  unsigned groups = 1;
  CU_TRY(a->split(&part, &groups, &all, &rest, 0, (unsigned)sms), "cuDevSmResourceSplitByCount");
  if (groups != 1 || part.sm.smCount < (unsigned)sms || rest.sm.smCount < 1)
    return ddp_fail(err, errcap, "cuDevSmResourceSplitByCount(%d of %d SMs) gave %u group(s) of %u SMs, %u left",
                    sms, g->device_sms, groups, part.sm.smCount, rest.sm.smCount);
  g->sms = (int)part.sm.smCount;
  g->rest_sms = (int)rest.sm.smCount;
  if (make_ctx(a, &part, dev, &g->side, err, errcap)) return -1;
  if (with_rest && make_ctx(a, &rest, dev, &g->rest, err, errcap)) {
    ddp_green_close(g);
    return -1;
  }
  return 0;
}

int ddp_green_stream(const ddp_green *g, int rest, int prio, cudaStream_t *out, char *err, size_t errcap) {
  const green_fns *a = green_api(err, errcap);
  if (!a) return -1;
  void *ctx = rest ? g->rest : g->side;
  if (!ctx) return ddp_fail(err, errcap, "%s:%d: no green context for the %s SMs", __FILE__, __LINE__, rest ? "remaining" : "side");
  CUstream s = NULL;
  CU_TRY(a->stream_create(&s, (CUgreenCtx)ctx, CU_STREAM_NON_BLOCKING, prio), "cuGreenCtxStreamCreate");
  *out = (cudaStream_t)s;
  return 0;
}

void ddp_green_close(ddp_green *g) {
  char err[256];
  const green_fns *a = g->side || g->rest ? green_api(err, sizeof err) : NULL;
  if (a && g->side) (void)a->destroy((CUgreenCtx)g->side);
  if (a && g->rest) (void)a->destroy((CUgreenCtx)g->rest);
  g->side = g->rest = NULL;
}

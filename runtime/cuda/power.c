/* runtime/cuda/power.c: see power.h. NVML comes with the driver (libnvidia-ml.so.1), not with the toolkit,
 * so it is opened with dlopen and its entry points found by name; nothing links against it and no header
 * is needed: the few functions used are declared below with NVML's documented C signatures (every
 * function returns an int status, 0 for success; a device handle is an opaque pointer).
 *   nvmlInit_v2, nvmlShutdown, nvmlErrorString
 *   nvmlDeviceGetHandleByPciBusId_v2(bus id, &device)          the CUDA device's NVML handle
 *   nvmlDeviceGetTotalEnergyConsumption(device, &mJ)           energy since the driver loaded, mJ
 *   nvmlDeviceGetViolationStatus(device, POWER = 0, &{reference us, violation ns})
 *                                                              time the power limit held the clocks down
 *   nvmlDeviceGetEnforcedPowerLimit(device, &mW)               the limit in force */
#include "power.h"
#include "cuda_check.h"
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void *nvml_device;
typedef struct nvml_violation {
  unsigned long long reference_us, violation_ns;
} nvml_violation;
enum { NVML_OK = 0, NVML_PERF_POLICY_POWER = 0 };

struct ddp_power {
  void *lib;
  nvml_device dev;
  int (*shutdown)(void);
  int (*energy)(nvml_device, unsigned long long *);
  int (*violation)(nvml_device, int, nvml_violation *);
  int violation_ok; /* the GPU reports its power-limit time */
};

static void *sym(void *lib, const char *name, char *why, size_t whycap) {
  void *f = dlsym(lib, name);
  if (!f) snprintf(why, whycap, "libnvidia-ml.so.1 has no %s", name);
  return f;
}

ddp_power *ddp_power_open(int device, double *limit_w, char *why, size_t whycap) {
  *limit_w = 0;
  char bus[32];
  cudaError_t crc = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device);
  if (crc != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, whycap, "%s:%d: cudaDeviceGetPCIBusId(device %d): %s", __FILE__, __LINE__, device,
             cudaGetErrorName(crc));
    return NULL;
  }
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, whycap, "libnvidia-ml.so.1 cannot be opened: %s", e ? e : "?");
    return NULL;
  }
  int (*init)(void) = (int (*)(void))sym(lib, "nvmlInit_v2", why, whycap);
  const char *(*error)(int) = (const char *(*)(int))sym(lib, "nvmlErrorString", why, whycap);
  int (*by_bus)(const char *, nvml_device *) =
      (int (*)(const char *, nvml_device *))sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", why, whycap);
  int (*limit)(nvml_device, unsigned *) = (int (*)(nvml_device, unsigned *))sym(lib, "nvmlDeviceGetEnforcedPowerLimit",
                                                                              why, whycap);
  ddp_power *pw = calloc(1, sizeof *pw);
  if (!pw) snprintf(why, whycap, "out of host memory");
  if (!pw || !init || !error || !by_bus || !limit ||
      !(pw->shutdown = (int (*)(void))sym(lib, "nvmlShutdown", why, whycap)) ||
      !(pw->energy = (int (*)(nvml_device, unsigned long long *))sym(lib, "nvmlDeviceGetTotalEnergyConsumption", why,
                                                                     whycap)) ||
      !(pw->violation = (int (*)(nvml_device, int, nvml_violation *))sym(lib, "nvmlDeviceGetViolationStatus", why,
                                                                         whycap))) {
    free(pw);
    dlclose(lib);
    return NULL;
  }
  pw->lib = lib;
  int rc = init();
  if (rc != NVML_OK) {
    snprintf(why, whycap, "%s:%d: nvmlInit_v2: %s", __FILE__, __LINE__, error(rc));
    free(pw);
    dlclose(lib);
    return NULL;
  }
  unsigned long long mj = 0;
  nvml_violation v;
  if ((rc = by_bus(bus, &pw->dev)) != NVML_OK || (rc = pw->energy(pw->dev, &mj)) != NVML_OK) {
    snprintf(why, whycap, "%s:%d: NVML on GPU %s (CUDA device %d): %s", __FILE__, __LINE__, bus, device, error(rc));
    ddp_power_close(pw);
    return NULL;
  }
  pw->violation_ok = pw->violation(pw->dev, NVML_PERF_POLICY_POWER, &v) == NVML_OK;
  unsigned mw = 0;
  if (limit(pw->dev, &mw) == NVML_OK) *limit_w = mw / 1000.0;
  return pw;
}

int ddp_power_read(ddp_power *pw, ddp_energy *out) {
  unsigned long long mj = 0;
  nvml_violation v = {0, 0};
  if (pw->energy(pw->dev, &mj) != NVML_OK) return -1;
  if (pw->violation_ok && pw->violation(pw->dev, NVML_PERF_POLICY_POWER, &v) != NVML_OK) return -1;
  out->mJ = mj;
  out->power_capped_ns = pw->violation_ok ? v.violation_ns : UINT64_MAX;
  return 0;
}

void ddp_power_close(ddp_power *pw) {
  if (!pw) return;
  pw->shutdown();
  dlclose(pw->lib);
  free(pw);
}

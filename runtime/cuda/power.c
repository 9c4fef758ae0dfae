/* runtime/cuda/power.c: see power.h. NVML comes with the driver (libnvidia-ml.so.1), not with the toolkit,
 * so it is opened with dlopen and its entry points found by name; nothing links against it and no header
 * is needed: the few functions used are declared below with NVML's documented C signatures (every
 * function returns an int status, 0 for success; a device handle is an opaque pointer).
 *   nvmlInit_v2, nvmlShutdown, nvmlErrorString
 *   nvmlDeviceGetHandleByPciBusId_v2(bus id, &device)          the CUDA device's NVML handle
 *   nvmlDeviceGetTotalEnergyConsumption(device, &mJ)           energy since the driver loaded, mJ
 *   nvmlDeviceGetViolationStatus(device, POWER = 0, &{reference us, violation ns})
 *                                                              time the power limit held the clocks down
 *   nvmlDeviceGetEnforcedPowerLimit(device, &mW)               the limit in force
 * The sampler thread reads the energy counter every period and, when it has moved, records the new value
 * with the time it was first seen and the power-limit time; a caller copies that record under the mutex.
 * It reads only inside the windows the step loop opens (ddp_power_window: the GPU is busy and the host only
 * waits for it), and only a read that its last duration says ends before the window does. An NVML read
 * (3.9 ms on an H200) keeps the CUDA calls of the other threads waiting: read at any moment, every 20 ms,
 * it left the GPU idle between steps for 0.8-1.5 ms a step on average and up to 17 ms once (the XL step,
 * 2026-11-27), against 0.2-0.3 ms without the sampler. Where no window opens for MAX_GAP_S (steps shorter
 * than their issue, a loop that opens none), it reads anyway, so the counters still move. */
#include "power.h"
#include "clock.h"
#include "cuda_check.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_GAP_S 0.25

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
  bool violation_ok; /* the GPU reports its power-limit time */
  double period_s;
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t wake; /* signalled by close and by a new window */
  bool stop, failed;   /* under mu */
  ddp_energy latest;   /* under mu */
  double window_end;   /* under mu: reads may go on until then (ddp_now_s) */
};

static void *sym(void *lib, const char *name, char *why, size_t whycap) {
  void *f = dlsym(lib, name);
  if (!f) snprintf(why, whycap, "libnvidia-ml.so.1 has no %s", name);
  return f;
}

/* e from an energy reading mj taken at at_s, with the power-limit time read now: 0, or -1 when NVML fails. */
static int complete(ddp_power *pw, unsigned long long mj, double at_s, ddp_energy *e) {
  nvml_violation v = {0, 0};
  if (pw->violation_ok && pw->violation(pw->dev, NVML_PERF_POLICY_POWER, &v) != NVML_OK) return -1;
  e->mJ = mj;
  e->at_s = at_s;
  e->power_capped_ns = pw->violation_ok ? v.violation_ns : UINT64_MAX;
  return 0;
}

/* One reading of both counters into e (at_s: when the energy was read): 0, or -1 when NVML fails. */
static int sample(ddp_power *pw, ddp_energy *e) {
  unsigned long long mj = 0;
  if (pw->energy(pw->dev, &mj) != NVML_OK) return -1;
  return complete(pw, mj, ddp_now_s(), e);
}

/* Waits on the condition (mu held) for `seconds`, or until signalled. */
static void nap(ddp_power *pw, double seconds) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  const long ns = (long)(seconds * 1e9);
  until.tv_sec += ns / 1000000000L;
  until.tv_nsec += ns % 1000000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_cond_timedwait(&pw->wake, &pw->mu, &until);
}

static void *sampler(void *arg) {
  ddp_power *pw = arg;
  pthread_mutex_lock(&pw->mu);
  uint64_t seen = pw->latest.mJ;
  double last = ddp_now_s(), took = 0.005; /* the last read's end and duration (an H200's: 3.9 ms) */
  while (!pw->stop) {
    const double now = ddp_now_s();
    if (now + took >= pw->window_end && now - last < MAX_GAP_S) { /* no read fits: until a window or the gap */
      nap(pw, MAX_GAP_S - (now - last));
      continue;
    }
    pthread_mutex_unlock(&pw->mu);
    unsigned long long mj = 0;
    ddp_energy e;
    int rc = pw->energy(pw->dev, &mj) == NVML_OK ? 0 : -1;
    const double read_at = ddp_now_s();
    if (rc == 0 && mj != seen) rc = complete(pw, mj, read_at, &e); /* it moved: when, and the power-limit time */
    const double end = ddp_now_s();
    pthread_mutex_lock(&pw->mu);
    if (rc) {
      pw->failed = true;
      break;
    }
    if (mj != seen) {
      pw->latest = e;
      seen = e.mJ;
    }
    took = end - now > took ? end - now : 0.9 * took + 0.1 * (end - now);
    last = end;
    if (!pw->stop) nap(pw, pw->period_s);
  }
  pthread_mutex_unlock(&pw->mu);
  return NULL;
}

ddp_power *ddp_power_open(int device, double period_s, double *limit_w, char *why, size_t whycap) {
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
  pw->period_s = period_s;
  int rc = init();
  if (rc != NVML_OK) {
    snprintf(why, whycap, "%s:%d: nvmlInit_v2: %s", __FILE__, __LINE__, error(rc));
    free(pw);
    dlclose(lib);
    return NULL;
  }
  nvml_violation v;
  if ((rc = by_bus(bus, &pw->dev)) == NVML_OK) {
    pw->violation_ok = pw->violation(pw->dev, NVML_PERF_POLICY_POWER, &v) == NVML_OK;
    if (sample(pw, &pw->latest)) rc = -1;
  }
  if (rc != NVML_OK) {
    snprintf(why, whycap, "%s:%d: NVML on GPU %s (CUDA device %d): %s", __FILE__, __LINE__, bus, device,
             rc < 0 ? "reading the energy counter failed" : error(rc));
    ddp_power_close(pw);
    return NULL;
  }
  unsigned mw = 0;
  if (limit(pw->dev, &mw) == NVML_OK) *limit_w = mw / 1000.0;
  if (pthread_mutex_init(&pw->mu, NULL)) {
    snprintf(why, whycap, "the energy sampler's mutex cannot be made");
    ddp_power_close(pw);
    return NULL;
  }
  if (pthread_cond_init(&pw->wake, NULL) || pthread_create(&pw->thread, NULL, sampler, pw)) {
    snprintf(why, whycap, "the energy sampler thread cannot start");
    pthread_mutex_destroy(&pw->mu);
    ddp_power_close(pw);
    return NULL;
  }
  pw->started = true;
  return pw;
}

int ddp_power_read(ddp_power *pw, ddp_energy *out) {
  pthread_mutex_lock(&pw->mu);
  const bool failed = pw->failed;
  if (!failed) *out = pw->latest;
  pthread_mutex_unlock(&pw->mu);
  return failed ? -1 : 0;
}

void ddp_power_window(ddp_power *pw, double seconds) {
  pthread_mutex_lock(&pw->mu);
  pw->window_end = ddp_now_s() + seconds;
  pthread_cond_signal(&pw->wake);
  pthread_mutex_unlock(&pw->mu);
}

void ddp_power_close(ddp_power *pw) {
  if (!pw) return;
  if (pw->started) {
    pthread_mutex_lock(&pw->mu);
    pw->stop = true;
    pthread_cond_signal(&pw->wake);
    pthread_mutex_unlock(&pw->mu);
    pthread_join(pw->thread, NULL);
    pthread_cond_destroy(&pw->wake);
    pthread_mutex_destroy(&pw->mu);
  }
  pw->shutdown();
  dlclose(pw->lib);
  free(pw);
}

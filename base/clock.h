/* base/clock.h: the monotonic clock every timeout, deadline and host-side timing in ddpc reads. */
#ifndef DDP_CLOCK_H
#define DDP_CLOCK_H
#include <errno.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC (arbitrary origin; differences only). */
static inline double ddp_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleeps for `s` seconds (>= 0), resuming after signals. */
static inline void ddp_sleep_s(double s) {
  if (!(s > 0)) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
#endif

/* compiler/frontend/watchdog.c: the time limit of a schedule's Lua phases (running the schedule, and each
 * call of its bucket function). A thread started for the phase watches the CPU time of the thread that
 * runs Lua and the wall-clock time; past the limit it prints one line naming the schedule and ends the
 * process with status 1. Lua cannot switch it off, and it reaches code the instruction hook never sees (a
 * C loop inside the string library, a blocked read). Ending the process leaves nothing half-written: ddpc
 * writes its plan only after the Lua phases. The limit is ddpc's --time-limit, never the schedule's. */
#include "fe.h"
#include "clock.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double fe_time_limit_s = FE_TIME_LIMIT_S;

void ddp_schedule_time_limit(double seconds) {
  if (seconds > 0) fe_time_limit_s = seconds;
}

struct fe_watch {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  clockid_t cpu;         /* CPU-time clock of the thread running Lua */
  double cpu0, wall0;    /* the clocks when the phase began */
  char where[FE_WHERE_MAX];
  char what[32];         /* "the schedule" or "parallel.buckets" */
};

static double fe_clock_s(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *fe_watch_run(void *arg) {
  fe_watch *w = arg;
  double limit = fe_time_limit_s;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20 * 1000 * 1000; /* look every 20 ms */
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (w->done) break;
    double cpu = fe_clock_s(w->cpu) - w->cpu0, wall = ddp_now_s() - w->wall0;
    if (cpu <= limit && wall <= FE_WALL_FACTOR * limit) continue;
    bool by_cpu = cpu > limit;
    char line[FE_WHERE_MAX + 256];
    int n = snprintf(line, sizeof line,
                     "%s: %s ran longer than %g s of %s (ddpc --time-limit %g): an endless loop, or a "
                     "pattern or string operation too slow for a schedule?\n",
                     w->where, w->what, by_cpu ? limit : FE_WALL_FACTOR * limit,
                     by_cpu ? "CPU time" : "wall-clock time", limit);
    if (n > 0 && write(STDERR_FILENO, line, strlen(line)) < 0) _exit(1);
    _exit(1);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

fe_watch *fe_watch_begin(const char *where, const char *what) {
  fe_watch *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  snprintf(w->where, sizeof w->where, "%s", where);
  snprintf(w->what, sizeof w->what, "%s", what);
  pthread_condattr_t ca;
  int ok = pthread_getcpuclockid(pthread_self(), &w->cpu) == 0 && pthread_condattr_init(&ca) == 0;
  if (ok) {
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&w->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!ok) {
    free(w);
    return NULL;
  }
  pthread_mutex_init(&w->mu, NULL);
  w->cpu0 = fe_clock_s(w->cpu);
  w->wall0 = ddp_now_s();
  if (pthread_create(&w->thread, NULL, fe_watch_run, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  return w;
}

void fe_watch_end(fe_watch *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

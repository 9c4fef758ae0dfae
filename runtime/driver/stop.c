/* runtime/driver/stop.c: see stop.h. Lock-free: the handler writes sig_atomic_t flags and the time of the
 * first signal, and calls only async-signal-safe functions (clock_gettime, sigaction, raise). */
#include "stop.h"
#include <signal.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t g_signal;   /* first SIGTERM/SIGINT received */
static volatile sig_atomic_t g_honoured; /* the signal the step loop stopped for */
static struct timespec g_first;          /* when g_signal arrived (written before g_signal) */

static void on_stop_signal(int sig) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!g_signal) {
    g_first = now;
    g_signal = sig;
    return;
  }
  /* One request often arrives twice: GNU timeout signals the command and then its process group, a terminal's
   * Ctrl-C reaches every rank that --nproc's parent also forwards it to. Only a signal at least
   * DDP_STOP_REPEAT_S after the first is a second request: the default action (a stuck run can be killed). */
  const double since = (double)(now.tv_sec - g_first.tv_sec) + 1e-9 * (double)(now.tv_nsec - g_first.tv_nsec);
  if (since < DDP_STOP_REPEAT_S) return;
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

void ddp_stop_install(void) {
  static const int sigs[] = {SIGTERM, SIGINT};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&sa.sa_mask, sigs[i]); /* one at a time */
  sa.sa_flags = SA_RESTART;
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    sigaction(sigs[i], &sa, NULL);
  }
}

int ddp_stop_signal(void) { return g_signal; }

void ddp_stop_honoured(int sig) { g_honoured = sig; }

int ddp_stop_exit_status(void) { return g_honoured ? 128 + g_honoured : 0; }

void ddp_stop_reset(void) { g_signal = g_honoured = 0; }

/* runtime/driver/stop.c: see stop.h. Lock-free: the handler writes one sig_atomic_t. */
#include "stop.h"
#include <signal.h>
#include <string.h>

static volatile sig_atomic_t g_signal;   /* first SIGTERM/SIGINT received */
static volatile sig_atomic_t g_honoured; /* the signal the step loop stopped for */

static void on_stop_signal(int sig) {
  if (!g_signal) g_signal = sig;
}

void ddp_stop_install(void) {
  static const int sigs[] = {SIGTERM, SIGINT};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    sigaction(sigs[i], &sa, NULL);
  }
}

int ddp_stop_signal(void) { return g_signal; }

void ddp_stop_honoured(int sig) { g_honoured = sig; }

int ddp_stop_exit_status(void) { return g_honoured ? 128 + g_honoured : 0; }

void ddp_stop_reset(void) { g_signal = g_honoured = 0; }

/* runtime/driver/stop.c: see stop.h. Lock-free: the handler uses lock-free atomics (it may run on any
 * thread, and on two at once: the ranks-as-threads, NCCL's and CUDA's threads do not block the signals) and
 * only async-signal-safe calls (clock_gettime, sigaction, raise). */
#include "stop.h"
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_int g_signal;          /* first SIGTERM/SIGINT received */
static atomic_llong g_first_ns;      /* when it arrived (CLOCK_MONOTONIC); 0 while being recorded */
static volatile sig_atomic_t g_honoured; /* the signal the step loop stopped for */

static void on_stop_signal(int sig) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const long long now_ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
  int none = 0;
  if (atomic_compare_exchange_strong(&g_signal, &none, sig)) {
    atomic_store(&g_first_ns, now_ns);
    return;
  }
  /* One request often arrives twice: GNU timeout signals the command and then its process group, a terminal's
   * Ctrl-C reaches every rank that --nproc's parent also forwards it to. Only a signal at least
   * DDP_STOP_REPEAT_S after the first is a second request: the default action (a stuck run can be killed).
   * A first signal still being recorded on another thread (time 0) is the same request. */
  const long long first = atomic_load(&g_first_ns);
  if (first == 0 || (double)(now_ns - first) < DDP_STOP_REPEAT_S * 1e9) return;
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

int ddp_stop_signal(void) { return atomic_load(&g_signal); }

void ddp_stop_honoured(int sig) { g_honoured = sig; }

int ddp_stop_exit_status(void) { return g_honoured ? 128 + g_honoured : 0; }

void ddp_stop_reset(void) {
  atomic_store(&g_first_ns, 0);
  atomic_store(&g_signal, 0);
  g_honoured = 0;
}

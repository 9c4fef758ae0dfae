/* tests/unit/launch/test_launch_stop.c: a graceful stop under `ddprun --nproc` (issue 14): with the stop
 * handlers installed (runtime/driver/stop.h, as ddprun's main does) a SIGTERM sent to the launcher reaches
 * every rank as a recorded request, not a kill: each rank notices it, finishes on its own and exits 143,
 * and the launcher returns 143. Rank 0 sends the SIGTERM to the launcher once rank 1 is ready. Then, in
 * children of their own: a signal repeated within DDP_STOP_REPEAT_S is the same request (GNU timeout sends
 * two), and one after it takes the default action. */
#include "launch.h"
#include "stop.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

typedef struct {
  int ready[2];  /* rank 1 -> rank 0: running with its handlers */
  int report[2]; /* ranks -> test: "rank, signal" of a graceful stop */
} ctx;

static int rank_main(const ddp_identity *id, void *p) {
  ctx *c = p;
  close(c->ready[id->rank == 1 ? 0 : 1]);
  if (id->rank == 1 && write(c->ready[1], "r", 1) != 1) return 20;
  if (id->rank == 0) {
    char b;
    if (read(c->ready[0], &b, 1) != 1) return 21;
    kill(getppid(), SIGTERM);
  }
  for (int i = 0; i < 1000 && !ddp_stop_signal(); i++) usleep(10 * 1000); /* the step loop's boundaries */
  int sig = ddp_stop_signal();
  if (!sig) return 22;
  unsigned char msg[2] = {(unsigned char)id->rank, (unsigned char)sig};
  if (write(c->report[1], msg, 2) != 2) return 23;
  ddp_stop_honoured(sig);
  return ddp_stop_exit_status();
}

/* A child with the handlers that raises SIGTERM, waits gap_ms, raises it again and exits 7 if it survives
 * with the first request recorded; returns its wait status. raise() delivers before it returns, so the
 * kernel cannot merge the two. */
static int repeated_signal_status(int gap_ms) {
  pid_t pid = fork();
  if (pid == 0) {
    ddp_stop_reset();
    ddp_stop_install();
    raise(SIGTERM);
    struct timespec gap = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
    while (nanosleep(&gap, &gap) != 0) {}
    raise(SIGTERM);
    _exit(ddp_stop_signal() == SIGTERM ? 7 : 8);
  }
  int st = -1;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return st;
}

int main(void) {
  ddp_stop_install();
  ctx c;
  CHECK(pipe(c.ready) == 0 && pipe(c.report) == 0);
  char err[256] = "";
  int rc = ddp_launch_local(2, rank_main, &c, err, sizeof err);
  CHECK_INT("the launcher's status after SIGTERM", 143, rc);
  close(c.report[1]);
  unsigned char got[8];
  ssize_t n = read(c.report[0], got, sizeof got);
  CHECK_INT("bytes of graceful-stop reports (2 ranks x 2)", 4, (int)n);
  int mask = 0;
  for (ssize_t i = 0; i + 1 < n; i += 2) {
    CHECK_INT("the signal each rank saw", SIGTERM, got[i + 1]);
    mask |= 1 << got[i];
  }
  CHECK_INT("ranks that stopped gracefully (mask)", 3, mask);
  CHECK_CONTAINS("the launcher's line", err, "received SIGTERM");
  int quick = repeated_signal_status(20);
  CHECK(WIFEXITED(quick) && WEXITSTATUS(quick) == 7, "a SIGTERM 20 ms after the first is the same request: status %#x", quick);
  int late = repeated_signal_status((int)(DDP_STOP_REPEAT_S * 1000) + 200);
  CHECK(WIFSIGNALED(late) && WTERMSIG(late) == SIGTERM, "a SIGTERM %.1f s after the first kills: status %#x",
            DDP_STOP_REPEAT_S + 0.2, late);
  return check_report("test_launch_stop");
}

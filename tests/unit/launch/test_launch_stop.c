/* tests/unit/launch/test_launch_stop.c: a graceful stop under `ddprun --nproc` (issue 14): with the stop
 * handlers installed (runtime/driver/stop.h, as ddprun's main does) a SIGTERM sent to the launcher reaches
 * every rank as a recorded request, not a kill: each rank notices it, finishes on its own and exits 143,
 * and the launcher returns 143. Rank 0 sends the SIGTERM to the launcher once rank 1 is ready. */
#include "launch.h"
#include "stop.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
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
  return check_report("test_launch_stop");
}

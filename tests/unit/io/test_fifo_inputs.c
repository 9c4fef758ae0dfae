/* tests/unit/io/test_fifo_inputs.c: every reader of ddprun's inputs refuses a FIFO at once (before this, an
 * open for reading waited for a writer forever): the plan (ddp_plan_read), a checkpoint file (ddp_st_open).
 * alarm() turns a blocked open into a failed test instead of a hung one. */
#include "check.h"
#include "plan.h"
#include "safetensors.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_fifo_inputs: FAIL: an open blocked on a FIFO\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

int main(void) {
  char dir[] = "/tmp/ddp-fifo-XXXXXX", path[300], err[512] = "";
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/fifo", dir);
  if (!CHECK(mkfifo(path, 0600) == 0, "mkfifo")) return check_report("test_fifo_inputs");
  signal(SIGALRM, on_alarm);
  alarm(5);
  CHECK(ddp_plan_read(path, err, sizeof err) == NULL, "plan from a FIFO");
  CHECK_CONTAINS("plan message", err, "not a regular file");
  err[0] = 0;
  CHECK(ddp_st_open(path, err, sizeof err) == NULL, "checkpoint from a FIFO");
  CHECK_CONTAINS("checkpoint message", err, "not a regular file");
  alarm(0);
  unlink(path);
  rmdir(dir);
  return check_report("test_fifo_inputs");
}

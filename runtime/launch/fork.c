/* runtime/launch/fork.c: `ddprun --nproc N`: forks N local ranks and supervises them. The parent picks
 * a free port, forks, then waits on a self-pipe fed by its SIGCHLD/SIGINT/SIGTERM/SIGHUP handlers: the
 * first rank that fails is reported in one line and the others get SIGTERM, then SIGKILL after a grace
 * period; signals sent to the parent are forwarded. Children die with the parent (PR_SET_PDEATHSIG). */
#include "launch.h"
#include "clock.h"
#include "err.h"
#include "param.h"
#include "rendezvous.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_MAX_NPROC 4096

/* Signals the parent handles: SIGCHLD wakes it, the others are forwarded to the ranks. */
static const int k_forwarded[] = {SIGINT, SIGTERM, SIGHUP};
static const char *const k_forwarded_name[] = {"SIGINT", "SIGTERM", "SIGHUP"};
enum { NFWD = sizeof k_forwarded / sizeof k_forwarded[0] };
static volatile sig_atomic_t g_received[NFWD]; /* counts, read by the supervisor loop */
static volatile sig_atomic_t g_wake_fd = -1;    /* write end of the self-pipe */

static void launch_on_signal(int sig) {
  int saved = errno;
  for (int i = 0; i < NFWD; i++)
    if (k_forwarded[i] == sig) g_received[i]++;
  if (g_wake_fd >= 0) {
    char b = 0;
    ssize_t w = write(g_wake_fd, &b, 1); /* full pipe: a wake-up is already pending */
    (void)w;
  }
  errno = saved;
}

int ddp_launch_free_port(char *err, size_t errcap) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
    ddp_fail(err, errcap, "cannot find a free TCP port: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

static void set_env_int(const char *name, int v) {
  char b[16];
  snprintf(b, sizeof b, "%d", v);
  setenv(name, b, 1);
}

/* The child side: never returns. */
_Noreturn static void launch_child(int rank, int nproc, int port, pid_t parent, const struct sigaction *old,
                         int (*rank_main)(const ddp_identity *, void *), void *ctx, const int pipefd[2]) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1); /* the parent died before prctl took effect */
  sigaction(SIGCHLD, &old[NFWD], NULL);
  for (int i = 0; i < NFWD; i++) sigaction(k_forwarded[i], &old[i], NULL);
  g_wake_fd = -1;
  close(pipefd[0]);
  close(pipefd[1]);

  ddp_identity id = {.rank = rank, .world = nproc, .local_rank = rank, .master_port = port, .source = "local"};
  snprintf(id.master_addr, sizeof id.master_addr, "127.0.0.1");
  unsetenv("SLURM_PROCID");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  set_env_int("RANK", rank);
  set_env_int("WORLD_SIZE", nproc);
  set_env_int("LOCAL_RANK", rank);
  set_env_int("LOCAL_WORLD_SIZE", nproc);
  setenv("MASTER_ADDR", id.master_addr, 1);
  set_env_int("MASTER_PORT", port);

  int rc = rank_main(&id, ctx);
  fflush(NULL);
  _exit(rc == 0 ? 0 : rc >= 1 && rc <= 255 ? rc : 1);
}

typedef struct supervisor {
  pid_t *pid;    /* per rank; 0 once reaped */
  int n, live;
  bool stopping; /* SIGTERM sent (or forwarded); SIGKILL at kill_at */
  bool killed;
  double kill_at;
  double grace;  /* DDP_LAUNCH_GRACE_S */
  int result;    /* 0, or the exit status ddprun should use */
  char *err;
  size_t errcap;
} supervisor;

static void signal_live(supervisor *s, int sig) {
  for (int r = 0; r < s->n; r++)
    if (s->pid[r] > 0) kill(s->pid[r], sig);
}

static void begin_stop(supervisor *s, int sig) {
  signal_live(s, sig);
  if (!s->stopping) s->kill_at = ddp_now_s() + s->grace;
  s->stopping = true;
}

/* Reports a line on stderr and keeps it in err. */
static void report(supervisor *s, const char *line) {
  fprintf(stderr, "%s\n", line);
  fflush(stderr);
  if (s->err && s->errcap) snprintf(s->err, s->errcap, "%s", line);
}

static void reap(supervisor *s) {
  for (int r = 0; r < s->n; r++) {
    int st;
    if (s->pid[r] <= 0) continue;
    pid_t w = waitpid(s->pid[r], &st, WNOHANG);
    if (w == 0 || (w < 0 && errno == EINTR)) continue;
    s->pid[r] = 0, s->live--;
    if (w < 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 0) || s->stopping) continue;
    char line[160];
    if (WIFEXITED(st)) {
      snprintf(line, sizeof line, "ddprun: rank %d exited with status %d", r, WEXITSTATUS(st));
      s->result = WEXITSTATUS(st);
    } else {
      int sig = WTERMSIG(st);
      snprintf(line, sizeof line, "ddprun: rank %d killed by signal %d (%s)%s", r, sig, strsignal(sig),
               WCOREDUMP(st) ? ", core dumped" : "");
      s->result = 128 + sig;
    }
    report(s, line);
    begin_stop(s, SIGTERM);
  }
}

static void escalate(supervisor *s) {
  char line[256];
  int left = 0, shown = 0, len;
  for (int r = 0; r < s->n; r++) left += s->pid[r] > 0;
  len = snprintf(line, sizeof line, "ddprun: %s", left == 1 ? "rank" : "ranks");
  for (int r = 0; r < s->n && len < (int)sizeof line - 96; r++)
    if (s->pid[r] > 0) len += snprintf(line + len, sizeof line - (size_t)len, "%s%d", shown++ ? ", " : " ", r);
  if (shown < left) len += snprintf(line + len, sizeof line - (size_t)len, ", ...");
  snprintf(line + len, sizeof line - (size_t)len, " still running %g s after SIGTERM: sending SIGKILL",
           s->grace);
  fprintf(stderr, "%s\n", line);
  signal_live(s, SIGKILL);
  s->killed = true;
}

static void supervise(supervisor *s, int wake_rd) {
  int handled[NFWD] = {0};
  while (s->live > 0) {
    reap(s);
    for (int i = 0; i < NFWD; i++) {
      int got = g_received[i];
      if (got == handled[i]) continue;
      handled[i] = got;
      if (!s->stopping && s->live > 0) {
        char line[128];
        snprintf(line, sizeof line, "ddprun: received %s, stopping %d rank(s)", k_forwarded_name[i],
                 s->live);
        report(s, line);
        s->result = 128 + k_forwarded[i];
      }
      begin_stop(s, k_forwarded[i]);
    }
    if (s->stopping && !s->killed && ddp_now_s() >= s->kill_at) escalate(s);
    if (s->live == 0) break;
    int timeout_ms = 200; /* a safety net: SIGCHLD normally wakes the loop at once */
    if (s->stopping && !s->killed) {
      double left = (s->kill_at - ddp_now_s()) * 1000.0 + 1.0;
      if (left < timeout_ms) timeout_ms = left < 0 ? 0 : (int)left;
    }
    struct pollfd p = {.fd = wake_rd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) > 0) {
      char buf[64];
      while (read(wake_rd, buf, sizeof buf) > 0) {
      }
    }
  }
}

int ddp_launch_local(int nproc, int (*rank_main)(const ddp_identity *, void *), void *ctx, char *err,
                     size_t errcap) {
  if (nproc < 1 || nproc > LAUNCH_MAX_NPROC)
    return ddp_fail(err, errcap, "--nproc %d: must be between 1 and %d", nproc, LAUNCH_MAX_NPROC);
  if (!rank_main) return ddp_fail(err, errcap, "no rank entry point");
  double grace;
  if (ddp_param_seconds(PARAM_LAUNCH_GRACE_S, &grace, err, errcap)) return -1;
  int port = ddp_launch_free_port(err, errcap);
  if (port < 0) return -1;
  if (ddp_rendezvous_new_secret(err, errcap)) return -1; /* the ranks inherit it */
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK)) return ddp_fail(err, errcap, "pipe: %s", strerror(errno));
  supervisor s = {.pid = calloc((size_t)nproc, sizeof(pid_t)), .n = nproc, .err = err, .errcap = errcap,
                  .grace = grace};
  if (!s.pid) {
    ddp_fail(err, errcap, "out of memory for %d ranks", nproc);
    close(pipefd[0]), close(pipefd[1]);
    return -1;
  }
  for (int i = 0; i < NFWD; i++) g_received[i] = 0;
  g_wake_fd = pipefd[1];
  struct sigaction sa, old[NFWD + 1]; /* old[NFWD]: SIGCHLD */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = launch_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < NFWD; i++) { /* a signal ignored by whoever started us (nohup) stays ignored */
    sigaction(k_forwarded[i], NULL, &old[i]);
    if (old[i].sa_handler != SIG_IGN) sigaction(k_forwarded[i], &sa, NULL);
  }
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, &old[NFWD]);

  fflush(NULL); /* buffered output must not be written once per child */
  pid_t parent = getpid();
  int rc = 0;
  for (int r = 0; r < nproc; r++) {
    pid_t pid = fork();
    if (pid == 0) launch_child(r, nproc, port, parent, old, rank_main, ctx, pipefd);
    if (pid < 0) {
      ddp_fail(err, errcap, "cannot start rank %d of %d: fork: %s", r, nproc, strerror(errno));
      rc = -1;
      s.stopping = true, s.killed = true;
      signal_live(&s, SIGKILL);
      break;
    }
    s.pid[r] = pid, s.live++;
  }
  supervise(&s, pipefd[0]);
  if (rc == 0) rc = s.result;

  sigaction(SIGCHLD, &old[NFWD], NULL);
  for (int i = 0; i < NFWD; i++) sigaction(k_forwarded[i], &old[i], NULL);
  g_wake_fd = -1;
  close(pipefd[0]);
  close(pipefd[1]);
  free(s.pid);
  return rc;
}

/* tests/rendezvous_fixture.h: what the rendezvous tests share: rank processes forked on a local port
 * (spawn/collect, each bounded by alarm()), a free port, a random blob, CHECK_HAS. A child takes
 * g_child_secret as DDP_RENDEZVOUS_SECRET when it is set (NULL: the environment as it is). */
#ifndef DDP_TEST_RENDEZVOUS_FIXTURE_H
#define DDP_TEST_RENDEZVOUS_FIXTURE_H
#include "rendezvous.h"
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_plain.h"
#define CHECK_HAS(s, sub)                                                                               \
  do {                                                                                                  \
    if (!strstr((s), (sub))) {                                                                          \
      fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, (s), (sub));                  \
      g_fail++;                                                                                         \
    }                                                                                                   \
  } while (0)

enum { BLOB = 128 };

static const char *g_child_secret;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What a rank process reports back through its pipe. */
typedef struct outcome {
  int rc;
  double seconds; /* time spent inside ddp_rendezvous */
  char err[512];
  uint8_t blob[BLOB];
} outcome;

typedef struct proc {
  pid_t pid;
  int rd;
} proc;

/* Forks a rank that waits `delay` s, then runs the rendezvous (rank 0 serves `blob`). */
static proc spawn(int rank, int world, const char *addr, int port, const uint8_t *blob, size_t len, double timeout,
                  double delay) {
  int fds[2];
  proc p = {-1, -1};
  if (pipe(fds)) return p;
  p.pid = fork();
  if (p.pid == 0) {
    alarm(30);
    close(fds[0]);
    if (g_child_secret) setenv("DDP_RENDEZVOUS_SECRET", g_child_secret, 1);
    ddp_identity id = {.rank = rank, .world = world, .local_rank = rank, .master_port = port, .source = "test"};
    snprintf(id.master_addr, sizeof id.master_addr, "%s", addr);
    outcome o;
    memset(&o, 0, sizeof o);
    uint8_t buf[2 * BLOB];
    memset(buf, 0, sizeof buf);
    if (rank == 0) memcpy(buf, blob, len);
    usleep((useconds_t)(delay * 1e6));
    double t0 = now_s();
    o.rc = ddp_rendezvous(&id, buf, len, timeout, o.err, sizeof o.err);
    o.seconds = now_s() - t0;
    memcpy(o.blob, buf, BLOB);
    _exit(write(fds[1], &o, sizeof o) == sizeof o ? 0 : 1);
  }
  close(fds[1]);
  p.rd = fds[0];
  return p;
}

static outcome collect(proc p) {
  outcome o;
  memset(&o, 0, sizeof o);
  o.rc = -99;
  snprintf(o.err, sizeof o.err, "(the rank process reported nothing)");
  if (p.pid < 0) return o;
  if (read(p.rd, &o, sizeof o) != sizeof o) {
    o.rc = -99;
    snprintf(o.err, sizeof o.err, "(the rank process reported nothing)");
  }
  close(p.rd);
  int st;
  waitpid(p.pid, &st, 0);
  return o;
}

static int free_port(void) {
  char err[256];
  int port = ddp_launch_free_port(err, sizeof err);
  if (port < 0) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  return port;
}

static void random_blob(uint8_t *b) {
  if (getrandom(b, BLOB, 0) != BLOB)
    for (int i = 0; i < BLOB; i++) b[i] = (uint8_t)rand();
}
#endif

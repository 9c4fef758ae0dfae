/* tests/unit/launch/test_rendezvous.c: the NCCL-id rendezvous between forked processes on a free local port: three
 * ranks get rank 0's random blob (peers started first, so they retry), again on the same port, through
 * a host name; a peer that never arrives (rank 0 names it after ~1 s); a rank 0 that never starts (the
 * peer names the address); world and length mismatches refused on both sides; stray clients ignored;
 * bad arguments. Every process is bounded by alarm(). */
#include "rendezvous_fixture.h"

/* world ranks on one port; peers start before rank 0 so they must retry. */
static void run_world(const char *addr, int world, int port) {
  uint8_t blob[BLOB];
  random_blob(blob);
  proc p[8];
  for (int r = 1; r < world; r++) p[r] = spawn(r, world, addr, port, NULL, BLOB, 10, 0);
  p[0] = spawn(0, world, addr, port, blob, BLOB, 10, 0.3);
  for (int r = 0; r < world; r++) {
    outcome o = collect(p[r]);
    CHECK(o.rc == 0);
    if (o.rc) fprintf(stderr, "  %s rank %d: %s\n", addr, r, o.err);
    CHECK(!memcmp(o.blob, blob, BLOB));
  }
}

static void test_success(void) {
  int port = free_port();
  run_world("127.0.0.1", 3, port);
  run_world("127.0.0.1", 3, port); /* the same port right away: SO_REUSEADDR */
  run_world("localhost", 4, free_port());

  /* world 1: no network at all */
  ddp_identity id = {.rank = 0, .world = 1, .master_port = 1, .source = "test"};
  uint8_t blob[BLOB] = {1};
  char err[256];
  CHECK(ddp_rendezvous(&id, blob, BLOB, 1, err, sizeof err) == 0);
}

static void test_missing_peers(void) {
  int port = free_port();
  uint8_t blob[BLOB];
  random_blob(blob);
  proc p0 = spawn(0, 4, "127.0.0.1", port, blob, BLOB, 1, 0);
  proc p2 = spawn(2, 4, "127.0.0.1", port, NULL, BLOB, 1, 0);
  outcome o0 = collect(p0), o2 = collect(p2);
  char want[256];
  snprintf(want, sizeof want, "rendezvous: ranks 1, 3 did not arrive within 1 s at 127.0.0.1:%d", port);
  CHECK(o0.rc == -1);
  CHECK_STR("o0.err", want, o0.err);
  CHECK(o0.seconds >= 0.9 && o0.seconds < 3);
  CHECK(o2.rc == 0 && !memcmp(o2.blob, blob, BLOB));

  port = free_port();
  p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 0.5, 0);
  o0 = collect(p0);
  snprintf(want, sizeof want, "rendezvous: rank 1 did not arrive within 0.5 s at 127.0.0.1:%d", port);
  CHECK_STR("o0.err", want, o0.err);

  port = free_port();
  p0 = spawn(0, 9, "127.0.0.1", port, blob, BLOB, 1, 0);
  proc p4 = spawn(4, 9, "127.0.0.1", port, NULL, BLOB, 1, 0);
  o0 = collect(p0);
  collect(p4);
  snprintf(want, sizeof want, "rendezvous: ranks 1-3, 5-8 did not arrive within 1 s at 127.0.0.1:%d", port);
  CHECK_STR("o0.err", want, o0.err);
}

static void test_no_rank0(void) {
  int port = free_port();
  proc p = spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 1, 0);
  outcome o = collect(p);
  char want[128];
  snprintf(want, sizeof want, "rendezvous: rank 1 could not reach rank 0 at 127.0.0.1:%d within 1 s", port);
  CHECK(o.rc == -1);
  CHECK_CONTAINS("o.err", o.err, want);
  CHECK_CONTAINS("o.err", o.err, "Connection refused");
  CHECK(o.seconds >= 0.9 && o.seconds < 3);

  /* a name that does not resolve fails (at once, or at the deadline where DNS is unreachable) */
  p = spawn(1, 2, "no-such-host.invalid", port, NULL, BLOB, 1, 0);
  o = collect(p);
  CHECK(o.rc == -1);
  CHECK_CONTAINS("o.err", o.err, "no-such-host.invalid");
  CHECK(o.seconds < 3);
}

static void test_mismatch(void) {
  uint8_t blob[BLOB];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 5, 0);
  proc p2 = spawn(2, 3, "127.0.0.1", port, NULL, BLOB, 5, 0.1);
  outcome o0 = collect(p0), o2 = collect(p2);
  char want[256];
  snprintf(want, sizeof want,
           "rendezvous: rank 0 at 127.0.0.1:%d refused rank 2: rank 2 launched with world 3, rank 0 has world 2", port);
  CHECK(o2.rc == -1);
  CHECK_STR("o2.err", want, o2.err);
  snprintf(want, sizeof want, "rendezvous: rank 2 launched with world 3, rank 0 has world 2 (at 127.0.0.1:%d)", port);
  CHECK(o0.rc == -1);
  CHECK_STR("o0.err", want, o0.err);
  CHECK(o0.seconds < 3); /* rank 0 does not wait for its timeout */

  port = free_port();
  p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 5, 0);
  proc p1 = spawn(1, 2, "127.0.0.1", port, NULL, 64, 5, 0.1);
  o0 = collect(p0);
  outcome o1 = collect(p1);
  CHECK(o1.rc == -1);
  CHECK_CONTAINS("o1.err", o1.err, "refused rank 1: rank 1 expects a 64-byte id, rank 0 has 128 bytes");
  CHECK(o0.rc == -1);
  CHECK_CONTAINS("o0.err", o0.err, "rank 1 expects a 64-byte id");
}

/* Clients that are not ranks: one sends junk, one connects and says nothing. Rank 0 still serves. */
static void test_strays(void) {
  uint8_t blob[BLOB];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 5, 0);
  int junk = -1, silent = -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (int tries = 0; tries < 100 && silent < 0; tries++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      if (junk < 0) junk = fd;
      else silent = fd;
    } else {
      close(fd);
      usleep(20 * 1000);
    }
  }
  CHECK(junk >= 0 && silent >= 0);
  const char req[] = "GET / HTTP/1.0\r\n\r\n";
  CHECK(send(junk, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1));
  proc p1 = spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 5, 0.1);
  outcome o0 = collect(p0), o1 = collect(p1);
  CHECK(o0.rc == 0 && o1.rc == 0);
  if (o0.rc || o1.rc) fprintf(stderr, "  strays: %s | %s\n", o0.err, o1.err);
  CHECK(!memcmp(o1.blob, blob, BLOB));
  char c;
  CHECK(recv(junk, &c, 1, 0) <= 0); /* dropped without a reply */
  close(junk);
  close(silent);
}

static void test_arguments(void) {
  ddp_identity id = {.rank = 0, .world = 2, .master_port = 29500, .source = "test"};
  snprintf(id.master_addr, sizeof id.master_addr, "127.0.0.1");
  uint8_t blob[BLOB] = {0};
  char err[256];
  CHECK(ddp_rendezvous(&id, blob, 0, 1, err, sizeof err) == -1);
  CHECK_STR("err", "rendezvous: the id must be 1 to 1048576 bytes, got 0", err);
  CHECK(ddp_rendezvous(&id, blob, BLOB, 0, err, sizeof err) == -1);
  CHECK_STR("err", "rendezvous: timeout 0 s must be positive", err);
  id.rank = 2;
  CHECK(ddp_rendezvous(&id, blob, BLOB, 1, err, sizeof err) == -1);
  CHECK_STR("err", "rendezvous: invalid identity (rank 2 of world 2)", err);
  id.rank = 1, id.master_port = 0;
  CHECK(ddp_rendezvous(&id, blob, BLOB, 1, err, sizeof err) == -1);
  CHECK_STR("err", "rendezvous: master port 0 is not a TCP port", err);
}

int main(void) {
  alarm(60); /* a hang is a failure */
  signal(SIGPIPE, SIG_IGN);
  test_arguments();
  test_success();
  test_missing_peers();
  test_no_rank0();
  test_mismatch();
  test_strays();
  return check_report("test_rendezvous");
}

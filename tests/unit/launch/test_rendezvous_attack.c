/* tests/unit/launch/test_rendezvous_attack.c: the rendezvous under attack, over loopback only (issue 11): clients
 * without the secret (the old 16-byte hello, the new hello with a forged proof, a real peer with another
 * secret) get nothing and rank 0 goes on; a wrong world size from an unauthenticated client does not abort
 * rank 0; 100 idle connections do not lock the ranks out; idle and half-sent connections are closed after
 * 5 s; a second rank 1 is refused; rank 0 listens on 127.0.0.1 only; a rank 0 that does not know the
 * secret is found out; `--nproc` hands its ranks a fresh random secret. Every process is bounded by alarm(). */
#include "rendezvous_fixture.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <poll.h>

#define SECRET "0123456789abcdef0123456789abcdef-test-secret"

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A TCP connection to ip:port, retried for `patience` s while nothing listens; -1 when refused throughout. */
static int dial(const char *ip, int port, double patience) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, ip, &a.sin_addr);
  for (double until = ddp_now_s() + patience;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    if (fd >= 0) close(fd);
    if (ddp_now_s() >= until) return -1;
    usleep(20 * 1000);
  }
}

/* Reads until EOF, `want` bytes, or `secs` pass; returns the bytes read (-1 on a timeout with none). */
static long drain(int fd, uint8_t *buf, size_t want, double secs) {
  size_t got = 0;
  double until = ddp_now_s() + secs;
  while (got < want) {
    struct pollfd q = {.fd = fd, .events = POLLIN};
    int ms = (int)((until - ddp_now_s()) * 1000);
    if (ms <= 0 || poll(&q, 1, ms) <= 0) return got ? (long)got : -1;
    ssize_t r = recv(fd, buf + got, want - got, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  return (long)got;
}

static bool has_blob(const uint8_t *buf, long n, const uint8_t *blob) {
  for (long i = 0; i + BLOB <= n; i++)
    if (!memcmp(buf + i, blob, BLOB)) return true;
  return false;
}

/* The new hello "DDR2" rank world len nonce (32 bytes). */
static void hello2(uint8_t *h, uint32_t rank, uint32_t world) {
  put32(h, 0x44445232u);
  put32(h + 4, rank);
  put32(h + 8, world);
  put32(h + 12, BLOB);
  memset(h + 16, 7, 16);
}

/* No secret, a forged proof, another secret, an aborting world size: nothing leaks, rank 0 goes on. */
static void test_unauthenticated(void) {
  uint8_t blob[BLOB], buf[4096];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 10, 0);

  /* the old protocol's hello (rank 1, right world; then world 99, which used to abort rank 0) */
  for (uint32_t world = 2; world <= 99; world += 97) {
    int fd = dial("127.0.0.1", port, 3);
    CHECK(fd >= 0);
    uint8_t h[16];
    put32(h, 0x44445231u), put32(h + 4, 1), put32(h + 8, world), put32(h + 12, BLOB);
    CHECK(send(fd, h, sizeof h, MSG_NOSIGNAL) == sizeof h);
    long n = drain(fd, buf, sizeof buf, 2);
    CHECK(n <= 0 && !has_blob(buf, n, blob));
    close(fd);
  }
  /* the new hello with a forged proof: rank 0 says "bad proof" (status 2, nothing more) and closes */
  for (uint32_t world = 2; world <= 99; world += 97) {
    int fd = dial("127.0.0.1", port, 3);
    uint8_t h[32], proof[32];
    hello2(h, 1, world);
    memset(proof, 0x5a, sizeof proof);
    CHECK(send(fd, h, sizeof h, MSG_NOSIGNAL) == sizeof h);
    CHECK(drain(fd, buf, 20, 2) == 20 && !memcmp(buf, "DDS2", 4));
    CHECK(send(fd, proof, sizeof proof, MSG_NOSIGNAL) == sizeof proof);
    long n = drain(fd, buf, sizeof buf, 2);
    CHECK(n == 8 && !memcmp(buf, "\0\0\0\2\0\0\0\0", 8));
    CHECK(!has_blob(buf, n, blob));
    close(fd);
  }
  /* a real peer with another secret is told so, and gets nothing */
  g_child_secret = "another-secret-of-enough-length";
  outcome bad = collect(spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 3, 0));
  g_child_secret = NULL;
  CHECK(bad.rc == -1);
  CHECK_CONTAINS("bad.err", bad.err, "rejected rank 1's proof of the job's secret");
  CHECK(!has_blob(bad.blob, BLOB, blob));
  /* the real rank 1 still gets through and rank 0 succeeds */
  outcome o1 = collect(spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 10, 0)), o0 = collect(p0);
  CHECK(o0.rc == 0 && o1.rc == 0);
  if (o0.rc || o1.rc) fprintf(stderr, "  unauthenticated: %s | %s\n", o0.err, o1.err);
  CHECK(!memcmp(o1.blob, blob, BLOB));
}

/* 100 connections that say nothing: the ranks still get through at once. */
static void test_idle_flood(void) {
  uint8_t blob[BLOB];
  random_blob(blob);
  int port = free_port(), fds[100], open_ = 0;
  proc p0 = spawn(0, 3, "127.0.0.1", port, blob, BLOB, 10, 0);
  for (int i = 0; i < 100; i++)
    if ((fds[i] = dial("127.0.0.1", port, 3)) >= 0) open_++;
  CHECK(open_ == 100);
  usleep(200 * 1000); /* let rank 0 accept them all */
  proc p1 = spawn(1, 3, "127.0.0.1", port, NULL, BLOB, 10, 0), p2 = spawn(2, 3, "127.0.0.1", port, NULL, BLOB, 10, 0);
  outcome o1 = collect(p1), o2 = collect(p2), o0 = collect(p0);
  CHECK(o0.rc == 0 && o1.rc == 0 && o2.rc == 0);
  if (o0.rc || o1.rc || o2.rc) fprintf(stderr, "  idle flood: %s | %s | %s\n", o0.err, o1.err, o2.err);
  CHECK(o1.seconds < 4 && o2.seconds < 4); /* not held up until the idle ones time out */
  CHECK(!memcmp(o1.blob, blob, BLOB) && !memcmp(o2.blob, blob, BLOB));
  for (int i = 0; i < 100; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* An idle connection and one that sends half a hello are closed after about 5 s, rank 0 still serving. */
static void test_idle_timeout(void) {
  uint8_t blob[BLOB], buf[64];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 15, 0);
  int idle = dial("127.0.0.1", port, 3), half = dial("127.0.0.1", port, 3);
  double t0 = ddp_now_s();
  uint8_t h[32];
  hello2(h, 1, 2);
  CHECK(idle >= 0 && half >= 0 && send(half, h, 10, MSG_NOSIGNAL) == 10);
  CHECK(drain(idle, buf, sizeof buf, 9) <= 0);
  double t_idle = ddp_now_s() - t0;
  CHECK(drain(half, buf, sizeof buf, 9) <= 0);
  double t_half = ddp_now_s() - t0;
  CHECK(t_idle > 4 && t_idle < 8 && t_half < 8);
  if (!(t_idle > 4 && t_idle < 8 && t_half < 8)) fprintf(stderr, "  closed after %.1f s, %.1f s\n", t_idle, t_half);
  close(idle);
  close(half);
  outcome o1 = collect(spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 10, 0)), o0 = collect(p0);
  CHECK(o0.rc == 0 && o1.rc == 0 && !memcmp(o1.blob, blob, BLOB));
}

/* A second rank 1 is refused; rank 0 goes on and the real ranks finish. */
static void test_duplicate(void) {
  uint8_t blob[BLOB];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 3, "127.0.0.1", port, blob, BLOB, 10, 0);
  outcome o1 = collect(spawn(1, 3, "127.0.0.1", port, NULL, BLOB, 10, 0));
  outcome dup = collect(spawn(1, 3, "127.0.0.1", port, NULL, BLOB, 10, 0));
  outcome o2 = collect(spawn(2, 3, "127.0.0.1", port, NULL, BLOB, 10, 0)), o0 = collect(p0);
  char want[256];
  snprintf(want, sizeof want, "rendezvous: rank 0 at 127.0.0.1:%d refused rank 1: rank 1 already has the id "
           "(two processes launched as rank 1?)", port);
  CHECK(o1.rc == 0 && !memcmp(o1.blob, blob, BLOB));
  CHECK(dup.rc == -1);
  CHECK_STR("dup.err", want, dup.err);
  CHECK(!has_blob(dup.blob, BLOB, blob));
  CHECK(o2.rc == 0 && o0.rc == 0);
  if (o0.rc) fprintf(stderr, "  duplicate: %s\n", o0.err);
}

/* Rank 0 at 127.0.0.1 is not reachable at 127.0.0.2 (it did not bind the wildcard address); an address
 * of no interface here is refused at once. */
static void test_bind(void) {
  uint8_t blob[BLOB];
  random_blob(blob);
  int port = free_port();
  proc p0 = spawn(0, 2, "127.0.0.1", port, blob, BLOB, 10, 0);
  int fd = dial("127.0.0.1", port, 3);
  CHECK(fd >= 0);
  close(fd);
  fd = dial("127.0.0.2", port, 0.2);
  CHECK(fd < 0);
  if (fd >= 0) close(fd);
  outcome o1 = collect(spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 10, 0)), o0 = collect(p0);
  CHECK(o0.rc == 0 && o1.rc == 0);

  outcome o = collect(spawn(0, 2, "192.0.2.1", free_port(), blob, BLOB, 2, 0)); /* TEST-NET-1 */
  CHECK(o.rc == -1 && o.seconds < 1.5);
  CHECK_STR("o.err", "rendezvous: rank 0 cannot listen at '192.0.2.1': not an address of this host", o.err);
}

/* A "rank 0" that does not know the secret: the peer finds out and keeps its buffer. */
static void test_fake_rank0(void) {
  int port = free_port();
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  CHECK(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 4) == 0);
  proc p1 = spawn(1, 2, "127.0.0.1", port, NULL, BLOB, 5, 0);
  int fd = accept(lfd, NULL, NULL);
  uint8_t buf[256], reply[8 + BLOB + 32];
  CHECK(fd >= 0 && drain(fd, buf, 32, 3) == 32 && !memcmp(buf, "DDR2", 4));
  memcpy(buf, "DDS2", 4), memset(buf + 4, 1, 16);
  CHECK(send(fd, buf, 20, MSG_NOSIGNAL) == 20 && drain(fd, buf, 32, 3) == 32);
  memset(reply, 0x33, sizeof reply);
  put32(reply, 0), put32(reply + 4, BLOB);
  CHECK(send(fd, reply, sizeof reply, MSG_NOSIGNAL) == (ssize_t)sizeof reply);
  outcome o = collect(p1);
  char want[160];
  snprintf(want, sizeof want, "rendezvous: rank 0 at 127.0.0.1:%d could not prove that it knows the job's secret "
           "(rank 1)", port);
  CHECK_STR("o.err", want, o.err);
  uint8_t zero[BLOB] = {0};
  CHECK(!memcmp(o.blob, zero, BLOB));
  close(fd);
  close(lfd);
}

static int nproc_rank(const ddp_identity *id, void *ctx) {
  (void)ctx;
  uint8_t blob[BLOB];
  char err[512];
  for (int i = 0; i < BLOB; i++) blob[i] = id->rank == 0 ? (uint8_t)(i * 7 + 1) : 0;
  if (ddp_rendezvous(id, blob, BLOB, 10, err, sizeof err)) {
    fprintf(stderr, "rank %d: %s\n", id->rank, err);
    return 2;
  }
  for (int i = 0; i < BLOB; i++)
    if (blob[i] != (uint8_t)(i * 7 + 1)) return 3;
  return 0;
}

/* The secret: too short is refused; `--nproc` draws a fresh one (64 hex digits) that its ranks share. */
static void test_secret(void) {
  ddp_identity id = {.rank = 1, .world = 2, .master_port = 29500, .source = "test"};
  snprintf(id.master_addr, sizeof id.master_addr, "127.0.0.1");
  uint8_t blob[BLOB] = {0};
  char err[256], first[80];
  setenv("DDP_RENDEZVOUS_SECRET", "short", 1);
  CHECK(ddp_rendezvous(&id, blob, BLOB, 1, err, sizeof err) == -1);
  CHECK_STR("err", "rendezvous: DDP_RENDEZVOUS_SECRET is shorter than 16 characters", err);

  setenv("DDP_RENDEZVOUS_SECRET", SECRET, 1);
  CHECK(ddp_launch_local(3, nproc_rank, NULL, err, sizeof err) == 0);
  const char *s = getenv("DDP_RENDEZVOUS_SECRET");
  CHECK(s && strlen(s) == 64 && strcmp(s, SECRET));
  for (int i = 0; s && s[i]; i++) CHECK(isxdigit((unsigned char)s[i]));
  snprintf(first, sizeof first, "%s", s ? s : "");
  CHECK(ddp_rendezvous_new_secret(err, sizeof err) == 0);
  CHECK(strcmp(getenv("DDP_RENDEZVOUS_SECRET"), first)); /* fresh every time */
  setenv("DDP_RENDEZVOUS_SECRET", SECRET, 1);
}

int main(void) {
  alarm(80); /* a hang is a failure */
  signal(SIGPIPE, SIG_IGN);
  setenv("DDP_RENDEZVOUS_SECRET", SECRET, 1);
  test_secret();
  test_unauthenticated();
  test_idle_flood();
  test_duplicate();
  test_bind();
  test_fake_rank0();
  test_idle_timeout();
  return check_report("test_rendezvous_attack");
}

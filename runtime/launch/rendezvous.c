/* runtime/rendezvous.c: the NCCL-id rendezvous (protocol in rendezvous.h). Rank 0 runs a small
 * non-blocking server (one poll loop, one state machine per connection); the other ranks connect with
 * retries and read the blob. Every wait is bounded by the caller's deadline. */
#include "rendezvous.h"
#include "err.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RDV_MAGIC 0x44445231u /* "DDR1" */
#define RDV_HELLO 16
#define RDV_REPLY 8
#define RDV_ACK 'K'
#define RDV_MSG_MAX 512
#define RDV_BIND_RETRY_S 5.0 /* how long rank 0 waits for a busy port to free up */
#define RDV_CONNECT_S 5.0    /* the longest one connect attempt waits */

enum { ST_OK = 0, ST_REFUSED = 1 };

#define rdv_fail ddp_fail

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int ms_until(double deadline) {
  double ms = (deadline - now_s()) * 1000.0;
  return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms + 1;
}

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec t = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* "host:port", or "[v6]:port". */
static void format_addr(const ddp_identity *id, char *out, size_t cap) {
  snprintf(out, cap, strchr(id->master_addr, ':') ? "[%s]:%d" : "%s:%d", id->master_addr, id->master_port);
}

/* ---------------------------------------------------------------- rank 0 ---------------------------- */

typedef struct rdv_conn {
  int fd;           /* -1: free slot */
  int state;        /* 0: reading the hello, 1: writing the reply, 2: reading the ack */
  uint8_t in[RDV_HELLO];
  size_t got;
  uint8_t *out;     /* reply header + payload */
  size_t outlen, sent;
  uint32_t rank;
} rdv_conn;

typedef struct rdv_server {
  const ddp_identity *id;
  const uint8_t *blob;
  size_t len;
  int lfd;
  rdv_conn *conn;
  int nconn;
  bool *arrived; /* per rank */
  int arrivals;  /* distinct ranks that acknowledged */
  char fatal[RDV_MSG_MAX]; /* a launch mismatch: rank 0 fails with this line */
} rdv_server;

static int listen_on(int family, int port, int *fd_out) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_any};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    rc = bind(fd, (struct sockaddr *)&a, sizeof a);
  }
  if (rc == 0) rc = listen(fd, SOMAXCONN);
  if (rc) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  *fd_out = fd;
  return 0;
}

/* Listens on every interface, dual-stack when IPv6 is available; retries a busy port for a while. */
static int server_listen(rdv_server *s, double deadline, char *err, size_t cap) {
  double until = now_s() + RDV_BIND_RETRY_S;
  if (until > deadline) until = deadline;
  for (;;) {
    if (listen_on(AF_INET6, s->id->master_port, &s->lfd) == 0) return 0;
    if (errno != EADDRINUSE && listen_on(AF_INET, s->id->master_port, &s->lfd) == 0) return 0;
    if (errno != EADDRINUSE || now_s() >= until)
      return rdv_fail(err, cap, "rendezvous: rank 0 cannot listen on port %d: %s%s", s->id->master_port,
                      strerror(errno), errno == EADDRINUSE ? " (another job on this port? set MASTER_PORT)" : "");
    sleep_s(0.1);
  }
}

static void conn_close(rdv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* Queues the blob as the reply; the connection is dropped when out of memory (the peer retries). */
static void conn_reply(rdv_server *s, rdv_conn *c) {
  c->out = malloc(RDV_REPLY + s->len);
  if (!c->out) {
    conn_close(c);
    return;
  }
  put32(c->out, ST_OK);
  put32(c->out + 4, (uint32_t)s->len);
  memcpy(c->out + RDV_REPLY, s->blob, s->len);
  c->outlen = RDV_REPLY + s->len, c->sent = 0, c->state = 1;
}

/* Sends a refusal at once (a fresh socket's buffer holds it whole) and closes: FIN follows the message. */
static void conn_refuse(rdv_conn *c, const char *msg) {
  uint8_t buf[RDV_REPLY + RDV_MSG_MAX];
  size_t n = strlen(msg);
  put32(buf, ST_REFUSED);
  put32(buf + 4, (uint32_t)n);
  memcpy(buf + RDV_REPLY, msg, n);
  ssize_t w = send(c->fd, buf, RDV_REPLY + n, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)w; /* a peer that cannot take 0.5 KB reports a closed connection and retries */
  conn_close(c);
}

/* The hello is complete: accept the peer or refuse it. */
static void conn_hello(rdv_server *s, rdv_conn *c) {
  const ddp_identity *id = s->id;
  if (get32(c->in) != RDV_MAGIC) { /* not one of ours: drop it quietly */
    conn_close(c);
    return;
  }
  uint32_t rank = get32(c->in + 4), world = get32(c->in + 8), len = get32(c->in + 12);
  char msg[RDV_MSG_MAX - 1];
  if (world != (uint32_t)id->world) {
    snprintf(msg, sizeof msg, "rank %u launched with world %u, rank 0 has world %d", rank, world, id->world);
    snprintf(s->fatal, sizeof s->fatal, "%s", msg);
  } else if (rank == 0 || rank >= world) {
    snprintf(msg, sizeof msg, "rank %u is not a peer rank of world %d", rank, id->world);
  } else if (len != s->len) {
    snprintf(msg, sizeof msg, "rank %u expects a %u-byte id, rank 0 has %zu bytes", rank, len, s->len);
    snprintf(s->fatal, sizeof s->fatal, "%s", msg);
  } else {
    c->rank = rank;
    conn_reply(s, c);
    return;
  }
  conn_refuse(c, msg);
}

static void conn_io(rdv_server *s, rdv_conn *c, short revents) {
  if (c->state == 0 && (revents & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t r = recv(c->fd, c->in + c->got, RDV_HELLO - c->got, 0);
    if (r <= 0) {
      if (r == 0 || (errno != EAGAIN && errno != EINTR)) conn_close(c);
      return;
    }
    c->got += (size_t)r;
    if (c->got == RDV_HELLO) conn_hello(s, c);
  } else if (c->state == 1 && (revents & (POLLOUT | POLLHUP | POLLERR))) {
    ssize_t w = send(c->fd, c->out + c->sent, c->outlen - c->sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno != EAGAIN && errno != EINTR) conn_close(c);
      return;
    }
    c->sent += (size_t)w;
    if (c->sent == c->outlen) c->state = 2;
  } else if (c->state == 2 && (revents & (POLLIN | POLLHUP | POLLERR))) {
    uint8_t ack;
    ssize_t r = recv(c->fd, &ack, 1, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (r == 1 && ack == RDV_ACK && !s->arrived[c->rank]) {
      s->arrived[c->rank] = true;
      s->arrivals++;
    }
    conn_close(c);
  }
}

static void server_accept(rdv_server *s) {
  for (;;) {
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or a peer that gave up already */
    int slot = -1;
    for (int i = 0; i < s->nconn && slot < 0; i++)
      if (s->conn[i].fd < 0) slot = i;
    if (slot < 0) { /* full: the peer sees EOF and retries */
      close(fd);
      continue;
    }
    s->conn[slot].fd = fd;
  }
}

/* "ranks 1, 3" / "rank 2" / "ranks 1-5, 9" of those that did not arrive. */
static void missing_ranks(const rdv_server *s, char *out, size_t cap) {
  int world = s->id->world, n = world - 1 - s->arrivals, len;
  len = snprintf(out, cap, n == 1 ? "rank" : "ranks");
  bool first = true;
  for (int r = 1; r < world; r++) {
    if (s->arrived[r]) continue;
    int e = r;
    while (e + 1 < world && !s->arrived[e + 1]) e++;
    if (len > (int)cap - 48) {
      snprintf(out + len, cap - (size_t)len, ", ...");
      return;
    }
    const char *sep = first ? " " : ", ";
    if (e - r >= 2) len += snprintf(out + len, cap - (size_t)len, "%s%d-%d", sep, r, e);
    else if (e == r + 1) len += snprintf(out + len, cap - (size_t)len, "%s%d, %d", sep, r, e);
    else len += snprintf(out + len, cap - (size_t)len, "%s%d", sep, r);
    first = false;
    r = e;
  }
}

static int serve(const ddp_identity *id, const void *blob, size_t len, double timeout_s, double deadline,
                 char *err, size_t cap) {
  rdv_server s = {.id = id, .blob = blob, .len = len, .lfd = -1};
  int peers = id->world - 1;
  s.nconn = (peers < 1024 ? peers : 1024) + 64;
  s.conn = calloc((size_t)s.nconn, sizeof *s.conn);
  s.arrived = calloc((size_t)id->world, sizeof *s.arrived);
  struct pollfd *pfd = calloc((size_t)s.nconn + 1, sizeof *pfd);
  int rc = -1;
  if (!s.conn || !s.arrived || !pfd) {
    rdv_fail(err, cap, "rendezvous: out of memory for %d ranks", id->world);
    goto done;
  }
  for (int i = 0; i < s.nconn; i++) s.conn[i].fd = -1;
  if (server_listen(&s, deadline, err, cap)) goto done;

  while (s.arrivals < peers && !s.fatal[0]) {
    int timeout = ms_until(deadline);
    if (timeout == 0) break;
    pfd[0] = (struct pollfd){.fd = s.lfd, .events = POLLIN};
    for (int i = 0; i < s.nconn; i++) {
      rdv_conn *c = &s.conn[i];
      pfd[i + 1] = (struct pollfd){.fd = c->fd, .events = c->state == 1 ? POLLOUT : POLLIN};
    }
    int n = poll(pfd, (nfds_t)s.nconn + 1, timeout);
    if (n < 0 && errno != EINTR) {
      rdv_fail(err, cap, "rendezvous: rank 0 poll: %s", strerror(errno));
      goto done;
    }
    if (n <= 0) continue;
    for (int i = 0; i < s.nconn; i++)
      if (s.conn[i].fd >= 0 && pfd[i + 1].revents) conn_io(&s, &s.conn[i], pfd[i + 1].revents);
    if (pfd[0].revents & POLLIN) server_accept(&s);
  }
  char addr[DDP_HOST_MAX + 16];
  format_addr(id, addr, sizeof addr);
  if (s.fatal[0]) {
    rdv_fail(err, cap, "rendezvous: %s (at %s)", s.fatal, addr);
  } else if (s.arrivals < peers) {
    char who[256];
    missing_ranks(&s, who, sizeof who);
    rdv_fail(err, cap, "rendezvous: %s did not arrive within %g s at %s", who, timeout_s, addr);
  } else {
    rc = 0;
  }
done:
  if (s.conn)
    for (int i = 0; i < s.nconn; i++) conn_close(&s.conn[i]);
  if (s.lfd >= 0) close(s.lfd);
  free(s.conn);
  free(s.arrived);
  free(pfd);
  return rc;
}

/* ---------------------------------------------------------------- peers ----------------------------- */

/* Sends or receives exactly n bytes before the deadline. Returns 0, 1 on EOF, or -1 with errno. */
static int io_full(int fd, void *buf, size_t n, bool out, double deadline) {
  uint8_t *p = buf;
  size_t done = 0;
  while (done < n) {
    ssize_t r = out ? send(fd, p + done, n - done, MSG_NOSIGNAL) : recv(fd, p + done, n - done, 0);
    if (r > 0) {
      done += (size_t)r;
      continue;
    }
    if (r == 0) return 1;
    if (errno != EAGAIN && errno != EINTR) return -1;
    struct pollfd q = {.fd = fd, .events = out ? POLLOUT : POLLIN};
    int t = ms_until(deadline);
    if (t == 0 || (poll(&q, 1, t) == 0 && now_s() >= deadline)) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
  return 0;
}

/* A non-blocking connect bounded by the deadline; rejects a socket connected to itself (possible when
 * the port is in the ephemeral range and nothing listens yet). Returns the fd, or -1 with `why`. */
static int connect_one(const struct addrinfo *ai, double deadline, char *why, size_t cap) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  int e = 0;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
    e = errno;
    if (e == EINPROGRESS) { /* one address gets at most RDV_CONNECT_S, so the next one gets a turn */
      double until = now_s() + RDV_CONNECT_S;
      struct pollfd q = {.fd = fd, .events = POLLOUT};
      socklen_t el = sizeof e;
      int n;
      if (until > deadline) until = deadline;
      while ((n = poll(&q, 1, ms_until(until))) < 0 && errno == EINTR) {
      }
      if (n <= 0) e = ETIMEDOUT;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el)) e = errno;
    }
  }
  if (!e) {
    struct sockaddr_storage a, b;
    socklen_t al = sizeof a, bl = sizeof b;
    if (!getsockname(fd, (struct sockaddr *)&a, &al) && !getpeername(fd, (struct sockaddr *)&b, &bl) &&
        al == bl && !memcmp(&a, &b, al))
      e = ECONNREFUSED; /* connected to itself: nobody is listening */
  }
  if (e) {
    snprintf(why, cap, "%s", strerror(e));
    close(fd);
    return -1;
  }
  return fd;
}

/* One exchange on a connected socket. Returns 0 (blob received), 1 (retry: why says what happened), or
 * -1 (a definite failure, err filled). */
static int fetch_once(int fd, const ddp_identity *id, const char *addr, void *blob, size_t len, double deadline,
                      char *why, size_t whycap, char *err, size_t cap) {
  uint8_t hello[RDV_HELLO], reply[RDV_REPLY];
  put32(hello, RDV_MAGIC);
  put32(hello + 4, (uint32_t)id->rank);
  put32(hello + 8, (uint32_t)id->world);
  put32(hello + 12, (uint32_t)len);
  int rc = io_full(fd, hello, sizeof hello, true, deadline);
  if (rc == 0) rc = io_full(fd, reply, sizeof reply, false, deadline);
  if (rc) {
    snprintf(why, whycap, "%s", rc > 0 ? "rank 0 closed the connection before replying" : strerror(errno));
    return 1;
  }
  uint32_t status = get32(reply), n = get32(reply + 4);
  if (status == ST_REFUSED && n > 0 && n < RDV_MSG_MAX) {
    char msg[RDV_MSG_MAX];
    rc = io_full(fd, msg, n, false, deadline);
    msg[rc ? 0 : n] = '\0';
    return rdv_fail(err, cap, "rendezvous: rank 0 at %s refused rank %d: %s", addr, id->rank,
                    rc ? "(message lost)" : msg);
  }
  if (status != ST_OK)
    return rdv_fail(err, cap, "rendezvous: rank %d got an unexpected reply from %s (not a ddprun rank 0?)",
                    id->rank, addr);
  if (n != len)
    return rdv_fail(err, cap, "rendezvous: rank 0 at %s sent a %u-byte id, rank %d expects %zu", addr, n,
                    id->rank, len);
  uint8_t *tmp = malloc(len);
  if (!tmp) return rdv_fail(err, cap, "rendezvous: out of memory");
  rc = io_full(fd, tmp, len, false, deadline);
  if (rc == 0) {
    uint8_t ack = RDV_ACK;
    memcpy(blob, tmp, len);
    rc = io_full(fd, &ack, 1, true, deadline);
  }
  free(tmp);
  if (rc) {
    snprintf(why, whycap, "%s", rc > 0 ? "rank 0 closed the connection mid-transfer" : strerror(errno));
    return 1;
  }
  return 0;
}

static int fetch(const ddp_identity *id, void *blob, size_t len, double timeout_s, double deadline, char *err,
                 size_t cap) {
  char addr[DDP_HOST_MAX + 16], port[16], why[256] = "no attempt finished";
  format_addr(id, addr, sizeof addr);
  snprintf(port, sizeof port, "%d", id->master_port);
  double backoff = 0.05;
  for (;;) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(id->master_addr, port, &hints, &res);
    if (g && g != EAI_AGAIN)
      return rdv_fail(err, cap, "rendezvous: rank %d cannot resolve rank 0's address '%s': %s", id->rank,
                      id->master_addr, gai_strerror(g));
    if (g) snprintf(why, sizeof why, "%s", gai_strerror(g));
    for (struct addrinfo *ai = res; ai && now_s() < deadline; ai = ai->ai_next) {
      int fd = connect_one(ai, deadline, why, sizeof why);
      if (fd < 0) continue;
      int rc = fetch_once(fd, id, addr, blob, len, deadline, why, sizeof why, err, cap);
      close(fd);
      if (rc <= 0) {
        freeaddrinfo(res);
        return rc;
      }
    }
    if (res) freeaddrinfo(res);
    double left = deadline - now_s();
    if (left <= 0) break;
    sleep_s(backoff < left ? backoff : left);
    backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
  }
  return rdv_fail(err, cap, "rendezvous: rank %d could not reach rank 0 at %s within %g s (last error: %s)",
                  id->rank, addr, timeout_s, why);
}

int ddp_rendezvous(const ddp_identity *id, void *blob, size_t len, double timeout_s, char *err, size_t cap) {
  if (!id || id->world < 1 || id->rank < 0 || id->rank >= id->world)
    return rdv_fail(err, cap, "rendezvous: invalid identity (rank %d of world %d)", id ? id->rank : -1,
                    id ? id->world : 0);
  if (!blob || len == 0 || len > DDP_RENDEZVOUS_MAX_BLOB)
    return rdv_fail(err, cap, "rendezvous: the id must be 1 to %u bytes, got %zu", DDP_RENDEZVOUS_MAX_BLOB, len);
  if (!(timeout_s > 0)) return rdv_fail(err, cap, "rendezvous: timeout %g s must be positive", timeout_s);
  if (id->master_port < 1 || id->master_port > 65535)
    return rdv_fail(err, cap, "rendezvous: master port %d is not a TCP port", id->master_port);
  if (id->world == 1) return 0;
  double deadline = now_s() + timeout_s;
  return id->rank == 0 ? serve(id, blob, len, timeout_s, deadline, err, cap)
                       : fetch(id, blob, len, timeout_s, deadline, err, cap);
}

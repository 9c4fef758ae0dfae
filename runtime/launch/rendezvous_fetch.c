/* runtime/rendezvous_fetch.c: a peer's side of the rendezvous (protocol in rendezvous.h): connects to
 * the master address with retries, proves the job key, checks rank 0's proof and decrypts the id. Every
 * wait is bounded by the caller's deadline. */
#include "err.h"
#include "param.h"
#include "rdv_wire.h"
#include <errno.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

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
    if (t == 0 || (poll(&q, 1, t) == 0 && ddp_now_s() >= deadline)) {
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
      double until = ddp_now_s() + RDV_CONNECT_S;
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

/* Reads the rest of rank 0's reply (payload and MAC, header in body[0..8)) and checks the MAC. Returns 0,
 * 1 (retry: why says what happened) or -1 (err filled). */
static int read_reply(int fd, const ddp_identity *id, const uint8_t *key, const char *addr, const uint8_t *hello,
                      const uint8_t *ns, uint8_t *body, size_t n, double deadline, char *why, size_t whycap,
                      char *err, size_t errcap) {
  uint8_t want[RDV_MAC];
  int rc = io_full(fd, body + RDV_REPLY, n + RDV_MAC, false, deadline);
  if (rc) {
    snprintf(why, whycap, "%s", rc > 0 ? "rank 0 closed the connection mid-transfer" : strerror(errno));
    return 1;
  }
  if (rdv_mac(key, "ddp-rdv-server", hello, ns, body, RDV_REPLY + n, want) ||
      CRYPTO_memcmp(want, body + RDV_REPLY + n, RDV_MAC))
    return ddp_fail(err, errcap, "rendezvous: rank 0 at %s could not prove that it knows the job's secret (rank %d)",
                    addr, id->rank);
  return 0;
}

/* One exchange on a connected socket. Returns 0 (blob received), 1 (retry: why says what happened), or
 * -1 (a definite failure, err filled). */
static int fetch_once(int fd, const ddp_identity *id, const uint8_t *key, const char *addr, void *blob, size_t len,
                      double deadline, char *why, size_t whycap, char *err, size_t errcap) {
  uint8_t hello[RDV_HELLO], ch[RDV_CHALLENGE], proof[RDV_MAC], head[RDV_REPLY];
  put32(hello, RDV_HELLO_MAGIC);
  put32(hello + 4, (uint32_t)id->rank);
  put32(hello + 8, (uint32_t)id->world);
  put32(hello + 12, (uint32_t)len);
  if (getrandom(hello + 16, RDV_NONCE, 0) != RDV_NONCE)
    return ddp_fail(err, errcap, "rendezvous: rank %d: getrandom: %s", id->rank, strerror(errno));
  int rc = io_full(fd, hello, sizeof hello, true, deadline);
  if (rc == 0) rc = io_full(fd, ch, sizeof ch, false, deadline);
  if (rc == 0 && get32(ch) != RDV_NONCE_MAGIC)
    return ddp_fail(err, errcap, "rendezvous: rank %d got an unexpected reply from %s (not a ddprun rank 0?)",
                    id->rank, addr);
  if (rc == 0 && rdv_mac(key, "ddp-rdv-client", hello, ch + 4, ch, 0, proof))
    return ddp_fail(err, errcap, "rendezvous: HMAC-SHA256 is not available (OpenSSL)");
  if (rc == 0) rc = io_full(fd, proof, sizeof proof, true, deadline);
  if (rc == 0) rc = io_full(fd, head, sizeof head, false, deadline);
  if (rc) {
    snprintf(why, whycap, "%s", rc > 0 ? "rank 0 closed the connection before replying" : strerror(errno));
    return 1;
  }
  uint32_t status = get32(head), n = get32(head + 4);
  if (status == ST_BAD_PROOF)
    return ddp_fail(err, errcap, "rendezvous: rank 0 at %s rejected rank %d's proof of the job's secret (is %s the "
                    "same for every rank?)", addr, id->rank, ddp_param_var(PARAM_RENDEZVOUS_SECRET));
  if (!((status == ST_REFUSED && n > 0 && n < RDV_MSG_MAX) || (status == ST_BUSY && n == 0) || status == ST_OK))
    return ddp_fail(err, errcap, "rendezvous: rank %d got an unexpected reply from %s (not a ddprun rank 0?)",
                    id->rank, addr);
  if (status == ST_OK && n != len)
    return ddp_fail(err, errcap, "rendezvous: rank 0 at %s sent a %u-byte id, rank %d expects %zu", addr, n,
                    id->rank, len);
  uint8_t *body = malloc(RDV_REPLY + n + RDV_MAC + 1);
  if (!body) return ddp_fail(err, errcap, "rendezvous: out of memory");
  memcpy(body, head, sizeof head);
  rc = read_reply(fd, id, key, addr, hello, ch + 4, body, n, deadline, why, whycap, err, errcap);
  if (rc == 0 && status == ST_REFUSED) {
    body[RDV_REPLY + n] = '\0';
    rc = ddp_fail(err, errcap, "rendezvous: rank 0 at %s refused rank %d: %s", addr, id->rank,
                  (char *)body + RDV_REPLY);
  } else if (rc == 0 && status == ST_BUSY) {
    snprintf(why, whycap, "rank 0 was still serving rank %d on an earlier connection", id->rank);
    rc = 1;
  } else if (rc == 0 && rdv_crypt(key, hello, ch + 4, body + RDV_REPLY, len)) {
    rc = ddp_fail(err, errcap, "rendezvous: HMAC-SHA256 is not available (OpenSSL)");
  } else if (rc == 0) {
    uint8_t ack = RDV_ACK;
    memcpy(blob, body + RDV_REPLY, len);
    rc = io_full(fd, &ack, 1, true, deadline);
    if (rc) snprintf(why, whycap, "%s", rc > 0 ? "rank 0 closed the connection mid-transfer" : strerror(errno));
    rc = rc ? 1 : 0;
  }
  free(body);
  return rc;
}

int rdv_fetch(const ddp_identity *id, const uint8_t *key, void *blob, size_t len, double timeout_s,
                 double deadline, char *err, size_t errcap) {
  char addr[DDP_HOST_MAX + 16], port[16], why[256] = "no attempt finished";
  format_addr(id, addr, sizeof addr);
  snprintf(port, sizeof port, "%d", id->master_port);
  double backoff = 0.05;
  for (;;) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(id->master_addr, port, &hints, &res);
    if (g && g != EAI_AGAIN)
      return ddp_fail(err, errcap, "rendezvous: rank %d cannot resolve rank 0's address '%s': %s", id->rank,
                      id->master_addr, gai_strerror(g));
    if (g) snprintf(why, sizeof why, "%s", gai_strerror(g));
    for (struct addrinfo *ai = res; ai && ddp_now_s() < deadline; ai = ai->ai_next) {
      int fd = connect_one(ai, deadline, why, sizeof why);
      if (fd < 0) continue;
      int rc = fetch_once(fd, id, key, addr, blob, len, deadline, why, sizeof why, err, errcap);
      close(fd);
      if (rc <= 0) {
        freeaddrinfo(res);
        return rc;
      }
    }
    if (res) freeaddrinfo(res);
    double left = deadline - ddp_now_s();
    if (left <= 0) break;
    ddp_sleep_s(backoff < left ? backoff : left);
    backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
  }
  return ddp_fail(err, errcap, "rendezvous: rank %d could not reach rank 0 at %s within %g s (last error: %s)",
                  id->rank, addr, timeout_s, why);
}

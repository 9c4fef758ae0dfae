/* runtime/rendezvous_serve.c: rank 0's side of the rendezvous (protocol in rendezvous.h): a non-blocking
 * server on the master address only (one poll loop; one state machine and one 5 s deadline per
 * connection; when all slots are taken the oldest unauthenticated connection is evicted). The id goes
 * only to peers that proved the job key, encrypted; everything else is closed without failing rank 0. */
#include "err.h"
#include "rdv_wire.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

enum { C_HELLO, C_CHALLENGE, C_PROOF, C_REPLY, C_ACK };       /* connection states, in order */
enum { R_FREE, R_HELD, R_ARRIVED };                            /* per rank */
enum { LOG_JUNK, LOG_PROOF, LOG_IDLE, LOG_EVICT, LOG_DUP };     /* kinds of dropped connections */

typedef struct rdv_conn {
  int fd;           /* -1: free slot */
  int state;        /* C_*: reading the hello, the proof or the ack; writing the challenge or the reply */
  int rank;         /* the rank it is served as once authenticated, else -1 */
  bool ack;         /* the reply is the id: read the ack after it */
  double deadline;  /* dropped when still open then */
  uint64_t serial;  /* accept order */
  uint8_t hello[RDV_HELLO], ns[RDV_NONCE], in[RDV_HELLO];
  size_t got, need;
  uint8_t *out;     /* being written when set */
  size_t outlen, sent;
  char peer[64];    /* for the log line */
} rdv_conn;

typedef struct rdv_server {
  const ddp_identity *id;
  const uint8_t *blob, *key;
  size_t len;
  int lfd[RDV_MAX_LISTEN], nlisten;
  rdv_conn *conn;
  int nconn;
  uint64_t serial;
  uint8_t *rank_state; /* R_* per rank */
  int arrivals;        /* distinct ranks that acknowledged */
  unsigned logged;     /* LOG_* kinds already reported */
  char fatal[RDV_MSG_MAX]; /* a launch mismatch: rank 0 fails with this line */
} rdv_server;

static bool is_loopback(const struct sockaddr *a) {
  if (a->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
  const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
}

static int listen_on(const struct addrinfo *ai) {
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) return fd;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

/* Listens on each address master_addr resolves to (127.0.0.1 for --nproc), never on the wildcard
 * address; an address that is not this host's is skipped; a busy port is retried for a while. */
static int server_listen(rdv_server *s, double deadline, char *err, size_t errcap) {
  const ddp_identity *id = s->id;
  char port[16];
  snprintf(port, sizeof port, "%d", id->master_port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
  int g = getaddrinfo(id->master_addr, port, &hints, &res);
  if (g)
    return ddp_fail(err, errcap, "rendezvous: rank 0 cannot resolve its own address '%s': %s", id->master_addr,
                    gai_strerror(g));
  double until = ddp_now_s() + RDV_BIND_RETRY_S;
  if (until > deadline) until = deadline;
  int e;
  bool loopback_only;
  for (;;) {
    e = EADDRNOTAVAIL, loopback_only = true;
    for (struct addrinfo *ai = res; ai && s->nlisten < RDV_MAX_LISTEN && e != EADDRINUSE; ai = ai->ai_next) {
      bool seen = false; /* getaddrinfo may list an address twice */
      for (struct addrinfo *b = res; b != ai && !seen; b = b->ai_next)
        seen = b->ai_addrlen == ai->ai_addrlen && !memcmp(b->ai_addr, ai->ai_addr, ai->ai_addrlen);
      int fd = seen ? -1 : listen_on(ai);
      if (fd >= 0) s->lfd[s->nlisten++] = fd, loopback_only = loopback_only && is_loopback(ai->ai_addr);
      else if (!seen && errno != EADDRNOTAVAIL && errno != EAFNOSUPPORT) e = errno;
    }
    if (e != EADDRINUSE || ddp_now_s() >= until) break;
    while (s->nlisten > 0) close(s->lfd[--s->nlisten]);
    ddp_sleep_s(0.1);
  }
  freeaddrinfo(res);
  if (e == EADDRINUSE) while (s->nlisten > 0) close(s->lfd[--s->nlisten]);
  if (s->nlisten == 0 && e == EADDRNOTAVAIL)
    return ddp_fail(err, errcap, "rendezvous: rank 0 cannot listen at '%s': not an address of this host",
                    id->master_addr);
  if (s->nlisten == 0)
    return ddp_fail(err, errcap, "rendezvous: rank 0 cannot listen on port %d: %s%s", id->master_port, strerror(e),
                    e == EADDRINUSE ? " (another job on this port? set MASTER_PORT)" : "");
  struct in6_addr literal;
  if (loopback_only && id->source && strcmp(id->source, "local") && strncmp(id->master_addr, "localhost", 9) &&
      inet_pton(AF_INET, id->master_addr, &literal) != 1 && inet_pton(AF_INET6, id->master_addr, &literal) != 1)
    fprintf(stderr, "rendezvous: warning: '%s' is a loopback address on rank 0's host: ranks on other hosts "
                    "cannot reach it (docs/LAUNCH.md)\n", id->master_addr);
  return 0;
}

static void conn_close(rdv_server *s, rdv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  if (c->rank >= 0 && s->rank_state[c->rank] == R_HELD) s->rank_state[c->rank] = R_FREE;
  free(c->out);
  memset(c, 0, sizeof *c);
  c->fd = -1, c->rank = -1;
}

/* One stderr line for the first connection of each kind that rank 0 turns away. */
static void note(rdv_server *s, rdv_conn *c, int kind, const char *why) {
  if (s->logged & 1u << kind) return;
  s->logged |= 1u << kind;
  fprintf(stderr, "rendezvous: rank 0 turned away %s: %s (further ones are not reported)\n", c->peer, why);
}

static void drop(rdv_server *s, rdv_conn *c, int kind, const char *why) {
  note(s, c, kind, why);
  conn_close(s, c);
}

static void conn_io(rdv_server *s, rdv_conn *c);

/* Queues out[n] (taking it) for the connection, moving it to `state`, and writes what the socket takes. */
static void conn_send(rdv_server *s, rdv_conn *c, uint8_t *out, size_t n, int state) {
  if (!out) {
    conn_close(s, c);
    return;
  }
  c->out = out, c->outlen = n, c->sent = 0, c->state = state;
  conn_io(s, c);
}

/* The reply: status n payload[n] and, but for ST_BAD_PROOF, M("ddp-rdv-server", status n payload); the id
 * (ST_OK) is encrypted. Dropped when out of memory (the peer retries). */
static void conn_reply(rdv_server *s, rdv_conn *c, uint32_t status, const void *payload, size_t n) {
  uint8_t *out = malloc(RDV_REPLY + n + RDV_MAC);
  size_t total = RDV_REPLY + n + (status == ST_BAD_PROOF ? 0 : RDV_MAC);
  if (out) {
    put32(out, status);
    put32(out + 4, (uint32_t)n);
    if (n) memcpy(out + RDV_REPLY, payload, n);
    if ((status == ST_OK && rdv_crypt(s->key, c->hello, c->ns, out + RDV_REPLY, n)) ||
        (status != ST_BAD_PROOF &&
         rdv_mac(s->key, "ddp-rdv-server", c->hello, c->ns, out, RDV_REPLY + n, out + RDV_REPLY + n)))
      free(out), out = NULL;
  }
  c->ack = status == ST_OK;
  conn_send(s, c, out, total, C_REPLY);
}

/* The hello is complete: answer with the challenge. */
static void conn_hello(rdv_server *s, rdv_conn *c) {
  memcpy(c->hello, c->in, RDV_HELLO);
  uint8_t *out = malloc(RDV_CHALLENGE);
  if (out && getrandom(c->ns, RDV_NONCE, 0) != RDV_NONCE) free(out), out = NULL;
  if (out) put32(out, RDV_NONCE_MAGIC), memcpy(out + 4, c->ns, RDV_NONCE);
  c->got = 0, c->need = RDV_MAC;
  conn_send(s, c, out, RDV_CHALLENGE, C_CHALLENGE);
}

/* The proof is complete: a wrong one is turned away; an authenticated peer gets the id or a refusal. */
static void conn_proof(rdv_server *s, rdv_conn *c) {
  const ddp_identity *id = s->id;
  uint8_t want[RDV_MAC];
  uint32_t rank = get32(c->hello + 4), world = get32(c->hello + 8), len = get32(c->hello + 12);
  char msg[RDV_MSG_MAX - 1];
  if (rdv_mac(s->key, "ddp-rdv-client", c->hello, c->ns, c->in, 0, want) || CRYPTO_memcmp(want, c->in, RDV_MAC)) {
    snprintf(msg, sizeof msg, "a peer claiming rank %u does not know the job's secret", rank);
    note(s, c, LOG_PROOF, msg);
    conn_reply(s, c, ST_BAD_PROOF, NULL, 0);
    return;
  }
  if (world != (uint32_t)id->world) {
    snprintf(msg, sizeof msg, "rank %u launched with world %u, rank 0 has world %d", rank, world, id->world);
    snprintf(s->fatal, sizeof s->fatal, "%s", msg);
  } else if (rank == 0 || rank >= world) {
    snprintf(msg, sizeof msg, "rank %u is not a peer rank of world %d", rank, id->world);
  } else if (len != s->len) {
    snprintf(msg, sizeof msg, "rank %u expects a %u-byte id, rank 0 has %zu bytes", rank, len, s->len);
    snprintf(s->fatal, sizeof s->fatal, "%s", msg);
  } else if (s->rank_state[rank] == R_HELD) { /* a reconnect that overtook its old connection's close */
    conn_reply(s, c, ST_BUSY, NULL, 0);
    return;
  } else if (s->rank_state[rank] == R_ARRIVED) {
    snprintf(msg, sizeof msg, "rank %u already has the id (two processes launched as rank %u?)", rank, rank);
    note(s, c, LOG_DUP, msg);
  } else {
    c->rank = (int)rank;
    s->rank_state[rank] = R_HELD;
    conn_reply(s, c, ST_OK, s->blob, s->len);
    return;
  }
  conn_reply(s, c, ST_REFUSED, msg, strlen(msg));
}

static void conn_io(rdv_server *s, rdv_conn *c) {
  if (c->out) {
    ssize_t w = send(c->fd, c->out + c->sent, c->outlen - c->sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno != EAGAIN && errno != EINTR) conn_close(s, c);
      return;
    }
    if ((c->sent += (size_t)w) < c->outlen) return;
    free(c->out);
    c->out = NULL;
    if (c->state == C_CHALLENGE) c->state = C_PROOF;
    else if (c->ack) c->state = C_ACK, c->got = 0, c->need = 1;
    else conn_close(s, c); /* a refusal: FIN follows the message */
    return;
  }
  ssize_t r = recv(c->fd, c->in + c->got, c->need - c->got, 0);
  if (r <= 0) {
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) conn_close(s, c);
    return;
  }
  c->got += (size_t)r;
  if (c->state == C_HELLO && c->got >= 4 && get32(c->in) != RDV_HELLO_MAGIC) {
    drop(s, c, LOG_JUNK, "not a ddprun rendezvous hello");
  } else if (c->got < c->need) {
    return;
  } else if (c->state == C_HELLO) {
    conn_hello(s, c);
  } else if (c->state == C_PROOF) {
    conn_proof(s, c);
  } else {
    if (c->in[0] == RDV_ACK && s->rank_state[c->rank] == R_HELD) {
      s->rank_state[c->rank] = R_ARRIVED;
      s->arrivals++;
    }
    conn_close(s, c);
  }
}

/* Accepts what is pending (64 at most per call); when every slot is taken, the oldest connection that
 * has not authenticated makes room. */
static void server_accept(rdv_server *s, int lfd) {
  for (int k = 0; k < 64; k++) {
    struct sockaddr_storage a;
    socklen_t al = sizeof a;
    int fd = accept4(lfd, (struct sockaddr *)&a, &al, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or a peer that gave up already */
    rdv_conn *slot = NULL, *oldest = NULL;
    for (int i = 0; i < s->nconn && !slot; i++) {
      rdv_conn *c = &s->conn[i];
      if (c->fd < 0) slot = c;
      else if (c->rank < 0 && (!oldest || c->serial < oldest->serial)) oldest = c;
    }
    if (!slot && oldest) drop(s, slot = oldest, LOG_EVICT, "too many connections at once (the oldest goes)");
    if (!slot) {
      close(fd);
      continue;
    }
    char host[INET6_ADDRSTRLEN + 8] = "?", serv[8] = "?";
    getnameinfo((struct sockaddr *)&a, al, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(slot->peer, sizeof slot->peer, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, serv);
    slot->fd = fd, slot->state = C_HELLO, slot->got = 0, slot->need = RDV_HELLO;
    slot->deadline = ddp_now_s() + RDV_CONN_S, slot->serial = s->serial++;
  }
}

/* "ranks 1, 3" / "rank 2" / "ranks 1-5, 9" of those that did not arrive. */
static void missing_ranks(const rdv_server *s, char *out, size_t cap) {
  int world = s->id->world, n = world - 1 - s->arrivals, len;
  len = snprintf(out, cap, n == 1 ? "rank" : "ranks");
  bool first = true;
  for (int r = 1; r < world; r++) {
    if (s->rank_state[r] == R_ARRIVED) continue;
    int e = r;
    while (e + 1 < world && s->rank_state[e + 1] != R_ARRIVED) e++;
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

int rdv_serve(const ddp_identity *id, const uint8_t *key, const void *blob, size_t len, double timeout_s,
                 double deadline, char *err, size_t errcap) {
  rdv_server s = {.id = id, .blob = blob, .key = key, .len = len};
  int peers = id->world - 1;
  s.nconn = (peers < 1024 ? peers : 1024) + 64;
  s.conn = calloc((size_t)s.nconn, sizeof *s.conn);
  s.rank_state = calloc((size_t)id->world, sizeof *s.rank_state);
  struct pollfd *pfd = calloc((size_t)s.nconn + RDV_MAX_LISTEN, sizeof *pfd);
  int rc = -1;
  for (int i = 0; s.conn && i < s.nconn; i++) s.conn[i].fd = -1, s.conn[i].rank = -1;
  if (!s.conn || !s.rank_state || !pfd) {
    ddp_fail(err, errcap, "rendezvous: out of memory for %d ranks", id->world);
    goto done;
  }
  if (server_listen(&s, deadline, err, errcap)) goto done;

  while (s.arrivals < peers && !s.fatal[0]) {
    double now = ddp_now_s(), wake = deadline;
    if (now >= deadline) break;
    for (int i = 0; i < s.nlisten; i++) pfd[i] = (struct pollfd){.fd = s.lfd[i], .events = POLLIN};
    for (int i = 0; i < s.nconn; i++) {
      rdv_conn *c = &s.conn[i];
      if (c->fd >= 0 && now >= c->deadline) drop(&s, c, LOG_IDLE, "no complete exchange within 5 s");
      if (c->fd >= 0 && c->deadline < wake) wake = c->deadline;
      pfd[s.nlisten + i] = (struct pollfd){.fd = c->fd, .events = c->out ? POLLOUT : POLLIN};
    }
    int n = poll(pfd, (nfds_t)(s.nlisten + s.nconn), ms_until(wake));
    if (n < 0 && errno != EINTR) {
      ddp_fail(err, errcap, "rendezvous: rank 0 poll: %s", strerror(errno));
      goto done;
    }
    if (n <= 0) continue;
    for (int i = 0; i < s.nconn; i++)
      if (s.conn[i].fd >= 0 && pfd[s.nlisten + i].revents) conn_io(&s, &s.conn[i]);
    for (int i = 0; i < s.nlisten; i++)
      if (pfd[i].revents & POLLIN) server_accept(&s, s.lfd[i]);
  }
  char addr[DDP_HOST_MAX + 16];
  format_addr(id, addr, sizeof addr);
  if (s.fatal[0]) {
    ddp_fail(err, errcap, "rendezvous: %s (at %s)", s.fatal, addr);
  } else if (s.arrivals < peers) {
    char who[256];
    missing_ranks(&s, who, sizeof who);
    ddp_fail(err, errcap, "rendezvous: %s did not arrive within %g s at %s", who, timeout_s, addr);
  } else {
    rc = 0;
  }
done:
  if (s.conn)
    for (int i = 0; i < s.nconn; i++) conn_close(&s, &s.conn[i]);
  while (s.nlisten > 0) close(s.lfd[--s.nlisten]);
  free(s.conn);
  free(s.rank_state);
  free(pfd);
  return rc;
}

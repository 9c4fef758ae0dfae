/* runtime/rendezvous.c: the NCCL-id rendezvous (protocol in rendezvous.h). Rank 0 runs a small
 * non-blocking server on the master address only (one poll loop; one state machine and one 5 s deadline
 * per connection; when all slots are taken the oldest unauthenticated connection is evicted); the id goes
 * only to peers that proved the job key, encrypted. The other ranks connect with retries, prove the key,
 * check rank 0's proof and decrypt the id. Every wait is bounded by the caller's deadline. */
#include "rendezvous.h"
#include "clock.h"
#include "err.h"
#include "param.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define RDV_HELLO_MAGIC 0x44445232u /* "DDR2" */
#define RDV_NONCE_MAGIC 0x44445332u /* "DDS2" */
#define RDV_NONCE 16
#define RDV_HELLO (16 + RDV_NONCE)
#define RDV_CHALLENGE (4 + RDV_NONCE)
#define RDV_MAC 32 /* HMAC-SHA256; also the key size */
#define RDV_REPLY 8
#define RDV_ACK 'K'
#define RDV_MSG_MAX 512
#define RDV_SECRET_MIN 16
#define RDV_BIND_RETRY_S 5.0 /* how long rank 0 waits for a busy port to free up */
#define RDV_CONNECT_S 5.0    /* the longest one connect attempt waits */
#define RDV_CONN_S 5.0       /* rank 0 drops a connection that has not finished its exchange by then */
#define RDV_MAX_LISTEN 8

/* Reply statuses: 0 the id, 1 a refusal message, 2 the peer's proof was wrong (no MAC follows), 3 the rank
 * is being served on another connection (the peer retries). */
enum { ST_OK, ST_REFUSED, ST_BAD_PROOF, ST_BUSY };

static int ms_until(double deadline) {
  double ms = (deadline - ddp_now_s()) * 1000.0;
  return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms + 1;
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

/* ---------------------------------------------------------------- the key and the MACs --------------- */

/* The job key: HMAC-SHA256 keyed by a label over DDP_RENDEZVOUS_SECRET, else over the identifiers that all
 * ranks of one job share (weaker: anyone who can read them can compute it; docs/LAUNCH.md). */
static int rdv_key(const ddp_identity *id, uint8_t key[RDV_MAC], char *err, size_t errcap) {
  static const char *const job_vars[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE",
                                         "OMPI_MCA_ess_base_jobid"};
  const char *secret = ddp_param_path(PARAM_RENDEZVOUS_SECRET), *label = "ddp-rdv-secret";
  char job[1024];
  if (secret && strlen(secret) < RDV_SECRET_MIN)
    return ddp_fail(err, errcap, "rendezvous: %s is shorter than %d characters",
                    ddp_param_var(PARAM_RENDEZVOUS_SECRET), RDV_SECRET_MIN);
  if (!secret) {
    size_t n = (size_t)snprintf(job, sizeof job, "port=%d\n", id->master_port);
    for (size_t i = 0; i < sizeof job_vars / sizeof *job_vars && n < sizeof job; i++) {
      const char *v = getenv(job_vars[i]);
      n += (size_t)snprintf(job + n, sizeof job - n, "%s=%s\n", job_vars[i], v ? v : "");
    }
    secret = job, label = "ddp-rdv-job";
  }
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), label, (int)strlen(label), (const uint8_t *)secret, strlen(secret), key, &n) ||
      n != RDV_MAC)
    return ddp_fail(err, errcap, "rendezvous: HMAC-SHA256 is not available (OpenSSL)");
  return 0;
}

/* HMAC-SHA256(key, label || hello || ns || data[n]) into out. Returns 0, or -1 when OpenSSL fails. */
static int rdv_mac(const uint8_t *key, const char *label, const uint8_t *hello, const uint8_t *ns,
                   const uint8_t *data, size_t n, uint8_t out[RDV_MAC]) {
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  size_t got = 0;
  int ok = ctx && EVP_MAC_init(ctx, key, RDV_MAC, params) &&
           EVP_MAC_update(ctx, (const uint8_t *)label, strlen(label) + 1) && EVP_MAC_update(ctx, hello, RDV_HELLO) &&
           EVP_MAC_update(ctx, ns, RDV_NONCE) && EVP_MAC_update(ctx, data, n) &&
           EVP_MAC_final(ctx, out, &got, RDV_MAC) && got == RDV_MAC;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return ok ? 0 : -1;
}

/* XORs buf[n] with the key stream M("ddp-rdv-stream", block index): encrypts and decrypts the id. */
static int rdv_crypt(const uint8_t *key, const uint8_t *hello, const uint8_t *ns, uint8_t *buf, size_t n) {
  for (size_t off = 0; off < n; off += RDV_MAC) {
    uint8_t idx[4], ks[RDV_MAC];
    put32(idx, (uint32_t)(off / RDV_MAC));
    if (rdv_mac(key, "ddp-rdv-stream", hello, ns, idx, sizeof idx, ks)) return -1;
    for (size_t j = 0; j < RDV_MAC && off + j < n; j++) buf[off + j] ^= ks[j];
  }
  return 0;
}

int ddp_rendezvous_new_secret(char *err, size_t errcap) {
  uint8_t r[32];
  char hex[2 * sizeof r + 1];
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
    return ddp_fail(err, errcap, "ddprun: cannot draw the rendezvous secret: %s", strerror(errno));
  for (size_t i = 0; i < sizeof r; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
  if (setenv(ddp_param_var(PARAM_RENDEZVOUS_SECRET), hex, 1))
    return ddp_fail(err, errcap, "ddprun: cannot set %s: %s", ddp_param_var(PARAM_RENDEZVOUS_SECRET), strerror(errno));
  return 0;
}

/* ---------------------------------------------------------------- rank 0 ---------------------------- */

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

static int serve(const ddp_identity *id, const uint8_t *key, const void *blob, size_t len, double timeout_s,
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

static int fetch(const ddp_identity *id, const uint8_t *key, void *blob, size_t len, double timeout_s,
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

int ddp_rendezvous(const ddp_identity *id, void *blob, size_t len, double timeout_s, char *err, size_t errcap) {
  uint8_t key[RDV_MAC];
  if (!id || id->world < 1 || id->rank < 0 || id->rank >= id->world)
    return ddp_fail(err, errcap, "rendezvous: invalid identity (rank %d of world %d)", id ? id->rank : -1,
                    id ? id->world : 0);
  if (!blob || len == 0 || len > DDP_RENDEZVOUS_MAX_BLOB)
    return ddp_fail(err, errcap, "rendezvous: the id must be 1 to %u bytes, got %zu", DDP_RENDEZVOUS_MAX_BLOB, len);
  if (!(timeout_s > 0)) return ddp_fail(err, errcap, "rendezvous: timeout %g s must be positive", timeout_s);
  if (id->master_port < 1 || id->master_port > 65535)
    return ddp_fail(err, errcap, "rendezvous: master port %d is not a TCP port", id->master_port);
  if (id->world == 1) return 0;
  if (rdv_key(id, key, err, errcap)) return -1;
  double deadline = ddp_now_s() + timeout_s;
  return id->rank == 0 ? serve(id, key, blob, len, timeout_s, deadline, err, errcap)
                       : fetch(id, key, blob, len, timeout_s, deadline, err, errcap);
}

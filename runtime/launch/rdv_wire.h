/* runtime/launch/rdv_wire.h (private to rendezvous*.c): the rendezvous protocol's constants and byte
 * helpers, the MACs of rendezvous.c, and the two sides: rdv_serve (rank 0, rendezvous_serve.c) and
 * rdv_fetch (the other ranks, rendezvous_fetch.c). The protocol is in rendezvous.h. */
#ifndef DDP_RDV_WIRE_H
#define DDP_RDV_WIRE_H
#include "clock.h"
#include "rendezvous.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

static inline int ms_until(double deadline) {
  double ms = (deadline - ddp_now_s()) * 1000.0;
  return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms + 1;
}

static inline void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static inline uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* "host:port", or "[v6]:port". */
static inline void format_addr(const ddp_identity *id, char *out, size_t cap) {
  snprintf(out, cap, strchr(id->master_addr, ':') ? "[%s]:%d" : "%s:%d", id->master_addr, id->master_port);
}

/* HMAC-SHA256(key, label NUL hello ns data[n]) into out. Returns 0, or -1 when OpenSSL fails. */
int rdv_mac(const uint8_t *key, const char *label, const uint8_t *hello, const uint8_t *ns, const uint8_t *data,
            size_t n, uint8_t out[RDV_MAC]);
/* XORs buf[n] with the key stream M("ddp-rdv-stream", block index): encrypts and decrypts the id. */
int rdv_crypt(const uint8_t *key, const uint8_t *hello, const uint8_t *ns, uint8_t *buf, size_t n);

int rdv_serve(const ddp_identity *id, const uint8_t *key, const void *blob, size_t len, double timeout_s,
              double deadline, char *err, size_t errcap);
int rdv_fetch(const ddp_identity *id, const uint8_t *key, void *blob, size_t len, double timeout_s,
              double deadline, char *err, size_t errcap);
#endif

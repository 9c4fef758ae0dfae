/* runtime/rendezvous.c: the NCCL-id rendezvous (protocol in rendezvous.h): the job key, the MACs and the
 * key stream (HMAC-SHA256 from OpenSSL's libcrypto), `--nproc`'s random secret, and the entry point that
 * checks its arguments and runs rank 0's server (rendezvous_serve.c) or a peer (rendezvous_fetch.c). */
#include "err.h"
#include "param.h"
#include "rdv_wire.h"
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <sys/random.h>

/* The job key: HMAC-SHA256 keyed by a label over DDP_RENDEZVOUS_SECRET, else over the identifiers that all
 * ranks of one job share (weaker: anyone who can read them can compute it; docs/LAUNCH.md). */
static int rdv_key(const ddp_identity *id, uint8_t key[RDV_MAC], char *err, size_t errcap) {
  static const char *const job_vars[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE",
                                         "OMPI_MCA_ess_base_jobid"};
  const char *secret = ddp_param_text(PARAM_RENDEZVOUS_SECRET), *label = "ddp-rdv-secret";
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

int rdv_mac(const uint8_t *key, const char *label, const uint8_t *hello, const uint8_t *ns,
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

int rdv_crypt(const uint8_t *key, const uint8_t *hello, const uint8_t *ns, uint8_t *buf, size_t n) {
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
    return ddp_fail(err, errcap, "cannot draw the rendezvous secret: %s", strerror(errno));
  for (size_t i = 0; i < sizeof r; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
  if (setenv(ddp_param_var(PARAM_RENDEZVOUS_SECRET), hex, 1))
    return ddp_fail(err, errcap, "cannot set %s: %s", ddp_param_var(PARAM_RENDEZVOUS_SECRET), strerror(errno));
  return 0;
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
  return id->rank == 0 ? rdv_serve(id, key, blob, len, timeout_s, deadline, err, errcap)
                       : rdv_fetch(id, key, blob, len, timeout_s, deadline, err, errcap);
}

/* runtime/launch/env.c: the rank identity from the launcher's environment (Slurm, torchrun-style
 * variables, Open MPI, else a single rank). Strict parsing: every malformed value is one line naming the
 * variable. The plan's world size check is the caller's. */
#include "launch.h"
#include "err.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The variable's value, or NULL when unset or empty. */
static const char *env_get(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* Parses a decimal integer in [0, max]: digits only (no sign, no spaces). */
static int env_uint(const char *name, long max, long *out, char *err, size_t errcap) {
  const char *v = env_get(name);
  if (!v) return ddp_fail(err, errcap, "%s is not set", name);
  long x = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9') {
      if (*p == '-' && p == v && p[1])
        return ddp_fail(err, errcap, "%s=%s is negative", name, v);
      return ddp_fail(err, errcap, "%s='%s' is not a non-negative integer", name, v);
    }
    if (x > (max - (*p - '0')) / 10) return ddp_fail(err, errcap, "%s=%s is larger than %ld", name, v, max);
    x = x * 10 + (*p - '0');
  }
  *out = x;
  return 0;
}

/* rank, world and local rank from three variables, with rank < world and world >= 1. */
static int env_triple(ddp_identity *id, const char *rank_var, const char *world_var, const char *local_var,
                      char *err, size_t errcap) {
  long rank, world, local;
  const long max = 1L << 24;
  const char *vars[3] = {rank_var, world_var, local_var}, *set = NULL;
  for (int i = 0; i < 3; i++)
    if (!set && env_get(vars[i])) set = vars[i];
  for (int i = 0; i < 3; i++)
    if (!env_get(vars[i])) return ddp_fail(err, errcap, "%s is not set (%s is)", vars[i], set);
  if (env_uint(world_var, max, &world, err, errcap)) return -1;
  if (world < 1) return ddp_fail(err, errcap, "%s=%ld must be at least 1", world_var, world);
  if (env_uint(rank_var, max, &rank, err, errcap)) return -1;
  if (rank >= world)
    return ddp_fail(err, errcap, "%s=%ld is not below %s=%ld", rank_var, rank, world_var, world);
  if (env_uint(local_var, max, &local, err, errcap)) return -1;
  if (local >= world)
    return ddp_fail(err, errcap, "%s=%ld is not below %s=%ld", local_var, local, world_var, world);
  id->rank = (int)rank, id->world = (int)world, id->local_rank = (int)local;
  return 0;
}

static int env_port(ddp_identity *id, const char *name, int fallback, char *err, size_t errcap) {
  long port = fallback;
  if (env_get(name) && env_uint(name, 65535, &port, err, errcap)) return -1;
  if (port < 1) return ddp_fail(err, errcap, "%s=%ld is not a TCP port (1-65535)", name, port);
  id->master_port = (int)port;
  return 0;
}

static int env_addr(ddp_identity *id, const char *name, const char *fallback, char *err, size_t errcap) {
  const char *v = env_get(name);
  if (!v) v = fallback;
  if (strlen(v) >= sizeof id->master_addr)
    return ddp_fail(err, errcap, "%s is longer than %d characters", name, DDP_HOST_MAX - 1);
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) { /* the value is not echoed: it may hold a newline */
    if (*p >= 0x80)
      return ddp_fail(err, errcap, "%s has a non-ASCII byte at offset %d: a host name or address is ASCII", name,
                      (int)(p - (const unsigned char *)v));
    if (*p <= ' ' || *p == 0x7f)
      return ddp_fail(err, errcap, "%s has a space or control character at offset %d", name,
                      (int)(p - (const unsigned char *)v));
  }
  snprintf(id->master_addr, sizeof id->master_addr, "%s", v);
  return 0;
}

static int identity_slurm(ddp_identity *id, char *err, size_t errcap) {
  if (env_triple(id, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", err, errcap)) return -1;
  const char *var = env_get("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  const char *list = env_get(var);
  if (!list) return ddp_fail(err, errcap, "SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set (SLURM_PROCID is)");
  char why[2 * DDP_HOST_MAX];
  if (ddp_nodelist_expand(list, NULL, NULL, why, sizeof why) < 0)
    return ddp_fail(err, errcap, "%s: %s", var, why);
  if (ddp_nodelist_first(list, id->master_addr, sizeof id->master_addr))
    return ddp_fail(err, errcap, "%s='%s': no usable first host", var, list);
  if (env_get("MASTER_PORT")) return env_port(id, "MASTER_PORT", 0, err, errcap);
  long job;
  if (!env_get("SLURM_JOB_ID"))
    return ddp_fail(err, errcap, "SLURM_JOB_ID is not set (it picks the rendezvous port; or set MASTER_PORT)");
  if (env_uint("SLURM_JOB_ID", 0x7fffffffL, &job, err, errcap)) return -1;
  id->master_port = DDP_SLURM_PORT_BASE + (int)(job % DDP_SLURM_PORT_SPAN);
  return 0;
}

static int identity_torchrun(ddp_identity *id, char *err, size_t errcap) {
  if (env_triple(id, "RANK", "WORLD_SIZE", "LOCAL_RANK", err, errcap)) return -1;
  if (env_addr(id, "MASTER_ADDR", "127.0.0.1", err, errcap)) return -1;
  return env_port(id, "MASTER_PORT", DDP_DEFAULT_PORT, err, errcap);
}

static int identity_openmpi(ddp_identity *id, char *err, size_t errcap) {
  if (env_triple(id, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", err, errcap))
    return -1;
  if (env_addr(id, "MASTER_ADDR", "127.0.0.1", err, errcap)) return -1;
  return env_port(id, "MASTER_PORT", DDP_DEFAULT_PORT, err, errcap);
}

bool ddp_launch_in_slurm_step(void) {
  const char *step = env_get("SLURM_STEP_ID");
  char *end = NULL;
  unsigned long long id = step ? strtoull(step, &end, 10) : ULLONG_MAX;
  return end && end != step && !*end && id < 4294967290ULL;
}

int ddp_launch_identity(ddp_identity *id, char *err, size_t errcap) {
  ddp_identity x = {.rank = 0, .world = 1, .local_rank = 0, .master_port = DDP_DEFAULT_PORT};
  int rc;
  snprintf(x.master_addr, sizeof x.master_addr, "127.0.0.1");
  if (env_get("SLURM_PROCID")) {
    x.source = "slurm";
    rc = identity_slurm(&x, err, errcap);
  } else if (env_get("RANK") || env_get("WORLD_SIZE")) {
    x.source = "torchrun";
    rc = identity_torchrun(&x, err, errcap);
  } else if (env_get("OMPI_COMM_WORLD_RANK") || env_get("OMPI_COMM_WORLD_SIZE")) {
    x.source = "openmpi";
    rc = identity_openmpi(&x, err, errcap);
  } else {
    x.source = "none";
    rc = 0;
  }
  if (rc) return -1;
  *id = x;
  return 0;
}

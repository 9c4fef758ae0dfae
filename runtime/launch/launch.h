/* runtime/launch/launch.h: who this ddprun process is (rank, world, local rank, master address) and how ranks
 * are started: identity from the launcher's environment (env.c), Slurm node lists
 * (nodelist.c), and `ddprun --nproc N` forking and supervising local ranks (fork.c).
 * The protocol that hands the NCCL unique id from rank 0 to the others is in rendezvous.h.
 * docs/LAUNCH.md is the user-facing description. */
#ifndef DDP_LAUNCH_H
#define DDP_LAUNCH_H
#include <stdbool.h>
#include <stddef.h>

#define DDP_HOST_MAX 256          /* host names and addresses, terminator included */
#define DDP_DEFAULT_PORT 29500    /* torchrun's default master port */
#define DDP_SLURM_PORT_BASE 20000 /* Slurm: port = base + SLURM_JOB_ID % span, unless MASTER_PORT */
#define DDP_SLURM_PORT_SPAN 20000

typedef struct ddp_identity {
  int rank;        /* 0 .. world-1 */
  int world;       /* >= 1 */
  int local_rank;  /* rank on this node: the GPU index */
  char master_addr[DDP_HOST_MAX]; /* where rank 0 serves the rendezvous (host name or address) */
  int master_port; /* 1 .. 65535 */
  const char *source; /* static string: "slurm", "torchrun", "openmpi", "local" (--nproc), "none" */
} ddp_identity;

/* Fills `id` from the environment, first match wins:
 *   slurm     SLURM_PROCID set: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; master = first host of
 *             SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST; port = MASTER_PORT, else 20000 +
 *             SLURM_JOB_ID % 20000
 *   torchrun  RANK or WORLD_SIZE set: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR (127.0.0.1),
 *             MASTER_PORT (29500)
 *   openmpi   OMPI_COMM_WORLD_RANK or _SIZE set: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK;
 *             MASTER_ADDR (127.0.0.1), MASTER_PORT (29500)
 *   none      rank 0 of 1, local rank 0, 127.0.0.1:29500
 * A variable set to the empty string counts as unset. Returns 0, or -1 with one line in err naming the
 * variable ("WORLD_SIZE='two' is not a non-negative integer", "RANK=4 is not below WORLD_SIZE=4").
 * Whether the world matches the plan is the caller's check (ddp_plan_check_launch). */
int ddp_launch_identity(ddp_identity *id, char *err, size_t errcap);

/* Inside a job step srun started (SLURM_STEP_ID a number below 4294967290), not an sbatch script's own
 * batch step (4294967294) or extern step, nor outside Slurm: its SLURM_NTASKS tasks each run ddprun. */
bool ddp_launch_in_slurm_step(void);

/* Slurm host lists ("gpu01", "gpu[01-03,07]", "a[1-2],b3", "rack[1-2]-n[01-02]"). Ranges keep the
 * lower bound's zero padding ("gpu[08-10]": gpu08 gpu09 gpu10); several bracket groups in one name
 * expand leftmost-slowest. The whole list is validated before the first host is delivered.
 * ddp_nodelist_expand calls fn(host, ctx) for every host in order; fn returns non-zero to stop early.
 * Returns the number of hosts delivered (>= 0), or -1 with one line in err ("node list 'gpu[1-': ..."). */
typedef int (*ddp_host_fn)(const char *host, void *ctx);
int ddp_nodelist_expand(const char *list, ddp_host_fn fn, void *ctx, char *err, size_t errcap);
/* The first host of `list` into host[cap]. Returns 0, or -1 (malformed list, empty, or too long). */
int ddp_nodelist_first(const char *list, char *host, size_t cap);

/* `ddprun --nproc N`: forks N ranks on this machine. Child r gets identity {rank r, world N, local rank r,
 * 127.0.0.1, a port found free by the parent, source "local"}, the torchrun variables RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT in its environment (SLURM_PROCID and
 * OMPI_COMM_WORLD_RANK/_SIZE removed, so ddp_launch_identity in the child agrees), dies with the parent
 * (PR_SET_PDEATHSIG), runs rank_main(&id, ctx) and exits with its result (0 -> 0, 1..255 kept, other -> 1).
 * The parent supervises: the first rank that exits non-zero or by a signal is reported on stderr as one
 * line ("ddprun: rank 1 exited with status 3", "ddprun: rank 2 killed by signal 9 (Killed)"), the others
 * get SIGTERM, then SIGKILL after DDP_LAUNCH_GRACE_S. SIGINT/SIGTERM/SIGHUP sent to the parent are
 * forwarded to the ranks (same escalation). Call it before creating threads; one call at a time.
 * Returns 0 when every rank exited 0; -1 when the launch itself failed (err holds the line, nothing was
 * printed, no child is left); else the exit status ddprun should use (the failing rank's status, or
 * 128 + signal), with the line already printed and copied into err. */
int ddp_launch_local(int nproc, int (*rank_main)(const ddp_identity *, void *), void *ctx, char *err,
                     size_t errcap);

/* A TCP port that was free on 127.0.0.1 a moment ago (bind to port 0, read it back). Returns the port,
 * or -1 with err. */
int ddp_launch_free_port(char *err, size_t errcap);
#endif

/* tests/unit/launch/test_launch.c: rank identity from the environment (Slurm, torchrun-style, Open MPI, none; their
 * precedence; malformed values), Slurm node-list expansion, and `--nproc` local launch: all ranks succeed,
 * a rank exits non-zero, a rank is SIGKILLed, a rank ignores SIGTERM (SIGKILL after the grace period),
 * SIGTERM to the launcher is forwarded (an ignored SIGHUP stays ignored), and ranks die with a SIGKILLed
 * launcher. alarm() guards hangs. */
#include "launch.h"
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"


/* ------------------------------------------------------------------ identity ------------------------ */

static const char *const k_vars[] = {
  "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID",
  "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
  "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof k_vars / sizeof k_vars[0]; i++) unsetenv(k_vars[i]);
}

/* Sets "NAME=value" pairs (NULL-terminated) on a clean environment. */
static void set_env(const char *const *kv) {
  clear_env();
  for (; *kv; kv++) {
    char name[64];
    const char *eq = strchr(*kv, '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - *kv), *kv);
    setenv(name, eq + 1, 1);
  }
}

static void expect_identity(int line, const char *const *kv, const char *source, int rank, int world, int local,
                            const char *addr, int port) {
  ddp_identity id;
  char err[256] = "";
  set_env(kv);
  if (!CHECK(ddp_launch_identity(&id, err, sizeof err) == 0, "line %d: unexpected error: %s", line, err)) return;
  CHECK(!strcmp(id.source, source) && id.rank == rank && id.world == world && id.local_rank == local &&
            !strcmp(id.master_addr, addr) && id.master_port == port,
        "line %d: got %s rank %d/%d local %d %s:%d, expected %s rank %d/%d local %d %s:%d", line, id.source, id.rank,
        id.world, id.local_rank, id.master_addr, id.master_port, source, rank, world, local, addr, port);
}

static void expect_identity_error(int line, const char *const *kv, const char *want) {
  ddp_identity id = {.rank = 42};
  char err[256] = "";
  set_env(kv);
  if (!CHECK(ddp_launch_identity(&id, err, sizeof err) != 0, "line %d: accepted, expected \"%s\"", line, want)) return;
  CHECK(id.rank == 42); /* untouched on error */
  CHECK(!strcmp(err, want), "line %d: got \"%s\"\n    expected \"%s\"", line, err, want);
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ID_OK(kv, ...) expect_identity(__LINE__, kv, __VA_ARGS__)
#define ID_ERR(kv, want) expect_identity_error(__LINE__, kv, want)

static void test_identity(void) {
  /* none */
  ID_OK(ENV("UNRELATED=1"), "none", 0, 1, 0, "127.0.0.1", 29500);
  ID_OK(ENV("RANK=", "OMPI_COMM_WORLD_RANK="), "none", 0, 1, 0, "127.0.0.1", 29500); /* empty = unset */
  /* torchrun style */
  ID_OK(ENV("RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "MASTER_ADDR=node7", "MASTER_PORT=1234"), "torchrun", 3, 4, 1,
        "node7", 1234);
  ID_OK(ENV("RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0"), "torchrun", 0, 2, 0, "127.0.0.1", 29500);
  /* Open MPI */
  ID_OK(ENV("OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1",
            "MASTER_ADDR=10.0.0.2", "MASTER_PORT=40000"),
        "openmpi", 5, 8, 1, "10.0.0.2", 40000);
  ID_OK(ENV("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_LOCAL_RANK=1"), "openmpi", 1, 2, 1,
        "127.0.0.1", 29500);
  /* Slurm: step node list first, port from the job id unless MASTER_PORT */
  ID_OK(ENV("SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=1", "SLURM_STEP_NODELIST=gpu[08-10]",
            "SLURM_JOB_NODELIST=other[1-4]", "SLURM_JOB_ID=123456"),
        "slurm", 3, 8, 1, "gpu08", 23456);
  ID_OK(ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_NODELIST=a[1-2],b3",
            "SLURM_JOB_ID=7", "MASTER_PORT=4321"),
        "slurm", 0, 2, 0, "a1", 4321);
  ID_OK(ENV("SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_NODELIST=rack[2-3]-n[01-02]",
            "SLURM_JOB_ID=40000"),
        "slurm", 1, 2, 0, "rack2-n01", 20000);
  /* precedence: Slurm > torchrun > Open MPI */
  ID_OK(ENV("SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "SLURM_JOB_NODELIST=n1", "SLURM_JOB_ID=1",
            "RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3",
            "OMPI_COMM_WORLD_LOCAL_RANK=0"),
        "slurm", 1, 2, 1, "n1", 20001);
  ID_OK(ENV("RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0", "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=3",
            "OMPI_COMM_WORLD_LOCAL_RANK=0"),
        "torchrun", 2, 4, 0, "127.0.0.1", 29500);

  /* malformed values: one line naming the variable */
  ID_ERR(ENV("RANK=abc", "WORLD_SIZE=2", "LOCAL_RANK=0"), "RANK='abc' is not a non-negative integer");
  ID_ERR(ENV("RANK=-1", "WORLD_SIZE=2", "LOCAL_RANK=0"), "RANK=-1 is negative");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE= 2", "LOCAL_RANK=0"), "WORLD_SIZE=' 2' is not a non-negative integer");
  ID_ERR(ENV("RANK=4", "WORLD_SIZE=4", "LOCAL_RANK=0"), "RANK=4 is not below WORLD_SIZE=4");
  ID_ERR(ENV("RANK=0", "WORLD_SIZE=0", "LOCAL_RANK=0"), "WORLD_SIZE=0 must be at least 1");
  ID_ERR(ENV("RANK=0", "WORLD_SIZE=99999999999999999999", "LOCAL_RANK=0"),
         "WORLD_SIZE=99999999999999999999 is larger than 16777216");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2"), "LOCAL_RANK is not set (RANK is)");
  ID_ERR(ENV("WORLD_SIZE=2", "LOCAL_RANK=0"), "RANK is not set (WORLD_SIZE is)");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=2"), "LOCAL_RANK=2 is not below WORLD_SIZE=2");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_PORT=70000"), "MASTER_PORT=70000 is larger than 65535");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_PORT=0"), "MASTER_PORT=0 is not a TCP port (1-65535)");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_PORT=http"),
         "MASTER_PORT='http' is not a non-negative integer");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=a b"),
         "MASTER_ADDR has a space or control character at offset 1");
  ID_ERR(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=n\xc3\xb6" "de1"),
         "MASTER_ADDR has a non-ASCII byte at offset 1: a host name or address is ASCII");
  ID_ERR(ENV("OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2x", "OMPI_COMM_WORLD_LOCAL_RANK=0"),
         "OMPI_COMM_WORLD_SIZE='2x' is not a non-negative integer");
  ID_ERR(ENV("SLURM_PROCID=2", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_NODELIST=n1", "SLURM_JOB_ID=1"),
         "SLURM_PROCID=2 is not below SLURM_NTASKS=2");
  ID_ERR(ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_ID=1"),
         "SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set (SLURM_PROCID is)");
  ID_ERR(ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_NODELIST=gpu[1-",
             "SLURM_JOB_NODELIST=gpu1", "SLURM_JOB_ID=1"),
         "SLURM_STEP_NODELIST: node list 'gpu[1-': expected a number at offset 6");
  ID_ERR(ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_NODELIST=gpu1"),
         "SLURM_JOB_ID is not set (it picks the rendezvous port; or set MASTER_PORT)");
  ID_ERR(ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "SLURM_JOB_NODELIST=gpu1", "SLURM_JOB_ID=12_3"),
         "SLURM_JOB_ID='12_3' is not a non-negative integer");
  clear_env();
}

/* ------------------------------------------------------------------ node lists ---------------------- */

typedef struct joined {
  char s[1024];
  int stop_after; /* 0: never */
  int seen;
} joined;

static int join_host(const char *host, void *ctx) {
  joined *j = ctx;
  size_t n = strlen(j->s);
  snprintf(j->s + n, sizeof j->s - n, "%s%s", n ? " " : "", host);
  return ++j->seen == j->stop_after;
}

static void expect_list(int line, const char *list, const char *want, int count) {
  joined j = {.s = ""};
  char err[256] = "";
  int n = ddp_nodelist_expand(list, join_host, &j, err, sizeof err);
  CHECK(n == count && !strcmp(j.s, want), "line %d: '%s' gave %d \"%s\" (%s), expected %d \"%s\"", line, list, n, j.s,
        err, count, want);
}

static void expect_list_error(int line, const char *list, const char *want) {
  joined j = {.s = ""};
  char err[512] = "";
  int n = ddp_nodelist_expand(list, join_host, &j, err, sizeof err);
  CHECK(n == -1 && !j.seen && strstr(err, want) && strstr(err, "node list '"),
        "line %d: '%s' gave %d hosts, err \"%s\", expected an error with \"%s\"", line, list, n, err, want);
}

#define LIST_OK(list, want, n) expect_list(__LINE__, list, want, n)
#define LIST_ERR(list, want) expect_list_error(__LINE__, list, want)

static void test_nodelist(void) {
  LIST_OK("gpu01", "gpu01", 1);
  LIST_OK("gpu[01-03,07]", "gpu01 gpu02 gpu03 gpu07", 4);
  LIST_OK("a[1-2],b3", "a1 a2 b3", 3);
  LIST_OK("gpu[08-10]", "gpu08 gpu09 gpu10", 3);
  LIST_OK("gpu[8-10]", "gpu8 gpu9 gpu10", 3);
  LIST_OK("gpu[098-101]", "gpu098 gpu099 gpu100 gpu101", 4);
  LIST_OK("rack[1-2]-n[01-02]", "rack1-n01 rack1-n02 rack2-n01 rack2-n02", 4);
  LIST_OK("n[1,3],login,x[7]", "n1 n3 login x7", 4);
  LIST_OK("node-[001-002].cluster.org", "node-001.cluster.org node-002.cluster.org", 2);
  LIST_OK("[1-2]", "1 2", 2);
  LIST_OK("a[5]b[0-1]c", "a5b0c a5b1c", 2);

  LIST_ERR("", "empty");
  LIST_ERR("gpu[1-", "expected a number at offset 6");
  LIST_ERR("gpu[1-2", "unclosed '[' at offset 7");
  LIST_ERR("gpu[3-1]", "range goes down at offset 4");
  LIST_ERR("gpu[a]", "expected a number");
  LIST_ERR("gpu[]", "expected a number");
  LIST_ERR("gpu[1,]", "expected a number");
  LIST_ERR("gpu[1-2]]", "unmatched ']'");
  LIST_ERR("gpu]1", "unmatched ']'");
  LIST_ERR("gpu[[1]]", "expected a number");
  LIST_ERR("gpu[1 2]", "unexpected character in brackets");
  LIST_ERR("a,,b", "empty host name at offset 2");
  LIST_ERR("a,", "empty host name");
  LIST_ERR(",a", "empty host name at offset 0");
  LIST_ERR("a b", "unexpected character at offset 1");
  LIST_ERR("n[1234567890]", "number too long");
  LIST_ERR("n[0-99999]x[0-99]", "expands to too many hosts");
  LIST_ERR("good[1-3],bad[", "expected a number"); /* validated whole before any host is delivered */
  char longname[400];
  memset(longname, 'h', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  LIST_ERR(longname, "host name too long");

  /* early stop, and the first host */
  joined j = {.s = "", .stop_after = 2};
  CHECK(ddp_nodelist_expand("n[1-9]", join_host, &j, NULL, 0) == 2);
  CHECK_STR("j.s", "n1 n2", j.s);
  CHECK(ddp_nodelist_expand("n[1-9],m", NULL, NULL, NULL, 0) == 10);
  char host[16];
  CHECK(ddp_nodelist_first("gpu[08-10],x", host, sizeof host) == 0);
  CHECK_STR("host", "gpu08", host);
  CHECK(ddp_nodelist_first("rack[3-4]-n[07-09]", host, sizeof host) == 0);
  CHECK_STR("host", "rack3-n07", host);
  CHECK(ddp_nodelist_first("gpu[1-", host, sizeof host) == -1);
  CHECK(ddp_nodelist_first("", host, sizeof host) == -1);
  CHECK(ddp_nodelist_first("averyveryverylonghostname", host, sizeof host) == -1);
}

/* ------------------------------------------------------------------ --nproc ------------------------- */

typedef struct local_ctx {
  int mode;     /* which behaviour rank_main plays */
  int report_fd; /* ranks write a byte (their rank) or their pid here */
} local_ctx;

enum { M_CHECK, M_EXIT3, M_SIGKILL, M_STUBBORN, M_SLEEP, M_PIDS };

static int rank_main(const ddp_identity *id, void *p) {
  local_ctx *c = p;
  switch (c->mode) {
  case M_CHECK: { /* the identity, the environment and ddp_launch_identity agree */
    ddp_identity env;
    char err[256];
    if (ddp_launch_identity(&env, err, sizeof err)) return 10;
    if (strcmp(env.source, "torchrun") || strcmp(id->source, "local")) return 11;
    if (env.rank != id->rank || env.world != id->world || env.local_rank != id->local_rank ||
        strcmp(env.master_addr, id->master_addr) || env.master_port != id->master_port)
      return 12;
    if (id->local_rank != id->rank || strcmp(id->master_addr, "127.0.0.1") || id->master_port < 1) return 13;
    const char *lws = getenv("LOCAL_WORLD_SIZE");
    if (!lws || atoi(lws) != id->world) return 14;
    unsigned char r = (unsigned char)id->rank;
    if (write(c->report_fd, &r, 1) != 1) return 15;
    return 0;
  }
  case M_EXIT3:
    if (id->rank == 1) return 3;
    sleep(30);
    return 0;
  case M_SIGKILL:
    if (id->rank == 2) raise(SIGKILL);
    sleep(30);
    return 0;
  case M_STUBBORN: /* rank 1 ignores SIGTERM: the launcher must escalate to SIGKILL */
    if (id->rank == 1) {
      signal(SIGTERM, SIG_IGN);
      sleep(30);
      return 0;
    }
    usleep(200 * 1000);
    return 1;
  case M_SLEEP: {
    unsigned char r = (unsigned char)id->rank;
    if (write(c->report_fd, &r, 1) != 1) return 15;
    sleep(30);
    return 0;
  }
  case M_PIDS: {
    pid_t me = getpid();
    if (write(c->report_fd, &me, sizeof me) != sizeof me) return 15;
    sleep(30);
    return 0;
  }
  }
  return 99;
}

static void test_local_ok(int nproc) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  local_ctx c = {M_CHECK, fds[1]};
  char err[256] = "";
  setenv("SLURM_PROCID", "0", 1); /* the children must not see it: --nproc wins inside them */
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  int rc = ddp_launch_local(nproc, rank_main, &c, err, sizeof err);
  clear_env();
  CHECK(rc == 0);
  if (rc) fprintf(stderr, "  launch_local: %d %s\n", rc, err);
  close(fds[1]);
  unsigned char seen[8];
  ssize_t n = read(fds[0], seen, sizeof seen);
  close(fds[0]);
  CHECK(n == nproc);
  int mask = 0;
  for (ssize_t i = 0; i < n; i++) mask |= 1 << seen[i];
  CHECK(mask == (1 << nproc) - 1);
}

static void test_local_failures(void) {
  char err[256];
  double t0 = ddp_now_s();
  int rc = ddp_launch_local(4, rank_main, &(local_ctx){M_EXIT3, -1}, err, sizeof err);
  double dt = ddp_now_s() - t0;
  CHECK(rc == 3);
  CHECK_STR("err", "ddprun: rank 1 exited with status 3", err);
  CHECK(dt < 10.0);
  fprintf(stderr, "  exit 3: %.2f s\n", dt);

  t0 = ddp_now_s();
  rc = ddp_launch_local(3, rank_main, &(local_ctx){M_SIGKILL, -1}, err, sizeof err);
  dt = ddp_now_s() - t0;
  CHECK(rc == 128 + SIGKILL);
  CHECK(!strncmp(err, "ddprun: rank 2 killed by signal 9", 33));
  CHECK(dt < 10.0);
  fprintf(stderr, "  SIGKILL: %.2f s\n", dt);

  t0 = ddp_now_s();
  rc = ddp_launch_local(2, rank_main, &(local_ctx){M_STUBBORN, -1}, err, sizeof err);
  dt = ddp_now_s() - t0;
  CHECK(rc == 1);
  CHECK_STR("err", "ddprun: rank 0 exited with status 1", err);
  CHECK(dt >= 5.0 - 0.5 && dt < 10.0);
  fprintf(stderr, "  SIGTERM ignored, SIGKILL after the grace period: %.2f s\n", dt);

  CHECK(ddp_launch_local(0, rank_main, NULL, err, sizeof err) == -1);
  CHECK_STR("err", "--nproc 0: must be between 1 and 4096", err);
}

/* Runs ddp_launch_local(2, mode) in a forked launcher; returns its pid, and the read end of the ranks'
 * report pipe. */
static pid_t start_launcher(int mode, int *report_rd) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    signal(SIGHUP, SIG_IGN); /* as under nohup: the launcher must keep ignoring it */
    char err[256];
    _exit(ddp_launch_local(2, rank_main, &(local_ctx){mode, fds[1]}, err, sizeof err) & 0xff);
  }
  close(fds[1]);
  *report_rd = fds[0];
  return pid;
}

static void test_local_signals(void) {
  /* SIGTERM to the launcher reaches the ranks; the launcher exits 128 + 15 */
  int rd;
  pid_t launcher = start_launcher(M_SLEEP, &rd);
  CHECK(launcher > 0);
  unsigned char ranks[2];
  CHECK(read(rd, ranks, 1) == 1 && read(rd, ranks + 1, 1) == 1); /* both ranks run: handlers are in place */
  close(rd);
  int st = 0;
  kill(launcher, SIGHUP); /* ignored: nothing stops */
  usleep(300 * 1000);
  CHECK(waitpid(launcher, &st, WNOHANG) == 0);
  double t0 = ddp_now_s();
  kill(launcher, SIGTERM);
  CHECK(waitpid(launcher, &st, 0) == launcher);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM);
  CHECK(ddp_now_s() - t0 < 5.0);

  /* a SIGKILLed launcher takes its ranks along (PR_SET_PDEATHSIG); as a subreaper we get the orphans */
  CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  launcher = start_launcher(M_PIDS, &rd);
  pid_t pids[2];
  CHECK(read(rd, &pids[0], sizeof(pid_t)) == sizeof(pid_t) && read(rd, &pids[1], sizeof(pid_t)) == sizeof(pid_t));
  close(rd);
  kill(launcher, SIGKILL);
  CHECK(waitpid(launcher, &st, 0) == launcher && WIFSIGNALED(st));
  for (int i = 0; i < 2; i++) {
    int rst = 0;
    pid_t w = waitpid(pids[i], &rst, 0);
    CHECK(w == pids[i] && WIFSIGNALED(rst) && WTERMSIG(rst) == SIGKILL);
    if (w != pids[i]) fprintf(stderr, "  orphan %d: waitpid %s\n", (int)pids[i], strerror(errno));
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int main(void) {
  alarm(60); /* a hang is a failure */
  test_identity();
  test_nodelist();
  test_local_ok(4);
  test_local_ok(1);
  test_local_failures();
  test_local_signals();
  return check_report("test_launch");
}

/* compiler/main.c: the ddpc command line.
 *   ddpc SCHEDULE.lua -o PLAN [--arch sm_90a] [--set path=value ...] [-j N] [--time-limit S]
 *   ddpc inspect PLAN [--rank R]
 * Errors: one line on stderr, exit 1; a failed compile leaves no plan file. */
#include "clock.h"
#include "codegen.h"
#include "compile.h"
#include "err.h"
#include "inspect.h"
#include "schedule.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: ddpc SCHEDULE.lua -o PLAN [--arch sm_90a] [--set path=value ...] [-j N] [--quiet]\n"
          "            [--time-limit S]  (CPU seconds the schedule's Lua may run, default 10)\n"
          "       ddpc inspect PLAN [--rank R]\n"
          "Compiles a Lua training schedule into a static execution plan for ddprun, or prints a plan.\n");
}

static int cmd_inspect(int argc, char **argv) {
  const char *path = NULL;
  int rank = -1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--rank") && i + 1 < argc) {
      char *end;
      rank = (int)strtol(argv[++i], &end, 10);
      if (*end || rank < 0) {
        fprintf(stderr, "ddpc inspect: --rank must be a rank number, got '%s'\n", argv[i]);
        return 1;
      }
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "ddpc inspect: unknown option '%s'\n", argv[i]);
      return 1;
    } else if (!path) {
      path = argv[i];
    } else {
      fprintf(stderr, "ddpc inspect: more than one plan given ('%s')\n", argv[i]);
      return 1;
    }
  }
  if (!path) {
    fprintf(stderr, "ddpc inspect: no plan given\n");
    return 1;
  }
  char err[1024];
  ddp_plan *p = ddp_plan_read(path, err, sizeof err);
  if (!p) {
    fprintf(stderr, "ddpc: %s\n", err);
    return 1;
  }
  if (rank >= p->meta.world) {
    fprintf(stderr, "ddpc inspect: %s: --rank %d, the plan has %lld ranks\n", path, rank, (long long)p->meta.world);
    ddp_plan_free(p);
    return 1;
  }
  int rc = ddp_inspect(p, rank, stdout);
  ddp_plan_free(p);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  ddp_set_progname("ddpc");
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (!strcmp(argv[1], "inspect")) return cmd_inspect(argc - 2, argv + 2);
  const char *schedule = NULL, *out = NULL, *arch = "sm_90a";
  const char *sets[argc]; /* the --set overrides (at most one per argument) */
  int nsets = 0, quiet = 0;
  long jobs = sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-o") || !strcmp(a, "--arch") || !strcmp(a, "--set") || !strcmp(a, "-j") ||
        !strcmp(a, "--time-limit")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "ddpc: %s needs a value\n", a);
        return 1;
      }
      const char *v = argv[++i];
      if (!strcmp(a, "-o")) out = v;
      else if (!strcmp(a, "--arch")) arch = v;
      else if (!strcmp(a, "--set")) sets[nsets++] = v;
      else if (!strcmp(a, "--time-limit")) {
        char *end;
        double t = strtod(v, &end);
        if (*end || !(t > 0 && t <= 1e6)) {
          fprintf(stderr, "ddpc: --time-limit must be a number of seconds in (0, 1e6], got '%s'\n", v);
          return 1;
        }
        ddp_schedule_time_limit(t);
      } else {
        char *end;
        jobs = strtol(v, &end, 10);
        if (*end || jobs < 1) {
          fprintf(stderr, "ddpc: -j must be a positive number, got '%s'\n", v);
          return 1;
        }
      }
    } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
      quiet = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "ddpc: unknown option '%s' (see ddpc --help)\n", a);
      return 1;
    } else if (!schedule) {
      schedule = a;
    } else {
      fprintf(stderr, "ddpc: more than one schedule given ('%s')\n", a);
      return 1;
    }
  }
  if (!schedule || !out) {
    fprintf(stderr, "ddpc: %s\n", !schedule ? "no schedule given" : "no output given (-o PLAN)");
    return 1;
  }
  if (!ddp_arch_supported(arch)) {
    fprintf(stderr, "ddpc: --arch %s: unknown or unsupported GPU architecture (try sm_90a, sm_90, sm_80)\n", arch);
    return 1;
  }
  double t0 = ddp_now_s();
  char err[2048];
  ddp_schedule *s = ddp_schedule_load(schedule, sets, nsets, err, sizeof err);
  if (!s) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  ddp_compile_opts o = {.arch = arch, .jobs = (int)jobs};
  if (ddp_codegen_opts_from_env(&o.codegen, err, sizeof err) != 0) {
    fprintf(stderr, "ddpc: %s\n", err);
    ddp_schedule_free(s);
    return 1;
  }
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  ddp_schedule_free(s);
  if (!p) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (ddp_plan_write(p, out, err, sizeof err) != 0) {
    fprintf(stderr, "ddpc: %s\n", err);
    ddp_plan_free(p);
    return 1;
  }
  if (!quiet) {
    uint64_t cubin = 0, instrs = 0;
    for (uint32_t m = 0; m < p->nmodules; m++) cubin += p->modules[m].cubin_size;
    for (int64_t r = 0; r < p->meta.world; r++) instrs += p->ranks[r].step.n;
    fprintf(stderr, "ddpc: %s -> %s: %lld ranks, %llu step instructions, %u kernels (%llu KiB CUBIN), %.2f s\n",
            schedule, out, (long long)p->meta.world, (unsigned long long)instrs, p->nmodules,
            (unsigned long long)(cubin >> 10), ddp_now_s() - t0);
  }
  ddp_plan_free(p);
  return 0;
}

/* compiler/main.c: the ddpc command line (docs/CLI.md).
 *   ddpc SCHEDULE.lua -o PLAN [--arch sm_90a] [--set path=value ...] [-j N] [--time-limit S] [--quiet]
 *        [--device-memory SIZE] [--profile FILE]
 *   ddpc inspect PLAN [--rank R] [--json]
 *   ddpc --version
 * Options by getopt_long: anywhere on the line, as `--opt value` or `--opt=value`; -h/--help anywhere
 * prints that command's usage to stdout and exits 0. Exit status: 0 done, 2 a bad command line (one line
 * "ddpc: --opt: ..."), 1 any other failure (one line naming the file and field). A failed compile leaves no
 * plan file, and a plan is never written over one of its inputs (the schedule, the profile, the token file). */
#include "args.h"
#include "clock.h"
#include "codegen.h"
#include "compile.h"
#include "err.h"
#include "explain.h"
#include "inspect.h"
#include "inspect_json.h"
#include "plot.h"
#include "scaling.h"
#include "schedule.h"
#include <getopt.h>
#include <limits.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage_compile(FILE *f) {
  fprintf(f,
          "usage: ddpc SCHEDULE.lua -o PLAN [--arch sm_90a] [--set path=value ...] [-j N] [--quiet]\n"
          "            [--time-limit S] [--device-memory SIZE] [--profile FILE]\n"
          "       ddpc inspect PLAN [--rank R] [--json]\n"
          "       ddpc explain PLAN [--profile FILE] [--rank R] [--json] [--compare METRICS.jsonl]\n"
          "       ddpc scaling fit|plan ... (IsoFLOPs scaling laws: ddpc scaling --help)\n"
          "       ddpc plot split|throughput -o FILE.svg METRICS.jsonl ... (ddpc plot --help)\n"
          "       ddpc explain buckets|mesh SCHEDULE.lua ... (the seeds' models: ddpc explain buckets --help)\n"
          "       ddpc --version\n"
          "Compiles a Lua training schedule into a static execution plan for ddprun, or prints a plan.\n"
          "  -o, --output PLAN    the plan file to write (never one of the inputs)\n"
          "  --arch ARCH          GPU architecture of the kernels: sm_90a (default), sm_90, sm_80, or another\n"
          "                       that NVRTC compiles for (bf16 needs sm_80+; the Hopper kernels sm_90a)\n"
          "  --set path=value     override a schedule field, e.g. --set parallel.bucket_mb=100 (repeatable)\n"
          "  -j, --jobs N         kernels compiled in parallel, 1..1024 (default: the CPUs online)\n"
          "  --time-limit S       CPU seconds the schedule's Lua may run, in (0, 1e6] (default 10)\n"
          "  --device-memory SIZE refuse a plan whose rank needs more than SIZE bytes of GPU memory, e.g. 141GB,\n"
          "                       80GiB (default: not checked)\n"
          "  --profile FILE       device profile of the step prediction stored in the plan (ddpc explain's\n"
          "                       JSON; default: the built-in H100/H200 profile, uncalibrated)\n"
          "  -q, --quiet          no summary line\n"
          "  -h, --help           this help;  --version: the version, plan format and CUDA version\n"
          "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

static void usage_inspect(FILE *f) {
  fprintf(f,
          "usage: ddpc inspect PLAN [--rank R] [--json]\n"
          "Prints a plan: summary, tensors, memory, buckets, the init and step programs, kernels.\n"
          "  --rank R    only rank R's programs (0 .. world - 1)\n"
          "  --json      one JSON document (meta, ranks, tensors, buckets, kernels, programs) for tools\n"
          "  -h, --help  this help\n"
          "Exit status: 0 done, 1 failed, 2 bad command line.\n");
}

static int version(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    printf("ddpc %s (plan format %u, CUDA %d.%d via NVRTC, no NCCL: ddpc does not use it)\n", DDP_VERSION,
           DDP_PLAN_VERSION, major, minor);
  else
    printf("ddpc %s (plan format %u, CUDA unknown: NVRTC did not answer, no NCCL: ddpc does not use it)\n",
           DDP_VERSION, DDP_PLAN_VERSION);
  return ferror(stdout) || fflush(stdout) ? 1 : 0;
}

/* A bad command line: one line, exit 2. */
static int usage_error(const char *prog, const char *msg) {
  fprintf(stderr, "%s: %s\n", prog, msg);
  return DDP_EXIT_USAGE;
}

static int cmd_inspect(int argc, char **argv) {
  static const struct option lo[] = {{"rank", required_argument, NULL, 'r'},
                                     {"json", no_argument, NULL, 'J'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  char bad[1024] = "", err[1024];
  int64_t rank = -1;
  int json = 0, help = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
    if (c == 'h') help = 1;
    else if (c == 'J') json = 1;
    else if (c == 'r') {
      if (ddp_parse_i64(optarg, 0, INT_MAX - 1, "--rank", &rank, err, sizeof err) && !bad[0])
        snprintf(bad, sizeof bad, "%s", err);
    } else if (!bad[0]) {
      ddp_getopt_error(c, argv, lo, "ddpc inspect", bad, sizeof bad);
    }
  }
  if (help) {
    usage_inspect(stdout);
    return 0;
  }
  if (bad[0]) return usage_error("ddpc inspect", bad);
  if (optind >= argc) return usage_error("ddpc inspect", "no plan given (see ddpc inspect --help)");
  if (optind + 1 < argc) {
    snprintf(bad, sizeof bad, "more than one plan given ('%s')", argv[optind + 1]);
    return usage_error("ddpc inspect", bad);
  }
  const char *path = argv[optind];
  int status = 0;
  ddp_plan *p = ddp_inspect_open("ddpc inspect", path, rank, &status);
  if (!p) return status;
  int rc = json ? ddp_inspect_json(p, (int)rank, stdout, err, sizeof err) : ddp_inspect(p, (int)rank, stdout);
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) rc = -1;
  if (rc) fprintf(stderr, "ddpc inspect: %s: %s\n", path, json && err[0] ? err : "cannot write the listing to stdout");
  ddp_plan_free(p);
  return rc ? DDP_EXIT_FAILURE : 0;
}

int main(int argc, char **argv) {
  ddp_set_progname("ddpc");
  if (argc >= 2 && !strcmp(argv[1], "inspect")) return cmd_inspect(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "explain")) return ddp_explain_main(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "scaling")) return ddp_cmd_scaling(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "plot")) return ddp_cmd_plot(argc - 1, argv + 1);
  static const struct option lo[] = {{"output", required_argument, NULL, 'o'},
                                     {"arch", required_argument, NULL, 'a'},
                                     {"set", required_argument, NULL, 's'},
                                     {"jobs", required_argument, NULL, 'j'},
                                     {"time-limit", required_argument, NULL, 't'},
                                     {"device-memory", required_argument, NULL, 'm'},
                                     {"profile", required_argument, NULL, 'p'},
                                     {"quiet", no_argument, NULL, 'q'},
                                     {"help", no_argument, NULL, 'h'},
                                     {"version", no_argument, NULL, 'V'},
                                     {NULL, 0, NULL, 0}};
  uint64_t device_memory = 0;
  const char *out = NULL, *arch = "sm_90a", *profile = NULL;
  const char **sets = ddp_xcalloc((size_t)argc, sizeof *sets); /* the --set overrides */
  int nsets = 0, quiet = 0, help = 0, want_version = 0, c;
  int64_t jobs = sysconf(_SC_NPROCESSORS_ONLN);
  double time_limit = 0;
  char bad[2048] = "", err[2048];
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:j:qh", lo, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'o': out = optarg; break;
    case 'a': arch = optarg; break;
    case 's': sets[nsets++] = optarg; break;
    case 'j': rc = ddp_parse_i64(optarg, 1, 1024, "-j", &jobs, err, sizeof err); break;
    case 't': rc = ddp_parse_double(optarg, 0, 1, 1e6, "--time-limit", &time_limit, err, sizeof err); break;
    case 'm': rc = ddp_parse_bytes(optarg, "--device-memory", &device_memory, err, sizeof err); break;
    case 'p': profile = optarg; break;
    case 'q': quiet = 1; break;
    case 'h': help = 1; break;
    case 'V': want_version = 1; break;
    default: ddp_getopt_error(c, argv, lo, "ddpc", err, sizeof err), rc = -1;
    }
    if (rc && !bad[0]) snprintf(bad, sizeof bad, "%s", err);
  }
  if (help || want_version) {
    free(sets);
    if (help) usage_compile(stdout);
    return help ? 0 : version();
  }
  const char *schedule = optind < argc ? argv[optind] : NULL;
  if (!bad[0] && optind + 1 < argc) snprintf(bad, sizeof bad, "more than one schedule given ('%s')", argv[optind + 1]);
  if (!bad[0] && (!schedule || !out))
    snprintf(bad, sizeof bad, "%s (see ddpc --help)", !schedule ? "no schedule given" : "no output given (-o PLAN)");
  const char *inputs[3] = {schedule, profile, NULL}, *names[3] = {"schedule", "profile", "token file"};
  if (!bad[0] && (ddp_check_output("-o", out, inputs, names, 2, 0, err, sizeof err) ||
                  ddp_check_output_folder("-o", out, err, sizeof err)))
    snprintf(bad, sizeof bad, "%s", err);
  size_t olen = out ? strlen(out) : 0;
  if (!bad[0] && olen > 4 && !strcmp(out + olen - 4, ".lua") && access(out, F_OK) == 0)
    snprintf(bad, sizeof bad, "-o: %s is a Lua file (a schedule, or a module one requires); refused", out);
  if (bad[0]) {
    free(sets);
    return usage_error("ddpc", bad);
  }
  if (!ddp_arch_supported(arch)) {
    fprintf(stderr, "ddpc: --arch %s: unknown or unsupported GPU architecture (try sm_90a, sm_90, sm_80)\n", arch);
    free(sets);
    return DDP_EXIT_USAGE;
  }
  ddp_profile prof;
  ddp_profile_default(&prof);
  if (profile && ddp_profile_read(profile, &prof, err, sizeof err)) {
    fprintf(stderr, "ddpc: --profile: %s\n", err);
    free(sets);
    return DDP_EXIT_FAILURE;
  }
  if (time_limit > 0) ddp_schedule_time_limit(time_limit);
  double t0 = ddp_now_s();
  ddp_schedule *s = ddp_schedule_load(schedule, sets, nsets, err, sizeof err);
  free(sets);
  if (!s) {
    fprintf(stderr, "%s\n", err);
    return DDP_EXIT_FAILURE;
  }
  ddp_compile_opts o = {.arch = arch, .jobs = (int)jobs, .device_memory = device_memory, .profile = &prof};
  if (ddp_codegen_opts_from_env(&o.codegen, err, sizeof err) != 0) {
    fprintf(stderr, "ddpc: %s\n", err);
    ddp_schedule_free(s);
    return DDP_EXIT_FAILURE;
  }
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  ddp_schedule_free(s);
  if (!p) {
    fprintf(stderr, "%s\n", err);
    return DDP_EXIT_FAILURE;
  }
  /* The token file is known once compiled: the plan must not replace it either. */
  inputs[2] = p->meta.data_path && p->meta.data_path[0] ? p->meta.data_path : NULL;
  if (ddp_check_output("-o", out, inputs, names, 3, 0, err, sizeof err)) {
    fprintf(stderr, "ddpc: %s\n", err);
    ddp_plan_free(p);
    return DDP_EXIT_USAGE;
  }
  if (ddp_plan_write(p, out, err, sizeof err) != 0) {
    fprintf(stderr, "ddpc: %s\n", err);
    ddp_plan_free(p);
    return DDP_EXIT_FAILURE;
  }
  if (!quiet) {
    uint64_t cubin = 0, instrs = 0;
    for (uint32_t m = 0; m < p->nmodules; m++) cubin += p->modules[m].cubin_size;
    for (int64_t r = 0; r < p->meta.world; r++) instrs += p->ranks[r].step.n;
    char pred[96] = "";
    if (p->meta.predicted_step_ms > 0)
      snprintf(pred, sizeof pred, ", predicted %.2f ms/step (ddpc explain)", p->meta.predicted_step_ms);
    fprintf(stderr, "ddpc: %s -> %s: %lld ranks, %llu step instructions, %u kernels (%llu KiB CUBIN)%s, %.2f s\n",
            schedule, out, (long long)p->meta.world, (unsigned long long)instrs, p->nmodules,
            (unsigned long long)(cubin >> 10), pred, ddp_now_s() - t0);
  }
  ddp_plan_free(p);
  return 0;
}

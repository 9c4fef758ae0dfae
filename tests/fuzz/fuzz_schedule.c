/* tests/fuzz/fuzz_schedule.c: fuzz target of the schedule front end. The input is a schedule's text; it
 * is written to this process's private folder and loaded with ddp_schedule_load exactly as `ddpc` loads a
 * file (sandboxed Lua with its memory cap, instruction limit and pattern budget; the watchdog with a
 * short time limit). A refusal must be one non-empty line. A schedule the front end accepts is compiled
 * without kernel code generation (every stage but NVRTC; transformers of at most FUZZ_COMPILE_MAX_LAYERS
 * layers), and the plan the compiler makes must be written
 * and read back by the plan reader, whose validation every plan ddpc emits must pass. */
#include "compile.h"
#include "file.h"
#include "fuzz_util.h"
#include "plan.h"
#include "schedule.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CPU seconds per Lua phase (the wall-clock limit is 3 times this): past it the watchdog ends the process
 * with status 1, which run.sh reports as a hang. libFuzzer's -timeout in run.sh (10 s of wall clock) is
 * caught first for a slow input. 8 s, not less: regress/schedule/memory_cap.lua, which fills the Lua memory
 * cap with 1 MiB strings, takes about 4 s of CPU under AddressSanitizer when the fuzz target runs it
 * alone (1 s without), and must end at the cap, not at the watchdog. The replay CTests (fuzz_replay_schedule,
 * DDP_FUZZ_REPLAY) allow 30 s: in the ASan + UBSan CTest build on the 2-core CI machine the same input took
 * 7-8.5 s of CPU in every run logged (2026-11-23..27) and once went past 8 s beside the other tests. */
#ifdef DDP_FUZZ_REPLAY
#define FUZZ_SCHEDULE_TIME_LIMIT_S 30.0
#else
#define FUZZ_SCHEDULE_TIME_LIMIT_S 8.0
#endif
/* Deeper transformers are only loaded, not compiled: the XL schedules' 48 layers take seconds to compile
 * under the sanitizers (the plan's string interning is linear per string) and add no new code paths. */
#define FUZZ_COMPILE_MAX_LAYERS 4

/* The shipped schedules sit next to the input, so `require "models"` and `require "xl_ddp"` resolve as
 * they do in schedules/. */
static void copy_shipped_modules(void) {
  DIR *d = opendir(DDP_FUZZ_SCHEDULE_DIR);
  if (!d) fuzz_die("cannot open the shipped schedules", DDP_FUZZ_SCHEDULE_DIR);
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".lua") != 0) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", DDP_FUZZ_SCHEDULE_DIR, e->d_name);
    size_t len = 0;
    char err[512];
    char *text = ddp_read_file(path, (size_t)1 << 20, &len, err, sizeof err);
    if (!text) fuzz_die("cannot read a shipped schedule", err);
    fuzz_write_file(e->d_name, (const uint8_t *)text, len);
    free(text);
  }
  closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int once;
  if (!once) {
    ddp_schedule_time_limit(FUZZ_SCHEDULE_TIME_LIMIT_S);
    copy_shipped_modules();
    once = 1;
  }
  const char *path = fuzz_write_file("schedule.lua", data, size);
  char err[2048] = "";
  ddp_schedule *s = ddp_schedule_load(path, NULL, 0, err, sizeof err);
  if (!s) {
    if (getenv("DDP_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_schedule: refused: %s\n", err);
    fuzz_check_message("ddp_schedule_load", err);
    return 0;
  }
  if (s->model_kind == MODEL_TRANSFORMER && s->layers > FUZZ_COMPILE_MAX_LAYERS) { /* front end only */
    ddp_schedule_free(s);
    return 0;
  }
  ddp_compile_opts o = {.arch = "sm_90a", .jobs = 1, .skip_codegen = 1};
  ddp_plan *p = ddp_compile(s, &o, err, sizeof err);
  ddp_schedule_free(s);
  if (!p) {
    fuzz_check_message("ddp_compile", err);
    return 0;
  }
  char out[4200];
  snprintf(out, sizeof out, "%s/plan.bin", fuzz_tmp_dir());
  if (ddp_plan_write(p, out, err, sizeof err) != 0) fuzz_die("a compiled plan cannot be written", err);
  ddp_plan *q = ddp_plan_read(out, err, sizeof err);
  if (!q) fuzz_die("the plan reader refuses a plan the compiler made", err);
  if (getenv("DDP_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_schedule: loaded, compiled (%u tensors), round-tripped\n", p->ntensors);
  ddp_plan_free(q);
  ddp_plan_free(p);
  return 0;
}

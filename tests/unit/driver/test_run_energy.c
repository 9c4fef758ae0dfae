/* tests/unit/driver/test_run_energy.c: the energy fields of runtime/driver/run.c's metrics. A fake executor
 * whose `energy` returns scripted readings (counter, power-limit time, when the counter moved) runs three
 * empty steps of a hand-built one-rank plan:
 *  - energy_total_J, rank_energy_total_J and rank_energy_span_s are cumulative from the reading before
 *    step 1, power_W their quotient, power_capped_total_ms the power-limit time since then;
 *  - a counter that has not moved yet gives 0 J over 0 s: power_W null;
 *  - the closing line's J/step is the timed steps' mean power times their mean host_ms, and its wall time
 *    their mean host_ms;
 *  - the run line carries the executor's "power" words;
 *  - a GPU that does not report its power-limit time (UINT64_MAX) prints it null, the energy still measured;
 *  - a reading that fails, or a counter going backwards, prints null from then on;
 *  - an executor without `energy` (the reference executor) prints null and no "power" field. */
#include "run.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"
#include "fake_exec.h"

typedef struct fake {
  ddp_exec x;
  float arena[SCALAR_COUNT];
  const ddp_energy *script; /* the readings, in order; mJ == 0 ends them (the reading fails) */
  int calls;
  int next;
} fake;

static int f_read(ddp_exec *x, int32_t tensor, void *dst, char *err, size_t errcap) {
  (void)err, (void)errcap, (void)tensor;
  memcpy(dst, ((fake *)x)->arena, sizeof ((fake *)x)->arena);
  return 0;
}
static int f_energy(ddp_exec *x, ddp_energy *out) {
  fake *f = (fake *)x;
  f->calls++;
  if (f->script[f->next].mJ == 0) return 1;
  *out = f->script[f->next++];
  return 0;
}
static const ddp_exec_vtbl with_energy = {.name = "fake", .run = fake_run, .sync = fake_sync, .read = f_read,
                                          .write = fake_write, .timers = fake_timers, .memory = fake_memory,
                                          .energy = f_energy};
static const ddp_exec_vtbl without_energy = {.name = "fake", .run = fake_run, .sync = fake_sync, .read = f_read,
                                             .write = fake_write, .timers = fake_timers, .memory = fake_memory};

/* Three steps through vt with the readings `script`; the metrics file into out, and with `say` the closing
 * line (stdout) into said. */
static int run3(const ddp_exec_vtbl *vt, const ddp_energy *script, const char *power, char *out, size_t outcap,
                char *said, size_t saidcap, char *err, size_t errcap) {
  ddp_plan *p = fake_plan(1, 3);
  fake f = {.x = {.v = vt, .plan = p, .rank = 0, .world = 1}, .script = script};
  snprintf(f.x.power, sizeof f.x.power, "%s", power);
  f.arena[0] = 2.5f;
  char metrics[256], stdout_path[256];
  snprintf(metrics, sizeof metrics, "/tmp/ddp_test_run_energy_%ld.jsonl", (long)getpid());
  snprintf(stdout_path, sizeof stdout_path, "/tmp/ddp_test_run_energy_%ld.out", (long)getpid());
  ddp_run_opts o = {.steps = 3, .metrics_path = metrics, .quiet = said == NULL};
  int saved = -1;
  if (said) { /* stdout into a file for the run */
    fflush(stdout);
    saved = dup(1);
    int fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) dup2(fd, 1), close(fd);
  }
  int rc = ddp_run_rank(&f.x, &o, err, errcap);
  if (said) {
    fflush(stdout);
    dup2(saved, 1), close(saved);
    fake_take_file(stdout_path, said, saidcap);
  }
  fake_take_file(metrics, out, outcap);
  ddp_plan_free(p);
  return rc;
}

/* The metrics line of step `step` (1-based) in out, copied into line. */
static const char *step_line(const char *out, int step, char *line, size_t cap) {
  char key[32];
  snprintf(key, sizeof key, "{\"step\": %d,", step);
  const char *a = strstr(out, key), *b = a ? strchr(a, '\n') : NULL;
  size_t n = a && b ? (size_t)(b - a) : 0;
  if (n >= cap) n = cap - 1;
  memcpy(line, a ? a : "", n);
  line[n] = 0;
  return line;
}

int main(void) {
  static char out[16384], line[4096], said[4096];
  char err[512] = "";
  /* before step 1, then after steps 1, 2, 3: 30, 65, 97 J over 0.05, 0.1, 0.2 s; 2, 2.5, 2.5 ms capped */
  const ddp_energy counters[] = {{1000000, 5000000, 10.0},
                                 {1030000, 7000000, 10.05},
                                 {1065000, 7500000, 10.1},
                                 {1097000, 7500000, 10.2},
                                 {0, 0, 0}};
  CHECK(run3(&with_energy, counters, "NVML, power limit 700 W", out, sizeof out, said, sizeof said, err, sizeof err) == 0,
        "%s", err);
  CHECK_CONTAINS("the run line names how energy is measured", out, "\"power\": \"NVML, power limit 700 W\"");
  CHECK_CONTAINS("step 1: 30 J in 0.05 s", step_line(out, 1, line, sizeof line),
                 "\"energy_total_J\": 30.0000, \"power_W\": 600.0000, \"power_capped_total_ms\": 2.0000,");
  CHECK_CONTAINS("step 1: the rank's", line,
                 "\"rank_energy_total_J\": [30.0000], \"rank_energy_span_s\": [0.0500], \"rank_power_capped_total_ms\": [2.0000]");
  CHECK_CONTAINS("step 2: 65 J in 0.1 s", step_line(out, 2, line, sizeof line),
                 "\"energy_total_J\": 65.0000, \"power_W\": 650.0000, \"power_capped_total_ms\": 2.5000,");
  CHECK_CONTAINS("step 3: 97 J in 0.2 s", step_line(out, 3, line, sizeof line),
                 "\"energy_total_J\": 97.0000, \"power_W\": 485.0000, \"power_capped_total_ms\": 2.5000,");
  /* no warm-up: the timed steps' mean power (97 J / 0.2 s) times their mean host iteration */
  double host = 0;
  for (int k = 1; k <= 3; k++) {
    const char *h = strstr(step_line(out, k, line, sizeof line), "\"host_ms\": ");
    host += h ? atof(h + 11) : 0;
  }
  char want[128];
  snprintf(want, sizeof want, ", %.2f J/step (485 W per GPU), final loss", 485.0 * host / 3 * 1e-3);
  CHECK_CONTAINS("the closing line's J/step", said, want);
  /* the metrics print host_ms to 4 decimals and the closing line its mean to 3: equal within their rounding */
  const char *wall = strstr(said, "), wall ");
  CHECK(wall && fabs(atof(wall + 8) - host / 3) <= 0.0006, "the closing line's wall time is the timed steps' mean "
        "host_ms (%.4f): %s", host / 3, said);

  /* the counter has not moved at step 1: 0 J over 0 s, no power yet */
  const ddp_energy still[] = {{5000, 0, 1.0}, {5000, 0, 1.0}, {9000, 0, 1.1}, {9000, 0, 1.1}, {0, 0, 0}};
  CHECK(run3(&with_energy, still, "NVML, power limit 700 W", out, sizeof out, NULL, 0, err, sizeof err) == 0, "%s", err);
  CHECK_CONTAINS("step 1: 0 J, power null", step_line(out, 1, line, sizeof line),
                 "\"energy_total_J\": 0.0000, \"power_W\": null,");
  CHECK_CONTAINS("step 2: 4 J in 0.1 s", step_line(out, 2, line, sizeof line), "\"energy_total_J\": 4.0000, \"power_W\": 40.0000,");

  /* no power-limit time on this GPU: the energy still measured */
  const ddp_energy no_limit[] = {{1000, UINT64_MAX, 1.0}, {3000, UINT64_MAX, 1.5}, {6000, UINT64_MAX, 2.0},
                                 {7000, UINT64_MAX, 2.5}, {0, 0, 0}};
  CHECK(run3(&with_energy, no_limit, "NVML, power limit unknown", out, sizeof out, NULL, 0, err, sizeof err) == 0, "%s", err);
  CHECK_CONTAINS("step 2: 5 J", step_line(out, 2, line, sizeof line), "\"energy_total_J\": 5.0000, \"power_W\": 5.0000,");
  CHECK_CONTAINS("step 2: power-limit time null", line, "\"power_capped_total_ms\": null,");

  /* the reading fails after step 1; a counter going backwards: null from then on */
  const ddp_energy fails[] = {{1000, 0, 1.0}, {4000, 0, 2.0}, {0, 0, 0}};
  CHECK(run3(&with_energy, fails, "NVML, power limit 700 W", out, sizeof out, said, sizeof said, err, sizeof err) == 0,
        "%s", err);
  CHECK_CONTAINS("step 1 measured", step_line(out, 1, line, sizeof line), "\"energy_total_J\": 3.0000,");
  CHECK_CONTAINS("step 2 not", step_line(out, 2, line, sizeof line), "\"energy_total_J\": null,");
  CHECK_CONTAINS("step 3 not", step_line(out, 3, line, sizeof line), "\"rank_energy_total_J\": [null]");
  CHECK_LACKS("no J/step in the closing line", said, "J/step");
  const ddp_energy backwards[] = {{5000, 0, 1.0}, {9000, 0, 2.0}, {2000, 0, 3.0}, {3000, 0, 4.0}, {0, 0, 0}};
  CHECK(run3(&with_energy, backwards, "NVML, power limit 700 W", out, sizeof out, NULL, 0, err, sizeof err) == 0, "%s", err);
  CHECK_CONTAINS("before the reset measured", step_line(out, 1, line, sizeof line), "\"energy_total_J\": 4.0000,");
  CHECK_CONTAINS("a counter going backwards: null", step_line(out, 2, line, sizeof line), "\"energy_total_J\": null,");
  CHECK_CONTAINS("... and after", step_line(out, 3, line, sizeof line), "\"energy_total_J\": null,");

  /* an executor without energy counters */
  CHECK(run3(&without_energy, counters, "", out, sizeof out, NULL, 0, err, sizeof err) == 0, "%s", err);
  CHECK_LACKS("no power field on the run line", out, "\"power\":");
  CHECK_CONTAINS("energy null", step_line(out, 1, line, sizeof line),
                 "\"energy_total_J\": null, \"power_W\": null, \"power_capped_total_ms\": null");
  CHECK_CONTAINS("rank arrays null", line,
                 "\"rank_energy_total_J\": [null], \"rank_energy_span_s\": [null], \"rank_power_capped_total_ms\": [null]");
  return check_report("test_run_energy");
}

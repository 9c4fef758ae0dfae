/* runtime/dispatch.c: reads the plan and picks the executor: --device, else cuda when a GPU is present,
 * else the reference executor when the plan is small enough to finish in reasonable time (it says so),
 * else a refusal with the estimate. Checkpoints (--checkpoint-dir) are refused for a plan that does not
 * train (mode "forward" or "forward_backward"): its parameters never change and it has no optimizer
 * state, so a checkpoint would only restate the initialisation. Before any rank starts, the outputs are
 * checked (none names an input or another output, none lies in the checkpoint folder, every one's folder
 * exists), and a run that does not resume refuses a checkpoint folder that already holds checkpoints. */
#include "args.h"
#include "cache_dir.h"
#include "calibrate.h"
#include "checkpoint.h"
#include "cli.h"
#include "err.h"
#include "exec_cuda.h"
#include "file.h"
#include "launch.h"
#include "probe.h"
#include "trace.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DDP_REF_AUTO_LIMIT_S 600.0

/* Does the file `path` lie in the folder `dir` or below it (both resolved: links, "..")? An existing path is
 * resolved itself (a link to a checkpoint's file lies where its target does); a new one by its folder, and
 * one whose folder does not exist yet lies nowhere (its open fails on its own). */
static int inside_dir(const char *path, const char *dir) {
  char folder[4200], rp[PATH_MAX], rd[PATH_MAX];
  if (!realpath(dir, rd)) return 0;
  if (!realpath(path, rp)) {
    if (ddp_path_folder(path, folder, sizeof folder) || !realpath(folder, rp)) return 0;
  }
  size_t n = strlen(rd);
  return !strncmp(rp, rd, n) && (rp[n] == 0 || rp[n] == '/' || (n == 1 && rd[0] == '/'));
}

/* Before anything is written: no output (metrics, every rank's trace, the checkpoint files) names an input
 * (the plan, its token file, the checkpoint being resumed) or another output, and the atomic ones are not
 * devices or FIFOs (a rename would replace them). */
static int check_outputs(const ddp_plan *p, const ddprun_args *a, char *err, size_t errcap) {
  /* Per-rank files (traces) of the first 64 ranks: the check is quadratic in paths and every process runs
   * it; names past those differ only in their rank number. */
  int world = p->meta.world < 64 ? (int)p->meta.world : 64, nckpt = a->run.ckpt_dir ? 2 : 0;
  int cap = 4 + world + nckpt, n = 0, rc = 0;
  char **path = ddp_xcalloc((size_t)cap, sizeof *path);
  const char **what = ddp_xcalloc((size_t)cap, sizeof *what);
  int *is_input = ddp_xcalloc((size_t)cap, sizeof *is_input);
  path[n] = ddp_xstrdup(a->plan_path), what[n] = "plan", is_input[n++] = 1;
  if (p->meta.data_path && p->meta.data_path[0])
    path[n] = ddp_xstrdup(p->meta.data_path), what[n] = "plan's token file", is_input[n++] = 1;
  if (a->run.metrics_path) path[n] = ddp_xstrdup(a->run.metrics_path), what[n++] = "--metrics";
  if (a->run.calibrate_out) path[n] = ddp_xstrdup(a->run.calibrate_out), what[n++] = "--calibrate-out";
  for (int r = 0; a->run.trace_path && r < world; r++) {
    char t[4200];
    ddp_trace_path(a->run.trace_path, r, (int)p->meta.world, t, sizeof t);
    path[n] = ddp_xstrdup(t), what[n++] = "--trace";
  }
  for (int k = 0; k < nckpt; k++) {
    char t[4200];
    snprintf(t, sizeof t, "%s/%s.safetensors", a->run.ckpt_dir, k == 0 ? "model" : "optimizer");
    path[n] = ddp_xstrdup(t), what[n++] = "--checkpoint-dir";
  }
  const char **others = ddp_xcalloc((size_t)cap, sizeof *others), **names = ddp_xcalloc((size_t)cap, sizeof *names);
  for (int i = 0; i < n && rc == 0 && a->run.ckpt_dir; i++) /* checkpoints there are replaced and removed */
    if (!is_input[i] && strcmp(what[i], "--checkpoint-dir") && inside_dir(path[i], a->run.ckpt_dir))
      rc = ddp_fail(err, errcap, "%s %s lies in --checkpoint-dir %s, whose checkpoints ddprun writes, replaces and "
                    "removes: write it elsewhere", what[i], path[i], a->run.ckpt_dir);
  for (int i = 0; i < n && rc == 0; i++) {
    if (is_input[i]) continue;
    /* every other path is checked against this one, named by what it is */
    int m = 0;
    for (int j = 0; j < n; j++)
      if (j != i && strcmp(what[j], what[i]) != 0) others[m] = path[j], names[m++] = what[j];
    rc = ddp_check_output(what[i], path[i], others, names, m, !strcmp(what[i], "--metrics"), err, errcap);
    if (rc == 0 && strcmp(what[i], "--checkpoint-dir")) /* that folder is made when missing */
      rc = ddp_check_output_folder(what[i], path[i], err, errcap);
  }
  /* the checkpoint folder itself: made when missing, so the first checkpoint does not fail after the steps */
  if (rc == 0 && a->run.ckpt_dir) rc = ddp_check_dir_creatable("--checkpoint-dir", a->run.ckpt_dir, err, errcap);
  for (int i = 0; i < n; i++) free(path[i]);
  free(others);
  free(names);
  free(path);
  free(what);
  free(is_input);
  return rc;
}

/* --nproc N inside a launcher that started several tasks: each task would run the whole job, and the copies
 * would write the same metrics, traces and checkpoints. Several tasks: mpirun's OMPI_COMM_WORLD_SIZE, a
 * torchrun-style WORLD_SIZE, or a Slurm job step's (srun's) SLURM_NTASKS; not an sbatch script's own
 * SLURM_NTASKS (its batch step, SLURM_STEP_ID 4294967290 and above, or none, runs the script once). */
static int nproc_in_launch(const ddprun_args *a, char *err, size_t errcap) {
  if (a->nproc <= 0) return 0;
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS"};
  const bool slurm_step = ddp_launch_in_slurm_step();
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end = NULL;
    long long n = v && *v ? strtoll(v, &end, 10) : 0;
    if (n > 1 && !*end && (i < 2 || slurm_step))
      return ddp_fail(err, errcap, "--nproc %d inside a launch of %lld tasks (%s=%s): each task would run the whole "
                      "job; give the launcher's tasks (one rank each) or --nproc alone", a->nproc, n, vars[i], v);
  }
  return 0;
}

int ddprun_main(ddprun_args *a) {
  char err[1024];
  if (nproc_in_launch(a, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    return DDP_EXIT_USAGE;
  }
  ddp_plan *p = ddp_plan_read(a->plan_path, err, sizeof err);
  if (!p) {
    fprintf(stderr, "ddprun: %s\n", err);
    return 1;
  }
  if (a->run.ckpt_dir && p->meta.mode != MODE_TRAIN) {
    fprintf(stderr,
            "ddprun: %s: --checkpoint-dir needs a plan that trains, this one's mode is \"%s\" (its parameters never "
            "change and it has no optimizer state); compile it with mode = \"train\"\n",
            a->plan_path, ddp_mode_name((int)p->meta.mode));
    ddp_plan_free(p);
    return 1;
  }
  if (a->run.calibrate && ddp_calib_check_plan(p, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s: --calibrate: %s\n", a->plan_path, err);
    ddp_plan_free(p);
    return 1;
  }
  char cache[4096];
  if (a->run.calibrate && !a->run.calibrate_out && !ddp_cache_dir("profiles", cache, sizeof cache)) {
    fprintf(stderr, "ddprun: --calibrate: no cache directory for the profile (DDPC_CACHE_DIR, XDG_CACHE_HOME or "
            "HOME must name a directory that can be created), or give --calibrate-out FILE\n");
    ddp_plan_free(p);
    return 1;
  }
  int64_t newest = a->run.ckpt_dir && !a->run.resume ? ddp_ckpt_newest_name(a->run.ckpt_dir) : -1;
  if (newest >= 0) { /* a new run's checkpoints would mix with the old run's, and --resume would pick its newest */
    fprintf(stderr, "ddprun: --checkpoint-dir %s already holds checkpoints (the newest step-%06lld): add --resume to "
            "continue from them, or give a new folder\n", a->run.ckpt_dir, (long long)newest);
    ddp_plan_free(p);
    return DDP_EXIT_USAGE;
  }
  if (check_outputs(p, a, err, sizeof err)) {
    fprintf(stderr, "ddprun: %s\n", err);
    ddp_plan_free(p);
    return DDP_EXIT_USAGE;
  }
  int rc;
  int64_t steps = a->run.steps >= 0 ? a->run.steps : p->meta.steps;
  if (a->device && !strcmp(a->device, "ref")) {
    rc = ddprun_ref(p, a);
  } else {
    int ndev = 0;
    char why[512];
    if (ddp_cuda_probe_in_child(&ndev, why, sizeof why) == 0) {
      rc = ddprun_cuda(p, a);
    } else if (a->device) { /* --device cuda */
      fprintf(stderr, "ddprun: --device cuda: %s\n", why);
      rc = 1;
    } else {
      double est = ddprun_ref_estimate_s(p, steps);
      if (est > DDP_REF_AUTO_LIMIT_S) {
        fprintf(stderr,
                "ddprun: %s; the reference executor would need about %.0f s for %lld steps of %s (limit %.0f s): "
                "run on a GPU, or pass --device ref to run it anyway\n",
                why, est, (long long)steps, a->plan_path, DDP_REF_AUTO_LIMIT_S);
        rc = 1;
      } else {
        fprintf(stderr, "ddprun: %s; running on the reference executor (about %.1f s estimated)\n", why, est);
        rc = ddprun_ref(p, a);
      }
    }
  }
  ddp_plan_free(p);
  return rc;
}

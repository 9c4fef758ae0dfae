/* runtime/io/checkpoint.h: checkpoints as safetensors, loadable by PyTorch (safetensors.torch.load_file).
 * A checkpoint folder (docs/CHECKPOINTS.md) holds one folder per saved step:
 *   ROOT/step-000123/model.safetensors      fp32 parameters under the PyTorch state-dict names
 *                              (token_embeddings.weight, layers.N.attn.q_proj.weight, ...), with
 *                              metadata {"step": "<completed steps>", "format": "ddpc"};
 *   ROOT/step-000123/optimizer.safetensors  AdamW state: <param>.exp_avg and <param>.exp_avg_sq per
 *                              parameter and the optimizer scalars ("optimizer.scalars": t, lr, grad norm,
 *                              clip scale);
 *   the same names, full shapes and bytes whatever the sharding: a sharded plan's ranks each write the
 *   elements of their pieces into the one file and each read theirs back (ckpt_plan.h, checkpoint.c);
 *   ROOT/step-000123/MANIFEST  "ddpc checkpoint 1", the step, the world, then "file NAME BYTES CRC32" per file;
 *   ROOT/latest                the newest complete step folder's name.
 * A step folder is written as ROOT/.tmp-step-000123-<pid>/, fsynced and renamed, so a crash never leaves a
 * partial checkpoint under a step name; ddp_ckpt_clean_stray removes what a crash left. */
#ifndef DDP_CHECKPOINT_H
#define DDP_CHECKPOINT_H
#include "exec.h"
#include <stdbool.h>

/* ---- one folder's files (checkpoint.c) ---- */
/* Writes the checkpoint files into dir; every rank calls it (rank 0 writes what every rank holds, each rank
 * its own pieces; with pieces on ranks other than 0 the ranks meet at three host sums). Each file appears
 * under its name whole or not at all; a failure on any rank fails it on every rank. */
int ddp_checkpoint_save(ddp_exec *x, const char *dir, int64_t steps_done, char *err, size_t errcap);
/* Restores into the executor from dir: the rank's whole tensors and its own pieces, after checking every
 * name, dtype and full shape; returns the completed step count in *steps_done. */
int ddp_checkpoint_load(ddp_exec *x, const char *dir, int64_t *steps_done, char *err, size_t errcap);
/* Whether the plan describes its checkpoint state (ckpt_plan.h: every state-dict tensor held whole or by
 * pieces covering each element once): 0, or -1 with one line. ddprun checks it at start when it writes or
 * reads checkpoints, so a bad plan fails before its first step, not at its first checkpoint. */
int ddp_checkpoint_check_plan(const ddp_exec *x, char *err, size_t errcap);
/* mkdir -p. */
int ddp_ckpt_mkdir_p(const char *dir, char *err, size_t errcap);

/* ---- the folder of step folders (ckpt_store.c); every rank calls save and resume ---- */
/* Writes ROOT/step-<step>, updates latest, then keeps only the `keep` newest complete step folders at or
 * before `step` (keep <= 0: all). */
int ddp_ckpt_save_step(ddp_exec *x, const char *root, int64_t step, int keep, char *err, size_t errcap);
/* Loads the newest complete step folder (MANIFEST present, every file's size and CRC32 matching; a bad one
 * is named on stderr and the previous one tried); a ROOT holding model.safetensors directly (the flat
 * layout of older ddprun) is loaded as it is. Rank 0 prints "resuming from DIR (step N)" unless quiet. */
int ddp_ckpt_resume(ddp_exec *x, const char *root, bool quiet, int64_t *steps_done, char *err, size_t errcap);
/* The newest step folder's step under ROOT by its name (step-N), complete or not; -1 when there is none (or
 * no ROOT). A run that does not resume refuses a ROOT holding one (ddprun's dispatch). */
int64_t ddp_ckpt_newest_name(const char *root);
/* Rank 0 at start, before anything else in ROOT (made when missing, if create): an exclusive lock on
 * ROOT/.lock (flock), held until ddp_ckpt_unlock, so that a second run on the folder (a requeued job, a double
 * submission) is refused instead of removing this one's checkpoint in progress as a crash's leftover. The
 * descriptor (INT_MAX: no ROOT and not create, nothing locked), or -1 with one line ("--checkpoint-dir D is in
 * use by another run ..."). */
int ddp_ckpt_lock(const char *root, bool create, char *err, size_t errcap);
void ddp_ckpt_unlock(int fd);
/* Rank 0 at start: removes what an interrupted checkpoint left (ROOT/.tmp-step-*, .tmp-old-step-*,
 * .tmp-replaced-step-* and latest.tmp.*, the names ckpt_store.c gives them), a line each unless quiet. */
int ddp_ckpt_clean_stray(const char *root, bool quiet, char *err, size_t errcap);
#endif

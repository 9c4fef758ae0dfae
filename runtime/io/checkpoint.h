/* runtime/io/checkpoint.h: checkpoints as safetensors, loadable by PyTorch (safetensors.torch.load_file):
 *   DIR/model.safetensors      fp32 parameters under the PyTorch state-dict names
 *                              (token_embeddings.weight, layers.N.attn.q_proj.weight, ...), with
 *                              metadata {"step": "<completed steps>", "format": "ddpc"};
 *   DIR/optimizer.safetensors  AdamW state: <param>.exp_avg and <param>.exp_avg_sq per parameter and the
 *                              optimizer scalars ("optimizer.scalars": t, lr, grad norm, clip scale);
 *                              under optimizer sharding, one file per rank instead:
 *                              DIR/optimizer.rank<R>.safetensors with the rank's flat shard.
 * Files are written as DIR/.name.tmp.<pid> and renamed, so a crash never leaves a partial checkpoint. */
#ifndef DDP_CHECKPOINT_H
#define DDP_CHECKPOINT_H
#include "exec.h"

/* Writes what `rank` owns (rank 0: the model and unsharded optimizer state; every rank: its shard). */
int ddp_checkpoint_save(ddp_exec *x, const char *dir, int64_t steps_done, char *err, size_t errcap);
/* Restores into the executor; returns the completed step count in *steps_done. */
int ddp_checkpoint_load(ddp_exec *x, const char *dir, int64_t *steps_done, char *err, size_t errcap);
#endif

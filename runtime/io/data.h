/* runtime/io/data.h: the batch source. For step s and rank r of a world of W ranks with B rows per rank:
 *   the global batch of step s is rows [s*B*W, (s+1)*B*W) of the data stream, and rank r takes rows
 *   [s*B*W + r*B, s*B*W + (r+1)*B).
 * Token data (transformer): row j of the stream is a window of context+1 tokens; inputs are its first
 *   context tokens and targets the last context (shifted by one).
 *   - random: token k of row j is a counter-based hash of (data seed, j, k) modulo vocab;
 *   - pattern: a repeating sequence, token at stream position g = j*context + k is (g * 7 + g / 23) % P
 *     with P = min(vocab, 61), so the next token is predictable and the loss must fall;
 *   - file: a flat little-endian uint16 token file (numpy.memmap(path, dtype=uint16)); the file holds
 *     W = (n_tokens - 1) / context whole windows at a stride of context, and row j is window j mod W, the
 *     tokens [(j mod W) * context, (j mod W) * context + context]: in order, epoch after epoch (the data
 *     seed does not enter), the last (n_tokens - 1) mod context tokens unread; every token
 *     in the file is checked against the vocab when it is opened (ddp_data_open), before any step.
 * Dense data (MLP): a dataset of `data_rows` rows of normal(0,1) inputs and targets from the data seed;
 *   row j of the stream is dataset row j mod data_rows.
 * The rule is deterministic: the same plan, seed, step and rank give the same batch on every executor. */
#ifndef DDP_DATA_H
#define DDP_DATA_H
#include "plan.h"
#include <stdint.h>

typedef struct ddp_data ddp_data;

/* seed: the data seed (meta.data_seed unless overridden). Errors: one line naming the file. */
ddp_data *ddp_data_open(const ddp_plan *p, uint64_t seed, char *err, size_t errcap);
void ddp_data_close(ddp_data *d);
/* Fills the rank's inputs and targets for step s in the dtypes of the plan's tokens/targets tensors.
 * Returns -1 with a message on a bad token (id >= vocab: names the file and the token's offset). */
int ddp_data_fill(ddp_data *d, int64_t step, int rank, int world, void *inputs, void *targets, char *err,
                  size_t errcap);
/* Scans a whole token file once for ids >= vocab (0 for generated data); ddp_data_open calls it. */
int ddp_data_validate(ddp_data *d, char *err, size_t errcap);
#endif

/* runtime/bench/calib_merge.h: what a calibration keeps of the profile already at its path (calib_merge.c). */
#ifndef DDP_CALIB_MERGE_H
#define DDP_CALIB_MERGE_H
#include <jansson.h>
#include <stddef.h>

/* Merges the calibrated profile at `path` (same device, same world, or world 1 under a multi-rank run) into
 * root, the profile this run measured: a multi-rank run over a one-rank profile takes its compute figures
 * (take_compute); otherwise the figures, collective kinds, attention shapes and GEMM table root lacks are
 * kept. Writes one line about it into note (empty when there was no earlier file). */
void ddp_calib_merge_earlier(json_t *root, const char *path, const char *dev, long long world, char *note,
                             size_t notecap);
#endif

/* runtime/cuda/power.h: a GPU's energy and power-limit counters (NVML, loaded at run time). The CUDA
 * executor opens one per rank at load; a sampler thread polls the energy counter (DDP_ENERGY_PERIOD_MS)
 * within the windows the step loop opens while the GPU is busy and notes when it changes, and every
 * step's end takes the latest sample without waiting (exec.h `energy`). So the metrics say what the steps
 * cost in joules and how long the power limit held the clocks down, and the NVML calls (milliseconds
 * each) do not keep the GPU waiting. */
#ifndef DDP_POWER_H
#define DDP_POWER_H
#include "exec.h"
#include <stddef.h>

typedef struct ddp_power ddp_power;

/* Opens the counters of CUDA device `device`, read every period_s by the sampler. Returns NULL, with the
 * reason in why (one line: the library missing, NVML's error, a GPU without an energy counter), where they
 * cannot be read; that is no error for a run, which then reports no energy. limit_w: the power limit NVML
 * enforces now (0 when unknown). */
ddp_power *ddp_power_open(int device, double period_s, double *limit_w, char *why, size_t whycap);
/* The latest sample: 0, or -1 once NVML has failed (then nothing is written). power_capped_ns is
 * UINT64_MAX on a GPU that does not report its power-limit time. */
int ddp_power_read(ddp_power *pw, ddp_energy *out);
/* The GPU is busy for at least `seconds` from now and this process makes no CUDA call it must not wait
 * for: the sampler may read the counters until then (power.c says why only then). */
void ddp_power_window(ddp_power *pw, double seconds);
/* Stops the sampler and closes NVML (NULL: nothing). */
void ddp_power_close(ddp_power *pw);
#endif

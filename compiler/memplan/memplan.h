/* compiler/memplan/memplan.h: the static memory planner. Persistent classes (parameters, gradients, optimizer
 * state, io, workspace) are laid out one after another; activations share memory by liveness over the
 * step program (first to last use, widened for uses on the communication streams to where the events
 * order them against the compute stream), placed largest first at the lowest free offset. Every buffer
 * reference is then resolved to (arena, absolute offset) and the per-class bytes recorded per rank. */
#ifndef DDP_MEMPLAN_H
#define DDP_MEMPLAN_H
#include "plan.h"
int ddp_memplan(ddp_plan *p, char *err, size_t errcap);
#endif

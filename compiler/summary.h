/* compiler/summary.h: the schedule summary (plan meta) recorded in the plan. */
#ifndef DDP_SUMMARY_H
#define DDP_SUMMARY_H
#include "builder.h"

/* Fills p->meta from the schedule and the built model, and the per-step communication volume from rank 0's
 * step program. */
void ddp_summary(ddp_plan *p, const ddp_schedule *s, const char *arch, const ddp_builder *b);
#endif

/* plan/step_times.h: what one step's timing points (the plan's TIMER instructions) say, one function for
 * the measured step (ddprun's metrics: runtime/driver/run.c) and the predicted one (ddpc explain's
 * simulation: compiler/explain/sim.c), so a prediction and a measurement are the same quantities. */
#ifndef DDP_STEP_TIMES_H
#define DDP_STEP_TIMES_H
#include "plan.h"

/* What one step's timing points say (milliseconds), derived from the plan's TIMER roles:
 * step = STEP_END - STEP_BEGIN; comm = sum of (COMM_END - COMM_BEGIN) over the step's collectives;
 * exposed = last gradient-collective COMM_END before OPT_BEGIN minus BACKWARD_END (>= 0);
 * overlap = the part of the collectives' intervals inside [STEP_BEGIN, BACKWARD_END] over comm
 * (Holistic Trace Analysis's definition with the compute stream taken as busy until the backward ends);
 * compute = step - exposed. A phase whose timing point the plan lacks (a forward plan has no BACKWARD_END,
 * a plan that does not train no OPT_BEGIN) is 0. */
typedef struct ddp_step_times {
  double step_ms, compute_ms, comm_ms, exposed_comm_ms, overlap_ratio;
  double forward_ms, backward_ms, optimizer_ms; /* FORWARD_END - STEP_BEGIN, BACKWARD_END - FORWARD_END
                                                   (a pipeline plan: the sums of its MB_FORWARD_* and
                                                   MB_BACKWARD_* brackets), STEP_END - OPT_BEGIN */
  double optimizer_comm_ms; /* the collectives timed after OPT_BEGIN (ZeRO's all-gathers, the sharded
                               optimizer's broadcasts): part of optimizer_ms and of exposed_comm_ms */
  double tp_comm_ms; /* the tensor-parallel collectives (TP_COMM_BEGIN .. TP_COMM_END, on the compute stream:
                        the next layer waits for each): part of exposed_comm_ms, not of comm_ms */
} ddp_step_times;

/* The summary of rank's step from ms[slot], the time of each TIMER slot (any common origin). */
void ddp_step_times_from_timers(const ddp_plan *p, int rank, const double *ms, ddp_step_times *out);
#endif

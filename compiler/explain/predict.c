/* compiler/explain/predict.c: the prediction ddpc stores in a plan's meta at compile time (predicted_*,
 * plan/plan.h): rank 0's step (the larger of the simulated step and the power floor), phases, communication
 * and exposed communication from the explain simulator (ddp_explain_sim) on the finished plan, in ms, as
 * `ddpc explain --json` prints them for rank 0.
 * A simulator that cannot run on the plan leaves zeros and its reason in predicted_error; the compile goes
 * on. */
#include "err.h"
#include "explain.h"
#include <stdlib.h>

void ddp_predict_meta(ddp_plan *p, const ddp_profile *pr) {
  ddp_meta *m = &p->meta;
  char err[512] = "";
  m->predicted_step_ms = m->predicted_forward_ms = m->predicted_backward_ms = 0;
  m->predicted_optimizer_ms = m->predicted_comm_ms = m->predicted_exposed_comm_ms = 0;
  free(m->predicted_profile);
  free(m->predicted_error);
  m->predicted_profile = ddp_xstrdup(pr->name);
  m->predicted_error = NULL;
  ddp_sim *s = ddp_explain_sim(p, pr, err, sizeof err);
  if (!s) {
    m->predicted_error = ddp_xstrdup(err[0] ? err : "the simulator failed");
    return;
  }
  const ddp_sim_rank *r0 = &s->ranks[0];
  double ph[3];
  ddp_sim_phases(p, s, 0, &ph[0], &ph[1], &ph[2]);
  m->predicted_step_ms = ddp_rank_step_s(p, pr, 0, r0->step_s, NULL) * 1e3;
  m->predicted_forward_ms = ph[0] >= 0 ? ph[0] * 1e3 : 0;
  m->predicted_backward_ms = ph[1] >= 0 ? ph[1] * 1e3 : 0;
  m->predicted_optimizer_ms = ph[2] >= 0 ? ph[2] * 1e3 : 0;
  m->predicted_comm_ms = r0->comm_s * 1e3;
  m->predicted_exposed_comm_ms = r0->exposed_s * 1e3;
  if (!(m->predicted_step_ms > 0)) { /* nothing to compare against: not a prediction */
    m->predicted_step_ms = m->predicted_forward_ms = m->predicted_backward_ms = 0;
    m->predicted_optimizer_ms = m->predicted_comm_ms = m->predicted_exposed_comm_ms = 0;
    m->predicted_error = ddp_xstrdup("the simulated step takes no time");
  }
  ddp_sim_free(s);
}

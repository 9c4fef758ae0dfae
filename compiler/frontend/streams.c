/* compiler/frontend/streams.c: the schedule's `streams` field, the priorities the CUDA executor gives its
 * streams:
 *   streams = { update_priority = "low" }
 *   update_priority  "equal" (the default) | "low": the streams that carry nothing but optimizer updates
 *                    (one rank's side stream with the optimizer overlapped, ZeRO's update stream) at the
 *                    device's lowest priority and every other stream at its highest, so that the block
 *                    scheduler gives the backward's kernels and the collectives the SMs first whenever both
 *                    have blocks waiting
 * The compiler turns the choice into the plan's meta low_priority_streams (a mask of stream indices, see
 * summary.c); `ddpc inspect` prints it; the reference executor runs streams in program order and has no
 * priorities. */
#include "fe.h"
#include "vocab.h"

void fe_streams(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"update_priority", NULL};
  ddp_schedule *s = c->s;
  s->update_priority = UPDATE_PRIORITY_EQUAL;
  int ty = fe_type(c, root, "streams");
  if (ty == LUA_TNIL) return;
  fe_tab t;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "streams", &t, "a table such as { update_priority = \"low\" }"))
    fe_bad(c, root, "streams", "must be a table such as { update_priority = \"low\" }");
  fe_known(c, &t, fields);
  int prio = UPDATE_PRIORITY_EQUAL;
  fe_enum(c, &t, "update_priority", ddp_update_priority_names, &prio);
  s->update_priority = prio;
}

/* compiler/frontend/streams.c: the schedule's `streams` field, the priorities the CUDA executor gives its
 * streams:
 *   streams = { update_priority = "low", update_tail = 0.25 }
 *   update_priority  "equal" | "low": with "low" the streams that carry nothing but optimizer updates (one
 *                    rank's side stream with the optimizer overlapped, ZeRO's update stream) run at the
 *                    device's lowest priority and every other stream at its highest, so that the block
 *                    scheduler gives the backward's kernels and the collectives the SMs first whenever both
 *                    have blocks waiting. Default: "low" for single() (2026-11-27, one H200: the XL step
 *                    67.7-68.2 -> 65.5-65.8 ms) and for bucketed DDP with optimizer_overlap (2026-11-27, 2 x
 *                    H200, XL 100 MB buckets, all-to-all all-reduces: fp32 gradients 74.3 -> 71.4 ms, bf16
 *                    71.6 -> 68.3), "equal" for every other layout (ZeRO-1 with its update stream low was
 *                    1-4% slower on 2 x H200: its all-gathers wait for the updates)
 *   update_tail      0 .. < 1, with "low", for single() and bucketed DDP with optimizer_overlap (the plans
 *                    whose updates are independent of each other and of every collective): the fraction of
 *                    its update groups (DDP: buckets), the last whose gradients are ready, that runs on a
 *                    second side stream at the high priority, so that they do not queue behind the low
 *                    stream's backlog after the backward. Default 0.25 for single() (the optimizer's tail
 *                    after the backward 3.5-3.6 -> 0.13 ms at the same step time), 0 elsewhere
 * The compiler turns the choice into the plan's meta low_priority_streams (a mask of stream indices: the
 * builder's update_streams, which the optimizer passes set); `ddpc inspect` prints it; the reference executor runs streams in program order and has no
 * priorities. docs/SCHEDULES.md has the measurements. */
#include "fe.h"
#include "vocab.h"

#define SINGLE_UPDATE_TAIL 0.25

void fe_streams(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"update_priority", "update_tail", NULL};
  ddp_schedule *s = c->s;
  const bool single = s->sync == SYNC_NONE && s->stages == 0 && s->mesh_tensor <= 1;
  const bool ddp_overlap = s->sync == SYNC_BUCKETED && s->shard == SHARD_NONE && s->optimizer_overlap && s->stages == 0;
  s->update_priority = single || ddp_overlap ? UPDATE_PRIORITY_LOW : UPDATE_PRIORITY_EQUAL;
  s->update_tail = single ? SINGLE_UPDATE_TAIL : 0;
  int ty = fe_type(c, root, "streams");
  if (ty == LUA_TNIL) return;
  fe_tab t;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "streams", &t, "a table such as { update_priority = \"low\" }"))
    fe_bad(c, root, "streams", "must be a table such as { update_priority = \"low\" }");
  fe_known(c, &t, fields);
  int prio = s->update_priority;
  fe_enum(c, &t, "update_priority", ddp_update_priority_names, &prio);
  s->update_priority = prio;
  s->update_tail = single && prio == UPDATE_PRIORITY_LOW ? SINGLE_UPDATE_TAIL : 0;
  double tail = 0;
  if (fe_num(c, &t, "update_tail", &tail, "a number in [0, 1)")) {
    if (!(tail >= 0 && tail < 1)) fe_bad(c, &t, "update_tail", "must be a number in [0, 1)");
    if (!single && !ddp_overlap)
      fe_bad(c, &t, "update_tail", "applies to single() and to bucketed ddp{} with optimizer_overlap only (their "
             "overlapped optimizers)");
    if (prio != UPDATE_PRIORITY_LOW) fe_bad(c, &t, "update_tail", "needs update_priority = \"low\"");
    s->update_tail = tail;
  }
}

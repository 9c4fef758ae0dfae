/* compiler/frontend/nccl.c: the schedule's `nccl` field, how the CUDA executor configures NCCL's
 * communicators (the world's and every group's) through the API rather than the environment:
 *   nccl = { cta_policy = "efficiency", max_ctas = 8, register = true }
 *   cta_policy  "default" | "efficiency" | "zero": ncclConfig_t.CTAPolicy (NCCL 2.28; the efficiency policy
 *               changes something only for registered buffers, the zero policy only where NCCL has a
 *               copy-engine path: all-gather and its kind on symmetric memory, not all-reduce)
 *   max_ctas    1..64: ncclConfig_t.maxCTAs (fewer SMs for NCCL's kernels); left out: NCCL's own
 *   register    true or "buffers": every arena registered with every communicator (ncclCommRegister), so
 *               collectives on them can run without NCCL's staging copies; "window": every arena allocated
 *               by ncclMemAlloc, those a collective uses registered as symmetric windows (ncclCommWindowRegister), where NCCL
 *               2.28 runs its symmetric kernels (peers' buffers read and written over NVLink) and, with
 *               cta_policy "zero", the copy-engine all-gather; false or "none": neither
 *   reduce_scatter  "nccl" (default) | "alltoall": how shard = zero1/zero2/zero3 reduce-scatters a group's
 *               gradients: NCCL's reduce-scatter, or an all-to-all into zero.received and a SUM_CHUNKS kernel
 *               on the communication stream (the all-to-all is NCCL's copy-engine kind under
 *               cta_policy "zero" and register "window"; the sum is one read of the W chunks)
 *   all_reduce  "nccl" (default) | "alltoall": how data parallelism without ZeRO (sync = "flat" or
 *               "bucketed") all-reduces its gradients: NCCL's all-reduce, or per bucket an all-to-all into
 *               sync.received, SUM_CHUNKS into the rank's chunk and an in-place all-gather of the chunks
 *               (a bucket whose length is not a multiple of the ranks keeps NCCL's all-reduce); or "peer":
 *               no collective at all: each bucket's update (sync = "bucketed" with optimizer_overlap, AdamW)
 *               reads every rank's gradient of the bucket through CUDA IPC mappings and sums it in rank
 *               order, after a PEER_BARRIER (flags between the ranks, no SM) says every rank's bucket is
 *               final, and one more barrier at the step's end says every rank has read it (compiler/passes/
 *               sync.c; every rank's GPU must be on one host with peer access); or "peer_copy": the same
 *               barriers, but each bucket's update first pulls the other ranks' gradients of the bucket into
 *               sync.peer_received with copy engines (PEER_COPY on the update stream), then reads only its own
 *               memory
 *   movement    "nccl" (default) | "peer_copy": who moves the data of the world's all-to-alls and all-gathers
 *               (those of nccl.all_reduce / reduce_scatter = "alltoall" and the ZeRO levels' parameter
 *               gathers): NCCL, or each rank's communication stream itself, pulling every other rank's chunk
 *               with copy engines through CUDA IPC (all at once, in one batch) between two barriers of
 *               flags (op_slots.h COLL_I_PATH); no SM, no NCCL window (so not with register = "window",
 *               whose ncclMemAlloc memory CUDA IPC cannot map)
 * Every field is optional; the plan carries them (meta nccl_*), `ddpc inspect` prints them, and ddprun's
 * metrics say what NCCL accepted. */
#include "fe.h"
#include "plan.h"
#include "vocab.h"

void fe_nccl(fe_conv *c, const fe_tab *root) {
  static const char *const fields[] = {"cta_policy", "max_ctas", "register", "reduce_scatter", "all_reduce", "movement", NULL};
  ddp_schedule *s = c->s;
  s->nccl_cta_policy = NCCL_CTA_DEFAULT;
  s->nccl_max_ctas = 0;
  s->nccl_register = NCCL_REGISTER_NONE;
  s->nccl_reduce_scatter = NCCL_RS_COLLECTIVE;
  s->nccl_all_reduce = NCCL_AR_COLLECTIVE;
  s->nccl_movement = NCCL_MOVE_COLLECTIVE;
  int ty = fe_type(c, root, "nccl");
  if (ty == LUA_TNIL) return;
  fe_tab t;
  if (ty != LUA_TTABLE || !fe_sub(c, root, "nccl", &t, "a table such as { cta_policy = \"efficiency\" }"))
    fe_bad(c, root, "nccl", "must be a table such as { cta_policy = \"efficiency\", max_ctas = 8, register = true }");
  fe_known(c, &t, fields);
  int policy = NCCL_CTA_DEFAULT;
  fe_enum(c, &t, "cta_policy", ddp_nccl_cta_policy_names, &policy);
  s->nccl_cta_policy = policy;
  s->nccl_max_ctas = (int)fe_int_in(c, &t, "max_ctas", 0, 1, 64);
  const int rt = fe_type(c, &t, "register");
  if (rt != LUA_TNIL && rt != LUA_TBOOLEAN && rt != LUA_TSTRING)
    fe_bad(c, &t, "register", "must be true, false, \"none\", \"buffers\" or \"window\"");
  if (rt == LUA_TBOOLEAN) {
    bool on = false;
    fe_bool(c, &t, "register", &on);
    s->nccl_register = on ? NCCL_REGISTER_BUFFERS : NCCL_REGISTER_NONE;
  } else {
    int how = NCCL_REGISTER_NONE;
    fe_enum(c, &t, "register", ddp_nccl_register_names, &how);
    s->nccl_register = how;
  }
  if (s->nccl_register != NCCL_REGISTER_NONE && s->ranks < 2)
    fe_fail(c, &t, "register", "= \"%s\" needs more than one rank: a single rank has no communicator to register "
            "its arenas with", ddp_nccl_register_names[s->nccl_register]);
  int rs = NCCL_RS_COLLECTIVE;
  fe_enum(c, &t, "reduce_scatter", ddp_nccl_reduce_scatter_names, &rs);
  if (rs == NCCL_RS_ALLTOALL && s->shard < SHARD_ZERO1)
    fe_fail(c, &t, "reduce_scatter", "\"alltoall\" needs a ZeRO level that reduce-scatters gradients (shard = "
                                    "\"zero1\", \"zero2\" or \"zero3\"), this schedule has shard = \"%s\"",
           ddp_shard_names[s->shard]);
  s->nccl_reduce_scatter = rs;
  int ar = NCCL_AR_COLLECTIVE;
  fe_enum(c, &t, "all_reduce", ddp_nccl_all_reduce_names, &ar);
  if (ar == NCCL_AR_ALLTOALL &&
      (s->stages > 0 || s->mesh_tensor > 1 || s->ranks < 2 || (s->sync != SYNC_FLAT && s->sync != SYNC_BUCKETED) ||
       s->shard >= SHARD_ZERO1))
    fe_fail(c, &t, "all_reduce", "\"alltoall\" needs data parallelism on more than one rank with sync = \"flat\" or "
                                "\"bucketed\", without ZeRO levels, pipelines or a tensor axis (ZeRO levels: "
                                "nccl.reduce_scatter)");
  if ((ar == NCCL_AR_PEER || ar == NCCL_AR_PEER_COPY) &&
      (s->stages > 0 || s->mesh_tensor > 1 || s->ranks < 2 || s->sync != SYNC_BUCKETED || s->shard != SHARD_NONE ||
       !s->optimizer_overlap || s->optimizer != OPTIM_ADAMW || s->mode != MODE_TRAIN))
    fe_fail(c, &t, "all_reduce", "\"%s\" needs data parallelism on more than one rank with sync = \"bucketed\", "
                                "overlap = \"backward\" and optimizer_overlap = true (each bucket's AdamW reads every "
                                "rank's gradient), without ZeRO levels, pipelines or a tensor axis, in mode \"train\"",
            ddp_nccl_all_reduce_names[ar]);
  s->nccl_all_reduce = ar;
  int mv = NCCL_MOVE_COLLECTIVE;
  fe_enum(c, &t, "movement", ddp_nccl_movement_names, &mv);
  if (mv == NCCL_MOVE_PEER_COPY && (s->stages > 0 || s->mesh_tensor > 1 || s->ranks < 2))
    fe_fail(c, &t, "movement", "\"peer_copy\" needs data parallelism on more than one rank, without pipelines or a "
                              "tensor axis (it moves the world's all-to-alls and all-gathers)");
  if (mv == NCCL_MOVE_PEER_COPY && s->nccl_register == NCCL_REGISTER_WINDOW)
    fe_fail(c, &t, "movement", "\"peer_copy\" maps the peers' arenas through CUDA IPC, which cannot map the "
                              "ncclMemAlloc memory of register = \"window\"");
  s->nccl_movement = mv;
}

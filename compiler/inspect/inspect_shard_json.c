/* compiler/inspect/inspect_shard_json.c: the "sharding" and "memory_per_rank" objects of `ddpc inspect --json`
 * (inspect_shard.c works them out; exact byte counts, the formula written out):
 *   "sharding": {"level", "level_from", "world", "units": [{"index", "params", "elements", "grad_bytes",
 *                "compute_bytes", "shard_bytes", "gathered", "gathered_bytes"}],
 *                "gathers": [{"order", "index", "stream", "unit", "kind", "bwd", "buffer", "phase",
 *                "first_compute_use", "first_compute_use_name", "next_step", "via"}],
 *                "gathered_buffers", "max_resident_units" (groups when "units_from" is "unknown"),
 *                "max_resident_at", "max_resident_groups", "units_from", "max_resident_forward",
 *                "max_resident_backward", "prefetch_forward", "prefetch_backward", "reshard_after_forward"
 *                (the last five null when unknown), "peak_gathered_bytes",
 *                "peak_gathered_at", "gathered_arena_lo", "gathered_arena_hi"}
 *              (an unsharded plan: level "none" and empty units and gathers)
 *   "memory_per_rank": {"activation_peak_at", "formula": {"name", "seed", "text", "compute_copy_bytes",
 *                "grad_bytes", "master_bytes", "m_bytes", "v_bytes", "world", "psi", "bytes"},
 *                "ranks": [{"rank", "parameters", "parameters_masters", "parameters_copies",
 *                "parameters_gathered", "gradients", "gradients_persistent", "gradients_groups",
 *                "optimizer_state", "activations", "communication_buffers", "workspace", "io", "total",
 *                "model_states", "formula_bytes", "ratio"}]} */
#include "inspect_shard_json.h"
#include "inspect_shard.h"
#include "inspect_jput.h"
#include <math.h>


json_t *ddp_insp_sharding_json(const ddp_plan *p, const ddp_shard_info *si, int *bad) {
  json_t *o = json_object(), *units = json_array(), *gathers = json_array();
  put(bad, o, "level", str(ddp_vocab_name(ddp_shard_names, SHARD_COUNT, si->level)));
  put(bad, o, "level_from", str(si->level_from));
  put(bad, o, "world", json_integer(si->world));
  for (uint32_t k = 0; si->level != SHARD_NONE && k < si->nunits; k++) {
    const ddp_shard_unit *u = &si->units[k];
    json_t *j = json_object();
    put(bad, j, "index", json_integer(k));
    put(bad, j, "params", json_integer(u->nparams));
    put(bad, j, "elements", u64(u->elements));
    put(bad, j, "grad_bytes", u64(u->grad_bytes));
    put(bad, j, "compute_bytes", u64(u->compute_bytes));
    put(bad, j, "shard_bytes", u64(u->shard_bytes));
    put(bad, j, "gathered", u->gathered >= 0 ? str(ddp_plan_tensor_name(p, u->gathered)) : json_null());
    put(bad, j, "gathered_bytes", u64(u->gathered >= 0 ? p->tensors[u->gathered].bytes : 0));
    push(bad, units, j);
  }
  for (uint32_t k = 0; si->level != SHARD_NONE && k < si->ngathers; k++) {
    const ddp_shard_gather *g = &si->gathers[k];
    json_t *j = json_object();
    put(bad, j, "order", json_integer(k));
    put(bad, j, "index", json_integer(g->index));
    put(bad, j, "stream", json_integer(g->stream));
    put(bad, j, "unit", g->unit >= 0 ? json_integer(g->unit) : json_null());
    put(bad, j, "kind", str(g->kind));
    put(bad, j, "bwd", json_boolean(g->bwd));
    put(bad, j, "buffer", g->recv >= 0 ? str(ddp_plan_tensor_name(p, g->recv)) : json_null());
    put(bad, j, "phase", str(g->phase));
    put(bad, j, "first_compute_use", g->consumer >= 0 ? json_integer(g->consumer) : json_null());
    const ddp_instr *in = g->consumer >= 0 ? &p->ranks[0].step.v[g->consumer] : NULL;
    put(bad, j, "first_compute_use_name", in && in->name >= 0 ? str(ddp_plan_string(p, in->name)) : json_null());
    put(bad, j, "next_step", json_boolean(g->next_step));
    put(bad, j, "via", g->via >= 0 ? json_integer(g->via) : json_null());
    push(bad, gathers, j);
  }
  put(bad, o, "units", units);
  put(bad, o, "gathers", gathers);
  put(bad, o, "gathered_buffers", json_integer(si->ngathered));
  put(bad, o, "max_resident_units", json_integer(si->max_resident));
  put(bad, o, "max_resident_at", json_integer(si->max_resident_at));
  put(bad, o, "max_resident_groups", json_integer(si->max_resident_groups));
  put(bad, o, "units_from", str(si->units_how));
  put(bad, o, "max_resident_forward", si->max_resident_fwd >= 0 ? json_integer(si->max_resident_fwd) : json_null());
  put(bad, o, "max_resident_backward", si->max_resident_bwd >= 0 ? json_integer(si->max_resident_bwd) : json_null());
  put(bad, o, "prefetch_forward", si->prefetch_fwd >= 0 ? json_integer(si->prefetch_fwd) : json_null());
  put(bad, o, "prefetch_backward", si->prefetch_bwd >= 0 ? json_integer(si->prefetch_bwd) : json_null());
  put(bad, o, "reshard_after_forward", si->reshard >= 0 ? json_boolean(si->reshard) : json_null());
  put(bad, o, "peak_gathered_bytes", u64(si->peak_gathered_bytes));
  put(bad, o, "peak_gathered_at", json_integer(si->peak_gathered_at));
  put(bad, o, "gathered_arena_lo", u64(si->gathered_lo));
  put(bad, o, "gathered_arena_hi", u64(si->gathered_hi));
  return o;
}

json_t *ddp_insp_memory_json(const ddp_plan *p, const ddp_shard_info *si, int *bad) {
  json_t *o = json_object(), *f = json_object(), *ranks = json_array();
  ddp_act_peak pk;
  ddp_act_peak_find(p, &pk);
  put(bad, o, "activation_peak_at", json_integer(pk.at));
  put(bad, f, "name", str(si->formula_name));
  put(bad, f, "seed", str(si->formula_seed));
  put(bad, f, "text", str(si->formula));
  put(bad, f, "compute_copy_bytes", json_integer(si->c));
  put(bad, f, "grad_bytes", json_integer(si->g));
  put(bad, f, "master_bytes", json_integer(si->master));
  put(bad, f, "m_bytes", json_integer(si->m));
  put(bad, f, "v_bytes", json_integer(si->v));
  put(bad, f, "world", json_integer(si->world));
  put(bad, f, "psi", json_integer(si->psi));
  put(bad, f, "bytes", real(si->formula_bytes));
  put(bad, o, "formula", f);
  for (int64_t r = 0; p->ranks && r < p->meta.world; r++) {
    ddp_rank_memory rm;
    ddp_rank_memory_get(p, (int)r, &rm);
    json_t *j = json_object();
    put(bad, j, "rank", json_integer(r));
    put(bad, j, "parameters", u64(rm.cls[MEM_PARAMS]));
    put(bad, j, "parameters_masters", u64(rm.params_masters));
    put(bad, j, "parameters_copies", u64(rm.params_copies));
    put(bad, j, "parameters_gathered", u64(rm.params_gathered));
    put(bad, j, "gradients", u64(rm.cls[MEM_GRADS]));
    put(bad, j, "gradients_persistent", u64(rm.grads_persistent));
    put(bad, j, "gradients_groups", u64(rm.grads_transient));
    put(bad, j, "optimizer_state", u64(rm.cls[MEM_OPT]));
    put(bad, j, "activations", u64(rm.cls[MEM_ACT]));
    put(bad, j, "communication_buffers", u64(rm.cls[MEM_COMM]));
    put(bad, j, "workspace", u64(rm.cls[MEM_WORK]));
    put(bad, j, "io", u64(rm.cls[MEM_IO]));
    put(bad, j, "total", u64(rm.total));
    put(bad, j, "model_states", u64(rm.model_states));
    put(bad, j, "formula_bytes", real(si->formula_bytes));
    put(bad, j, "ratio", si->formula_bytes > 0 ? real((double)rm.model_states / si->formula_bytes) : json_null());
    push(bad, ranks, j);
  }
  put(bad, o, "ranks", ranks);
  return o;
}

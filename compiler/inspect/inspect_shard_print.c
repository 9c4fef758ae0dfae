/* compiler/inspect/inspect_shard_print.c: the text sections of `ddpc inspect` that inspect_shard.c works out:
 *   == sharding ==          level, N, the units (groups) table, the all-gathers in prefetch order with the
 *                           instruction each must precede, the resident gathered units; "none" unsharded
 *   == memory per rank ==   per rank the memory classes at the predicted peak in GB (1e9 B, 3 decimals)
 *                           next to the seeds' formula for the plan's level, and the ratio actual/formula
 *                           of the model states (parameters + gradients + optimizer state); then the
 *                           parameters and gradients split by where they live, in bytes. */
#include "inspect_shard.h"
#include <inttypes.h>
#include <string.h>

#define GB 1e9

static void instr_text(const ddp_plan *p, const ddp_instr *in, char *buf, size_t cap) {
  const char *name = ddp_plan_string(p, in->name);
  snprintf(buf, cap, "%s%s%s%s%s", ddp_opcode_name(in->opcode), in->opcode == I_KERNEL ? " " : "",
           in->opcode == I_KERNEL ? ddp_op_name(in->op) : "", name[0] ? " " : "", name);
}

static void print_units(FILE *o, const ddp_plan *p, const ddp_shard_info *si) {
  const char *gdt = ddp_dtype_name((int)p->meta.grad_dtype), *cdt = ddp_dtype_name((int)p->meta.act_dtype);
  if (!si->nunits) {
    fprintf(o, "units: none (the plan has no bucket table)\n");
    return;
  }
  fprintf(o, "units (the bucket table's groups): %u\n", si->nunits);
  char h1[32], h2[32], h3[32];
  snprintf(h1, sizeof h1, "full B (%s)", gdt);
  snprintf(h2, sizeof h2, "full B (%s)", cdt);
  snprintf(h3, sizeof h3, "shard B/rank (%s)", gdt);
  fprintf(o, "%5s %7s %12s %14s %14s %18s  %s\n", "unit", "params", "elements", h1, h2, h3, "gathered buffer");
  for (uint32_t k = 0; k < si->nunits; k++) {
    const ddp_shard_unit *u = &si->units[k];
    fprintf(o, "%5u %7u %12" PRIu64 " %14" PRIu64 " %14" PRIu64 " %18" PRIu64 "  ", k, u->nparams, u->elements,
            u->grad_bytes, u->compute_bytes, u->shard_bytes);
    if (u->gathered >= 0)
      fprintf(o, "%s (%" PRIu64 " B)\n", ddp_plan_tensor_name(p, u->gathered), p->tensors[u->gathered].bytes);
    else fprintf(o, "-\n");
  }
}

static void print_gathers(FILE *o, const ddp_plan *p, const ddp_shard_info *si) {
  if (!si->ngathers) {
    fprintf(o, "all-gathers: none in rank 0's step program\n");
    return;
  }
  fprintf(o, "all-gathers of rank 0's step in program order (prefetch order): %u\n", si->ngathers);
  fprintf(o, "%5s %6s %-8s %-10s %-28s %-10s  %s\n", "order", "instr", "stream", "unit", "buffer", "phase",
          "first compute use (the plan waits for the gather before it)");
  for (uint32_t k = 0; k < si->ngathers; k++) {
    const ddp_shard_gather *g = &si->gathers[k];
    char unit[32], use[400] = "-";
    if (g->unit >= 0) snprintf(unit, sizeof unit, "%s%d%s", g->kind, g->unit, g->bwd ? " bwd" : "");
    else snprintf(unit, sizeof unit, "?");
    if (g->consumer >= 0) {
      char it[160];
      instr_text(p, &p->ranks[0].step.v[g->consumer], it, sizeof it);
      snprintf(use, sizeof use, "#%" PRId64 " %s%s", g->consumer, it, g->next_step ? " (next step)" : "");
      if (g->via >= 0) {
        size_t u = strlen(use);
        instr_text(p, &p->ranks[0].step.v[g->via], it, sizeof it);
        snprintf(use + u, sizeof use - u, " (via #%" PRId64 " %s)", g->via, it);
      }
    }
    fprintf(o, "%5u %6u %-8s %-10s %-28s %-10s  %s\n", k, g->index, ddp_stream_name(g->stream), unit,
            ddp_plan_tensor_name(p, g->recv), g->phase, use);
  }
}

void ddp_insp_sharding(FILE *o, const ddp_plan *p, const ddp_shard_info *si) {
  fprintf(o, "== sharding ==\n");
  const char *par = p->meta.parallel && *p->meta.parallel ? p->meta.parallel : "-";
  if (si->level == SHARD_NONE) {
    fprintf(o, "none (unsharded; parallel: %s)\n\n", par);
    return;
  }
  fprintf(o, "level %s (from %s; parallel: %s), N = %" PRId64 " ranks\n",
          ddp_vocab_name(ddp_shard_names, SHARD_COUNT, si->level), si->level_from, par, si->world);
  print_units(o, p, si);
  print_gathers(o, p, si);
  if (!si->ngathered) fprintf(o, "resident gathered units: none (no gathered parameter buffers)\n");
  else {
    int known = strcmp(si->units_how, "unknown") != 0;
    fprintf(o, "gathered parameter buffers: %u; resident at most: %d %s (first at #%" PRId64 ")", si->ngathered,
            si->max_resident, known ? (si->max_resident == 1 ? "unit" : "units") : (si->max_resident == 1 ? "group" : "groups"),
            si->max_resident_at);
    if (si->max_resident_fwd >= 0)
      fprintf(o, "; forward %d, backward %d", si->max_resident_fwd, si->max_resident_bwd);
    if (!strcmp(si->units_how, "layer ranges"))
      fprintf(o, "; %d groups (a unit's compute-dtype and fp32 parts, joined by the layer range of their first use)",
              si->max_resident_groups);
    else if (!known)
      fprintf(o, " (units of groups of two dtypes, not per-block: the plan does not say which groups form a unit)");
    fprintf(o, "\n");
    if (si->prefetch_fwd >= 0 && si->max_resident_fwd >= 0 && known) {
      if (si->reshard == 0)
        fprintf(o, "prefetch %d/%d with reshard_after_forward=false: units stay gathered from their forward to their "
                   "backward, so prefetch+1 does not bound them\n",
                si->prefetch_fwd, si->prefetch_bwd);
      else {
        int fo = si->max_resident_fwd <= si->prefetch_fwd + 1, bo = si->max_resident_bwd <= si->prefetch_bwd + 1;
        fprintf(o, "bound prefetch+1 (prefetch %d/%d): forward %d <= %d %s, backward %d <= %d %s\n", si->prefetch_fwd,
                si->prefetch_bwd, si->max_resident_fwd, si->prefetch_fwd + 1, fo ? "holds" : "EXCEEDED",
                si->max_resident_bwd, si->prefetch_bwd + 1, bo ? "holds" : "EXCEEDED");
      }
    }
    fprintf(o, "peak live gathered bytes: %" PRIu64 " (%.3f GB) at #%" PRId64
               "; the planner's offsets give them activation-arena bytes %" PRIu64 "..%" PRIu64 " (%" PRIu64 " B)\n",
            si->peak_gathered_bytes, (double)si->peak_gathered_bytes / GB, si->peak_gathered_at, si->gathered_lo,
            si->gathered_hi, si->gathered_hi - si->gathered_lo);
  }
  fprintf(o, "\n");
}

void ddp_insp_memory_per_rank(FILE *o, const ddp_plan *p, const ddp_shard_info *si) {
  fprintf(o, "== memory per rank ==\n");
  if (!p->ranks || p->meta.world < 1) {
    fprintf(o, "none\n\n");
    return;
  }
  ddp_act_peak pk;
  ddp_act_peak_find(p, &pk);
  fprintf(o, "predicted peak per rank in GB (1e9 B); classes as `ddpc explain`, with gathered parameters and group "
             "gradients counted at the activation peak (#%" PRId64 " of rank 0's step)\n",
          pk.at);
  fprintf(o, "formula: %s %s per rank (seeds); this plan: compute copy %d B (%s), gradient %d B (%s), master %d + m %d "
             "+ v %d B, N = %" PRId64 ", Ψ = %" PRId64 " trainable parameters\n",
          si->formula_name, si->formula_seed, si->c, si->c ? ddp_dtype_name((int)p->meta.act_dtype) : "no copy", si->g,
          si->g ? ddp_dtype_name((int)p->meta.grad_dtype) : "no gradients", si->master, si->m, si->v, si->world,
          si->psi);
  fprintf(o, "formula: %s %s = %.3f GB (%.0f B)%s\n", si->formula_name, si->formula, si->formula_bytes / GB,
          si->formula_bytes, si->level == SHARD_OPTIMIZER ? " (shard=optimizer: optimizer-state sharding, against ZeRO-1)" : "");
  fprintf(o, "%5s %11s %10s %10s %12s %10s %10s %8s %10s %13s %10s %15s\n", "rank", "parameters", "gradients",
          "optimizer", "activations", "comm buf", "workspace", "io", "total", "model states", "formula",
          "actual/formula");
  for (int64_t r = 0; r < p->meta.world; r++) {
    ddp_rank_memory rm;
    ddp_rank_memory_get(p, (int)r, &rm);
    fprintf(o, "%5" PRId64 " %11.3f %10.3f %10.3f %12.3f %10.3f %10.3f %8.3f %10.3f %13.3f %10.3f ", r,
            rm.cls[MEM_PARAMS] / GB, rm.cls[MEM_GRADS] / GB, rm.cls[MEM_OPT] / GB, rm.cls[MEM_ACT] / GB,
            rm.cls[MEM_COMM] / GB, rm.cls[MEM_WORK] / GB, rm.cls[MEM_IO] / GB, rm.total / GB, rm.model_states / GB,
            si->formula_bytes / GB);
    if (si->formula_bytes > 0) fprintf(o, "%15.3f\n", (double)rm.model_states / si->formula_bytes);
    else fprintf(o, "%15s\n", "n/a");
  }
  fprintf(o, "parameters and gradients by where they live, bytes:\n");
  fprintf(o, "%5s %16s %16s %16s %16s %16s\n", "rank", "param masters", "param copies", "gathered@peak",
          "grads persistent", "group grads@peak");
  for (int64_t r = 0; r < p->meta.world; r++) {
    ddp_rank_memory rm;
    ddp_rank_memory_get(p, (int)r, &rm);
    fprintf(o, "%5" PRId64 " %16" PRIu64 " %16" PRIu64 " %16" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", r,
            rm.params_masters, rm.params_copies, rm.params_gathered, rm.grads_persistent, rm.grads_transient);
  }
  fprintf(o, "\n");
}

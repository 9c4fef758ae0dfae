/* compiler/inspect/inspect_program.c: the program listings of `ddpc inspect`: one rank's init or step program
 * under "== program rank R init|step ==", grouped per stream, each instruction with its index, stream,
 * opcode and its operands decoded per opcode (plan/op_slots.h names the operand slots). */
#include "inspect_program.h"
#include <inttypes.h>
#include <stdlib.h>

/* " label=name", "name+view" or "-", with ":dtype" when the slot has its own dtype (collectives print
 * their one dtype separately, so their buffers pass with_dt = 0). */
static void buf_dt(FILE *o, const ddp_plan *p, const ddp_instr *in, const char *label, int k, int with_dt) {
  const ddp_bufref *b = &in->p[k];
  fprintf(o, " %s=%s", label, ddp_plan_tensor_name(p, b->tensor));
  if (b->tensor >= 0 && b->view) fprintf(o, "+%" PRIu64, b->view);
  if (with_dt && b->tensor >= 0 && in->dt[k]) fprintf(o, ":%s", ddp_dtype_name(in->dt[k]));
}
static void named_buf(FILE *o, const ddp_plan *p, const ddp_instr *in, const char *label, int k) {
  buf_dt(o, p, in, label, k, 1);
}

static void int_list(FILE *o, const ddp_instr *in) {
  int last = -1;
  for (int k = 0; k < DDP_MAX_INTS; k++)
    if (in->i[k]) last = k;
  if (last < 0) return;
  fprintf(o, " i=[");
  for (int k = 0; k <= last; k++) fprintf(o, "%s%" PRId64, k ? "," : "", in->i[k]);
  fprintf(o, "]");
}

static void float_list(FILE *o, const ddp_instr *in) {
  int last = -1;
  for (int k = 0; k < DDP_MAX_FLOATS; k++)
    if (in->f[k] != 0.0f) last = k;
  if (last < 0) return;
  fprintf(o, " f=[");
  for (int k = 0; k <= last; k++) fprintf(o, "%s%g", k ? "," : "", (double)in->f[k]);
  fprintf(o, "]");
}

static void ops_kernel(FILE *o, const ddp_plan *p, const ddp_instr *in) {
  const char *entry = ddp_op_entry(in->op);
  int has_kernel = in->kernel >= 0 && (uint32_t)in->kernel < p->nkernels;
  if (has_kernel) {
    int32_t m = p->kernels[in->kernel].module;
    if (m >= 0 && (uint32_t)m < p->nmodules && p->modules[m].entry) entry = p->modules[m].entry;
  }
  fprintf(o, " %s kernel=%d entry=ddp_%s grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u", ddp_op_name(in->op), in->kernel,
          entry, in->grid[0], in->grid[1], in->grid[2], in->block[0], in->block[1], in->block[2], in->smem);
  for (int k = 0; k < DDP_MAX_PTRS; k++) {
    if (in->p[k].tensor < 0) continue;
    char label[8];
    snprintf(label, sizeof label, "p%d", k);
    named_buf(o, p, in, label, k);
  }
  int_list(o, in);
  float_list(o, in);
}

static void ops_gemm(FILE *o, const ddp_plan *p, const ddp_instr *in) {
  fprintf(o, " M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " transA=%" PRId64 " transB=%" PRId64, in->i[GEMM_I_M],
          in->i[GEMM_I_N], in->i[GEMM_I_K], in->i[GEMM_I_TRANS_A], in->i[GEMM_I_TRANS_B]);
  if (in->i[GEMM_I_BATCH] > 1) fprintf(o, " batch=%" PRId64, in->i[GEMM_I_BATCH]);
  fprintf(o, " alpha=%g beta=%g", (double)in->f[GEMM_F_ALPHA], (double)in->f[GEMM_F_BETA]);
  named_buf(o, p, in, "A", GEMM_P_A);
  named_buf(o, p, in, "B", GEMM_P_B);
  named_buf(o, p, in, "C", GEMM_P_C);
  named_buf(o, p, in, "D", GEMM_P_D);
}

static void ops_collective(FILE *o, const ddp_plan *p, const ddp_instr *in) {
  int op = in->opcode;
  fprintf(o, " count=%" PRId64 " dtype=%s", in->i[COLL_I_COUNT], ddp_dtype_name(in->dt[COLL_P_SEND]));
  if (op == I_ALL_REDUCE || op == I_REDUCE_SCATTER)
    fprintf(o, " redop=%s", in->i[COLL_I_REDOP] == REDOP_AVG ? "avg" : "sum");
  if (op == I_BROADCAST) fprintf(o, " root=%" PRId64, in->i[COLL_I_ROOT]);
  if (op == I_SEND || op == I_RECV) {
    fprintf(o, " peer=%" PRId64, in->i[COLL_I_PEER]);
    buf_dt(o, p, in, "buf", COLL_P_BUF, 0);
  } else {
    buf_dt(o, p, in, "send", COLL_P_SEND, 0);
    buf_dt(o, p, in, "recv", COLL_P_RECV, 0);
  }
  fprintf(o, " comm=%" PRId64, in->i[COLL_I_COMM]);
  if (ddp_instr_peer_copied(in)) fprintf(o, " path=peer_copy");
}

/* Writes " op1 op2 ..." (each operand after a space); the caller trims the first space. */
static void operands(FILE *o, const ddp_plan *p, const ddp_instr *in) {
  switch ((ddp_opcode)in->opcode) {
  case I_KERNEL: ops_kernel(o, p, in); break;
  case I_GEMM: ops_gemm(o, p, in); break;
  case I_MEMSET:
    named_buf(o, p, in, "dst", MEMSET_P_DST);
    fprintf(o, " bytes=%" PRId64 " value=%" PRId64, in->i[MEMSET_I_BYTES], in->i[MEMSET_I_VALUE]);
    break;
  case I_COPY:
    named_buf(o, p, in, "src", COPY_P_SRC);
    named_buf(o, p, in, "dst", COPY_P_DST);
    fprintf(o, " bytes=%" PRId64, in->i[COPY_I_BYTES]);
    break;
  case I_EVENT_RECORD:
  case I_EVENT_WAIT: fprintf(o, " event=%" PRId64, in->i[EVENT_I_EVENT]); break;
  case I_ALL_REDUCE:
  case I_REDUCE_SCATTER:
  case I_ALL_GATHER:
  case I_ALL_TO_ALL:
  case I_BROADCAST:
  case I_SEND:
  case I_RECV: ops_collective(o, p, in); break;
  case I_RANGE_PUSH:
    fprintf(o, " kind=%s name=%s", ddp_range_name((int)in->i[RANGE_PUSH_I_KIND]),
            in->name >= 0 ? ddp_plan_string(p, in->name) : "-");
    return;
  case I_RANGE_POP: break;
  case I_TIMER: fprintf(o, " slot=%" PRId64, in->i[TIMER_I_SLOT]); break;
  case I_LOAD_BATCH:
    named_buf(o, p, in, "inputs", LOAD_BATCH_P_INPUTS);
    named_buf(o, p, in, "targets", LOAD_BATCH_P_TARGETS);
    break;
  case I_INIT_TENSOR:
    named_buf(o, p, in, "tensor", INIT_TENSOR_P_TENSOR);
    fprintf(o, " init=%s elements=%" PRId64 " rng=%" PRId64 " fan_in=%" PRId64 " f0=%g f1=%g",
            ddp_init_name((int)in->i[INIT_TENSOR_I_KIND]), in->i[INIT_TENSOR_I_ELEMENTS], in->i[INIT_TENSOR_I_STREAM],
            in->i[INIT_TENSOR_I_FAN_IN], (double)in->f[INIT_TENSOR_F_A], (double)in->f[INIT_TENSOR_F_B]);
    break;
  default: /* an opcode this listing does not decode yet: every operand, raw */
    for (int k = 0; k < DDP_MAX_PTRS; k++)
      if (in->p[k].tensor >= 0) {
        char label[8];
        snprintf(label, sizeof label, "p%d", k);
        named_buf(o, p, in, label, k);
      }
    int_list(o, in);
    float_list(o, in);
    break;
  }
  if (in->name >= 0 && in->layer >= 0) fprintf(o, "  # %s (layer %d)", ddp_plan_string(p, in->name), in->layer);
  else if (in->name >= 0) fprintf(o, "  # %s", ddp_plan_string(p, in->name));
  else if (in->layer >= 0) fprintf(o, "  # layer %d", in->layer);
}

void ddp_insp_program(FILE *o, const ddp_plan *p, int rank, const char *which, const ddp_program *prog) {
  fprintf(o, "== program rank %d %s ==\n", rank, which);
  if (!prog->n) {
    fprintf(o, "none\n\n");
    return;
  }
  uint32_t nstreams = p->nstreams;
  for (uint32_t i = 0; i < prog->n; i++)
    if (prog->v[i].stream >= nstreams) nstreams = prog->v[i].stream + 1u;
  const ddp_rank_plan *rp = &p->ranks[rank];
  fprintf(o, "%u instructions, %u streams, %u events, %u timers\n", prog->n, p->nstreams, rp->nevents, rp->ntimers);
  for (uint32_t s = 0; s < nstreams; s++) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < prog->n; i++) count += prog->v[i].stream == s;
    if (!count) continue;
    const bool low = s < 63 && ((p->meta.low_priority_streams >> s) & 1);
    fprintf(o, "-- stream %u (%s%s): %u instructions --\n", s, ddp_stream_name(s), low ? ", low priority" : "", count);
    fprintf(o, "%6s %6s  %-14s  %s\n", "index", "stream", "opcode", "operands");
    for (uint32_t i = 0; i < prog->n; i++) {
      const ddp_instr *in = &prog->v[i];
      if (in->stream != s) continue;
      char *text = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&text, &len);
      if (m) {
        operands(m, p, in);
        fclose(m);
      }
      const char *ops = text ? (text[0] == ' ' ? text + 1 : text) : "?";
      if (*ops) fprintf(o, "%6u %6u  %-14s  %s\n", i, in->stream, ddp_opcode_name(in->opcode), ops);
      else fprintf(o, "%6u %6u  %s\n", i, in->stream, ddp_opcode_name(in->opcode));
      free(text);
    }
  }
  fprintf(o, "\n");
}

void ddp_insp_ops(FILE *o, const ddp_plan *p) {
  int used[OP_COUNT] = {0};
  for (int64_t r = 0; p->ranks && r < p->meta.world; r++)
    for (int w = 0; w < 2; w++) {
      const ddp_program *prog = w ? &p->ranks[r].step : &p->ranks[r].init;
      for (uint32_t k = 0; k < prog->n; k++)
        if (prog->v[k].opcode == I_KERNEL && prog->v[k].op < OP_COUNT) used[prog->v[k].op] = 1;
    }
  fprintf(o, "== kernel ops ==\n");
  int any = 0;
  for (int op = 0; op < OP_COUNT; op++)
    if (used[op]) fprintf(o, "%-22s %s\n", ddp_op_name(op), ddp_op_synopsis(op)), any = 1;
  if (!any) fprintf(o, "none\n");
}

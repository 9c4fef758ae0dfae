/* runtime/driver/trace.c: see trace.h. The trace is written through ddp_atomic_* (base/file.h). A range
 * (RANGE_PUSH .. its RANGE_POP, matched as a stack in program order, as NVTX nests them) is one span from
 * the push's start to the pop's end, category "range", with its kind (ddp_range_name) as an argument;
 * ddpc plot timeline draws the pipeline's microbatch ranges from these. Every other span's category says
 * what it is: "compute" (kernels, GEMMs), "communication" (collectives, sends, receives, peer copies),
 * "timer" (the timing points, instants) or "other" (the batch's load, copies). */
#include "trace.h"
#include "err.h"
#include "file.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ddp_trace_path(const char *path, int rank, int world, char *out, size_t cap) {
  if (world <= 1) {
    snprintf(out, cap, "%s", path);
    return;
  }
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) dot = path + strlen(path);
  snprintf(out, cap, "%.*s.rank%d%s", (int)(dot - path), path, rank, dot);
}

void ddp_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

/* The range pushed at instruction k and popped at j, when both were timed. */
static void range_span(FILE *f, const ddp_plan *p, int rank, uint32_t k, uint32_t j, const double *start,
                       const double *end) {
  const ddp_instr *in = &p->ranks[rank].step.v[k];
  if (start[k] < 0 || end[j] < start[k]) return;
  fprintf(f, ",\n{\"ph\": \"X\", \"pid\": %d, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, \"name\": ", rank, in->stream,
          start[k] * 1e3, (end[j] - start[k]) * 1e3);
  ddp_json_str(f, ddp_plan_string(p, in->name));
  fprintf(f, ", \"cat\": \"range\", \"args\": {\"kind\": \"%s\", \"instruction\": %u}}",
          ddp_range_name((int)in->i[RANGE_PUSH_I_KIND]), k);
}

int ddp_trace_write(const ddp_plan *p, int rank, int64_t step, const double *start, const double *end,
                    const char *path, char *err, size_t errcap) {
  ddp_atomic_file a;
  if (ddp_atomic_open(&a, path, err, errcap)) return -1;
  FILE *f = a.f;
  const ddp_program *prog = &p->ranks[rank].step;
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"schedule\": ");
  ddp_json_str(f, p->meta.schedule_path ? p->meta.schedule_path : "");
  fprintf(f, ", \"parallel\": ");
  ddp_json_str(f, p->meta.parallel ? p->meta.parallel : "");
  fprintf(f, ", \"step\": %lld, \"rank\": %d, \"world\": %lld", (long long)step, rank, (long long)p->meta.world);
  if (p->meta.pipe_stages > 0)
    fprintf(f, ", \"pipe_schedule\": \"%s\", \"pipe_stages\": %lld, \"pipe_replicas\": %lld, "
            "\"pipe_microbatches\": %lld, \"pipe_virtual\": %lld",
            ddp_vocab_name(ddp_pipe_schedule_names, PIPE_COUNT, p->meta.pipe_schedule), (long long)p->meta.pipe_stages,
            (long long)p->meta.pipe_replicas, (long long)p->meta.pipe_microbatches, (long long)p->meta.pipe_virtual);
  fprintf(f, "}, \"traceEvents\": [\n");
  fprintf(f, "{\"ph\": \"M\", \"pid\": %d, \"name\": \"process_name\", \"args\": {\"name\": \"rank %d\"}}", rank, rank);
  for (uint32_t s = 0; s < p->nstreams; s++)
    fprintf(f, ",\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %u, \"name\": \"thread_name\", \"args\": {\"name\": \"%s\"}}",
            rank, s, s == STREAM_COMPUTE ? "compute stream" : s == STREAM_COMM ? "communication stream" : "stream");
  uint32_t *open = prog->n ? malloc(prog->n * sizeof *open) : NULL, depth = 0;
  if (prog->n && !open) {
    ddp_atomic_abort(&a);
    return ddp_fail(err, errcap, "out of memory for the trace's ranges");
  }
  for (uint32_t k = 0; k < prog->n; k++) {
    const ddp_instr *in = &prog->v[k];
    if (in->opcode == I_RANGE_PUSH) open[depth++] = k;
    if (in->opcode == I_RANGE_POP && depth > 0) range_span(f, p, rank, open[--depth], k, start, end);
    if (start[k] < 0 || end[k] < start[k]) continue;
    if (in->opcode == I_EVENT_RECORD || in->opcode == I_EVENT_WAIT || in->opcode == I_RANGE_PUSH ||
        in->opcode == I_RANGE_POP)
      continue;
    const char *nm = ddp_plan_string(p, in->name);
    char label[300];
    if (in->opcode == I_TIMER)
      snprintf(label, sizeof label, "%s", ddp_timer_name((int)in->i[TIMER_I_ROLE]));
    else if (nm[0])
      snprintf(label, sizeof label, "%s", nm);
    else
      snprintf(label, sizeof label, "%s", in->opcode == I_KERNEL ? ddp_op_name(in->op) : ddp_opcode_name(in->opcode));
    fprintf(f, ",\n{\"ph\": \"%s\", \"pid\": %d, \"tid\": %u, \"ts\": %.3f, ", in->opcode == I_TIMER ? "i" : "X", rank,
            in->stream, start[k] * 1e3);
    if (in->opcode != I_TIMER) fprintf(f, "\"dur\": %.3f, ", (end[k] - start[k]) * 1e3);
    else fprintf(f, "\"s\": \"t\", ");
    fprintf(f, "\"name\": ");
    ddp_json_str(f, label);
    const char *cat = in->opcode == I_KERNEL || in->opcode == I_GEMM ? "compute"
                      : ddp_is_group_collective(in->opcode) || in->opcode == I_SEND || in->opcode == I_RECV ? "communication"
                      : in->opcode == I_TIMER ? "timer"
                                               : "other"; /* the batch's load, copies */
    fprintf(f, ", \"cat\": \"%s\", \"args\": {\"instruction\": %u, \"opcode\": \"%s\"", cat, k,
            ddp_opcode_name(in->opcode));
    if (in->opcode == I_KERNEL) fprintf(f, ", \"op\": \"%s\"", ddp_op_name(in->op));
    if (in->layer >= 0) fprintf(f, ", \"layer\": %d", in->layer);
    if (in->opcode == I_GEMM)
      fprintf(f, ", \"mnk\": \"%lld x %lld x %lld\"", (long long)in->i[GEMM_I_M], (long long)in->i[GEMM_I_N],
              (long long)in->i[GEMM_I_K]);
    if (in->opcode >= I_ALL_REDUCE && in->opcode <= I_RECV)
      fprintf(f, ", \"bytes\": %llu", (unsigned long long)in->i[COLL_I_COUNT] * ddp_dtype_size(in->dt[COLL_P_SEND]));
    fprintf(f, "}}");
  }
  free(open);
  fprintf(f, "\n]}\n");
  return ddp_atomic_commit(&a, err, errcap);
}

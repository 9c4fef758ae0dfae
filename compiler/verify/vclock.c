/* compiler/verify/vclock.c: see vclock.h. */
#include "vclock.h"
#include "err.h"
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS DDP_VERIFY_MAX_STREAMS

uint32_t *ddp_vclock_replay(const ddp_plan *p, int rank, const ddp_program *prog, int iters, const char *what,
                            char *err, size_t errcap) {
  if (p->nstreams > MAX_STREAMS) {
    ddp_fail(err, errcap, "plan: %u streams, the verifier handles %d", p->nstreams, MAX_STREAMS);
    return NULL;
  }
  const uint32_t nev = p->ranks[rank].nevents;
  uint32_t(*ev)[MAX_STREAMS] = ddp_xcalloc((size_t)nev + 1, sizeof *ev);
  uint8_t *recorded = ddp_xcalloc((size_t)nev + 1, 1);
  uint32_t *clock = ddp_xcalloc((size_t)iters * prog->n * MAX_STREAMS + 1, sizeof(uint32_t));
  uint32_t vc[MAX_STREAMS][MAX_STREAMS];
  memset(vc, 0, sizeof vc);
  for (int it = 0; it < iters && clock; it++)
    for (uint32_t k = 0; k < prog->n; k++) {
      const ddp_instr *in = &prog->v[k];
      const uint16_t s = in->stream;
      const int64_t e = in->i[EVENT_I_EVENT];
      const int event = in->opcode == I_EVENT_RECORD || in->opcode == I_EVENT_WAIT;
      if (event && (e < 0 || (uint64_t)e >= nev)) {
        ddp_fail(err, errcap, "plan rank %d %s: instruction %u names event %lld, the rank has %u", rank, what, k,
                 (long long)e, nev);
        free(clock), clock = NULL;
        break;
      }
      vc[s][s]++;
      if (in->opcode == I_EVENT_RECORD) {
        memcpy(ev[e], vc[s], sizeof vc[s]);
        recorded[e] = 1;
      } else if (in->opcode == I_EVENT_WAIT) {
        if (!recorded[e]) {
          ddp_fail(err, errcap, "plan rank %d %s: instruction %u waits on event %lld before any record of it", rank,
                   what, k, (long long)e);
          free(clock), clock = NULL;
          break;
        }
        for (int x = 0; x < MAX_STREAMS; x++)
          if (ev[e][x] > vc[s][x]) vc[s][x] = ev[e][x];
      }
      memcpy(&clock[((size_t)it * prog->n + k) * MAX_STREAMS], vc[s], sizeof vc[s]);
    }
  free(ev);
  free(recorded);
  return clock;
}

/* compiler/passes/rank_program.h: helpers shared by the passes that assemble one rank's programs:
 * appending instructions, events between streams, timing points, collectives over flat ranges. */
#ifndef DDP_RANK_PROGRAM_H
#define DDP_RANK_PROGRAM_H
#include "layout.h"

typedef struct rank_ctx {
  ddp_builder *b;
  ddp_layout *lay;
  int rank;
  ddp_program *out;
  uint32_t nevents, ntimers;
} rank_ctx;

ddp_instr *rp_push(rank_ctx *c, ddp_instr in, const char *name);
void rp_timer(rank_ctx *c, int stream, int role);
/* `to` waits for everything issued so far on `from`. */
void rp_order(rank_ctx *c, int from, int to);
uint32_t rp_record(rank_ctx *c, int stream);
void rp_wait(rank_ctx *c, int stream, uint32_t event);
/* A collective over elements [begin, begin+count) of a flat tensor, bracketed by timers on `stream`. */
void rp_collective(rank_ctx *c, int opcode, int stream, int32_t flat, int64_t begin, int64_t count, int redop,
                   int root, const char *name);
void rp_range(rank_ctx *c, int push, int kind, const char *name);
#endif

/* runtime/cuda/p2p.c: the step's point-to-point messages (SEND/RECV, a pipeline's activations and
 * gradients) and the choice of how they move. Two paths, chosen once at load by every rank together:
 *
 * - NCCL (comm.c cx_comm_p2p): consecutive SEND/RECV as one ncclGroup of ncclSend/ncclRecv. Its kernels
 *   take SMs beside the compute and each group costs tens of microseconds before a byte moves (the 2 x H200
 *   calibration of 2026-11-24 fitted 62 us per message).
 * - Copy engine (DDP_P2P_COPY=1, where every rank's peers are GPUs of its own host with peer access): each rank maps its peers' arenas and a small flag buffer ("mailbox") through CUDA IPC, and a
 *   message is pulled by the receiver with one cudaMemcpyAsync from the sender's tensor into its own (a copy
 *   engine, no SM), ordered by 64-bit flags and stream memory operations (memops.h):
 *     SEND, at the first instruction of its group:  the receiver's AVAIL flag <- 1 (the data is written)
 *     RECV, at its place:  wait AVAIL == 1; AVAIL <- 0; copy from the sender; the sender's DONE flag <- 1
 *     SEND, at the last instruction of its group:   wait DONE == 1; DONE <- 0 (the receiver has it)
 *   all on the instruction's (compute) stream; flags are written to a peer by an 8-byte copy of the
 *   mailbox's constant 1. Every SEND of a group is announced before any RECV of it waits, and a group ends
 *   when its sends are taken and its receives are in, as an NCCL group does: the verifier's proof that the
 *   step cannot deadlock (sends as blocking) holds for both paths. The flags only ever hold 0 or 1, so a
 *   step captured into a CUDA graph replays them unchanged. The receiver's copy reads the sender's memory
 *   after it saw AVAIL, which the sender wrote after the kernels producing the data finished (stream order),
 *   so no remote-write ordering is assumed.
 * Message k from rank a to rank b is a's k-th SEND to b and b's k-th RECV from a (the verifier proved they
 * pair, with equal sizes); flag slots are numbered by the owner's step instructions, AVAIL by its RECVs,
 * DONE by its SENDs (plan/p2p_slots.c, which the CPU tests check). The init program's messages, if any, always go through NCCL.
 * NCCL is the default: on 2 x H200 (2026-11-24) the XL pipelines ran as fast either way (interleaved 1F1B
 * with 8 microbatches 152.31 ms/step by copy engine, 151.54 by NCCL) and the cost model's point-to-point
 * figures are calibrated on NCCL's; the copy path frees the SMs NCCL's kernels would take. */
#include "cx.h"
#include "memops.h"
#include "p2p_slots.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each rank tells the others at load. */
typedef struct p2p_card {
  uint64_t host;                          /* hash of the host name */
  char bus[32];                           /* PCI bus id of its GPU */
  int32_t able;                           /* DDP_P2P_COPY=1 and 64-bit stream memory operations */
  int32_t pid;
  cudaIpcMemHandle_t arena[ARENA_COUNT];  /* zero where the arena is empty */
  cudaIpcMemHandle_t mailbox;
} p2p_card;

struct cx_p2p {
  ddp_memops ops;
  uint64_t *mailbox;         /* [0] = 1, then AVAIL[nrecv], then DONE[nsend] */
  uint32_t nrecv, nsend;
  int world;
  void **peer_arena;         /* [peer * ARENA_COUNT + arena]: opened mapping, NULL when not opened */
  uint64_t **peer_mailbox;   /* [peer] */
  p2p_card *cards;
};


static int is_p2p(const cx_op *op) { return op->in->opcode == I_SEND || op->in->opcode == I_RECV; }

static int plan_has_p2p(const ddp_plan *p) {
  for (uint32_t r = 0; r < p->meta.world; r++)
    for (uint32_t k = 0; k < p->ranks[r].step.n; k++)
      if (p->ranks[r].step.v[k].opcode == I_SEND || p->ranks[r].step.v[k].opcode == I_RECV) return 1;
  return 0;
}

/* This rank's ability to use the copy path (1), or 0 with the reason in why. */
static int local_able(cx *x, struct cx_p2p *c, char *why, size_t cap) {
  if (!x->p2p_copy_env) return snprintf(why, cap, "DDP_P2P_COPY=0"), 0;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrUnifiedAddressing, x->device) != cudaSuccess || !v)
    return (void)cudaGetLastError(), snprintf(why, cap, "no unified addressing"), 0;
  return ddp_memops_load(&c->ops, x->device, why, cap) == 0;
}

/* Can this rank reach every peer it exchanges messages with (same host, peer access)? */
static int peers_reachable(cx *x, struct cx_p2p *c, char *why, size_t cap) {
  const cx_prog *pg = &x->step;
  for (uint32_t i = 0; i < pg->n; i++) {
    const cx_op *op = &pg->ops[i];
    if (!is_p2p(op) || op->skip) continue;
    const p2p_card *pc = &c->cards[op->peer];
    if (!pc->able) return snprintf(why, cap, "rank %d cannot use it", op->peer), 0;
    if (!cx_peer_gpu(x, op->peer, pc->host, c->cards[x->base.rank].host, pc->bus, why, cap)) return 0;
  }
  return 1;
}

static void *peer_ptr(struct cx_p2p *c, int peer, int arena, char *err, size_t errcap) {
  void **slot = &c->peer_arena[(size_t)peer * ARENA_COUNT + (size_t)arena];
  if (!*slot) *slot = cx_ipc_open(c->cards[peer].arena[arena], peer, ddp_arena_name(arena), err, errcap);
  return *slot;
}

/* Every step SEND/RECV op: its flags (plan/p2p_slots.c pairs them), and for a RECV the sender's source. */
static int wire_ops(cx *x, struct cx_p2p *c, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  cx_prog *pg = &x->step;
  ddp_p2p_slot *v = NULL;
  uint32_t n = 0, nslots = 0;
  if (ddp_p2p_slots(p, x->base.rank, &v, &n, &nslots, err, errcap)) return -1;
  int rc = nslots == 1 + c->nrecv + c->nsend ? 0 : ddp_fail(err, errcap, "flag count %u, expected %u", nslots, 1 + c->nrecv + c->nsend);
  for (uint32_t k = 0; rc == 0 && k < n; k++) {
    const ddp_p2p_slot *s = &v[k];
    cx_op *op = &pg->ops[s->instr];
    op->pc = 1; /* every SEND/RECV of the step takes the copy path, a skipped one (no bytes) doing nothing */
    op->pc_local = s->local;
    if (op->skip || !s->bytes) continue;
    op->pc_remote = c->peer_mailbox[s->peer] + s->remote;
    if (s->send) continue;
    const ddp_bufref *r = &p->ranks[s->peer].step.v[s->peer_instr].p[COLL_P_BUF];
    uint64_t cap = r->arena < ARENA_COUNT ? p->ranks[s->peer].arena_bytes[r->arena] : 0;
    if (r->arena >= ARENA_COUNT || r->offset > cap || s->bytes > cap - r->offset) {
      rc = ddp_fail(err, errcap, "step instruction %u: rank %d's message source lies outside its arena", s->instr, s->peer);
      break;
    }
    uint8_t *base = peer_ptr(c, s->peer, (int)r->arena, err, errcap);
    if (!base) rc = -1;
    else op->pc_src = base + r->offset;
  }
  free(v);
  return rc;
}

void cx_p2p_fini(cx *x) {
  struct cx_p2p *c = x->p2p;
  if (!c) return;
  for (int r = 0; c->peer_arena && r < c->world; r++) {
    for (int a = 0; a < ARENA_COUNT; a++)
      if (c->peer_arena[(size_t)r * ARENA_COUNT + (size_t)a]) (void)cudaIpcCloseMemHandle(c->peer_arena[(size_t)r * ARENA_COUNT + (size_t)a]);
    if (c->peer_mailbox && c->peer_mailbox[r]) (void)cudaIpcCloseMemHandle(c->peer_mailbox[r]);
  }
  if (c->mailbox) (void)cudaFree(c->mailbox);
  free(c->peer_arena);
  free(c->peer_mailbox);
  free(c->cards);
  free(c);
  x->p2p = NULL;
}

/* This rank's mailbox and IPC handles into its card; -1 with the reason in why. */
static int make_card(cx *x, struct cx_p2p *c, p2p_card *mine, char *why, size_t cap) {
  return cx_ipc_mailbox(x, 1 + (size_t)c->nrecv + (size_t)c->nsend, &c->mailbox, mine->bus, &mine->mailbox,
                        mine->arena, why, cap);
}

int cx_p2p_init(cx *x, char *err, size_t errcap) {
  const ddp_plan *p = x->base.plan;
  x->base.p2p[0] = 0;
  if (x->base.world <= 1 || !x->comm || !plan_has_p2p(p)) return 0;
  struct cx_p2p *c = calloc(1, sizeof *c);
  if (!c) return ddp_fail(err, errcap, "out of host memory");
  x->p2p = c;
  c->world = x->base.world;
  for (uint32_t i = 0; i < x->step.n; i++)
    if (is_p2p(&x->step.ops[i])) {
      if (x->step.ops[i].in->opcode == I_SEND) c->nsend++;
      else c->nrecv++;
    }
  c->cards = calloc((size_t)c->world, sizeof *c->cards);
  c->peer_arena = calloc((size_t)c->world * ARENA_COUNT, sizeof *c->peer_arena);
  c->peer_mailbox = calloc((size_t)c->world, sizeof *c->peer_mailbox);
  if (!c->cards || !c->peer_arena || !c->peer_mailbox) return ddp_fail(err, errcap, "out of host memory");
  char why[256] = "";
  p2p_card *mine = &c->cards[x->base.rank];
  mine->host = cx_host_hash();
  mine->pid = (int32_t)getpid();
  mine->able = local_able(x, c, why, sizeof why);
  if (mine->able && make_card(x, c, mine, why, sizeof why)) mine->able = 0;
  if (cx_allgather_host(x, mine, c->cards, sizeof *mine, err, errcap)) return -1;
  int ok = mine->able && peers_reachable(x, c, why, sizeof why), all = 0;
  if (cx_all_agree(x, ok, &all, err, errcap)) return -1;
  if (all) { /* map the peers' mailboxes and the messages' sources */
    int opened = 0;
    for (uint32_t i = 0; i < x->step.n; i++) {
      const cx_op *op = &x->step.ops[i];
      if (!is_p2p(op) || op->skip || c->peer_mailbox[op->peer]) continue;
      if (!(c->peer_mailbox[op->peer] = cx_ipc_open(c->cards[op->peer].mailbox, op->peer, "flags", why, sizeof why))) {
        opened = -1;
        break;
      }
    }
    char e2[256] = "";
    if (opened == 0 && wire_ops(x, c, e2, sizeof e2)) snprintf(why, sizeof why, "%s", e2), opened = -1;
    if (cx_all_agree(x, opened == 0, &all, err, errcap)) return -1;
    if (!all && opened == 0) snprintf(why, sizeof why, "another rank could not map its peers");
  } else if (ok) {
    snprintf(why, sizeof why, "another rank cannot use it");
  }
  if (!all) { /* NCCL for every message */
    for (uint32_t i = 0; i < x->step.n; i++) x->step.ops[i].pc = 0;
    snprintf(x->base.p2p, sizeof x->base.p2p, "nccl (no copy engine: %.160s)", why);
    cx_p2p_fini(x);
    return 0;
  }
  snprintf(x->base.p2p, sizeof x->base.p2p, "copy engine (CUDA IPC)");
  return 0;
}

static int write_remote(struct cx_p2p *c, uint64_t *flag, cudaStream_t s, char *err, size_t errcap) {
  DDP_CUDA_TRY(cudaMemcpyAsync(flag, c->mailbox, sizeof(uint64_t), cudaMemcpyDeviceToDevice, s));
  return 0;
}

static int wait_reset(struct cx_p2p *c, uint32_t slot, cudaStream_t s, char *err, size_t errcap) {
  return ddp_memops_wait(&c->ops, s, c->mailbox + slot, 1, 0, err, errcap) ||
         ddp_memops_write(&c->ops, s, c->mailbox + slot, 0, err, errcap);
}

/* Copy path: op is a SEND or RECV of a group [first, last] of consecutive ops (prepare.c). */
static int copy_path(cx *x, const cx_op *op, char *err, size_t errcap) {
  struct cx_p2p *c = x->p2p;
  if (op->group_begin) /* announce every send of the group before anything of it waits */
    for (const cx_op *q = op;; q++) {
      if (q->in->opcode == I_SEND && !q->skip && write_remote(c, q->pc_remote, q->stream, err, errcap)) return -1;
      if (q->group_end) break;
    }
  if (op->in->opcode == I_RECV && !op->skip) {
    size_t bytes = op->count * ddp_dtype_size(op->in->dt[COLL_P_BUF]);
    if (wait_reset(c, op->pc_local, op->stream, err, errcap)) return -1;
    DDP_CUDA_TRY(cudaMemcpyAsync(op->ptr[COLL_P_BUF], op->pc_src, bytes, cudaMemcpyDeviceToDevice, op->stream));
    if (write_remote(c, op->pc_remote, op->stream, err, errcap)) return -1;
  }
  if (op->group_end) /* the group ends when its sends are taken */
    for (const cx_op *q = op;; q--) {
      if (q->in->opcode == I_SEND && !q->skip && wait_reset(c, q->pc_local, q->stream, err, errcap)) return -1;
      if (q->group_begin) break;
    }
  return 0;
}

int cx_exec_SEND(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  return op->pc ? copy_path(x, op, err, errcap) : cx_comm_p2p(x, op, 1, err, errcap);
}

int cx_exec_RECV(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  return op->pc ? copy_path(x, op, err, errcap) : cx_comm_p2p(x, op, 0, err, errcap);
}

/* runtime/cuda/peer.c: the ranks' own flags and copy engines between GPUs of one host: nccl.all_reduce = "peer"
 * and "peer_copy", and nccl.movement = "peer_copy". A bucketed DDP plan of the "peer" kind has no
 * all-reduce: each bucket's update (ADAMW with i[ADAMW_I_PEERS] = W) reads every rank's gradient of the
 * bucket straight from that rank's memory and sums it in rank order (templates/optimizer.cu), after the
 * bucket's PEER_BARRIER; one more PEER_BARRIER after the last update says every rank has read them.
 *
 * At load every rank maps, through CUDA IPC, every peer's flag buffer ("mailbox") and the arenas its
 * updates read, and points each update's p[ADAMW_P_PEER_GRADS] at a device table of the W ranks' gradient
 * pointers (its own among them). Unlike the copy path of p2p.c there is no fallback: a plan of this kind has
 * no collective to fall back on, so every rank's GPU must be on this host with peer access, or every rank's
 * load fails with the reason.
 *
 * With "peer_copy" each bucket's update instead follows a PEER_COPY on its stream: a copy per other rank (one
 * batch, as below) from that rank's gradient (mapped the same way) into the local receive buffer (a copy engine,
 * no SM), ranks me + 1, me + 2, .. in turn so that no rank serves two copies at once, and the update's table
 * points at this rank's gradient and the received chunks, all local.
 *
 * With nccl.movement = "peer_copy" the world's ALL_TO_ALLs and ALL_GATHERs of the step (COLL_I_PATH) are moved
 * the same way, with two barriers each (cx_peer_move): the first says every rank's send buffer is final;
 * then chunk q of the receive buffer is pulled from rank q (its send chunk for this rank in an all-to-all, its
 * whole send buffer in an all-gather), all world - 1 pulls in one cudaMemcpyBatchAsync on a stream forked from
 * the collective's and joined back (DDP_PEER_COPY_BATCH=0, or in a captured step: one cudaMemcpyAsync per pull,
 * each on a stream of its own), while the collective's stream copies this rank's own chunk; the second says
 * every rank has read this rank's send buffer, which it may then overwrite, as after NCCL's collective.
 *
 * The mailbox: [0] the constant 1 (copied into a peer's flag), then flag[1 + b * W + q] for the step's b-th
 * barrier (PEER_BARRIERs and the moved collectives' two, in program order) and rank q. Barrier b on its stream:
 *   for every peer q:  q's flag[1 + b * W + me] <- 1      (an 8-byte copy: a copy engine, no SM)
 *   for every peer q:  wait flag[1 + b * W + q] == 1; flag <- 0   (stream memory operations, memops.h)
 * so it returns once every rank's stream has reached barrier b, and what each rank ordered before it (the
 * bucket's gradients) is done. A flag is set again only in the next step, after the last barrier, which every
 * rank passes only after resetting its flags of this step (each barrier is ordered before the last one: the
 * verifier's proof, compiler/verify/peer.c). A moved collective's barriers lie on its own stream, each
 * followed there by another barrier (its second, or the stream's next first one, in the next step for the
 * last), which no rank reaches before clearing its flags of the one before; so those too are set again only
 * once cleared. Flags hold only 0 or 1, so a step captured into a CUDA graph replays them unchanged. */
#include "cx.h"
#include "memops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each rank tells the others at load. */
typedef struct peer_card {
  uint64_t host;                         /* cx_host_hash() */
  char bus[32];                          /* PCI bus id of its GPU */
  int32_t able;                          /* its flags and handles are ready */
  char why[160];                         /* ... or why not */
  cudaIpcMemHandle_t mailbox;
  cudaIpcMemHandle_t arena[ARENA_COUNT]; /* zero where the arena is empty */
} peer_card;

struct cx_peer {
  ddp_memops ops;
  int world, me;
  uint32_t nbarriers;
  uint64_t *mailbox;       /* 1 + nbarriers * world flags */
  uint64_t **peer_mailbox; /* [q] mapped, NULL for this rank */
  void **peer_arena;       /* [q * ARENA_COUNT + a] mapped, NULL where not opened */
  void **tables;           /* device: world pointers per update with peers */
  const void **srcs;       /* host: world source pointers per PEER_COPY (cx_op.peer_src) */
  peer_card *cards;
  /* moved collectives: the pulls from the world - 1 other ranks run at once, each on a stream of its own
   * forked from the collective's stream (fork) and joined back (join[k]) */
  cudaStream_t *side;
  cudaEvent_t fork, *join;
  /* DDP_PEER_COPY_BATCH: one instruction's copies gathered for one cudaMemcpyBatchAsync */
  void **batch_dst;
  const void **batch_src;
  size_t *batch_bytes;
};

static int is_update(const cx_op *op) {
  return op->in->opcode == I_KERNEL && op->in->op == OP_ADAMW && op->in->i[ADAMW_I_PEERS] > 0;
}

/* This rank's flags and IPC handles into its card; -1 with the reason in mine->why. */
static int make_card(cx *x, struct cx_peer *c, peer_card *mine) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrUnifiedAddressing, x->device) != cudaSuccess || !v) {
    (void)cudaGetLastError();
    snprintf(mine->why, sizeof mine->why, "GPU %d has no unified addressing", x->device);
    return -1;
  }
  if (ddp_memops_load(&c->ops, x->device, mine->why, sizeof mine->why)) return -1;
  return cx_ipc_mailbox(x, 1 + (size_t)c->nbarriers * (size_t)c->world, &c->mailbox, mine->bus, &mine->mailbox,
                        mine->arena, mine->why, sizeof mine->why);
}

/* Rank q's mapping of the operand `g` of `bytes` bytes, an operand of rank q's instruction (or of this rank's
 * where both name the same range: the ranks share the plan's tensor table), checked inside q's arena; NULL
 * with the reason in why. */
static const uint8_t *peer_operand(cx *x, struct cx_peer *c, int q, const ddp_bufref *g, uint64_t bytes, uint32_t i,
                                   char *why, size_t cap) {
  const uint64_t arena_bytes = g->arena < ARENA_COUNT ? x->base.plan->ranks[q].arena_bytes[g->arena] : 0;
  if (g->arena >= ARENA_COUNT || g->offset > arena_bytes || bytes > arena_bytes - g->offset) {
    snprintf(why, cap, "step instruction %u: rank %d's operand lies outside its arena", i, q);
    return NULL;
  }
  uint8_t **slot = (uint8_t **)&c->peer_arena[(size_t)q * ARENA_COUNT + g->arena];
  if (!*slot && !(*slot = cx_ipc_open(c->cards[q].arena[g->arena], q, ddp_arena_name((int)g->arena), why, cap)))
    return NULL;
  return *slot + g->offset;
}

/* Rank q's next moved collective in its step program from *at on (the ranks issue them in one order: the
 * plan's cross-rank check), or NULL. */
static const ddp_instr *next_moved(const ddp_program *prog, uint32_t *at) {
  while (*at < prog->n && !ddp_instr_peer_copied(&prog->v[*at])) (*at)++;
  return *at < prog->n ? &prog->v[(*at)++] : NULL;
}

/* Every PEER_COPY's and moved collective's sources, each other rank's, mapped: a PEER_COPY's range (the same
 * on every rank); a moved all-to-all's chunk for this rank of that rank's send buffer; a moved all-gather's
 * send buffer, taken from that rank's own instruction (an in-place gather sends each rank's own chunk). */
static int map_copies(cx *x, struct cx_peer *c, uint32_t ncopies, char *why, size_t cap) {
  const int W = c->world;
  if (!(c->srcs = calloc((size_t)ncopies * (size_t)W + 1, sizeof *c->srcs))) return snprintf(why, cap, "out of host memory"), -1;
  uint32_t *at = calloc((size_t)W, sizeof *at); /* per rank: where its next moved collective is looked for */
  if (!at) return snprintf(why, cap, "out of host memory"), -1;
  uint32_t u = 0;
  int rc = 0;
  for (uint32_t i = 0; i < x->step.n && !rc; i++) {
    cx_op *op = &x->step.ops[i];
    const int copy = op->in->opcode == I_PEER_COPY, a2a = op->in->opcode == I_ALL_TO_ALL;
    if (!copy && !ddp_instr_peer_copied(op->in)) continue;
    /* a PEER_COPY's range, or one chunk of a moved collective (comm.c: count elements per rank) */
    const uint64_t chunk = copy ? op->bytes : op->count * ddp_dtype_size(op->in->dt[COLL_P_SEND]);
    op->peer_src = c->srcs + (size_t)u++ * (size_t)W;
    for (int q = 0; q < W && !rc; q++) {
      if (q == c->me) continue;
      const ddp_instr *theirs = copy ? op->in : next_moved(&x->base.plan->ranks[q].step, &at[q]);
      if (!theirs || theirs->opcode != op->in->opcode || theirs->i[COLL_I_COUNT] != op->in->i[COLL_I_COUNT]) {
        snprintf(why, cap, "step instruction %u: rank %d has no matching %s moved by copy-engine pulls", i, q,
                 ddp_opcode_name(op->in->opcode));
        rc = -1;
      } else if (!op->skip) {
        const uint8_t *s = peer_operand(x, c, q, &theirs->p[COLL_P_SEND], a2a ? chunk * (uint64_t)W : chunk, i, why, cap);
        if (!s) rc = -1;
        else op->peer_src[q] = s + (a2a ? chunk * (uint64_t)c->me : 0);
      }
    }
  }
  free(at);
  return rc;
}

/* Every update's table: rank q's gradient, mapped (peer.c's reads), or its chunk of the received buffer
 * (peer_copy: rank order without this rank), this rank's own gradient at its place. */
static int build_tables(cx *x, struct cx_peer *c, uint32_t nupd, char *why, size_t cap) {
  const int W = c->world;
  void **host = calloc((size_t)nupd * (size_t)W + 1, sizeof *host);
  if (!host) return snprintf(why, cap, "out of host memory"), -1;
  cudaError_t rc = cudaMalloc((void **)&c->tables, sizeof(void *) * (size_t)nupd * (size_t)W);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    c->tables = NULL;
    free(host);
    return snprintf(why, cap, "%s:%d: cudaMalloc(peer tables): %s", __FILE__, __LINE__, cudaGetErrorString(rc)), -1;
  }
  uint32_t u = 0;
  int bad = 0;
  for (uint32_t i = 0; i < x->step.n && !bad; i++) {
    cx_op *op = &x->step.ops[i];
    if (!is_update(op)) continue;
    const uint64_t bytes = (uint64_t)op->in->i[ADAMW_I_N] * ddp_dtype_size(op->in->dt[ADAMW_P_GRAD]);
    uint8_t *recv = op->args.p[ADAMW_P_RECEIVED];
    for (int q = 0; q < W && !bad; q++) {
      void **at = &host[(size_t)u * (size_t)W + (size_t)q];
      if (q == c->me) *at = op->args.p[ADAMW_P_GRAD];
      else if (recv) *at = recv + (size_t)(q < c->me ? q : q - 1) * bytes;
      else if (!(*at = (void *)peer_operand(x, c, q, &op->in->p[ADAMW_P_GRAD], bytes, i, why, cap))) bad = 1;
    }
    op->args.p[ADAMW_P_PEER_GRADS] = c->tables + (size_t)u * (size_t)W;
    u++;
  }
  if (!bad) {
    rc = cudaMemcpy(c->tables, host, sizeof(void *) * (size_t)nupd * (size_t)W, cudaMemcpyHostToDevice);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      snprintf(why, cap, "%s:%d: cudaMemcpy(peer tables): %s", __FILE__, __LINE__, cudaGetErrorString(rc));
      bad = 1;
    }
  }
  free(host);
  return bad ? -1 : 0;
}

void cx_peer_fini(cx *x) {
  struct cx_peer *c = x->peer;
  if (!c) return;
  for (int q = 0; q < c->world; q++) {
    for (int a = 0; c->peer_arena && a < ARENA_COUNT; a++)
      if (c->peer_arena[(size_t)q * ARENA_COUNT + (size_t)a])
        (void)cudaIpcCloseMemHandle(c->peer_arena[(size_t)q * ARENA_COUNT + (size_t)a]);
    if (c->peer_mailbox && c->peer_mailbox[q]) (void)cudaIpcCloseMemHandle(c->peer_mailbox[q]);
  }
  if (c->mailbox) (void)cudaFree(c->mailbox);
  if (c->tables) (void)cudaFree(c->tables);
  for (int k = 0; k < c->world - 1 && c->side; k++) {
    if (c->side[k]) (void)cudaStreamDestroy(c->side[k]);
    if (c->join[k]) (void)cudaEventDestroy(c->join[k]);
  }
  if (c->fork) (void)cudaEventDestroy(c->fork);
  free(c->side);
  free(c->join);
  free(c->batch_dst);
  free(c->batch_src);
  free(c->batch_bytes);
  free(c->peer_arena);
  free(c->peer_mailbox);
  free(c->srcs);
  free(c->cards);
  free(c);
  x->peer = NULL;
}

/* The moved collectives' side streams (the highest priority: they only queue copy-engine copies) and events. */
static int make_side_streams(struct cx_peer *c, char *why, size_t cap) {
  const int n = c->world - 1;
  int lo = 0, hi = 0;
  c->side = calloc((size_t)n, sizeof *c->side);
  c->join = calloc((size_t)n, sizeof *c->join);
  if (!c->side || !c->join) return snprintf(why, cap, "out of host memory"), -1;
  cudaError_t rc = cudaDeviceGetStreamPriorityRange(&lo, &hi);
  if (rc == cudaSuccess) rc = cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming);
  for (int k = 0; k < n && rc == cudaSuccess; k++) {
    rc = cudaStreamCreateWithPriority(&c->side[k], cudaStreamNonBlocking, hi);
    if (rc == cudaSuccess) rc = cudaEventCreateWithFlags(&c->join[k], cudaEventDisableTiming);
  }
  if (rc == cudaSuccess) return 0;
  (void)cudaGetLastError();
  return snprintf(why, cap, "%s:%d: the moved collectives' streams and events: %s", __FILE__, __LINE__,
                  cudaGetErrorString(rc)), -1;
}

int cx_peer_init(cx *x, char *err, size_t errcap) {
  uint32_t nbar = 0, nupd = 0, ncopy = 0, nmoved = 0;
  for (uint32_t i = 0; i < x->step.n; i++) {
    cx_op *op = &x->step.ops[i];
    if (op->in->opcode == I_PEER_BARRIER) op->barrier = nbar++;
    if (ddp_instr_peer_copied(op->in)) op->barrier = nbar, nbar += 2, nmoved++; /* numbered alike on every rank */
    ncopy += op->in->opcode == I_PEER_COPY;
    nupd += (uint32_t)is_update(op);
  }
  for (uint32_t i = 0; i < x->init.n; i++)
    if (x->init.ops[i].in->opcode == I_PEER_BARRIER || x->init.ops[i].in->opcode == I_PEER_COPY ||
        is_update(&x->init.ops[i]) || ddp_instr_peer_copied(x->init.ops[i].in))
      return ddp_fail(err, errcap, "init instruction %u: peer barriers, copies, moved collectives and updates with peers "
                      "belong in the step", i);
  if (!nbar && !nupd && !ncopy) return 0;
  if (x->base.world < 2 || !x->comm)
    return ddp_fail(err, errcap, "%s: the plan reads peers' memory, this run has %d rank",
                    nmoved ? "nccl.movement = \"peer_copy\"" : "nccl.all_reduce = \"peer\"", x->base.world);
  struct cx_peer *c = calloc(1, sizeof *c);
  if (!c) return ddp_fail(err, errcap, "out of host memory");
  x->peer = c;
  c->world = x->base.world;
  c->me = x->base.rank;
  c->nbarriers = nbar;
  c->cards = calloc((size_t)c->world, sizeof *c->cards);
  c->peer_arena = calloc((size_t)c->world * ARENA_COUNT, sizeof *c->peer_arena);
  c->peer_mailbox = calloc((size_t)c->world, sizeof *c->peer_mailbox);
  if (!c->cards || !c->peer_arena || !c->peer_mailbox) return ddp_fail(err, errcap, "out of host memory");
  peer_card *mine = &c->cards[c->me];
  mine->host = cx_host_hash();
  mine->able = make_card(x, c, mine) == 0;
  if (cx_allgather_host(x, mine, c->cards, sizeof *mine, err, errcap)) return -1;
  char why[256] = "";
  int ok = 1;
  for (int q = 0; q < c->world && ok; q++) {
    if (!c->cards[q].able) {
      snprintf(why, sizeof why, "rank %d: %.*s", q, (int)sizeof c->cards[q].why, c->cards[q].why);
      ok = 0;
    } else if (q != c->me) {
      ok = cx_peer_gpu(x, q, c->cards[q].host, mine->host, c->cards[q].bus, why, sizeof why);
    }
  }
  for (int q = 0; q < c->world && ok; q++)
    if (q != c->me && !(c->peer_mailbox[q] = cx_ipc_open(c->cards[q].mailbox, q, "flags", why, sizeof why))) ok = 0;
  if (ok && nupd && build_tables(x, c, nupd, why, sizeof why)) ok = 0;
  if (ok && (ncopy || nmoved) && map_copies(x, c, ncopy + nmoved, why, sizeof why)) ok = 0;
  if (ok && nmoved && make_side_streams(c, why, sizeof why)) ok = 0;
  if (ok && (ncopy || nmoved) && x->peer_copy_batch) {
    c->batch_dst = calloc((size_t)c->world, sizeof *c->batch_dst);
    c->batch_src = calloc((size_t)c->world, sizeof *c->batch_src);
    c->batch_bytes = calloc((size_t)c->world, sizeof *c->batch_bytes);
    if (!c->batch_dst || !c->batch_src || !c->batch_bytes) ok = 0, snprintf(why, sizeof why, "out of host memory");
  }
  int all = 0;
  if (cx_all_agree(x, ok, &all, err, errcap)) return -1;
  if (!all)
    return ddp_fail(err, errcap, "%s needs every rank's GPU on one host with peer access: %s",
                    nmoved ? "nccl.movement = \"peer_copy\"" : "nccl.all_reduce = \"peer\"",
                    ok ? "another rank could not map its peers" : why);
  const char *how = !x->peer_copy_batch ? ""
                   : x->graph_env         ? ", batched, one copy per peer once captured (a CUDA graph holds no batch)"
                                          : ", batched";
  if (nmoved)
    snprintf(x->base.p2p, sizeof x->base.p2p,
             "copy-engine pulls (CUDA IPC) for %u all-to-alls and all-gathers, %u barriers%s", nmoved, nbar, how);
  else if (ncopy)
    snprintf(x->base.p2p, sizeof x->base.p2p, "peer copies (copy engines, CUDA IPC) for %u updates, %u barriers%s", ncopy,
             nbar, how);
  else
    snprintf(x->base.p2p, sizeof x->base.p2p, "peer reads (CUDA IPC) for %u updates, %u barriers", nupd, nbar);
  return 0;
}

/* Barrier b on stream s: this rank's flag set in every peer's mailbox, then every peer's awaited and cleared. */
static int barrier(struct cx_peer *c, cudaStream_t s, uint32_t b, char *err, size_t errcap) {
  const size_t base = 1 + (size_t)b * (size_t)c->world;
  for (int q = 0; q < c->world; q++)
    if (q != c->me)
      DDP_CUDA_TRY(cudaMemcpyAsync(c->peer_mailbox[q] + base + (size_t)c->me, c->mailbox, sizeof(uint64_t),
                                   cudaMemcpyDeviceToDevice, s));
  for (int q = 0; q < c->world; q++)
    if (q != c->me && (ddp_memops_wait(&c->ops, s, c->mailbox + base + (size_t)q, 1, 0, err, errcap) ||
                       ddp_memops_write(&c->ops, s, c->mailbox + base + (size_t)q, 0, err, errcap)))
      return -1;
  return 0;
}

int cx_exec_PEER_BARRIER(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  struct cx_peer *c = x->peer;
  if (op->skip) return 0;
  if (!c) return ddp_fail(err, errcap, "peer barrier without the peers mapped (cx_peer_init)");
  return barrier(c, op->stream, op->barrier, err, errcap);
}

/* The n copies gathered in c->batch_* as one cudaMemcpyBatchAsync on s, in stream order, with the hint NCCL's
 * copy-engine collectives give theirs (without it they measured the same: docs/PERFORMANCE.md, *Copies in
 * one batch*). */
static int copy_batch(struct cx_peer *c, cudaStream_t s, size_t n, char *err, size_t errcap) {
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t first = 0;
  DDP_CUDA_TRY(cudaMemcpyBatchAsync(c->batch_dst, c->batch_src, c->batch_bytes, n, &attr, &first, 1, s));
  return 0;
}

/* A batch cannot be captured (and a refused one does not fail the capture), so a captured step copies one by one. */
static int batched(const cx *x) { return x->peer_copy_batch && !x->capturing; }

/* Copy k (0-based) of an instruction's world - 1: gathered in c->batch_* for copy_batch, or issued now on s. */
static int pull(struct cx_peer *c, int batch, int k, void *dst, const void *src, size_t bytes, cudaStream_t s,
                char *err, size_t errcap) {
  if (batch) {
    c->batch_dst[k] = dst, c->batch_src[k] = src, c->batch_bytes[k] = bytes;
    return 0;
  }
  DDP_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  return 0;
}

int cx_peer_move(cx *x, const cx_op *op, char *err, size_t errcap) {
  struct cx_peer *c = x->peer;
  if (!c || !op->peer_src) return ddp_fail(err, errcap, "moved collective without the peers mapped (cx_peer_init)");
  const size_t chunk = op->count * ddp_dtype_size(op->in->dt[COLL_P_SEND]);
  uint8_t *recv = op->ptr[COLL_P_RECV];
  const uint8_t *mine = (const uint8_t *)op->ptr[COLL_P_SEND] + (op->in->opcode == I_ALL_TO_ALL ? chunk * (size_t)c->me : 0);
  if (barrier(c, op->stream, op->barrier, err, errcap)) return -1;
  /* the pulls from every other rank at once, forked after the barrier onto side streams: all in one batch on the
   * first, or one per stream, k - 1 from rank me + k (one after another on the collective's stream, or pushes
   * into the others' buffers instead, measured the same: docs/PERFORMANCE.md, *Copy-engine pulls for the
   * all-to-alls*); this rank's own chunk meanwhile by a plain copy on the collective's stream (in the batch
   * it made the 2-rank step 3 ms slower: *Copies in one batch*) */
  const int batch = batched(x), streams = batch ? 1 : c->world - 1;
  DDP_CUDA_TRY(cudaEventRecord(c->fork, op->stream));
  for (int k = 0; k < streams; k++) DDP_CUDA_TRY(cudaStreamWaitEvent(c->side[k], c->fork, 0));
  for (int k = 1; k < c->world; k++) {
    const int q = (c->me + k) % c->world;
    if (pull(c, batch, k - 1, recv + chunk * (size_t)q, op->peer_src[q], chunk, c->side[k - 1], err, errcap)) return -1;
  }
  if (batch && copy_batch(c, c->side[0], (size_t)c->world - 1, err, errcap)) return -1;
  for (int k = 0; k < streams; k++) DDP_CUDA_TRY(cudaEventRecord(c->join[k], c->side[k]));
  if (recv + chunk * (size_t)c->me != mine) /* an in-place all-gather's chunk is there already */
    DDP_CUDA_TRY(cudaMemcpyAsync(recv + chunk * (size_t)c->me, mine, chunk, cudaMemcpyDeviceToDevice, op->stream));
  for (int k = 0; k < streams; k++) DDP_CUDA_TRY(cudaStreamWaitEvent(op->stream, c->join[k], 0));
  return barrier(c, op->stream, op->barrier + 1, err, errcap);
}

int cx_exec_PEER_COPY(cx *x, const cx_op *op, int64_t step, char *err, size_t errcap) {
  (void)step;
  struct cx_peer *c = x->peer;
  if (op->skip) return 0;
  if (!c || !op->peer_src) return ddp_fail(err, errcap, "peer copy without the peers mapped (cx_peer_init)");
  /* rank me + k first at turn k (mod the world): every rank is read by one other at a time. In rank order
   * every other rank pulls from rank 0 first, and one GPU's outgoing links serve world - 1 copies at once. */
  const int batch = batched(x);
  for (int k = 1; k < c->world; k++) {
    const int q = (c->me + k) % c->world;
    if (pull(c, batch, k - 1, (uint8_t *)op->ptr[COLL_P_RECV] + (size_t)(q < c->me ? q : q - 1) * op->bytes,
             op->peer_src[q], op->bytes, op->stream, err, errcap))
      return -1;
  }
  return batch ? copy_batch(c, op->stream, (size_t)c->world - 1, err, errcap) : 0;
}

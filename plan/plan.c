/* plan/plan.c: construction and teardown of the in-memory plan (plan.h "Construction and teardown"):
 * growth of the tables, string interning, instruction blanks, and ddp_plan_free, which releases
 * everything a plan owns (meta strings, tensors' names, modules and their CUBIN, buckets, strings and
 * every rank's programs, communicators). Allocation failures are reported as -1 / NULL, never printed. */
#include "plan.h"
#include <stdlib.h>
#include <string.h>

/* Makes room for one more element in a table of `size`-byte elements; 0 or -1 (out of memory). */
static int grow(void **v, uint32_t n, uint32_t *cap, size_t size) {
  if (n < *cap) return 0;
  uint32_t ncap = *cap ? *cap * 2 : 16;
  if (ncap <= *cap) return -1;
  void *nv = realloc(*v, (size_t)ncap * size);
  if (!nv) return -1;
  *v = nv;
  *cap = ncap;
  return 0;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

ddp_plan *ddp_plan_new(void) {
  ddp_plan *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nstreams = DDP_DEFAULT_STREAMS;
  p->meta.tokens_tensor = p->meta.targets_tensor = p->meta.loss_tensor = p->meta.scalars_tensor = -1;
  return p;
}

void ddp_program_free(ddp_program *prog) {
  if (!prog) return;
  free(prog->v);
  prog->v = NULL;
  prog->n = prog->cap = 0;
}

void ddp_plan_free(ddp_plan *p) {
  if (!p) return;
#define FREE_META_I(name)
#define FREE_META_F(name)
#define FREE_META_S(name) free(p->meta.name);
#define FREE_META(t, name) FREE_META_##t(name)
  DDP_META_FIELDS(FREE_META)
#undef FREE_META
#undef FREE_META_I
#undef FREE_META_F
#undef FREE_META_S
  for (uint32_t i = 0; i < p->ntensors; i++) {
    free(p->tensors[i].name);
    free(p->tensors[i].state_name);
  }
  free(p->tensors);
  for (uint32_t i = 0; i < p->nmodules; i++) {
    free(p->modules[i].template_name);
    free(p->modules[i].entry);
    free(p->modules[i].spec);
    free(p->modules[i].cubin);
  }
  free(p->modules);
  free(p->kernels);
  for (uint32_t i = 0; i < p->nbuckets; i++) free(p->buckets[i].params);
  free(p->buckets);
  for (uint32_t i = 0; i < p->ncomms; i++) free(p->comms[i].ranks);
  free(p->comms);
  for (uint32_t i = 0; i < p->nstrings; i++) free(p->strings[i]);
  free(p->strings);
  free(p->string_slots);
  if (p->ranks) {
    for (int64_t r = 0; r < p->meta.world; r++) {
      ddp_program_free(&p->ranks[r].init);
      ddp_program_free(&p->ranks[r].step);
    }
    free(p->ranks);
  }
  free(p);
}

static uint32_t str_hash(const char *s) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* The slot of `s` in the index: the slot holding the first string equal to it, or the empty slot where it
 * would go. nslots is a power of two and the index is never full. */
static uint32_t *str_slot(const ddp_plan *p, const char *s) {
  uint32_t mask = p->nslots - 1, i = str_hash(s) & mask;
  while (p->string_slots[i]) {
    const char *t = p->strings[p->string_slots[i] - 1];
    if (strcmp(t ? t : "", s) == 0) break;
    i = (i + 1) & mask;
  }
  return &p->string_slots[i];
}

/* Indexes strings[nindexed .. nstrings) (keeping the first of equal strings, as a linear search would find),
 * with room for one more; 0 or -1 (out of memory). */
static int index_strings(ddp_plan *p) {
  if (p->nindexed > p->nstrings) { /* the table was cut short behind our back: start over */
    memset(p->string_slots, 0, sizeof *p->string_slots * p->nslots);
    p->nindexed = 0;
  }
  if ((uint64_t)(p->nstrings + 1) * 2 > p->nslots) { /* load factor at most 1/2 */
    uint64_t n = p->nslots ? p->nslots : 64;
    while ((uint64_t)(p->nstrings + 1) * 2 > n) n *= 2;
    if (n > UINT32_MAX) return -1;
    uint32_t *slots = calloc((size_t)n, sizeof *slots);
    if (!slots) return -1;
    free(p->string_slots);
    p->string_slots = slots;
    p->nslots = (uint32_t)n;
    p->nindexed = 0;
  }
  for (; p->nindexed < p->nstrings; p->nindexed++) {
    uint32_t *slot = str_slot(p, p->strings[p->nindexed] ? p->strings[p->nindexed] : "");
    if (!*slot) *slot = p->nindexed + 1;
  }
  return 0;
}

int32_t ddp_plan_add_string(ddp_plan *p, const char *s) {
  if (!s) return -1;
  if (p->nstrings >= INT32_MAX || index_strings(p)) return -1;
  uint32_t *slot = str_slot(p, s);
  if (*slot) return (int32_t)(*slot - 1);
  if (grow((void **)&p->strings, p->nstrings, &p->cap_strings, sizeof *p->strings)) return -1;
  char *copy = strdup(s);
  if (!copy) return -1;
  p->strings[p->nstrings] = copy;
  *slot = p->nstrings + 1;
  p->nindexed = p->nstrings + 1;
  return (int32_t)p->nstrings++;
}

const char *ddp_plan_string(const ddp_plan *p, int32_t id) {
  if (!p || id < 0 || (uint32_t)id >= p->nstrings) return "";
  return p->strings[id];
}

const char *ddp_plan_tensor_name(const ddp_plan *p, int64_t id) {
  if (id == -1) return "-";
  if (!p || id < 0 || id >= p->ntensors || !p->tensors[id].name) return "?";
  return p->tensors[id].name;
}

int32_t ddp_plan_add_tensor(ddp_plan *p, const ddp_tensor *t) {
  if (p->ntensors >= INT32_MAX || grow((void **)&p->tensors, p->ntensors, &p->cap_tensors, sizeof *p->tensors))
    return -1;
  ddp_tensor copy = *t;
  copy.name = dup_or_null(t->name);
  copy.state_name = dup_or_null(t->state_name);
  if ((t->name && !copy.name) || (t->state_name && !copy.state_name)) {
    free(copy.name);
    free(copy.state_name);
    return -1;
  }
  p->tensors[p->ntensors] = copy;
  return (int32_t)p->ntensors++;
}

ddp_instr *ddp_program_push(ddp_program *prog, const ddp_instr *in) {
  if (grow((void **)&prog->v, prog->n, &prog->cap, sizeof *prog->v)) return NULL;
  prog->v[prog->n] = *in;
  return &prog->v[prog->n++];
}

uint64_t ddp_tensor_numel(const ddp_tensor *t) {
  uint64_t n = 1;
  for (int d = 0; d < t->ndim && d < DDP_MAX_DIMS; d++) n *= (uint64_t)(t->shape[d] > 0 ? t->shape[d] : 0);
  return n;
}

ddp_instr ddp_instr_blank(int opcode, int stream) {
  ddp_instr in;
  memset(&in, 0, sizeof in);
  in.opcode = (uint16_t)opcode;
  in.stream = (uint16_t)stream;
  in.kernel = -1;
  in.name = -1;
  in.layer = -1;
  for (int k = 0; k < DDP_MAX_PTRS; k++) in.p[k].tensor = -1;
  return in;
}

int32_t ddp_plan_find_tensor(const ddp_plan *p, const char *name) {
  if (!p || !name) return -1;
  for (uint32_t i = 0; i < p->ntensors; i++)
    if (p->tensors[i].name && strcmp(p->tensors[i].name, name) == 0) return (int32_t)i;
  return -1;
}

int32_t ddp_plan_add_comm(ddp_plan *p, const int32_t *ranks, uint32_t n) {
  if (p->ncomms >= INT32_MAX - 1 || grow((void **)&p->comms, p->ncomms, &p->cap_comms, sizeof *p->comms)) return -1;
  int32_t *v = malloc(sizeof(int32_t) * (n ? n : 1));
  if (!v) return -1;
  if (n) memcpy(v, ranks, sizeof(int32_t) * n);
  p->comms[p->ncomms] = (ddp_comm){v, n};
  return (int32_t)++p->ncomms;
}

int64_t ddp_plan_comm_size(const ddp_plan *p, int64_t comm) {
  if (comm == 0) return p->meta.world;
  if (comm < 0 || comm > (int64_t)p->ncomms) return -1;
  return p->comms[comm - 1].n;
}

bool ddp_piece_end(const ddp_tensor *t, uint64_t *end) {
  uint64_t runs = (uint64_t)ddp_piece_runs(t), len = ddp_tensor_numel(t) / runs, e = 0;
  if (t->piece_first < 0) return false;
  if (runs > 1 && (t->piece_stride < 0 || __builtin_mul_overflow(runs - 1, (uint64_t)t->piece_stride, &e))) return false;
  return !__builtin_add_overflow(e, (uint64_t)t->piece_first, &e) && !__builtin_add_overflow(e, len, end);
}

int ddp_plan_comm_role(const ddp_plan *p, int64_t cm, int64_t *which) {
  int64_t T = p->meta.tensor_parallel, D = p->meta.data_parallel > 0 ? p->meta.data_parallel : 1, S = p->meta.pipe_stages;
  int64_t w = 0;
  int role = COMM_ROLE_NONE;
  if (T <= 1 || cm < 0 || cm > (int64_t)p->ncomms) {
  } else if (S <= 0) { /* compiler/passes/tensor.c: 1 + d, then 1 + D + t; one replica: the world */
    if (D <= 1) role = cm == 0 ? COMM_ROLE_TENSOR : COMM_ROLE_NONE;
    else if (cm >= 1 && cm <= D) role = COMM_ROLE_TENSOR, w = cm - 1;
    else if (cm > D && cm <= D + T) role = COMM_ROLE_DATA, w = cm - 1 - D;
  } else if (cm >= 1) { /* compiler/passes/pipeline.c: stage groups, replica groups, tensor groups */
    int64_t k = cm - 1, Sn = D > 1 ? S * T : 0, Rn = D * T;
    if (k < Sn) role = COMM_ROLE_STAGE, w = k;
    else if (k < Sn + Rn) role = COMM_ROLE_REPLICA, w = k - Sn;
    else if (k < Sn + Rn + D * S) role = COMM_ROLE_TENSOR, w = k - Sn - Rn;
  }
  if (which) *which = w;
  return role;
}

int ddp_plan_tensor_comm(const ddp_plan *p, int64_t cm) { return ddp_plan_comm_role(p, cm, NULL) == COMM_ROLE_TENSOR; }

int ddp_is_group_collective(int opc) {
  return opc == I_ALL_REDUCE || opc == I_REDUCE_SCATTER || opc == I_ALL_GATHER || opc == I_BROADCAST ||
         opc == I_ALL_TO_ALL || opc == I_PEER_BARRIER ||
         opc == I_PEER_COPY;
}

int ddp_instr_peer_copied(const ddp_instr *in) {
  return (in->opcode == I_ALL_TO_ALL || in->opcode == I_ALL_GATHER) && in->i[COLL_I_PATH] == COLL_PATH_PEER_COPY;
}

uint32_t ddp_plan_peer_copied(const ddp_plan *p, int64_t rank) {
  uint32_t n = 0;
  if (rank < 0 || rank >= p->meta.world || !p->ranks) return 0;
  for (uint32_t k = 0; k < p->ranks[rank].step.n; k++) n += (uint32_t)ddp_instr_peer_copied(&p->ranks[rank].step.v[k]);
  return n;
}

int64_t ddp_instr_ranks(const ddp_plan *p, const ddp_instr *in) {
  int64_t n = ddp_is_group_collective(in->opcode) ? ddp_plan_comm_size(p, in->i[COLL_I_COMM]) : -1;
  return n > 0 ? n : p->meta.world;
}

int64_t ddp_plan_comm_index(const ddp_plan *p, int64_t comm, int64_t rank) {
  if (comm == 0) return rank >= 0 && rank < p->meta.world ? rank : -1;
  if (comm < 0 || comm > (int64_t)p->ncomms) return -1;
  const ddp_comm *m = &p->comms[comm - 1];
  for (uint32_t i = 0; i < m->n; i++)
    if (m->ranks[i] == rank) return i;
  return -1;
}

int64_t ddp_plan_comm_member(const ddp_plan *p, int64_t comm, int64_t i) {
  return comm == 0 ? i : p->comms[comm - 1].ranks[i];
}

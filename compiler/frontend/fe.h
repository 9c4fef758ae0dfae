/* compiler/frontend/fe.h: internals shared by the schedule front end's files (sandbox, constructors,
 * validation, --set overrides, bucket policies). Nothing outside compiler/frontend/ includes it. */
#ifndef DDP_FE_H
#define DDP_FE_H
#include "schedule.h"
#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>
#include <stdint.h>

#define FE_MEM_CAP ((size_t)512 << 20)  /* bytes a schedule's Lua state may hold */
#define FE_INSTR_LIMIT 100000000LL      /* Lua VM instructions per run (and per bucket-function call) */
#define FE_ALLOC_BYTES_PER_INSTR 16     /* bytes the Lua state allocates that count as one instruction */
#define FE_HOOK_EVERY 10000             /* instruction-count hook period */
#define FE_TIME_LIMIT_S 10.0            /* default CPU seconds per Lua phase (ddpc --time-limit) */
#define FE_WALL_FACTOR 3                /* the wall-clock limit is this many times the CPU limit */
#define FE_PATTERN_BUDGET 1e9           /* worst-case steps of one string.find/match/gmatch/gsub */
#define FE_MSG_MAX 2048                 /* longest error line we build */
#define FE_WHERE_MAX 1200               /* "file:line" or "--set path=value" */
#define FE_MAX_ELEMS ((int64_t)INT32_MAX) /* no tensor of a validated schedule has more elements */
#define FE_MAX_PLAN_INSTRS 8000000         /* step instructions over all ranks, estimated (model.c) */

/* ---- sandbox.c: one Lua state per schedule, with limits and only safe libraries. ---- */
typedef struct fe_sandbox {
  lua_State *L;
  size_t mem_used, mem_cap;
  long long instr;          /* instructions run since the last fe_limits_reset (in hook periods) */
  int tripped;              /* the instruction limit was hit: every further instruction raises */
  char path[1024];          /* the schedule file as given */
  char dir[1024];           /* its folder: modules and relative token files resolve here */
  int bucket_ref;           /* registry reference of the bucket function, LUA_NOREF if none */
  char bucket_where[FE_WHERE_MAX];
  char bucket_field[32];    /* the field the function came from in errors: "parallel.buckets" or "parallel.units" */
  char bucket_noun[16];     /* what it returns a list of: "bucket" or "unit" */
} fe_sandbox;

fe_sandbox *fe_sandbox_new(const char *path); /* NULL when out of memory */
void fe_sandbox_free(fe_sandbox *sb);
fe_sandbox *fe_sandbox_of(lua_State *L);
void fe_limits_reset(fe_sandbox *sb);
/* Opens the safe libraries, require, print and the guards on forbidden globals (protected mode). */
void fe_sandbox_open(lua_State *L);
/* The schedule library's folder (its lib/ holds the helper modules require finds) into buf. */
const char *fe_library_dir(char *buf, size_t cap);

/* ---- prelude.c: the constructors (C functions, so `return schedule{...}` keeps its line). ---- */
#define FE_KINDS(X)                                                                                    \
  X(SCHEDULE, schedule) X(TRANSFORMER, transformer) X(MLP, mlp) X(LINEAR, linear) X(RELU, relu)         \
  X(LAYERNORM, layernorm) X(PARAM, param) X(ADAMW, adamw) X(SGD, sgd) X(DDP, ddp) X(SINGLE, single)         \
  X(FSDP, fsdp) X(PIPELINE, pipeline)
#define FE_KIND_ENUM(id, name) FE_K_##id,
enum { FE_KINDS(FE_KIND_ENUM) FE_K_COUNT };
#undef FE_KIND_ENUM
extern const char *const fe_kind_names[FE_K_COUNT];
void fe_prelude_open(lua_State *L);
int fe_kind_of(lua_State *L, int idx);                       /* FE_K_* or -1 (not made by one) */
bool fe_where_of(lua_State *L, int idx, char *buf, size_t cap); /* the constructor's call site */
/* `--set` bookkeeping: the override text that last set table[key], if any. */
void fe_mark_set(lua_State *L, int tidx, int keyidx, const char *text);
bool fe_set_of(lua_State *L, int tidx, const char *key, char *buf, size_t cap);
/* The --set that removed an element of the table at idx (its text ends in "=nil"), if any. */
bool fe_removed_by_set(lua_State *L, int idx, char *buf, size_t cap);
/* A value as an error line shows it: nil, true, 3, 1.0, "text" (cut at 60), ddp{...}, a table. */
const char *fe_got(lua_State *L, int idx, char *buf, size_t cap);

/* ---- fields.c: reading and checking fields; every failure raises one formatted line. ---- */
typedef struct fe_conv {
  lua_State *L;
  fe_sandbox *sb;
  ddp_schedule *s;
} fe_conv;

typedef struct fe_tab {
  int idx;                  /* absolute stack index of the table */
  char path[256];           /* field path of the table: "" (root), "optimizer", "model.layers[2]" */
  char what[32];            /* what it is, for "x is not a field of <what>": "adamw{}", "data" */
  char where[FE_WHERE_MAX]; /* where it was made */
} fe_tab;

/* Is the table at idx a list whose keys are exactly 1..n (n its raw length)? If not, *what names the first
 * defect: a key outside 1..n ("the key \"x\"") or a hole inside ("a hole at [2]": Lua's # of {nil, 2} is 2). */
bool fe_is_list(lua_State *L, int idx, lua_Integer n, char *what, size_t cap);

_Noreturn void fe_fail(fe_conv *c, const fe_tab *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* fe_fail with ", got <value of t.key>" appended. */
_Noreturn void fe_bad(fe_conv *c, const fe_tab *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void fe_tab_root(fe_conv *c, int idx, fe_tab *t);
/* Opens t.key as a sub-table (pushed; stays on the stack). False when absent. */
bool fe_sub(fe_conv *c, const fe_tab *t, const char *key, fe_tab *out, const char *need);
void fe_elem(fe_conv *c, const fe_tab *list, int i, fe_tab *out, const char *need);
/* Opens t.key as a list (plain table with keys 1..n only); returns n, or -1 when absent. */
int fe_list(fe_conv *c, const fe_tab *t, const char *key, fe_tab *out, const char *need);
void fe_known(fe_conv *c, const fe_tab *t, const char *const *fields);
void fe_required(fe_conv *c, const fe_tab *t, const char *key);
bool fe_has(fe_conv *c, const fe_tab *t, const char *key);
int fe_type(fe_conv *c, const fe_tab *t, const char *key);
/* Getters: false when the field is absent (out untouched); a value of the wrong type fails with `need`. */
bool fe_num(fe_conv *c, const fe_tab *t, const char *key, double *out, const char *need);
bool fe_int(fe_conv *c, const fe_tab *t, const char *key, int64_t *out, const char *need);
bool fe_bool(fe_conv *c, const fe_tab *t, const char *key, bool *out);
bool fe_str(fe_conv *c, const fe_tab *t, const char *key, char *buf, size_t cap, const char *need);
bool fe_enum(fe_conv *c, const fe_tab *t, const char *key, const char *const *names, int *out);
/* Integer in [lo, hi] with a default; fails "must be an integer in lo..hi". */
int64_t fe_int_in(fe_conv *c, const fe_tab *t, const char *key, int64_t def, int64_t lo, int64_t hi);

/* ---- the conversion, one file per part of the schedule ---- */
void fe_convert(fe_conv *c, int root); /* the returned table (a stack index) into c->s */
void fe_model(fe_conv *c, const fe_tab *root);
void fe_model_limits(fe_conv *c, const fe_tab *root);
void fe_parallel(fe_conv *c, const fe_tab *root);
/* broadcast and identical_init of ddp{}, fsdp{}, pipeline{}; `copies`: ranks holding the same parameters. */
void fe_init_fields(fe_conv *c, const fe_tab *p, int copies);
/* pipeline.c: pipeline{...} (after the model); its batch rules (after data.global_batch). */
void fe_pipeline(fe_conv *c, const fe_tab *p);
void fe_pipeline_batch(fe_conv *c, const fe_tab *root, const fe_tab *data);
void fe_grad_dtype(fe_conv *c, const fe_tab *root); /* after precision */
void fe_data(fe_conv *c, const fe_tab *root);
void fe_optimizer(fe_conv *c, const fe_tab *root);
void fe_fusion(fe_conv *c, const fe_tab *root); /* fusion.c */
void fe_nccl(fe_conv *c, const fe_tab *root);   /* nccl.c */
void fe_streams(fe_conv *c, const fe_tab *root); /* streams.c */
void fe_mesh(fe_conv *c, const fe_tab *root);   /* mesh.c: after fe_parallel, before fe_data */

/* ---- overrides.c ---- */
void fe_apply_sets(lua_State *L, int root, const char *const *sets, int nsets);

/* ---- bucket_policy.c ---- */
int fe_bucket_policy(void *ctx, const char *const *names, const char *const *units, const uint64_t *bytes, int n,
                     int *bucket_of, char *err, size_t errcap);

/* ---- watchdog.c: the time limit of a Lua phase; past it, one line and exit(1). ---- */
typedef struct fe_watch fe_watch;
fe_watch *fe_watch_begin(const char *where, const char *what); /* NULL if no thread could start */
void fe_watch_end(fe_watch *w);

/* ---- load.c ---- */
bool fe_located(const char *msg); /* starts with "place:123:" or "--set " */
#endif

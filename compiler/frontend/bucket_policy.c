/* compiler/frontend/bucket_policy.c: ddp{ buckets = function(params) ... end } and fsdp{ units = ... }
 * (the same interface; errors then say parallel.units and "unit"). The compiler calls
 * ddp_schedule.bucket_policy with the parameters in gradient-ready order; we call the Lua function with
 * {name=, unit=, bytes=, order=} entries (order 1-based; unit: the fused weight the parameter is part of,
 * which the returned layout must not split) in that order and check that it returns a list of
 * buckets, each a non-empty list of parameter names (or of the entries themselves), every parameter in
 * exactly one bucket. Bucket k of the result (1-based) becomes bucket_of = k-1. Runs in the schedule's
 * sandbox, with a fresh instruction budget per call. */
#include "fe.h"
#include "err.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct fe_bucket_call {
  fe_sandbox *sb;
  const char *const *names;
  const char *const *units;
  const uint64_t *bytes;
  int n;
  int *bucket_of;
} fe_bucket_call;

__attribute__((format(printf, 3, 4))) static int fe_bucket_fail(lua_State *L, const fe_sandbox *sb,
                                                              const char *fmt, ...) {
  char text[FE_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  lua_pushfstring(L, "%s: %s %s", sb->bucket_where, sb->bucket_field, text);
  return lua_error(L);
}

/* Index of the parameter named by the list entry at the top of the stack (popped), or -1. */
static int fe_entry_param(lua_State *L, int map) {
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "name");
    lua_remove(L, -2);
  }
  if (lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    return -2;
  }
  lua_rawget(L, map);
  int i = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 1);
  return i;
}

static int fe_bucket_run(lua_State *L) {
  fe_bucket_call *bc = lua_touserdata(L, 1);
  const fe_sandbox *sb = bc->sb;
  lua_settop(L, 0);
  lua_createtable(L, 0, bc->n); /* 1: name -> 0-based index */
  int map = 1;
  for (int i = 0; i < bc->n; i++) {
    lua_pushstring(L, bc->names[i]);
    if (lua_rawget(L, map) != LUA_TNIL)
      return fe_bucket_fail(L, sb, "was given the parameter \"%s\" twice (a compiler bug)", bc->names[i]);
    lua_pop(L, 1);
    lua_pushinteger(L, i);
    lua_setfield(L, map, bc->names[i]);
    bc->bucket_of[i] = -1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, sb->bucket_ref); /* 2: the function */
  lua_createtable(L, bc->n, 0);
  for (int i = 0; i < bc->n; i++) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, bc->names[i]);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, bc->units ? bc->units[i] : bc->names[i]);
    lua_setfield(L, -2, "unit");
    lua_pushinteger(L, (lua_Integer)bc->bytes[i]);
    lua_setfield(L, -2, "bytes");
    lua_pushinteger(L, i + 1);
    lua_setfield(L, -2, "order");
    lua_rawseti(L, -2, i + 1);
  }
  lua_call(L, 1, 1); /* 2: the buckets */
  char got[160];
  if (!lua_istable(L, 2) || fe_kind_of(L, 2) >= 0)
    return fe_bucket_fail(L, sb, "must return a list of %ss (lists of parameter names), got %s", sb->bucket_noun,
                          fe_got(L, 2, got, sizeof got));
  lua_Integer nb = (lua_Integer)lua_rawlen(L, 2);
  if (!fe_is_list(L, 2, nb, got, sizeof got))
    return fe_bucket_fail(L, sb, "must return a list of %ss (no named fields or holes), found %s", sb->bucket_noun, got);
  for (lua_Integer b = 1; b <= nb; b++) {
    lua_rawgeti(L, 2, b); /* 3 */
    if (!lua_istable(L, 3))
      return fe_bucket_fail(L, sb, "returned %s %lld that is not a list of names, got %s", sb->bucket_noun, (long long)b,
                            fe_got(L, 3, got, sizeof got));
    lua_Integer ne = (lua_Integer)lua_rawlen(L, 3);
    if (!fe_is_list(L, 3, ne, got, sizeof got))
      return fe_bucket_fail(L, sb, "returned %s %lld that is not a list of names (no named fields or holes), found %s",
                            sb->bucket_noun, (long long)b, got);
    if (ne == 0) return fe_bucket_fail(L, sb, "returned %s %lld empty", sb->bucket_noun, (long long)b);
    for (lua_Integer e = 1; e <= ne; e++) {
      lua_rawgeti(L, 3, e);
      fe_got(L, -1, got, sizeof got);
      int i = fe_entry_param(L, map);
      if (i == -2)
        return fe_bucket_fail(L, sb, "returned %s in %s %lld, entry %lld: expected a parameter name", got,
                              sb->bucket_noun, (long long)b, (long long)e);
      if (i < 0)
        return fe_bucket_fail(L, sb, "returned the unknown parameter %s in %s %lld", got, sb->bucket_noun,
                              (long long)b);
      if (bc->bucket_of[i] >= 0)
        return fe_bucket_fail(L, sb, "returned the parameter \"%s\" twice (%ss %lld and %lld)", bc->names[i],
                              sb->bucket_noun, (long long)bc->bucket_of[i] + 1, (long long)b);
      bc->bucket_of[i] = (int)(b - 1);
    }
    lua_settop(L, 2);
  }
  for (int i = 0; i < bc->n; i++)
    if (bc->bucket_of[i] < 0)
      return fe_bucket_fail(L, sb, "left out the parameter \"%s\" (every parameter must be in exactly one %s)",
                            bc->names[i], sb->bucket_noun);
  return 0;
}

int fe_bucket_policy(void *ctx, const char *const *names, const char *const *units, const uint64_t *bytes, int n,
                     int *bucket_of, char *err, size_t errcap) {
  fe_sandbox *sb = ctx;
  lua_State *L = sb->L;
  fe_bucket_call bc = {sb, names, units, bytes, n, bucket_of};
  fe_limits_reset(sb);
  lua_settop(L, 0);
  lua_pushcfunction(L, fe_bucket_run);
  lua_pushlightuserdata(L, &bc);
  fe_watch *w = fe_watch_begin(sb->bucket_where, sb->bucket_field);
  if (!w) return ddp_fail(err, errcap, "%s: cannot start the time-limit watchdog", sb->bucket_where);
  int st = lua_pcall(L, 1, 0, 0);
  fe_watch_end(w);
  if (st == LUA_OK) return 0;
  if (st == LUA_ERRMEM)
    ddp_fail(err, errcap, "%s: %s used more than %d MB of Lua memory", sb->bucket_where,
             sb->bucket_field, (int)(FE_MEM_CAP >> 20));
  else if (lua_type(L, -1) == LUA_TSTRING && fe_located(lua_tostring(L, -1)))
    ddp_fail(err, errcap, "%s", lua_tostring(L, -1));
  else if (lua_type(L, -1) == LUA_TSTRING)
    ddp_fail(err, errcap, "%s: %s: %s", sb->bucket_where, sb->bucket_field, lua_tostring(L, -1));
  else
    ddp_fail(err, errcap, "%s: %s raised an error that is not a string", sb->bucket_where,
             sb->bucket_field); /* one line: ddp_fail */
  lua_settop(L, 0);
  return -1;
}

/* compiler/frontend/prelude.c: the constructors a schedule calls (schedule, transformer, mlp, linear,
 * relu, layernorm, param, adamw, sgd, ddp, single, fsdp, pipeline). Each returns its argument table
 * unchanged and records, in weak side tables of the registry (so user tables stay plain), which
 * constructor made it and the file:line it was called from. They are C functions on purpose: Lua keeps
 * the caller's frame when a C function is tail-called, so `return schedule{...}` still knows its line. An
 * optional second argument `up` attributes the call to a frame further up (helpers such as
 * models.transformer pass 1). fe_got describes any value in the words of those constructors ("ddp{...}"). */
#include "fe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FE_KIND_NAME(id, name) #name,
const char *const fe_kind_names[FE_K_COUNT] = {FE_KINDS(FE_KIND_NAME)};
#undef FE_KIND_NAME

static const char fe_key_kind = 0, fe_key_where = 0, fe_key_sets = 0;

/* Pushes "file:line" of the function `level` frames up, or nil. */
static void fe_push_site(lua_State *L, int level) {
  lua_Debug ar;
  if (lua_getstack(L, level, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0)
    lua_pushfstring(L, "%s:%d", ar.source[0] == '@' ? ar.source + 1 : ar.short_src, ar.currentline);
  else
    lua_pushnil(L);
}

static int fe_ctor(lua_State *L) {
  int kind = (int)lua_tointeger(L, lua_upvalueindex(1));
  const char *name = fe_kind_names[kind];
  int up = 0;
  if (!lua_isnoneornil(L, 2)) {
    if (!lua_isinteger(L, 2) || lua_tointeger(L, 2) < 0 || lua_tointeger(L, 2) > 16)
      return luaL_error(L, "%s: the second argument (frames up to attribute the call to) must be an "
                           "integer in 0..16", name);
    up = (int)lua_tointeger(L, 2);
  }
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  } else if (!lua_istable(L, 1)) {
    fe_push_site(L, 1 + up);
    const char *site = lua_isnil(L, -1) ? fe_sandbox_of(L)->path : lua_tostring(L, -1);
    char got[128];
    lua_pushfstring(L, "%s: %s expects a table of fields, as in %s{ ... }, got %s", site, name, name,
                    fe_got(L, 1, got, sizeof got));
    return lua_error(L);
  }
  lua_settop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fe_key_kind);
  lua_pushvalue(L, 1);
  lua_pushinteger(L, kind);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fe_key_where);
  lua_pushvalue(L, 1);
  fe_push_site(L, 1 + up);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return 1;
}

static void fe_weak_table(lua_State *L, const void *key) {
  lua_newtable(L);
  lua_newtable(L);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

void fe_prelude_open(lua_State *L) {
  fe_weak_table(L, &fe_key_kind);
  fe_weak_table(L, &fe_key_where);
  fe_weak_table(L, &fe_key_sets);
  for (int k = 0; k < FE_K_COUNT; k++) {
    lua_pushinteger(L, k);
    lua_pushcclosure(L, fe_ctor, 1);
    lua_setglobal(L, fe_kind_names[k]);
  }
}

/* Pushes side[key-table at idx]. */
static void fe_side(lua_State *L, const void *side, int idx) {
  idx = lua_absindex(L, idx);
  lua_rawgetp(L, LUA_REGISTRYINDEX, side);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  lua_remove(L, -2);
}

int fe_kind_of(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return -1;
  fe_side(L, &fe_key_kind, idx);
  int k = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 1);
  return k >= 0 && k < FE_K_COUNT ? k : -1;
}

bool fe_where_of(lua_State *L, int idx, char *buf, size_t cap) {
  if (!lua_istable(L, idx)) return false;
  fe_side(L, &fe_key_where, idx);
  bool ok = lua_type(L, -1) == LUA_TSTRING;
  if (ok) snprintf(buf, cap, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  return ok;
}

void fe_mark_set(lua_State *L, int tidx, int keyidx, const char *text) {
  tidx = lua_absindex(L, tidx);
  keyidx = lua_absindex(L, keyidx);
  fe_side(L, &fe_key_sets, tidx);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &fe_key_sets);
    lua_pushvalue(L, tidx);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  lua_pushvalue(L, keyidx);
  lua_pushstring(L, text);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

bool fe_set_of(lua_State *L, int tidx, const char *key, char *buf, size_t cap) {
  if (!key) return false;
  fe_side(L, &fe_key_sets, tidx);
  bool ok = false;
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, key);
    ok = lua_type(L, -1) == LUA_TSTRING;
    if (!ok && key[0] && strspn(key, "0123456789") == strlen(key) && strlen(key) < 10) { /* a list index */
      lua_pop(L, 1);
      lua_rawgeti(L, -1, (lua_Integer)atol(key));
      ok = lua_type(L, -1) == LUA_TSTRING;
    }
    if (ok) snprintf(buf, cap, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return ok;
}

bool fe_removed_by_set(lua_State *L, int idx, char *buf, size_t cap) {
  if (!lua_istable(L, idx)) return false;
  fe_side(L, &fe_key_sets, idx);
  bool ok = false;
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (!ok && lua_next(L, -2)) {
      size_t len = 0;
      const char *text = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
      if (text && len >= 4 && strcmp(text + len - 4, "=nil") == 0) {
        snprintf(buf, cap, "%s", text);
        ok = true;
        lua_pop(L, 2); /* value and key: the walk ends here */
        break;
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return ok;
}

const char *fe_got(lua_State *L, int idx, char *buf, size_t cap) {
  switch (lua_type(L, idx)) {
  case LUA_TNONE:
  case LUA_TNIL: snprintf(buf, cap, "nil"); break;
  case LUA_TBOOLEAN: snprintf(buf, cap, "%s", lua_toboolean(L, idx) ? "true" : "false"); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) snprintf(buf, cap, "%lld", (long long)lua_tointeger(L, idx));
    else { /* as Lua prints floats: 1.0, 0.5, 1e+12 */
      snprintf(buf, cap, "%.14g", (double)lua_tonumber(L, idx));
      if (strspn(buf, "-0123456789") == strlen(buf) && strlen(buf) + 3 <= cap) strcat(buf, ".0");
    }
    break;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (len > 60) snprintf(buf, cap, "\"%.57s...\"", s);
    else snprintf(buf, cap, "\"%s\"", s);
    break;
  }
  case LUA_TTABLE: {
    int k = fe_kind_of(L, idx);
    if (k >= 0) snprintf(buf, cap, "%s{...}", fe_kind_names[k]);
    else snprintf(buf, cap, "a table");
    break;
  }
  case LUA_TFUNCTION: snprintf(buf, cap, "a function"); break;
  default: snprintf(buf, cap, "a %s", lua_typename(L, lua_type(L, idx))); break;
  }
  for (char *p = buf; *p; p++) /* one line, whatever the value holds */
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  return buf;
}

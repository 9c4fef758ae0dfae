/* compiler/frontend/sandbox.c: the Lua state a schedule runs in. A counting allocator (memory cap), an
 * instruction-count hook (runaway scripts), only the base (without dofile/loadfile; load of text only),
 * string, table, math and utf8 libraries, print to stderr, `require "name"` limited to
 * <schedule folder>/<name>.lua, and clear errors when code reaches for os, io, debug or package. */
#include "fe.h"
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char fe_key_loaded = 0; /* registry: module cache */
static const char fe_key_loading = 0; /* sentinel value while a module runs */

static void *fe_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  fe_sandbox *sb = ud;
  if (ptr == NULL) osize = 0; /* osize then holds a type tag */
  if (nsize == 0) {
    free(ptr);
    sb->mem_used -= osize;
    return NULL;
  }
  if (nsize > osize && sb->mem_used - osize + nsize > sb->mem_cap) return NULL;
  void *p = realloc(ptr, nsize);
  if (p) sb->mem_used = sb->mem_used - osize + nsize;
  return p;
}

static void fe_hook(lua_State *L, lua_Debug *ar) {
  fe_sandbox *sb = fe_sandbox_of(L);
  if (!sb->tripped) {
    sb->instr += FE_HOOK_EVERY;
    if (sb->instr < FE_INSTR_LIMIT) return;
    sb->tripped = 1; /* from now on every instruction raises, so pcall cannot swallow the stop */
    lua_sethook(L, fe_hook, LUA_MASKCOUNT, 1);
  }
  if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
    lua_pushfstring(L, "%s:%d: ", ar->source[0] == '@' ? ar->source + 1 : ar->short_src, ar->currentline);
  else
    lua_pushfstring(L, "%s: ", sb->path);
  lua_pushfstring(L, "the schedule ran more than %d Lua instructions (an infinite loop?)",
                  (int)FE_INSTR_LIMIT);
  lua_concat(L, 2);
  lua_error(L);
}

void fe_limits_reset(fe_sandbox *sb) {
  sb->instr = 0;
  sb->tripped = 0;
  lua_sethook(sb->L, fe_hook, LUA_MASKCOUNT, FE_HOOK_EVERY);
}

fe_sandbox *fe_sandbox_of(lua_State *L) { return *(fe_sandbox **)lua_getextraspace(L); }

fe_sandbox *fe_sandbox_new(const char *path) {
  fe_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) return NULL;
  sb->mem_cap = FE_MEM_CAP;
  sb->bucket_ref = LUA_NOREF;
  snprintf(sb->path, sizeof sb->path, "%s", path);
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(sb->dir, sizeof sb->dir, ".");
  else if (slash == path) snprintf(sb->dir, sizeof sb->dir, "/");
  else snprintf(sb->dir, sizeof sb->dir, "%.*s", (int)(slash - path), path);
  sb->L = lua_newstate(fe_alloc, sb);
  if (!sb->L) {
    free(sb);
    return NULL;
  }
  *(fe_sandbox **)lua_getextraspace(sb->L) = sb;
  fe_limits_reset(sb);
  return sb;
}

void fe_sandbox_free(fe_sandbox *sb) {
  if (!sb) return;
  if (sb->L) lua_close(sb->L);
  free(sb);
}

/* print(...): like Lua's, but to stderr so ddpc's own output stays clean. */
static int fe_print(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s = luaL_tolstring(L, i, &len);
    if (i > 1) fputc('\t', stderr);
    fwrite(s, 1, len, stderr);
    lua_pop(L, 1);
  }
  fputc('\n', stderr);
  return 0;
}

/* load(chunk [, name [, mode [, env]]]): text chunks given as strings only. */
static int fe_load(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "load: schedules may only load text chunks given as strings, got %s",
                      luaL_typename(L, 1));
  size_t len;
  const char *chunk = lua_tolstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "=(load)");
  const char *mode = luaL_optstring(L, 3, "t");
  if (!strchr(mode, 't')) return luaL_error(L, "load: binary chunks are not allowed in schedules");
  int has_env = !lua_isnone(L, 4);
  if (luaL_loadbufferx(L, chunk, len, name, "t") != LUA_OK) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2; /* nil, message */
  }
  if (has_env) {
    lua_pushvalue(L, 4);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
  }
  return 1;
}

static bool fe_module_name_ok(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

/* require "name": <schedule folder>/<name>.lua, run once as text in this sandbox and cached. */
static int fe_require(lua_State *L) {
  fe_sandbox *sb = fe_sandbox_of(L);
  const char *name = luaL_checkstring(L, 1);
  if (!fe_module_name_ok(name))
    return luaL_error(L, "require \"%s\": a module name is letters, digits and _ only (it names "
                         "<schedule folder>/<name>.lua)", name);
  lua_settop(L, 1);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &fe_key_loaded); /* 2: cache */
  lua_getfield(L, 2, name);
  if (lua_touserdata(L, -1) == (void *)&fe_key_loading)
    return luaL_error(L, "require \"%s\": circular require (the module requires itself)", name);
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  char path[2100];
  snprintf(path, sizeof path, "%s/%s.lua", sb->dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return luaL_error(L, "require \"%s\": module not found: %s", name, path);
  fclose(f);
  if (luaL_loadfilex(L, path, "t") != LUA_OK) return lua_error(L);
  lua_pushlightuserdata(L, (void *)&fe_key_loading);
  lua_setfield(L, 2, name);
  lua_pushstring(L, name);
  lua_call(L, 1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

/* _G's __index: globals that exist in ordinary Lua but not here say why. */
static int fe_global_index(lua_State *L) {
  static const char *const why[][2] = {
      {"os", "there is no os library in schedules (os is nil): a schedule cannot run programs or read "
             "the clock or the environment"},
      {"io", "there is no io library in schedules (io is nil): a schedule cannot open files (use "
             "require for modules and data.tokens for token files)"},
      {"debug", "there is no debug library in schedules (debug is nil)"},
      {"package", "there is no package library in schedules (package is nil): require \"name\" loads "
                  "<schedule folder>/<name>.lua"},
      {"dofile", "dofile is not available in schedules (it is nil): use require \"name\""},
      {"loadfile", "loadfile is not available in schedules (it is nil): use require \"name\""},
  };
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
      if (strcmp(k, why[i][0]) == 0) return luaL_error(L, "%s", why[i][1]);
  }
  return 0;
}

void fe_sandbox_open(lua_State *L) {
  static const struct { const char *name; lua_CFunction open; } libs[] = {
      {LUA_GNAME, luaopen_base}, {LUA_STRLIBNAME, luaopen_string}, {LUA_TABLIBNAME, luaopen_table},
      {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    luaL_requiref(L, libs[i].name, libs[i].open, 1);
    lua_pop(L, 1);
  }
  lua_pushglobaltable(L);
  lua_pushnil(L);
  lua_setfield(L, -2, "dofile");
  lua_pushnil(L);
  lua_setfield(L, -2, "loadfile");
  lua_pushcfunction(L, fe_load);
  lua_setfield(L, -2, "load");
  lua_pushcfunction(L, fe_print);
  lua_setfield(L, -2, "print");
  lua_pushcfunction(L, fe_require);
  lua_setfield(L, -2, "require");
  lua_newtable(L); /* metatable of _G */
  lua_pushcfunction(L, fe_global_index);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &fe_key_loaded);
}

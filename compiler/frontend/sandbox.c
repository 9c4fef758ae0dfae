/* compiler/frontend/sandbox.c: the Lua state a schedule runs in. A counting allocator (memory cap), an
 * instruction-count hook (runaway scripts), only the base (without dofile/loadfile; load of text only),
 * string, table, math and utf8 libraries, print to stderr, `require "name"` limited to
 * <schedule folder>/<name>.lua, <schedule folder>/lib/ and the schedule library's lib/, and clear errors when code reaches for os, io, debug or package. Lua runs
 * __gc finalizers and xpcall message handlers with hooks off, and the string library's matcher is a C
 * loop: so setmetatable refuses __gc, xpcall calls its handler after unwinding, and find/match/gmatch/gsub
 * refuse a pattern whose worst case is over FE_PATTERN_BUDGET steps (watchdog.c bounds the rest). */
#include "fe.h"
#include "file.h"
#include "share_dir.h"
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char fe_key_loaded = 0; /* registry: module cache */
static const char fe_key_loading = 0; /* sentinel value while a module runs */

#ifndef DDP_SCHEDULE_DIR
#define DDP_SCHEDULE_DIR "schedules"
#endif

static void *fe_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  fe_sandbox *sb = ud;
  if (ptr == NULL) osize = 0; /* osize then holds a type tag */
  if (nsize == 0) {
    free(ptr);
    sb->mem_used -= osize;
    return NULL;
  }
  if (nsize > osize && sb->mem_used - osize + nsize > sb->mem_cap) return NULL;
  /* Bytes allocated count against the instruction limit (FE_ALLOC_BYTES_PER_INSTR to one): a loop that keeps
   * building large strings in one slot stays under the memory cap and runs few VM instructions, but each
   * pass copies megabytes (fuzzing found one running into the CPU-time watchdog). */
  if (nsize > osize) sb->instr += (long long)((nsize - osize) / FE_ALLOC_BYTES_PER_INSTR);
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
  lua_pushfstring(L, "the schedule ran more than %d Lua instructions, %d bytes it allocates counting as one (an "
                  "infinite loop?)", (int)FE_INSTR_LIMIT, (int)FE_ALLOC_BYTES_PER_INSTR);
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
  snprintf(sb->bucket_field, sizeof sb->bucket_field, "parallel.buckets");
  snprintf(sb->bucket_noun, sizeof sb->bucket_noun, "bucket");
  snprintf(sb->path, sizeof sb->path, "%s", path);
  if (ddp_path_folder(path, sb->dir, sizeof sb->dir)) /* too long: reading the schedule fails on its own */
    snprintf(sb->dir, sizeof sb->dir, ".");
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

/* Wrappers of library functions: check, then run the original (upvalue 1) in this same call frame, so
 * its own errors still name the caller's file:line. */
static int fe_call_original(lua_State *L) { return lua_tocfunction(L, lua_upvalueindex(1))(L); }

/* setmetatable(t, mt): a metatable with __gc is refused (finalizers run with hooks off, out of reach of
 * the instruction limit, and also when the state closes). */
static int fe_setmetatable(lua_State *L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    int has_gc = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (has_gc) return luaL_error(L, "setmetatable: __gc finalizers are not allowed in schedules");
  }
  return fe_call_original(L);
}

/* xpcall(f, msgh, ...): Lua calls msgh where the error is raised, which for the instruction limit is
 * inside the hook, with hooks off; here msgh runs after the stack unwinds, under the limits. */
static int fe_xpcall(lua_State *L) {
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2); /* f msgh true f args... */
  int st = lua_pcall(L, n - 2, LUA_MULTRET, 0);
  if (st == LUA_OK) return lua_gettop(L) - 2;
  lua_pushboolean(L, 0); /* f msgh true err */
  lua_replace(L, 3);
  if (st != LUA_ERRMEM) { /* as Lua: no handler for memory errors */
    lua_pushvalue(L, 2);
    lua_insert(L, -2);
    lua_pcall(L, 1, 1, 0); /* its result, or its own error, is the message */
  }
  return 2;
}

/* Steps of Lua's backtracking matcher at worst on a subject of n bytes: each *, + or - item retries up to
 * n + 1 lengths and each ? two; %b and back-references scan up to n bytes per try; an unanchored pattern
 * is tried at n + 1 starts. Counting stops once over the budget. */
static double fe_pattern_cost(const char *p, size_t len, double n, bool anchored) {
  double cost = anchored ? 1 : n + 1;
  for (size_t i = anchored; i < len && cost <= FE_PATTERN_BUDGET;) {
    char c = p[i++];
    if (c == '(' || c == ')') continue;
    if (c == '%' && i < len) {
      c = p[i++];
      if (c == 'b' || (c >= '0' && c <= '9')) {
        cost *= n + 1;
        i += c == 'b' ? 2 : 0;
        continue;
      }
      if (c == 'f' && i < len) c = p[i++]; /* the frontier's set follows */
      else continue;
    }
    if (c == '[') { /* as Lua's classEnd: the first character (after ^) is never the closing ] */
      if (i < len && p[i] == '^') i++;
      do i += (i < len && p[i] == '%') ? 2 : 1;
      while (i < len && p[i] != ']');
      i++;
    }
    if (i < len && (p[i] == '*' || p[i] == '+' || p[i] == '-')) cost *= n + 1, i++;
    else if (i < len && p[i] == '?') cost *= 2, i++;
  }
  return cost;
}

/* string.find/match/gmatch/gsub (upvalue 2: the name): the pattern's worst case must fit the budget. */
static int fe_string_match(lua_State *L) {
  const char *name = lua_tostring(L, lua_upvalueindex(2));
  size_t n, len;
  luaL_checklstring(L, 1, &n);
  const char *p = luaL_checklstring(L, 2, &len);
  bool plain = strcmp(name, "find") == 0 && lua_toboolean(L, 4);
  double cost = plain ? 0 : fe_pattern_cost(p, len, (double)n, len > 0 && p[0] == '^' && strcmp(name, "gmatch"));
  if (cost > FE_PATTERN_BUDGET) {
    char msg[256];
    snprintf(msg, sizeof msg, "string.%s: the pattern \"%.40s%s\" could backtrack more than %.0e steps on %zu "
             "bytes, the sandbox's limit (use fewer *, +, - or ? items, or a shorter string)", name, p,
             len > 40 ? "..." : "", FE_PATTERN_BUDGET, n);
    return luaL_error(L, "%s", msg);
  }
  return fe_call_original(L);
}

static bool fe_module_name_ok(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

/* The schedule library's folder: the installed copy (<bin>/../share/ddpc/schedules), else the source
 * tree's (base/share_dir.h). Its lib/ holds the helper modules (models, xl_ddp, ...). */
const char *fe_library_dir(char *buf, size_t cap) {
  return ddp_share_dir("schedules", NULL, DDP_SCHEDULE_DIR, buf, cap);
}

/* Where `require "name"` reads: <schedule folder>/<name>.lua, <schedule folder>/lib/<name>.lua, then
 * <library>/lib/<name>.lua. 0 with the path when one is a readable file, -1 with the list tried. */
static int fe_module_path(const fe_sandbox *sb, const char *name, char *path, size_t cap) {
  char lib[1024], tried[3][1100];
  fe_library_dir(lib, sizeof lib);
  snprintf(tried[0], sizeof tried[0], "%s/%s.lua", sb->dir, name);
  snprintf(tried[1], sizeof tried[1], "%s/lib/%s.lua", sb->dir, name);
  snprintf(tried[2], sizeof tried[2], "%s/lib/%s.lua", lib, name);
  for (int i = 0; i < 3; i++) {
    struct stat st; /* stat, not open: opening a FIFO would block */
    if (stat(tried[i], &st) == 0) {
      snprintf(path, cap, "%s", tried[i]);
      return 0;
    }
  }
  snprintf(path, cap, "%s, %s or %s", tried[0], tried[1], tried[2]);
  return -1;
}

/* require "name": the first of fe_module_path's files, run once as text in this sandbox and cached. */
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
  char path[3400];
  if (fe_module_path(sb, name, path, sizeof path)) return luaL_error(L, "require \"%s\": module not found: %s", name, path);
  struct stat st; /* a FIFO would block the loader's open: only regular files are modules */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return luaL_error(L, "require \"%s\": %s is not a regular file", name, path);
  if (luaL_loadfilex(L, path, "t") != LUA_OK) return lua_error(L);
  lua_pushlightuserdata(L, (void *)&fe_key_loading);
  lua_setfield(L, 2, name);
  lua_pushstring(L, name);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) { /* not loading any more: a require after a pcall runs it again */
    lua_pushnil(L);
    lua_setfield(L, 2, name);
    return lua_error(L);
  }
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
  lua_getglobal(L, LUA_STRLIBNAME);
  static const char *const matchers[] = {"find", "match", "gmatch", "gsub"};
  for (int i = 0; i < 4; i++) {
    lua_getfield(L, -1, matchers[i]);
    lua_pushstring(L, matchers[i]);
    lua_pushcclosure(L, fe_string_match, 2);
    lua_setfield(L, -2, matchers[i]);
  }
  lua_pop(L, 1);
  lua_pushglobaltable(L);
  lua_getfield(L, -1, "setmetatable");
  lua_pushcclosure(L, fe_setmetatable, 1);
  lua_setfield(L, -2, "setmetatable");
  lua_pushcfunction(L, fe_xpcall);
  lua_setfield(L, -2, "xpcall");
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

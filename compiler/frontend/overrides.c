/* compiler/frontend/overrides.c: `--set path=value` applied to the table a schedule returned, before
 * validation. The value is a number if it reads as one, true/false as booleans, nil removes the field,
 * anything else is a string. Every table on the path but the last field must exist, except the top-level
 * tables whose fields are all optional (`nccl`, `fusion`, `mesh`, `streams`), which --set creates when the schedule has none
 * (--set nccl.register=true). Each set field is remembered (prelude.c) so that an error about it says
 * "--set path=value" instead of a file:line. */
#include "fe.h"
#include <stdlib.h>
#include <string.h>

static void fe_push_key(lua_State *L, const char *seg, size_t len) {
  bool digits = len > 0 && len < 10;
  for (size_t i = 0; i < len && digits; i++) digits = seg[i] >= '0' && seg[i] <= '9';
  if (digits) lua_pushinteger(L, (lua_Integer)strtoll(seg, NULL, 10));
  else lua_pushlstring(L, seg, len);
}

static void fe_push_value(lua_State *L, const char *v) {
  if (strcmp(v, "true") == 0) lua_pushboolean(L, 1);
  else if (strcmp(v, "false") == 0) lua_pushboolean(L, 0);
  else if (strcmp(v, "nil") == 0) lua_pushnil(L);
  else if (lua_stringtonumber(L, v) == 0) lua_pushstring(L, v);
}

/* A top-level field that is a table of optional fields, which --set may create. */
static bool creatable(const char *seg, size_t len) {
  static const char *const names[] = {"nccl", "fusion", "mesh", "streams"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strlen(names[k]) == len && memcmp(names[k], seg, len) == 0) return true;
  return false;
}

void fe_apply_sets(lua_State *L, int root, const char *const *sets, int nsets) {
  root = lua_absindex(L, root);
  for (int i = 0; i < nsets; i++) {
    const char *text = sets[i];
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) {
      lua_pushfstring(L, "--set %s: expected path=value, as in --set parallel.bucket_mb=100", text);
      lua_error(L);
    }
    int top = lua_gettop(L);
    lua_pushvalue(L, root);
    for (const char *seg = text;;) {
      const char *end = seg;
      while (end < eq && *end != '.') end++;
      if (end == seg) {
        lua_pushfstring(L, "--set %s: the path %s has an empty part", text,
                        lua_pushlstring(L, text, (size_t)(eq - text)));
        lua_error(L);
      }
      fe_push_key(L, seg, (size_t)(end - seg));
      if (end == eq) { /* the field to set: table, key on the stack */
        fe_push_value(L, eq + 1);
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, -5);
        lua_pushfstring(L, "--set %s", text);
        fe_mark_set(L, -4, -3, lua_tostring(L, -1));
        lua_pop(L, 1);
        break;
      }
      lua_rawget(L, -2);
      if (lua_isnil(L, -1) && seg == text && creatable(seg, (size_t)(end - seg))) { /* root.<seg> = {} */
        lua_pop(L, 1);
        lua_newtable(L);
        fe_push_key(L, seg, (size_t)(end - seg));
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
      }
      if (!lua_istable(L, -1)) {
        lua_pushlstring(L, text, (size_t)(eq - text));
        lua_pushlstring(L, text, (size_t)(end - text));
        lua_pushfstring(L, "--set %s: unknown path %s (the schedule has no table %s)", text,
                        lua_tostring(L, -2), lua_tostring(L, -1));
        lua_error(L);
      }
      lua_remove(L, -2);
      seg = end + 1;
    }
    lua_settop(L, top);
  }
}

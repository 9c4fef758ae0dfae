/* compiler/frontend/fields.c: reading the fields of schedule tables and reporting what is wrong with
 * them. Every failure raises a Lua error carrying one line "<where>: <field path> <problem>[, got <v>]",
 * where <where> is the --set that wrote the field, else the file:line of the constructor that made the
 * table (or of the enclosing one, or just the schedule file). Fields are read raw (no metamethods). */
#include "fe.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pushes t[key]; key "[n]" is the n-th list element. */
static void fe_push_field(lua_State *L, const fe_tab *t, const char *key) {
  if (key[0] == '[') lua_rawgeti(L, t->idx, strtoll(key + 1, NULL, 10));
  else {
    lua_pushstring(L, key);
    lua_rawget(L, t->idx);
  }
}

static void fe_join(char *buf, size_t cap, const char *path, const char *key) {
  if (!key) snprintf(buf, cap, "%s", path);
  else if (!*path) snprintf(buf, cap, "%s", key);
  else snprintf(buf, cap, "%s%s%s", path, key[0] == '[' ? "" : ".", key);
}

static _Noreturn void fe_raise(fe_conv *c, const fe_tab *t, const char *key, const char *text) {
  char where[FE_WHERE_MAX], field[512];
  bool found = key && key[0] != '[' && fe_set_of(c->L, t->idx, key, where, sizeof where);
  if (!found && key && key[0] == '[') { /* a list element set by --set a.b.1=...: recorded under "1" */
    char index[32];
    size_t n = strlen(key);
    if (n > 2 && n < sizeof index + 2 && key[n - 1] == ']') {
      snprintf(index, sizeof index, "%.*s", (int)(n - 2), key + 1);
      found = fe_set_of(c->L, t->idx, index, where, sizeof where);
    }
  }
  if (!found && key) { /* a list whose element a --set removed (a hole, a short list) is that --set's doing */
    fe_push_field(c->L, t, key);
    found = fe_removed_by_set(c->L, -1, where, sizeof where);
    lua_pop(c->L, 1);
  }
  if (!found && key) { /* a value made by a constructor is best reported where it was made */
    fe_push_field(c->L, t, key);
    found = fe_where_of(c->L, -1, where, sizeof where);
    lua_pop(c->L, 1);
  }
  if (!found) snprintf(where, sizeof where, "%s", t->where);
  fe_join(field, sizeof field, t->path, key);
  if (!field[0]) snprintf(field, sizeof field, "%s", t->what[0] ? t->what : "the schedule"); /* the root itself */
  lua_pushfstring(c->L, "%s: %s%s%s", where, field, text[0] == ':' ? "" : " ", text);
  lua_error(c->L);
  abort();
}

void fe_fail(fe_conv *c, const fe_tab *t, const char *key, const char *fmt, ...) {
  char text[FE_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fe_raise(c, t, key, text);
}

void fe_bad(fe_conv *c, const fe_tab *t, const char *key, const char *fmt, ...) {
  char text[FE_MSG_MAX], got[160];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fe_push_field(c->L, t, key);
  fe_got(c->L, -1, got, sizeof got);
  lua_pop(c->L, 1);
  if (n >= 0 && (size_t)n < sizeof text) snprintf(text + n, sizeof text - (size_t)n, ", got %s", got);
  fe_raise(c, t, key, text);
}

static void fe_tab_init(fe_conv *c, fe_tab *out, int idx, const char *path, const char *what,
                        const char *parent_where) {
  out->idx = lua_absindex(c->L, idx);
  if (snprintf(out->path, sizeof out->path, "%s", path) >= (int)sizeof out->path) /* too deep: mark the cut */
    memcpy(out->path + sizeof out->path - 4, "...", 4);
  int k = fe_kind_of(c->L, idx);
  if (k >= 0) snprintf(out->what, sizeof out->what, "%s{}", fe_kind_names[k]);
  else snprintf(out->what, sizeof out->what, "%s", what);
  if (!fe_where_of(c->L, idx, out->where, sizeof out->where))
    snprintf(out->where, sizeof out->where, "%s", parent_where);
}

void fe_tab_root(fe_conv *c, int idx, fe_tab *t) { fe_tab_init(c, t, idx, "", "the schedule", c->sb->path); }

bool fe_sub(fe_conv *c, const fe_tab *t, const char *key, fe_tab *out, const char *need) {
  luaL_checkstack(c->L, 8, "schedule nesting");
  fe_push_field(c->L, t, key);
  if (lua_isnil(c->L, -1)) {
    lua_pop(c->L, 1);
    return false;
  }
  if (!lua_istable(c->L, -1)) fe_bad(c, t, key, "must be %s", need);
  char path[512];
  fe_join(path, sizeof path, t->path, key);
  char where[FE_WHERE_MAX];
  if (!fe_set_of(c->L, t->idx, key, where, sizeof where)) snprintf(where, sizeof where, "%s", t->where);
  fe_tab_init(c, out, -1, path, key, where);
  return true;
}

void fe_elem(fe_conv *c, const fe_tab *list, int i, fe_tab *out, const char *need) {
  char key[32];
  snprintf(key, sizeof key, "[%d]", i);
  if (!fe_sub(c, list, key, out, need)) fe_bad(c, list, key, "must be %s", need);
}

bool fe_has(fe_conv *c, const fe_tab *t, const char *key) { return fe_type(c, t, key) != LUA_TNIL; }

int fe_type(fe_conv *c, const fe_tab *t, const char *key) {
  fe_push_field(c->L, t, key);
  int ty = lua_type(c->L, -1);
  lua_pop(c->L, 1);
  return ty;
}

void fe_required(fe_conv *c, const fe_tab *t, const char *key) {
  if (!fe_has(c, t, key)) fe_fail(c, t, key, "is required");
}

static size_t fe_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 40 || lb > 40) return 99;
  size_t row[41];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

void fe_known(fe_conv *c, const fe_tab *t, const char *const *fields) {
  lua_State *L = c->L;
  lua_pushnil(L);
  while (lua_next(L, t->idx)) {
    lua_pop(L, 1); /* value */
    if (lua_type(L, -1) != LUA_TSTRING) {
      char k[160];
      fe_got(L, -1, k, sizeof k);
      fe_fail(c, t, NULL, "has a value without a field name (at [%s]): write fields as name = value", k);
    }
    const char *key = lua_tostring(L, -1);
    bool ok = false;
    const char *best = NULL;
    size_t bestd = 3;
    for (const char *const *f = fields; *f; f++) {
      if (strcmp(*f, key) == 0) ok = true;
      size_t d = fe_edit_distance(key, *f);
      if (d < bestd && d < strlen(key)) bestd = d, best = *f;
    }
    if (!ok) {
      char hint[96] = "";
      if (best) snprintf(hint, sizeof hint, " (did you mean %s?)", best);
      fe_fail(c, t, key, "is not a field of %s%s", t->what, hint);
    }
  }
}

bool fe_num(fe_conv *c, const fe_tab *t, const char *key, double *out, const char *need) {
  fe_push_field(c->L, t, key);
  int ty = lua_type(c->L, -1);
  double v = ty == LUA_TNUMBER ? (double)lua_tonumber(c->L, -1) : 0;
  lua_pop(c->L, 1);
  if (ty == LUA_TNIL) return false;
  if (ty != LUA_TNUMBER || !isfinite(v)) fe_bad(c, t, key, "must be %s", need);
  *out = v;
  return true;
}

bool fe_int(fe_conv *c, const fe_tab *t, const char *key, int64_t *out, const char *need) {
  fe_push_field(c->L, t, key);
  int ty = lua_type(c->L, -1);
  bool isint = ty == LUA_TNUMBER && lua_isinteger(c->L, -1);
  int64_t i = isint ? (int64_t)lua_tointeger(c->L, -1) : 0;
  double d = ty == LUA_TNUMBER ? (double)lua_tonumber(c->L, -1) : 0;
  lua_pop(c->L, 1);
  if (ty == LUA_TNIL) return false;
  if (!isint) {
    if (ty != LUA_TNUMBER || !isfinite(d) || d != floor(d) || fabs(d) > 9.0e18)
      fe_bad(c, t, key, "must be %s", need);
    i = (int64_t)d;
  }
  *out = i;
  return true;
}

int64_t fe_int_in(fe_conv *c, const fe_tab *t, const char *key, int64_t def, int64_t lo, int64_t hi) {
  char need[96];
  if (lo == 1) snprintf(need, sizeof need, "a positive integer");
  else if (lo == 0) snprintf(need, sizeof need, "a non-negative integer");
  else snprintf(need, sizeof need, "an integer in %lld..%lld", (long long)lo, (long long)hi);
  int64_t v = def;
  if (fe_int(c, t, key, &v, need)) {
    if (v < lo) fe_bad(c, t, key, "must be %s", need);
    if (v > hi) fe_bad(c, t, key, "must be at most %lld", (long long)hi);
  }
  return v;
}

bool fe_bool(fe_conv *c, const fe_tab *t, const char *key, bool *out) {
  int ty = fe_type(c, t, key);
  if (ty == LUA_TNIL) return false;
  if (ty != LUA_TBOOLEAN) fe_bad(c, t, key, "must be true or false");
  fe_push_field(c->L, t, key);
  *out = lua_toboolean(c->L, -1);
  lua_pop(c->L, 1);
  return true;
}

bool fe_str(fe_conv *c, const fe_tab *t, const char *key, char *buf, size_t cap, const char *need) {
  if (fe_type(c, t, key) == LUA_TNIL) return false;
  if (fe_type(c, t, key) != LUA_TSTRING) fe_bad(c, t, key, "must be %s", need);
  fe_push_field(c->L, t, key);
  size_t len;
  const char *s = lua_tolstring(c->L, -1, &len);
  bool fits = len < cap && strlen(s) == len;
  if (fits) memcpy(buf, s, len + 1);
  lua_pop(c->L, 1);
  if (!fits) fe_bad(c, t, key, "must be %s of at most %zu bytes without NUL", need, cap - 1);
  return true;
}

bool fe_enum(fe_conv *c, const fe_tab *t, const char *key, const char *const *names, int *out) {
  char need[256] = "", s[64];
  int n = 0;
  while (names[n]) n++;
  size_t off = (size_t)snprintf(need, sizeof need, n > 2 ? "one of " : "");
  for (int i = 0; i < n && off < sizeof need; i++)
    off += (size_t)snprintf(need + off, sizeof need - off, "%s\"%s\"",
                            i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
  if (fe_type(c, t, key) == LUA_TNIL) return false;
  if (fe_type(c, t, key) != LUA_TSTRING) fe_bad(c, t, key, "must be %s", need);
  fe_push_field(c->L, t, key);
  snprintf(s, sizeof s, "%s", lua_tostring(c->L, -1));
  bool exact = strlen(lua_tostring(c->L, -1)) < sizeof s;
  lua_pop(c->L, 1);
  for (int i = 0; exact && i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return true;
    }
  fe_bad(c, t, key, "must be %s", need);
}

bool fe_is_list(lua_State *L, int idx, lua_Integer n, char *what, size_t cap) {
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
      char k[120];
      snprintf(what, cap, "the key %s", fe_got(L, -1, k, sizeof k));
      lua_pop(L, 1);
      return false;
    }
    count++;
  }
  if (count == n) return true;
  for (lua_Integer i = 1; i <= n; i++) {
    int nil = lua_rawgeti(L, idx, i) == LUA_TNIL;
    lua_pop(L, 1);
    if (nil) {
      snprintf(what, cap, "a hole at [%lld]", (long long)i);
      return false;
    }
  }
  return true;
}

int fe_list(fe_conv *c, const fe_tab *t, const char *key, fe_tab *out, const char *need) {
  if (!fe_sub(c, t, key, out, need)) return -1;
  if (fe_kind_of(c->L, out->idx) >= 0) fe_bad(c, t, key, "must be %s", need);
  lua_State *L = c->L;
  lua_Integer n = (lua_Integer)lua_rawlen(L, out->idx);
  char what[160];
  if (!fe_is_list(L, out->idx, n, what, sizeof what)) {
    char where[FE_WHERE_MAX] = "";
    lua_pushnil(L); /* a key past the border that a --set made (--set optimizer.betas.5=0.9): reported there */
    while (!where[0] && lua_next(L, out->idx)) {
      lua_pop(L, 1);
      int integer = lua_isinteger(L, -1);
      lua_Integer k = integer ? lua_tointeger(L, -1) : 0;
      char ks[64] = "";
      if (integer) snprintf(ks, sizeof ks, "%lld", (long long)k);
      else if (lua_type(L, -1) == LUA_TSTRING) snprintf(ks, sizeof ks, "%s", lua_tostring(L, -1));
      if (ks[0] && !(integer && k >= 1 && k <= n) && fe_set_of(L, out->idx, ks, where, sizeof where)) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s: %s must be %s (a list: no named fields or holes), found %s", where, out->path, need, what);
        lua_error(L);
      }
    }
    fe_fail(c, t, key, "must be %s (a list: no named fields or holes), found %s", need, what);
  }
  if (n > INT32_MAX) fe_fail(c, t, key, "is too long");
  return (int)n;
}

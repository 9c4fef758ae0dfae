/* compiler/frontend/load.c: ddp_schedule_load and ddp_schedule_free. Reads the schedule, runs it in a
 * fresh sandbox (sandbox.c + prelude.c), applies --set overrides, converts and validates the result, and
 * turns any failure into one line that names a place: file:line, --set ..., or at least the file. The Lua
 * state is kept (for the bucket function) only when the schedule has one. */
#include "fe.h"
#include "err.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fe_run {
  fe_sandbox *sb;
  ddp_schedule *s;
  const char *source;
  size_t len;
  const char *const *sets;
  int nsets;
} fe_run;

/* Does msg start with a place, "something:123:" or "--set "? */
bool fe_located(const char *msg) {
  if (strncmp(msg, "--set ", 6) == 0) return true;
  const char *colon = strchr(msg, ':');
  if (!colon || colon == msg || !isdigit((unsigned char)colon[1])) return false;
  const char *p = colon + 1;
  while (isdigit((unsigned char)*p)) p++;
  return *p == ':';
}

static int fe_main(lua_State *L) {
  fe_run *r = lua_touserdata(L, 1);
  fe_sandbox_open(L);
  fe_prelude_open(L);
  const char *src = r->source;
  size_t len = r->len;
  if (len > 0 && src[0] == '#') { /* a "#!" first line: skip it, keep the line numbers */
    while (len > 0 && *src != '\n') src++, len--;
  }
  lua_pushfstring(L, "@%s", r->sb->path);
  int st = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
  if (st != LUA_OK) return lua_error(L);
  lua_remove(L, -2);
  lua_call(L, 0, 1); /* 2: what the schedule returned */
  lua_settop(L, 2);
  const char *dir_name = strrchr(r->sb->dir, '/') ? strrchr(r->sb->dir, '/') + 1 : r->sb->dir;
  if (strcmp(dir_name, "lib") == 0 && fe_kind_of(L, 2) != FE_K_SCHEDULE) { /* schedules/lib/: modules */
    const char *base = strrchr(r->sb->path, '/') ? strrchr(r->sb->path, '/') + 1 : r->sb->path;
    char mod[sizeof r->sb->path];
    snprintf(mod, sizeof mod, "%s", base);
    if (strlen(mod) > 4 && strcmp(mod + strlen(mod) - 4, ".lua") == 0) mod[strlen(mod) - 4] = 0;
    return luaL_error(L, "%s: a helper module (lib/ holds what schedules load with require \"%s\"), not a "
                         "schedule: compile a schedule that requires it", r->sb->path, mod);
  }
  if (lua_istable(L, 2)) fe_apply_sets(L, 2, r->sets, r->nsets);
  fe_conv c = {L, r->sb, r->s};
  fe_convert(&c, 2);
  return 0;
}

/* Lua shortens long chunk names to "...tail"; put the full path back when the tail is one we loaded. */
static void fe_unshorten(const fe_sandbox *sb, const char *msg, char *out, size_t cap) {
  if (strncmp(msg, "...", 3) == 0) {
    const char *colon = strchr(msg + 3, ':');
    if (colon) {
      size_t tail = (size_t)(colon - (msg + 3));
      char mod[2200], mod_lib[2200], lib[1024], lib_mod[2200];
      const char *base = msg + 3;
      for (const char *p = msg + 3; p < colon; p++)
        if (*p == '/') base = p + 1;
      snprintf(mod, sizeof mod, "%s/%.*s", sb->dir, (int)(colon - base), base);
      snprintf(mod_lib, sizeof mod_lib, "%s/lib/%.*s", sb->dir, (int)(colon - base), base);
      snprintf(lib_mod, sizeof lib_mod, "%s/lib/%.*s", fe_library_dir(lib, sizeof lib), (int)(colon - base), base);
      const char *cands[4] = {sb->path, mod, mod_lib, lib_mod};
      for (int i = 0; i < 4; i++) {
        size_t n = strlen(cands[i]);
        if (n >= tail && memcmp(cands[i] + n - tail, msg + 3, tail) == 0) {
          snprintf(out, cap, "%s%s", cands[i], colon);
          return;
        }
      }
    }
  }
  snprintf(out, cap, "%s", msg);
}

static void fe_report(const fe_sandbox *sb, lua_State *L, int st, char *err, size_t errcap) {
  if (!err || errcap == 0) return;
  if (st == LUA_ERRMEM) {
    ddp_fail(err, errcap, "%s: the schedule used more than %d MB of Lua memory", sb->path,
             (int)(FE_MEM_CAP >> 20));
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    char *full = malloc(FE_MSG_MAX + 2200);
    if (!full) {
      ddp_fail(err, errcap, "%s: out of memory", sb->path);
      return;
    }
    fe_unshorten(sb, lua_tostring(L, -1), full, FE_MSG_MAX + 2200);
    if (fe_located(full) || (strncmp(full, sb->path, strlen(sb->path)) == 0 && full[strlen(sb->path)] == ':'))
      ddp_fail(err, errcap, "%s", full);
    else
      ddp_fail(err, errcap, "%s: %s", sb->path, full);
    free(full);
  } else {
    char got[64];
    ddp_fail(err, errcap, "%s: the schedule raised an error that is not a string (%s)", sb->path,
             fe_got(L, -1, got, sizeof got));
  } /* ddp_fail keeps each message one line */
}

static char *fe_read(const char *path, size_t *len, char *err, size_t errcap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO is refused at once, not waited on */
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    ddp_fail(err, errcap, "%s: cannot read the schedule: not a regular file", path);
    return NULL;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    ddp_fail(err, errcap, "%s: cannot read the schedule: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *more = cap > ((size_t)64 << 20) ? NULL : realloc(buf, cap * 2);
    if (!more) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = more;
    cap *= 2;
  }
  bool bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    ddp_fail(err, errcap, "%s: cannot read the schedule%s", path, bad ? "" : " (too large)");
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

ddp_schedule *ddp_schedule_load(const char *path, const char *const *sets, int nsets, char *err,
                                size_t errcap) {
  char dummy[8];
  if (!err || errcap == 0) err = dummy, errcap = sizeof dummy;
  err[0] = 0;
  if (!path || !*path) {
    ddp_fail(err, errcap, "ddpc: no schedule file given");
    return NULL;
  }
  ddp_schedule tmp;
  if (strlen(path) >= sizeof tmp.path) {
    ddp_fail(err, errcap, "%.200s...: the schedule path is too long", path);
    return NULL;
  }
  size_t len = 0;
  char *source = fe_read(path, &len, err, errcap);
  if (!source) return NULL;
  ddp_schedule *s = calloc(1, sizeof *s);
  fe_sandbox *sb = s ? fe_sandbox_new(path) : NULL;
  if (!sb) {
    ddp_fail(err, errcap, "%s: out of memory", path);
    free(s);
    free(source);
    return NULL;
  }
  snprintf(s->path, sizeof s->path, "%s", path);
  fe_run run = {sb, s, source, len, sets, nsets < 0 ? 0 : nsets};
  fe_watch *w = fe_watch_begin(path, "the schedule");
  if (!w) {
    ddp_fail(err, errcap, "%s: cannot start the time-limit watchdog (out of threads or memory)", path);
    fe_sandbox_free(sb);
    free(s);
    free(source);
    return NULL;
  }
  lua_pushcfunction(sb->L, fe_main);
  lua_pushlightuserdata(sb->L, &run);
  int st = lua_pcall(sb->L, 1, 0, 0);
  if (st != LUA_OK) {
    fe_report(sb, sb->L, st, err, errcap);
    fe_sandbox_free(sb);
    fe_watch_end(w);
    free(s);
    free(source);
    return NULL;
  }
  lua_settop(sb->L, 0);
  s->source = source;
  if (s->bucket_policy) {
    s->bucket_policy_ctx = sb;
    lua_gc(sb->L, LUA_GCCOLLECT);
  } else {
    fe_sandbox_free(sb);
  }
  fe_watch_end(w);
  return s;
}

void ddp_schedule_free(ddp_schedule *s) {
  if (!s) return;
  if (s->bucket_policy) fe_sandbox_free(s->bucket_policy_ctx);
  free(s->source);
  free(s);
}

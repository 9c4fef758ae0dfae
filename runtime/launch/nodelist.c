/* runtime/launch/nodelist.c: Slurm host-list expansion ("gpu[01-03,07],login1"). A list is host
 * patterns separated by commas; a pattern is literal text and bracket groups of comma-separated numbers
 * or ranges (lo-hi, zero padding taken from lo). The list is validated completely (syntax, size, host
 * length) before any host is delivered, so a bad list never yields a partial answer.
 * Why hand-written: the one library that parses this syntax is Slurm's own libslurm (slurm_hostlist_*),
 * which would make ddprun depend on a Slurm installation of the same version to start at all, also under
 * torchrun or mpirun; the grammar is small, and tests/unit/launch/test_launch.c covers it. */
#include "launch.h"
#include "err.h"
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NODELIST_MAX_HOSTS (1L << 20) /* a larger expansion is an error, not an hour-long loop */
#define NODELIST_MAX_DIGITS 9         /* fits a long without overflow checks */

typedef struct nl_range {
  long lo, hi;
  int width; /* digits of lo as written: the zero padding */
} nl_range;

typedef struct nl_ctx {
  const char *list;
  char *err;
  size_t errcap;
  ddp_host_fn fn;
  void *user;
  long delivered;
  bool stopped;
} nl_ctx;

static int nl_fail(nl_ctx *c, const char *p, const char *why) {
  return ddp_fail(c->err, c->errcap, "node list '%s': %s at offset %ld", c->list, why, (long)(p - c->list));
}

static bool nl_literal_char(char ch) {
  return ch && ch != '[' && ch != ']' && ch != ',' && isgraph((unsigned char)ch);
}

/* Parses one number of a bracket group; *p is advanced past it. */
static int nl_number(nl_ctx *c, const char **p, long *v, int *width) {
  const char *s = *p;
  long x = 0;
  int n = 0;
  while (isdigit((unsigned char)s[n])) {
    if (n == NODELIST_MAX_DIGITS) return nl_fail(c, s, "number too long");
    x = x * 10 + (s[n] - '0');
    n++;
  }
  if (!n) return nl_fail(c, s, "expected a number");
  *v = x, *width = n, *p = s + n;
  return 0;
}

/* Parses "lo" or "lo-hi" at *p (inside brackets); *p is left on the ',' or ']' after it. */
static int nl_range_at(nl_ctx *c, const char **p, nl_range *r) {
  const char *start = *p;
  int hw;
  if (nl_number(c, p, &r->lo, &r->width)) return -1;
  r->hi = r->lo;
  if (**p == '-') {
    (*p)++;
    if (nl_number(c, p, &r->hi, &hw)) return -1;
    if (r->hi < r->lo) return nl_fail(c, start, "range goes down");
  }
  if (**p != ',' && **p != ']') return nl_fail(c, *p, **p ? "unexpected character in brackets" : "unclosed '['");
  return 0;
}

/* Validates the group starting at p ('['): its size (hosts) and widest number; returns the position
 * after ']', or NULL. */
static const char *nl_group_check(nl_ctx *c, const char *p, long *size, int *digits) {
  nl_range r;
  *size = 0, *digits = 0;
  p++;
  for (;;) {
    if (nl_range_at(c, &p, &r)) return NULL;
    *size += r.hi - r.lo + 1;
    if (*size > NODELIST_MAX_HOSTS) {
      nl_fail(c, p, "expands to too many hosts");
      return NULL;
    }
    int w = snprintf(NULL, 0, "%0*ld", r.width, r.hi);
    if (w > *digits) *digits = w;
    if (*p == ']') return p + 1;
    p++; /* ',' */
  }
}

/* Validates the whole list: returns 0 or -1 with err. */
static int nl_check(nl_ctx *c) {
  const char *p = c->list;
  long total = 0;
  if (!*p) return nl_fail(c, p, "empty");
  for (;;) {
    const char *item = p;
    long hosts = 1;
    size_t len = 0;
    while (*p && *p != ',') {
      if (*p == '[') {
        long size;
        int digits;
        const char *q = nl_group_check(c, p, &size, &digits);
        if (!q) return -1;
        hosts *= size;
        if (hosts > NODELIST_MAX_HOSTS) return nl_fail(c, p, "expands to too many hosts");
        len += (size_t)digits;
        p = q;
      } else if (nl_literal_char(*p)) {
        len++, p++;
      } else {
        return nl_fail(c, p, *p == ']' ? "unmatched ']'" : "unexpected character");
      }
    }
    if (p == item) return nl_fail(c, p, "empty host name");
    if (len >= DDP_HOST_MAX) return nl_fail(c, item, "host name too long");
    total += hosts;
    if (total > NODELIST_MAX_HOSTS) return nl_fail(c, item, "expands to too many hosts");
    if (!*p) return 0;
    p++; /* ',' */
  }
}

/* Delivers every host of the (validated) pattern [p, end) with `buf[0..len)` already written. */
static void nl_emit(nl_ctx *c, const char *p, char *buf, size_t len) {
  while (*p && *p != ',' && *p != '[') buf[len++] = *p++;
  if (*p != '[') {
    buf[len] = '\0';
    c->delivered++;
    if (c->fn && c->fn(buf, c->user)) c->stopped = true;
    return;
  }
  const char *q = p + 1, *after = p;
  while (*after != ']') after++;
  after++;
  while (!c->stopped) {
    nl_range r;
    (void)nl_range_at(c, &q, &r); /* validated: cannot fail */
    for (long v = r.lo; v <= r.hi && !c->stopped; v++) {
      int w = snprintf(buf + len, DDP_HOST_MAX - len, "%0*ld", r.width, v);
      nl_emit(c, after, buf, len + (size_t)w);
    }
    if (*q == ']') break;
    q++;
  }
}

int ddp_nodelist_expand(const char *list, ddp_host_fn fn, void *ctx, char *err, size_t errcap) {
  nl_ctx c = {.list = list ? list : "", .err = err, .errcap = errcap, .fn = fn, .user = ctx};
  if (nl_check(&c)) return -1;
  char buf[DDP_HOST_MAX];
  const char *p = c.list;
  while (!c.stopped) {
    nl_emit(&c, p, buf, 0);
    while (*p && *p != ',') {
      if (*p == '[')
        while (*p != ']') p++;
      p++;
    }
    if (!*p) break;
    p++;
  }
  return (int)c.delivered;
}

typedef struct nl_first {
  char *host;
  size_t cap;
  bool fits;
} nl_first;

static int nl_take_first(const char *host, void *ctx) {
  nl_first *f = ctx;
  f->fits = strlen(host) < f->cap;
  if (f->fits) memcpy(f->host, host, strlen(host) + 1);
  return 1;
}

int ddp_nodelist_first(const char *list, char *host, size_t cap) {
  nl_first f = {host, cap, false};
  if (ddp_nodelist_expand(list, nl_take_first, &f, NULL, 0) < 1 || !f.fits) return -1;
  return 0;
}

/* base/err.h: the one error idiom of ddpc. Every fallible function takes (char *err, size_t errcap), fills
 * it with one line naming what is wrong (the file, the field, the rank) and returns -1 (or NULL);
 * ddp_fail is the only formatter. The checked allocators are for code that has no way to report an
 * allocation failure upward (the compiler's builders): they end the process with one line naming the
 * call site, as llm.c's mallocCheck does, instead of dereferencing NULL. */
#ifndef DDP_ERR_H
#define DDP_ERR_H
#include <stddef.h>

/* Formats into err (when err && errcap) and returns -1. The result stays one line whatever input it quotes
 * (a Lua error, a JSON parser's excerpt of a file, a key read from one): newlines, carriage returns and tabs
 * become spaces, every other control character (below 0x20, and 0x7f) '?'. */
__attribute__((format(printf, 3, 4))) int ddp_fail(char *err, size_t errcap, const char *fmt, ...);

/* Allocation that cannot fail: on failure prints "<prog>: out of memory (<bytes> bytes) at file:line"
 * and exits with status 1. n == 0 allocates one byte, so the result is never NULL. */
void *ddp_xmalloc_at(size_t n, const char *file, int line);
void *ddp_xcalloc_at(size_t count, size_t size, const char *file, int line);
void *ddp_xrealloc_at(void *p, size_t n, const char *file, int line);
char *ddp_xstrdup_at(const char *s, const char *file, int line);
#define ddp_xmalloc(n) ddp_xmalloc_at((n), __FILE__, __LINE__)
#define ddp_xcalloc(c, s) ddp_xcalloc_at((c), (s), __FILE__, __LINE__)
#define ddp_xrealloc(p, n) ddp_xrealloc_at((p), (n), __FILE__, __LINE__)
#define ddp_xstrdup(s) ddp_xstrdup_at((s), __FILE__, __LINE__)

/* Out of memory while doing what fmt says: one line "<prog>: out of memory <what>", exit 1 (as ddp_x*). */
_Noreturn void ddp_out_of_memory(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program name used in the out-of-memory line ("ddpc" or "ddprun"); set once by main. */
void ddp_set_progname(const char *name);
#endif

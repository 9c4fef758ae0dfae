/* base/vec.h: the one growable-array idiom (as Lua's luaM_growvector). A vector is a pointer, a count and
 * a capacity owned by the caller; ddp_vec_reserve makes room for `need` elements, doubling, with overflow
 * checked. ddp_vec_push_slot returns a pointer to a new zeroed element at the end. */
#ifndef DDP_VEC_H
#define DDP_VEC_H
#include <stddef.h>

/* Makes *v hold at least `need` elements of `elem` bytes (new memory is zeroed); 0, or -1 when out of
 * memory or when the size overflows (then *v and *cap are unchanged). */
int ddp_vec_reserve(void *v, size_t *cap, size_t need, size_t elem);

/* As ddp_vec_reserve, but ends the process with one line on failure (see ddp_xmalloc). */
void ddp_xvec_reserve_at(void *v, size_t *cap, size_t need, size_t elem, const char *file, int line);
#define ddp_xvec_reserve(v, cap, need, elem) ddp_xvec_reserve_at((v), (cap), (need), (elem), __FILE__, __LINE__)

/* Appends one zeroed element to the vector (*v, *n, *cap) and returns it (aborting on out of memory). */
#define DDP_VEC_PUSH(v, n, cap) \
  (ddp_xvec_reserve(&(v), &(cap), (size_t)(n) + 1, sizeof *(v)), &(v)[(n)++])
#endif

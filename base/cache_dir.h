/* base/cache_dir.h: where ddpc and ddprun keep what they cache on disk (compiled kernels, chosen GEMM
 * algorithms): $DDPC_CACHE_DIR, else $XDG_CACHE_HOME/ddpc, else $HOME/.cache/ddpc, created if missing. */
#ifndef DDP_CACHE_DIR_H
#define DDP_CACHE_DIR_H
#include <stddef.h>

/* Writes the directory (created with its parents, optionally with a subdirectory `sub`) into buf and
 * returns buf, or NULL when no variable names one or it cannot be created. */
const char *ddp_cache_dir(const char *sub, char *buf, size_t cap);

#endif

/* base/share_dir.h: the data folders that ship with ddpc (the CUDA templates, the schedule library), found
 * without a source tree. `cmake --install` puts them in <prefix>/share/ddpc/<name>, next to
 * <prefix>/bin/ddpc, so an installed binary finds its own copy from /proc/self/exe; a binary in the build
 * tree has no such folder and uses the source tree's (the path CMake compiles in). */
#ifndef DDP_SHARE_DIR_H
#define DDP_SHARE_DIR_H
#include <stddef.h>

/* The folder `name` ("templates", "schedules") written into buf: `override` when non-empty (an environment
 * variable's value, taken as given); else <folder of the running binary>/../share/ddpc/<name> when that is
 * a folder (the installed copy, which matches the binary, wins over a source tree that may have moved on);
 * else `build_default`. Returns buf (a path that may not exist: the caller's error names it). */
const char *ddp_share_dir(const char *name, const char *override, const char *build_default, char *buf,
                          size_t cap);

/* <folder of the running binary>/../share/ddpc/<name> into buf, whether or not it exists; NULL when
 * /proc/self/exe cannot be read or the path does not fit. */
const char *ddp_installed_dir(const char *name, char *buf, size_t cap);

#endif

/* tests/fuzz/fuzz_util.h: what the fuzz targets share: a private temporary folder (for entry points that
 * take a path), the check that a refusal is one non-empty line, and a loud abort for a broken invariant
 * (libFuzzer and the replay test both report an abort as a failure, with the input that caused it). */
#ifndef DDP_FUZZ_UTIL_H
#define DDP_FUZZ_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* A folder of this process (made on first use under $TMPDIR, else /tmp; removed at exit). */
const char *fuzz_tmp_dir(void);
/* Writes bytes to <fuzz_tmp_dir()>/name (replacing it) and returns the path in a static buffer of this
 * name's slot; aborts when it cannot (the harness is broken, not the code under test). */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);
/* An error message must be one non-empty line: aborts otherwise, naming `who`. */
void fuzz_check_message(const char *who, const char *err);
_Noreturn void fuzz_die(const char *what, const char *detail);
#endif

/* base/args.h: what both command lines (ddpc, ddprun) share: the version, the exit statuses, number
 * parsing that never wraps, saturates or accepts NaN, and the check that an output names no input.
 * Conventions (docs/CLI.md): exit 0 on success, DDP_EXIT_FAILURE (1) on a failure of the work,
 * DDP_EXIT_USAGE (2) on a bad command line; every refusal is one line "<prog>: --opt: ...". */
#ifndef DDP_ARGS_H
#define DDP_ARGS_H
#include <stddef.h>
#include <stdint.h>

#define DDP_VERSION "0.2.0"
#define DDP_EXIT_FAILURE 1
#define DDP_EXIT_USAGE 2

/* Parses `text` as a whole decimal integer in lo..hi (no sign tricks, no spaces, no overflow). On failure
 * -1 with "NAME: 'TEXT' is not an integer in LO..HI" in err. */
int ddp_parse_i64(const char *text, int64_t lo, int64_t hi, const char *name, int64_t *out, char *err,
                  size_t errcap);
/* Parses `text` as a whole finite number in [lo, hi] (NaN, inf, overflow and trailing text refused);
 * lo_open makes the lower bound exclusive. On failure -1 with "NAME: 'TEXT' is not a number in ...". */
int ddp_parse_double(const char *text, double lo, int lo_open, double hi, const char *name, double *out,
                     char *err, size_t errcap);

/* Parses a size in bytes: a number with an optional unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB,
 * GiB, TiB (powers of 1024), e.g. "141GB", "80GiB", "1.5e11"; at least 1 byte, at most 2^60. On failure
 * -1 with "NAME: 'TEXT' is not a size such as 80GiB or 141GB". */
int ddp_parse_bytes(const char *text, const char *name, uint64_t *out, char *err, size_t errcap);

/* A comma list given to option `what` has no empty item ("1,,2", ",1", "1,"): strtok would skip it
 * silently. 0, or -1 with "WHAT: an empty item in 'TEXT'". */
int ddp_check_list(const char *what, const char *text, char *err, size_t errcap);

/* An output path `out` (named `what`, e.g. "-o" or "--metrics") may be written: it names none of the
 * `n` inputs (`inputs[i]` named `names[i]`; NULL entries skipped): neither the same existing file
 * (device and inode) nor, when it does not exist yet, the same path text; and where it exists it is a
 * regular file (or, with allow_stream, also a character device or FIFO, for streams such as /dev/stdout).
 * 0, or -1 with one line. */
int ddp_check_output(const char *what, const char *out, const char *const *inputs, const char *const *names,
                     int n, int allow_stream, char *err, size_t errcap);

/* An output file that does not exist yet can be created: its folder exists and is writable. Checked before
 * anything is written or printed, so a report or a run does not end in a failure to open its output. 0, or
 * -1 with one line ("WHAT PATH: its folder F does not exist"). */
int ddp_check_output_folder(const char *what, const char *path, char *err, size_t errcap);

/* A folder that is made when missing (mkdir -p) can be: its nearest existing part is a writable folder
 * ("WHAT DIR: afile is not a folder"). 0, or -1 with one line. */
int ddp_check_dir_creatable(const char *what, const char *dir, char *err, size_t errcap);

/* The message for getopt_long's '?' (unknown option, or a value given to an option that takes none) or
 * ':' (missing value), for an optstring starting with ':' and opterr = 0. `prog` prefixes the hint:
 * "unknown option '--bogus' (see PROG --help)". */
struct option;
void ddp_getopt_error(int c, char *const *argv, const struct option *longopts, const char *prog, char *err,
                      size_t errcap);
#endif

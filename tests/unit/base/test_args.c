/* tests/unit/base/test_args.c: base/args.c (the command lines' number parsing and output check) and the
 * refusals of base/file.c that the command lines rely on: an atomic write never replaces a device, FIFO
 * or folder, and ddp_read_file refuses a FIFO at once instead of waiting for a writer. */
#include "args.h"
#include "check.h"
#include "file.h"
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/ddp-args-XXXXXX";

static void test_i64(void) {
  char err[256];
  int64_t v = 0;
  CHECK_INT("plain", 0, ddp_parse_i64("42", 1, 100, "--steps", &v, err, sizeof err));
  CHECK_INT("value", 42, v);
  CHECK_INT("negative in range", 0, ddp_parse_i64("-5", -10, 10, "-x", &v, err, sizeof err));
  CHECK_INT("negative value", -5, v);
  CHECK_INT("bounds inclusive", 0, ddp_parse_i64("1000000000", 0, 1000000000, "--steps", &v, err, sizeof err));
  /* what strtoll/atoi let through before: saturation, wrap-around, trailing text, spaces, '+', empty */
  const char *bad[] = {"99999999999999999999", "4294967297", "12abc", " 7", "+7", "", "-", "0x10", "1e3", "nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v = 77;
    CHECK(ddp_parse_i64(bad[i], 1, 4096, "--nproc", &v, err, sizeof err) == -1, "'%s' accepted", bad[i]);
    CHECK_INT("value untouched", 77, v);
  }
  ddp_parse_i64("4294967297", 1, 4096, "--nproc", &v, err, sizeof err);
  CHECK_STR("message", "--nproc: '4294967297' is not an integer in 1..4096", err);
  CHECK(ddp_parse_i64("0", 1, 10, "-j", &v, err, sizeof err) == -1, "below the range");
  CHECK(ddp_parse_i64("11", 1, 10, "-j", &v, err, sizeof err) == -1, "above the range");
}

static void test_double(void) {
  char err[256];
  double v = 0;
  CHECK_INT("plain", 0, ddp_parse_double("989.5", 0, 1, 1e6, "--peak-tflops", &v, err, sizeof err));
  CHECK(v == 989.5, "value %g", v);
  CHECK_INT("exponent", 0, ddp_parse_double("1e3", 0, 1, 1e6, "--peak-tflops", &v, err, sizeof err));
  const char *bad[] = {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e400", "0", "-1", "2e6", "1.5x", "", " 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(ddp_parse_double(bad[i], 0, 1, 1e6, "--peak-tflops", &v, err, sizeof err) == -1, "'%s' accepted", bad[i]);
  ddp_parse_double("nan", 0, 1, 1e6, "--peak-tflops", &v, err, sizeof err);
  CHECK_STR("message", "--peak-tflops: 'nan' is not a number in (0, 1000000]", err);
  CHECK_INT("closed lower bound", 0, ddp_parse_double("0", 0, 0, 1, "x", &v, err, sizeof err));
}

static void test_output(void) {
  char err[512], in[300], out[300], fifo[300];
  snprintf(in, sizeof in, "%s/in.lua", tmpdir);
  snprintf(out, sizeof out, "%s/new.bin", tmpdir);
  snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
  CHECK_INT("write input", 0, ddp_write_atomic(in, "x", 1, err, sizeof err));
  const char *inputs[] = {in, NULL}, *names[] = {"schedule", "token file"};
  CHECK_INT("a new output", 0, ddp_check_output("-o", out, inputs, names, 2, 0, err, sizeof err));
  CHECK_INT("the input itself", -1, ddp_check_output("-o", in, inputs, names, 2, 0, err, sizeof err));
  CHECK_CONTAINS("names the input", err, "is the same file as the schedule");
  char dotted[300];
  snprintf(dotted, sizeof dotted, "%s/./in.lua", tmpdir);
  CHECK_INT("another spelling of the input", -1, ddp_check_output("-o", dotted, inputs, names, 1, 0, err, sizeof err));
  const char *outs[] = {out};
  CHECK_INT("the same new path twice", -1, ddp_check_output("--metrics", out, outs, (const char *[]){"--trace"}, 1, 0,
                                                            err, sizeof err));
  CHECK_CONTAINS("output vs output", err, "is the same file as the --trace");
  CHECK_INT("/dev/full as an atomic output", -1, ddp_check_output("-o", "/dev/full", NULL, NULL, 0, 0, err, sizeof err));
  CHECK_CONTAINS("not regular", err, "/dev/full exists and is not a regular file");
  CHECK_INT("/dev/full as a stream", 0, ddp_check_output("--metrics", "/dev/full", NULL, NULL, 0, 1, err, sizeof err));
  CHECK_INT("a folder", -1, ddp_check_output("--trace", tmpdir, NULL, NULL, 0, 1, err, sizeof err));

  /* the atomic writer refuses to rename over a FIFO (it would replace it), and a reader refuses it at once */
  CHECK_INT("mkfifo", 0, mkfifo(fifo, 0600));
  CHECK_INT("atomic write over a FIFO", -1, ddp_write_atomic(fifo, "x", 1, err, sizeof err));
  CHECK_CONTAINS("atomic message", err, "exists and is not a regular file");
  struct stat st;
  CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still a FIFO");
  alarm(5); /* a read that waits for a writer would block forever: fail instead */
  size_t n = 0;
  CHECK(ddp_read_file(fifo, 1 << 20, &n, err, sizeof err) == NULL, "read a FIFO");
  CHECK_CONTAINS("read message", err, "not a regular file");
  alarm(0);
  unlink(fifo);
  unlink(in);
}

static void test_getopt_error(void) {
  static const struct option lo[] = {{"quiet", no_argument, NULL, 'q'}, {"steps", required_argument, NULL, 's'},
                                     {NULL, 0, NULL, 0}};
  char err[256];
  char *argv1[] = {"prog", "--quiet=1", NULL};
  opterr = 0;
  optind = 1;
  int c = getopt_long(2, argv1, ":q", lo, NULL);
  ddp_getopt_error(c, argv1, lo, "prog", err, sizeof err);
  CHECK_STR("value to a flag", "--quiet takes no value, got '1'", err);
  char *argv2[] = {"prog", "--steps", NULL};
  optind = 1;
  c = getopt_long(2, argv2, ":q", lo, NULL);
  ddp_getopt_error(c, argv2, lo, "prog", err, sizeof err);
  CHECK_STR("missing value", "--steps needs a value", err);
  char *argv3[] = {"prog", "--bogus=3", NULL};
  optind = 1;
  c = getopt_long(2, argv3, ":q", lo, NULL);
  ddp_getopt_error(c, argv3, lo, "prog", err, sizeof err);
  CHECK_STR("unknown", "unknown option '--bogus' (see prog --help)", err);
  char *argv4[] = {"prog", "-x", NULL};
  optind = 1;
  c = getopt_long(2, argv4, ":q", lo, NULL);
  ddp_getopt_error(c, argv4, lo, "prog", err, sizeof err);
  CHECK_STR("unknown short", "unknown option '-x' (see prog --help)", err);
  static const struct option lo2[] = {{"help", no_argument, NULL, 'h'}, {"help-env", no_argument, NULL, 'e'},
                                      {NULL, 0, NULL, 0}};
  char *argv5[] = {"prog", "--he", NULL};
  optind = 1;
  c = getopt_long(2, argv5, ":", lo2, NULL);
  ddp_getopt_error(c, argv5, lo2, "prog", err, sizeof err);
  CHECK_STR("ambiguous", "option '--he' is ambiguous (see prog --help)", err);
}

int main(void) {
  if (!mkdtemp(tmpdir)) return 1;
  test_i64();
  test_double();
  test_output();
  test_getopt_error();
  rmdir(tmpdir);
  return check_report("test_args");
}

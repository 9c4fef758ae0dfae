/* tests/unit/plan/test_inspect.c: `ddpc inspect` of the synthetic plan: every heading, expected rows of each table,
 * rank selection, an empty plan ("none"), and that a plan read back from plan.bin inspects identically. */
#include "inspect.h"
#include "plan_fixture.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *inspect_to_string(const ddp_plan *p, int rank, int *rc) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  *rc = ddp_inspect(p, rank, f);
  fclose(f);
  return buf;
}

static void test_full(const ddp_plan *p, char **out_text) {
  int rc;
  char *s = inspect_to_string(p, -1, &rc);
  CHECK_INT("inspect rc", 0, rc);
  const char *headings[] = {"== summary ==\n",
                            "== tensors ==\n",
                            "== memory ==\n",
                            "== buckets ==\n",
                            "== program rank 0 init ==\n",
                            "== program rank 0 step ==\n",
                            "== program rank 1 init ==\n",
                            "== program rank 1 step ==\n",
                            "== kernels ==\n"};
  for (size_t k = 0; k < sizeof headings / sizeof headings[0]; k++) CHECK_CONTAINS("heading", s, headings[k]);
  /* headings in order */
  const char *at = s;
  for (size_t k = 0; k < sizeof headings / sizeof headings[0] && at; k++) {
    const char *next = strstr(at, headings[k]);
    CHECK(next, "heading \"%.*s\" out of order", (int)strlen(headings[k]) - 1, headings[k]);
    at = next;
  }
  /* summary */
  CHECK_CONTAINS("schedule path", s, "schedule_path          schedules/test.lua\n");
  CHECK_CONTAINS("source lines", s, "schedule_source        (3 lines)\n");
  CHECK_LACKS("source not printed", s, "return schedule {}");
  CHECK_CONTAINS("world", s, "world                  2\n");
  CHECK_CONTAINS("decoded model kind", s, "model_kind             1 (mlp)\n");
  CHECK_CONTAINS("decoded tensor id", s, "loss_tensor            8 (loss)\n");
  CHECK_CONTAINS("float field", s, "lr                     0.0003\n");
  CHECK_CONTAINS("null string", s, "data_path              -\n");
  /* tensors */
  CHECK_CONTAINS("tensor header", s, "id  name");
  CHECK_CONTAINS("param flags", s, "param,trainable,persistent");
  CHECK_CONTAINS("state name", s, "layers.0.weight");
  CHECK_CONTAINS("view of", s, "grad_bucket+128");
  CHECK_CONTAINS("shape", s, "[4,8]");
  /* memory: 512 + 256 + 256 + 1024 + 256 + 0 */
  CHECK_CONTAINS("memory header", s, "activations");
  CHECK_CONTAINS("memory total", s, "2304  2.25 KiB");
  /* buckets */
  CHECK_CONTAINS("bucket members in order", s, "w2, w1\n");
  CHECK_CONTAINS("comm bytes", s, "predicted communication per step: 8192 bytes (8.00 KiB)");
  /* programs */
  CHECK_CONTAINS("stream group", s, "-- stream 1 (comm):");
  CHECK_CONTAINS("program header", s, "index stream  opcode");
  CHECK_CONTAINS("gemm operands", s, "M=2 N=8 K=4 transA=0 transB=0 alpha=1 beta=0 A=x:f32 B=w1:f32 C=- D=h:f32");
  CHECK_CONTAINS("kernel operands", s, "RELU_FWD kernel=0 entry=ddp_relu_fwd grid=(1,1,1) block=(256,1,1) smem=0 p0=h:f32 p1=h+32:f32");
  CHECK_CONTAINS("all reduce", s, "count=48 dtype=f32 redop=sum send=grad_bucket recv=grad_bucket comm=0");
  CHECK_CONTAINS("reduce scatter", s, "redop=avg");
  CHECK_CONTAINS("send", s, "peer=1 buf=w2.grad comm=0");
  CHECK_CONTAINS("range", s, "kind=forward name=forward");
  CHECK_CONTAINS("event", s, "event=1");
  CHECK_CONTAINS("timer", s, "slot=1");
  CHECK_CONTAINS("load batch", s, "inputs=x:f32 targets=y:f32");
  CHECK_CONTAINS("init tensor", s, "tensor=w1:f32 init=trunc_normal elements=32 rng=0 fan_in=8 f0=0.25 f1=3");
  CHECK_CONTAINS("broadcast", s, "root=0");
  CHECK_CONTAINS("name and layer", s, "# layers.0 (layer 0)");
  /* kernels */
  CHECK_CONTAINS("kernel row", s, "RELU_FWD");
  CHECK_CONTAINS("kernel hash", s, "0123456789abcdef");
  CHECK_CONTAINS("kernel spec on one line", s, "#define N 16; #define BLOCK 256\n");
  CHECK_CONTAINS("module totals", s, "modules: 1, total CUBIN bytes: 100");
  CHECK_CONTAINS("kernel op synopsis", s, "== kernel ops ==\nRELU_FWD               y = max(x, 0)\n");
  *out_text = s;
}

static void test_rank_selection(const ddp_plan *p) {
  int rc;
  char *s = inspect_to_string(p, 1, &rc);
  CHECK_INT("rank 1 rc", 0, rc);
  CHECK_CONTAINS("rank 1 listed", s, "== program rank 1 step ==");
  CHECK_LACKS("rank 0 not listed", s, "== program rank 0 step ==");
  CHECK_CONTAINS("kernels still listed", s, "== kernels ==");
  free(s);
  s = inspect_to_string(p, 2, &rc);
  CHECK_INT("rank out of range", -1, rc);
  CHECK_STR("nothing printed", "", s);
  free(s);
}

static void test_empty(void) {
  ddp_plan *p = ddp_plan_new();
  p->meta.world = 1;
  p->ranks = calloc(1, sizeof *p->ranks);
  int rc;
  char *s = inspect_to_string(p, -1, &rc);
  CHECK_INT("empty rc", 0, rc);
  CHECK_CONTAINS("empty tensors", s, "== tensors ==\nnone\n");
  CHECK_CONTAINS("empty buckets", s, "== buckets ==\nnone\n");
  CHECK_CONTAINS("empty init", s, "== program rank 0 init ==\nnone\n");
  CHECK_CONTAINS("empty step", s, "== program rank 0 step ==\nnone\n");
  CHECK_CONTAINS("empty kernels", s, "== kernels ==\nnone\n");
  CHECK_CONTAINS("empty memory row", s, "    0");
  free(s);
  ddp_plan_free(p);
}

static void test_read_back(const ddp_plan *p, const char *expected) {
  char path[256], err[512] = "";
  const char *base = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/ddpc-inspect-%ld.bin", base && *base ? base : "/tmp", (long)getpid());
  CHECK_INT("write", 0, ddp_plan_write(p, path, err, sizeof err));
  ddp_plan *q = ddp_plan_read(path, err, sizeof err);
  unlink(path);
  if (!CHECK(q, "read back: %s", err)) return;
  int rc;
  char *s = inspect_to_string(q, -1, &rc);
  CHECK_INT("read-back listing identical", 0, strcmp(expected, s));
  free(s);
  ddp_plan_free(q);
}

int main(int argc, char **argv) {
  ddp_plan *p = fixture_plan();
  char *text = NULL;
  test_full(p, &text);
  test_rank_selection(p);
  test_empty();
  test_read_back(p, text);
  if (argc > 1 && strcmp(argv[1], "--print") == 0) fputs(text, stdout);
  free(text);
  ddp_plan_free(p);
  return check_report("test_inspect");
}

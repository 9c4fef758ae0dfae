/* compiler/frontend/data.c: schedule.data, a plain table. Transformers: {global_batch, tokens, seed} with
 * tokens "random", "pattern" or a token file (uint16, resolved against the schedule's folder and stored
 * as an absolute path). MLPs: {global_batch, rows, seed}, a random dense dataset of `rows` rows. */
#include "fe.h"
#include "plan.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/stat.h>

static void fe_token_file(fe_conv *c, const fe_tab *d, const char *tokens) {
  ddp_schedule *s = c->s;
  char path[4200];
  if (tokens[0] == '/') snprintf(path, sizeof path, "%s", tokens);
  else snprintf(path, sizeof path, "%s/%s", c->sb->dir, tokens);
  struct stat st;
  if (stat(path, &st) != 0) fe_fail(c, d, "tokens", ": file not found: %s", path);
  if (!S_ISREG(st.st_mode)) fe_fail(c, d, "tokens", ": not a regular file: %s", path);
  if (access(path, R_OK) != 0) /* ddprun would refuse it at start: say so now */
    fe_fail(c, d, "tokens", ": cannot be read: %s (%s)", path, strerror(errno));
  if (st.st_size % 2) fe_fail(c, d, "tokens", ": file has an odd size (%lld bytes), not uint16 tokens: %s",
                              (long long)st.st_size, path);
  if (st.st_size < 2 * (s->context + 1))
    fe_fail(c, d, "tokens", ": file holds %lld tokens, fewer than context + 1 = %lld: %s",
            (long long)(st.st_size / 2), (long long)(s->context + 1), path);
  char real[PATH_MAX];
  if (!realpath(path, real)) fe_fail(c, d, "tokens", ": file cannot be resolved: %s", path);
  if (strlen(real) >= sizeof s->data_path) fe_fail(c, d, "tokens", ": path is too long: %s", real);
  memcpy(s->data_path, real, strlen(real) + 1);
  s->data_kind = DATA_TOKEN_FILE;
}

void fe_data(fe_conv *c, const fe_tab *root) {
  static const char *const lm_fields[] = {"global_batch", "tokens", "seed", NULL};
  static const char *const mlp_fields[] = {"global_batch", "rows", "seed", NULL};
  ddp_schedule *s = c->s;
  bool mlp = s->model_kind == MODEL_MLP;
  fe_tab d;
  if (!fe_sub(c, root, "data", &d, "a table {global_batch = ..., ...}")) fe_fail(c, root, "data", "is required");
  if (fe_kind_of(c->L, d.idx) >= 0) fe_bad(c, root, "data", "must be a plain table {global_batch = ..., ...}");
  snprintf(d.what, sizeof d.what, "%s", mlp ? "data for an MLP" : "data for a transformer");
  fe_known(c, &d, mlp ? mlp_fields : lm_fields);
  fe_required(c, &d, "global_batch");
  s->global_batch = fe_int_in(c, &d, "global_batch", 0, 1, 1 << 24);
  if (s->stages) fe_pipeline_batch(c, root, &d); /* the replicas and microbatches split it, not the ranks */
  else if (s->mesh_tensor > 1 && s->global_batch % s->mesh_data)
    fe_bad(c, &d, "global_batch", "must be divisible by mesh.data (%d): the tensor ranks of a replica share its "
           "sequences", s->mesh_data);
  else if (s->global_batch % s->ranks && s->mesh_tensor == 1)
    fe_bad(c, &d, "global_batch", "must be divisible by parallel.ranks (%d)", s->ranks);
  int64_t seed = (int64_t)s->seed;
  fe_int(c, &d, "seed", &seed, "a non-negative integer");
  if (seed < 0) fe_bad(c, &d, "seed", "must be a non-negative integer");
  s->data_seed = (uint64_t)seed;
  if (mlp) {
    s->data_kind = DATA_RANDOM_DENSE;
    s->data_rows = fe_int_in(c, &d, "rows", s->global_batch, 1, FE_MAX_ELEMS);
    if (s->data_rows < s->global_batch)
      fe_bad(c, &d, "rows", "must be at least data.global_batch (%lld): a step takes global_batch rows",
             (long long)s->global_batch);
    return;
  }
  char tokens[1024] = "random";
  fe_str(c, &d, "tokens", tokens, sizeof tokens, "\"random\", \"pattern\" or the path of a uint16 token file");
  if (strcmp(tokens, "random") == 0) s->data_kind = DATA_RANDOM_TOKENS;
  else if (strcmp(tokens, "pattern") == 0) s->data_kind = DATA_PATTERN_TOKENS;
  else if (!tokens[0]) fe_bad(c, &d, "tokens", "must be \"random\", \"pattern\" or the path of a uint16 token file");
  else fe_token_file(c, &d, tokens);
}

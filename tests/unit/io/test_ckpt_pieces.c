/* tests/unit/io/test_ckpt_pieces.c: checkpoints of sharded plans (runtime/io/ckpt_plan.c, checkpoint.c) on
 * hand-built plans whose parameters are TF_SHAPE_ONLY and whose masters and moments are TF_PIECE views of
 * per-rank shards, split at odd element boundaries, next to an unsharded parameter ("norm.weight") that every
 * rank holds whole; ranks run as threads over the fake executor (ckpt_fake.h).
 * Every state-dict element gets a value from its name and index (value()), so each layout is filled and
 * checked independently of the code under test:
 *   - the files a 2-rank and a 3-rank piece plan save (every rank writing its range of one file), a 1-rank
 *     plan of pieces (rank 0 alone) and a 2-rank plan whose w is whole but whose moments are pieces (the
 *     optimizer sharding's shape) are byte-identical to the unsharded plan's;
 *   - a checkpoint loads into any other layout (2 -> 3 ranks, 2 -> unsharded, unsharded -> 2, 3 -> 1), every
 *     rank getting exactly its own elements and nothing else written;
 *   - ddp_ckpt_save_step / ddp_ckpt_resume (MANIFEST, rename) across layouts;
 *   - a failing rank fails the save on every rank and leaves the previous files and no temporary;
 *   - bad plans (overlapping pieces, a gap, a piece beyond its tensor, a piece on a rank the run lacks, a
 *     shape-only parameter without pieces, a piece of another dtype) and a checkpoint of another shape: one
 *     line each, on save and on load, with the executor untouched. */
#include "checkpoint.h"
#include "ckpt_fake.h"
#include "safetensors.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"

/* Both files of checkpoint folders a and b, byte for byte. */
static bool same_files(const char *a, const char *b) {
  const char *names[] = {"model.safetensors", "optimizer.safetensors"};
  bool same = true;
  for (int k = 0; k < 2; k++) {
    char pa[600], pb[600];
    size_t na, nb;
    snprintf(pa, sizeof pa, "%s/%s", a, names[k]);
    snprintf(pb, sizeof pb, "%s/%s", b, names[k]);
    uint8_t *x = slurp(pa, &na), *y = slurp(pb, &nb);
    same = same && x && y && na == nb && na > 0 && memcmp(x, y, na) == 0;
    free(x);
    free(y);
  }
  return same;
}

/* ---- the plans ------------------------------------------------------------------------------------------- */

static const char *W = "layers.0.ffn.w1.weight", *B = "layers.0.ffn.w1.bias", *N = "norm.weight";
static const char *SUFFIX[3] = {"", ".exp_avg", ".exp_avg_sq"};
static const uint64_t OPT_BASE[3] = {0, 0, 1024}; /* offsets of flat.params.shard, flat.exp_avg, flat.exp_avg_sq */

/* The norm parameter every rank holds whole, its moments, the scalars and a batch tensor. */
static void add_common(ddp_plan *p, bool with_norm) {
  if (with_norm) {
    fake_add_tensor(p, N, N, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, 1024, 1, 3, 0);
    fake_add_tensor(p, "norm.weight.exp_avg", N, TF_OPT_M, DT_F32, ARENA_OPT, 2048, 1, 3, 0);
    fake_add_tensor(p, "norm.weight.exp_avg_sq", N, TF_OPT_V, DT_F32, ARENA_OPT, 2112, 1, 3, 0);
  }
  p->meta.scalars_tensor =
      fake_add_tensor(p, "optimizer.scalars", NULL, TF_SCALARS | TF_PERSISTENT, DT_F32, ARENA_IO, 0, 1, 8, 0);
  p->meta.tokens_tensor = fake_add_tensor(p, "batch.tokens", NULL, TF_TOKENS, DT_I32, ARENA_IO, 256, 1, 16, 0);
}

/* Unsharded: w [4, 3] and b [5] as views of flat.params and of the flat moments, as the compiler lays them out. */
static ddp_plan *plain_plan(int world) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup("schedules/tiny.lua");
  p->meta.world = world;
  int32_t fp = fake_add_tensor(p, "flat.params", NULL, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, 0, 1, 32, 0);
  int32_t fm = fake_add_tensor(p, "flat.exp_avg", NULL, TF_OPT_M, DT_F32, ARENA_OPT, 0, 1, 32, 0);
  int32_t fv = fake_add_tensor(p, "flat.exp_avg_sq", NULL, TF_OPT_V, DT_F32, ARENA_OPT, 1024, 1, 32, 0);
  const char *names[2] = {W, B};
  int64_t d0[2] = {4, 5}, d1[2] = {3, 0}, at[2] = {0, 12};
  char nm[128];
  for (int k = 0; k < 2; k++) {
    int nd = d1[k] ? 2 : 1;
    int32_t t = fake_add_tensor(p, names[k], names[k], TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM,
                                (uint64_t)at[k] * 4, nd, d0[k], d1[k]);
    p->tensors[t].base = fp, p->tensors[t].view = (uint64_t)at[k] * 4;
    for (int j = 1; j < 3; j++) {
      snprintf(nm, sizeof nm, "%s%s", names[k], SUFFIX[j]);
      int32_t m = fake_add_tensor(p, nm, names[k], j == 1 ? TF_OPT_M : TF_OPT_V, DT_F32, ARENA_OPT,
                                  OPT_BASE[j] + (uint64_t)at[k] * 4, nd, d0[k], d1[k]);
      p->tensors[m].base = j == 1 ? fm : fv, p->tensors[m].view = (uint64_t)at[k] * 4, p->tensors[m].param = t;
    }
  }
  add_common(p, true);
  return p;
}

/* One piece: `count` elements from `first`, on `rank`. */
typedef struct piece {
  int rank;
  int64_t first, count;
} piece;
#define MAXP 6
/* How the pieces of w and b lie, for the master (kind 0) and the moments (kind 1 exp_avg, 2 exp_avg_sq; a
 * kind with no pieces listed takes the master's). */
typedef struct split {
  int world;
  piece w[3][MAXP], b[3][MAXP];
  int nw[3], nb[3];
  int64_t b_len;      /* the bias's elements (5) */
  int dtype_w0;       /* dtype of w's first master piece (0: DT_F32) */
  bool no_norm;
  bool w_whole;       /* w is a real tensor every rank holds; only its moments are pieces (optimizer sharding) */
} split;

/* Shape-only w and b; every piece a 1-D view of its rank's shard of its kind, packed in order per rank. */
static ddp_plan *piece_plan(const split *s) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup("schedules/tiny.lua");
  p->meta.world = s->world;
  static const char *base_name[3] = {"flat.params.shard", "flat.exp_avg", "flat.exp_avg_sq"};
  static const uint32_t base_flags[3] = {TF_PARAM | TF_TRAINABLE, TF_OPT_M, TF_OPT_V};
  int32_t base[3];
  for (int k = 0; k < 3; k++)
    base[k] = fake_add_tensor(p, base_name[k], NULL, base_flags[k] | TF_PERSISTENT, DT_F32, k ? ARENA_OPT : ARENA_PARAM,
                              OPT_BASE[k], 1, 64, 0);
  int32_t wp = s->w_whole
                   ? fake_add_tensor(p, W, W, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, 1536, 2, 4, 3)
                   : fake_add_tensor(p, W, W, TF_PARAM | TF_TRAINABLE | TF_SHAPE_ONLY, DT_F32, ARENA_PARAM, 0, 2, 4, 3);
  int32_t bp =
      fake_add_tensor(p, B, B, TF_PARAM | TF_TRAINABLE | TF_SHAPE_ONLY, DT_F32, ARENA_PARAM, 0, 1, s->b_len, 0);
  int64_t cursor[3][FAKE_MAX_RANKS] = {{0}};
  char nm[160];
  for (int k = 0; k < 3; k++)
    for (int q = 0; q < 2; q++) {
      if (k == 0 && q == 0 && s->w_whole) continue;
      int kk = (q ? s->nb[k] : s->nw[k]) ? k : 0;
      const piece *v = q ? s->b[kk] : s->w[kk];
      int n = q ? s->nb[kk] : s->nw[kk];
      const char *pn = q ? B : W;
      for (int j = 0; j < n; j++) {
        int dt = (k == 0 && q == 0 && j == 0 && s->dtype_w0) ? s->dtype_w0 : DT_F32;
        int64_t at = cursor[k][v[j].rank];
        cursor[k][v[j].rank] += v[j].count;
        snprintf(nm, sizeof nm, "%s%s.piece%d", pn, SUFFIX[k], j);
        uint32_t fl = (k == 0 ? TF_PARAM | TF_TRAINABLE : k == 1 ? TF_OPT_M : TF_OPT_V) | TF_PIECE;
        int32_t t = fake_add_tensor(p, nm, pn, fl, dt, k ? ARENA_OPT : ARENA_PARAM, OPT_BASE[k] + (uint64_t)at * 4, 1,
                                    v[j].count, 0);
        ddp_tensor *x = &p->tensors[t];
        x->base = base[k], x->view = (uint64_t)at * 4, x->param = q ? bp : wp;
        x->piece_rank = v[j].rank, x->piece_first = v[j].first;
      }
    }
  add_common(p, !s->no_norm);
  return p;
}

/* 2 ranks: w split at element 7 (odd), b entirely on rank 1; the moments split like the masters. */
static split split2(void) {
  split s = {.world = 2, .b_len = 5};
  s.w[0][0] = (piece){0, 0, 7}, s.w[0][1] = (piece){1, 7, 5}, s.nw[0] = 2;
  s.b[0][0] = (piece){1, 0, 5}, s.nb[0] = 1;
  return s;
}

/* 3 ranks: w in four pieces (rank 2 holds two), b across ranks 0 and 2; exp_avg_sq of w split otherwise. */
static split split3(void) {
  split s = {.world = 3, .b_len = 5};
  s.w[0][0] = (piece){2, 0, 5}, s.w[0][1] = (piece){0, 5, 1}, s.w[0][2] = (piece){1, 6, 3},
  s.w[0][3] = (piece){2, 9, 3};
  s.nw[0] = 4;
  s.b[0][0] = (piece){0, 0, 2}, s.b[0][1] = (piece){2, 2, 3}, s.nb[0] = 2;
  s.w[2][0] = (piece){1, 0, 11}, s.w[2][1] = (piece){0, 11, 1}, s.nw[2] = 2;
  return s;
}

/* 2 ranks, w whole on every rank and its moments split at element 5 (the optimizer sharding's shape). */
static split split2_whole(void) {
  split s = split2();
  s.w_whole = true;
  s.w[0][0] = (piece){0, 0, 5}, s.w[0][1] = (piece){1, 5, 7};
  return s;
}

/* 1 rank holding every piece. */
static split split1(void) {
  split s = {.world = 1, .b_len = 5};
  s.w[0][0] = (piece){0, 0, 3}, s.w[0][1] = (piece){0, 3, 9}, s.nw[0] = 2;
  s.b[0][0] = (piece){0, 0, 5}, s.nb[0] = 1;
  return s;
}

/* ---- values: element i of state-dict tensor `key` ----------------------------------------------------------- */

static float value(const char *key, uint64_t i) {
  uint32_t h = 2166136261u;
  for (const char *c = key; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
  return (float)(h % 997) + (float)i * 0.25f + 0.125f;
}

/* The state-dict key of tensor t ("" for none). */
static const char *key_of(const ddp_tensor *t, char *buf, size_t cap) {
  int k = (t->flags & TF_OPT_M) ? 1 : (t->flags & TF_OPT_V) ? 2 : 0;
  if (t->flags & TF_SCALARS) return "optimizer.scalars";
  if (!t->state_name || (t->flags & TF_SHAPE_ONLY)) return "";
  if (k == 0 && !(t->flags & TF_PARAM)) return "";
  snprintf(buf, cap, "%s%s", t->state_name, SUFFIX[k]);
  return buf;
}

/* Does rank r of a world-rank run hold tensor t (a whole state tensor, or its own piece)? A piece also lives
 * on the data replicas of its rank where the mesh replicates it (docs/CHECKPOINTS.md): rank = (d x S + s) x T +
 * t, M = S x T > 1, world > M and every piece of the plan on a rank < M; then rank r holds piece_rank r % M. */
static bool held(const ddp_plan *p, const ddp_tensor *t, int r, int world) {
  char b[160];
  if (!*key_of(t, b, sizeof b)) return false;
  if (!(t->flags & TF_PIECE) || t->piece_rank == r) return true;
  int64_t m =
      (p->meta.pipe_stages > 1 ? p->meta.pipe_stages : 1) * (p->meta.tensor_parallel > 1 ? p->meta.tensor_parallel : 1);
  bool share = m > 1 && world > m;
  for (uint32_t i = 0; i < p->ntensors && share; i++)
    share = !(p->tensors[i].flags & TF_PIECE) || p->tensors[i].piece_rank < m;
  return share && r % m == t->piece_rank;
}

/* Element e of tensor t: its index in the flattened state-dict tensor (a strided piece: run e / len, at
 * piece_first + run x piece_stride). */
static uint64_t flat_index(const ddp_tensor *t, uint64_t e) {
  if (!(t->flags & TF_PIECE) || t->piece_runs <= 1) return (uint64_t)t->piece_first + e;
  uint64_t len = ddp_tensor_numel(t) / (uint64_t)t->piece_runs;
  return (uint64_t)t->piece_first + e / len * (uint64_t)t->piece_stride + e % len;
}

/* Fills what rank f holds with value(). */
static void fill(fake *f) {
  const ddp_plan *p = f->x.plan;
  char b[160];
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    if (!held(p, t, f->x.rank, f->x.world)) continue;
    const char *key = key_of(t, b, sizeof b);
    for (uint64_t e = 0; e < ddp_tensor_numel(t); e++) {
      float v = value(key, flat_index(t, e));
      memcpy(f->arena[t->arena] + t->offset + e * 4, &v, 4);
    }
  }
}

/* Every element rank f holds has its value(); every other byte of its arenas is still 0, and f was written
 * exactly once per tensor it holds. Returns the number of differences (printed, at most 5). */
static int verify(const fake *f, const char *what) {
  const ddp_plan *p = f->x.plan;
  char b[160];
  int bad = 0, held_n = 0;
  uint8_t *mark[ARENA_COUNT];
  for (int a = 0; a < ARENA_COUNT; a++) mark[a] = calloc(1, f->bytes[a] + 1);
  for (uint32_t i = 0; i < p->ntensors; i++) {
    const ddp_tensor *t = &p->tensors[i];
    if (!held(p, t, f->x.rank, f->x.world)) continue;
    held_n++;
    const char *key = key_of(t, b, sizeof b);
    for (uint64_t e = 0; e < ddp_tensor_numel(t); e++) {
      float want = value(key, flat_index(t, e)), got;
      memcpy(&got, f->arena[t->arena] + t->offset + e * 4, 4);
      memset(mark[t->arena] + t->offset + e * 4, 1, 4);
      if (got != want && bad++ < 5)
        fprintf(stderr, "  %s: rank %d: %s[%llu] (tensor %s) is %g, expected %g\n", what, f->x.rank, key,
                (unsigned long long)flat_index(t, e), t->name, (double)got, (double)want);
    }
  }
  for (int a = 0; a < ARENA_COUNT; a++) {
    for (uint64_t k = 0; k < f->bytes[a]; k++)
      if (!mark[a][k] && f->arena[a][k] && bad++ < 5)
        fprintf(stderr, "  %s: rank %d: byte %llu of the %s arena written, no tensor of the rank holds it\n", what,
                f->x.rank, (unsigned long long)k, ddp_arena_name(a));
    free(mark[a]);
  }
  /* views of one another (unsharded: flat.params under its parameter views) are fine; pieces are written once */
  if (f->writes != held_n && bad++ < 5)
    fprintf(stderr, "  %s: rank %d: %d writes, it holds %d tensors\n", what, f->x.rank, f->writes, held_n);
  return bad;
}

/* world fakes of plan p, zeroed, or filled with value() */
static void make_ranks(const ddp_plan *p, int world, fake **f, bool filled) {
  for (int r = 0; r < world; r++) {
    f[r] = fake_new(p, r, world, 0);
    if (filled) fill(f[r]);
  }
}

static void free_ranks(fake **f, int world) {
  for (int r = 0; r < world; r++) fake_free(f[r]);
}

static bool all_ok(const fake_result *res, int world, const char *what) {
  bool ok = true;
  for (int r = 0; r < world; r++)
    if (res[r].rc != 0) {
      fprintf(stderr, "  %s: rank %d: %s\n", what, r, res[r].err);
      ok = false;
    }
  return ok;
}

/* ---- tests ------------------------------------------------------------------------------------------------- */

/* Saves of the unsharded plan (rank 0), the 2- and 3-rank piece plans (every rank) and the 1-rank piece plan
 * of the same values: the same bytes. */
static void test_same_files(void) {
  fake_result res[FAKE_MAX_RANKS];
  fake *f[FAKE_MAX_RANKS];
  ddp_plan *u = plain_plan(2);
  make_ranks(u, 2, f, true);
  const char *du = tmp_path("plain");
  fake_run(f, 2, FAKE_SAVE, du, 9, res);
  CHECK(all_ok(res, 2, "plain save"), "unsharded save");
  free_ranks(f, 2);
  ddp_plan_free(u);

  split ss[4] = {split2(), split3(), split1(), split2_whole()};
  const char *dirs[4] = {tmp_path("pieces2"), tmp_path("pieces3"), tmp_path("pieces1"), tmp_path("pieces2w")};
  for (int k = 0; k < 4; k++) {
    ddp_plan *p = piece_plan(&ss[k]);
    int w = ss[k].world;
    make_ranks(p, w, f, true);
    fake_run(f, w, FAKE_SAVE, dirs[k], 9, res);
    CHECK(all_ok(res, w, "piece save"), "%d-rank piece save", w);
    CHECK(same_files(du, dirs[k]), "the %d-rank piece plan's files are the unsharded plan's, byte for byte", w);
    CHECK(count_files(dirs[k], "safetensors") == 2, "%d ranks: two files", w);
    free_ranks(f, w);
    ddp_plan_free(p);
  }
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary left");

  /* the file holds the full shapes under the state-dict names */
  char path[600];
  char err[512];
  snprintf(path, sizeof path, "%s/model.safetensors", dirs[0]);
  ddp_st_file *sf = ddp_st_open(path, err, sizeof err);
  const ddp_st_tensor *t = sf ? ddp_st_find(sf, W) : NULL;
  CHECK(sf && sf->ntensors == 3 && t && t->ndim == 2 && t->shape[0] == 4 && t->shape[1] == 3, "model shapes");
  float v;
  if (t) memcpy(&v, (const uint8_t *)ddp_st_data(sf, t) + 7 * 4, 4);
  CHECK(t && v == value(W, 7), "element 7 of w (rank 1's first) in place");
  ddp_st_close(sf);
}

/* Loads each saved folder into other layouts; every rank gets exactly its elements. */
static void load_into(const char *dir, ddp_plan *p, int world, const char *what) {
  fake *f[FAKE_MAX_RANKS];
  fake_result res[FAKE_MAX_RANKS];
  make_ranks(p, world, f, false);
  fake_run(f, world, FAKE_LOAD, dir, 0, res);
  if (CHECK(all_ok(res, world, what), "%s: load", what))
    for (int r = 0; r < world; r++) {
      CHECK(res[r].steps == 9, "%s: rank %d: step", what, r);
      CHECK(verify(f[r], what) == 0, "%s: rank %d holds exactly its elements", what, r);
    }
  free_ranks(f, world);
  ddp_plan_free(p);
}

static void test_load_across(void) {
  split s2 = split2(), s3 = split3(), s1 = split1();
  load_into(tmp_path("pieces2"), piece_plan(&s3), 3, "2 ranks -> 3 ranks");
  load_into(tmp_path("pieces2"), plain_plan(1), 1, "2 ranks -> unsharded, 1 rank");
  load_into(tmp_path("pieces2"), plain_plan(2), 2, "2 ranks -> unsharded, 2 ranks");
  load_into(tmp_path("plain"), piece_plan(&s2), 2, "unsharded -> 2 ranks");
  load_into(tmp_path("pieces3"), piece_plan(&s1), 1, "3 ranks -> 1 rank of pieces");
  load_into(tmp_path("pieces1"), piece_plan(&s3), 3, "1 rank of pieces -> 3 ranks");
  split s2w = split2_whole();
  load_into(tmp_path("pieces3"), piece_plan(&s2w), 2, "3 ranks -> 2 ranks, whole master, moments in pieces");
  load_into(tmp_path("pieces2w"), piece_plan(&s3), 3, "whole master, moments in pieces -> 3 ranks");
}

/* The checkpoint folder (MANIFEST, rename, resume) with pieces. */
static void test_store(void) {
  fake *f[FAKE_MAX_RANKS];
  fake_result res[FAKE_MAX_RANKS];
  split s2 = split2(), s3 = split3();
  ddp_plan *p = piece_plan(&s2);
  make_ranks(p, 2, f, true);
  const char *root = tmp_path("store");
  fake_run(f, 2, FAKE_SAVE_STEP, root, 9, res);
  CHECK(all_ok(res, 2, "save_step"), "save_step with pieces");
  free_ranks(f, 2);
  ddp_plan_free(p);
  char path[600];
  snprintf(path, sizeof path, "%s/step-000009/MANIFEST", root);
  CHECK(access(path, F_OK) == 0, "MANIFEST written");
  CHECK(same_files(tmp_path("plain"), tmp_path("store/step-000009")), "the step folder's files");
  CHECK(count_files(root, ".tmp") == 0, "no temporary left");

  p = piece_plan(&s3);
  make_ranks(p, 3, f, false);
  fake_run(f, 3, FAKE_RESUME, root, 0, res);
  if (CHECK(all_ok(res, 3, "resume"), "resume on 3 ranks"))
    for (int r = 0; r < 3; r++)
      CHECK(res[r].steps == 9 && verify(f[r], "resume on 3 ranks") == 0, "rank %d resumed", r);
  free_ranks(f, 3);
  ddp_plan_free(p);
}

/* Rank 1 cannot read one of its pieces: every rank fails, the previous files stay, no temporary is left. */
static void test_failing_rank(void) {
  fake *f[FAKE_MAX_RANKS];
  fake_result res[FAKE_MAX_RANKS];
  split s2 = split2();
  ddp_plan *p = piece_plan(&s2);
  make_ranks(p, 2, f, true);
  const char *dir = tmp_path("pieces2");
  f[1]->fail_read = ddp_plan_find_tensor(p, "layers.0.ffn.w1.bias.exp_avg.piece0");
  f[0]->arena[ARENA_PARAM][1024] ^= 0x40; /* the new save would differ */
  fake_run(f, 2, FAKE_SAVE, dir, 10, res);
  CHECK(res[0].rc == -1 && res[1].rc == -1, "both ranks fail");
  CHECK_CONTAINS("rank 1's error", res[1].err, "fake: cannot read layers.0.ffn.w1.bias.exp_avg.piece0");
  CHECK_CONTAINS("rank 0's error", res[0].err, "checkpoint: writing the checkpoint files failed on 1 other rank(s)");
  CHECK(same_files(tmp_path("plain"), dir), "the previous files are intact");
  CHECK(count_files(tmpdir, ".tmp.") == 0, "no temporary left");
  free_ranks(f, 2);
  ddp_plan_free(p);
}

/* A bad plan: the save fails on every rank with `msg` (one line), writing nothing; the load of a good
 * checkpoint fails with it too, leaving the executor untouched. */
static void expect_bad_plan(const char *what, ddp_plan *p, int w, const char *good_dir, const char *msg) {
  fake *f[FAKE_MAX_RANKS];
  fake_result res[FAKE_MAX_RANKS];
  make_ranks(p, w, f, true);
  char dir[300];
  snprintf(dir, sizeof dir, "bad-%d", (int)(strlen(what) * 31 + (size_t)what[0]));
  fake_run(f, w, FAKE_SAVE, tmp_path(dir), 1, res);
  for (int r = 0; r < w; r++) {
    CHECK(res[r].rc == -1, "%s: rank %d's save fails", what, r);
    CHECK_CONTAINS(what, res[r].err, msg);
    CHECK(strchr(res[r].err, '\n') == NULL, "%s: one line", what);
  }
  CHECK(count_files(tmp_path(dir), "safetensors") == 0, "%s: nothing written", what);
  free_ranks(f, w);
  make_ranks(p, w, f, false);
  fake *before = fake_new(p, 0, w, 0);
  fake_run(f, w, FAKE_LOAD, tmp_path(good_dir), 0, res);
  CHECK(res[0].rc == -1, "%s: load fails", what);
  CHECK_CONTAINS(what, res[0].err, msg);
  CHECK(fake_same_arenas(f[0], before) && f[0]->writes == 0, "%s: executor untouched", what);
  fake_free(before);
  free_ranks(f, w);
  ddp_plan_free(p);
}

static void expect_bad(const char *what, const split *s, const char *msg) {
  expect_bad_plan(what, piece_plan(s), s->world, "plain", msg);
}

static void test_bad_plans(void) {
  split s = split2();
  s.w[0][1] = (piece){1, 5, 7};
  expect_bad(
      "overlap", &s,
      "checkpoint: the plan's pieces of 'layers.0.ffn.w1.weight' overlap: 'layers.0.ffn.w1.weight.piece0' (rank 0) "
      "holds elements [0, 7), 'layers.0.ffn.w1.weight.piece1' (rank 1) [5, 12)");
  s = split2();
  s.w[0][1] = (piece){1, 8, 4};
  expect_bad(
      "gap", &s,
      "checkpoint: the plan's pieces of 'layers.0.ffn.w1.weight' (12 elements) leave elements [7, 8) in no piece");
  s = split2();
  s.b[0][0] = (piece){1, 0, 4};
  expect_bad("short at the end", &s,
             "checkpoint: the plan's pieces of 'layers.0.ffn.w1.bias' (5 elements) leave elements [4, 5) in no piece");
  s = split2();
  s.w[0][1] = (piece){1, 7, 6};
  expect_bad("beyond", &s,
             "checkpoint: the plan's piece 'layers.0.ffn.w1.weight.piece1' (rank 1) holds elements [7, 13) of "
             "'layers.0.ffn.w1.weight', which has 12");
  s = split2();
  s.w[2][0] = (piece){0, 0, 7}, s.w[2][1] = (piece){1, 6, 6}, s.nw[2] = 2;
  expect_bad("moments overlap", &s, "checkpoint: the plan's pieces of 'layers.0.ffn.w1.weight.exp_avg_sq' overlap");
  s = split2();
  s.b[0][0] = (piece){2, 0, 5};
  expect_bad("rank beyond the run", &s,
             "checkpoint: the plan's piece 'layers.0.ffn.w1.bias.piece0' of 'layers.0.ffn.w1.bias' is on rank 2, the "
             "run has 2 rank(s)");
  s = split2();
  s.nb[0] = 0;
  s.b[1][0] = (piece){1, 0, 5}, s.nb[1] = 1; /* moments of b, but no master piece */
  s.b[2][0] = (piece){1, 0, 5}, s.nb[2] = 1;
  expect_bad("shape-only without pieces", &s,
             "checkpoint: the plan holds no element of 'layers.0.ffn.w1.bias' (5 elements): a shape-only parameter "
             "without pieces");
  s = split2();
  s.dtype_w0 = DT_BF16;
  expect_bad("dtype", &s, "checkpoint: the plan's piece 'layers.0.ffn.w1.weight.piece0' of 'layers.0.ffn.w1.weight' "
                          "is bf16, the tensor is f32");
}

/* A checkpoint of another model: one line, naming the tensor, the executor untouched. */
static void test_other_model(void) {
  fake *f[FAKE_MAX_RANKS];
  fake_result res[FAKE_MAX_RANKS];
  split s = split2();
  s.b_len = 6;
  s.b[0][0].count = 6;
  ddp_plan *p = piece_plan(&s);
  make_ranks(p, 2, f, false);
  fake_run(f, 2, FAKE_LOAD, tmp_path("pieces3"), 0, res);
  for (int r = 0; r < 2; r++) {
    CHECK(res[r].rc == -1, "rank %d refuses", r);
    CHECK_CONTAINS("another shape", res[r].err,
                   "pieces3/model.safetensors: checkpoint does not match this plan's model: tensor "
                   "'layers.0.ffn.w1.bias' is F32 [5], the plan expects F32 [6]");
    CHECK(f[r]->writes == 0, "rank %d untouched", r);
  }
  free_ranks(f, 2);
  ddp_plan_free(p);
  s = split2();
  s.no_norm = true;
  p = piece_plan(&s);
  make_ranks(p, 2, f, false);
  fake_run(f, 2, FAKE_LOAD, tmp_path("pieces3"), 0, res);
  CHECK(res[1].rc == -1, "extra tensor refused");
  CHECK_CONTAINS("extra tensor", res[1].err, "it holds tensor 'norm.weight', which the plan does not have");
  free_ranks(f, 2);
  ddp_plan_free(p);
}

/* ---- tensor parallelism: strided pieces ---------------------------------------------------------------- */

/* COL [cr, cc] is split in column blocks over the T tensor ranks (rank t holds columns [t cc/T, (t+1) cc/T) of
 * every row: cr runs of cc/T elements, cc apart, from element t cc/T); ROW [rr, rc] in row blocks, written as
 * runs of one row each (stride = run length). */
static const char *COL = "layers.0.mlp.down_proj.weight", *ROW = "layers.0.mlp.up_proj.weight";

typedef struct tp {
  int T, D;       /* tensor ranks x data replicas: world T x D, rank = d x T + t */
  bool zero;      /* the data ranks split each tensor rank's block again (by rows): every rank holds its own */
  bool one_rank;  /* world 1: rank 0 holds every tensor rank's pieces */
  int64_t cr, cc, rr, rc;
} tp;

typedef struct tp_piece {
  int param, kind, rank;
  int64_t first, runs, len, stride;
} tp_piece;
#define TP_MAXP 64

static int tp_world(const tp *c) { return c->one_rank ? 1 : c->T * c->D; }

/* The pieces of both parameters and their moments (kind 0 master, 1 exp_avg, 2 exp_avg_sq: the same split). */
static int tp_pieces(const tp *c, tp_piece *v) {
  int n = 0, D = c->zero ? c->D : 1;
  for (int k = 0; k < 3; k++)
    for (int t = 0; t < c->T; t++)
      for (int d = 0; d < D; d++) {
        int rank = c->one_rank ? 0 : d * c->T + t;
        int64_t crows = c->cr / D, rrows = c->rr / c->T / D, rrow0 = t * (c->rr / c->T) + d * rrows;
        v[n++] = (tp_piece){0, k, rank, d * crows * c->cc + t * (c->cc / c->T), crows, c->cc / c->T, c->cc};
        v[n++] = (tp_piece){1, k, rank, rrow0 * c->rc, rrows, c->rc, c->rc};
      }
  return n;
}

/* Views of flat buffers that every rank holds whole (the unsharded layout), then the common tensors. */
static ddp_plan *tp_plain(const tp *c, int world) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup("schedules/tiny.lua");
  p->meta.world = world;
  int64_t nc = c->cr * c->cc, nr = c->rr * c->rc, nb = nc + nr;
  int32_t fp = fake_add_tensor(p, "flat.params", NULL, TF_PARAM | TF_TRAINABLE, DT_F32, ARENA_PARAM, 4096, 1, nb, 0);
  int32_t fm = fake_add_tensor(p, "flat.exp_avg", NULL, TF_OPT_M, DT_F32, ARENA_OPT, 4096, 1, nb, 0);
  int32_t fv =
      fake_add_tensor(p, "flat.exp_avg_sq", NULL, TF_OPT_V, DT_F32, ARENA_OPT, 4096 + (uint64_t)nb * 4, 1, nb, 0);
  const char *names[2] = {COL, ROW};
  int64_t d0[2] = {c->cr, c->rr}, d1[2] = {c->cc, c->rc}, at[2] = {0, nc};
  const int32_t flat[3] = {fp, fm, fv};
  char nm[128];
  for (int q = 0; q < 2; q++) {
    int32_t w = -1;
    for (int k = 0; k < 3; k++) {
      snprintf(nm, sizeof nm, "%s%s", names[q], SUFFIX[k]);
      const ddp_tensor *b = &p->tensors[flat[k]];
      int32_t t = fake_add_tensor(p, nm, names[q],
                                  k == 0   ? TF_PARAM | TF_TRAINABLE
                                  : k == 1 ? TF_OPT_M
                                           : TF_OPT_V,
                                  DT_F32, b->arena, b->offset + (uint64_t)at[q] * 4, 2, d0[q], d1[q]);
      p->tensors[t].base = flat[k], p->tensors[t].view = (uint64_t)at[q] * 4;
      if (k == 0) w = t;
      else p->tensors[t].param = w;
    }
  }
  add_common(p, true);
  return p;
}

/* Shape-only parameters whose masters and moments are the pieces v[0..n), each a 1-D view of its rank's shard
 * of its kind, packed in order per rank. */
static ddp_plan *tp_plan(const tp *c, const tp_piece *v, int n) {
  ddp_plan *p = ddp_plan_new();
  p->meta.schedule_path = strdup("schedules/tiny.lua");
  p->meta.world = tp_world(c);
  p->meta.tensor_parallel = c->one_rank ? 0 : c->T;
  p->meta.data_parallel = c->one_rank ? 1 : c->D;
  int64_t nb = c->cr * c->cc + c->rr * c->rc;
  static const char *base_name[3] = {"flat.params.shard", "flat.exp_avg", "flat.exp_avg_sq"};
  static const uint32_t base_flags[3] = {TF_PARAM | TF_TRAINABLE, TF_OPT_M, TF_OPT_V};
  int32_t base[3];
  for (int k = 0; k < 3; k++)
    base[k] = fake_add_tensor(p, base_name[k], NULL, base_flags[k] | TF_PERSISTENT, DT_F32, k ? ARENA_OPT : ARENA_PARAM,
                              4096 + (k == 2 ? (uint64_t)nb * 4 : 0), 1, nb, 0);
  int32_t par[2] = {
      fake_add_tensor(p, COL, COL, TF_PARAM | TF_TRAINABLE | TF_SHAPE_ONLY, DT_F32, ARENA_PARAM, 0, 2, c->cr, c->cc),
      fake_add_tensor(p, ROW, ROW, TF_PARAM | TF_TRAINABLE | TF_SHAPE_ONLY, DT_F32, ARENA_PARAM, 0, 2, c->rr, c->rc)};
  int64_t cursor[3][FAKE_MAX_RANKS] = {{0}};
  int count[2][3] = {{0}};
  char nm[160];
  for (int j = 0; j < n; j++) {
    const tp_piece *x = &v[j];
    const char *pn = x->param ? ROW : COL;
    int64_t numel = x->runs * x->len, at = cursor[x->kind][x->rank];
    cursor[x->kind][x->rank] += numel;
    snprintf(nm, sizeof nm, "%s%s.piece%d", pn, SUFFIX[x->kind], count[x->param][x->kind]++);
    uint32_t fl = (x->kind == 0 ? TF_PARAM | TF_TRAINABLE : x->kind == 1 ? TF_OPT_M : TF_OPT_V) | TF_PIECE;
    const ddp_tensor *b = &p->tensors[base[x->kind]];
    int32_t t = fake_add_tensor(p, nm, pn, fl, DT_F32, b->arena, b->offset + (uint64_t)at * 4, 1, numel, 0);
    ddp_tensor *y = &p->tensors[t];
    y->base = base[x->kind], y->view = (uint64_t)at * 4, y->param = par[x->param];
    y->piece_rank = x->rank, y->piece_first = x->first, y->piece_runs = x->runs, y->piece_stride = x->stride;
  }
  add_common(p, true);
  return p;
}

static ddp_plan *tp_plan_of(const tp *c) {
  tp_piece v[TP_MAXP];
  return tp_plan(c, v, tp_pieces(c, v));
}

static tp tp_cfg(int T, int D) { return (tp){.T = T, .D = D, .cr = 6, .cc = 8, .rr = 4, .rc = 6}; }

/* The unsharded save and the tensor-parallel saves (2 and 4 tensor ranks, 2 tensor ranks x 2 data replicas,
 * 2 x 2 with the data ranks splitting each block again, one rank holding every block) are the same bytes;
 * each loads into the others, every rank (replicas included) getting exactly its elements. */
static void test_strided(void) {
  fake_result res[FAKE_MAX_RANKS];
  fake *f[FAKE_MAX_RANKS];
  tp base = tp_cfg(2, 1);
  ddp_plan *u = tp_plain(&base, 1);
  make_ranks(u, 1, f, true);
  fake_run(f, 1, FAKE_SAVE, tmp_path("tp_plain"), 9, res);
  CHECK(all_ok(res, 1, "tp plain save"), "unsharded save of the tensor-parallel model");
  free_ranks(f, 1);
  ddp_plan_free(u);

  tp cfg[5] = {tp_cfg(2, 1), tp_cfg(4, 1), tp_cfg(2, 2), tp_cfg(2, 2), tp_cfg(2, 1)};
  cfg[3].zero = true, cfg[4].one_rank = true;
  const char *dirs[5] = {"tp2", "tp4", "tp2x2", "tp2x2zero", "tp2on1"};
  for (int k = 0; k < 5; k++) {
    ddp_plan *p = tp_plan_of(&cfg[k]);
    int w = tp_world(&cfg[k]);
    make_ranks(p, w, f, true);
    fake_run(f, w, FAKE_SAVE, tmp_path(dirs[k]), 9, res);
    CHECK(all_ok(res, w, dirs[k]), "%s: save", dirs[k]);
    CHECK(same_files(tmp_path("tp_plain"), tmp_path(dirs[k])), "%s: the files are the unsharded plan's, byte for byte",
          dirs[k]);
    free_ranks(f, w);
    ddp_plan_free(p);
  }
  char path[600], err[512];
  snprintf(path, sizeof path, "%s/model.safetensors", tmp_path("tp2"));
  ddp_st_file *sf = ddp_st_open(path, err, sizeof err);
  const ddp_st_tensor *t = sf ? ddp_st_find(sf, COL) : NULL;
  float v = 0;
  if (t) memcpy(&v, (const uint8_t *)ddp_st_data(sf, t) + (2 * 8 + 5) * 4, 4); /* row 2, column 5: rank 1's */
  CHECK(t && t->ndim == 2 && t->shape[0] == 6 && t->shape[1] == 8 && v == value(COL, 21), "COL[2][5] in place");
  ddp_st_close(sf);

  load_into(tmp_path("tp2"), tp_plan_of(&cfg[1]), 4, "2 tensor ranks -> 4");
  load_into(tmp_path("tp4"), tp_plan_of(&cfg[2]), 4, "4 tensor ranks -> 2 x 2 data replicas");
  load_into(tmp_path("tp_plain"), tp_plan_of(&cfg[2]), 4, "unsharded -> 2 x 2 data replicas");
  load_into(tmp_path("tp2x2"), tp_plan_of(&cfg[3]), 4, "2 x 2 replicas -> 2 x 2 split again by the data ranks");
  load_into(tmp_path("tp2x2zero"), tp_plain(&base, 2), 2, "2 x 2 split again -> unsharded, 2 ranks");
  load_into(tmp_path("tp2"), tp_plan_of(&cfg[4]), 1, "2 tensor ranks -> 1 rank holding both blocks");
  load_into(tmp_path("tp2on1"), tp_plan_of(&cfg[0]), 2, "1 rank holding both blocks -> 2 tensor ranks");

  /* many runs: a [100000, 8] weight over 4 tensor ranks (400000 runs) is checked in well under a second */
  tp big = tp_cfg(4, 1);
  big.cr = 100000;
  tp_piece pv[TP_MAXP];
  int n = tp_pieces(&big, pv);
  ddp_plan *p = tp_plan(&big, pv, n);
  ddp_exec x = {.plan = p, .rank = 0, .world = 4};
  double t0 = (double)clock() / CLOCKS_PER_SEC;
  CHECK(ddp_checkpoint_check_plan(&x, err, sizeof err) == 0, "400000 runs: %s", err);
  double dt = (double)clock() / CLOCKS_PER_SEC - t0;
  CHECK(dt < 2.0, "400000 runs checked in %.2f s", dt);
  printf("400000 runs of 4 strided pieces checked in %.3f s\n", dt);
  ddp_plan_free(p);
  pv[0].first += 8; /* rank 0's column block starts a row late: its last run is past the end */
  p = tp_plan(&big, pv, n);
  x.plan = p;
  CHECK(ddp_checkpoint_check_plan(&x, err, sizeof err) == -1, "a strided piece past the end is refused");
  CHECK_CONTAINS("big, past the end", err, "holds elements [8, 800002) of 'layers.0.mlp.down_proj.weight' in 100000 "
                                           "runs of 2, 8 apart, which has 800000");
  ddp_plan_free(p);
}

/* One bad strided plan (piece j of tp_cfg(2, 1) changed by `edit`): refused on save and load with msg. */
static void expect_bad_tp(const char *what, void (*edit)(tp_piece *v), const char *msg) {
  tp c = tp_cfg(2, 1);
  tp_piece v[TP_MAXP];
  int n = tp_pieces(&c, v);
  edit(v);
  expect_bad_plan(what, tp_plan(&c, v, n), tp_world(&c), "tp_plain", msg);
}
/* v[0]: COL master of rank 0 (first 0, 6 runs of 4, 8 apart); v[2]: COL master of rank 1 (first 4);
 * v[3]: ROW master of rank 1 (first 12, 2 runs of 6, 6 apart); v[3 + 4 k]: ROW of rank 1, kind k. */
static void e_overlap(tp_piece *v) { v[2].first = 3; }
static void e_gap(tp_piece *v) { v[2].len = 3; }
static void e_beyond(tp_piece *v) { v[2].first = 5; }
static void e_self(tp_piece *v) { v[2].stride = 3; }
static void e_huge(tp_piece *v) { v[2].stride = INT64_MAX / 2; }
static void e_moment(tp_piece *v) { v[11].first = 6; }
static void e_rank(tp_piece *v) { v[2].rank = 2; }

static void test_strided_bad(void) {
  expect_bad_tp("strided overlap", e_overlap,
                "checkpoint: the plan's pieces of 'layers.0.mlp.down_proj.weight' overlap: "
                "'layers.0.mlp.down_proj.weight.piece0' (rank 0) holds elements [0, 4), "
                "'layers.0.mlp.down_proj.weight.piece1' (rank 1) [3, 7)");
  expect_bad_tp("strided gap", e_gap,
                "checkpoint: the plan's pieces of 'layers.0.mlp.down_proj.weight' (48 elements) leave elements [7, 8) "
                "in no piece");
  expect_bad_tp(
      "strided beyond the end", e_beyond,
      "checkpoint: the plan's piece 'layers.0.mlp.down_proj.weight.piece1' (rank 1) holds elements [5, 49) of "
      "'layers.0.mlp.down_proj.weight' in 6 runs of 4, 8 apart, which has 48");
  expect_bad_tp(
      "strided runs overlapping each other", e_self,
      "checkpoint: the plan's piece 'layers.0.mlp.down_proj.weight.piece1' (rank 1) of "
      "'layers.0.mlp.down_proj.weight' has 24 elements in 6 runs 3 apart, not whole runs that do not overlap");
  expect_bad_tp(
      "strided stride overflow", e_huge,
      "checkpoint: the plan's piece 'layers.0.mlp.down_proj.weight.piece1' (rank 1) holds 6 runs of 4 elements "
      "4611686018427387903 apart from element 4 of 'layers.0.mlp.down_proj.weight', past any index");
  expect_bad_tp("strided moments overlap", e_moment,
                "checkpoint: the plan's pieces of 'layers.0.mlp.up_proj.weight.exp_avg_sq' overlap: "
                "'layers.0.mlp.up_proj.weight.exp_avg_sq.piece0' (rank 0) holds elements [6, 12), "
                "'layers.0.mlp.up_proj.weight.exp_avg_sq.piece1' (rank 1) [6, 12)");
  expect_bad_tp(
      "strided rank beyond the run", e_rank,
      "checkpoint: the plan's piece 'layers.0.mlp.down_proj.weight.piece1' of 'layers.0.mlp.down_proj.weight' "
      "is on rank 2, the run has 2 rank(s)");
  /* not a whole number of runs: 24 elements in 5 runs (the plan's numel, built by hand) */
  tp c = tp_cfg(2, 1);
  tp_piece v[TP_MAXP];
  int n = tp_pieces(&c, v);
  ddp_plan *p = tp_plan(&c, v, n);
  int32_t t = ddp_plan_find_tensor(p, "layers.0.mlp.down_proj.weight.piece0");
  p->tensors[t].piece_runs = 5;
  expect_bad_plan(
      "strided partial runs", p, 2, "tp_plain",
      "checkpoint: the plan's piece 'layers.0.mlp.down_proj.weight.piece0' (rank 0) of "
      "'layers.0.mlp.down_proj.weight' has 24 elements in 5 runs 8 apart, not whole runs that do not overlap");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ddp_test_ckpt_pieces.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_same_files();
  test_load_across();
  test_store();
  test_failing_rank();
  test_bad_plans();
  test_other_model();
  test_strided();
  test_strided_bad();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_report("test_ckpt_pieces");
}

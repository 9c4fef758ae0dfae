#!/usr/bin/env bash
# NR ranks (default 4): the tiny model's moved collectives under DDP_PEER_COPY_API 0, 1, 2 against NCCL's all-to-all, bitwise
cd "$(dirname "$0")/.."
. tests/bench/device_env.sh
export DDP_SOURCE_DIR=$PWD
. tests/e2e/lib.sh
NR=${NR:-4}; e2e_tmp tiny$NR
cp schedules/lib/models.lua "$tmp/"
tiny='models.tiny({ d_model = 64, d_ff = 128, heads = 4, vocab = 256, context = 32 })'
tdata='{ global_batch = 8, tokens = "random", seed = 5 }'
adam='adamw { lr = 1e-2, weight_decay = 0.1, eps = 1e-5 }'
ar=', sync = "bucketed", bucket_mb = 0.05, overlap = "backward", optimizer_overlap = true'
z3=', sync = "bucketed", bucket_mb = 0.05, shard = "zero3", optimizer_overlap = true'
write ar_a2a "$tiny" $NR "$ar" "$adam" 4 "$tdata, nccl = { all_reduce = \"alltoall\" }"
write ar_mv "$tiny" $NR "$ar" "$adam" 4 "$tdata, nccl = { all_reduce = \"alltoall\", movement = \"peer_copy\" }" && same ar_mv ar_a2a 0 0
write z3_a2a "$tiny" $NR "$z3" "$adam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\" }"
write z3_mv "$tiny" $NR "$z3" "$adam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\", movement = \"peer_copy\" }" && same z3_mv z3_a2a 0 0
for api in 0 1; do
  for n in ar z3; do
    DDP_PEER_COPY_BATCH=$api "$DDPRUN" "$tmp/${n}_mv.bin" --nproc $NR --checkpoint-dir "$tmp/${n}_mv_api$api.ckpt" --quiet 2>"$tmp/e" &&
      same ${n}_mv_api$api ${n}_a2a 0 0 || fail "${n}_mv_api$api: $(tail -1 "$tmp/e")"
  done
done
write ar_mv_win "$tiny" $NR "$ar" "$adam" 4 "$tdata, nccl = { all_reduce = \"alltoall\", movement = \"peer_copy\", register = \"window\" }" && same ar_mv_win ar_a2a 0 0
write z3_mv_win "$tiny" $NR "$z3" "$adam" 4 "$tdata, nccl = { reduce_scatter = \"alltoall\", movement = \"peer_copy\", register = \"window\" }" && same z3_mv_win z3_a2a 0 0
"$DDPRUN" "$tmp/ar_mv_win.bin" --nproc $NR --steps 1 --metrics "$tmp/w.jsonl" --quiet 2>"$tmp/e" && python3 -c 'import json,sys; r = json.loads(open(sys.argv[1]).readline()); print("run line:", r.get("nccl"), "|", r.get("p2p"))' "$tmp/w.jsonl" || fail "ar_mv_win metrics: $(tail -1 "$tmp/e")"
DDP_CUDA_GRAPH=1 "$DDPRUN" "$tmp/ar_mv.bin" --nproc $NR --checkpoint-dir "$tmp/ar_mv_graph.ckpt" --quiet 2>"$tmp/e" &&
  same ar_mv_graph ar_a2a 0 0 || fail "ar_mv_graph: $(tail -1 "$tmp/e")"
grep -m1 covering "$tmp/e"
echo "tiny$NR: fail=$fail"

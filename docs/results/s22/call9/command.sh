set -u
. tests/bench/device_env.sh
timeout 120 dev/bin/gpu_kernels --op ATTN_BWD_PREP > $OUT/kern_prep.log 2>&1; echo "gpu_kernels ATTN_BWD_PREP rc=$?: $(tail -1 $OUT/kern_prep.log)"
GRIDS=0 LB_ROUNDS=3 LB_GPU_TIME=50 bash tests/bench/device_attention_gputime.sh 2>&1 | grep -E "median|revision|rc=" | tail -24

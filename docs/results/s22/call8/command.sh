set -u
. tests/bench/device_env.sh
K=dev/bin/ddpbench_kernels
GRIDS=0 LB_ROUNDS=1 LB_GPU_TIME=50 bash tests/bench/device_attention_gputime.sh 2>&1 | grep -E "median|rc=" | head -8
for r in 1 2; do
  for f in "" --fused; do
    timeout 100 $K --only none --tune --tune-shape 4:25:512 --tune-d 64 --gpu-time 50 --variants defaults $f 2>&1 | tee -a $OUT/xl_shape.log | grep -A1 "tile variants" | tail -1
  done
  timeout 100 python3 tests/bench/torch_extra.py --sdpa-shape 4:25:512:64 2>&1 | tee -a $OUT/xl_sdpa.log | grep '"sdpa_shape"' | cut -c1-200
done

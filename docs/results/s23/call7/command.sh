#!/usr/bin/env bash
# the attention grids and the leaderboard (alternating, with 892043e's kernels as dev/old), then ncu metrics
# of every ddp_ kernel of one XL step (coalescing of loads and stores, throughputs)
set -u
. tests/bench/device_env.sh
GRIDS=1 LB_ROUNDS=3 LB_GPU_TIME=50 timeout 420 bash tests/bench/device_attention_gputime.sh 2>&1 | tail -45
cp $OUT/logs.tgz $OUT/attn_logs.tgz 2>/dev/null
echo "== ncu XL step $(date +%T)"
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
timeout 150 ncu --clock-control none --cache-control none --kernel-name regex:'^ddp_' --launch-skip 1100 --launch-count 1000 \
  --metrics $M --csv --print-units base $DDPRUN $P/xl.bin --steps 3 --quiet >$L/ncu_xl.csv 2>$L/ncu_xl.err
echo "ncu rc=$? $(wc -l <$L/ncu_xl.csv) lines"; tail -3 $L/ncu_xl.err
tar czf $OUT/logs.tgz -C $L .

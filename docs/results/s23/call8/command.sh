#!/usr/bin/env bash
# ncu metrics of 500 ddp_ kernels of the XL step (GEMM tuning off so step 1 is short): duration and how many
# 32-byte sectors each global load / store request touches
set -u
. tests/bench/device_env.sh
$DDPC schedules/bench_xl.lua -o $P/xl.bin -q
M=gpu__time_duration.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,dram__bytes_write.sum
DDP_GEMM_TUNE=0 timeout 330 ncu --clock-control none --cache-control none --kernel-name regex:'^ddp_' --launch-skip 700 --launch-count 500 \
  --metrics $M --csv --print-units base $DDPRUN $P/xl.bin --steps 2 --quiet >$OUT/ncu_xl.csv 2>$OUT/ncu_xl.err
echo "ncu rc=$? $(wc -l <$OUT/ncu_xl.csv) lines"; tail -3 $OUT/ncu_xl.err

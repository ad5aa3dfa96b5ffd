#!/bin/bash
# Builds bench/gpu/probe/user_replay.cu, runs the modes in PROBE_MODES
# (default: plain kernel user user-noflush; see the source for all) and ncu
# on the same kernels, for comparison, once per replay mode in NCU_REPLAYS
# (default: kernel; "application" runs the program once per pass, with no
# memory saved or restored). PROBE_KERNELS and PROBE_METRICS pick kernels and
# metrics (see the source); ncu adds L2's raw sector counts:
#   PROBE_MODES="user user-act" PROBE_KERNELS=45 bash bench/gpu/probe/run.sh
set -x
CUPTI=$(dirname $(find / -name libcupti.so* -path "*lib*" 2>/dev/null | head -1))
INC=$(dirname $(find / -name cupti_range_profiler.h 2>/dev/null | head -1))
nvcc -std=c++17 -arch=sm_90 -o /tmp/probe bench/gpu/probe/user_replay.cu -I$INC -L$CUPTI -lcupti -lcuda -lcublas -Xlinker -rpath=$CUPTI || exit 1
for m in ${PROBE_MODES:-plain kernel user user-noflush}; do /tmp/probe $m; done
M="dram__bytes_read.sum,dram__bytes_write.sum,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sectors.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum"
for r in ${NCU_REPLAYS:-kernel}; do
  ncu --replay-mode $r --metrics ${PROBE_NCU_METRICS:-$M} --clock-control none --cache-control all --print-units base /tmp/probe plain 2>&1 | grep -v "^==PROF==" | grep -E "big|small|tiny|empty|wonly|gemm|sgemm|one|touch|idle|slow|Kernel|gpu__time|dram|sm__|l1tex|lts|inst"
done

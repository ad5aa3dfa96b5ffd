#!/usr/bin/env python3
"""op_counters_compare_test.py: bench/gpu/op_counters.py's comparison of pasta's profile with
ncu's launches by launch index (profile version 1.1's measured_launches), on synthetic data:
which ncu launches each signature is compared with, per-launch values, and launch indices that
name another kernel; three ways with ncu's application replay; and DRAM values judged against
either of ncu's measurements (every metric, the DRAM metrics alone)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench", "gpu"))
import op_counters  # noqa: E402


def entry(kernel, grid, launches, indices, flops, occupancy):
    return {"kernel": kernel, "grid": list(grid), "block": [128, 1, 1], "launches": launches,
            "measured": len(indices), "measured_launches": indices,
            "metrics": {"flops": flops, "achieved_occupancy_pct": occupancy,
                        "l1_hit_rate_pct": None}}


def launch(kernel, grid, flops, occupancy):
    return (kernel, tuple(grid), (128, 1, 1),
            {"flops": flops, "achieved_occupancy_pct": occupancy})


# One GEMM shape under two operators (as cuBLAS's split-K reduction in the GPT): ncu's first
# launch of (kernel, grid, block) is the first operator's, so it cannot judge the second.
ncu = [launch("reduce", (8, 64, 1), 2.0e6, 70.0),   # 0: operator A, measured
       launch("gemm", (16, 4, 2), 5.0e6, 40.0),     # 1
       launch("reduce", (8, 64, 1), 2.0e6, 71.0),   # 2: operator A
       launch("reduce", (8, 64, 1), 7.0e6, 86.0),   # 3: operator B, measured
       launch("reduce", (8, 64, 1), 7.0e6, 87.0)]   # 4: operator B
entries = [entry("reduce", (8, 64, 1), 2, [0], 4.0e6, 70.0),   # flops over both launches
           entry("reduce", (8, 64, 1), 2, [3], 14.0e6, 86.5),
           entry("gemm", (16, 4, 2), 1, [1, 7], 5.0e6, 41.0),  # 7: past ncu's last launch
           entry("copy", (1, 1, 1), 3, [2], 3.0, 1.0)]         # 2 is a reduce in ncu's run
ours, theirs, again, astray = op_counters.same_launches(entries, ncu)
reduce_a, reduce_b, gemm = ("reduce", (8, 64, 1), (128, 1, 1), 0), \
    ("reduce", (8, 64, 1), (128, 1, 1), 3), ("gemm", (16, 4, 2), (128, 1, 1), 1)
assert sorted(ours) == sorted(theirs) == sorted([reduce_a, reduce_b, gemm]), sorted(ours)
assert ours[reduce_a] == {"flops": 2.0e6, "achieved_occupancy_pct": 70.0}, ours[reduce_a]
assert ours[reduce_b] == {"flops": 7.0e6, "achieved_occupancy_pct": 86.5}, ours[reduce_b]
assert theirs[reduce_b] == {"flops": 7.0e6, "achieved_occupancy_pct": 86.0}, theirs[reduce_b]
assert theirs[gemm] == {"flops": 5.0e6, "achieved_occupancy_pct": 40.0}, theirs[gemm]
assert again == {gemm}, again
assert astray == 2, astray  # gemm's launch 7 and copy's launch 2
# Without launch indices (profile version 1.0) there is nothing to compare this way.
assert op_counters.same_launches([{k: v for k, v in e.items() if k != "measured_launches"}
                                  for e in entries], ncu) is None
print("same-launch comparison exact")

# Three ways on the same launches: pasta, ncu's kernel replay and its application replay, per
# metric the application replay has (here not flops), and pasta against either replay.
kernel_replay = {reduce_a: {"achieved_occupancy_pct": 80.0, "dram_bytes_write": 6.0e6},
                 gemm: {"achieved_occupancy_pct": 40.0, "dram_bytes_write": 2.0e6}}
app_replay = {reduce_a: {"achieved_occupancy_pct": 70.5, "dram_bytes_write": 3.9e6,
                         "flops": 2.0e6},
              gemm: {"achieved_occupancy_pct": 47.0, "dram_bytes_write": 2.05e6}}
pasta = {reduce_a: {"achieved_occupancy_pct": 70.0, "dram_bytes_write": 3.5e6, "flops": 2.0e6},
         gemm: {"achieved_occupancy_pct": 41.0, "dram_bytes_write": 2.0e6},
         reduce_b: ours[reduce_b]}  # not in ncu's replays: left out
rows = op_counters.three_way(pasta, kernel_replay, app_replay, "test")
# (values, pasta~kernel, pasta~app, kernel~app, pasta~either)
assert rows["achieved_occupancy_pct"] == (2, 1, 1, 0, 2), rows  # 70~70.5 (0.5 points), 41~40
assert rows["dram_bytes_write"] == (2, 1, 1, 1, 1), rows  # 3.5e6 is 10% under 3.9e6
assert rows["flops"] == (0, 0, 0, 0, 0), rows  # the kernel replay has none
assert rows["all"] == (4, 2, 2, 1, 3), rows

# The verdict: the share of values within 5% on the same launches, at least AGREE_FLOOR, and
# something compared (a run that compared nothing, or whose ncu timed out, fails).
judged = op_counters.agreement(ours, theirs, "pasta", again, "test")
assert judged == (6, 6), judged  # gemm's occupancy 41 against 40: within 5%
assert op_counters.shortfall(*judged, "the same launches") is None
assert op_counters.AGREE_FLOOR == 0.90, op_counters.AGREE_FLOOR
assert op_counters.shortfall(90, 100, "x") is None
said = op_counters.shortfall(89, 100, "the same launches")
assert said == ("FAILED: 89 of 100 values within 5% of ncu's (the same launches, 89.0%), fewer "
                "than 90%"), said
said = op_counters.shortfall(0, 0, "the same launches")
assert said == "FAILED: no value compared (the same launches)", said
print("three-way comparison exact")

# ncu's DRAM metrics measured alone: a DRAM value agrees when within 5% of either of ncu's
# measurements (every metric inflates bytes written with its own restore's write-back); other
# metrics are judged against every-metric ncu only.
every = {gemm: {"dram_bytes_write": 2.6e6, "achieved_occupancy_pct": 40.0},
         reduce_a: {"dram_bytes_write": 1.2e6, "achieved_occupancy_pct": 50.0}}
alone = {gemm: {"dram_bytes_write": 5.0e5}, reduce_a: {"dram_bytes_write": 3.0e6,
                                                       "achieved_occupancy_pct": 70.0}}
mine = {gemm: {"dram_bytes_write": 5.2e5, "achieved_occupancy_pct": 41.0},
        reduce_a: {"dram_bytes_write": 2.0e6, "achieved_occupancy_pct": 70.0}}
# gemm: 5.2e5 is within 4% of ncu alone (and within 64 KiB): agrees; reduce_a: 2.0e6 is off
# both (1.2e6 and 3.0e6); its occupancy agrees with ncu alone only, which does not count.
assert op_counters.agreement(mine, every, "pasta", set(), "test") == (1, 4)
assert op_counters.agreement(mine, every, "pasta", set(), "test", alone) == (2, 4)
rows = op_counters.three_way(mine, every, alone, "test", "dram-alone", "the DRAM metrics alone")
assert rows["dram_bytes_write"] == (2, 0, 1, 0, 1), rows
print("DRAM metrics alone: judged against either of ncu's")

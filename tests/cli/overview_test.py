#!/usr/bin/env python3
"""The report overview's bounds and step finding (share/pasta/overview.py), on
made-up series whose answers are known: a step picture's row never holds more bars
than pixel columns, the memory series keeps its peak, steps come from the optimizer's
zero_grad and step, and --window is parsed or refused.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import checks  # noqa: E402
from checks import expect  # noqa: E402
import overview  # noqa: E402


def main():
    # 10,000 kernels of alternating kinds, 4 us each every 10 us, over 100 ms.
    bars = [(i * 10.0, i * 10.0 + 4.0, "a" if i % 2 else "b") for i in range(10_000)]
    merged = overview.merge_bars(bars, 0.0, 100_000.0, columns=800)
    expect("alternating kernels: one bar per pixel column at most", len(merged) <= 800, True)
    expect("...and the columns cover the run", (merged[0][0], merged[-1][1]), (0.0, 100_000.0))
    few = overview.merge_bars([(0.0, 1.0, "a"), (1.05, 2.0, "a"), (5.0, 6.0, "b")], 0.0, 10.0,
                              columns=100)
    expect("few bars: the same kind within a column merges, others stay exact", few,
           [[0.0, 2.0, "a"], [5.0, 6.0, "b"]])

    points = [(float(t), float(t % 97)) for t in range(10_000)] + [(10_000.0, 500.0)]
    down = overview.downsample(points, 400)
    expect("memory series: 400 points", len(down), 400)
    expect("memory series: the peak kept", max(p[1] for p in down), 500.0)

    expect("busy: the union of overlapping records",
           overview.busy([(0, 10, "kernel"), (5, 15, "kernel"), (20, 30, "memcpy")])[:2],
           (25, 30))

    ranges = [(0.0, 5.0, "aten::empty", 0, "op"),
              (100.0, 101.0, "Optimizer.zero_grad#SGD.zero_grad", 0, "op"),
              (190.0, 200.0, "Optimizer.step#SGD.step", 0, "op"),
              (205.0, 206.0, "Optimizer.zero_grad#SGD.zero_grad", 0, "op"),
              (290.0, 300.0, "Optimizer.step#SGD.step", 0, "op")]
    expect("steps: from each zero_grad to the end of its optimizer step",
           overview.steps(ranges), [(100.0, 200.0), (205.0, 300.0)])
    expect("steps: without zero_grad, from the end of the step before",
           overview.steps([r for r in ranges if "zero_grad" not in r[2]]),
           [(0.0, 200.0), (200.0, 300.0)])
    expect("steps: ProfilerStep ranges win", overview.steps(
        ranges + [(50.0, 150.0, "ProfilerStep#7", 0, "op")]), [(50.0, 150.0)])
    records = [(0.0, 400.0, "kernel", "k", 1, 7)]
    expect("default window: the second of two steps (the first holds the start-up)",
           overview.choose_window(records, ranges), (205.0, 300.0, "One step: step 2 of 2"))
    expect("--step 1", overview.choose_window(records, ranges, step=1),
           (100.0, 200.0, "One step: step 1 of 2"))
    expect("--window 0.1-0.2 (ms)", overview.choose_window(records, ranges, window=(0.1, 0.2)),
           (100.0, 200.0, "The window asked for"))
    expect("no steps: the whole run", overview.choose_window(records, []),
           (0.0, 400.0, "The whole run (no step markers)"))
    expect("--window parsed", overview.parse_window("480.5-520ms"), (480.5, 520.0))
    for bad in ("520-480", "x-1", "5"):
        try:
            overview.parse_window(bad)
            expect(f"--window {bad} refused", False, True)
        except ValueError:
            expect(f"--window {bad} refused", True, True)
    print("overview: every check exact" if checks.failures == 0 else
          f"{checks.failures} checks failed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Memory hotness of your own kernel: device annotations against the
sanitizer path, on the same kernel, on one GPU, every variant a process of its
own in interleaved rounds.

The kernel is vector add (c = a + b, 3 accesses a thread) from
examples/cuda/annotated.cu, timed per launch (cudaEvents around K launches
after one warm-up launch):
  native       the plain build: recorders compile to nothing
  annotations  device::Annotations (-DPASTA_DEVICE_ANNOTATIONS): warp-aggregated
               page counters (the warm-up launch taught the allocations),
               post-pass + copy back, begin/end included
  sanitizer    the plain build under `pasta run --memory` (nv::Sanitizer +
               proc::GpuBucketing patching every global access); its reports
               must show the program's K + 1 launches
Both mem_hotness.json must count the program's accesses: 3 a float in each of
the K + 1 launches, all in its three allocations.

    annotations.py BUILD_DIR [OUT_DIR] [--quick] [--rounds 5] [--floats N] [--launches K]
prints median and min..max of ms per launch, the ratios, and writes annotations.csv.
--quick: 2 rounds.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def per_launch_ms(_result, stdout):
    m = re.search(r"([0-9.]+) ms per launch", stdout)
    return float(m.group(1)) if m else None


def main():
    p = harness.arguments(__doc__, "bench-annotations")
    p.add_argument("--floats", type=int, default=1 << 24, help="vector length (2^24)")
    p.add_argument("--launches", type=int, default=20, help="timed launches per process (20)")
    args = harness.settle(p.parse_args())
    bench = harness.Bench(args.build, args.out, args.timeout, args.cpus, args.budget)
    workload = ["--vecadd", str(args.floats), str(args.launches)]
    plain = [f"{bench.build}/examples/annotated", *workload]
    # c = a + b reads two floats and writes one, a thread a float, in the warm-up and each launch.
    counted = harness.mem_accesses(3 * args.floats * (args.launches + 1))
    variants = [
        harness.Variant("native", plain),
        harness.Variant("annotations", [f"{bench.build}/examples/annotated_pasta", *workload],
                        check=counted),
        harness.Variant("sanitizer", plain, pasta=["--memory"], expect=args.launches + 1,
                        check=counted),
    ]
    name = f"vector add, {args.floats} floats, {args.launches} launches"
    results = bench.rounds(name, variants, args.rounds, per_launch_ms)
    bench.table(name, variants, results, "ms/launch")
    ann, san = ([s.value for s in results[v.label]] for v in variants[1:])
    if ann and san and not variants[1].failed and not variants[2].failed:
        print(f"sanitizer / annotations: {statistics.median(san) / statistics.median(ann):.2f}x")
    bench.write_csv("annotations.csv")
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())

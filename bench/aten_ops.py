#!/usr/bin/env python3
"""aten_ops.py: what torch::Aten's operator callbacks cost the program's thread per operator
call (bench/aten_ops.cpp), every variant in its own process, interleaved rounds; prints the
median, min..max and the extra ns per call against native, with the CPU's name.

  bench/aten_ops.py BINARY [--rounds 5] [--calls 400000] [--cpu N]

--cpu N runs every process on CPU N alone (and pasta's thread with it), default: all CPUs."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

VARIANTS = ["native", "empty-callback", "torch", "torch-inline"]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="pasta_bench_aten_ops")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=400000)
    p.add_argument("--cpu", type=int, default=None)
    args = p.parse_args()
    samples = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="pasta-aten-ops-") as out:
        env = dict(os.environ, PASTA_PRINT="none", PASTA_OUTPUT_DIR=out)
        pin = (lambda: os.sched_setaffinity(0, {args.cpu})) if args.cpu is not None else None
        for r in range(args.rounds):
            for v in VARIANTS:
                proc = subprocess.run([args.binary, v, str(args.calls)], capture_output=True,
                                      text=True, env=env, preexec_fn=pin, timeout=300)
                if proc.returncode != 0:
                    print(f"FAILED {v} (round {r + 1}): exit {proc.returncode}\n{proc.stderr}")
                    return 1
                samples[v].append(json.loads(proc.stdout.strip().splitlines()[-1])["ns_per_call"])
            print(f"round {r + 1} of {args.rounds}: " +
                  ", ".join(f"{v} {samples[v][-1]:.0f}" for v in VARIANTS), flush=True)
    base = statistics.median(samples["native"])
    print(f"\ntorch::Aten per operator call (an add, its allocation and free, 4 us of launch-like "
          f"work) on {cpu_name()}, median of {args.rounds} interleaved rounds")
    print(f"  {'variant':16} {'ns/call':>9} {'min..max':>15} {'extra ns':>9}")
    for v in VARIANTS:
        m = statistics.median(samples[v])
        print(f"  {v:16} {m:9.0f} {min(samples[v]):7.0f}..{max(samples[v]):<7.0f} {m - base:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

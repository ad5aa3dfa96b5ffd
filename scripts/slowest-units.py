#!/usr/bin/env python3
"""Where a build went: the slowest steps of a Ninja build, from its .ninja_log.

    scripts/slowest-units.py BUILD_DIR [--top N]

Prints the N slowest steps (default 10) of the last build in BUILD_DIR, each with its
wall seconds and its output, then the sum over every step (the CPU seconds the build
spent, about) and the build's wall time from its first step's start to its last's end.
A step built again keeps only its latest time (Ninja's log appends). Exits 2 with one
line when the folder holds no Ninja log (a build by make, or none yet)."""
import argparse
import os
import sys


def steps(log_path):
    """{output: (start_ms, end_ms)} of the log's latest build of each output."""
    out = {}
    with open(log_path) as f:
        header = f.readline()
        if not header.startswith("# ninja log"):
            raise ValueError(f"{log_path} is not a Ninja log")
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 5:
                continue
            start, end, output = int(fields[0]), int(fields[1]), fields[3]
            out[output] = (start, end)
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args(argv)
    log_path = os.path.join(args.build, ".ninja_log")
    try:
        done = steps(log_path)
    except (OSError, ValueError) as e:
        print(f"slowest-units: no Ninja log to read: {e}", file=sys.stderr)
        return 2
    if not done:
        print(f"slowest-units: {log_path} lists no step")
        return 0
    # Outputs that share one command (a compile's .o and its .d) are one step.
    by_step = {}
    for output, (start, end) in done.items():
        by_step.setdefault((start, end), []).append(output)
    rows = sorted(((end - start, outputs[0]) for (start, end), outputs in by_step.items()),
                  reverse=True)
    wall = (max(e for _, e in by_step) - min(s for s, _ in by_step)) / 1e3
    total = sum(ms for ms, _ in rows) / 1e3
    print(f"the {min(args.top, len(rows))} slowest of {len(rows)} build steps "
          f"({total:.1f} s over all steps, {wall:.1f} s from first start to last end):")
    for ms, output in rows[:args.top]:
        print(f"{ms / 1e3:8.1f} s  {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

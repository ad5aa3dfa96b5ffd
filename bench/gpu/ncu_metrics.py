#!/usr/bin/env python3
"""The metrics of pasta's KernelCounters, measured by Nsight Compute (ncu) on
the same program, to compare with what tools::OpCounters reports.

    ncu_metrics.py BUILD_DIR OUT_DIR -- PROGRAM [ARGS...]
prints, per kernel (the function's base name), each metric key of
op_counters.profile.json with ncu's value, as JSON.

Which ncu metrics make up which key comes from `pasta-trace metrics`
(core/metrics.hpp), so there is one list. ncu runs with --clock-control
none: pasta does not lock the clocks either.
"""
import csv
import io
import json
import os
import subprocess
import sys


def metric_map(build):
    """{key: [(ncu metric, weight), ...]} from pasta-trace."""
    out = subprocess.run([f"{build}/cli/pasta-trace", "metrics"], capture_output=True, text=True,
                         check=True).stdout
    return {k: [(p["ncu"], p["weight"]) for p in v] for k, v in json.loads(out).items()}


def number(text):
    return float(text.replace(",", "")) if text not in ("", "n/a") else None


def collect(ncu, build, cmd, out_dir):
    """{kernel: {key: value}} for every kernel launch of `cmd` (the last launch of a name wins)."""
    os.makedirs(out_dir, exist_ok=True)
    keys = metric_map(build)
    names = sorted({n for parts in keys.values() for n, _ in parts})
    proc = subprocess.run([ncu, "--metrics", ",".join(names), "--csv", "--print-units", "base",
                           "--print-kernel-base", "function", "--clock-control", "none", *cmd],
                          capture_output=True, text=True, check=False)
    with open(os.path.join(out_dir, "ncu.csv"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"ncu failed ({proc.returncode}): {proc.stderr.strip()[-600:]}")
    rows = csv.DictReader(io.StringIO("\n".join(l for l in proc.stdout.splitlines()
                                                if l.startswith('"'))))
    raw = {}  # (launch id, kernel) -> {ncu metric: value}
    for r in rows:
        raw.setdefault((r["ID"], r["Kernel Name"]), {})[r["Metric Name"]] = number(r["Metric Value"])
    result = {}
    for (_, kernel), values in sorted(raw.items(), key=lambda kv: int(kv[0][0])):
        result[kernel] = {key: sum(w * (values.get(n) or 0.0) for n, w in parts)
                          for key, parts in keys.items()
                          if all(n in values for n, _ in parts)}
    return result


def agree(what, ours, theirs, rel=0.05, points=0.5):
    """Within rel of the larger value; a percentage also within `points` points (near 0, a
    relative bound means nothing)."""
    if ours is None:
        print(f"FAIL {what}: pasta has no value (ncu {theirs:.6g})")
        return False
    diff = abs(ours - theirs)
    ok = diff <= rel * max(abs(ours), abs(theirs)) or (what.endswith("_pct") and diff <= points)
    print(f"{'ok  ' if ok else 'FAIL'} {what}: pasta {ours:.6g}, ncu {theirs:.6g}")
    return ok


def main(argv):
    if "--" not in argv or len(argv) < 5:
        print(__doc__)
        return 2
    i = argv.index("--")
    build, out = argv[1], argv[2]
    print(json.dumps(collect("ncu", build, argv[i + 1:], out), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

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


# The L2 sectors a kernel's own loads and stores bring to L2 (from the SMs' L1/TEX), which ncu
# measures beside the metrics. Every profiled range also carries ~45K sectors (1.4 MB) of L2
# traffic that is not the kernel's, nearly all of them hits, under ncu as under pasta, and not
# as much under both (bench/gpu/probe, the `idle` kernel): a kernel's L2 hit rate is compared
# only when its own L2 traffic is at least L2_OWN_FLOOR sectors, over ten times that.
# The metrics op_counters.profile.json sums over a kernel entry's launches; the others are
# per-launch means.
ADDITIVE = ("dram_bytes_read", "dram_bytes_write", "flops", "inst_executed")

L2_OWN = ("l2_own_sectors", "lts__t_sectors_srcunit_tex.sum")
L2_OWN_FLOOR = 512 * 1024  # 16 MiB


def l2_compared(own_sectors):
    """Whether a kernel's L2 hit rate is compared, given ncu's count of its own L2 sectors
    (None: not measured, compared)."""
    return own_sectors is None or own_sectors >= L2_OWN_FLOOR


def metric_map(build):
    """{key: [(ncu metric, weight), ...]} from pasta-trace."""
    out = subprocess.run([f"{build}/cli/pasta-trace", "metrics"], capture_output=True, text=True,
                         check=True).stdout
    return {k: [(p["ncu"], p["weight"]) for p in v] for k, v in json.loads(out).items()}


def number(text):
    return float(text.replace(",", "")) if text not in ("", "n/a") else None


def names(keys, own_l2=True):
    """The ncu metrics that make up `keys` (metric_map()'s, or some of them), and with
    `own_l2` L2_OWN's, for ncu --metrics."""
    own = {L2_OWN[1]} if own_l2 else set()
    return sorted({n for parts in keys.values() for n, _ in parts} | own)


def launches(text):
    """{(ID, kernel name, grid, block): {ncu metric: value}} from ncu's CSV, one per launch,
    the grid and block as ncu writes them."""
    rows = csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"'))))
    raw = {}
    for r in rows:
        launch = (int(r["ID"]), r["Kernel Name"], r["Grid Size"], r["Block Size"])
        raw.setdefault(launch, {})[r["Metric Name"]] = number(r["Metric Value"])
    return raw


def launch_values(keys, values):
    """{key: value} of one launch from ncu's {metric: value}: each key of `keys` whose ncu
    metrics were all measured, and L2_OWN's key when it was."""
    out = {key: sum(w * (values.get(n) or 0.0) for n, w in parts)
           for key, parts in keys.items() if all(n in values for n, _ in parts)}
    if values.get(L2_OWN[1]) is not None:
        out[L2_OWN[0]] = values[L2_OWN[1]]
    return out


def collect(ncu, build, cmd, out_dir):
    """{kernel: {key: value}} for every kernel launch of `cmd` (the last launch of a name wins),
    with L2_OWN's key too."""
    os.makedirs(out_dir, exist_ok=True)
    keys = metric_map(build)
    proc = subprocess.run([ncu, "--metrics", ",".join(names(keys)), "--csv", "--print-units",
                           "base", "--print-kernel-base", "function", "--clock-control", "none",
                           *cmd],
                          capture_output=True, text=True, check=False)
    with open(os.path.join(out_dir, "ncu.csv"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.exit(f"ncu failed ({proc.returncode}): {proc.stderr.strip()[-600:]}")
    result = {}
    for (_, kernel, _, _), values in sorted(launches(proc.stdout).items()):  # in launch order
        result[kernel] = launch_values(keys, values)
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

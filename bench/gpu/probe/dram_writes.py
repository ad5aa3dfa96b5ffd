#!/usr/bin/env python3
"""What a small kernel's DRAM bytes (written and read) contain, in ncu and in pasta (issue 56):
builds bench/gpu/probe/dram_writes.cu, runs it under

  ncu kernel replay, --cache-control all, pasta's whole metric set (many passes: ncu saves the
      memory before the first and restores it before each other one)
  the same with `dirty` (the kernel before each) profiled too, as every kernel of a model is
  ncu kernel replay, --cache-control all, the DRAM metrics alone (one pass, nothing restored)
  ncu kernel replay, --cache-control none, the whole set
  ncu application replay (the program run once per pass, nothing saved or restored), cache all,
      the whole set and the DRAM metrics alone
  pasta run --counters (pasta's user replay, L2 flushed before every pass), and with
      PASTA_COUNTER_CACHE=none

and prints, per kernel, the bytes written and read each way beside what the kernel stores and
loads (its source says). Every run's checksum must equal the plain run's.

    dram_writes.py BUILD_DIR OUT_DIR
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ncu_metrics  # noqa: E402
from op_counters import ncu_command, profile_entries  # noqa: E402

# What each kernel stores and loads, in bytes (dram_writes.cu).
KERNELS = {
    "write_64k": (64 << 10, 0),
    "write_1m": (1 << 20, 0),
    "write_8m": (8 << 20, 0),
    "rmw_1m": (1 << 20, 1 << 20),
    "read_1m": (0, 1 << 20),
    "copy_1m": (1 << 20, 1 << 20),
    "gather_256k": (256 << 10, 256 << 10),
    "write_1m_pool": (1 << 20, 0),
    "copy_1m_pool": (1 << 20, 1 << 20),
    "gather_256k_pool": (256 << 10, 256 << 10),
}
KEYS = ("dram_bytes_write", "dram_bytes_read")


def probe_kernel(name):
    """The KERNELS key that kernel `name` (mangled or not) is, or None (`dirty`)."""
    return next((k for k in KERNELS if re.match(rf"(_Z\d+)?{k}(P|\(|$)", name)), None)


def checksum(text):
    m = re.search(r"checksum (\S+)", text)
    return m[1] if m else None


def ncu_run(build, program, out, name, replay, cache, keys, every=False):
    """{kernel: {key: value}} of one ncu run (each kernel launches once); `every`: `dirty`'s
    launches profiled too, as every kernel of a model is when ncu profiles it all."""
    wanted = {k: v for k, v in ncu_metrics.metric_map(build).items() if k in keys}
    only = [] if every else ["--kernel-name", "regex:^(" + "|".join(KERNELS) + ")$"]
    proc = subprocess.run(ncu_command(wanted, ["--replay-mode", replay, "--cache-control", cache,
                                               *only, program], own_l2=False),
                          capture_output=True, text=True, check=False)
    with open(os.path.join(out, f"{name}.csv"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        print(f"{name}: ncu failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        return None
    result = {}
    for (_, kernel, _, _), values in sorted(ncu_metrics.launches(proc.stdout).items()):
        if key := probe_kernel(kernel):
            result[key] = ncu_metrics.launch_values(wanted, values)
    return result, checksum(proc.stdout)


def pasta_run(build, program, out, name, env):
    d = os.path.join(out, name)
    proc = subprocess.run([f"{build}/bin/pasta", "run", "--counters", "-f", "-o", d, "--", program],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "PASTA_PRINT": "none", **env})
    if proc.returncode != 0:
        print(f"{name}: pasta failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        return None
    with open(os.path.join(d, "op_counters.profile.json")) as f:
        profile = json.load(f)
    result = {}
    for e in profile_entries(profile):
        if key := probe_kernel(e["kernel"]):
            result[key] = {k: v for k, v in (e.get("metrics") or {}).items()
                           if k in KEYS and v is not None}
    return result, checksum(proc.stdout)


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    build, out = argv[1], argv[2]
    os.makedirs(out, exist_ok=True)
    program = os.path.join(out, "dram_writes")
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", program,
                    os.path.join(HERE, "dram_writes.cu")], check=True)
    plain = checksum(subprocess.run([program], capture_output=True, text=True,
                                    check=True).stdout)
    full = tuple(ncu_metrics.metric_map(build))
    runs = {
        "ncu kernel, all, full set": lambda n: ncu_run(build, program, out, n, "kernel", "all",
                                                       full),
        "ncu kernel, all, full set, dirty too": lambda n: ncu_run(
            build, program, out, n, "kernel", "all", full, every=True),
        "ncu kernel, all, DRAM only": lambda n: ncu_run(build, program, out, n, "kernel", "all",
                                                        KEYS),
        "ncu kernel, none, full set": lambda n: ncu_run(build, program, out, n, "kernel", "none",
                                                        full),
        "ncu application, all, full set": lambda n: ncu_run(build, program, out, n,
                                                            "application", "all", full),
        "ncu application, all, DRAM only": lambda n: ncu_run(build, program, out, n,
                                                             "application", "all", KEYS),
        "pasta, L2 flushed": lambda n: pasta_run(build, program, out, n, {}),
        "pasta, PASTA_COUNTER_CACHE=none": lambda n: pasta_run(
            build, program, out, n, {"PASTA_COUNTER_CACHE": "none"}),
    }
    results, ok = {}, True
    for i, (label, go) in enumerate(runs.items()):
        got = go(f"run{i}")
        if got is None:
            ok = False
            continue
        results[label], sums = got
        if sums != plain:
            print(f"FAIL {label}: checksum {sums}, plain run {plain}")
            ok = False
    with open(os.path.join(out, "dram_writes.json"), "w") as f:
        json.dump(results, f, indent=1)
    for key in KEYS:
        print(f"\n{key}, KiB (the kernel's own: stores for written, loads for read)")
        print(f"  {'kernel':<12} {'own':>8} " + " ".join(f"{l[:24]:>24}" for l in results))
        for kernel, (stores, loads) in KERNELS.items():
            own = stores if key == "dram_bytes_write" else loads
            cells = []
            for label in results:
                v = results[label].get(kernel, {}).get(key)
                cells.append(f"{v / 1024:>24.1f}" if v is not None else f"{'-':>24}")
            print(f"  {kernel:<12} {own / 1024:>8.0f} " + " ".join(cells))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

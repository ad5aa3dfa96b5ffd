#!/usr/bin/env python3
"""Memory hotness of your own kernel: device annotations against the
sanitizer path, on the same kernel, in one run on one GPU.

The kernel is vector add (c = a + b, 3 accesses a thread) from
examples/cuda/annotated.cu, timed per launch (cudaEvents around K launches):
  native       the plain build: recorders compile to nothing
  annotations  device::Annotations (-DPASTA_DEVICE_ANNOTATIONS): warp-aggregated
               page counters (the warm-up launch taught the allocations),
               post-pass + copy back, begin/end included
  sanitizer    the plain build under `pasta run --memory` (nv::Sanitizer +
               proc::GpuBucketing patching every global access)

    annotations.py BUILD_DIR [OUT_DIR] [--floats N] [--launches K]
prints a table of ms per launch and ratios, and writes annotations.csv.
"""
import csv
import os
import re
import subprocess
import sys


def per_launch_ms(cmd, out_dir):
    env = dict(os.environ, PASTA_OUTPUT_DIR=out_dir, PASTA_PRINT="none")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    m = re.search(r"([0-9.]+) ms per launch", proc.stdout)
    if proc.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return float(m.group(1))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(zip(argv[1::2], argv[2::2]))
    if not args:
        print(__doc__)
        return 2
    build = os.path.abspath(args[0])
    out = os.path.abspath(args[1] if len(args) > 1 else "bench-annotations")
    os.makedirs(out, exist_ok=True)
    floats = opts.get("--floats", str(1 << 24))
    launches = opts.get("--launches", "20")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    workload = ["--vecadd", floats, launches]
    native = per_launch_ms([f"{build}/examples/annotated", *workload], f"{out}/native")
    annotated = per_launch_ms([f"{build}/examples/annotated_pasta", *workload], f"{out}/annotations")
    sanitizer = per_launch_ms([f"{build}/bin/pasta", "run", "-f", "--memory", "-o",
                               f"{out}/sanitizer", "--", f"{build}/examples/annotated", *workload],
                              f"{out}/sanitizer")
    rows = [("native", native), ("annotations", annotated), ("sanitizer", sanitizer)]
    print(f"vector add, {floats} floats, {launches} launches, {gpu}")
    print(f"{'variant':<12} {'ms/launch':>10} {'x native':>9}")
    for name, ms in rows:
        print(f"{name:<12} {ms:>10.4f} {ms / native:>9.2f}")
    print(f"sanitizer / annotations: {sanitizer / annotated:.2f}x")
    with open(os.path.join(out, "annotations.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "variant", "ms_per_launch", "x_native"])
        for name, ms in rows:
            w.writerow([gpu, name, f"{ms:.5f}", f"{ms / native:.3f}"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

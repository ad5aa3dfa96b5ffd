#!/usr/bin/env python3
"""modules_after_window.py: what an nn.Module call costs under `--torch` outside a steps capture
window, before it opens (modules followed: the tracker's monitoring callbacks run at every
call) and after it closed for good (no longer followed), against no pipeline at all. The
modules test's pipeline library (tests/torch/module_probe.cpp) is loaded into Python 3.12; the
model is 100 nn.Identity modules and a Linear in a Sequential (101 module calls a forward, one
operator), run 20 blocks of 200 forwards under no_grad after two optimizer steps.

  before   PASTA_CAPTURE_RANGE=steps:100000-100001 (the window never opens)
  after    PASTA_CAPTURE_RANGE=steps:0-0 (open for the first step, closed for good after it)
  native   no pipeline

Every variant runs in a process of its own, interleaved round by round; prints each variant's
median ns a module call over the rounds, and the ratio of each round's before and after to its
native: median and bootstrap 95% interval. A run counts only if pasta followed modules (its
pasta_modules switch appeared) and, for `after`, its log says module calls stopped being
followed.

  bench/modules_after_window.py --python PY3.12 --probe LIB [--rounds 10] [--cpu N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
from harness import bootstrap  # noqa: E402

VARIANTS = {"native": None, "before": "steps:100000-100001", "after": "steps:0-0"}
CLOSED = "no longer followed once the capture window closed for good"

CHILD = r"""
import ctypes, statistics, sys, time
import torch
probe = sys.argv[1]
if probe:
    ctypes.CDLL(probe, mode=ctypes.RTLD_GLOBAL).InitializeInjection()
net = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(100)], torch.nn.Linear(4, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
deadline = time.monotonic() + 60
while probe and "pasta_modules" not in sys.modules and time.monotonic() < deadline:
    for _ in range(64):
        torch.ones(8).add_(1)
x = torch.randn(2, 4)
for _ in range(2):
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
times = []
with torch.no_grad():
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(200):
            net(x)
        times.append((time.perf_counter() - t0) / 200 / 101 * 1e9)
print("followed" if "pasta_modules" in sys.modules else "not followed", statistics.median(times))
"""


def run(args, variant, out):
    """ns a module call of one process of `variant`, or the reason it does not count."""
    window = VARIANTS[variant]
    env = dict(os.environ, PASTA_OUTPUT_DIR=out, PASTA_PRINT="none", PASTA_VERBOSE="1")
    if window:
        env["PASTA_CAPTURE_RANGE"] = window
    cmd = ([] if args.cpu is None else ["taskset", "-c", str(args.cpu)]) + \
        [args.python, "-c", CHILD, args.probe if window else ""]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not proc.stdout.strip():
        return f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
    state, ns = proc.stdout.strip().splitlines()[-1].rsplit(maxsplit=1)
    if window and state != "followed":
        return "pasta never followed modules"
    if variant == "after" and CLOSED not in proc.stderr:
        return "its log does not say module calls stopped being followed"
    return float(ns)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", required=True, help="a Python 3.12 with PyTorch")
    p.add_argument("--probe", required=True, help="libpasta_torch_probe.so")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--cpu", type=int, help="pin every process to this CPU")
    args = p.parse_args()
    ns = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="pasta-modules-after-") as tmp:
        for r in range(args.rounds):
            got = {v: run(args, v, os.path.join(tmp, f"{v}{r}")) for v in VARIANTS}
            bad = {v: g for v, g in got.items() if isinstance(g, str)}
            if bad:
                print(f"round {r + 1}: does not count: {bad}", flush=True)
                continue
            for v, g in got.items():
                ns[v].append(g)
            print(f"round {r + 1}: " + ", ".join(f"{v} {g:.0f}" for v, g in got.items()),
                  flush=True)
    if not ns["native"]:
        print("FAILED: no round counted")
        return 1
    print(f"{len(ns['native'])} rounds counted; ns a module call, median (min..max):")
    for v, xs in ns.items():
        print(f"  {v:7} {statistics.median(xs):7.0f} ({min(xs):.0f}..{max(xs):.0f})")
    for v in ("before", "after"):
        med, lo, hi = bootstrap([a / b for a, b in zip(ns[v], ns["native"])])
        print(f"  {v} / native: {med:.3f} ({lo:.3f}..{hi:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

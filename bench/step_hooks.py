#!/usr/bin/env python3
"""step_hooks.py: what torch::Steps (`--capture-range steps:A-B` without --torch) costs a
training step: the two global optimizer step hooks it adds (torch.optim calls the pre hook
before and the post hook after every Optimizer.step), timed as torch calls them, in one
process; and, for scale, a whole step of a small SGD on the CPU. Prints one JSON line with the
CPU's name. A benchmark, not a test.

  bench/step_hooks.py PROBE_LIB [--calls 200000] [--rounds 10]

PROBE_LIB: a library with torch::Steps and InitializeInjection (the test build's
tests/libpasta_steps_probe.so). The window is kept open the whole time (steps:0-...), so each
post hook also moves the capture window, as a step inside a window does. The run counts: at
its exit the report must say that every step timed ended (each post hook call and each whole
step), or the numbers are not printed."""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aten_ops import cpu_name  # noqa: E402


def per_call_ns(fn, calls):
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls


def measure(args):
    """The profiled process: prints the measurement as a JSON line."""
    import torch
    from torch.optim import optimizer as optim
    before = (len(optim._global_optimizer_pre_hooks), len(optim._global_optimizer_post_hooks))
    lib = ctypes.CDLL(args.probe)
    lib.InitializeInjection()
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model(torch.randn(8, 64)).sum().backward()
    opt.step()  # the pending call that installs the hooks has run by now
    pre = list(optim._global_optimizer_pre_hooks.values())[before[0]:]
    post = list(optim._global_optimizer_post_hooks.values())[before[1]:]
    if len(pre) != 1 or len(post) != 1:
        sys.exit(f"step_hooks: expected one pre and one post hook from {args.probe}, found "
                 f"{len(pre)} and {len(post)}")
    pre, post = pre[0], post[0]

    def hooks():
        pre(opt, (), {})
        post(opt, (), {})

    def nothing():
        pass

    hooks_ns, empty_ns, step_us = [], [], []
    for _ in range(args.rounds):  # interleaved: the loop alone, the hooks, a whole step
        empty_ns.append(per_call_ns(nothing, args.calls))
        hooks_ns.append(per_call_ns(hooks, args.calls))
        step_us.append(per_call_ns(opt.step, args.calls // 20) / 1e3)
    print(json.dumps({"cpu": cpu_name(), "rounds": args.rounds, "calls": args.calls,
                      "hooks_ns_per_step": round(statistics.median(hooks_ns) -
                                                 statistics.median(empty_ns), 1),
                      "hooks_ns_min_max": [round(min(hooks_ns) - statistics.median(empty_ns), 1),
                                           round(max(hooks_ns) - statistics.median(empty_ns), 1)],
                      "sgd_step_us": round(statistics.median(step_us), 2),
                      "steps": 1 + args.rounds * (args.calls + args.calls // 20)}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("probe")
    p.add_argument("--calls", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        measure(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="pasta-step-hooks-") as out:
        proc = subprocess.run([sys.executable, __file__, args.probe, "--child", "--calls",
                               str(args.calls), "--rounds", str(args.rounds)],
                              env=dict(os.environ, PASTA_CAPTURE_RANGE=f"steps:0-{2**62}",
                                       PASTA_PRINT="none", PASTA_OUTPUT_DIR=out),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"step_hooks: the measuring process exited {proc.returncode}:\n{proc.stderr}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        with open(os.path.join(out, "scope_time.json")) as f:
            window = json.load(f).get("window", "")
    ended = re.search(r"\((\d+) optimizer steps ended", window)
    if not ended or int(ended[1]) != result["steps"]:
        sys.exit(f"step_hooks: the run timed {result['steps']} steps and its report says "
                 f"{window!r}: not counted, not printed")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

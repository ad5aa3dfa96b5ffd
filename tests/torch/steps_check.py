#!/usr/bin/env python3
"""A `steps:A-B` capture range without --torch, on the CPU: torch::Steps (the probe library
tests/torch/steps_probe.cpp, no operator callbacks, no PyTorch linked) counts the optimizer
steps through torch.optim's global step hooks.

The program trains a small model for 6 iterations, each marked with a pasta scope
"iteration K"; iterations 0-2 call a wrapper optimizer whose step calls an SGD's (one step of
the program, two nested Optimizer.step calls), iterations 3-5 the SGD's own. The truth is
the program's own count: under steps:2-3 exactly iterations 2 and 3 are inside the window, and
the run ended 6 optimizer steps (outermost ones). Loaded before `import torch`, the library
cannot hook torch.optim: it says so in one line and the window never opens. Either way the
parameters end as in a run without pasta.

Usage: steps_check.py --python PY --probe LIB --out DIR
       steps_check.py --child [--probe LIB] [--early]   (the program itself)
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402


def child(probe, early):
    import ctypes
    lib = None
    if probe and early:  # before torch: nothing to hook yet
        lib = ctypes.CDLL(probe)
        lib.InitializeInjection()
    import torch
    if probe and not early:
        lib = ctypes.CDLL(probe)
        lib.InitializeInjection()

    class Wrapper(torch.optim.Optimizer):
        """An optimizer whose step is another's (as ZeroRedundancyOptimizer's is)."""

        def __init__(self, inner):
            self.inner = inner
            super().__init__(inner.param_groups, {})

        def step(self, closure=None):
            return self.inner.step(closure)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    wrapper = Wrapper(sgd)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for k in range(6):
        if lib:
            lib.probe_scope(f"iteration {k}".encode(), 1)
        opt = wrapper if k < 3 else sgd
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if lib:
            lib.probe_scope(None, 0)
    print(json.dumps({"checksum": float(sum(p.double().sum() for p in model.parameters()))}),
          flush=True)


def run_child(args, out, early=False, probe=True):
    cmd = [args.python, __file__, "--child"] + (["--probe", args.probe] if probe else []) + \
        (["--early"] if early else [])
    env = dict(os.environ, PASTA_OUTPUT_DIR=out, PASTA_PRINT="none",
               PASTA_CAPTURE_RANGE="steps:2-3")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if proc.returncode != 0:
        sys.exit(f"FAIL {' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def scope_report(out):
    with open(os.path.join(out, "scope_time.json")) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--probe")
    p.add_argument("--out")
    p.add_argument("--child", action="store_true")
    p.add_argument("--early", action="store_true")
    args = p.parse_args()
    if args.child:
        child(args.probe, args.early)
        return 0
    if subprocess.run([args.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"skipped: {args.python} has no torch")
        return 77
    native, _ = run_child(args, os.path.join(args.out, "native"), probe=False)

    out = os.path.join(args.out, "hooked")
    res, _ = run_child(args, out)
    report = scope_report(out)
    scopes = {r["scope"]: r["calls"] for r in report["tables"]["scopes"]}
    checks.expect("scopes inside steps:2-3", scopes, {"iteration 2": 1, "iteration 3": 1})
    checks.expect("the report's window", report.get("window"),
                  "capture range steps:2-3: optimizer steps 2 to 3 (6 optimizer steps ended in "
                  "the run)")
    checks.expect("parameters as without pasta", res["checksum"], native["checksum"])

    out = os.path.join(args.out, "early")
    res, stderr = run_child(args, out, early=True)
    said = [line for line in stderr.splitlines() if "torch.optim was not imported" in line]
    checks.expect("loaded before torch: one line says so", len(said), 1)
    report = scope_report(out)
    checks.expect("... and the window never opened", report.get("partial", "").startswith(
        "capture range steps:2-3 never opened: the run ended 0 optimizer steps"), True)
    checks.expect("... no scope captured", report["tables"].get("scopes", []), [])
    checks.expect("... parameters as without pasta", res["checksum"], native["checksum"])
    return checks.summary("torch::Steps: every check held")

if __name__ == "__main__":
    sys.exit(main())

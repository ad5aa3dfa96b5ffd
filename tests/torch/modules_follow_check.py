#!/usr/bin/env python3
"""pasta_modules.follow(False) and follow(True) switch modules and source lines off and on in
a running process, on the CPU (the probe library loaded into Python 3.12 with PyTorch).

The program trains Net (Linear layers a and b) in record_function ranges: "followed" steps,
then "paused" ones after follow(False), then "followed" again after follow(True). The truth:
PyTorch's own global forward pre-hook counts the module calls of a step (Net, a, b: 3), and
the model's marked lines. pasta must record a module call for each call of a followed step
and none of a paused one; every operator of a paused step carries no module and no line, and
the products of a followed step carry Net.a or Net.b and their marked lines.

Usage: modules_follow_check.py --python PY --probe LIB --pasta-trace BIN --out DIR
       modules_follow_check.py --child --probe LIB   (the profiled program itself)
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from modules_check import marked_lines, parse_dump  # noqa: E402

PLAN = ["followed", "followed", "paused", "paused", "paused", "followed"]


def child(probe):
    import ctypes

    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 32)
            self.b = torch.nn.Linear(32, 8)

        def forward(self, x):
            h = self.a(x)  # line: a
            return self.b(torch.relu(h))  # line: b

    torch.manual_seed(0)
    lib = ctypes.CDLL(probe, mode=ctypes.RTLD_GLOBAL)
    lib.InitializeInjection()
    model = Net()
    x = torch.randn(4, 16)
    model(x).sum().backward()  # before the first: pasta follows modules from here
    import pasta_modules
    calls = []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda *_: calls.__setitem__(-1, calls[-1] + 1))
    following = True
    for kind in PLAN:
        if (kind == "followed") != following:
            following = kind == "followed"
            pasta_modules.follow(following)
        calls.append(0)
        with torch.profiler.record_function(kind):
            model(x).sum().backward()
    hook.remove()
    print("calls", *calls, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--probe")
    p.add_argument("--pasta-trace")
    p.add_argument("--out")
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        child(args.probe)
        return 0
    has = subprocess.run([args.python, "-c", "import sys, torch; print(hasattr(sys, 'monitoring'))"],
                         capture_output=True, text=True)
    if has.returncode != 0 or has.stdout.split() != ["True"]:
        print(f"skipped: {args.python} has no torch, or no sys.monitoring (Python 3.12+)")
        return 77
    os.makedirs(args.out, exist_ok=True)
    pasta_dir = os.path.join(args.out, "pasta")
    env = dict(os.environ, PASTA_OUTPUT_DIR=pasta_dir, PASTA_PRINT="none", PASTA_VERBOSE="1")
    proc = subprocess.run([args.python, os.path.abspath(__file__), "--child", "--probe", args.probe],
                          env=env, capture_output=True, text=True, timeout=240)
    said = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("calls ")]
    if proc.returncode != 0 or not said:
        print(proc.stdout[-2000:], proc.stderr[-3000:])
        print("FAIL the program did not finish")
        return 1
    hooks = [int(n) for n in said[0]]
    dump = parse_dump(subprocess.run([args.pasta_trace, "dump", os.path.join(pasta_dir, "trace.pasta")],
                                     capture_output=True, text=True, check=True).stdout)
    begins = [f for k, f in dump if k == "OpBegin"]
    ends = {f["id"]: int(f["time_ns"]) for k, f in dump if k == "OpEnd"}
    steps = sorted((int(f["time_ns"]), ends.get(f["id"], 0), f["name"]) for f in begins
                   if f.get("name") in ("followed", "paused"))
    module_calls = [int(f["begin_ns"]) for k, f in dump if k == "ModuleCall"]
    here = os.path.abspath(__file__)
    marks = marked_lines(here)
    failures = []
    print(f"  steps {[s[2] for s in steps]}; module calls a step by PyTorch's hook: {hooks}")
    if [s[2] for s in steps] != PLAN:
        failures.append(f"recorded steps {[s[2] for s in steps]}, want {PLAN}")
    for (a, b, kind), hooked in zip(steps, hooks):
        recorded = sum(1 for t in module_calls if a <= t <= b)
        ops = [f for f in begins if a < int(f["time_ns"]) < b]
        tagged = [f for f in ops if f.get("module") or f.get("source")]
        products = {(f.get("module"), f.get("source")) for f in ops
                    if f["name"] == "aten::addmm" and f.get("backward") != "1"}
        print(f"  {kind:9} module calls {recorded} (hook {hooked}); operators {len(ops)}, "
              f"{len(tagged)} with a module or line; forward products {sorted(products)}")
        want = hooked if kind == "followed" else 0
        if recorded != want:
            failures.append(f"a {kind} step recorded {recorded} module calls, want {want}")
        if kind == "paused" and tagged:
            failures.append(f"a paused step's operators carry modules or lines: {tagged[:2]}")
        want_products = ({("Net.a", f"{here}:{marks['a']}"), ("Net.b", f"{here}:{marks['b']}")}
                         if kind == "followed" else {("", "")})
        if products != want_products:
            failures.append(f"a {kind} step's products carry {sorted(products)}, "
                            f"want {sorted(want_products)}")
    for f in failures:
        print("FAIL", f)
    print("follow() switches modules and lines" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

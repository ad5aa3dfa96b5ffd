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
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from modules_check import marked_lines, probe_main, verdict  # noqa: E402

PLAN = ["followed", "followed", "paused", "paused", "paused", "followed"]


def profiled_net(probe):
    """torch, Net (Linear layers a and b: 3 module calls a forward, its lines marked in this
    file) seeded and built with the probe library loaded and started, and an input."""
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
    return torch, Net(), torch.randn(4, 16)


def child(probe):
    torch, model, x = profiled_net(probe)
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


def check(args, proc, dump):
    said = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("calls ")]
    if not said:
        print(proc.stdout[-2000:])
        print("FAIL the program printed no module calls")
        return 1
    hooks = [int(n) for n in said[0]]
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
    return verdict(failures, "follow() switches modules and lines")


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, os.path.abspath(__file__), child, check))

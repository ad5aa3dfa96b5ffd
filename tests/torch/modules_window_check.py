#!/usr/bin/env python3
"""Once a steps capture window has closed for good, nn.Module calls are no longer followed, on
the CPU (the probe library loaded into Python 3.12 with PyTorch).

The program waits, with tensor operations alone, until pasta follows modules (its
pasta_modules switch appears), then trains Net (Linear layers a and b) for 6 steps under
PASTA_CAPTURE_RANGE=steps:2-3: the window is open for the third and fourth steps and closes
for good as the fourth step's optimizer step ends. The truth: PyTorch's own global forward
pre-hook counts each step's module calls (Net, a, b: 3). pasta must record a module call for
each call of the window's steps (ModuleCall events), and follow (its verbose count) exactly
the calls of the first four steps: none of the last two, whose calls each cost it a
monitoring callback before.

Usage: modules_window_check.py --python PY --probe LIB --pasta-trace BIN --out DIR
       modules_window_check.py --child --probe LIB   (the profiled program itself)
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from modules_check import probe_main, verdict  # noqa: E402
from modules_follow_check import profiled_net  # noqa: E402

STEPS = 6
WINDOW = (2, 3)  # the steps (from 0) the window holds: PASTA_CAPTURE_RANGE=steps:2-3


def child(probe):
    torch, model, x = profiled_net(probe)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # Operators alone until modules are followed (a sampled poll installs the tracker), so
    # that every module call below is counted from its first.
    deadline = time.monotonic() + 60
    while "pasta_modules" not in sys.modules and time.monotonic() < deadline:
        for _ in range(64):
            torch.ones(8).add_(1)
    print("followed", "pasta_modules" in sys.modules, flush=True)
    calls = []
    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda *_: calls.__setitem__(-1, calls[-1] + 1))
    for _ in range(STEPS):
        calls.append(0)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    hook.remove()
    print("calls", *calls, flush=True)


def check(args, proc, dump):
    said = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()
            if line.startswith(("calls ", "followed "))}
    if "calls" not in said:
        print(proc.stdout[-2000:], proc.stderr[-2000:])
        print("FAIL the program printed no module calls")
        return 1
    hooks = [int(n) for n in said["calls"]]
    failures = []
    if said.get("followed") != ["True"]:
        failures.append("pasta never followed modules (no pasta_modules within 60 s)")
    recorded = sum(1 for k, _ in dump if k == "ModuleCall")
    followed = re.search(r"modules: (\d+) module calls;.*", proc.stderr)
    closed = "no longer followed once the capture window closed for good" in proc.stderr
    inside = sum(hooks[WINDOW[0]:WINDOW[1] + 1])
    until_close = sum(hooks[:WINDOW[1] + 1])
    print(f"  module calls a step by PyTorch's hook: {hooks}; recorded {recorded} (the window's "
          f"{inside}); followed {followed.group(1) if followed else None} (until it closed: "
          f"{until_close}, in all: {sum(hooks)})")
    if not all(hooks) or len(hooks) != STEPS:
        failures.append(f"the hook counted {hooks}: a step without module calls proves nothing")
    if recorded != inside:
        failures.append(f"{recorded} module calls recorded, want the window's {inside}")
    if not followed or int(followed.group(1)) != until_close:
        failures.append(f"pasta followed {followed.group(1) if followed else 'no'} module calls, "
                        f"want {until_close}: those until the window closed for good")
    if not closed:
        failures.append("the log does not say module calls stopped being followed")
    return verdict(failures, "module calls followed until the capture window closed for good")


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, os.path.abspath(__file__), child, check,
                        env=lambda args: {"PASTA_CAPTURE_RANGE": "steps:2-3"}))

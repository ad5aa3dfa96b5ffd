#!/usr/bin/env python3
"""modules_cost.py: what following nn.Modules and source lines adds to torch::Aten's cost on
the program's thread, on CPU tensors small enough that the step is all per-operator work:
the pasta pipeline library of the modules test (tests/torch/module_probe.cpp: operators,
modules and lines recorded to a trace) loaded into Python, with PASTA_MODULES and
PASTA_SOURCE_LINES on (the default) and off, and no pipeline at all. Every variant runs in a
process of its own, the variants interleaved round by round; prints each round's median step,
the on/off ratio's median with a bootstrap 95% interval, and the extra microseconds a step and
nanoseconds an operator call modules and lines add, from the medians and torch.profiler's count
of the step's operator calls (a process of its own).

A run counts only if its pipeline recorded what it should: with modules on, module_summary
lists every module of the model, each called once a step; with them off, none.

  bench/modules_cost.py --python PY3.12 --probe LIB [--rounds 10] [--steps 30] [--layers 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
from harness import bootstrap  # noqa: E402

VARIANTS = {"native": None, "modules off": {"PASTA_MODULES": "0", "PASTA_SOURCE_LINES": "0"},
            "modules on": {}}


def model(layers):
    """A GPT-2-like stack of blocks on CPU (width 64, 16 tokens): about 60 operator calls per
    block forward and backward, 6 modules per block."""
    import torch

    class Attention(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.qkv = torch.nn.Linear(width, 3 * width)
            self.proj = torch.nn.Linear(width, width)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            att = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
            return self.proj(att @ v)

    class Block(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.ln = torch.nn.LayerNorm(width)
            self.attn = Attention(width)
            self.fc = torch.nn.Linear(width, 4 * width)
            self.out = torch.nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn(self.ln(x))
            return x + self.out(torch.nn.functional.gelu(self.fc(x)))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList(Block(64) for _ in range(layers))

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x

    torch.manual_seed(0)
    return Net()


def child(args):
    import torch
    torch.set_num_threads(1)
    net = model(args.layers)
    x = torch.randn(1, 16, 64)
    # The modules a step calls, named as pasta names them (a ModuleList is never called).
    modules = ["Net" + ("." + n if n else "") for n, m in net.named_modules()
               if not isinstance(m, torch.nn.ModuleList)]
    if args.probe:
        import ctypes
        ctypes.CDLL(args.probe, mode=ctypes.RTLD_GLOBAL).InitializeInjection()
    if args.count:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            net(x).sum().backward()
        ops = sum(1 for e in prof.events() if e.name.startswith("aten::"))
        print(json.dumps({"ops": ops, "modules": len(modules)}))
        return 0
    for _ in range(3):
        net(x).sum().backward()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        net(x).sum().backward()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"step_us": statistics.median(times) * 1e6, "modules": modules,
                      "steps": args.steps}))
    return 0


def verified(out, on, modules, steps):
    """None if the run's module_summary says what it should (modules on: each module of the
    model called at least once a timed step; off: no module), else why not. The steps before
    the tracker was in (it installs during the first step) may name fewer or other modules."""
    try:
        with open(os.path.join(out, "module_summary.json")) as f:
            rows = json.load(f)["tables"]["modules"]
    except (OSError, ValueError, KeyError) as e:
        return f"no module_summary ({e})"
    named = [r for r in rows if r["module"] != "(no module)"]
    if not on:
        return None if not named else f"{len(named)} modules recorded with modules off"
    calls = {r["module"]: r["calls"] for r in named}
    short = [m for m in modules if calls.get(m, 0) < steps]
    return f"modules called fewer than {steps} times: {short[:5]}" if short else None


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--probe")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--child", action="store_true")
    p.add_argument("--count", action="store_true")
    args = p.parse_args()
    if args.child:
        return child(args)
    if not args.probe:
        p.error("--probe LIB is needed")
    me = os.path.abspath(__file__)
    base = [args.python, me, "--child", "--layers", str(args.layers), "--steps", str(args.steps)]
    count = json.loads(subprocess.run(base + ["--count"], capture_output=True, text=True,
                                      check=True).stdout.strip().splitlines()[-1])
    step_us = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="pasta-modules-cost-") as tmp:
        for r in range(args.rounds):
            for v, extra in VARIANTS.items():
                out = os.path.join(tmp, f"{r}-{v.replace(' ', '-')}")
                env = dict(os.environ, PASTA_PRINT="none", PASTA_OUTPUT_DIR=out, **(extra or {}))
                cmd = base + (["--probe", args.probe] if extra is not None else [])
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                if proc.returncode != 0:
                    print(f"FAILED {v} (round {r + 1}): exit {proc.returncode}\n{proc.stderr[-2000:]}")
                    return 1
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                if extra is not None:
                    why = verified(out, v == "modules on", res["modules"], res["steps"])
                    if why:
                        print(f"FAILED {v} (round {r + 1}): {why}")
                        return 1
                step_us[v].append(res["step_us"])
            print(f"round {r + 1} of {args.rounds}: " +
                  ", ".join(f"{v} {step_us[v][-1]:.0f} us" for v in VARIANTS), flush=True)
    ratio = [a / b for a, b in zip(step_us["modules on"], step_us["modules off"])]
    med, lo, hi = bootstrap(ratio)
    extra = statistics.median(step_us["modules on"]) - statistics.median(step_us["modules off"])
    print(f"\n{args.layers} blocks, {count['modules']} modules, {count['ops']} operator calls a "
          f"step (torch.profiler), median of {args.steps} steps a process, {args.rounds} "
          f"interleaved rounds")
    print(f"  {'variant':12} {'us/step':>9} {'min..max':>17}")
    for v in VARIANTS:
        print(f"  {v:12} {statistics.median(step_us[v]):9.0f} "
              f"{min(step_us[v]):8.0f}..{max(step_us[v]):<8.0f}")
    print(f"  modules on / off: median {med:.3f}, bootstrap 95% interval {lo:.3f}..{hi:.3f}")
    print(f"  modules and lines add {extra:.0f} us a step: {extra * 1e3 / count['ops']:.0f} ns an "
          f"operator call (module calls included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Extern kernels of a torch.compile'd model carry the nn.Module of the FX nodes they compute,
on the CPU (the probe library loaded into Python 3.12 with PyTorch).

The model: Net, an embedding e, Linear layers a and b without bias, and a head whose weight is
e's (tied, as GPT-2's lm_head is wte), compiled with Inductor. Its products are extern kernels,
called from the graph's code (`extern_kernels.mm(...)`). The truth is arithmetic: a step
computes head(b(a(e(x)))), so its forward graph calls one product each for a, b and head; its
backward graph two each (the gradients of the weight and of the input: e's output needs one,
for e's weight). The head's weight gradient is added to e's; Inductor folds that sum into the
product (an addmm a graph pass makes, with no metadata of its own), which must still be the
head's. Every product must carry Net.a, Net.b or Net.head, none Net (the module running the
graph, where they went before), and its line must be the model's own (this file).

Usage: compiled_extern_check.py --python PY --probe LIB --pasta-trace BIN --out DIR
       compiled_extern_check.py --child --probe LIB   (the profiled program itself)
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from modules_check import marked_lines, probe_main, verdict  # noqa: E402

STEPS = 2  # measured steps, after one that compiles


def child(probe):
    import ctypes

    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(50, 16)
            self.a = torch.nn.Linear(16, 32, bias=False)
            self.b = torch.nn.Linear(32, 16, bias=False)
            self.head = torch.nn.Linear(16, 50, bias=False)
            self.head.weight = self.e.weight

        def forward(self, x):
            h = self.a(self.e(x))  # line: a
            h = self.b(h)  # line: b
            return self.head(h)  # line: head

    torch.manual_seed(0)
    lib = ctypes.CDLL(probe, mode=ctypes.RTLD_GLOBAL)
    lib.InitializeInjection()
    model = torch.compile(Net())
    x = torch.randint(0, 50, (4, 8))
    for i in range(1 + STEPS):
        with torch.profiler.record_function("measured" if i else "compile"):
            model(x).sum().backward()
    print("ok", flush=True)


def inductor_env(args):
    # TORCHINDUCTOR_VEC_ISA_OK=1: Inductor takes the vector ISAs the CPU lists without building
    # and loading a probe library for each in a fresh Python (seven imports of torch, 11 of
    # this test's 28 s on two cores); its kernels are the ones the probes would have chosen.
    return {"TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="inductor-", dir=args.out),
            "TORCHINDUCTOR_COMPILE_THREADS": "1", "TORCHINDUCTOR_VEC_ISA_OK": "1"}


def check(args, proc, dump):
    said = [line for line in proc.stderr.splitlines() if "inductor" in line]
    print("\n".join("  " + line for line in said[-4:]))
    if "ok" not in proc.stdout.split():
        print(proc.stderr[-3000:])
        print("FAIL the compiled program did not finish")
        return 1
    begins = [f for k, f in dump if k == "OpBegin"]
    ends = {f["id"]: int(f["time_ns"]) for k, f in dump if k == "OpEnd"}
    windows = [(int(f["time_ns"]), ends.get(f["id"], 0)) for f in begins if f.get("name") == "measured"]
    products = ("aten::mm", "aten::addmm")
    inside = [f for f in begins if f.get("name") in products and
              any(a <= int(f["time_ns"]) <= b for a, b in windows)]
    # Top-level products only: an mm inside another operator is its caller's.
    by_id = {f["id"]: f for f in begins}
    tops = [f for f in inside if by_id.get(f.get("parent"), {}).get("name") not in products]
    got = {}
    for f in tops:
        key = (f.get("module", ""), "backward" if f.get("backward") == "1" else "forward")
        got[key] = got.get(key, 0) + 1
    want = {(f"Net.{m}", p): n * STEPS for m in ("a", "b", "head")
            for p, n in (("forward", 1), ("backward", 2))}
    marks = marked_lines(os.path.abspath(__file__))
    lines = {f.get("module"): f.get("source", "") for f in tops}
    here = os.path.abspath(__file__)
    want_lines = {f"Net.{m}": f"{here}:{marks[m]}" for m in ("a", "b", "head")}
    failures = []
    print(f"  measured windows: {len(windows)}; products in them, by module and pass: {got}")
    if len(windows) != STEPS:
        failures.append(f"{len(windows)} measured ranges recorded, not {STEPS}")
    if got != want:
        failures.append(f"products by module and pass {got}, want {want}")
    for module, line in want_lines.items():
        if lines.get(module) != line:
            failures.append(f"{module}'s products carry line {lines.get(module)!r}, want {line}")
    return verdict(failures, "extern kernels carry their modules and lines")


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, os.path.abspath(__file__), child, check, inductor_env))

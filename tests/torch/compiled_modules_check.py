#!/usr/bin/env python3
"""Modules and lines of a torch.compile'd model's Triton kernels, on a GPU, under
`pasta run --torch --record`, against truths pasta has no part in.

* A model built so that each module computes with operators no other module uses, with a
  matrix product (a cuBLAS call Inductor does not fuse across) between modules: Net.a takes
  sin (its backward, cos), Net.b.c tanh (tanh_backward), Net.b multiplies by 3, Net itself
  exp and sum. Inductor names a kernel by the operators it fuses (its descriptive names), so
  a kernel's name says which module's nodes it holds: every launch must carry that module
  and one of the lines (each marked with a "line:" comment) that made those nodes.
* A transformers GPT-2 (2 blocks, from a config), which nobody in the project wrote: every
  module a Triton launch carries is one of the model's own (named_modules), the two blocks,
  compiled alike (Inductor launches one kernel for both), launch as many kernels in each of
  their attn, mlp, ln_1 and ln_2 (a kernel fusing a block's last add with the next block's
  layer norm belongs to neither), and the lines of the kernels inside the blocks are
  transformers' own (modeling_gpt2.py among them).

Usage: compiled_modules_check.py --pasta BIN/pasta --pasta-trace BIN/pasta-trace --out DIR
Exits 0 when every check holds, 1 when one fails, 77 without a GPU (skipped, says why).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from modules_check import marked_lines, parse_dump, verdict  # noqa: E402

D = 256


def model_construct():
    import torch
    from torch import nn

    class A(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D, bias=False)

        def forward(self, x):
            return self.fc(torch.sin(x))  # line: a

    class C(nn.Module):
        def forward(self, x):
            return torch.tanh(x)  # line: c

    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = C()
            self.fc = nn.Linear(D, D, bias=False)

        def forward(self, x):
            return self.fc(self.c(x) * 3.0)  # line: b

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = A()
            self.b = B()

        def forward(self, x):
            return torch.exp(self.b(self.a(x)) * 1e-3).sum()  # line: root

    torch.manual_seed(0)
    return Net(), lambda out: out, lambda: (torch.randn(64, D, device="cuda"),)


def model_gpt2():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=64)
    return (GPT2LMHeadModel(cfg), lambda out: out.logits.float().mean(),
            lambda: (torch.randint(0, 1000, (4, 32), device="cuda"),))


def child(name, steps):
    import torch
    model, loss_fn, inputs = {"construct": model_construct, "gpt2": model_gpt2}[name]()
    modules = [type(model).__name__ + ("." + n if n else "") for n, _ in model.named_modules()]
    model = torch.compile(model.cuda())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = inputs()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(*x)).backward()
        opt.step()
    torch.cuda.synchronize()
    print(json.dumps({"model": name, "modules": modules}), flush=True)


def profiled(args, name):
    """The Triton launches of `name` under pasta run --torch --record, what the program
    printed, and every operator call that launched a kernel itself."""
    out = os.path.join(args.out, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(out, "inductor"),
               TORCHINDUCTOR_COMPILE_THREADS="1", PASTA_VERBOSE="1", PASTA_PRINT="none")
    proc = subprocess.run([args.pasta, "run", "--torch", "--record", "-f", "-o",
                           os.path.join(out, "pasta"), "--", sys.executable, HERE, "--child", name,
                           "--steps", str(args.steps)], env=env, capture_output=True, text=True,
                          timeout=900)
    with open(os.path.join(out, "stderr.log"), "w") as f:
        f.write(proc.stderr)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-4000:])
        raise SystemExit(f"{name}: the profiled run failed ({proc.returncode})")
    said = [l for l in proc.stderr.splitlines() if "inductor:" in l]
    print(f"  pasta said ({len(said)} inductor lines in {out}/stderr.log):",
          *(said[-1:] or ["nothing"]))
    dump = subprocess.run([args.pasta_trace, "dump", os.path.join(out, "pasta", "trace.pasta")],
                          capture_output=True, text=True, check=True).stdout
    events = parse_dump(dump)
    launches = [f for kind, f in events
                if kind == "OpBegin" and f.get("name", "").startswith("triton_")]
    ran = {f.get("op") for kind, f in events if kind == "KernelComplete"}
    ops = [f for kind, f in events if kind == "OpBegin" and f["id"] in ran]
    return launches, json.loads(proc.stdout.strip().splitlines()[-1]), ops


def ops_of(kernel):
    """The operators Inductor's descriptive name lists: triton_poi_fused_mul_tanh_1 ->
    {"mul", "tanh"}; tanh_backward stays one word."""
    body = re.sub(r"^triton_[a-z]+_fused_", "", kernel)
    body = re.sub(r"_\d+$", "", body).replace("tanh_backward", "tanhbackward")
    return set(body.split("_")) - {""}


def check_construct(args, failures):
    launches, _, _ = profiled(args, "construct")
    lines = {name: f"{HERE}:{number}" for name, number in marked_lines(HERE).items()}
    # The module whose nodes a kernel holds, by its operators, and the lines that made them.
    def expected(ops):
        if ops & {"tanh", "tanhbackward"} and not ops & {"sin", "cos", "exp", "sum"}:
            return "Net.b", {lines["b"], lines["c"]}
        if ops & {"sin", "cos"} and not ops & {"tanh", "tanhbackward", "exp", "sum"}:
            return "Net.a", {lines["a"]}
        if ops & {"exp", "sum"} and not ops & {"sin", "cos", "tanh", "tanhbackward"}:
            return "Net", {lines["root"]}
        return None, set()
    rows = collections.Counter((f["name"], f.get("module", ""), f.get("source", ""))
                               for f in launches)
    print(f"  {'kernel':44} {'launches':>8}  module / line (pasta)  -> expected")
    names = collections.defaultdict(set)
    for (kernel, module, source), n in sorted(rows.items()):
        want, want_lines = expected(ops_of(kernel))
        ok = want is not None and module == want and source in want_lines
        print(f"  {kernel:44} {n:8}  {module or '-'} {os.path.basename(source) or '-'}"
              f"{'' if ok else f'  -> {want} {sorted(os.path.basename(l) for l in want_lines)}'}")
        if not ok:
            failures.append(f"construct: {kernel} carries {module!r} at {source!r}, expected "
                            f"{want!r} at one of {sorted(want_lines)}")
        names[module].add(kernel)
    if not rows:
        failures.append("construct: no Triton launch recorded")
    # Net and Net.b: a forward kernel and a backward one each; Net.a a forward one only (the
    # input needs no gradient, and its weight's gradient is a matrix product).
    # Inductor may split a reduction in two kernels: at least that many for Net and Net.b.
    for module, least, most in (("Net", 2, 99), ("Net.a", 1, 1), ("Net.b", 2, 99)):
        if not least <= len(names.get(module, ())) <= most:
            failures.append(f"construct: {module} has kernels {sorted(names.get(module, ()))}, "
                            f"expected {least}" + ("" if most == least else " or more"))


def check_gpt2(args, failures):
    launches, said, ops = profiled(args, "gpt2")
    real = set(said["modules"])
    per_module = collections.Counter(f.get("module", "") for f in launches)
    print(f"  {len(launches)} Triton launches over {len(per_module)} modules:")
    for module, n in per_module.most_common():
        print(f"    {n:6}  {module or '(no module)'}")
    stray = sorted(m for m in per_module if m not in real)
    if stray:
        failures.append(f"gpt2: launches carry modules the model does not have: {stray[:5]}")
    root = "GPT2LMHeadModel"

    def subtree(prefix):
        return sum(n for m, n in per_module.items() if m == prefix or m.startswith(prefix + "."))
    for part in ("attn", "mlp", "ln_1", "ln_2"):
        h0, h1 = (subtree(f"{root}.transformer.h.{i}.{part}") for i in (0, 1))
        print(f"  launches in transformer.h.0.{part} / h.1.{part}: {h0} / {h1}")
        if h0 != h1 or (part in ("attn", "mlp") and h0 == 0):
            failures.append(f"gpt2: blocks compiled alike launch {h0} and {h1} kernels in {part}")
    # Extern kernels (cuBLAS products, attention) go to the module of the nodes they compute,
    # by arithmetic: every Conv1D of a block and the head multiply once forward and twice
    # backward (the gradients of the weight and of the input) a step; each block's attention
    # runs once forward and once backward a step.
    gemms = collections.Counter(f.get("module", "") for f in ops
                                if f["name"] in ("aten::mm", "aten::addmm", "aten::bmm"))
    attention = collections.Counter(f.get("module", "") for f in ops if "attention" in f["name"])
    want_gemms = {f"{root}.transformer.h.{i}.{m}": 3 * args.steps for i in (0, 1)
                  for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")}
    want_gemms[f"{root}.lm_head"] = 3 * args.steps
    want_attention = {f"{root}.transformer.h.{i}.attn": 2 * args.steps for i in (0, 1)}
    print("  products (cuBLAS) by module:", dict(sorted(gemms.items())))
    print("  attention calls by module:", dict(sorted(attention.items())))
    if dict(gemms) != want_gemms:
        failures.append(f"gpt2: products by module {dict(gemms)}, want {want_gemms}")
    if dict(attention) != want_attention:
        failures.append(f"gpt2: attention calls by module {dict(attention)}, want {want_attention}")
    # The model's own code is transformers': modeling_gpt2.py, and the Conv1D and activation
    # modules it builds on (pytorch_utils.py, activations.py).
    inside = [f for f in launches if f.get("module", "").startswith(f"{root}.transformer.h.")]
    files = collections.Counter(f.get("source", "").rsplit(":", 1)[0] for f in inside)
    print("  lines of the launches inside the blocks, by file:",
          {os.path.basename(k) or "(none)": n for k, n in files.items()})
    if not inside or any("/transformers/" not in f for f in files) or \
            not any(f.endswith("/modeling_gpt2.py") for f in files):
        failures.append(f"gpt2: lines inside the blocks are not all transformers' own, "
                        f"modeling_gpt2.py among them: {dict(files)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--child", choices=["construct", "gpt2"])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--pasta")
    p.add_argument("--pasta-trace")
    p.add_argument("--out")
    p.add_argument("--only", choices=["construct", "gpt2"])
    args = p.parse_args()
    if args.child:
        return child(args.child, args.steps)
    probe = subprocess.run([sys.executable, "-c", "import sys, torch; print(hasattr(sys, "
                            "'monitoring'), torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.split() != ["True", "True"]:
        print(f"skipped: needs torch with a GPU and Python 3.12+ ({probe.stdout.strip()} "
              f"{(probe.stderr.strip().splitlines() or [''])[-1]})")
        return 77
    failures = []
    for name, check in (("construct", check_construct), ("gpt2", check_gpt2)):
        if args.only in (None, name):
            print(f"== {name}")
            check(args, failures)
    return verdict(failures, "compiled modules and lines exact")


if __name__ == "__main__":
    sys.exit(main())

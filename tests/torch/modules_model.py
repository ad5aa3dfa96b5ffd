#!/usr/bin/env python3
"""Training steps of a model whose modules and lines are known, for the module
and source-line tests (tests/torch/modules_check.py drives it).

--model small (CPU or GPU): nested modules, a ModuleList, one Linear registered
in two blocks (called from both), a module calling itself, a TorchScript
submodule, a module with a forward hook of the program's own, a module reached
through another (self.blocks[0].ln called from Net), a record_function range
and a loss outside every module. --model none: operators and no module.
--model gpt2 (transformers, from a config) and --model resnet18
(torchvision): models nobody in the project wrote.

With --probe LIB (CPU runs): LIB is a pasta pipeline library loaded after
torch is imported, as `pasta run --torch` loads one at CUDA's start.
With --truth FILE: the steps run under torch.profiler (stacks on), each
module call inside a record_function range its hooks open, and FILE gets
every operator event (tests/torch/modules_check.py reads it).
"""
import argparse
import ctypes
import json
import os
import sys

import torch
from torch import nn

D = 16


class Scale(nn.Module):
    def forward(self, x):
        return x * 0.5


class Block(nn.Module):
    def __init__(self, shared):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc = nn.Linear(D, D)
        self.act = nn.GELU()
        self.extra = nn.Tanh()  # called only from Net, through self.blocks[0]
        self.shared = shared  # the same Linear in every block

    def forward(self, x):
        h = self.fc(self.ln(x))  # line: block fc
        h = self.act(h) * 2.0  # line: block act
        return x + self.shared(h)  # line: block shared


class Recursive(nn.Module):
    def forward(self, x, depth: int):
        if depth == 0:
            return x.relu()  # line: recursive relu
        return self(x, depth - 1) + 1.0  # line: recursive add


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        shared = nn.Linear(D, D)
        self.embed = nn.Linear(8, D)
        self.blocks = nn.ModuleList([Block(shared), Block(shared)])
        self.rec = Recursive()
        self.scripted = torch.jit.script(Scale())
        self.head = nn.Linear(D, 4)
        self.head.register_forward_hook(lambda m, i, out: out * 1.0)  # line: hook

    def forward(self, x):
        x = self.embed(x)  # line: net embed
        for b in self.blocks:
            x = b(x)
        x = x + self.blocks[0].extra(x)  # line: net reaches blocks.0.extra
        x = self.rec(x, 2)
        x = self.scripted(x)  # line: net scripted
        with torch.profiler.record_function("head range"):  # line: net range
            return self.head(x)  # line: net head


# Each model is built on the CPU, before any profiler starts; then the model
# and its inputs go to the device, inside the profiled span.
def small():
    torch.manual_seed(0)

    def inputs(device):
        return torch.randn(4, 8, device=device), torch.randn(4, 4, device=device)  # line: inputs

    def loss(out, y):
        return ((out - y) ** 2).mean()  # line: loss
    return Net(), loss, inputs


def gpt2(batch):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=64)
    return (GPT2LMHeadModel(cfg), lambda out, y: out.logits.float().mean(),
            lambda device: (torch.randint(0, 1000, (batch, 32), device=device), None))


def resnet18(batch):
    import torchvision
    torch.manual_seed(0)
    return (torchvision.models.resnet18(num_classes=10), lambda out, y: out.mean(),
            lambda device: (torch.randn(batch, 3, 64, 64, device=device), None))


def steps(model, loss_fn, xy, n):
    x, y = xy
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(n):
        opt.zero_grad(set_to_none=True)  # line: zero_grad
        loss = loss_fn(model(x), y)
        loss.backward()  # line: backward
        opt.step()  # line: step


def no_modules(device, n):
    a = torch.randn(8, 8, device=device)  # line: no module input
    for _ in range(n):
        a = (a @ a).tanh()  # line: no module
    return a


def write_truth(prof, path):
    """Every event of torch.profiler's run, raw (prof.events() would merge an
    operator into a same-named only child): operators with their thread, times,
    scope, sequence number and forward thread, and kernels with the correlation
    id of the operator that launched them."""
    rows = []
    for e in prof.profiler.kineto_results.events():
        rows.append({
            "name": e.name(), "thread": e.start_thread_id(), "scope": e.scope(),
            "sequence": e.sequence_nr(), "fwd_thread": e.fwd_thread_id(),
            "start": e.start_ns(), "end": e.start_ns() + e.duration_ns(),
            "id": e.correlation_id(), "linked": e.linked_correlation_id(),
            "device": str(e.device_type()).rsplit(".", 1)[-1],
        })
    with open(path, "w") as f:
        json.dump({"events": rows}, f)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", choices=["small", "none", "gpt2", "resnet18"], default="small")
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--batch", type=int, default=2, help="gpt2 and resnet18: the batch size")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--probe", help="a pasta pipeline library to load after torch")
    p.add_argument("--truth", help="write torch.profiler's operator events here")
    args = p.parse_args()
    if os.environ.get("PASTA_TEST_HANG_S"):  # a hang prints every thread's stack and ends
        import faulthandler
        faulthandler.dump_traceback_later(int(os.environ["PASTA_TEST_HANG_S"]), exit=True)
    if args.model != "none":
        build = {"small": small, "gpt2": gpt2, "resnet18": resnet18}[args.model]
        model, loss_fn, inputs = build() if args.model == "small" else build(args.batch)
    # The profiled span begins here, for pasta and for torch.profiler alike.
    if args.device == "cuda":
        torch.cuda.init()  # pasta run starts at cuInit
    if args.probe:
        lib = ctypes.CDLL(args.probe, mode=ctypes.RTLD_GLOBAL)
        lib.InitializeInjection()
    prof = None
    if args.truth:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
        if args.model != "none":
            install_truth_hooks(model)
        prof = profile(activities=acts)
        prof.__enter__()
    if args.model == "none":
        no_modules(args.device, args.steps)
    else:
        model = model.to(args.device)  # line: to device
        if args.compile:
            model = torch.compile(model)
        steps(model, loss_fn, inputs(args.device), args.steps)
    if args.device == "cuda":
        torch.cuda.synchronize()
    if prof is not None:
        prof.__exit__(None, None, None)
        write_truth(prof, args.truth)
    print(json.dumps({"model": args.model, "steps": args.steps}), flush=True)


def install_truth_hooks(root):
    """Around every module call, a record_function range named as pasta's
    docs name modules: the root's class, then the attribute path from the
    calling module; a module calling itself keeps its name."""
    stack = []

    def name(mod):
        if not stack:
            return type(mod).__name__
        pname, pmod, _ = stack[-1]
        if mod is pmod:
            return pname
        for n, m in pmod._modules.items():
            if m is mod:
                return pname + "." + n
        for n, m in pmod.named_modules(remove_duplicate=False):
            if m is mod and n:
                return pname + "." + n
        return pname + "." + type(mod).__name__

    def pre(mod, args):
        n = name(mod)
        rf = torch.autograd.profiler.record_function("module: " + n)
        rf.__enter__()
        stack.append((n, mod, rf))

    def post(mod, args, out):
        rf = stack.pop()[2]
        rf.__exit__(None, None, None)

    # TorchScript modules take no hooks: in this run each is called through a
    # Python module in its place (its operators are the same).
    for m in list(root.modules()):
        for n, c in list(m._modules.items()):
            if isinstance(c, torch.jit.ScriptModule):
                m._modules[n] = _ScriptCall(c)
    for m in root.modules():
        m.register_forward_pre_hook(pre, prepend=True)
        m.register_forward_hook(post)


class _ScriptCall(nn.Module):
    def __init__(self, script):
        super().__init__()
        object.__setattr__(self, "script", script)  # not a child: no hooks on it

    def forward(self, *args):
        return self.script(*args)


if __name__ == "__main__":
    sys.exit(main())

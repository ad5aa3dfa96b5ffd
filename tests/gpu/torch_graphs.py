#!/usr/bin/env python3
"""CUDA graphs in PyTorch, for the GPU tests of graph attribution.

    torch_graphs.py --manual [--replays R]
    torch_graphs.py [--model gpt2|resnet18] [--warmup W] [--steps S] [--nvtx]
                    [--torch-profiler TRACE [--from-start]]

--manual: sigmoid_ and exp_ run once on a 1M-float tensor (a kernel each),
then torch.cuda.graph captures them on another inside
record_function("capture"), and the graph is replayed R times inside
record_function("replay"): each replay runs one kernel of aten::sigmoid_ and
one of aten::exp_, launched while "replay" is the operator.

Otherwise: a model nobody in this project wrote (a transformers GPT-2 built
from a config, or torchvision's ResNet-18; random weights, nothing
downloaded), compiled with torch.compile(mode="reduce-overhead") and trained
W + S steps (SGD); CUDA graph trees record in the first steps and replay
after. --nvtx marks each step as an NVTX range "step N" (the step's kernels
end inside it). --torch-profiler: torch.profiler (CUDA activity) over step W
alone, its trace written to TRACE, and the device work it holds printed.
--from-start: torch.profiler on from before the model is compiled instead,
each step a record_function "step N" that its kernels end inside, and the
device work of step W printed (CUPTI reports a graph's device-to-device copy
as a copy when the tracer was on at the graph's instantiation, as pasta's is,
and as the copy's kernel, memcpy128, when it attaches later).

Prints one JSON line.
"""
import argparse
import collections
import contextlib
import json

import torch


def manual(replays):
    y = torch.rand(1 << 20, device="cuda")
    # Once outside the graph first, so that capture loads no module lazily.
    w = torch.rand(1 << 20, device="cuda")
    w.sigmoid_()
    w.exp_()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.autograd.profiler.record_function("capture"):
        with torch.cuda.graph(g):
            y.sigmoid_()
            y.exp_()
    with torch.autograd.profiler.record_function("replay"):
        for _ in range(replays):
            g.replay()
    torch.cuda.synchronize()
    return {"replays": replays, "checksum": y.sum().item()}


def gpt2():
    import transformers
    config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=256, vocab_size=2048,
                                     n_positions=128)
    model = transformers.GPT2LMHeadModel(config).cuda()
    tokens = torch.randint(0, 2048, (8, 64), device="cuda")
    return model, lambda m: m(input_ids=tokens, labels=tokens).loss


def resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=100).cuda()
    x = torch.randn(16, 3, 64, 64, device="cuda")
    y = torch.randint(0, 100, (16,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    return model, lambda m: loss_fn(m(x), y)


def compiled(args):
    model, loss_of = (gpt2 if args.model == "gpt2" else resnet18)()
    cmodel = torch.compile(model, mode="reduce-overhead")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    counter = [0]

    def step():
        name = f"step {counter[0]}"
        windowed = args.nvtx or args.from_start
        if args.nvtx:
            torch.cuda.nvtx.range_push(name)
        with (torch.autograd.profiler.record_function(name) if args.from_start
              else contextlib.nullcontext()):
            torch.compiler.cudagraph_mark_step_begin()
            loss = loss_of(cmodel)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            result = loss.detach().clone()
            if windowed:
                torch.cuda.synchronize()  # the step's kernels end inside its range
        if args.nvtx:
            torch.cuda.nvtx.range_pop()
        counter[0] += 1
        return result

    from torch.profiler import ProfilerActivity, profile
    # CPU activity too: a record_function is a CPU event.
    early = (profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
             if args.from_start else None)
    if early is not None:
        early.start()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    out = {"model": args.model, "warmup": args.warmup, "steps": args.steps}
    late = profile(activities=[ProfilerActivity.CUDA]) if args.torch_profiler and not early else None
    with late or contextlib.nullcontext():
        loss = step()
        torch.cuda.synchronize()
    for _ in range(args.steps - 1):
        loss = step()
    torch.cuda.synchronize()
    if early is not None:
        early.stop()
    out["loss"] = loss.item()
    prof = early or late
    if prof is not None and args.torch_profiler:
        prof.export_chrome_trace(args.torch_profiler)
        with open(args.torch_profiler) as f:
            out.update(device_work(json.load(f)["traceEvents"],
                                   f"step {args.warmup}" if early else None))
    return out


def device_work(events, step):
    """Counts of a torch.profiler trace's device work: all of it, or (step) that starting inside
    the record_function of that name. Kernel names are counted too."""
    if step is not None:
        marks = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == step]
        if not marks:
            return {"error": f"no record_function {step!r} in the trace"}
        begin, end = marks[0]["ts"], marks[0]["ts"] + marks[0]["dur"]
        events = [e for e in events if "ts" in e and begin <= e["ts"] <= end]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    return {
        "kernels_in_step": len(kernels),
        # Kineto marks a graph's kernels with the graph they ran from.
        "graph_kernels_in_step": sum(
            1 for e in kernels if int((e.get("args") or {}).get("graph id", 0) or 0) != 0),
        "copies_in_step": sum(1 for e in events if e.get("cat") == "gpu_memcpy"),
        "memsets_in_step": sum(1 for e in events if e.get("cat") == "gpu_memset"),
        "kernel_names": dict(collections.Counter(e["name"] for e in kernels)),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--manual", action="store_true")
    p.add_argument("--replays", type=int, default=7)
    p.add_argument("--model", choices=["gpt2", "resnet18"], default="gpt2")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--torch-profiler", metavar="TRACE")
    p.add_argument("--from-start", action="store_true")
    args = p.parse_args()
    torch.cuda.init()  # CUDA first: `pasta run --torch` starts at cuInit
    torch.manual_seed(0)
    out = manual(args.replays) if args.manual else compiled(args)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

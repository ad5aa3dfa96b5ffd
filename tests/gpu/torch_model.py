#!/usr/bin/env python3
"""Training steps of ResNet-18 or the GPT block, for the PyTorch GPU tests.

CUDA is initialised first, so that `pasta run --torch` (which starts at
cuInit) and torch.profiler (--op-counts, CPU activity only: CUPTI takes one
client per process) see the same span. Prints one JSON line: a checksum of
the final parameters, torch.cuda.max_memory_allocated(), and the steps.
"""
import argparse
import contextlib
import json
import re

from torch_setup import deterministic, torch  # first: sets what cuBLAS reads


def resnet(batch):
    import torchvision
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    return model, x, y, torch.nn.CrossEntropyLoss()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", choices=["resnet18"], default="resnet18")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--op-counts", help="write torch.profiler's calls per operator here")
    args = p.parse_args()

    deterministic()
    prof = None
    if args.op_counts:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU])
    with prof or contextlib.nullcontext():
        model, x, y, loss_fn = resnet(args.batch)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for _ in range(args.steps):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        checksum = sum(p.double().sum().item() for p in model.parameters())
    if prof is not None:
        # Every operator event as recorded: key_averages() would merge an
        # operator into a same-named only child (aten::sum calling aten::sum).
        # CUDA runtime and driver API events are not operators.
        counts = {}
        for e in prof.profiler.kineto_results.events():
            name = e.name()
            if re.match(r"^cu(da)?[A-Z]", name) or name == "INVALID":
                continue
            counts[name] = counts.get(name, 0) + 1
        with open(args.op_counts, "w") as f:
            json.dump(counts, f)
    print(json.dumps({"steps": args.steps, "checksum": checksum,
                      "max_memory_allocated": torch.cuda.max_memory_allocated()}), flush=True)


if __name__ == "__main__":
    main()

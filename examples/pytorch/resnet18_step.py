#!/usr/bin/env python3
"""ResNet-18 training steps on random data (batch 32 by default), timed per
step after warm-up. Profile it unmodified with `pasta run -- python
resnet18_step.py`, or with torch.profiler (--torch-profiler) for comparison.

Prints one JSON line: steps, median and mean step time, and with
--torch-profiler the number of kernels torch.profiler saw in the last step.
"""
import argparse
import json
import statistics
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--torch-profiler", action="store_true",
                   help="profile the timed steps with torch.profiler (CPU+CUDA)")
    p.add_argument("--profile-memory", action="store_true",
                   help="with --torch-profiler: also its memory profiling (profile_memory=True)")
    p.add_argument("--trace", help="with --torch-profiler: write the last step's trace here")
    p.add_argument("--nvtx", action="store_true",
                   help="mark each step (warm-up included) as an NVTX range 'step N'")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False  # the same kernels every step
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (args.batch,), device="cuda")

    counter = [0]

    def step():
        if args.nvtx:
            torch.cuda.nvtx.range_push(f"step {counter[0]}")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if args.nvtx:
            torch.cuda.synchronize()  # the step's kernels end inside its range
            torch.cuda.nvtx.range_pop()
        counter[0] += 1

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    times = []
    kernels_last_step = None
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     profile_memory=args.profile_memory) as prof:
            for _ in range(args.steps):
                t0 = time.perf_counter()
                step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                prof.step()
        post0 = time.perf_counter()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        post = time.perf_counter() - post0
        if args.trace:
            prof.export_chrome_trace(args.trace)
        # One step's kernels, from a separate single-step profile.
        with profile(activities=[ProfilerActivity.CUDA]) as one:
            step()
            torch.cuda.synchronize()
        trace_path = args.trace or "/tmp/resnet18_one_step.json"
        one.export_chrome_trace(trace_path)
        with open(trace_path) as f:
            events = json.load(f)["traceEvents"]
        kernels_last_step = sum(1 for e in events if e.get("cat") == "kernel")
    else:
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        post = 0.0

    out = {
        "steps": args.steps,
        "step_ms_median": statistics.median(times) * 1e3,
        "step_ms_mean": statistics.mean(times) * 1e3,
        "device": torch.cuda.get_device_name(),
    }
    if args.torch_profiler:
        out["kernels_in_one_step"] = kernels_last_step
        out["profiler_events_seconds"] = post
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

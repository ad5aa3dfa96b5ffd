"""A torchvision ResNet-18 (random weights) trained with SGD, for the capture-range GPU test
(check.py case_torch_window): the same steps are profiled by pasta's window and by
torch.profiler's schedule, in separate runs.

  torch_window.py [--steps N] [--profiler-api A-B[,C-D...]] [--nvtx A-B] [--nvtx-steps]
                  [--torch-profiler A-B]

--profiler-api A-B: torch.cuda.profiler.start() before step A, stop() after step B; a comma
  list opens one window per span.
--nvtx A-B: an NVTX range "window" (torch.cuda.nvtx, no record_function) over steps A to B.
--nvtx-steps: an NVTX range "step" around every step.
--pause-ms N: sleep N ms after each window's close (the job's work between windows).
--no-sync: no torch.cuda.synchronize() after each step (a window closes with its steps' work
  still running).
--syncs: in each step, one of each synchronisation besides torch.cuda.synchronize(): a stream's
  (loss.item()), an event's (Event.synchronize()), and a side stream and the main one each
  waiting on the other's event (cudaStreamWaitEvent), the side stream then synchronised.
--torch-profiler A-B: torch.profiler with schedule(wait=A-1, warmup=1, active=B-A+1),
  prof.step() after each optimizer step; prints the kernels it recorded.
Prints one JSON line: the parameters' checksum (what profiling must not change), the
synchronising calls the script made itself by kind ("syncs": context, stream, event, and wait
for a stream waiting on an event) and, with --torch-profiler, the kernel count.
"""
import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from torch_setup import deterministic, torch  # noqa: E402
from torch_trace import kernel_names  # noqa: E402

import torchvision  # noqa: E402


def span(text):
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def spans(text):
    return [span(t) for t in text.split(",")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--profiler-api", type=spans, default=[])
    p.add_argument("--nvtx-steps", action="store_true")
    p.add_argument("--no-sync", action="store_true")
    p.add_argument("--pause-ms", type=float, default=0)
    p.add_argument("--syncs", action="store_true")
    p.add_argument("--nvtx", type=span)
    p.add_argument("--torch-profiler", type=span)
    args = p.parse_args()
    deterministic()
    model = torchvision.models.resnet18(weights=None, num_classes=10).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, 64, 64, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")
    side = torch.cuda.Stream() if args.syncs else None
    syncs = collections.Counter()
    prof = None
    if args.torch_profiler:
        a, b = args.torch_profiler
        assert a >= 1, "the schedule's warm-up step comes before step A"
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=a - 1, warmup=1, active=b - a + 1, repeat=1))
        prof.start()
    for step in range(args.steps):
        if any(step == a for a, _ in args.profiler_api):
            torch.cuda.profiler.start()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_push("step")
        if args.nvtx and step == args.nvtx[0]:
            torch.cuda.nvtx.range_push("window")
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if args.syncs:
            loss.item()  # a stream synchronisation
            done = torch.cuda.Event()
            done.record()
            done.synchronize()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                total = x.sum()
            torch.cuda.current_stream().wait_stream(side)
            total.record_stream(torch.cuda.current_stream())
            side.synchronize()
            syncs.update(stream=2, event=1, wait=2)
        # Every mode waits for each step, so no kernel of a step runs into the next one's
        # window (torch.profiler keeps device work by time).
        if not args.no_sync:
            torch.cuda.synchronize()
            syncs["context"] += 1
        if args.nvtx_steps:
            torch.cuda.nvtx.range_pop()
        if any(step == b for _, b in args.profiler_api):
            torch.cuda.profiler.stop()
            time.sleep(args.pause_ms / 1e3)
        if args.nvtx and step == args.nvtx[1]:
            torch.cuda.nvtx.range_pop()
        if prof:
            prof.step()
    torch.cuda.synchronize()
    syncs["context"] += 1
    out = {"checksum": float(sum(p.double().sum() for p in model.parameters())),
           "syncs": dict(syncs)}
    if prof:
        prof.stop()
        names = collections.Counter()
        for name, n in kernel_names(prof).items():
            names[name.split("(")[0].replace("void ", "")] += n
        out["kernels"] = sum(names.values())
        out["per_kernel"] = dict(names)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

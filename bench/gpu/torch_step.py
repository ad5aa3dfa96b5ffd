#!/usr/bin/env python3
"""The PyTorch workloads of the GPU benchmarks: training steps on random data,
timed per step (synchronised) after warm-up.

  resnet18   torchvision's ResNet-18, 224x224 images, SGD with momentum
  gpt_block  the GPT of examples/pytorch/gpt_block.py (torch.nn), 4 blocks of
             768, context 256, AdamW
  gpt2       a transformers GPT-2 built from a config (random weights, nothing
             downloaded): 4 layers of 768 (--layers), context 256, AdamW
  bert       a transformers BERT for masked language modelling, built the same way:
             4 layers of 768 (--layers), 256 tokens, every one a label, AdamW
  resnet50   torchvision's ResNet-50, as resnet18

    torch_step.py --model resnet18 --batch 32 [--warmup 10] [--steps 100]
                  [--torch-profiler cpu+cuda|cuda [--profile-memory]] [--count-kernels]
                  [--windows N [--switch modules]] [--layers N] [--autocast bf16|fp16]
                  [--compile default|reduce-overhead] [--ring-ops LIB [--ring-empty]]

Prints one JSON line: model, batch, steps, median and mean step time, the GPU.
With several batch sizes (--batch 1,128) the model is built and run at each
in turn, in one process (a benchmark then starts half the processes); the
line's step times are the first batch's, and "batches" lists every batch's.
--compile MODE: the forward pass and loss compiled with torch.compile(mode=MODE)
(reduce-overhead: CUDA graph trees record in the first warm-up steps and replay
after); the backward pass with it (AOTAutograd), the optimizer eager.
--torch-profiler profiles the timed steps (device_events_profiled: the
kernels, copies and memsets it saw; profiler_events_seconds: what its
events() took after them).
--windows N times the steps in blocks of N, alternately outside and inside a
cudaProfilerStart/Stop window (the first and the last block outside): a
profiler that collects only inside (`pasta run --capture-range
cudaProfilerApi`) costs the inside blocks what collecting costs, and the
outside ones what it costs to be there and wait. window_ratio is the median,
over the inside blocks, of each one's median step over the mean of the
outside blocks' on either side of it (so a process whose steps drift, faster
or slower as it runs, does not pass the drift for a cost): what collecting
costs, measured within one process
at a fraction of a second's distance, so the differences between processes
(which on the GPU machine move a launch-bound step by 20%) leave it alone;
a native process gives 1.0 and its spread. step_ms_outside_median and
step_ms_inside_median are each kind's median step; step_ms_first_outside the
first block's (before any window opened) and step_ms_later_outside_median
the other outside blocks'; with --count-kernels, only the inside blocks'
kernels and operators are counted.
--switch modules (with --windows N): the blocks alternate with `pasta run --torch`'s
modules and source lines paused (outside) and followed (inside), through
pasta_modules.follow(), with no profiler window: window_ratio is then what
modules and lines cost, within one process; without pasta_modules (not under
`pasta run --torch`) nothing is switched and the ratio is the method's noise.
The line adds module_calls_per_step (torch's global forward pre-hook, counted
in the first warm-up step) and followed_steps (warm-up and inside steps), which
a benchmark checks against the run's module_summary; --count-kernels then counts
every step, all of them profiled.
With --torch-profiler too, every inside block runs under a torch.profiler of
its own (started before the block's first step, stopped after its last):
the same measure for torch.profiler; profiler_events_seconds and
device_events_profiled are then the inside blocks' totals.
--ring-ops LIB (with --windows N, --switch window): the floor of an operator
record (bench/ring_ops.hpp: an id, two times, the name's pointer and the thread
into a ring of the thread, through a global RecordFunction callback), on in
the inside blocks only, from libpasta_bench_ring_ops.so; ring_ops is the
operator starts it recorded, which a benchmark checks against torch.profiler's
count of the inside blocks' operators. --ring-empty: a callback that does
nothing but count (RecordFunction's own path) instead of the record.
--count-kernels runs the whole workload (model built, warm-up, steps) under
torch.profiler (CPU and CUDA activity) from right after CUDA is initialised and
prints the kernels it launched ("kernels", the raw trace's kernel events;
"kernel_names", how many of each) and the operators it called ("operators",
its cpu_op and user_annotation events: what `pasta run --torch` counts): the
independent counts a benchmark compares pasta's reports with, in a run of its
own (torch.profiler and pasta's CUPTI cannot share a process).
"""
import argparse
import collections
import contextlib
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

import torch

import harness  # beside this script


def resnet18(batch, depth=18):
    import torchvision
    model = getattr(torchvision.models, f"resnet{depth}")(num_classes=1000).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    return model, opt, lambda: loss_fn(model(x), y)


def gpt_block(batch, vocab=8192, context=256):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples", "pytorch"))
    from gpt_block import GPT
    model = GPT(vocab, 768, 12, 4, context).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, vocab, (batch, context), device="cuda")
    target = torch.randint(0, vocab, (batch, context), device="cuda")
    loss_fn = torch.nn.functional.cross_entropy
    return model, opt, lambda: loss_fn(model(idx).view(-1, vocab), target.view(-1))


def gpt2(batch, vocab=8192, context=256, layers=4):
    import transformers
    config = transformers.GPT2Config(n_layer=layers, n_head=12, n_embd=768, vocab_size=vocab,
                                     n_positions=context)
    model = transformers.GPT2LMHeadModel(config).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, context), device="cuda")
    return model, opt, lambda: model(input_ids=tokens, labels=tokens).loss


def bert(batch, vocab=8192, context=256, layers=4):
    import transformers
    config = transformers.BertConfig(num_hidden_layers=layers, num_attention_heads=12,
                                     hidden_size=768, intermediate_size=3072, vocab_size=vocab,
                                     max_position_embeddings=context)
    model = transformers.BertForMaskedLM(config).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, context), device="cuda")
    return model, opt, lambda: model(input_ids=tokens, labels=tokens).loss


def resnet50(batch):
    return resnet18(batch, depth=50)


MODELS = {"resnet18": resnet18, "gpt_block": gpt_block, "gpt2": gpt2, "bert": bert,
          "resnet50": resnet50}
LAYERED = ("gpt2", "bert")  # the models --layers sizes


def counts_in(prof):
    """What a finished torch.profiler run (CPU and CUDA activity) recorded, from its raw
    trace: {"kernel_names": kernels by name, "operators": operator calls}. Operators are its
    cpu_op events (aten operators and autograd's backward functions) and user_annotation ones
    (record_function ranges, the optimizer's step among them), as `pasta run --torch` sees
    them through RecordFunction: those torch opens only for its own profiler left out
    (harness.operator_events)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        with open(f.name) as g:
            events = json.load(g)["traceEvents"]
    return {"kernel_names": collections.Counter(e["name"] for e in events
                                                if e.get("cat") == "kernel"),
            "operators": len(harness.operator_events(events))}


def add_counts(total, counts):
    """Adds counts_in()'s `counts` into `total` (the same shape)."""
    total["kernel_names"].update(counts["kernel_names"])
    total["operators"] += counts["operators"]
    return total


def count_fields(counts):
    """The JSON line's fields of counts_in()'s `counts`."""
    return {"kernels": sum(counts["kernel_names"].values()),
            "kernel_names": dict(counts["kernel_names"]), "operators": counts["operators"]}


def timed_steps(step, n, after=None):
    """n steps, each timed to the end of its GPU work (seconds); after() follows each."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if after:
            after()
    return times


def run_batch(args, batch, profile, ProfilerActivity):
    """Builds the model at `batch`, runs the warm-up steps, then the timed ones (under
    torch.profiler with --torch-profiler); the step times and what the profiler did."""
    extra = {"layers": args.layers} if args.model in LAYERED else {}
    model, opt, loss_of = MODELS[args.model](batch, **extra)
    if args.compile:
        loss_of = torch.compile(loss_of, mode=args.compile)

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.autocast)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype) if dtype else contextlib.nullcontext():
            loss = loss_of()
        loss.backward()
        opt.step()

    calls = [0]
    for i in range(args.warmup):
        # The module calls of a step, by torch's own count, for a benchmark to check pasta's by.
        # (Not when compiled: a global hook is a guard, and taking it away a recompile.)
        hook = torch.nn.modules.module.register_module_forward_pre_hook(
            lambda *_: calls.__setitem__(0, calls[0] + 1)) if i == 0 and not args.compile else None
        step()
        if hook:
            hook.remove()
    torch.cuda.synchronize()

    def torch_profiler():
        activities = [ProfilerActivity.CUDA] + (
            [ProfilerActivity.CPU] if args.torch_profiler == "cpu+cuda" else [])
        return profile(activities=activities, profile_memory=args.profile_memory)

    if args.windows:
        out = run_windows(args, batch, step, profile, ProfilerActivity,
                          torch_profiler if args.torch_profiler else None)
        if args.switch == "modules":
            out.update(module_calls_per_step=calls[0],
                       followed_steps=args.warmup + out["blocks"] // 2 * args.windows)
        return out
    timed = torch_profiler() if args.torch_profiler else None
    with timed or contextlib.nullcontext():
        times = timed_steps(step, args.steps, timed.step if timed else None)
    out = {"batch": batch, "step_ms_median": statistics.median(times) * 1e3,
           "step_ms_mean": statistics.mean(times) * 1e3}
    if timed:
        out.update(profiled(timed))
    return out


def profiled(prof):
    """What a finished torch.profiler run did: how long its events() took, and the device
    events (kernels, copies, memsets) it saw."""
    t0 = time.perf_counter()
    events = prof.events()
    return {"profiler_events_seconds": time.perf_counter() - t0,
            "device_events_profiled": sum(
                1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)}


def run_windows(args, batch, step, profile, ProfilerActivity, torch_profiler=None):
    """The timed steps in blocks of args.windows, alternately outside and inside a
    cudaProfilerStart/Stop window; with --count-kernels, torch.profiler counts the kernels of
    the inside blocks only; with torch_profiler (a function that makes one), each inside block
    runs under a torch.profiler of its own."""
    # Outside, inside, ..., outside: every inside block between two outside ones.
    blocks = 2 * max(1, round(args.steps / (2 * args.windows))) + 1
    enter, leave, switched = torch.cuda.profiler.start, torch.cuda.profiler.stop, "window"
    ring = None
    if args.ring_ops:
        ring = ctypes.CDLL(args.ring_ops)
        ring.pasta_bench_ring_ops_starts.restype = ctypes.c_uint64
        mode = 2 if args.ring_empty else 1  # 2: the callback that does nothing

        def enter():
            torch.cuda.profiler.start()
            ring.pasta_bench_ring_ops_on(mode)

        def leave():
            ring.pasta_bench_ring_ops_on(0)
            torch.cuda.profiler.stop()
    if args.switch == "modules":
        try:
            import pasta_modules  # made by pasta run --torch once it follows modules
            enter, leave = (lambda: pasta_modules.follow(True)), (lambda: pasta_modules.follow(False))
            switched = "modules"
        except ImportError:
            enter = leave = lambda: None
            switched = "nothing (no pasta_modules: not under pasta run --torch)"
        leave()  # the first block outside
    medians = {"outside": [], "inside": []}
    counted = {"kernel_names": collections.Counter(), "operators": 0}
    done = {"profiler_events_seconds": 0.0, "device_events_profiled": 0}
    for b in range(blocks):
        inside = b % 2 == 1
        if inside:
            enter()
        collector = None
        if inside and args.count_kernels and args.switch == "window":
            collector = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        elif inside and torch_profiler:
            collector = torch_profiler()
        with collector or contextlib.nullcontext():
            times = timed_steps(step, args.windows)
        if inside:
            leave()
        if collector and args.count_kernels:
            add_counts(counted, counts_in(collector))
        elif collector:
            for key, value in profiled(collector).items():
                done[key] += value
        medians["inside" if inside else "outside"].append(statistics.median(times) * 1e3)
    out_ms = medians["outside"]
    ratios = [i / ((a + b) / 2) for a, b, i in zip(out_ms, out_ms[1:], medians["inside"])]
    if args.switch == "modules":
        enter()  # followed again, as the run began
    out = {"batch": batch, "windows": args.windows, "blocks": blocks, "switched": switched,
           "step_ms_median": statistics.median(medians["inside"]),
           "step_ms_outside_median": statistics.median(medians["outside"]),
           "step_ms_inside_median": statistics.median(medians["inside"]),
           "window_ratio": statistics.median(ratios),
           "window_ratios": [round(r, 4) for r in ratios],
           # Before any window opened, and after: what a window leaves behind once it closed.
           "step_ms_first_outside": medians["outside"][0],
           "step_ms_later_outside_median": statistics.median(medians["outside"][1:] or
                                                             medians["outside"])}
    if args.count_kernels and args.switch == "window":
        out["counted_inside"] = counted
    if ring:
        out["ring_ops"] = ring.pasta_bench_ring_ops_starts()
    if torch_profiler:
        out.update(done)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--batch", required=True,
                   help="a batch size, or several comma-separated, run in turn in one process")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (10)")
    p.add_argument("--steps", type=int, default=100, help="timed steps (100)")
    p.add_argument("--torch-profiler", choices=["cpu+cuda", "cuda"],
                   help="profile the timed steps with torch.profiler, these activities")
    p.add_argument("--profile-memory", action="store_true",
                   help="with --torch-profiler: its memory profiling too (profile_memory=True)")
    p.add_argument("--layers", type=int, default=4, help="gpt2's and bert's layers (4)")
    p.add_argument("--autocast", choices=["bf16", "fp16"],
                   help="the forward pass and loss under torch.autocast to this type")
    p.add_argument("--compile", choices=["default", "reduce-overhead"],
                   help="the forward pass and loss compiled with torch.compile in this mode")
    p.add_argument("--count-kernels", action="store_true",
                   help="count every kernel the workload launches with torch.profiler")
    p.add_argument("--windows", type=int, default=0, metavar="N",
                   help="time the steps in blocks of N, alternately outside and inside a "
                        "cudaProfilerStart/Stop window (see above)")
    p.add_argument("--ring-ops", metavar="LIB",
                   help="with --windows: libpasta_bench_ring_ops.so's operator record, inside "
                        "only (see above)")
    p.add_argument("--ring-empty", action="store_true",
                   help="with --ring-ops: the callback that does nothing (RecordFunction's own "
                        "path; ring_ops still counts its starts)")
    p.add_argument("--switch", choices=["window", "modules"], default="window",
                   help="with --windows: what the blocks switch (see above; window)")
    args = p.parse_args()
    if args.switch == "modules" and (not args.windows or args.warmup < 1 or args.compile):
        p.error("--switch modules goes with --windows N, at least one warm-up step and no "
                "--compile")
    if args.ring_ops and (not args.windows or args.switch != "window"):
        p.error("--ring-ops goes with --windows N (and --switch window)")
    if args.ring_empty and not args.ring_ops:
        p.error("--ring-empty goes with --ring-ops LIB")
    if args.windows < 0:
        p.error(f"--windows takes a number of steps, not {args.windows}")
    if args.count_kernels and args.torch_profiler:
        p.error("--count-kernels runs torch.profiler itself: leave out --torch-profiler")
    if args.profile_memory and not args.torch_profiler:
        p.error("--profile-memory goes with --torch-profiler")
    try:
        batches = [int(b) for b in args.batch.split(",")]
    except ValueError:
        p.error(f"--batch takes batch sizes separated by commas, not {args.batch!r}")
    if not batches or min(batches) < 1:
        p.error(f"--batch: every batch size must be at least 1, not {args.batch!r}")

    torch.cuda.init()  # before the count starts, as `pasta run` starts at cuInit
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False  # the same kernels in every run
    from torch.profiler import ProfilerActivity, profile
    counting = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) if (
        args.count_kernels and not (args.windows and args.switch == "window")) else None
    # (a capture window: run_windows counts its inside blocks)
    runs = []
    with counting or contextlib.nullcontext():
        for batch in batches:
            runs.append(run_batch(args, batch, profile, ProfilerActivity))
            torch.cuda.empty_cache()  # the model is gone: the next batch's starts afresh
    out = {"model": args.model, "batch": batches[0], "steps": args.steps,
           **({"layers": args.layers} if args.model in LAYERED else {}),
           **({"autocast": args.autocast} if args.autocast else {}),
           **{k: v for k, v in runs[0].items() if k not in ("batch", "counted_inside")},
           "device": torch.cuda.get_device_name()}
    if "ring_ops" in runs[-1]:  # a count over the process: its last value holds every batch's
        out["ring_ops"] = runs[-1]["ring_ops"]
    if len(runs) > 1:  # one entry per batch; the totals of what the profiler did
        out["batches"] = [{k: v for k, v in r.items() if k != "counted_inside"} for r in runs]
        for key in ("profiler_events_seconds", "device_events_profiled"):
            if key in runs[0]:
                out[key] = sum(r[key] for r in runs)
    if counting:
        out.update(count_fields(counts_in(counting)))
    elif args.count_kernels:  # a window: the inside blocks' kernels and operators, every batch's
        total = {"kernel_names": collections.Counter(), "operators": 0}
        for r in runs:
            add_counts(total, r["counted_inside"])
        out.update(count_fields(total))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

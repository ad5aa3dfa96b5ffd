"""What the PyTorch GPU tests' scripts read from a torch.profiler run: its kernels by name, and
its copies and memsets by the operator that issued them, from its raw trace (the exported
trace's events). No torch import: a script that must not
change what CUDA does (tests/gpu/count_kernels.py) can use it too."""
import collections
import json
import os
import tempfile


def trace_events(prof, keep=None):
    """Every event of a finished torch.profiler run's raw trace; the trace is written to `keep`
    where given (torch.profiler exports a run's trace once)."""
    with tempfile.TemporaryDirectory() as d:
        path = keep or os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]


def kernel_events(prof=None, keep=None, events=None):
    """The kernel events of a finished torch.profiler run's raw trace (name, "dur" in us...),
    or of its `events` (trace_events) where they were read already."""
    return [e for e in (trace_events(prof, keep) if events is None else events) if e.get("cat") == "kernel"]


def copies_by_operator(events):
    """The copies and memsets of a raw trace recorded with CPU and CUDA activity, by the
    operator that issued them: ({operator name: copies}, copies outside every operator).
    Kineto links each device event to the innermost operator current on the launching thread
    through its "External id" (the operator event's own), as Holistic Trace Analysis does; a
    device event without one is looked up through its runtime or driver call's."""
    ops = {e["args"]["External id"]: e["name"] for e in events
           if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    calls = {e["args"]["correlation"]: e["args"].get("External id") for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and
             "correlation" in e.get("args", {})}
    by_op, outside = collections.Counter(), 0
    for e in events:
        if e.get("cat") not in ("gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args", {})
        ext = args.get("External id", calls.get(args.get("correlation")))
        if ext in ops:
            by_op[ops[ext]] += 1
        else:
            outside += 1
    return dict(by_op), outside


def kernel_names(prof=None, keep=None, events=None):
    """{kernel name: launches} of a finished torch.profiler run, or of its `events`
    (kernel_events)."""
    return collections.Counter(e["name"] for e in kernel_events(prof, keep, events))

"""What the PyTorch GPU tests' scripts read from a torch.profiler run: its kernels by name, from
its raw trace (the exported trace's kernel events). No torch import: a script that must not
change what CUDA does (tests/gpu/count_kernels.py) can use it too."""
import collections
import json
import os
import tempfile


def kernel_events(prof, keep=None):
    """The kernel events of a finished torch.profiler run's raw trace (name, "dur" in us...);
    the trace is written to `keep` where given (torch.profiler exports a run's trace once)."""
    with tempfile.TemporaryDirectory() as d:
        path = keep or os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def kernel_names(prof, keep=None):
    """{kernel name: launches} of a finished torch.profiler run (kernel_events)."""
    return collections.Counter(e["name"] for e in kernel_events(prof, keep))

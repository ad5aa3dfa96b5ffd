#!/usr/bin/env python3
"""Runs a Python script under torch.profiler (CUDA activity) from right after CUDA is
initialised, as `pasta run` starts at cuInit, to the script's end, and writes the kernels it
launched: the independent count the PyTorch GPU tests compare pasta's with, in a run of its
own (torch.profiler and pasta's CUPTI cannot share a process). The script's own output is
left as it is.

    count_kernels.py [--operators] OUT_JSON SCRIPT [ARGS...]

OUT_JSON gets {"kernels": n, "kernel_names": {name: launches}}, from the raw trace's kernel
events; with --operators (CPU activity as well) also "copies_by_operator" ({operator:
copies and memsets it issued}) and "copies_outside" (those outside every operator).
"""
import json
import os
import runpy
import sys

import torch

from torch_trace import copies_by_operator, kernel_names, trace_events


def main(argv):
    operators = len(argv) > 1 and argv[1] == "--operators"
    argv = [argv[0], *argv[1 + operators:]]
    if len(argv) < 3:
        print(__doc__)
        return 2
    out, script = argv[1], os.path.abspath(argv[2])
    sys.argv = [script, *argv[3:]]
    sys.path.insert(0, os.path.dirname(script))  # as `python3 SCRIPT` would
    torch.cuda.init()
    from torch.profiler import ProfilerActivity, profile
    code = 0
    activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if operators else [])
    with profile(activities=activities) as prof:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:  # a script's own sys.exit: counted all the same
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    events = trace_events(prof)
    names = kernel_names(events=events)
    counts = {"kernels": sum(names.values()), "kernel_names": dict(names)}
    if operators:
        counts["copies_by_operator"], counts["copies_outside"] = copies_by_operator(events)
    with open(out, "w") as f:
        json.dump(counts, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Runs a Python script under torch.profiler (CUDA activity) from right after CUDA is
initialised, as `pasta run` starts at cuInit, to the script's end, and writes the kernels it
launched: the independent count the PyTorch GPU tests compare pasta's with, in a run of its
own (torch.profiler and pasta's CUPTI cannot share a process). The script's own output is
left as it is.

    count_kernels.py OUT_JSON SCRIPT [ARGS...]

OUT_JSON gets {"kernels": n, "kernel_names": {name: launches}}, from the raw trace's kernel
events.
"""
import json
import os
import runpy
import sys

import torch

from torch_trace import kernel_names


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    out, script = argv[1], os.path.abspath(argv[2])
    sys.argv = [script, *argv[3:]]
    sys.path.insert(0, os.path.dirname(script))  # as `python3 SCRIPT` would
    torch.cuda.init()
    from torch.profiler import ProfilerActivity, profile
    code = 0
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:  # a script's own sys.exit: counted all the same
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    names = kernel_names(prof)
    with open(out, "w") as f:
        json.dump({"kernels": sum(names.values()), "kernel_names": dict(names)}, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Each way a profiled program can end, and what reaches disk:

    exit_paths_test.py EXIT_PATHS_BINARY PASTA_TRACE_BINARY

The program (tests/core/exit_paths.cpp) profiles three launches of one
kernel, then returns, calls exit(3), throws, aborts, or raises SIGINT or
SIGTERM; KernelFreq's report must hold the 3 launches, say partial and why
for the abnormal ends, and the program's exit status must be what it would
have been without pasta. With SIGKILL mid-recording, the trace must read
back, in order, up to its last complete block.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import expect as check  # noqa: E402
import checks  # noqa: E402

binary, pasta_trace = sys.argv[1], sys.argv[2]


cases = [  # how, exit status, partial reason (None: complete)
    ("return", 0, None),
    ("exit", 3, None),
    ("throw", -signal.SIGABRT, "the program ended with an uncaught exception: out of cheese"),
    ("abort", -signal.SIGABRT, "the program aborted (SIGABRT)"),
    ("sigint", -signal.SIGINT, "the program was interrupted (SIGINT)"),
    ("sigterm", -signal.SIGTERM, "the program was terminated (SIGTERM)"),
]
for how, status, partial in cases:
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, PASTA_OUTPUT_DIR=out, PASTA_PRINT="none")
        proc = subprocess.run([binary, how], env=env, capture_output=True, text=True)
        check(f"{how}: exit status", proc.returncode, status)
        try:
            with open(os.path.join(out, "kernel_freq.json")) as f:
                report = json.load(f)
        except OSError:
            report = {}
        rows = report.get("tables", {}).get("kernels", [])
        check(f"{how}: launches in the report", [(r["kernel"], r["launches"]) for r in rows],
              [("kernel", 3)])
        check(f"{how}: partial", report.get("partial"), partial)

with tempfile.TemporaryDirectory() as out:
    trace = os.path.join(out, "cut.pasta")
    env = dict(os.environ, PASTA_OUTPUT_DIR=out, PASTA_PRINT="none", PASTA_TRACE=trace)
    proc = subprocess.run([binary, "kill"], env=env, capture_output=True, text=True)
    check("kill: exit status", proc.returncode, -signal.SIGKILL)
    dump = subprocess.run([pasta_trace, "dump", trace], capture_output=True, text=True)
    lines = [l for l in dump.stdout.splitlines() if l.startswith("Kernel")]
    print(f"  the cut trace holds {len(lines)} events; pasta-trace says: "
          f"{dump.stderr.strip().splitlines()[-1] if dump.stderr.strip() else ''}")
    # Record writes a block when it fills, so the cut falls on a block boundary that depends
    # on the record sizes: what is exact is that the events read back are the program's own
    # first ones, launch 1, complete 1, launch 2, ..., with none missing and none invented.
    want = [f"{kind} correlation={i // 2 + 1} "
            for i, kind in enumerate(["KernelLaunch", "KernelComplete"] * 50000)][:len(lines)]
    check("kill: events read back (some, and fewer than the 100000 emitted)",
          0 < len(lines) < 100000, True)
    check(f"kill: of the {len(lines)}, those not launch 1, complete 1, launch 2, ... in order",
          [(i, l) for i, (l, w) in enumerate(zip(lines, want)) if not l.startswith(w)][:5], [])
    check("kill: the reader says the recording was cut off",
          "cut off" in dump.stderr or "ends without its end marker" in dump.stderr, True)

print("PASSED" if not checks.failures else f"FAILED ({checks.failures})")
sys.exit(1 if checks.failures else 0)

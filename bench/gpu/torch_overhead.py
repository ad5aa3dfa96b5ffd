#!/usr/bin/env python3
"""Cost of operator and tensor profiling on a ResNet-18 training step (batch
32), every variant in this one run, interleaved round by round:

* native;
* torch.profiler, CPU + CUDA activities with memory profiling on
  (profile_memory=True), the closest built-in equivalent;
* pasta by injection, OpSummary + TensorAlloc (libpasta_torch_bench.so:
  torch::Aten + nv::Cupti, kernels tagged with operators);
* the same with PASTA_OP_TAGS=0: operators and tensors without tagging
  kernels with their operator (no CUPTI API records);
* pasta run --torch, the default PyTorch pipeline (adds KernelFreq, a
  timeline with operators, ScopeTime, EventCount).

Reports the median step time over the rounds' medians and the ratio to native.

    torch_overhead.py BUILD_DIR [OUT_DIR] [--rounds N] [--steps N]
"""
import csv
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def step_ms(cmd, env):
    full = dict(os.environ)
    full.update(env)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full, check=False)
    if proc.returncode != 0:
        print(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr[-3000:]}")
        sys.exit(1)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv):
    opts = {"--rounds": 3, "--steps": 50}
    for k in list(opts):
        if k in argv:
            i = argv.index(k)
            opts[k] = int(argv[i + 1])
            del argv[i:i + 2]
    build = os.path.abspath(argv[1])
    out = os.path.abspath(argv[2] if len(argv) > 2 else "torch-bench-out")
    os.makedirs(out, exist_ok=True)
    script = os.path.join(ROOT, "examples", "pytorch", "resnet18_step.py")
    base = [sys.executable, script, "--warmup", "10", "--steps", str(opts["--steps"])]
    quiet = {"PASTA_PRINT": "none", "PASTA_OUTPUT_DIR": os.path.join(out, "reports")}
    variants = [
        ("native", base, {}),
        ("torch.profiler (CPU+CUDA, memory)", base + ["--torch-profiler", "--profile-memory"], {}),
        ("pasta OpSummary+TensorAlloc", base,
         {**quiet, "CUDA_INJECTION64_PATH": f"{build}/inject/libpasta_torch_bench.so"}),
        ("pasta OpSummary+TensorAlloc, PASTA_OP_TAGS=0", base,
         {**quiet, "CUDA_INJECTION64_PATH": f"{build}/inject/libpasta_torch_bench.so",
          "PASTA_OP_TAGS": "0"}),
        ("pasta run --torch (default pipeline)", base,
         {**quiet, "CUDA_INJECTION64_PATH": f"{build}/inject/libpasta_torch.so"}),
    ]
    results = {name: [] for name, _, _ in variants}
    device = "?"
    for r in range(opts["--rounds"]):
        for name, cmd, env in variants:
            res = step_ms(cmd, env)
            device = res.get("device", device)
            results[name].append(res["step_ms_median"])
            print(f"round {r + 1}: {name}: {res['step_ms_median']:.2f} ms/step", flush=True)
    native = statistics.median(results["native"])
    rows = []
    print(f"\nResNet-18 training step, batch 32, on {device}; median of {opts['--rounds']} rounds "
          f"(each the median of {opts['--steps']} steps after 10 warm-up)")
    print(f"| variant | ms/step | vs native |\n|---|---:|---:|")
    for name, _, _ in variants:
        m = statistics.median(results[name])
        rows.append({"variant": name, "step_ms": f"{m:.3f}", "vs_native": f"{m / native:.3f}",
                     "rounds": " ".join(f"{v:.3f}" for v in results[name]), "device": device})
        print(f"| {name} | {m:.2f} | {m / native:.3f}x |")
    with open(os.path.join(out, "torch_overhead.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv)

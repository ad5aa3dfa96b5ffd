#!/usr/bin/env python3
"""Cost of operator and tensor profiling on a PyTorch training step (ResNet-18,
batch 32, by default), every variant a process of its own, interleaved round by
round:

* native;
* torch.profiler, CPU + CUDA activities with memory profiling on
  (profile_memory=True), the closest built-in equivalent;
* pasta, OpSummary + TensorAlloc (libpasta_torch_bench.so: torch::Aten +
  nv::Cupti, kernels tagged with operators), under `pasta run --torch`;
* the same with PASTA_OP_TAGS=0: operators and tensors without tagging
  kernels with their operator (no CUPTI API records);
* pasta run --torch, the default PyTorch pipeline (adds KernelFreq, a
  timeline with operators, ScopeTime, EventCount).

Every pasta run writes its own report directory, and the launches and operator
calls it reports must equal what torch.profiler counts in a run of its own
(bench/gpu/torch_step.py --count-kernels) before its ratio is printed. Median over rounds
of each round's median step, min..max over rounds, the ratio to native.

    torch_overhead.py BUILD_DIR [OUT_DIR] [--quick] [--rounds 5] [--steps 50]
                      [--model resnet18] [--batch 32]

--quick: 2 rounds of 10 steps after 3 warm-up.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main():
    p = harness.arguments(__doc__, "torch-bench-out")
    p.add_argument("--model", default="resnet18", help="a torch_step.py model (resnet18)")
    p.add_argument("--batch", type=int, default=32, help="(32)")
    p.add_argument("--steps", type=int, help="timed steps per process (50; 10 with --quick)")
    p.add_argument("--warmup", type=int, help="untimed steps first (10; 3 with --quick)")
    args = harness.settle(p.parse_args(), steps=(50, 10), warmup=(10, 3))
    bench = harness.Bench(args.build, args.out, args.timeout, args.cpus, args.budget)
    workload = f"{args.model} step, batch {args.batch}"
    cmd = harness.torch_workload(args.model, args.batch, args.warmup, args.steps)
    counted = bench.count_kernels(workload, cmd)
    if counted is None:
        return bench.exit_code()
    bench_lib = {"PASTA_INJECT_LIB": bench.lib("pasta_torch_bench")}
    checked = {"expect": counted.kernels, "operators": counted.operators}
    variants = [
        harness.Variant("native", cmd),
        harness.Variant("torch.profiler (CPU+CUDA, memory)",
                        cmd + ["--torch-profiler", "cpu+cuda", "--profile-memory"],
                        check=harness.torch_profiler_saw_kernels),
        harness.Variant("pasta OpSummary+TensorAlloc", cmd, bench_lib, pasta=["--torch"],
                        **checked),
        harness.Variant("pasta OpSummary+TensorAlloc, PASTA_OP_TAGS=0", cmd,
                        dict(bench_lib, PASTA_OP_TAGS="0"), pasta=["--torch"], **checked),
        harness.Variant("pasta run --torch (default pipeline)", cmd, pasta=["--torch"],
                        **checked),
    ]
    results = bench.rounds(workload, variants, args.rounds, harness.step_ms)
    bench.table(f"{workload} ({args.steps} steps after {args.warmup} warm-up a process)",
                variants, results, "ms/step")
    bench.write_csv("torch_overhead.csv")
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())

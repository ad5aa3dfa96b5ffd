#!/usr/bin/env python3
"""pasta's overhead on the GPU against native and torch.profiler, every
variant a process of its own, interleaved round by round so that drift hits
them all alike:

* PyTorch training steps (bench/gpu/torch_step.py: ResNet-18, the GPT of
  examples/pytorch/gpt_block.py, a transformers GPT-2 built from a config),
  each at a launch-bound and a compute-bound batch size: native,
  torch.profiler (CPU+CUDA, and CUDA only) inside the script, and pasta by
  injection with several pipelines; per step, median over rounds of each
  round's median step;
* empty kernels (bench/gpu/empty_kernels.cu): native, `pasta run`,
  `pasta run --launch-callbacks`; cost per launch.

Every profiled run writes its own report directory, and its launches must
equal the native count before its ratio is printed: for PyTorch, torch.profiler
counts the workload's kernels in a run of its own (torch_step.py
--count-kernels); empty_kernels launches 1000 warm-up kernels and N more. A
--torch pipeline's operator calls must equal torch.profiler's too (aten-only,
which sees no launch and writes no report, by its handler's own count in its
log).

    overhead.py BUILD_DIR [OUT_DIR] [--quick] [--rounds 5] [--models resnet18,gpt_block,gpt2]
                [--batches launch,compute] [--variants KEY,...] [--warmup 10] [--steps 100]
                [--empty 100000] [--together] [--batch N] [--layers N] [--autocast bf16]
                [--compile default|reduce-overhead]

--quick: 2 rounds of ResNet-18 and GPT-2 at the launch-bound batch, 3 warm-up
and 10 timed steps, fewer variants, 10k empty kernels. Variant keys (native
always runs):
"""
import functools
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# Batch sizes: (launch-bound, compute-bound).
BATCHES = {"resnet18": (1, 128), "gpt_block": (1, 32), "gpt2": (1, 32), "bert": (1, 32),
           "resnet50": (1, 64)}
# The models that run by default (the others when --models names them).
DEFAULT_MODELS = "resnet18,gpt_block,gpt2"
EMPTY_WARMUP = 1000  # empty_kernels.cu's warm-up launches

# key: (label, torch_step.py options, pasta run options or None, variables); "+" in the key's
# set DEFAULT_VARIANTS below.
VARIANTS = {
    "native": ("native", [], None, {}),
    "torch-cpu-cuda": ("torch.profiler (CPU+CUDA)", ["--torch-profiler", "cpu+cuda"], None, {}),
    "torch-cuda": ("torch.profiler (CUDA only)", ["--torch-profiler", "cuda"], None, {}),
    "kernel-freq": ("pasta KernelFreq", [], [], {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq"}),
    "kernel-freq-timeline": ("pasta KernelFreq+Timeline", [], [],
                             {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq_timeline"}),
    "no-sync": ("  same, without sync records", [], [],
                {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq_timeline", "PASTA_CUPTI_SKIP": "sync"}),
    "kernels-only": ("  KernelFreq+Timeline, kernel records only", [], [],
                     {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq_timeline",
                      "PASTA_CUPTI_SKIP": "memcpy,memset,sync,memory,nvtx,device"}),
    "op-floor": ("pasta KernelFreq+EventCount with operators", [], ["--torch"],
                 {"PASTA_INJECT_LIB": "pasta_bench_op_floor"}),
    "default": ("pasta run (default pipeline)", [], [], {}),
    "default-no-flush": ("  default, no flush on sync or timer", [], [],
                         {"PASTA_FLUSH_ON_SYNC": "0", "PASTA_FLUSH_MS": "0"}),
    "default-no-pool": ("  default, PASTA_CUPTI_BUFFER_POOL=0", [], [],
                        {"PASTA_CUPTI_BUFFER_POOL": "0"}),
    "default-kernels-only": ("  default, kernel records only", [], [],
                             {"PASTA_CUPTI_SKIP": "memcpy,memset,sync,memory,nvtx,device"}),
    "default-detach": ("  default, PASTA_CUPTI_DETACH=every", [], [],
                       {"PASTA_CUPTI_DETACH": "every"}),
    # The floor of an operator record (bench/ring_ops.hpp) beside the detached default
    # pipeline: a RecordFunction callback writing an id, two times, the name's pointer and the
    # thread to a ring per thread, on in the windows only (--windows N).
    "default-detach-ring": ("  default detached, a ring-buffer record per operator",
                            ["--ring-ops", "{lib:pasta_bench_ring_ops}"], [],
                            {"PASTA_CUPTI_DETACH": "every"}),
    # ... and RecordFunction's own path: the same callback doing nothing but count.
    "default-detach-empty-callback": ("  default detached, an empty operator callback",
                                      ["--ring-ops", "{lib:pasta_bench_ring_ops}",
                                       "--ring-empty"], [], {"PASTA_CUPTI_DETACH": "every"}),
    # The detached default pipeline taken apart: the same record kinds with only KernelFreq at
    # work, then the default's tools with fewer record kinds.
    "default-detach-kernel-freq-tool": ("  default detached, only kernel_freq runs", [], [],
                                        {"PASTA_CUPTI_DETACH": "every",
                                         "PASTA_TOOLS": "kernel_freq"}),
    "default-detach-kernels-only": ("  default detached, kernel records only", [], [],
                                    {"PASTA_CUPTI_DETACH": "every",
                                     "PASTA_CUPTI_SKIP": "memcpy,memset,sync,memory,nvtx,device"}),
    "default-detach-no-sync": ("  default detached, no synchronisations", [], [],
                               {"PASTA_CUPTI_DETACH": "every", "PASTA_CUPTI_SKIP": "sync"}),
    "default-detach-sync-records": ("  default detached, PASTA_CUPTI_SYNC=records", [], [],
                                    {"PASTA_CUPTI_DETACH": "every", "PASTA_CUPTI_SYNC": "records"}),
    "torch-detach-sync-records": ("  --torch detached, PASTA_CUPTI_SYNC=records", [], ["--torch"],
                                  {"PASTA_CUPTI_DETACH": "every", "PASTA_CUPTI_SYNC": "records"}),
    "default-detach-no-copies": ("  default detached, no memcpy/memset records", [], [],
                                 {"PASTA_CUPTI_DETACH": "every",
                                  "PASTA_CUPTI_SKIP": "memcpy,memset"}),
    "default-detach-no-state": ("  default detached, no memory/device/nvtx", [], [],
                                {"PASTA_CUPTI_DETACH": "every",
                                 "PASTA_CUPTI_SKIP": "memory,device,nvtx"}),
    "torch": ("pasta run --torch", [], ["--torch"], {}),
    "torch-detach": ("  --torch, PASTA_CUPTI_DETACH=every", [], ["--torch"],
                     {"PASTA_CUPTI_DETACH": "every"}),
    "kernel-freq-detach": ("  KernelFreq, PASTA_CUPTI_DETACH=every", [], [],
                           {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq",
                            "PASTA_CUPTI_DETACH": "every"}),
    "torch-no-pool": ("  --torch, PASTA_CUPTI_BUFFER_POOL=0", [], ["--torch"],
                      {"PASTA_CUPTI_BUFFER_POOL": "0"}),
    "kernel-freq-no-flush": ("  KernelFreq, no flush on sync or timer", [], [],
                             {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq",
                              "PASTA_FLUSH_ON_SYNC": "0", "PASTA_FLUSH_MS": "0"}),
    "kernel-freq-no-pool": ("  KernelFreq, PASTA_CUPTI_BUFFER_POOL=0", [], [],
                            {"PASTA_INJECT_LIB": "pasta_bench_kernel_freq",
                             "PASTA_CUPTI_BUFFER_POOL": "0"}),
    "torch-no-tags": ("  same, PASTA_OP_TAGS=0", [], ["--torch"], {"PASTA_OP_TAGS": "0"}),
    "torch-no-modules": ("  same, no modules or source lines", [], ["--torch"],
                         {"PASTA_MODULES": "0", "PASTA_SOURCE_LINES": "0"}),
    "torch-no-queue": ("  same, PASTA_HOST_QUEUE=0", [], ["--torch"], {"PASTA_HOST_QUEUE": "0"}),
    "torch-two-tools": ("  same events, only op_summary,tensor_alloc run", [], ["--torch"],
                        {"PASTA_TOOLS": "op_summary,tensor_alloc"}),
    "torch-bench": ("pasta --torch OpSummary+TensorAlloc", [], ["--torch"],
                    {"PASTA_INJECT_LIB": "pasta_torch_bench"}),
    "aten-only": ("  same, no CUPTI (operator callbacks alone)", [], ["--torch"],
                  {"PASTA_INJECT_LIB": "pasta_bench_aten"}),
    "default-self-time": ("pasta run, PASTA_SELF_TIME=1 (first round)", [], [],
                          {"PASTA_SELF_TIME": "1"}),
    "torch-self-time": ("pasta run --torch, PASTA_SELF_TIME=1 (first round)", [], ["--torch"],
                        {"PASTA_SELF_TIME": "1"}),
    # What the operator callbacks' own time owes to modules and lines, and to tagging launches.
    "torch-no-modules-self-time": ("  same, no modules or source lines, PASTA_SELF_TIME=1", [],
                                   ["--torch"], {"PASTA_SELF_TIME": "1", "PASTA_MODULES": "0",
                                                 "PASTA_SOURCE_LINES": "0"}),
    "torch-no-tags-self-time": ("  same, PASTA_OP_TAGS=0, PASTA_SELF_TIME=1", [], ["--torch"],
                                {"PASTA_SELF_TIME": "1", "PASTA_OP_TAGS": "0"}),
    # The operator callbacks' time, section by section.
    "torch-self-time-parts": ("  same, PASTA_SELF_TIME_PARTS=1", [], ["--torch"],
                              {"PASTA_SELF_TIME": "1", "PASTA_SELF_TIME_PARTS": "1"}),
    # ... with less work on pasta's worker: what the worker's work does to the program's thread.
    "torch-two-tools-parts": ("  same, only op_summary,tensor_alloc run, PASTA_SELF_TIME_PARTS=1",
                              [], ["--torch"], {"PASTA_SELF_TIME": "1", "PASTA_SELF_TIME_PARTS": "1",
                                                "PASTA_TOOLS": "op_summary,tensor_alloc"}),
}
# Labels name results: two variants must never share one.
assert len({v[0] for v in VARIANTS.values()}) == len(VARIANTS), "two variants share a label"
# Variants that run in the first round only: their logs, not their times, are what they are for.
ONCE = {"default-self-time", "torch-self-time", "torch-no-modules-self-time",
        "torch-no-tags-self-time", "torch-self-time-parts", "torch-two-tools-parts"}
# Variants whose pipeline has no CUPTI handler, and so sees no launches.
NO_LAUNCHES = {"aten-only"}
DEFAULT_VARIANTS = ["native", "torch-cpu-cuda", "torch-cuda", "kernel-freq",
                    "kernel-freq-timeline", "default", "torch"]
QUICK_VARIANTS = ["native", "torch-cpu-cuda", "kernel-freq", "default", "torch"]
__doc__ += ("  " + ", ".join(VARIANTS) + f"\n  (default: {', '.join(DEFAULT_VARIANTS)};\n"
            f"  with --quick: {', '.join(QUICK_VARIANTS)})\n")


def stop_ms(stderr):
    m = re.search(r"stopping took ([0-9.]+) ms", stderr or "")
    return float(m.group(1)) if m else None


def exit_ms(label, samples):
    """The extra column: pasta's stop at exit, or torch.profiler's events() after the steps."""
    if label is None:
        return "exit ms", ""
    values = [stop_ms(s.stderr) for s in samples]
    values += [s.result["profiler_events_seconds"] * 1e3 for s in samples
               if "profiler_events_seconds" in s.result]
    values = [v for v in values if v is not None]
    return "exit ms", f"{max(values):9.1f}" if values else ""


def torch_variants(bench, cmd, counted, keys, windows=0, switch="window"):
    """The variants `keys` of a PyTorch workload `cmd`, each checked against `counted`
    (harness.Counted): launches for every pasta variant, operator calls for the --torch ones,
    the kernels a torch.profiler variant saw inside the windows; with switch "modules", the
    module calls of the steps a --torch variant followed."""
    out = []
    for key in keys:
        label, options, pasta, env = VARIANTS[key]
        env = dict(env, PASTA_VERBOSE="1") if pasta is not None else dict(env)
        if windows and switch == "window" and pasta is not None:
            env["PASTA_CAPTURE_RANGE"] = "cudaProfilerApi"
        if "PASTA_INJECT_LIB" in env:
            env["PASTA_INJECT_LIB"] = bench.lib(env["PASTA_INJECT_LIB"])
        options = [bench.lib(o[5:-1]) if o.startswith("{lib:") else o for o in options]
        check = None
        if "--ring-ops" in options:  # every operator of the inside blocks recorded
            check = functools.partial(harness.ring_ops_recorded, want=counted.operators)
        elif options:  # torch.profiler: in windows, it must have seen every kernel inside them
            check = functools.partial(harness.torch_profiler_saw_kernels,
                                      at_least=counted.kernels if windows else 1)
        elif switch == "modules" and "--torch" in (pasta or []) and \
                env.get("PASTA_MODULES") != "0":
            check = harness.module_calls_followed
        out.append(harness.Variant(label, cmd + options, env, pasta=pasta,
                                   expect=0 if key in NO_LAUNCHES else counted.kernels,
                                   operators=counted.operators if "--torch" in (pasta or [])
                                   else None, check=check, once=key in ONCE))
    return out


def window_table(bench, name, variants, results, i):
    """--windows: each process's inside-over-outside ratio (the cost of collecting, measured
    within the process; native's is the method's own noise), and, across processes, the
    outside blocks' step against native's (the cost of waiting outside the window), then the
    exit column (the longest over the rounds)."""
    outside = harness.batch_results(results, i, "step_ms_outside_median")
    native = [s.value for s in outside.get("native", [])]

    def outside_vs_native(label, samples):
        if label is None:
            return "outside ms  vs native   " + exit_ms(None, None)[0], ""
        med = statistics.median(s.value for s in outside[label])
        vs = f"{med:10.4f} {med / statistics.median(native):9.3f}x" if native else " " * 21
        return "", f"{vs} {exit_ms(label, samples)[1]}"
    bench.table(f"{name}, inside/outside the window within a process", variants,
                harness.batch_results(results, i, "window_ratio"), "ratio",
                extra=outside_vs_native)
    print("  every inside block of every process (over the mean of the outside blocks on "
          "either side):")
    for v in variants:
        pairs = [r for s in harness.batch_results(results, i, "window_ratios").get(v.label, [])
                 for r in (s.value if isinstance(s.value, list) else [])]
        if pairs:
            med, lo, hi = harness.bootstrap(pairs)
            print(f"    {v.label}: {len(pairs)} blocks, median {med:.3f}, bootstrap 95% interval "
                  f"{lo:.3f}..{hi:.3f}")


def print_self_time(variants, results, steps):
    """The PASTA_SELF_TIME sums the self-time variants logged, and the operator calls."""
    for v in variants:
        for s in results.get(v.label, []):
            if "PASTA_SELF_TIME" not in v.env:
                continue
            lines = [ln.split("pasta: ", 1)[-1] for ln in (s.stderr or "").splitlines()
                     if "self time:" in ln or "operator calls" in ln or "records in" in ln
                     or "per call:" in ln]
            print(f"\n{v.label}: {s.value:.3f} ms/step ({steps} timed steps), pasta's own time "
                  f"over the whole process:")
            for ln in lines:
                print(f"    {ln}")


def main():
    p = harness.arguments(__doc__, "overhead-out")
    p.add_argument("--models", help="comma-separated, from " + ", ".join(BATCHES) +
                   f" ({DEFAULT_MODELS}; resnet18,gpt2 with --quick)")
    p.add_argument("--batches", help="launch, compute or both (launch,compute; launch with --quick)")
    p.add_argument("--variants", help="comma-separated keys (see above)")
    p.add_argument("--warmup", type=int, help="untimed steps first (10; 3 with --quick)")
    p.add_argument("--steps", type=int, help="timed steps per process (100; 10 with --quick)")
    p.add_argument("--together", action="store_true",
                   help="run a model's batches in turn in one process a variant and round (half "
                        "the processes; launches checked for the process, exit ms the process's)")
    p.add_argument("--windows", type=int, default=0, metavar="N",
                   help="measure within each process: steps in blocks of N, alternately outside "
                        "and inside a cudaProfilerStart/Stop window, pasta collecting only inside "
                        "(--capture-range cudaProfilerApi); the ratio is inside over outside, "
                        "median over the inside blocks (torch_step.py --windows); torch.profiler "
                        "variants profile each inside block. Not for aten-only")
    p.add_argument("--switch", choices=["window", "modules"], default="window",
                   help="with --windows: the blocks switch a capture window (window) or, with "
                        "no window, `--torch`'s modules and source lines (modules: paused "
                        "outside, followed inside; torch_step.py --switch modules), every "
                        "--torch run checked by its module calls against torch's hook count")
    p.add_argument("--batch", type=int, metavar="N",
                   help="one batch size for every model, instead of --batches")
    p.add_argument("--layers", type=int, metavar="N",
                   help="gpt2's and bert's layers (torch_step.py's 4)")
    p.add_argument("--autocast", choices=["bf16", "fp16"],
                   help="each step's forward pass and loss under torch.autocast to this type")
    p.add_argument("--compile", choices=["default", "reduce-overhead"],
                   help="each step's forward pass and loss compiled with torch.compile in this "
                        "mode (torch_step.py --compile; reduce-overhead: CUDA graphs)")
    p.add_argument("--empty", type=int, help="empty kernels timed (100000; 10000 with --quick; "
                                             "0 leaves them out)")
    args = harness.settle(p.parse_args(), models=(DEFAULT_MODELS, "resnet18,gpt2"),
                          batches=("launch,compute", "launch"), warmup=(10, 3), steps=(100, 10),
                          empty=(100000, 10000), variants=(",".join(DEFAULT_VARIANTS), ",".join(QUICK_VARIANTS)))
    models = [m for m in args.models.split(",") if m]
    batches = [b for b in args.batches.split(",") if b]
    keys = ["native"] + [k for k in args.variants.split(",") if k and k != "native"]
    for what, names, known in (("model", models, BATCHES), ("batch", batches, ("launch", "compute")),
                               ("variant", keys, VARIANTS)):
        unknown = [n for n in names if n not in known]
        if unknown:
            p.error(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")

    if args.switch == "modules" and (not args.windows or args.compile):
        p.error("--switch modules goes with --windows N and no --compile")
    if args.windows:
        unfit = [k for k in keys if k in NO_LAUNCHES]
        if unfit:
            p.error(f"--windows: {', '.join(unfit)} see(s) no launches to check a window by; "
                    "leave them out")
    bench = harness.Bench(args.build, args.out, args.timeout, args.cpus, args.budget)
    print(f"pasta overhead on {bench.gpu}: {args.rounds} interleaved rounds, {args.warmup} "
          f"warm-up and {args.steps} timed steps a process"
          + (f", every process on CPUs {sorted(args.cpus)}" if args.cpus else ""), flush=True)
    shape = (["--layers", str(args.layers)] if args.layers else []) + \
        (["--autocast", args.autocast] if args.autocast else []) + \
        (["--compile", args.compile] if args.compile else [])
    about = "".join([f", {args.layers} layers" if args.layers else "",
                     f", {args.autocast} autocast" if args.autocast else "",
                     f", compiled ({args.compile})" if args.compile else ""])
    for model in models:
        if args.batch:
            sizes, names = [args.batch], [f"{model} step, batch {args.batch}{about}"]
        else:
            sizes = [BATCHES[model][0 if which == "launch" else 1] for which in batches]
            names = [f"{model} step, batch {b} ({which}-bound){about}"
                     for b, which in zip(sizes, batches)]
        # --together: one process a variant and round runs every batch in turn.
        groups = [(sizes, names)] if args.together else [([b], [n]) for b, n in zip(sizes, names)]
        for group_sizes, group_names in groups:
            workload = " and ".join(group_names)
            cmd = harness.torch_workload(model, ",".join(map(str, group_sizes)), args.warmup,
                                         args.steps, *shape,
                                         *(["--windows", str(args.windows), "--switch",
                                            args.switch] if args.windows else []))
            counted = bench.count_kernels(workload, cmd)
            if counted is None:
                continue
            variants = torch_variants(bench, cmd, counted, keys, args.windows, args.switch)
            value = harness.window_ratio if args.windows else harness.step_ms
            results = bench.rounds(workload, variants, args.rounds, value)
            for i, name in enumerate(group_names):
                if args.windows:
                    window_table(bench, name, variants, results, i)
                else:
                    bench.table(name, variants, harness.batch_results(results, i), "ms/step",
                                extra=exit_ms)
            print_self_time(variants, results, args.steps)
    if args.empty:
        workload = f"{args.empty} empty kernels"
        cmd = [os.path.join(bench.build, "examples", "empty_kernels"), str(args.empty)]
        n = EMPTY_WARMUP + args.empty
        variants = [harness.Variant("native", cmd),
                    harness.Variant("pasta run", cmd, pasta=[], expect=n),
                    harness.Variant("pasta run --launch-callbacks", cmd,
                                    pasta=["--launch-callbacks"], expect=n)]
        results = bench.rounds(workload, variants, args.rounds,
                               lambda j, _: (j or {}).get("us_per_launch"))
        bench.table(workload, variants, results, "us/launch")
    print("\nexit ms: pasta's stop at exit (final flush, tools, reports); for torch.profiler, "
          "what its events() took after the steps. min..max: over the rounds.")
    bench.write_csv("overhead.csv")
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Memory-access instrumentation on the GPU: every variant measured in this
one run, on the same GPU, as slowdown against the uninstrumented program.

Variants (all through `pasta run --memory`'s injection library, except memcheck):
  floor      the no-op patch on every global access (PASTA_ACCESS_PATCH=noop)
  atomic     lookup + atomics per access on the same page counters, no warp
             aggregation (PASTA_ACCESS_PATCH=atomic)
  object atomic  lookup + atomics per access on the allocation's counters: how
             AccelProf's GPU-side analysis counts (PASTA_ACCESS_PATCH=object_atomic)
  bucketing  proc::GpuBucketing: warp-aggregated counters + CUB post-pass
  cpu        proc::Cpu: every access as a 16-byte record, reduced on the host
  memcheck   compute-sanitizer --tool memcheck
Workloads: vector add (2^24 floats), 2D stencil (2048^2), cuBLAS SGEMM 4096,
ResNet-18 training steps in PyTorch (every kernel, and with a kernel filter;
the host-reduction variant only with the filter). Then the UVM advice:
examples/cuda/uvm_advice as is and with the advice UvmHotness gives for it.

    memory.py BUILD_DIR [OUT_DIR] [--only vecadd,stencil,sgemm,resnet,uvm] [--rounds N]
prints one table per workload and writes memory.csv.
"""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 180


def memcheck_tool():
    for path in [shutil.which("compute-sanitizer"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                              "compute-sanitizer"),
                 "/usr/local/cuda/compute-sanitizer/compute-sanitizer"]:
        if path and os.path.exists(path):
            return path
    return None


def run(cmd, env, out_dir):
    full = dict(os.environ)
    full.update(env)
    full.update({"PASTA_OUTPUT_DIR": out_dir, "PASTA_PRINT": "none"})
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full, check=False,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, TIMEOUT, f"timed out after {TIMEOUT} s"
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return None, wall, (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    return (json.loads(lines[-1]) if lines else None), wall, None


def summary(out_dir):
    try:
        with open(os.path.join(out_dir, "sanitizer.json")) as f:
            return json.load(f)["summary"]
    except (OSError, ValueError, KeyError):
        return {}


def main(argv):
    only, rounds = None, 3
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i:i + 2]
    if "--only" in argv:
        i = argv.index("--only")
        only = set(argv[i + 1].split(","))
        del argv[i:i + 2]
    build = os.path.abspath(argv[1])
    out = os.path.abspath(argv[2] if len(argv) > 2 else "memory-out")
    os.makedirs(out, exist_ok=True)
    lib = lambda name: f"{build}/inject/lib{name}.so"
    pre = lambda name, **extra: dict({"CUDA_INJECTION64_PATH": lib(name)}, **extra)
    memcheck = memcheck_tool()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    print(f"GPU: {gpu}; memcheck: {memcheck or 'not found'}")

    wl = f"{build}/examples/memory_workloads"
    resnet = ["python3", f"{ROOT}/examples/pytorch/resnet18_step.py", "--warmup", "2",
              "--steps", "3"]
    resnet_filter = "bn_fw|bn_bw"  # cuDNN's batch-norm kernels
    workloads = {
        "vecadd": ([wl, "vecadd", "--iters", "20"], "median_ms", 1 << 30),
        "stencil": ([wl, "stencil", "--iters", "20"], "median_ms", 1 << 30),
        "sgemm": ([wl, "sgemm", "--iters", "3"], "median_ms", 4 << 30),
        "resnet": (resnet, "step_ms_median", 4 << 30),
    }
    rows = []
    for name, (cmd, key, trace_buffer) in workloads.items():
        if only and name not in only:
            continue
        variants = [("native", cmd, {}),
                    ("floor", cmd, pre("pasta_memory", PASTA_ACCESS_PATCH="noop")),
                    ("atomic", cmd, pre("pasta_memory", PASTA_ACCESS_PATCH="atomic")),
                    ("object atomic", cmd, pre("pasta_memory",
                                               PASTA_ACCESS_PATCH="object_atomic")),
                    ("bucketing", cmd, pre("pasta_memory"))]
        if name == "resnet":
            variants += [("bucketing, filter", cmd,
                          pre("pasta_memory", PASTA_KERNEL_FILTER=resnet_filter)),
                         ("cpu, filter", cmd,
                          pre("pasta_memory_cpu", PASTA_KERNEL_FILTER=resnet_filter,
                              PASTA_TRACE_BUFFER=str(trace_buffer)))]
        else:
            variants.append(("cpu", cmd, pre("pasta_memory_cpu",
                                             PASTA_TRACE_BUFFER=str(trace_buffer))))
        if memcheck:
            variants.append(("memcheck", [memcheck, "--tool", "memcheck"] + cmd, {}))
        # Interleaved rounds, so drift hits every variant alike; the slow
        # variants (host reduction, memcheck) and ResNet run once.
        results, medians = {}, {}
        for r in range(1 if name == "resnet" else rounds):
            for label, c, env in variants:
                if r > 0 and label in ("cpu", "memcheck"):
                    continue
                d = os.path.join(out, name, label.replace(", ", "-"))
                os.makedirs(d, exist_ok=True)
                res, wall, err = run(c, env, d)
                if res is not None:
                    medians.setdefault(label, []).append(res[key])
                    res = dict(res, **{key: statistics.median(medians[label])})
                if label not in results or res is not None:
                    results[label] = (res, wall, err, summary(d))
        native = results["native"][0]
        floor = results["floor"][0]
        print(f"\n{name} ({gpu}; per {'step' if name == 'resnet' else 'launch + sync'}, "
              f"median over iterations and rounds; process = whole run incl. start-up and "
              f"patching)")
        print(f"  {'variant':<18} {'ms':>10} {'vs native':>10} {'vs floor':>9} {'process s':>10} "
              f"{'patch ms':>9} {'lost':>10}  result")
        for label, (res, wall, err, s) in results.items():
            if res is None:
                print(f"  {label:<18} {'-':>10} {'':>10} {'':>9} {wall:>10.1f}  failed: {err}")
                rows.append([gpu, name, label, "", "", "", f"{wall:.2f}", "", "", str(err)])
                continue
            ms = res[key]
            vs_native = ms / native[key] if native else float("nan")
            vs_floor = ms / floor[key] if floor else float("nan")
            same = "same" if native and res.get("checksum") == native.get("checksum") else (
                "-" if "checksum" not in res else "DIFFERS")
            patch = s.get("patching time (ms)", "")
            lost = s.get("access records lost (buffer full)", "")
            print(f"  {label:<18} {ms:>10.3f} {vs_native:>9.1f}x {vs_floor:>8.2f}x {wall:>10.1f} "
                  f"{patch if patch == '' else f'{patch:.1f}':>9} {lost!s:>10}  {same}")
            rows.append([gpu, name, label, f"{ms:.4f}", f"{vs_native:.2f}", f"{vs_floor:.3f}",
                         f"{wall:.2f}", patch, lost, same])
        get = lambda l: results.get(l, (None,))[0]
        def ratio(a, b):
            x, y = get(a), get(b)
            return f"{x[key] / y[key]:.1f}x" if x and y else "n/a"
        print(f"  ratios: atomic/bucketing {ratio('atomic', 'bucketing')}, "
              f"object atomic/bucketing {ratio('object atomic', 'bucketing')}, "
              f"cpu/bucketing {ratio('cpu', 'bucketing') if name != 'resnet' else ratio('cpu, filter', 'bucketing, filter')}, "
              f"memcheck/bucketing {ratio('memcheck', 'bucketing')}")
    if not only or "uvm" in only:
        # The advice UvmHotness gives for examples/cuda/uvm_advice.cu, applied
        # (--advise) against the program as is; interleaved, median of 5.
        times = {False: [], True: []}
        for _ in range(5):
            for advised in (False, True):
                cmd = [f"{build}/examples/uvm_advice"] + (["--advise"] if advised else [])
                res, _, err = run(cmd, {}, os.path.join(out, "uvm"))
                if res:
                    times[advised].append(res["gpu_ms"])
        if times[False] and times[True]:
            a, b = statistics.median(times[False]), statistics.median(times[True])
            print(f"\nuvm advice ({gpu}; examples/cuda/uvm_advice, 2 x 512 MiB managed, first "
                  f"touched on the GPU; init + 3 axpy, median of 5)\n"
                  f"  as is {a:.2f} ms, with UvmHotness's advice {b:.2f} ms: {a / b:.2f}x faster")
            rows.append([gpu, "uvm_advice", "as is", f"{a:.4f}", "", "", "", "", "", ""])
            rows.append([gpu, "uvm_advice", "advised", f"{b:.4f}", f"{b / a:.3f}", "", "", "",
                         "", ""])
    with open(os.path.join(out, "memory.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "workload", "variant", "ms", "vs_native", "vs_floor", "process_s",
                    "patch_ms", "records_lost", "result"])
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

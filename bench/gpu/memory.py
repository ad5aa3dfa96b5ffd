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

Every pasta run writes its own report directory, and the launches it reports
must equal the program's own count (workloads.cu: its fill kernels, one
warm-up step and the timed steps; SGEMM: Nsight Compute's count, cuBLAS
choosing its kernels) or, for ResNet-18, torch.profiler's count in a run of its
own (a filtered run: all launches in its process list, in kernel_freq.json
those of the kernels the filter keeps, by torch.profiler's names); vecadd's
and stencil's accesses must be the program's (the floor's none), and every
result the native one; or the variant is FAILED and gets no ratio.

    memory.py BUILD_DIR [OUT_DIR] [--quick] [--only vecadd,stencil,sgemm,resnet,uvm]
              [--rounds 3]
prints one table per workload and writes memory.csv. --quick: vecadd and uvm, 2 rounds.
"""
import csv
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WORKLOADS = ("vecadd", "stencil", "sgemm", "resnet")
# bench/gpu/workloads.cu: the fill kernels each workload launches before its steps.
FILLS = {"vecadd": 3, "stencil": 2, "sgemm": 3}
WARMUP = 1  # workloads.cu's warm-up steps
STENCIL = 2048  # workloads.cu's grid side


def accesses(name, steps):
    """The global accesses workloads.cu makes: each fill writes its buffer's 2^24 or 2048^2
    floats once; a vecadd step reads two and writes one a float, a stencil step five reads
    and a write a point inside the border. None where a library chooses (SGEMM: cuBLAS)."""
    if name == "vecadd":
        n = 1 << 24
        return FILLS[name] * n + steps * 3 * n
    if name == "stencil":
        return FILLS[name] * STENCIL ** 2 + steps * 6 * (STENCIL - 2) ** 2
    return None


def memcheck_tool():
    for path in [shutil.which("compute-sanitizer"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                              "compute-sanitizer"),
                 "/usr/local/cuda/compute-sanitizer/compute-sanitizer"]:
        if path and os.path.exists(path):
            return path
    return None


def summary(d):
    """The Sanitizer handler's own summary (patching time, records lost) of a run."""
    return (harness.read_json(os.path.join(d, "sanitizer.json")) or {}).get("summary", {})


RESNET_FILTER = "bn_fw|bn_bw"  # cuDNN's batch-norm kernels


def variants_of(name, cmd, expect, memcheck, total=None, kept=None):
    """pasta run --memory in its variants, and memcheck. `expect`: the launches the program
    makes; `total`: the accesses it makes (None: not known); `kept`: the launches of the
    kernels RESNET_FILTER keeps (ResNet-18's filtered variants)."""
    def pasta(label, *options, once=False, filtered=False, counts=total, **env):
        return harness.Variant(label, cmd, env, pasta=["--memory", *options], once=once,
                               expect=expect, kept=kept if filtered else None,
                               check=None if counts is None else harness.mem_accesses(counts))
    out = [harness.Variant("native", cmd),
           pasta("floor", counts=None if total is None else 0, PASTA_ACCESS_PATCH="noop"),
           pasta("atomic", PASTA_ACCESS_PATCH="atomic"),
           pasta("object atomic", PASTA_ACCESS_PATCH="object_atomic"),
           pasta("bucketing")]
    if name == "resnet":
        # Every launch reaches the process list; the filter keeps those kernel_freq counts.
        out += [pasta("bucketing, filter", "--kernel-filter", RESNET_FILTER, filtered=True),
                pasta("cpu, filter", "--host-reduction", "--kernel-filter", RESNET_FILTER,
                      filtered=True, once=True, PASTA_TRACE_BUFFER=str(4 << 30))]
    else:
        out.append(pasta("cpu", "--host-reduction", once=True,
                         PASTA_TRACE_BUFFER=str((4 if name == "sgemm" else 1) << 30)))
    if memcheck:
        out.append(harness.Variant("memcheck", [memcheck, "--tool", "memcheck"] + cmd, once=True))
    return out


def main():
    p = harness.arguments(__doc__, "memory-out")
    p.add_argument("--only", help="comma-separated, from " + ", ".join(WORKLOADS + ("uvm",)) +
                   " (all; vecadd,uvm with --quick)")
    args = harness.settle(p.parse_args(), rounds=(3, 2),
                          only=(",".join(WORKLOADS + ("uvm",)), "vecadd,uvm"))
    only = set(args.only.split(","))
    unknown = only - set(WORKLOADS + ("uvm",))
    if unknown:
        p.error(f"unknown workload {', '.join(sorted(unknown))}")
    bench = harness.Bench(args.build, args.out, args.timeout, args.cpus, args.budget)
    memcheck = memcheck_tool()
    gpu = bench.gpu
    print(f"GPU: {gpu}; memcheck: {memcheck or 'not found'}")

    wl = f"{bench.build}/examples/memory_workloads"
    iters = {"vecadd": 20, "stencil": 20, "sgemm": 3}
    rows = []
    for name in WORKLOADS:
        if name not in only:
            continue
        kept, total = None, None
        if name == "resnet":
            cmd = harness.torch_workload("resnet18", 32, 2, 3)
            counted, key = bench.count_kernels(name, cmd), "step_ms_median"
            if counted is None:
                continue
            expect, kept = counted.kernels, counted.matching(RESNET_FILTER)
        else:
            cmd = [wl, name, "--iters", str(iters[name])]
            steps = WARMUP + iters[name]
            total = accesses(name, steps)
            # cuBLAS chooses how many kernels an SGEMM takes: Nsight Compute counts them.
            expect = FILLS[name] + steps if name != "sgemm" else \
                bench.count_launches_ncu(name, cmd)
            if expect is None:
                continue
            key = "median_ms"
        variants = variants_of(name, cmd, expect, memcheck, total, kept)
        # Interleaved rounds, so drift hits every variant alike; the slow variants (host
        # reduction, memcheck) once, and ResNet one round.
        results = bench.rounds(name, variants, 1 if name == "resnet" else args.rounds,
                               lambda j, _: (j or {}).get(key))
        med = {label: statistics.median(s.value for s in samples)
               for label, samples in results.items() if samples}
        native, floor = med.get("native"), med.get("floor")
        # The results of the native runs; a workload whose runs differ among themselves is not
        # held to one (it says so).
        native_sums = {s.result.get("checksum") for s in results.get("native", [])}
        if len(native_sums) > 1:
            print(f"{name}: native runs differ in their checksums {sorted(native_sums)}: "
                  "results not compared")
        print(f"\n{name} ({gpu}; per {'step' if name == 'resnet' else 'launch + sync'}, "
              f"median over iterations and rounds; process = whole run incl. start-up and "
              f"patching)")
        print(f"  {'variant':<18} {'ms':>10} {'min..max':>19} {'vs native':>10} {'vs floor':>9} "
              f"{'process s':>10} {'patch ms':>9} {'lost':>10}  result")
        for v in variants:
            samples = results[v.label]
            if v.failed or not samples:
                print(f"  {v.label:<18} {'FAILED':>10}  ({(v.failed or 'no samples').splitlines()[0]})")
                rows.append([gpu, name, v.label, "", "", "", "", "", "", "FAILED"])
                continue
            ms = med[v.label]
            lo, hi = min(s.value for s in samples), max(s.value for s in samples)
            wall = statistics.median(s.seconds for s in samples)
            vs_native = ms / native if native else float("nan")
            vs_floor = ms / floor if floor else float("nan")
            got = {s.result.get("checksum") for s in samples} - {None}
            same = "-" if not got or len(native_sums) != 1 else (
                "same" if got == native_sums else "DIFFERS")
            if same == "DIFFERS":
                bench.fail(f"{name}: {v.label}: checksums {sorted(got)}, the native runs' "
                           f"{sorted(native_sums)}: profiling changed the results")
            s = summary(samples[-1].dir) if v.profiled else {}
            patch = s.get("patching time (ms)", "")
            lost = s.get("access records lost (buffer full)", "")
            print(f"  {v.label:<18} {ms:>10.3f} {lo:>9.3f}..{hi:<9.3f} {vs_native:>9.1f}x "
                  f"{vs_floor:>8.2f}x {wall:>10.1f} {patch if patch == '' else f'{patch:.1f}':>9} "
                  f"{lost!s:>10}  {same}")
            rows.append([gpu, name, v.label, f"{ms:.4f}", f"{vs_native:.2f}", f"{vs_floor:.3f}",
                         f"{wall:.2f}", patch, lost, same])

        def ratio(a, b):
            return f"{med[a] / med[b]:.1f}x" if a in med and b in med else "n/a"
        cpu = ratio("cpu", "bucketing") if name != "resnet" else ratio("cpu, filter",
                                                                      "bucketing, filter")
        print(f"  ratios: atomic/bucketing {ratio('atomic', 'bucketing')}, "
              f"object atomic/bucketing {ratio('object atomic', 'bucketing')}, "
              f"cpu/bucketing {cpu}, memcheck/bucketing {ratio('memcheck', 'bucketing')}")
    if "uvm" in only:
        # The advice UvmHotness gives for examples/cuda/uvm_advice.cu, applied (--advise)
        # against the program as is; interleaved. Neither runs under pasta.
        cmd = [f"{bench.build}/examples/uvm_advice"]
        variants = [harness.Variant("as is", cmd), harness.Variant("advised", cmd + ["--advise"])]
        results = bench.rounds("uvm", variants, max(args.rounds, 5),
                               lambda j, _: (j or {}).get("gpu_ms"))
        if all(results[v.label] for v in variants):
            a, b = (statistics.median(s.value for s in results[v.label]) for v in variants)
            print(f"\nuvm advice ({gpu}; examples/cuda/uvm_advice, 2 x 512 MiB managed, first "
                  f"touched on the GPU; init + 3 axpy, median of {len(results['as is'])})\n"
                  f"  as is {a:.2f} ms, with UvmHotness's advice {b:.2f} ms: {a / b:.2f}x faster")
            rows.append([gpu, "uvm_advice", "as is", f"{a:.4f}", "", "", "", "", "", ""])
            rows.append([gpu, "uvm_advice", "advised", f"{b:.4f}", f"{b / a:.3f}", "", "", "",
                         "", ""])
    with open(os.path.join(bench.out, "memory.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "workload", "variant", "ms", "vs_native", "vs_floor", "process_s",
                    "patch_ms", "records_lost", "result"])
        w.writerows(rows)
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Stall blame's access run on whole models: accesses per instruction counted on
the device (the default), against the no-op patch (the floor of any
sanitizer-patched tool) and the raw trace reduced on the host
(--host-reduction), on training steps of a transformers GPT-2 built from a
config (bench/gpu/torch_step.py --model gpt2 --layers L).

Variants, each a process of its own, in interleaved rounds (the raw trace in
the first round only: it is slow):
  native  the step alone
  floor   the access run's library with the no-op patch (PASTA_ACCESS_PATCH=noop):
          every global access of every kernel calls a patch that does nothing
  device  the access run's library (libpasta_torch_stall_access.so): counts per
          (pc, region of the tools' tensors and views) reduced on the device
  host    --host-reduction's library (libpasta_torch_stall_access_cpu.so): a
          16-byte record per access, copied out and reduced on the host
and once per model the whole `pasta run --torch -t stall_blame
--device-reduction` (both runs, program start to report), whose reports must
be whole: each run's launches (and the sampled run's operator calls, which its
Aten handler logs under PASTA_VERBOSE) those torch.profiler counts in a run of
its own, and run 2's blame table charging every sample of run 1, some to
tensors.

An instrumented run counts only when its sanitizer.json shows instrumented
launches; the device run's must also show no count lost and no partial
report. Prints per model ms per step (median, min..max), what each variant
adds per step over native, and the ratios the goals read: device added /
floor added, host added / device added; writes stall_access.csv. A goal
missed is a FAILED line, and the exit status 1.

    stall_access.py BUILD_DIR [OUT_DIR] [--layers 2,12] [--batch 4] [--rounds 3]
                    [--steps 2] [--host-layers 2]
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def sanitizer_summary(d):
    paths = glob.glob(os.path.join(d, "**", "sanitizer.json"), recursive=True)
    data = harness.read_json(paths[0]) if paths else None
    return (data or {}).get("summary"), data


def instrumented(device_run):
    """A check: the run's reports show instrumented launches (and, for the device
    reduction, nothing lost and nothing partial)."""
    def check(d, result):
        summary, data = sanitizer_summary(d)
        if summary is None:
            return f"no sanitizer.json under {d}: the access run's library did not report"
        if not summary.get("launches instrumented"):
            return f"no launch instrumented ({d}/sanitizer.json)"
        if not result or "step_ms_median" not in result:
            return "the workload printed no step time"
        if device_run:
            lost = summary.get("per-instruction counts lost (table and overflow full)")
            if lost != 0:
                return f"{lost} per-instruction counts lost ({d})"
            for path in glob.glob(os.path.join(d, "**", "*.json"), recursive=True):
                doc = harness.read_json(path) or {}
                if isinstance(doc, dict) and doc.get("partial"):
                    return f"partial report {path}: {doc['partial']}"
        return None
    return check


# The goals: what device counting may add over the no-op patch's floor, how much cheaper it
# must be than the raw trace (measured where the raw trace runs), and the two runs' time.
DEVICE_VS_FLOOR_MAX = 3.0
HOST_VS_DEVICE_MIN = 20.0
TWO_RUNS_MAX_S, TWO_RUNS_LAYERS = 180.0, 12


RUN_2_BEGINS = "stall_blame, run 2 of 2"  # the launcher's line between the two runs


def sampled_operator_calls(d):
    """The operator calls the sampled run's Aten handler logged (PASTA_VERBOSE), each a
    number, from the launcher's stderr that the harness keeps (d/stderr.txt), before run 2
    begins. -t stall_blame runs stall_blame alone (PASTA_TOOLS), so run 1 writes no
    op_summary.json to count them by (seen on the H200)."""
    try:
        with open(os.path.join(d, "stderr.txt")) as f:
            run1 = f.read().split(RUN_2_BEGINS, 1)[0]
    except OSError:
        return []
    return [int(n) for n in re.findall(r"aten handler: (\d+) operator calls", run1)]


def whole_run(counted):
    """A check of the whole two-run stall blame (run with PASTA_VERBOSE): run 1
    (OUT/sampled) whole, with the launches and operator calls torch.profiler counted, and
    run 2's blame table charging each of run 1's samples, to a tensor or to why not."""
    def check(d, _result):
        sampled = os.path.join(d, "sampled")
        problem = harness.report_problem(sampled, counted.kernels)
        if problem:
            return f"run 1: {problem}"
        calls = sampled_operator_calls(d)
        if calls != [counted.operators]:
            return (f"run 1: its Aten handler logged {calls} operator calls ({d}/stderr.txt, "
                    f"before run 2), torch.profiler counts {counted.operators}")
        found = glob.glob(os.path.join(sampled, "**", "stall_samples.json"), recursive=True)
        blame = harness.read_json(os.path.join(d, "stall_blame.json"))
        problem = harness.blame_problem(blame, harness.read_json(found[0]) if found else None)
        return f"run 2's blame ({d}/stall_blame.json): {problem}" if problem else None
    return check


def missed_goals(row):
    """The goals a model's row misses, in words with the numbers."""
    missed = []
    if row.get("device_vs_floor", 0) > DEVICE_VS_FLOOR_MAX:
        missed.append(f"device/floor {row['device_vs_floor']:.2f}x, at most "
                      f"{DEVICE_VS_FLOOR_MAX:g}x")
    if "host_vs_device" in row and row["host_vs_device"] < HOST_VS_DEVICE_MIN:
        missed.append(f"host/device {row['host_vs_device']:.1f}x, at least "
                      f"{HOST_VS_DEVICE_MIN:g}x")
    if row["layers"] == TWO_RUNS_LAYERS and row.get("two_run_seconds") is not None and \
            row["two_run_seconds"] >= TWO_RUNS_MAX_S:
        missed.append(f"two runs {row['two_run_seconds']:.1f} s, under {TWO_RUNS_MAX_S:g} s")
    return missed


def main():
    p = harness.arguments(__doc__, "stall-access-out")
    p.add_argument("--layers", default="2,12", help="GPT-2 sizes, in layers (2,12)")
    p.add_argument("--batch", type=int, default=4, help="sequences of 256 tokens a step (4)")
    p.add_argument("--steps", type=int, default=2, help="timed steps after one warm-up (2)")
    p.add_argument("--host-layers", default="2",
                   help="sizes the raw-trace variant runs on, once (2; empty: none)")
    args = harness.settle(p.parse_args(), rounds=(3, 2))
    bench = harness.Bench(args.build, args.out, args.timeout, args.cpus, args.budget)
    device_lib = bench.lib("pasta_torch_stall_access")
    host_lib = bench.lib("pasta_torch_stall_access_cpu")
    host_layers = {int(x) for x in args.host_layers.split(",") if x}
    # As --device-reduction's run 2: asynchronous copies counted too, in every variant.
    spaces = {"PASTA_ACCESS_SPACES": "global,async"}
    summary_rows = []
    for layers in (int(x) for x in args.layers.split(",")):
        workload = f"GPT-2 {layers} layers, batch {args.batch}"
        cmd = harness.torch_workload("gpt2", args.batch, 1, args.steps, "--layers", str(layers))
        variants = [
            harness.Variant("native", cmd),
            harness.Variant("floor", cmd, {**spaces, "CUDA_INJECTION64_PATH": device_lib,
                                           "PASTA_ACCESS_PATCH": "noop"},
                            check=instrumented(False)),
            harness.Variant("device", cmd, {**spaces, "CUDA_INJECTION64_PATH": device_lib},
                            check=instrumented(True)),
        ]
        if layers in host_layers:
            variants.append(harness.Variant("host", cmd, {**spaces, "CUDA_INJECTION64_PATH": host_lib},
                                            check=instrumented(False), once=True))
        results = bench.rounds(workload, variants, args.rounds, harness.step_ms)

        def counts(label, samples):
            if label is None:
                return "counts copied / records (lost)", None
            summary, _ = sanitizer_summary(samples[0].dir) if samples else (None, None)
            if not summary:
                return None, "-"
            if "per-instruction counts copied" in summary:
                return None, (f"{summary['per-instruction counts copied']} "
                              f"({summary.get('per-instruction counts lost (table and overflow full)')})")
            if "access records" in summary:
                return None, (f"{summary['access records']} "
                              f"({summary.get('access records lost (buffer full)')})")
            return None, "-"
        bench.table(workload, variants, results, "ms/step", extra=counts)

        # The whole two-run stall blame, program start to report.
        counted = bench.count_kernels(workload, cmd)
        # PASTA_VERBOSE: run 1's Aten handler logs its operator calls (whole_run).
        whole = harness.Variant("pasta run --torch -t stall_blame --device-reduction", cmd,
                                {"PASTA_VERBOSE": "1"},
                                pasta=["--torch", "-t", "stall_blame", "--device-reduction"],
                                expect=counted.kernels if counted else None,
                                check=whole_run(counted) if counted else None)
        got = bench.once(workload, whole, 0) if counted else None
        seconds = got[3] if got else None
        med = {label: statistics.median(s.value for s in xs)
               for label, xs in results.items() if xs}
        row = {"layers": layers, "two_run_seconds": seconds, **{f"{k}_ms": v for k, v in med.items()}}
        if "native" in med:
            added = {k: v - med["native"] for k, v in med.items() if k != "native"}
            row.update({f"{k}_added_ms": v for k, v in added.items()})
            if added.get("floor", 0) > 0 and "device" in added:
                row["device_vs_floor"] = added["device"] / added["floor"]
            if added.get("device", 0) > 0 and "host" in added:
                row["host_vs_device"] = added["host"] / added["device"]
        summary_rows.append(row)

    print(f"\nStall blame's access run on {bench.gpu}: time added per instrumented step")
    print(f"  {'layers':>6} {'native ms':>10} {'floor +ms':>10} {'device +ms':>11} "
          f"{'host +ms':>10} {'device/floor':>13} {'host/device':>12} {'two runs s':>11}")
    fmt = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
    for r in summary_rows:
        print(f"  {r['layers']:>6} {fmt(r.get('native_ms'), '10.1f')} "
              f"{fmt(r.get('floor_added_ms'), '10.1f')} {fmt(r.get('device_added_ms'), '11.1f')} "
              f"{fmt(r.get('host_added_ms'), '10.1f')} {fmt(r.get('device_vs_floor'), '12.2f')}x "
              f"{fmt(r.get('host_vs_device'), '11.1f')}x {fmt(r.get('two_run_seconds'), '11.1f')}")
    print(f"  goals: device/floor <= {DEVICE_VS_FLOOR_MAX:g}x; host/device >= "
          f"{HOST_VS_DEVICE_MIN:g}x (where the raw trace ran); two runs < {TWO_RUNS_MAX_S:g} s "
          f"({TWO_RUNS_LAYERS} layers); nothing lost (the device run's check)")
    for r in summary_rows:
        for goal in missed_goals(r):
            bench.fail(f"GPT-2 {r['layers']} layers: goal missed: {goal}")
    with open(os.path.join(bench.out, "stall_access.json"), "w") as f:
        json.dump({"gpu": bench.gpu, "rows": summary_rows}, f, indent=1)
    bench.write_csv("stall_access.csv")
    return bench.exit_code()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench_harness_test.py: the GPU benchmarks' harness (bench/gpu/harness.py) refuses a run
that was not profiled, on a fake build: a `pasta` launcher that runs the program and writes
the reports a test case asks for (none, as when injection fails; a wrong launch count; a
partial report; operator calls; accesses), and fake workloads that print what the real ones
print. Each wrong case is a FAILED line naming the variant, the directory and the numbers,
with no ratio; the right case passes with its exact ratio; annotations.py runs end to end and
refuses an unknown option; memory.py's and stall_access.py's checks and goals on made-up
reports."""
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
sys.path.insert(0, os.path.dirname(HERE))
import checks  # noqa: E402
import harness  # noqa: E402
import merge_rounds  # noqa: E402

# `pasta run [options] -o DIR -- PROGRAM...`: runs the program, then writes what FAKE_REPORTS
# says (ok, none, partial, or aten: a pipeline with no device handler, which writes no report
# and logs its operator calls) with FAKE_LAUNCHES launches (FAKE_KF_LAUNCHES in
# kernel_freq.json); with --torch, op_summary.json counts FAKE_OPS operator calls; with
# --memory and FAKE_ACCESSES, mem_hotness.json counts those accesses.
FAKE_PASTA = r'''#!/usr/bin/env python3
import json, os, subprocess, sys
args = sys.argv[1:]
cmd = args[args.index("--") + 1:]
out = args[args.index("-o") + 1]
os.makedirs(out, exist_ok=True)
code = subprocess.run(cmd, env=dict(os.environ, PASTA_OUTPUT_DIR=out)).returncode
mode = os.environ.get("FAKE_REPORTS", "ok")
if mode == "none":
    print(f"pasta: no reports in {out}: the program made no CUDA call that loaded pasta",
          file=sys.stderr)
    sys.exit(code)
if "FAKE_STOP_MS" in os.environ:  # what pasta logs at exit
    print(f"pasta: stopping took {os.environ['FAKE_STOP_MS']} ms", file=sys.stderr)
launches = int(os.environ.get("FAKE_LAUNCHES", "752"))
entry = {"pid": 1, "host": "h", "dir": ".", "status": "finished", "launches": launches}
if mode == "partial":
    entry["partial"] = "stopped by SIGTERM"
if mode == "aten":
    entry.update(status="no GPU work", launches=0)
    print(f"pasta: aten handler: {os.environ.get('FAKE_OPS', '4000')} operator calls, 10 "
          "allocations, 9 frees, 0 views, memory hook on 1 threads", file=sys.stderr)
os.makedirs(os.path.join(out, "processes"))
with open(os.path.join(out, "processes", "h-1.json"), "w") as f:
    json.dump(entry, f)
def report(tool, doc):
    with open(os.path.join(out, tool + ".json"), "w") as f:
        json.dump(doc, f)
if mode != "aten":
    report("kernel_freq", {"summary": {"launches": int(os.environ.get("FAKE_KF_LAUNCHES",
                                                                       launches))}})
    if "--torch" in args:
        report("op_summary", {"summary": {"calls": int(os.environ.get("FAKE_OPS", "4000"))}})
    if "--memory" in args and "FAKE_ACCESSES" in os.environ:
        report("mem_hotness", {"summary": {"accesses": int(os.environ["FAKE_ACCESSES"]),
                                           "accesses outside known allocations": 0}})
with open(os.path.join(out, "run.json"), "w") as f:
    json.dump({"program": " ".join(cmd), "exit_code": code}, f)
sys.exit(code)
'''

# A PyTorch workload as torch_step.py prints it: FAKE_MS per step; --count-kernels: 752
# kernels (52 of them cuDNN's batch-norm ones) and 4000 operator calls; with FAKE_MS2, a second
# batch (torch_step.py --batch 1,128) that takes FAKE_MS2 per step.
FAKE_WORKLOAD = r'''#!/usr/bin/env python3
import json, os, sys
out = {"step_ms_median": float(os.environ.get("FAKE_MS", "10.0"))}
if "FAKE_MS2" in os.environ:
    out["batches"] = [{"batch": 1, "step_ms_median": out["step_ms_median"]},
                      {"batch": 128, "step_ms_median": float(os.environ["FAKE_MS2"])}]
if "--windows" in sys.argv:  # torch_step.py --windows: inside/outside, within the process
    outside = float(os.environ.get("FAKE_OUTSIDE", "10.0"))
    ratio = float(os.environ.get("FAKE_RATIO", "1.0"))
    out.update(window_ratio=ratio, step_ms_outside_median=outside,
               step_ms_inside_median=outside * ratio, step_ms_first_outside=outside,
               step_ms_later_outside_median=outside)
if "--count-kernels" in sys.argv:
    out.update(kernels=752, operators=4000, kernel_names={
        "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(...)": 40,
        "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(...)": 12,
        "void at::native::vectorized_elementwise_kernel<4, ...>(...)": 700})
if "--torch-profiler" in sys.argv:  # the device events torch.profiler saw (FAKE_PROFILED)
    out["device_events_profiled"] = int(os.environ.get("FAKE_PROFILED", "800"))
print("warming up")
print(json.dumps(out))
'''

# examples/annotated --vecadd N K; annotated_pasta also writes mem_hotness.json.
FAKE_ANNOTATED = r'''#!/usr/bin/env python3
import json, os, sys
n, k = int(sys.argv[2]), int(sys.argv[3])
ms = float(os.environ.get("FAKE_MS", "0.25"))
if sys.argv[0].endswith("_pasta"):
    ms = 0.5
    with open(os.path.join(os.environ["PASTA_OUTPUT_DIR"], "mem_hotness.json"), "w") as f:
        json.dump({"summary": {"accesses": 3 * n * (k + 1),
                               "accesses outside known allocations": 0}}, f)
print(f"vecadd {n} floats: {ms:.4f} ms per launch ({k} launches)")
'''


def script(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def reports(d, launches=752, kf=None, status="finished", partial=None, exit_code=0, run=True,
            registry=True):
    """A report directory as `pasta run` leaves it."""
    os.makedirs(d)
    if run:
        with open(os.path.join(d, "run.json"), "w") as f:
            json.dump({"exit_code": exit_code}, f)
    if registry:
        os.makedirs(os.path.join(d, "processes"))
        entry = {"status": status, "launches": launches, "dir": "."}
        if partial:
            entry["partial"] = partial
        with open(os.path.join(d, "processes", "h-7.json"), "w") as f:
            json.dump(entry, f)
    with open(os.path.join(d, "kernel_freq.json"), "w") as f:
        json.dump({"summary": {"launches": launches if kf is None else kf}}, f)
    return d


def operator_events():
    """operator_events() counts what RecordFunction's callbacks see: not the ranges compiled
    code opens only for torch.profiler, not kernels."""
    events = [{"cat": "cpu_op", "name": "aten::mm"},
              {"cat": "cpu_op", "name": "## Call CompiledFxGraph fgfqnv ##"},
              {"cat": "cpu_op", "name": "TorchDynamo Cache Lookup"},
              {"cat": "cpu_op", "name": "Pregraph bytecode"},
              {"cat": "cpu_op", "name": "AOTDispatcher Runtime Wrapper Prologue"},
              {"cat": "user_annotation", "name": "Optimizer.step#AdamW.step"},
              {"cat": "user_annotation", "name": "triton_poi_fused_add_0"},
              {"cat": "kernel", "name": "ampere_sgemm"}]
    checks.expect("operator calls of a compiled step's trace",
                  [e["name"] for e in harness.operator_events(events)],
                  ["aten::mm", "TorchDynamo Cache Lookup", "Optimizer.step#AdamW.step"])


def report_problems(tmp):
    """report_problem() on hand-made directories, with its exact words."""
    d = os.path.join(tmp, "dirs")
    checks.expect("right count", harness.report_problem(reports(f"{d}/ok"), 752), None)
    os.makedirs(f"{d}/empty")
    checks.expect("nothing written (injection failed)", harness.report_problem(f"{d}/empty", 752),
                  f"no run.json in {d}/empty: pasta run wrote no reports (was pasta loaded?)")
    checks.expect("run.json but no process list",
                  harness.report_problem(reports(f"{d}/noreg", registry=False), 752),
                  f"no process entered itself in {d}/noreg/processes: the program ran without "
                  f"pasta (injection failed)")
    checks.expect("one launch missing", harness.report_problem(reports(f"{d}/751", 751), 752),
                  f"pasta saw 751 launches, the native run makes 752 "
                  f"({d}/751/processes/h-7.json)")
    checks.expect("kernel_freq.json disagrees",
                  harness.report_problem(reports(f"{d}/kf", kf=750), 752),
                  f"kernel_freq.json reports 750 launches, the native run makes 752 ({d}/kf)")
    checks.expect("partial reports",
                  harness.report_problem(reports(f"{d}/partial", partial="stopped by SIGTERM"), 752),
                  f"partial reports (stopped by SIGTERM) in {d}/partial/processes/h-7.json")
    checks.expect("no GPU work",
                  harness.report_problem(reports(f"{d}/idle", status="no GPU work"), 752),
                  f"status 'no GPU work' in {d}/idle/processes/h-7.json, expected 'finished'")
    checks.expect("program failed", harness.report_problem(reports(f"{d}/exit3", exit_code=3), 752),
                  f"the program exited with 3 (run.json in {d}/exit3)")
    checks.expect("in a range", harness.report_problem(reports(f"{d}/r9", 9), (7, None)), None)
    checks.expect("below a range", harness.report_problem(reports(f"{d}/r5", 5), (7, None)),
                  f"pasta saw 5 launches, the native run makes 7..inf ({d}/r5/processes/h-7.json)")
    # A compiled model's Inductor compile workers: processes besides the workload, no launch.
    def helper(d, name, status, launches=0):
        with open(os.path.join(d, "processes", name), "w") as f:
            json.dump({"status": status, "launches": launches, "dir": name[:-5],
                       "partial": "capture range cudaProfilerApi never opened"}, f)
        return d
    checks.expect("a compile worker beside the workload, no launch",
                  harness.report_problem(helper(reports(f"{d}/w"), "h-8.json", "finished"), 752),
                  None)
    checks.expect("the workload's partial reports still count",
                  harness.report_problem(helper(reports(f"{d}/wp", partial="stopped by SIGTERM"),
                                                "h-8.json", "finished"), 752),
                  f"partial reports (stopped by SIGTERM) in {d}/wp/processes/h-7.json")
    checks.expect("a worker that did not finish",
                  harness.report_problem(helper(reports(f"{d}/wk"), "h-8.json", "running"), 752),
                  f"{d}/wk/processes/h-8.json, a process besides the workload, ended with status "
                  f"'running'")
    checks.expect("two processes launching",
                  harness.report_problem(helper(reports(f"{d}/w2"), "h-8.json", "finished", 5),
                                         752),
                  f"2 processes in {d}/w2/processes, 2 of them launching kernels, expected the "
                  f"workload's one")
    checks.expect("not under pasta run: no run.json needed",
                  harness.report_problem(reports(f"{d}/direct", run=False), 752, launcher=False),
                  None)


def modules_followed(tmp):
    """module_calls_followed() against module_summary's calls: torch's hook count a step times
    the followed steps, by arithmetic; and bootstrap() on a list whose median is known."""
    d = os.path.join(tmp, "follow")
    result = {"switched": "modules", "module_calls_per_step": 33, "followed_steps": 10}

    def summary(name, calls):
        reports(f"{d}/{name}")
        rows = [{"module": m, "calls": c} for m, c in calls.items()]
        with open(f"{d}/{name}/module_summary.json", "w") as f:
            json.dump({"tables": {"modules": rows}}, f)
        return f"{d}/{name}"
    # 330 calls: the root 10, 32 children 10 each; "(no module)" is not a module call.
    right = {"GPT2LMHeadModel": 10, **{f"m{i}": 10 for i in range(32)}, "(no module)": 99}
    checks.expect("module calls of the followed steps",
                  harness.module_calls_followed(summary("ok", right), result), None)
    checks.expect("a paused step's calls counted too",
                  harness.module_calls_followed(summary("more", dict(right, m0=11)), result),
                  f"module_summary counts 331 module calls, torch's hook 330 (33 a step x 10 "
                  f"followed steps) in {d}/more")
    checks.expect("nothing switched (no pasta_modules)",
                  harness.module_calls_followed(summary("none", right),
                                                dict(result, switched="nothing")),
                  "the program switched 'nothing', not modules")
    # torch_step.py --ring-ops: the ring's operator starts against torch.profiler's count.
    checks.expect("ring: every operator recorded",
                  harness.ring_ops_recorded(d, {"ring_ops": 120}, want=120), None)
    checks.expect("ring: one missed",
                  harness.ring_ops_recorded(d, {"ring_ops": 119}, want=120),
                  "the ring recorded 119 operator starts, torch.profiler counts 120")
    checks.expect("ring: no count in the result",
                  harness.ring_ops_recorded(d, {}, want=120),
                  "the ring recorded None operator starts, torch.profiler counts 120")
    med, lo, hi = harness.bootstrap([1.0, 1.02, 0.98, 1.01, 0.99])
    checks.expect("bootstrap: the median, inside its interval",
                  (med, lo <= med <= hi, 0.98 <= lo, hi <= 1.02), (1.0, True, True, True))
    # Each round over the native run of the same round; a round native lacks is left out.
    native = [harness.Sample(v, 0, {}, "", "", r) for r, v in enumerate([10.0, 20.0, 16.0])]
    ours = [harness.Sample(v, 0, {}, "", "", r) for r, v in [(0, 11.0), (1, 24.0), (3, 99.0)]]
    checks.expect("round_ratios: paired by round", harness.round_ratios(ours, native), [1.1, 1.2])
    # Two runs' samples as one table: the second run's rounds after the first's, each paired
    # within its run; a variant one run lacks is left out.
    run = lambda n, t, extra: {"gpu": "G", "workloads": {"w": {  # noqa: E731
        "unit": "ms", "baseline": "native", "checked": {"native": False, "t": True, "x": True},
        "samples": {"native": n, "t": t, **extra}}}}
    merged = merge_rounds.merge([run([[0, 10.0, 1], [1, 20.0, 1]], [[0, 11.0, 1], [1, 24.0, 1]],
                                     {"x": [[0, 1.0, 1]]}),
                                 run([[0, 16.0, 1]], [[0, 20.0, 1]], {})])
    _, _, variants, results = merged["w"]
    checks.expect("merge_rounds: variants every run has", [v.label for v in variants], ["native", "t"])
    checks.expect("merge_rounds: rounds numbered on, ratios paired within each run",
                  harness.round_ratios(results["t"], results["native"]), [1.1, 1.2, 1.25])


def blame_sums():
    """blame_problem(): run 2's blamed and unattributed samples must add up to run 1's file,
    with some blamed; an empty table against an empty file is no pass."""
    samples = {"samples": 10, "functions": {
        "_Z5blendPKf": {"pcs": [{"pc": 16, "reasons": {"long_scoreboard": 6, "wait": 1}},
                                {"pc": 32, "reasons": {"long_scoreboard": 2}}]},
        "_Z4fillPf": {"pcs": [{"pc": 0, "reasons": {"not_selected": 1}}]}}}
    checks.expect("sampled_stalls: every reason at every pc", harness.sampled_stalls(samples), 10)

    def blame(blamed, unattributed):
        return {"tables": {"blame": [{"tensor": f"t{i}", "stall_samples": n}
                                     for i, n in enumerate(blamed)],
                           "unattributed": [{"why": f"w{i}", "stall_samples": n}
                                            for i, n in enumerate(unattributed)]}}
    checks.expect("blamed + unattributed = run 1's",
                  harness.blame_problem(blame([7.0 / 3, 14.0 / 3, 2], [1]), samples), None)
    checks.expect("a sample lost between the runs",
                  harness.blame_problem(blame([6, 2], [1]), samples),
                  "blamed 8.000 + unattributed 1.000 = 9.000 samples, the sampled run holds 10")
    checks.expect("nothing blamed",
                  harness.blame_problem(blame([], [10]), samples),
                  "no blame row: none of the sampled run's 10 samples blamed on a tensor")
    checks.expect("empty tables against an empty file",
                  harness.blame_problem(blame([], []), {"functions": {}}),
                  "the sampled run's stall_samples.json holds no sample")
    checks.expect("no file", harness.blame_problem(blame([1], []), None),
                  "the sampled run's stall_samples.json holds no sample")


def operators_and_filters(tmp):
    """report_problem() with operator calls (op_summary.json, event_count.json, or the aten
    handler's log where no report was written) and with a kernel filter's launches."""
    d = os.path.join(tmp, "ops")
    write = lambda path, doc: json.dump(doc, open(path, "w"))  # noqa: E731
    write(f"{reports(f'{d}/op')}/op_summary.json", {"summary": {"calls": 3999}})
    checks.expect("op_summary.json one call short",
                  harness.report_problem(f"{d}/op", 752, operators=4000),
                  f"pasta saw 3999 operator calls (op_summary.json in {d}/op), torch.profiler "
                  f"counts 4000")
    checks.expect("op_summary.json right", harness.report_problem(f"{d}/op", 752, operators=3999),
                  None)
    write(f"{reports(f'{d}/ec')}/event_count.json",
          {"tables": {"events": [{"event": "OpBegin", "count": 4000},
                                 {"event": "OpEnd", "count": 4000}]}})
    checks.expect("event_count.json's OpBegin",
                  harness.report_problem(f"{d}/ec", 752, operators=4000), None)
    aten = reports(f"{d}/aten", 0, status="no GPU work")
    os.remove(f"{aten}/kernel_freq.json")  # a run with no GPU work writes no report
    checks.expect("no report, no log: no count",
                  harness.report_problem(aten, 0, operators=4000),
                  f"pasta saw None operator calls (the aten handler's log (stderr.txt) in "
                  f"{aten}), torch.profiler counts 4000")
    with open(f"{aten}/stderr.txt", "w") as f:
        f.write("pasta: aten handler: operators, tensor memory on\n"
                "pasta: aten handler: 4000 operator calls, 7 allocations, 7 frees, 0 views, "
                "memory hook on 2 threads\n")
    checks.expect("the aten handler's own count in its log",
                  harness.report_problem(aten, 0, operators=4000), None)
    checks.expect("a filter's kept launches in kernel_freq.json",
                  harness.report_problem(reports(f"{d}/kept", 752, kf=52), 752, kept=52), None)
    checks.expect("kernel_freq.json counting every launch though a filter keeps 52",
                  harness.report_problem(reports(f"{d}/all", 752), 752, kept=52),
                  f"kernel_freq.json reports 752 launches, the native run makes 52 its filter "
                  f"keeps ({d}/all)")
    counted = harness.Counted(752, {"void cudnn::bn_fw_tr_1C11_kernel(float)": 40,
                                    "void cudnn::bn_bw_1C11_kernel_new(float)": 12,
                                    "void at::native::vectorized_elementwise_kernel<4>()": 700}, 4000)
    checks.expect("Counted.matching: the kernels a filter keeps, by name",
                  (counted.matching("bn_fw|bn_bw"), counted.matching("elementwise"),
                   counted.matching("^gemm")), (52, 700, 0))


def accesses_counted(tmp):
    """mem_accesses(): the one mem_hotness.json, whole, counts the program's accesses, none
    outside its allocations."""
    d = os.path.join(tmp, "acc")

    def hotness(name, accesses, outside=0, partial=None, where="."):
        os.makedirs(os.path.join(d, name, where), exist_ok=True)
        doc = {"summary": {"accesses": accesses, "accesses outside known allocations": outside}}
        if partial:
            doc["partial"] = partial
        with open(os.path.join(d, name, where, "mem_hotness.json"), "w") as f:
            json.dump(doc, f)
        return os.path.join(d, name)
    check = harness.mem_accesses(12288)
    checks.expect("accesses exact", check(hotness("ok", 12288, where="pid7"), None), None)
    checks.expect("one access short", check(hotness("short", 12287), None),
                  f"{d}/short/mem_hotness.json counts 12287 accesses and 0 outside "
                  f"allocations, the program makes 12288, all in its allocations")
    checks.expect("some outside the allocations", check(hotness("out", 12288, 4), None),
                  f"{d}/out/mem_hotness.json counts 12288 accesses and 4 outside allocations, "
                  f"the program makes 12288, all in its allocations")
    checks.expect("partial", check(hotness("partial", 12288, partial="buffer full"), None),
                  f"partial report {d}/partial/mem_hotness.json: buffer full")
    os.makedirs(f"{d}/none")
    checks.expect("no report", check(f"{d}/none", None), f"0 mem_hotness.json under {d}/none, "
                  "expected 1")
    checks.expect("the floor (no-op patch) counts none", harness.mem_accesses(0)(
        hotness("floor", 0), None), None)


def operators_refused(tmp, build, workload):
    """overhead.py's --torch variants are checked on operator calls too, aten-only (no report:
    its pipeline does no GPU work) by its handler's own count."""
    import overhead  # noqa: E402
    shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
    bench = harness.Bench(build, os.path.join(tmp, "out"), timeout=60)
    counted = harness.Counted(752, {}, 4000)
    variants = overhead.torch_variants(bench, workload, counted,
                                       ["native", "aten-only", "torch", "torch-two-tools"])
    variants[1].env["FAKE_REPORTS"] = "aten"
    variants[3].env["FAKE_OPS"] = "3990"
    checks.expect("operators checked for the --torch variants",
                  [(v.label, v.expect, v.operators) for v in variants],
                  [("native", 752, None), ("  same, no CUPTI (operator callbacks alone)", 0, 4000),
                   ("pasta run --torch", 752, 4000),
                   ("  same events, only op_summary,tensor_alloc run", 752, 4000)])
    results, text = quiet_rounds(bench, "fake step", variants, 1, harness.step_ms)
    checks.expect("aten-only and --torch kept, the one with 10 calls missing refused",
                  {k: len(v) for k, v in results.items()},
                  {"native": 1, "  same, no CUPTI (operator callbacks alone)": 1,
                   "pasta run --torch": 1, "  same events, only op_summary,tensor_alloc run": 0})
    out = os.path.join(tmp, "out", "fake-step", "same-events-only-op-summary-tensor-alloc-run")
    checks.expect("... its FAILED line",
                  [l for l in text.splitlines() if l.startswith("FAILED")],
                  [f"FAILED fake step:   same events, only op_summary,tensor_alloc run (round 1): "
                   f"pasta saw 3990 operator calls (op_summary.json in {out}/round1), "
                   f"torch.profiler counts 4000"])
    variants = overhead.torch_variants(bench, workload, counted, ["aten-only"])
    variants[0].env.update(FAKE_REPORTS="aten", FAKE_OPS="0")
    quiet_rounds(bench, "fake step 2", variants, 1, harness.step_ms)
    checks.expect("aten-only whose callbacks never ran refused", variants[0].failed,
                  "pasta saw 0 operator calls (the aten handler's log (stderr.txt) in "
                  f"{tmp}/out/fake-step-2/same-no-cupti-operator-callbacks-alone/round1), "
                  "torch.profiler counts 4000")


def memory_variants():
    """memory.py: every pasta variant of vecadd held to the program's accesses (the floor to
    none), ResNet-18's filtered ones to the launches the filter keeps."""
    import memory  # noqa: E402
    vec = memory.variants_of("vecadd", ["vecadd"], 24, None, total=memory.accesses("vecadd", 21))
    checks.expect("vecadd's accesses: fills, then 21 steps of 3 a float",
                  memory.accesses("vecadd", 21), (3 + 3 * 21) * (1 << 24))
    checks.expect("stencil's accesses: fills, then 6 a point inside the border",
                  memory.accesses("stencil", 21), 2 * 2048 ** 2 + 21 * 6 * 2046 ** 2)
    checks.expect("sgemm's accesses: cuBLAS's", memory.accesses("sgemm", 4), None)
    checks.expect("vecadd: variants with an access check",
                  [(v.label, v.check is not None) for v in vec],
                  [("native", False), ("floor", True), ("atomic", True), ("object atomic", True),
                   ("bucketing", True), ("cpu", True)])
    resnet = memory.variants_of("resnet", ["resnet"], 752, "memcheck", kept=52)
    checks.expect("resnet: launches, the filter's, no access check",
                  [(v.label, v.expect, v.kept, v.check) for v in resnet if v.profiled],
                  [("floor", 752, None, None), ("atomic", 752, None, None),
                   ("object atomic", 752, None, None), ("bucketing", 752, None, None),
                   ("bucketing, filter", 752, 52, None), ("cpu, filter", 752, 52, None)])


def stall_goals_and_runs(tmp):
    """stall_access.py: the goals enforced, and the whole two-run stall blame checked run by
    run (launches and operators of the sampled run, every sample charged in run 2)."""
    import stall_access  # noqa: E402
    checks.expect("goals met", stall_access.missed_goals(
        {"layers": 12, "device_vs_floor": 2.4, "two_run_seconds": 62.0}), [])
    checks.expect("goals missed", stall_access.missed_goals(
        {"layers": 12, "device_vs_floor": 3.2, "host_vs_device": 18.0, "two_run_seconds": 190.0}),
        ["device/floor 3.20x, at most 3x", "host/device 18.0x, at least 20x",
         "two runs 190.0 s, under 180 s"])
    checks.expect("the two runs' time is the 12-layer goal only", stall_access.missed_goals(
        {"layers": 2, "two_run_seconds": 190.0}), [])
    d = os.path.join(tmp, "stall")
    sampled = reports(f"{d}/sampled", 752)
    # Run 1 writes no op_summary.json (-t stall_blame runs stall_blame alone): its Aten
    # handler's count is in the launcher's stderr before run 2, run 2's own after it.
    def stderr(*lines):
        with open(f"{d}/stderr.txt", "w") as f:
            f.write("".join(f"pasta: {line}\n" for line in lines))
    run2 = ("stall_blame, run 2 of 2: memory accesses (Compute Sanitizer) into OUT",
            "aten handler: 4001 operator calls, 7 allocations, 7 frees, 0 views, memory hook "
            "on 1 threads")
    stderr("stall_blame, run 1 of 2: PC sampling (CUPTI) into OUT/sampled",
           "aten handler: 4000 operator calls, 7 allocations, 7 frees, 0 views, memory hook "
           "on 1 threads", *run2)
    with open(f"{sampled}/stall_samples.json", "w") as f:
        json.dump({"functions": {"k": {"pcs": [{"pc": 0, "reasons": {"long_scoreboard": 8}}]}}},
                  f)
    blame = {"tables": {"blame": [{"tensor": "x", "stall_samples": 6.0}],
                        "unattributed": [{"why": "w", "stall_samples": 2.0}]}}
    with open(f"{d}/stall_blame.json", "w") as f:
        json.dump(blame, f)
    check = stall_access.whole_run(harness.Counted(752, {}, 4000))
    checks.expect("the whole two-run stall blame", check(d, None), None)
    blame["tables"]["unattributed"] = []
    with open(f"{d}/stall_blame.json", "w") as f:
        json.dump(blame, f)
    checks.expect("run 2 lost two samples", check(d, None),
                  f"run 2's blame ({d}/stall_blame.json): blamed 6.000 + unattributed 0.000 = "
                  "6.000 samples, the sampled run holds 8")
    checks.expect("run 1 with another operator count",
                  stall_access.whole_run(harness.Counted(752, {}, 4001))(d, None),
                  f"run 1: its Aten handler logged [4000] operator calls ({d}/stderr.txt, "
                  "before run 2), torch.profiler counts 4001")
    stderr("stall_blame, run 1 of 2: PC sampling (CUPTI) into OUT/sampled", *run2)
    checks.expect("run 1 logged no operator count (run 2's is not run 1's)",
                  stall_access.whole_run(harness.Counted(752, {}, 4001))(d, None),
                  f"run 1: its Aten handler logged [] operator calls ({d}/stderr.txt, "
                  "before run 2), torch.profiler counts 4001")


def quiet_rounds(bench, workload, variants, rounds, value):
    """bench.rounds() with what it prints taken, then shown: (results, what it printed)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        results = bench.rounds(workload, variants, rounds, value)
    print(text.getvalue())
    return results, text.getvalue()


def bench_run(tmp, build, variants):
    """Three interleaved rounds of `variants` on the fake build: (bench, results, output)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        bench = harness.Bench(build, os.path.join(tmp, "out"), timeout=60)
        counted = bench.count_kernels("fake step", variants[0].cmd)
        for v in variants:
            v.expect = counted.kernels if v.profiled else None
        results = bench.rounds("fake step", variants, 3, harness.step_ms)
        bench.table("fake step", variants, results, "ms/step")
        code = bench.exit_code()
    print(text.getvalue())
    return bench, results, text.getvalue(), code


def refuses_unprofiled(tmp, build, workload):
    out = os.path.join(tmp, "out", "fake-step")
    V = harness.Variant
    variants = [V("native", workload, {"FAKE_MS": "10.0"}),
                V("pasta good", workload, {"FAKE_MS": "12.5"}, pasta=[]),
                V("pasta unprofiled", workload, {"FAKE_MS": "10.1", "FAKE_REPORTS": "none"},
                  pasta=[]),
                V("pasta wrong count", workload, {"FAKE_MS": "10.2", "FAKE_LAUNCHES": "700"},
                  pasta=[]),
                V("pasta partial", workload, {"FAKE_MS": "10.3", "FAKE_REPORTS": "partial"},
                  pasta=[])]
    bench, results, text, code = bench_run(tmp, build, variants)
    lines = text.splitlines()
    checks.expect("native count from the workload's own --count-kernels",
                  [v.expect for v in variants], [None, 752, 752, 752, 752])
    failed = [line for line in lines if line.startswith("FAILED")]
    checks.expect("FAILED lines, one per wrong variant (it runs no more)", failed, [
        f"FAILED fake step: pasta unprofiled (round 1): no run.json in "
        f"{out}/pasta-unprofiled/round1: pasta run wrote no reports (was pasta loaded?)",
        f"FAILED fake step: pasta wrong count (round 1): pasta saw 700 launches, the native run "
        f"makes 752 ({out}/pasta-wrong-count/round1/processes/h-1.json)",
        f"FAILED fake step: pasta partial (round 1): partial reports (stopped by SIGTERM) in "
        f"{out}/pasta-partial/round1/processes/h-1.json"])
    rows = {line.split()[0] + " " + line.split()[1]: line.split() for line in lines
            if line.startswith("  pasta ") or line.startswith("  native")}
    checks.expect("the right variant's ratio", rows["pasta good"][2:5],
                  ["12.5000", "12.5000..12.5000", "1.250x"])
    refused = [line for line in lines if line.startswith(("  pasta unprofiled", "  pasta wrong",
                                                           "  pasta partial"))]
    checks.expect("no ratio for a refused variant, FAILED in its row",
                  [("FAILED" in line, re.search(r"[0-9]\.[0-9]{3}x", line)) for line in refused],
                  [(True, None)] * 3)
    checks.expect("samples kept", {k: len(v) for k, v in results.items()},
                  {"native": 3, "pasta good": 3, "pasta unprofiled": 0, "pasta wrong count": 0,
                   "pasta partial": 0})
    checks.expect("a fresh directory per round",
                  sorted(os.listdir(f"{out}/pasta-good")), ["round1", "round2", "round3"])
    checks.expect("CSV rows", [r[2] + ":" + r[-1] for r in bench.rows],
                  ["native:not profiled by pasta", "pasta good:checked", "pasta unprofiled:FAILED",
                   "pasta wrong count:FAILED", "pasta partial:FAILED"])
    checks.expect("exit code with refused variants", code, 1)
    checks.expect("last line", lines[-1],
                  "3 FAILED: those variants have no ratio (see the FAILED lines)")

    shutil.rmtree(os.path.join(tmp, "out"))
    good = [V("native", workload), V("pasta", workload, {"FAKE_MS": "11.0"}, pasta=[])]
    _, _, text, code = bench_run(tmp, build, good)
    checks.expect("exit code when every run was profiled", code, 0)
    checks.expect("no FAILED line", [l for l in text.splitlines() if "FAILED" in l], [])


def batches_apart(tmp, build, workload):
    """A process that ran two batches (--together): one table per batch, each from the
    same samples, and every sample's values printed as it comes."""
    shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
    V = harness.Variant
    variants = [V("native", workload, {"FAKE_MS": "10.0", "FAKE_MS2": "100.0"}),
                V("pasta", workload, {"FAKE_MS": "12.5", "FAKE_MS2": "101.0"}, pasta=[])]
    _, results, text, code = bench_run(tmp, build, variants)
    checks.expect("two batches: exit code", code, 0)
    per_batch = [{k: [x.value for x in v] for k, v in harness.batch_results(results, i).items()}
                 for i in range(2)]
    checks.expect("two batches: each batch's values from the same processes", per_batch,
                  [{"native": [10.0] * 3, "pasta": [12.5] * 3},
                   {"native": [100.0] * 3, "pasta": [101.0] * 3}])
    said = [re.sub(r", [0-9.]+ s$", "", line) for line in text.splitlines()
            if line.startswith("fake step: pasta, round")]
    checks.expect("two batches: every sample printed as it comes", said,
                  [f"fake step: pasta, round {r}: 12.5000 (each batch: 12.5000, 101.0000)"
                   for r in (1, 2, 3)])


def annotations_end_to_end(tmp, build):
    """annotations.py on the fake build: options by name, the sanitizer run's launches (K + 1)
    checked, an unprofiled one refused, an unknown option an error."""
    bench_py = os.path.join(ROOT, "bench", "gpu", "annotations.py")

    def run(*args, **env):
        return subprocess.run([sys.executable, bench_py, build, *args], capture_output=True,
                              text=True, env={**os.environ, **env}, timeout=120)
    ok = run(os.path.join(tmp, "ann"), "--floats", "1024", "--launches", "3", "--rounds", "2",
             FAKE_LAUNCHES="4", FAKE_ACCESSES=str(3 * 1024 * 4))
    print(ok.stdout, ok.stderr)
    rows = {l.split()[0]: l.split()[1:4] for l in ok.stdout.splitlines()
            if l.startswith("  ") and l.split()[0] in ("native", "annotations", "sanitizer")}
    checks.expect("annotations.py: exit code", ok.returncode, 0)
    checks.expect("annotations.py: rows (ms, min..max, ratio)", rows, {
        "native": ["0.2500", "0.2500..0.2500", "1.000x"],
        "annotations": ["0.5000", "0.5000..0.5000", "2.000x"],
        "sanitizer": ["0.2500", "0.2500..0.2500", "1.000x"]})
    checks.expect("annotations.py: --floats is the vector length, not the output directory",
                  "vector add, 1024 floats, 3 launches on" in ok.stdout, True)
    bad = run(os.path.join(tmp, "ann2"), "--launches", "3", "--rounds", "2", FAKE_LAUNCHES="3")
    checks.expect("annotations.py: 3 launches reported for 3 + 1 made: exit code", bad.returncode, 1)
    checks.expect("annotations.py: the FAILED line",
                  [l for l in bad.stdout.splitlines() if l.startswith("FAILED")],
                  [f"FAILED vector add, 16777216 floats, 3 launches: sanitizer (round 1): pasta "
                   f"saw 3 launches, the native run makes 4 ({tmp}/ann2/vector-add-16777216-floats"
                   f"-3-launches/sanitizer/round1/processes/h-1.json)"])
    none = run(os.path.join(tmp, "ann3"), "--rounds", "1", FAKE_REPORTS="none")
    checks.expect("annotations.py: unprofiled sanitizer run refused", none.returncode, 1)
    short = run(os.path.join(tmp, "ann5"), "--floats", "1024", "--launches", "3", "--rounds", "1",
                FAKE_LAUNCHES="4", FAKE_ACCESSES=str(3 * 1024 * 3))
    checks.expect("annotations.py: a sanitizer run that missed a launch's accesses refused",
                  (short.returncode, [l.split(": ", 2)[-1] for l in short.stdout.splitlines()
                                      if l.startswith("FAILED")]),
                  (1, [f"{tmp}/ann5/vector-add-1024-floats-3-launches/sanitizer/round1/"
                       "mem_hotness.json counts 9216 accesses and 0 outside allocations, the "
                       "program makes 12288, all in its allocations"]))
    unknown = run(os.path.join(tmp, "ann4"), "--flaots", "1024")
    checks.expect("annotations.py: an unknown option is an error",
                  (unknown.returncode, "unrecognized arguments: --flaots 1024" in unknown.stderr),
                  (2, True))


def windows_table(tmp, build, workload):
    """--windows: the ratio column is each process's inside/outside ratio, the next columns
    the outside blocks' step and its ratio to native's; two variants may not share a label."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
    import overhead  # noqa: E402
    shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
    V = harness.Variant
    cmd = workload + ["--windows", "10"]
    variants = [V("native", cmd, {"FAKE_RATIO": "1.0", "FAKE_OUTSIDE": "10.0"}),
                V("pasta", cmd, {"FAKE_RATIO": "1.1", "FAKE_OUTSIDE": "12.5",
                                 "FAKE_STOP_MS": "21.5"}, pasta=[], expect=752)]
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        bench = harness.Bench(build, os.path.join(tmp, "out"), timeout=60)
        results = bench.rounds("fake step", variants, 3, harness.window_ratio)
        overhead.window_table(bench, "fake step", variants, results, 0)
    print(text.getvalue())
    rows = {l.split()[0]: l.split()[1:] for l in text.getvalue().splitlines()
            if l.startswith("  ") and l.split()[0] in ("native", "pasta")}
    checks.expect("--windows: ratio, min..max, vs native, then outside ms, vs native, exit ms",
                  {k: v[:3] + v[4:] for k, v in rows.items()},
                  {"native": ["1.0000", "1.0000..1.0000", "1.000x", "10.0000", "1.000x"],
                   "pasta": ["1.1000", "1.1000..1.1000", "1.100x", "12.5000", "1.250x", "21.5"]})
    checks.expect("--windows: each sample printed with its outside and inside steps",
                  "pasta, round 1: 1.1000 (ms/step outside 12.5000, inside 13.7500; outside "
                  "before the first window 12.5000, after 12.5000)" in text.getvalue(), True)
    try:
        bench.rounds("fake step", [V("same", cmd), V("same", cmd)], 1, harness.window_ratio)
        shared = False
    except ValueError:
        shared = True
    checks.expect("two variants with one label refused", shared, True)


def windows_torch_profiler(tmp, build, workload):
    """--windows with torch.profiler variants: each is checked to have seen at least the
    kernels the calibration counted inside the windows; one that saw fewer is refused."""
    import overhead  # noqa: E402
    shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
    cmd = workload + ["--windows", "10"]
    bench = harness.Bench(build, os.path.join(tmp, "out"), timeout=60)
    variants = overhead.torch_variants(bench, cmd, harness.Counted(752, {}, 4000),
                                       ["native", "torch-cuda", "torch-cpu-cuda"], windows=10)
    variants[2].env["FAKE_PROFILED"] = "700"
    results, text = quiet_rounds(bench, "fake step", variants, 2, harness.window_ratio)
    checks.expect("--windows, torch.profiler: samples kept",
                  {k: len(v) for k, v in results.items()},
                  {"native": 2, "torch.profiler (CUDA only)": 2, "torch.profiler (CPU+CUDA)": 0})
    checks.expect("--windows, torch.profiler: the one that saw too few refused",
                  [l.split(": ", 2)[-1] for l in text.splitlines()
                   if l.startswith("FAILED")],
                  ["torch.profiler saw 700 device events, expected at least 752"])


def pins_cpus(tmp, build):
    """--cpus: parsed as a list, refused when not usable, and every process runs on them."""
    usable = sorted(os.sched_getaffinity(0))
    one, last = usable[0], usable[-1]
    checks.expect("--cpus as a range and a list", (harness.cpu_list(f"{one}-{one},{last}")),
                  {one, last})
    for bad in ("two", "1-x", "100000"):
        try:
            harness.cpu_list(bad)
            refused = False
        except Exception as e:  # argparse.ArgumentTypeError: a usage error
            refused = type(e).__name__ == "ArgumentTypeError"
        checks.expect(f"--cpus {bad} refused", refused, True)
    bench = harness.Bench(build, os.path.join(tmp, "pinned"), timeout=60, cpus={one})
    proc, _ = bench.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"])
    checks.expect("a process of a pinned bench runs on its CPUs", proc.stdout.strip(), f"[{one}]")


def budget_stops_rounds(tmp, build):
    """--budget: no round starts that would end past it by the longest round so far; the
    rounds done keep their pairing and are tabled. A fake clock: each process takes 10 s, the
    second variant's 20 s in round 2."""
    class Clocked(harness.Bench):
        now = 0.0

        def clock(self):
            return self.now

        def once(self, workload, v, r):
            self.now += 20.0 if (v.label == "slow" and r == 1) else 10.0
            return {"step_ms_median": 1.0 + r}, "", "", 10.0, ""

    variants = [harness.Variant("native", ["true"]), harness.Variant("slow", ["true"])]
    # Rounds take 20, 30, then 20 s each: 80 s after round 2 would follow a stop at 55 s
    # (50 + 30 > 55), a third round at 80 s (50 + 30 = 80), and no second at 10 s.
    for budget, want in ((0, 6), (55, 2), (80, 3), (10, 1)):
        bench = Clocked(build, os.path.join(tmp, f"budget{budget}"), timeout=60, budget=budget)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results = bench.rounds("w", variants, 6, harness.step_ms)
        checks.expect(f"--budget {budget}: rounds done", [len(results["native"]),
                                                          len(results["slow"])], [want, want])
        said = re.search(r"rounds (\d+)-6 not started: one more would end (\d+) s after",
                         out.getvalue())
        checks.expect(f"--budget {budget}: the line says where it stopped",
                      [int(said.group(1)), int(said.group(2))] if said else None,
                      {0: None, 55: [3, 80], 80: [4, 100], 10: [2, 40]}[budget])


def main():
    tmp = tempfile.mkdtemp(prefix="pasta-bench-harness-")
    try:
        build = os.path.join(tmp, "build")
        script(os.path.join(build, "bin", "pasta"), FAKE_PASTA)
        workload = [sys.executable, script(os.path.join(tmp, "workload.py"), FAKE_WORKLOAD)]
        script(os.path.join(build, "examples", "annotated"), FAKE_ANNOTATED)
        script(os.path.join(build, "examples", "annotated_pasta"), FAKE_ANNOTATED)
        operator_events()
        report_problems(tmp)
        operators_and_filters(tmp)
        accesses_counted(tmp)
        blame_sums()
        modules_followed(tmp)
        memory_variants()
        stall_goals_and_runs(tmp)
        refuses_unprofiled(tmp, build, workload)
        batches_apart(tmp, build, workload)
        annotations_end_to_end(tmp, build)
        pins_cpus(tmp, build)
        budget_stops_rounds(tmp, build)
        windows_table(tmp, build, workload)
        windows_torch_profiler(tmp, build, workload)
        operators_refused(tmp, build, workload)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary("bench harness: every unprofiled or miscounted run refused, the right "
                          "one passed")


if __name__ == "__main__":
    sys.exit(main())

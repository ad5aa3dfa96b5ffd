#!/usr/bin/env python3
"""bench_harness_test.py: the GPU benchmarks' harness (bench/gpu/harness.py) refuses a run
that was not profiled, on a fake build: a `pasta` launcher that runs the program and writes
the reports a test case asks for (none, as when injection fails; a wrong launch count; a
partial report), and fake workloads that print what the real ones print. Each wrong case is
a FAILED line naming the variant, the directory and the numbers, with no ratio; the right
case passes with its exact ratio; annotations.py runs end to end and refuses an unknown
option."""
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

# `pasta run [options] -o DIR -- PROGRAM...`: runs the program, then writes what FAKE_REPORTS
# says (ok, none, partial) with FAKE_LAUNCHES launches (FAKE_KF_LAUNCHES in kernel_freq.json).
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
os.makedirs(os.path.join(out, "processes"))
with open(os.path.join(out, "processes", "h-1.json"), "w") as f:
    json.dump(entry, f)
with open(os.path.join(out, "kernel_freq.json"), "w") as f:
    json.dump({"summary": {"launches": int(os.environ.get("FAKE_KF_LAUNCHES", launches))}}, f)
with open(os.path.join(out, "run.json"), "w") as f:
    json.dump({"program": " ".join(cmd), "exit_code": code}, f)
sys.exit(code)
'''

# A PyTorch workload as torch_step.py prints it: FAKE_MS per step; --count-kernels: 752;
# with FAKE_MS2, a second batch (torch_step.py --batch 1,128) that takes FAKE_MS2 per step.
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
    out["kernels"] = 752
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
        json.dump({"summary": {"accesses": 3 * n * (k + 1)}}, f)
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
    checks.expect("not under pasta run: no run.json needed",
                  harness.report_problem(reports(f"{d}/direct", run=False), 752, launcher=False),
                  None)


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


def bench_run(tmp, build, variants):
    """Three interleaved rounds of `variants` on the fake build: (bench, results, output)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        bench = harness.Bench(build, os.path.join(tmp, "out"), timeout=60)
        launches = bench.count_kernels("fake step", variants[0].cmd)
        for v in variants:
            v.expect = launches if v.profiled else None
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
             FAKE_LAUNCHES="4")
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
    variants = overhead.torch_variants(bench, cmd, 752, ["native", "torch-cuda", "torch-cpu-cuda"],
                                       windows=10)
    variants[2].env["FAKE_PROFILED"] = "700"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        results = bench.rounds("fake step", variants, 2, harness.window_ratio)
    print(text.getvalue())
    checks.expect("--windows, torch.profiler: samples kept",
                  {k: len(v) for k, v in results.items()},
                  {"native": 2, "torch.profiler (CUDA only)": 2, "torch.profiler (CPU+CUDA)": 0})
    checks.expect("--windows, torch.profiler: the one that saw too few refused",
                  [l.split(": ", 2)[-1] for l in text.getvalue().splitlines()
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


def main():
    tmp = tempfile.mkdtemp(prefix="pasta-bench-harness-")
    try:
        build = os.path.join(tmp, "build")
        script(os.path.join(build, "bin", "pasta"), FAKE_PASTA)
        workload = [sys.executable, script(os.path.join(tmp, "workload.py"), FAKE_WORKLOAD)]
        script(os.path.join(build, "examples", "annotated"), FAKE_ANNOTATED)
        script(os.path.join(build, "examples", "annotated_pasta"), FAKE_ANNOTATED)
        report_problems(tmp)
        blame_sums()
        refuses_unprofiled(tmp, build, workload)
        batches_apart(tmp, build, workload)
        annotations_end_to_end(tmp, build)
        pins_cpus(tmp, build)
        windows_table(tmp, build, workload)
        windows_torch_profiler(tmp, build, workload)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if checks.failures:
        print(f"{checks.failures} checks failed")
        return 1
    print("bench harness: every unprofiled or miscounted run refused, the right one passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

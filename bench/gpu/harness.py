"""What the GPU benchmarks share: every variant is a process of its own with a
report directory of its own, the variants run in interleaved rounds, and a
profiled run counts only once its reports show that it was profiled.

A run under `pasta run` whose injection failed runs at native speed and would
read as a cheap profiler; so after every profiled run the harness reads the
run's directory (run.json, the process list processes/*.json, kernel_freq.json
where the pipeline has it, the operator calls a --torch pipeline counted) and
compares the launches and operators pasta saw with the counts the workload
gave by another route (torch.profiler in a calibration process, Nsight
Compute, or what a CUDA program knows it launches). A missing report, a
partial one or another count is a FAILED line naming the variant, the
directory and the numbers; that variant gets no ratio, and the benchmark
exits 1.
"""
import argparse
import collections
import csv
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

import ncu_metrics  # bench/gpu/ncu_metrics.py, beside this file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_STEP = os.path.join(ROOT, "bench", "gpu", "torch_step.py")


def arguments(doc, out):
    """The parser every benchmark starts from: BUILD_DIR [OUT_DIR] --rounds --quick
    --timeout --cpus --budget; unknown options are errors. Options whose default differs
    under --quick default to None here and are settled by settle()."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", metavar="BUILD_DIR", help="a pasta build (bin/pasta, inject/, examples/)")
    p.add_argument("out", metavar="OUT_DIR", nargs="?", default=out,
                   help=f"report directories and the CSV ({out})")
    p.add_argument("--rounds", type=int, help="interleaved rounds, every variant once a round "
                                              "(5; 2 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="a first check on a GPU: 2 rounds, fewer steps and workloads")
    p.add_argument("--timeout", type=float, default=300, help="seconds one process may take (300)")
    p.add_argument("--budget", type=float, default=0, metavar="SECONDS",
                   help="start no round that would end more than SECONDS after the benchmark "
                        "started, by the longest round so far: the rounds done are tabled, as a "
                        "machine's time limit would leave none (0: no bound)")
    p.add_argument("--cpus", type=cpu_list, default=None,
                   help="run every process on these CPUs only, as 2-5 or 0,2,4 (default: all): "
                        "the same cores for every variant, fewer moves between them")
    return p


def cpu_list(text):
    """'2-5,8' -> {2, 3, 4, 5, 8}; an argparse type, so a bad list is a usage error."""
    cpus = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a CPU list (as 2-5 or 0,2,4): {text!r}")
    usable = os.sched_getaffinity(0)
    if not cpus or not cpus <= usable:
        raise argparse.ArgumentTypeError(
            f"CPUs {sorted(cpus - usable) or text} are not usable here (usable: {sorted(usable)})")
    return cpus


def settle(args, **defaults):
    """Options left unset take their default: name=(full run's, --quick's)."""
    defaults.setdefault("rounds", (5, 2))
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def gpu_name():
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=False)
        names = smi.stdout.strip().splitlines()
        return names[0].strip() if names else "unknown GPU"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown GPU (no nvidia-smi)"


def last_json(text):
    """The last line of `text` that is a JSON object, or None."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def count_text(expect):
    """An expected launch count as the FAILED lines print it: 752, or 7..inf."""
    if isinstance(expect, tuple):
        lo, hi = expect
        return f"{lo}..{'inf' if hi is None else hi}"
    return str(expect)


def count_matches(got, expect):
    if isinstance(expect, tuple):
        lo, hi = expect
        return isinstance(got, int) and got >= lo and (hi is None or got <= hi)
    return got == expect


def operator_calls(pdir, d):
    """(the operator calls a profiled run counted, where it says so): op_summary.json's calls,
    event_count.json's OpBegin events, or, where the run wrote no report (a pipeline without a
    device handler does no GPU work), the Aten handler's own count in its log (d/stderr.txt,
    with PASTA_VERBOSE); (None, ...) where none says."""
    op = read_json(os.path.join(pdir, "op_summary.json"))
    if op is not None:
        return op.get("summary", {}).get("calls"), "op_summary.json"
    ec = read_json(os.path.join(pdir, "event_count.json"))
    if ec is not None:
        events = {r.get("event"): r.get("count") for r in ec.get("tables", {}).get("events", [])}
        return events.get("OpBegin", 0), "event_count.json"
    try:
        with open(os.path.join(d, "stderr.txt")) as f:
            said = re.findall(r"aten handler: (\d+) operator calls", f.read())
    except OSError:
        said = []
    return (int(said[-1]) if said else None), "the aten handler's log (stderr.txt)"


def process_dir(d, entry=None):
    """Where the reports of the one process `pasta run -o d` entered (its processes/*.json,
    read here unless given as `entry`) are."""
    if entry is None:
        reg = os.path.join(d, "processes")
        names = sorted(n for n in os.listdir(reg) if n.endswith(".json")) if os.path.isdir(reg) else []
        entry = (read_json(os.path.join(reg, names[0])) if names else None) or {}
    return os.path.normpath(os.path.join(d, entry.get("dir", ".")))


# Ranges compiled code opens only while torch.profiler itself is on (it checks
# torch.autograd.profiler._is_profiler_enabled): Inductor's call of a compiled graph,
# AOTAutograd's wrapper prologue, Dynamo's pre-graph bytecode, a Triton kernel's launch. No
# other RecordFunction callback (pasta's) ever sees them.
PROFILER_ONLY = ("## Call CompiledFxGraph", "AOTDispatcher Runtime Wrapper Prologue",
                 "Pregraph bytecode", "triton_")


def operator_events(events):
    """The operator calls among a torch.profiler trace's `events` (its traceEvents), as `pasta
    run --torch` sees them through RecordFunction: cpu_op events (aten operators, autograd's
    backward functions) and user_annotation ones (record_function ranges, the optimizer's
    step), less the ranges torch opens only for its own profiler (PROFILER_ONLY)."""
    return [e for e in events if e.get("cat") in ("cpu_op", "user_annotation")
            and not e.get("name", "").startswith(PROFILER_ONLY)]


def report_problem(d, expect, launcher=True, operators=None, kept=None):
    """None when the reports in `d` are those of a profiled run that finished, whole, with
    `expect` kernel launches (a number, or a (low, high) range with high None for no limit)
    and, given, `operators` operator calls; with `kept`, kernel_freq.json counts that many
    launches instead (those a kernel filter keeps); otherwise what is wrong, in words with
    the numbers. `launcher`: the run went through `pasta run`, which writes run.json at the
    end."""
    if launcher:
        info = read_json(os.path.join(d, "run.json"))
        if info is None:
            return f"no run.json in {d}: pasta run wrote no reports (was pasta loaded?)"
        if info.get("exit_code") != 0:
            return f"the program exited with {info.get('exit_code')} (run.json in {d})"
    reg = os.path.join(d, "processes")
    names = sorted(n for n in os.listdir(reg) if n.endswith(".json")) if os.path.isdir(reg) else []
    if not names:
        return (f"no process entered itself in {reg}: the program ran without pasta "
                f"(injection failed)")
    entries = {n: read_json(os.path.join(reg, n)) for n in names}
    unread = [n for n, e in entries.items() if e is None]
    if unread:
        return f"{reg}/{unread[0]} cannot be read"
    # The workload is one process; a compiled model's also starts Inductor's compile workers,
    # which launch nothing (their reports say a capture window never opened there): each must
    # finish with no launch, and is not the workload.
    if len(names) > 1:
        launching = [n for n, e in entries.items() if e.get("launches")]
        if len(launching) != 1:
            return (f"{len(names)} processes in {reg}, {len(launching)} of them launching "
                    f"kernels, expected the workload's one")
        for n, e in entries.items():
            if n not in launching and e.get("status") not in ("finished", "no GPU work"):
                return (f"{reg}/{n}, a process besides the workload, ended with status "
                        f"{e.get('status')!r}")
        names = launching
    entry = entries[names[0]]
    # A pipeline with no device handler (expect 0) sees no GPU work, and says so.
    statuses = ("finished", "no GPU work") if expect == 0 else ("finished",)
    if entry.get("status") not in statuses:
        return (f"status {entry.get('status')!r} in {reg}/{names[0]}, expected "
                f"{' or '.join(repr(s) for s in statuses)}")
    if entry.get("partial"):
        return f"partial reports ({entry['partial']}) in {reg}/{names[0]}"
    got = entry.get("launches")
    if not count_matches(got, expect):
        return (f"pasta saw {got} launches, the native run makes {count_text(expect)} "
                f"({reg}/{names[0]})")
    pdir = process_dir(d, entry)
    kf = read_json(os.path.join(pdir, "kernel_freq.json"))
    if kf is not None:
        if kf.get("partial"):
            return f"partial kernel_freq.json ({kf['partial']}) in {pdir}"
        got = kf.get("summary", {}).get("launches")
        want = expect if kept is None else kept
        if not count_matches(got, want):
            return (f"kernel_freq.json reports {got} launches, the native run makes "
                    f"{count_text(want)}" + (" its filter keeps" if kept is not None else "") +
                    f" ({pdir})")
    if operators is not None:
        got, where = operator_calls(pdir, d)
        if got != operators:
            return (f"pasta saw {got} operator calls ({where} in {pdir}), torch.profiler counts "
                    f"{operators}")
    return None


# One run of a variant: its measurement, the process's seconds, its JSON line, its stderr and
# its report directory.
# round: the interleaved round it ran in (from 0), for ratios to the baseline's same round.
Sample = collections.namedtuple("Sample", "value seconds result stderr dir round",
                                defaults=(None,))


class Variant:
    """One way to run a workload.

    cmd        the program and its arguments
    env        variables added for it
    pasta      None: run as is; a list: under `pasta run <pasta...> -o DIR --`, checked
    expect     the launches a profiled run must report (a number or a (low, high) range)
    operators  the operator calls a profiled run must report (None: not checked)
    kept       the launches its kernel_freq.json must count where a kernel filter keeps some
    check      f(dir, result) -> None or a problem: after the report checks of a profiled run;
               a run not under pasta run gets PASTA_OUTPUT_DIR=dir
    once       runs in the first round only (a slow variant)
    """

    def __init__(self, label, cmd, env=None, pasta=None, expect=None, check=None, once=False,
                 operators=None, kept=None):
        self.label, self.cmd, self.env = label, list(cmd), dict(env or {})
        self.pasta, self.expect, self.check, self.once = pasta, expect, check, once
        self.operators, self.kept = operators, kept
        self.failed = None  # the first problem, once one was found

    @property
    def profiled(self):
        return self.pasta is not None


class Bench:
    """Runs variants in interleaved rounds, checks every profiled run, prints the
    table, writes the CSV; `failures` counts the FAILED lines."""

    clock = staticmethod(time.monotonic)  # --budget's clock (a test's own)

    def __init__(self, build, out, timeout=300, cpus=None, budget=0):
        self.build, self.out, self.timeout = os.path.abspath(build), os.path.abspath(out), timeout
        self.cpus = cpus
        # --budget: seconds from here within which every round started must end (0: none).
        self.budget, self.started = budget, self.clock()
        self.pasta_bin = os.path.join(self.build, "bin", "pasta")
        self.gpu = gpu_name()
        self.failures = 0
        self.rows = []  # for the CSV
        self.kept = {}  # workload -> its table's samples, for the samples file
        os.makedirs(self.out, exist_ok=True)

    def lib(self, name):
        return os.path.join(self.build, "inject", f"lib{name}.so")

    def fail(self, what):
        self.failures += 1
        print(f"FAILED {what}", flush=True)

    def run(self, cmd, env=None):
        """(CompletedProcess or None at the timeout, seconds) of one process."""
        t0 = time.perf_counter()
        try:
            pin = (lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                  env={**os.environ, **(env or {})}, timeout=self.timeout,
                                  preexec_fn=pin)
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t0
        return proc, time.perf_counter() - t0

    def once(self, workload, v, r):
        """Runs variant v once (round r) with a fresh report directory and checks it.
        Returns (the program's JSON line, its stdout, its stderr, seconds, the directory), or
        None after a FAILED line."""
        d = os.path.join(self.out, slug(workload), slug(v.label), f"round{r + 1}")
        shutil.rmtree(d, ignore_errors=True)  # fresh: nothing of an earlier run can be read
        env = dict(v.env)
        env.setdefault("PASTA_PRINT", "none")
        if v.profiled:
            cmd = [self.pasta_bin, "run", *v.pasta, "-o", d, "--", *v.cmd]
        else:
            cmd = v.cmd
            if v.check is not None:
                os.makedirs(d)
                env["PASTA_OUTPUT_DIR"] = d
        proc, seconds = self.run(cmd, env)
        if proc is not None and os.path.isdir(d):  # what pasta logged, kept with its reports
            with open(os.path.join(d, "stderr.txt"), "w") as f:
                f.write(proc.stderr or "")
        name = f"{workload}: {v.label} (round {r + 1})"
        if proc is None:
            v.failed = f"killed at the timeout ({self.timeout:.0f} s)"
        elif proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-1500:]
            v.failed = f"exit code {proc.returncode}: {' '.join(cmd)}\n{tail}"
        else:
            result = last_json(proc.stdout)
            if v.profiled:
                v.failed = report_problem(d, v.expect, operators=v.operators, kept=v.kept)
            if v.failed is None and v.check is not None:
                v.failed = v.check(d, result)
            if v.failed is None:
                return result, proc.stdout, proc.stderr, seconds, d
        detail = ""
        if proc is not None and proc.returncode == 0:  # what the run said, and what it left
            left = sorted(os.path.relpath(os.path.join(r, f), d)
                          for r, _, fs in os.walk(d) for f in fs) if os.path.isdir(d) else []
            said = (proc.stderr or "").strip()[-1500:]
            detail = f"\n  files in {d}: {left[:20]}\n  its stderr, last lines:\n{said}"
        self.fail(f"{name}: {v.failed}{detail}")
        return None

    def rounds(self, workload, variants, rounds, value):
        """Every variant once a round, in order, `rounds` times. value(json, stdout) -> the
        measurement (a number). Returns {label: [Sample]}; a variant that failed once runs no
        more and keeps no values."""
        labels = [v.label for v in variants]
        if len(set(labels)) != len(labels):  # results are kept by label
            raise ValueError(f"two variants share a label: {labels}")
        results = {v.label: [] for v in variants}
        longest = 0.0  # the longest round so far, in seconds
        for r in range(rounds):
            if not self.round_fits(workload, r, rounds, longest):
                break
            round_start = self.clock()
            for v in variants:
                if v.failed or (v.once and r > 0):
                    continue
                got = self.once(workload, v, r)
                if got is None:
                    results[v.label] = []
                    continue
                result, stdout, stderr, seconds, d = got
                x = value(result, stdout)
                if x is None:
                    v.failed = f"no measurement in its output: {stdout.strip()[-300:]}"
                    self.fail(f"{workload}: {v.label} (round {r + 1}): {v.failed}")
                    results[v.label] = []
                    continue
                results[v.label].append(Sample(x, seconds, result, stderr, d, r))
                # Each value as it comes: a benchmark stopped at a time limit still leaves them.
                each = [b.get("step_ms_median") for b in (result or {}).get("batches", [])]
                more = f" (each batch: {', '.join(f'{b:.4f}' for b in each)})" if each else ""
                if "step_ms_outside_median" in (result or {}):  # torch_step.py --windows
                    more += (f" (ms/step outside {result['step_ms_outside_median']:.4f}, "
                             f"inside {result['step_ms_inside_median']:.4f}; outside before "
                             f"the first window {result['step_ms_first_outside']:.4f}, after "
                             f"{result['step_ms_later_outside_median']:.4f})")
                print(f"{workload}: {v.label}, round {r + 1}: {x:.4f}{more}, {seconds:.1f} s",
                      flush=True)
            longest = max(longest, self.clock() - round_start)
            print(f"{workload}: round {r + 1} of {rounds} done", flush=True)
        return results

    def round_fits(self, workload, r, rounds, longest):
        """Whether round r (from 0) may start under --budget: it would end in time if it took
        as long as the longest round so far. The first round always starts. Says so when not."""
        if not self.budget or r == 0:
            return True
        spent = self.clock() - self.started
        if spent + longest <= self.budget:
            return True
        print(f"{workload}: rounds {r + 1}-{rounds} not started: one more would end "
              f"{spent + longest:.0f} s after the start, past the --budget of {self.budget:.0f} s "
              f"(the longest round took {longest:.0f} s); the table holds the {r} rounds done",
              flush=True)
        return False

    def table(self, workload, variants, results, unit, baseline="native", extra=None):
        """Prints median, min..max and the ratio to `baseline` for every variant that passed;
        a failed variant's line says FAILED instead. extra(label, samples) -> (header, text) adds
        a column. Rows go to the CSV, and every sample to the samples file (merge_rounds.py)."""
        self.rows += print_table(self.gpu, workload, variants, results, unit, baseline, extra)
        self.kept[workload] = {
            "unit": unit, "baseline": baseline,
            "checked": {v.label: bool(v.profiled or v.check) for v in variants},
            "samples": {v.label: [[s.round, s.value, s.seconds] for s in results.get(v.label, [])]
                        for v in variants if not v.failed}}

    def write_csv(self, name):
        """The CSV of every table's rows, and beside it (NAME.samples.json) every sample, which
        bench/gpu/merge_rounds.py joins with other runs' into one table."""
        path = os.path.join(self.out, name)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["gpu", "workload", "variant", "unit", "median", "min", "max",
                        "vs_native", "process_s", "reports"])
            w.writerows(self.rows)
        with open(os.path.splitext(path)[0] + ".samples.json", "w") as f:
            json.dump({"gpu": self.gpu, "workloads": self.kept}, f)
        print(f"\n{path}")

    def exit_code(self):
        if self.failures:
            print(f"{self.failures} FAILED: those variants have no ratio (see the FAILED lines)")
        return 1 if self.failures else 0

    def count_kernels(self, workload, cmd):
        """What a PyTorch workload launches and calls, counted by torch.profiler in a process
        of its own (cmd + --count-kernels): the numbers pasta's reports must show, as a
        Counted. None after a FAILED line."""
        proc, _ = self.run(cmd + ["--count-kernels"])
        result = last_json(proc.stdout) if proc is not None and proc.returncode == 0 else None
        whole = result and all(isinstance(result.get(k), int) and result[k] > 0
                               for k in ("kernels", "operators")) and \
            isinstance(result.get("kernel_names"), dict)
        if not whole:
            why = "killed at the timeout" if proc is None else (
                f"exit code {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-800:]}"
                if proc.returncode else f"no kernels, operators and kernel names in {result}")
            self.fail(f"{workload}: counting its kernels with torch.profiler: {why}")
            return None
        print(f"{workload}: {result['kernels']} kernel launches and {result['operators']} "
              f"operator calls (torch.profiler, a run of its own)", flush=True)
        return Counted(result["kernels"], result["kernel_names"], result["operators"])

    def count_launches_ncu(self, workload, cmd):
        """The kernels a program launches as Nsight Compute lists them (one cheap metric a
        launch): for programs whose libraries choose their kernels (cuBLAS). None after a
        FAILED line (no ncu, or it failed)."""
        ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
        if not os.path.exists(ncu):
            self.fail(f"{workload}: no ncu to count its kernels with")
            return None
        proc, _ = self.run([ncu, "--metrics", "gpu__time_duration.sum", "--csv", *cmd])
        n = len(ncu_metrics.launches(proc.stdout)) if proc is not None and not proc.returncode \
            else 0
        if n == 0:
            why = "killed at the timeout" if proc is None else \
                f"exit code {proc.returncode}, {n} launches: {proc.stderr.strip()[-800:]}"
            self.fail(f"{workload}: counting its kernels with ncu: {why}")
            return None
        print(f"{workload}: {n} kernel launches (ncu, a run of its own)", flush=True)
        return n


class Counted(collections.namedtuple("Counted", "kernels names operators")):
    """What torch.profiler counted in a workload's calibration run: its kernels, how many of
    each name, its operator calls."""

    def matching(self, pattern):
        """The kernels whose names `pattern` (a kernel filter, PASTA_KERNEL_FILTER) finds."""
        return sum(n for name, n in self.names.items() if re.search(pattern, name))


def torch_workload(model, batch, warmup, steps, *extra):
    return [sys.executable, TORCH_STEP, "--model", model, "--batch", str(batch),
            "--warmup", str(warmup), "--steps", str(steps), *extra]


def step_ms(result, _stdout):
    return result.get("step_ms_median") if result else None


def print_table(gpu, workload, variants, results, unit, baseline="native", extra=None):
    """Bench.table's printing: returns the CSV rows."""
    rows = []
    base = [s.value for s in results.get(baseline, [])]
    base_med = statistics.median(base) if base else None
    head = extra(None, None)[0] if extra else ""
    w = max(len(v.label) for v in variants)
    print(f"\n{workload} on {gpu}: median of {len(base)} interleaved rounds")
    print(f"  {'variant':<{w}} {unit:>12} {'min..max':>19} {'vs ' + baseline:>11} "
          f"{'process s':>9} {head}")
    for v in variants:
        samples = results.get(v.label, [])
        if v.failed or not samples:
            print(f"  {v.label:<{w}} {'FAILED':>12}  ({(v.failed or 'no samples').splitlines()[0]})")
            rows.append([gpu, workload, v.label, unit, "", "", "", "", "", "FAILED"])
            continue
        xs = [s.value for s in samples]
        med, lo, hi = statistics.median(xs), min(xs), max(xs)
        wall = statistics.median(s.seconds for s in samples)
        ratio = f"{med / base_med:.3f}x" if base_med else "-"
        more = extra(v.label, samples)[1] if extra else ""
        print(f"  {v.label:<{w}} {med:>12.4f} {lo:>9.4f}..{hi:<9.4f} {ratio:>11} "
              f"{wall:>9.1f} {more}")
        paired = round_ratios(samples, results.get(baseline, []))
        if len(paired) > 1 and v.label != baseline:
            r_med, r_lo, r_hi = bootstrap(paired)
            print(f"  {'':<{w}} each round over its {baseline}: median {r_med:.3f}x, "
                  f"bootstrap 95% interval {r_lo:.3f}..{r_hi:.3f}x ({len(paired)} rounds)")
        rows.append([gpu, workload, v.label, unit, f"{med:.5f}", f"{lo:.5f}", f"{hi:.5f}",
                     f"{med / base_med:.4f}" if base_med else "", f"{wall:.2f}",
                     "checked" if v.profiled or v.check else "not profiled by pasta"])
    return rows


def round_ratios(samples, base):
    """Each round's value over the baseline's in the same round (samples keep their round),
    for the rounds both have."""
    by_round = {s.round: s.value for s in base}
    return [s.value / by_round[s.round] for s in samples if s.round in by_round]


def bootstrap(xs, n=10000):
    """The median of xs and a bootstrap 95% interval of it (n resamples, seeded)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return statistics.median(xs), meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def module_calls_followed(d, result):
    """torch_step.py --switch modules under pasta run --torch: None when the run's
    module_summary counts, over every module, torch's own count of a step's module calls
    times the steps it followed (its first warm-up step's hook count; the paused blocks' steps
    must add none); otherwise what differs."""
    pdir = process_dir(d)
    summary = read_json(os.path.join(pdir, "module_summary.json"))
    if summary is None:
        return f"no module_summary.json in {pdir}"
    if (result or {}).get("switched") != "modules":
        return f"the program switched {(result or {}).get('switched')!r}, not modules"
    rows = summary.get("tables", {}).get("modules", [])
    got = sum(int(r.get("calls", 0)) for r in rows if r.get("module") != "(no module)")
    want = result["module_calls_per_step"] * result["followed_steps"]
    if got != want:
        return (f"module_summary counts {got} module calls, torch's hook {want} "
                f"({result['module_calls_per_step']} a step x {result['followed_steps']} "
                f"followed steps) in {pdir}")
    return None


def window_ratio(result, _stdout):
    """torch_step.py --windows: inside over outside the window, within the process."""
    return result.get("window_ratio") if result else None


def batch_results(results, i, key="step_ms_median"):
    """{label: [Sample]} with batch i's `key` (its step time) as each sample's value, for a
    process that ran several batches (torch_step.py --batch 1,128) or one; a result of one
    batch without `key` passes as it is."""
    out = {}
    for label, samples in results.items():
        out[label] = []
        for s in samples:
            batches = (s.result or {}).get("batches")
            if batches is None:
                has = key in (s.result or {})
                out[label].append(s._replace(value=s.result[key]) if has else s)
            elif i < len(batches):
                out[label].append(s._replace(value=batches[i][key]))
    return out


def mem_accesses(total):
    """A check: the run's one mem_hotness.json, whole, counts `total` accesses, every one in an
    allocation the program made."""
    def check(d, _result):
        found = [os.path.join(root, "mem_hotness.json") for root, _, files in os.walk(d)
                 if "mem_hotness.json" in files]
        if len(found) != 1:
            return f"{len(found)} mem_hotness.json under {d}, expected 1"
        report = read_json(found[0]) or {}
        if report.get("partial"):
            return f"partial report {found[0]}: {report['partial']}"
        summary = report.get("summary", {})
        got = (summary.get("accesses"), summary.get("accesses outside known allocations"))
        if got != (total, 0):
            return (f"{found[0]} counts {got[0]} accesses and {got[1]} outside allocations, the "
                    f"program makes {total}, all in its allocations")
        return None
    return check


def ring_ops_recorded(_d, result, want=None):
    """torch_step.py --ring-ops: None when the ring's callback recorded `want` operator starts
    (torch.profiler's count of the same blocks' operators); otherwise what differs."""
    got = (result or {}).get("ring_ops")
    if got is not None and got == want:
        return None
    return f"the ring recorded {got} operator starts, torch.profiler counts {want}"


def torch_profiler_saw_kernels(_d, result, at_least=1):
    """A torch.profiler variant is a baseline, not pasta: it must have seen device work, at
    least `at_least` events (the kernels it profiled, before copies and memsets)."""
    n = (result or {}).get("device_events_profiled")
    if isinstance(n, int) and n >= at_least:
        return None
    return f"torch.profiler saw {n} device events, expected at least {at_least}"


def sampled_stalls(samples):
    """The stall samples a sampled run's stall_samples.json holds: every reason's count at
    every pc of every function."""
    return sum(n for f in (samples or {}).get("functions", {}).values()
               for pc in f.get("pcs", []) for n in pc.get("reasons", {}).values())


def blame_problem(blame, samples):
    """None when stall_blame.json `blame` (run 2) blames some samples on tensors and charges
    every sample of the sampled run's stall_samples.json `samples` (run 1's own file), each
    to a tensor or to a reason it was not: blamed plus unattributed equal to run 1's;
    otherwise what is wrong, with the numbers."""
    tables = (blame or {}).get("tables", {})
    blamed = sum(r["stall_samples"] for r in tables.get("blame", []))
    unattributed = sum(r["stall_samples"] for r in tables.get("unattributed", []))
    total = sampled_stalls(samples)
    if total <= 0:
        return "the sampled run's stall_samples.json holds no sample"
    if not tables.get("blame"):
        return f"no blame row: none of the sampled run's {total} samples blamed on a tensor"
    if abs(blamed + unattributed - total) > 1e-6 * total:
        return (f"blamed {blamed:.3f} + unattributed {unattributed:.3f} = "
                f"{blamed + unattributed:.3f} samples, the sampled run holds {total}")
    return None

#!/usr/bin/env python3
"""GPU tests: run the examples on the GPU and check what pasta reports.

    check.py CASE BUILD_DIR [OUT_DIR]

Exits 0 on success, 1 on a failed check, 77 (ctest's skip code) when the
machine has no GPU, or fewer GPUs than the case needs. Ground truth comes
from the programs themselves: examples/cuda/launches.cu launches a known
number of times per kernel.
"""
import collections
import csv
import glob
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
import harness  # noqa: E402  bench/gpu/harness.py: what the stall blame reports must hold
import ncu_metrics  # noqa: E402  bench/gpu/ncu_metrics.py: runs ncu, parses its CSV
import op_counters  # noqa: E402  bench/gpu/op_counters.py: a profile's kernel entries


def find_ncu():
    """Nsight Compute's ncu, or None (and a line saying so) where it is missing: a case that
    compares with it is then skipped."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if os.path.exists(ncu):
        return ncu
    print("ncu not found: skipped")
    return None


def gpus():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    except OSError:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def run(cmd, env=None, check=True, timeout=None):
    full = dict(os.environ)
    full.update(env or {})
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=full, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:  # killed: a hang is a failure, not a stuck suite
        proc = subprocess.CompletedProcess(cmd, 124, e.stdout or "", e.stderr or "")
        if isinstance(proc.stdout, bytes):
            proc.stdout, proc.stderr = proc.stdout.decode(), (proc.stderr or b"").decode()
    if check and proc.returncode != 0:
        print(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        sys.exit(1)
    for line in proc.stderr.splitlines():  # what pasta said about the run
        if line.startswith("pasta: ") and "report files in" not in line:
            print("  " + line)
    return proc


def kernel_counts(out_dir):
    """Launches per kernel from kernel_freq.json, keyed by the name before '('."""
    with open(os.path.join(out_dir, "kernel_freq.json")) as f:
        rows = json.load(f)["tables"]["kernels"]
    return {r["kernel"].split("(")[0].replace("void ", ""): r["launches"] for r in rows}


def timeline(out_dir, name="timeline.trace.json"):
    """The events of a timeline (share/pasta/job.py reads one cut short too)."""
    sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
    import job
    return job.timeline_events(job.load_json_tolerant(os.path.join(out_dir, name)))


def last_json(text):
    return json.loads([l for l in text.splitlines() if l.startswith("{")][-1])


def expect(what, got, want):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got}" + ("" if ok else f" (expected {want})"))
    return ok


def some(what, n):
    """A count from another route (torch.profiler, ncu) that pasta's is held to: it must have
    counted something, or pasta's 0 against its 0 would pass."""
    return expect(f"{what}, counted by another route, more than none",
                  isinstance(n, int) and n > 0, True)


def combine(*results):
    """One case result from several checks: a failure fails it; otherwise a check that was
    skipped (SKIP) makes the case skipped, never passed without it."""
    if any(r is not SKIP and not r for r in results):
        return False
    return SKIP if any(r is SKIP for r in results) else True


def expect_counts(out_dir, want):
    got = kernel_counts(out_dir)
    ok = all(expect(f"launches of {k}", got.get(k), v) for k, v in want.items())
    return expect("kernels reported", sorted(got), sorted(want)) and ok


def checksums(text):
    """The lines a program prints that start with 'checksum': what profiling must not change."""
    return [l for l in text.splitlines() if l.startswith("checksum")]


def profiled_env(out_dir, **extra):
    env = {"PASTA_OUTPUT_DIR": out_dir, "PASTA_PRINT": "none"}
    env.update(extra)
    return env


def sequence_counts(devices=1, threads=0, per_thread=0):
    return {"fill": devices + threads, "saxpy": 100 * devices + threads * per_thread,
            "scale": 50 * devices, "reduce": 10 * devices}


# --- cases ----------------------------------------------------------------------

def case_in_binary(build, out):
    """Exact launch counts, a timeline with every kernel, and the main scope."""
    run([f"{build}/examples/launches_pasta"], profiled_env(out))
    ok = expect_counts(out, sequence_counts())
    kernels = [e for e in timeline(out) if e.get("cat") == "kernel"]
    ok &= expect("kernels on the timeline", len(kernels), 161)
    ok &= expect("every kernel has a duration", all(e["dur"] > 0 for e in kernels), True)
    with open(os.path.join(out, "scope_time.json")) as f:
        scopes = {r["scope"]: r["calls"] for r in json.load(f)["tables"]["scopes"]}
    ok &= expect("PASTA_SCOPE(\"main\") calls", scopes.get("main"), 1)
    return ok


def case_threads(build, out):
    """16 host threads launching at once, each on its own stream."""
    run([f"{build}/examples/launches_pasta", "--threads", "16", "--per-thread", "200"],
        profiled_env(out))
    ok = expect_counts(out, sequence_counts(threads=16, per_thread=200))
    streams = {e["tid"] for e in timeline(out) if e.get("cat") == "kernel"}
    return expect("streams with kernels", len(streams), 17) and ok


def case_outputs_unchanged(build, out):
    """The programs print the same results with and without pasta."""
    ok, skipped = True, False
    for plain, profiled, args in [("launches", "launches_pasta", ["--threads", "16"]),
                                  ("conv", "conv_pasta", [])]:
        if not os.path.exists(f"{build}/examples/{plain}"):
            print(f"skip {plain}: not built (the case is skipped, not passed)")
            skipped = True
            continue
        a = run([f"{build}/examples/{plain}"] + args).stdout
        b = run([f"{build}/examples/{profiled}"] + args, profiled_env(out)).stdout
        c = run([f"{build}/bin/pasta", "run", "-o", out + "/inj-" + plain, "--",
                 f"{build}/examples/{plain}"] + args).stdout
        d = counters_run(build, out + "/counters-" + plain, [f"{build}/examples/{plain}"] + args)
        ok &= expect(f"{plain}: output with the in-binary profiler", b, a)
        ok &= expect(f"{plain}: output under pasta run", c, a)
        ok &= expect(f"{plain}: output under pasta run --counters", d, a)
    return combine(ok, SKIP if skipped else True)


def counters_run(build, out, cmd):
    """`pasta run --counters` over cmd: its stdout; fails the case if counting failed."""
    proc = run([f"{build}/bin/pasta", "run", "--counters", "-o", out, "--"] + cmd)
    failed = [l for l in proc.stderr.splitlines() if l.startswith("pasta: hardware counters:")]
    if failed:
        print("FAILED: " + "\n".join(failed))
        sys.exit(1)
    return proc.stdout


def case_injection(build, out):
    """An unmodified binary profiled through CUDA_INJECTION64_PATH."""
    run([f"{build}/bin/pasta", "run", "-o", out, "--", f"{build}/examples/launches",
         "--threads", "16", "--per-thread", "200"], {"PASTA_PRINT": "none"})
    return expect_counts(out, sequence_counts(threads=16, per_thread=200))


def case_launch_callbacks(build, out):
    """With PASTA_LAUNCH_CALLBACKS, launches come from host callbacks, one each."""
    run([f"{build}/bin/pasta", "run", "--launch-callbacks", "-o", out, "--",
         f"{build}/examples/launches", "--threads", "16", "--per-thread", "200"],
        {"PASTA_PRINT": "none"})
    want = sequence_counts(threads=16, per_thread=200)
    ok = expect_counts(out, want)
    with open(os.path.join(out, "event_count.json")) as f:
        events = {r["event"]: r["count"] for r in json.load(f)["tables"]["events"]}
    total = sum(want.values())
    ok &= expect("KernelLaunch events (host callbacks)", events.get("KernelLaunch"), total)
    ok &= expect("KernelComplete events (device records)", events.get("KernelComplete"), total)
    return launch_streams(build, out + "/record") and ok


def launch_streams(build, out):
    """Each host launch callback names the stream its device record ran on: the legacy default
    stream of the main sequence, and each thread's own stream (a --record trace, read back)."""
    threads = 4
    run([f"{build}/bin/pasta", "run", "--launch-callbacks", "--record", "-o", out, "--",
         f"{build}/examples/launches", "--threads", str(threads), "--per-thread", "10"],
        {"PASTA_PRINT": "none"})
    dump = run([f"{build}/cli/pasta-trace", "dump", os.path.join(out, "trace.pasta")]).stdout
    streams = {"KernelLaunch": {}, "KernelComplete": {}}
    for line in dump.splitlines():
        kind = line.split(" ", 1)[0]
        if kind in streams:
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            streams[kind][fields["correlation"]] = fields["stream"]
    launch, device = streams["KernelLaunch"], streams["KernelComplete"]
    ok = expect("launch callbacks, each with its device record",
                (len(launch), sorted(launch) == sorted(device)),
                (sum(sequence_counts(threads=threads, per_thread=10).values()), True))
    ok &= expect("launches whose callback names another stream than their record",
                 {c: (s, device.get(c)) for c, s in launch.items() if s != device.get(c)}, {})
    return expect("streams launched on (the default one and one a thread)",
                  len(set(device.values())), 1 + threads) and ok


def case_graph(build, out):
    """Kernels launched from a CUDA graph count like any others. With launch
    callbacks, the 5 launches made while the graph was captured are host
    launches, and the 20 kernels the graph runs have no callback of their own:
    KernelFreq counts those from their device records."""
    want = sequence_counts()
    want["fill"] += 1
    want["scale"] += 5 * 4
    run([f"{build}/examples/launches_pasta", "--graph", "4"], profiled_env(out))
    ok = expect_counts(out, want)
    # Hardware counters leave the launches captured into the graph alone.
    plain = run([f"{build}/examples/launches", "--graph", "4"]).stdout
    ok &= expect("output under pasta run --counters",
                 counters_run(build, out + "/counters", [f"{build}/examples/launches", "--graph",
                                                         "4"]), plain)
    ok &= expect_counts(out + "/counters", want)
    run([f"{build}/bin/pasta", "run", "--launch-callbacks", "-o", out + "/cb", "--",
         f"{build}/examples/launches", "--graph", "4"], {"PASTA_PRINT": "none"})
    ok &= expect_counts(out + "/cb", want)
    with open(os.path.join(out, "cb", "event_count.json")) as f:
        events = {r["event"]: r["count"] for r in json.load(f)["tables"]["events"]}
    total = sum(want.values())
    ok &= expect("KernelComplete events", events.get("KernelComplete"), total)
    return expect("KernelLaunch callbacks (5 captured, none for graph kernels)",
                  events.get("KernelLaunch"), total - 20 + 5) and ok


def case_cudnn(build, out):
    """cuDNN convolution forward and backward, profiled in-binary."""
    if not os.path.exists(f"{build}/examples/conv_pasta"):
        print("cuDNN example not built")
        return SKIP
    run([f"{build}/examples/conv_pasta"], profiled_env(out))
    got = kernel_counts(out)
    print("cuDNN kernels:", json.dumps(got, indent=1))
    ok = expect("init kernel launches", got.get("init"), 3)
    kernels = [e for e in timeline(out) if e.get("cat") == "kernel"]
    ok &= expect("timeline kernels = reported launches", len(kernels), sum(got.values()))
    # Which kernels cuDNN launches is its own choice: Nsight Compute counts them on the plain
    # program, one row per launch. The two spell names apart, so both are keyed by (function
    # name without namespace, template arguments or parameters; grid; block).
    theirs = ncu_launches([f"{build}/examples/conv"], os.path.join(out, "ncu"))
    if theirs is SKIP:
        return combine(ok, SKIP)
    ours = {}
    for r in report(out, "kernel_freq")["tables"]["shapes"]:
        key = (function_name(r["kernel"]), dims(r["grid"]), dims(r["block"]))
        ours[key] = ours.get(key, 0) + r["launches"]
    ok &= expect("launches, pasta and ncu", sum(ours.values()), sum(theirs.values()))
    return expect("launches per (kernel, grid, block) where pasta and ncu differ",
                  {k: (ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs)
                   if ours.get(k) != theirs.get(k)}, {}) and ok


def function_name(kernel):
    """'nchwToNhwcKernel' from 'void cudnn::x::nchwToNhwcKernel<float, ...>(args)': what ncu's
    --print-kernel-base function prints."""
    depth, plain = 0, []
    for c in kernel.replace("void ", "", 1):
        depth += c in "<("
        if depth == 0:
            plain.append(c)
        depth -= c in ">)"
    return "".join(plain).split("::")[-1].strip()


def dims(text):
    """(x, y, z) from '(7,8,32)' or '(7, 8, 32)' or [7, 8, 32]."""
    return tuple(int(n) for n in re.findall(r"\d+", str(text)))


def ncu_launches(cmd, out_dir):
    """{(function name, grid, block): launches} Nsight Compute counts over cmd (one cheap metric
    per launch), or SKIP without ncu."""
    ncu = find_ncu()
    if ncu is None:
        return SKIP
    os.makedirs(out_dir, exist_ok=True)
    proc = run([ncu, "--metrics", "gpu__time_duration.sum", "--csv", "--print-kernel-base",
                "function", *cmd], timeout=300)
    with open(os.path.join(out_dir, "ncu.csv"), "w") as f:
        f.write(proc.stdout)
    counts = {}
    for (_, kernel, grid, block) in ncu_metrics.launches(proc.stdout):
        key = (kernel, dims(grid), dims(block))
        counts[key] = counts.get(key, 0) + 1
    return counts


def kernels_per_scope(out_dir, prefix):
    """Kernels whose device start lies inside each host scope named prefix*."""
    events = timeline(out_dir)
    windows, open_ = [], {}
    for e in events:
        if e.get("cat") == "scope" and e["name"].startswith(prefix):
            if e["ph"] == "B":
                open_[e["name"]] = e["ts"]
            elif e["name"] in open_:
                windows.append((e["name"], open_.pop(e["name"]), e["ts"]))
    starts = sorted(e["ts"] for e in events if e.get("cat") == "kernel")
    return {name: sum(1 for t in starts if b <= t <= end) for name, b, end in windows}


def device_work_in_scope(out_dir, scope):
    """The device work starting inside the first host scope named scope: {"kernels": Counter of
    kernel names, "copies": n, "memsets": n}, for a diff against another tool's list."""
    events = timeline(out_dir)
    marks = {e["ph"]: e["ts"] for e in reversed(events)
             if e.get("cat") == "scope" and e["name"] == scope and e["ph"] in "BE"}
    inside = [e for e in events if "B" in marks and "E" in marks
              and marks["B"] <= e.get("ts", -1) <= marks["E"]]
    return {"kernels": collections.Counter(e["name"] for e in inside if e.get("cat") == "kernel"),
            "copies": sum(1 for e in inside if e.get("cat") == "memcpy"),
            "memsets": sum(1 for e in inside if e.get("cat") == "memset")}


def print_name_diff(what_a, a, what_b, b, limit=12):
    """The kernel names one Counter holds more often than the other, both ways."""
    for label, x, y in ((f"in {what_a}, not {what_b}", a, b), (f"in {what_b}, not {what_a}", b, a)):
        extra = x - y
        print(f"  kernels {label}: {sum(extra.values())}",
              [(name[:90], n) for name, n in extra.most_common(limit)])


def case_pytorch(build, out):
    """Kernels of one ResNet-18 training step: pasta (by injection) vs torch.profiler."""
    script = os.path.join(ROOT, "examples", "pytorch", "resnet18_step.py")
    proc = run([f"{build}/bin/pasta", "run", "-o", out, "--", sys.executable, script, "--nvtx",
                "--warmup", "4", "--steps", "2"], {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1"})
    # The default pipeline's timeline shows operators, but no operator source runs here: the
    # launch callbacks that tag kernels with operators must stay off (they cost per launch).
    tagging = expect("launch callbacks turned on to tag operators, with no operator source",
                     "operators tagged through" in proc.stderr, False)
    steps = kernels_per_scope(out, "step ")
    print("pasta: kernels per step (NVTX ranges):", steps)
    ref = json.loads(run([sys.executable, script, "--warmup", "4", "--steps", "1",
                          "--torch-profiler", "--trace", os.path.join(out, "torch.json")]
                         ).stdout.strip().splitlines()[-1])
    ok = expect("steps seen as NVTX scopes", len(steps), 6)
    ok = some("torch.profiler's kernels in one step", ref["kernels_in_one_step"]) and ok
    return expect("kernels in step 4, pasta vs torch.profiler's step after 4 warm-ups",
                  steps.get("step 4"), ref["kernels_in_one_step"]) and ok and tagging


def case_multi_gpu(build, out):
    """One process drives two GPUs: per-device counts and per-device timelines."""
    if gpus() < 2:
        print("fewer than 2 GPUs")
        return SKIP
    run([f"{build}/examples/launches_pasta", "--devices", "2"], profiled_env(out))
    ok = expect_counts(out, sequence_counts(devices=2))
    per_pid = {}
    names = {}
    for e in timeline(out):
        if e.get("cat") == "kernel":
            per_pid[e["pid"]] = per_pid.get(e["pid"], 0) + 1
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
    print("timeline processes:", names)
    return expect("kernels per GPU on the timeline", per_pid, {1: 161, 2: 161}) and ok


def case_record(build, out):
    """pasta run --record writes a trace that pasta-trace reads whole."""
    run([f"{build}/bin/pasta", "run", "--record", "-o", out, "--",
         f"{build}/examples/launches", "--threads", "4", "--per-thread", "10"],
        {"PASTA_PRINT": "none"})
    info = run([f"{build}/cli/pasta-trace", "info", os.path.join(out, "trace.pasta")]).stdout
    print(info)
    want = sum(sequence_counts(threads=4, per_thread=10).values())
    lines = dict(l.split()[:2] for l in info.splitlines() if l.startswith("  Kernel"))
    ok = expect("KernelComplete records", int(lines.get("KernelComplete", 0)), want)
    return expect("KernelLaunch records", int(lines.get("KernelLaunch", 0)), want) and ok


# --- memory accesses (examples/cuda/access_pattern.cu) ---------------------------

N, REPS, PAGE = 1 << 20, 100, 64 * 1024


# The kernels access_pattern.cu launches, once each, and the accesses each makes per buffer:
# (reads, writes), 4 bytes each. An atomic counts as a read and a write.
ACCESSES_PER_KERNEL = {
    "init": {"a": (0, N)},
    "copy_half": {"a": (N // 2, 0), "b": (0, N // 2)},
    "hot_page": {"a": (256 * REPS, 0), "out": (0, 256)},
    "count": {"c": (N, N)},
    "stage": {"out": (0, 256)},
}


def access_truth(only=None):
    """Accesses per buffer the program makes: (reads, writes). `only` keeps one kernel's."""
    total = {}
    for kernel, buffers in ACCESSES_PER_KERNEL.items():
        if only and kernel != only:
            continue
        for name, (r, w) in buffers.items():
            tr, tw = total.get(name, (0, 0))
            total[name] = (tr + r, tw + w)
    return total


def buffers_of(stdout):
    """{name: address} from the "buffer NAME ADDRESS BYTES" lines the examples print."""
    return {l.split()[1]: int(l.split()[2], 16) for l in stdout.splitlines()
            if l.startswith("buffer ")}


def run_access(build, variant, out, **env):
    """Runs access_pattern[_pasta|_cpu]; returns (stdout, buffers {name: address})."""
    proc = run([f"{build}/examples/access_pattern{variant}"], profiled_env(out, **env))
    return proc.stdout, buffers_of(proc.stdout)


def hotness(out_dir):
    with open(os.path.join(out_dir, "mem_hotness.json")) as f:
        report = json.load(f)
    objects = {int(r["address"], 16): r for r in report["tables"]["objects"]}
    pages = {(int(r["address"], 16), r["page"]): (r["reads"], r["writes"], r["bytes"])
             for r in report["tables"]["pages"]}
    return report, objects, pages


def expect_access_counts(out_dir, buffers, truth):
    _, objects, _ = hotness(out_dir)
    ok = True
    for name, address in buffers.items():
        row = objects.get(address, {})
        reads, writes = truth.get(name, (0, 0))
        ok &= expect(f"{name}: reads, writes, bytes",
                     (row.get("reads", 0), row.get("writes", 0), row.get("bytes", 0)),
                     (reads, writes, 4 * (reads + writes)))
    return ok


def case_access_exact(build, out):
    """GpuBucketing counts every access of a known pattern exactly, per buffer and page."""
    _, buffers = run_access(build, "_pasta", out)
    ok = expect_access_counts(out, buffers, access_truth())
    _, objects, pages = hotness(out)
    a = buffers["a"]
    per_page = N * 4 // PAGE
    ok &= expect("a: pages touched", objects[a]["pages_touched"], per_page)
    floats = PAGE // 4
    ok &= expect("a: page 0 (reads, writes, bytes)", pages.get((a, 0)),
                 (floats + 256 * REPS, floats, 4 * (2 * floats + 256 * REPS)))
    ok &= expect("a: last page (reads, writes, bytes)", pages.get((a, per_page - 1)),
                 (0, floats, 4 * floats))
    ok &= expect("b: pages touched", objects[buffers["b"]]["pages_touched"], per_page // 2)
    with open(os.path.join(out, "sanitizer.json")) as f:
        summary = json.load(f)["summary"]
    ok &= expect("launches instrumented", summary.get("launches instrumented"), 5)
    return ok


def case_access_cpu_equal(build, out):
    """proc::Cpu (raw records reduced on the host) gives the same histograms."""
    _, gpu_buffers = run_access(build, "_pasta", out + "/gpu")
    _, cpu_buffers = run_access(build, "_cpu", out + "/cpu")
    ok = expect_access_counts(out + "/cpu", cpu_buffers, access_truth())
    # Addresses can differ between runs: compare per buffer and page.
    def by_buffer(out_dir, buffers):
        _, _, pages = hotness(out_dir)
        names = {addr: name for name, addr in buffers.items()}
        return {(names.get(a, hex(a)), p): v for (a, p), v in pages.items()}
    g, c = by_buffer(out + "/gpu", gpu_buffers), by_buffer(out + "/cpu", cpu_buffers)
    ok &= expect("pages with accesses (GpuBucketing, Cpu)", (len(g), len(c)), (len(g), len(g)))
    # Two empty tables would agree: the pages hold every access the program makes.
    ok &= expect("accesses over GpuBucketing's pages", sum(r + w for r, w, _ in g.values()),
                 sum(r + w for r, w in access_truth().values()))
    return expect("every page's counts equal", g == c, True) and ok


def case_access_outputs(build, out):
    """The program prints the same with and without memory instrumentation."""
    plain = run([f"{build}/examples/access_pattern"]).stdout
    strip = lambda text: [l for l in text.splitlines() if l.startswith("checksum")]
    ok = expect("checksum printed", len(strip(plain)), 1)
    for variant in ("_pasta", "_cpu"):
        got, _ = run_access(build, variant, f"{out}/{variant}")
        ok &= expect(f"output of access_pattern{variant}", strip(got), strip(plain))
    return ok


def case_access_overflow(build, out):
    """A trace buffer too small for the kernel: lost records counted and reported, never
    corrupt. With 1 MiB (65536 records), init, copy_half and count (2^20 records each)
    each lose 2^20 - 65536; hot_page (25856) fits."""
    proc = run([f"{build}/examples/access_pattern_cpu"], profiled_env(out, PASTA_TRACE_BUFFER="1M"))
    buffers = buffers_of(proc.stdout)
    line = ("pasta: the device trace buffer (1 MiB) filled in 3 launches and 2949120 access "
            "records were lost; raise PASTA_TRACE_BUFFER (the reports are marked partial)")
    said = expect("the line docs/errors.md shows", line in proc.stderr.splitlines(), True)
    report, objects, _ = hotness(out)
    with open(os.path.join(out, "sanitizer.json")) as f:
        summary = json.load(f)["summary"]
    lost = 3 * (N - 65536)
    ok = expect("records lost", summary.get("access records lost (buffer full)"), lost)
    ok &= expect("records kept", summary.get("access records"), 3 * 65536 + 256 * REPS + 512)
    ok &= expect("report marked partial", "trace buffer" in report.get("partial", ""), True)
    ok &= expect("out (hot_page and stage fit) still exact (writes)",
                 objects.get(buffers["out"], {}).get("writes"), 512)
    return ok and said


def case_access_filter(build, out):
    """PASTA_KERNEL_FILTER instruments only the kernels it selects."""
    _, buffers = run_access(build, "_pasta", out, PASTA_KERNEL_FILTER="copy_half")
    ok = expect_access_counts(out, buffers, access_truth(only="copy_half"))
    with open(os.path.join(out, "sanitizer.json")) as f:
        summary = json.load(f)["summary"]
    return expect("launches instrumented", summary.get("launches instrumented"), 1) and ok


def case_access_spaces(build, out):
    """With shared and local memory instrumented too, both processors count the stage
    kernel's shared (2 x 256 x 4 bytes) and local (2 x 256 x 64 x 4 bytes) traffic apart
    from every allocation. Bytes, not accesses: the compiler may vectorise the local
    array's accesses, and the patches see instructions."""
    ok, seen = True, []
    for variant in ("_pasta", "_cpu"):
        d = f"{out}/{variant}"
        _, buffers = run_access(build, variant, d, PASTA_ACCESS_SPACES="global,shared,local")
        ok &= expect_access_counts(d, buffers, access_truth())
        summary = hotness(d)[0]["summary"]
        ok &= expect(f"{variant}: bytes outside allocations (shared + local)",
                     summary.get("bytes outside known allocations"),
                     2 * 256 * 4 + 2 * 256 * 64 * 4)
        seen.append(summary.get("accesses outside known allocations"))
    return expect("accesses outside allocations (GpuBucketing, Cpu)", seen[0], seen[1]) and ok


def case_access_injection(build, out):
    """`pasta run --memory` profiles the unmodified program exactly (by injection)."""
    proc = run([f"{build}/bin/pasta", "run", "--memory", "-o", out, "--",
                f"{build}/examples/access_pattern"])
    buffers = buffers_of(proc.stdout)
    ok = expect_access_counts(out, buffers, access_truth())
    return expect("kernels counted", kernel_counts(out),
                  {"copy_half": 1, "count": 1, "hot_page": 1, "init": 1, "stage": 1}) and ok


def counter_kernels(out_dir):
    """{kernel name before '(': entry} from op_counters.profile.json (operators and unattributed)."""
    with open(os.path.join(out_dir, "op_counters.profile.json")) as f:
        profile = json.load(f)
    return profile, {base_name(e["kernel"]): e for e in op_counters.profile_entries(profile)}


def base_name(kernel):
    """A kernel's function name: 'stream' from '_Z6streamPKfPfm' or 'void stream(...)'."""
    if kernel.startswith("_Z"):
        digits = "".join(itertools.takewhile(str.isdigit, kernel[2:]))
        if digits:
            return kernel[2 + len(digits):2 + len(digits) + int(digits)]
    return kernel.split("(")[0].replace("void ", "")


def within(what, got, want, rel):
    ok = got is not None and abs(got - want) <= rel * abs(want)
    shown = "none" if got is None else f"{got:.6g}"
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {shown} vs {want:.6g} (within {rel:.0%})")
    return ok


def case_counters_exact(build, out):
    """Hardware counters of kernels with known traffic and work: the streaming kernel's DRAM
    bytes within 2% of what it must move, the FMA kernels' flop counts exact on 101 grids
    (more ranges than one counter-data image holds), of four launches of a signature one
    measured (pasta replays it, saving and restoring the program's memory, L2 flushed before
    every pass) and the rest given its numbers, and the program prints what it prints
    unprofiled."""
    proc = run([f"{build}/examples/counters_pasta", "--sweep"],
               profiled_env(out, PASTA_PRINT="stderr", PASTA_VERBOSE="1"))
    replayed = [l for l in proc.stderr.splitlines() if "hardware counters by user replay:" in l]
    ok = expect("pasta replayed the launches it measured (PASTA_COUNTER_REPLAY=pasta)",
                len(replayed), 1)
    for l in replayed:
        print("  " + l.strip()[:300])
    sets = 0  # no launch is measured again in one pass
    plain = run([f"{build}/examples/counters", "--sweep"]).stdout
    lines = [l.split() for l in proc.stdout.splitlines() if l.startswith("expect")]
    bytes_moved = int(lines[0][-1])
    flops, per_block = int(lines[1][3].rstrip(",")), int(lines[1][4])
    ok &= expect("output unchanged", checksums(proc.stdout), checksums(plain))
    profile, _ = counter_kernels(out)
    entries = op_counters.profile_entries(profile)
    streams = [e for e in entries if base_name(e["kernel"]) == "stream"]
    ok &= expect("stream: signatures", len(streams), 1)
    s = streams[0] if streams else {"launches": 0, "measured": 0, "propagated": 0, "metrics": {}}
    ok &= expect("stream: launches, measured, propagated",
                 (s["launches"], s["measured"], s["propagated"]), (4, 1 + sets, 3 - sets))
    m = s.get("metrics") or {}
    ok &= within("stream: DRAM bytes read (4 launches)", m.get("dram_bytes_read"), 4 * bytes_moved,
                 0.02)
    ok &= within("stream: DRAM bytes written (4 launches)", m.get("dram_bytes_write"),
                 4 * bytes_moved, 0.02)
    fmas = {e["grid"][0]: e for e in entries if base_name(e["kernel"]) == "fma"}
    ok &= expect("fma: grids measured", sorted(g for g, e in fmas.items() if e["measured"] == 1),
                 list(range(1, 101)) + [4096])
    # Launch order: stream 3 times (0-2), fma on grids 1-100 (3-102), stream (103), fma (104).
    ok &= expect("stream: launch index of the measured launch", s.get("measured_launches"), [0])
    ok &= expect("fma: grids whose measured launch index is not 2 + grid (104 for 4096)",
                 {g: e.get("measured_launches") for g, e in fmas.items()
                  if e.get("measured_launches") != [104 if g == 4096 else 2 + g]}, {})
    wrong = {g: (e.get("metrics") or {}).get("flops") for g, e in fmas.items()
             if (e.get("metrics") or {}).get("flops") != float(g * per_block)}
    ok &= expect("fma: grids whose flops are not (2 K + 1) x threads exactly", wrong, {})
    ok &= expect("fma: flops on 4096 blocks", (fmas.get(4096, {}).get("metrics") or {}).get("flops"),
                 float(flops))
    ok &= expect("warnings", profile["warnings"], [])
    for e in [s, fmas.get(4096, {})]:
        if e.get("metrics"):
            print(f"  {base_name(e['kernel'])} {e['grid']}: " +
                  ", ".join(f"{k}={v:.4g}" if v is not None else f"{k}=-"
                            for k, v in e["metrics"].items()))
    return ok


def case_counters_ncu(build, out):
    """The same metrics from `ncu --metrics` on the plain program agree within 5%. Each kernel
    runs three times: pasta replays the first launch itself, the program's memory saved once
    and restored before every pass, L2 flushed before each, as ncu does (CUPTI's kernel
    records are off during the passes: with them on, the flop count reads 0)."""
    run([f"{build}/examples/counters_pasta", "--repeat", "3"], profiled_env(out))
    return counters_against_ncu(build, out)


def case_counters_cupti_replay(build, out):
    """PASTA_COUNTER_REPLAY=cupti: CUPTI replays the first launch of each kernel in full and a
    later one is measured again for the cache-sensitive metrics in one pass, L2 flushed
    before. The program prints what it prints unprofiled, and the metrics agree with ncu's
    within 5%."""
    proc = run([f"{build}/examples/counters_pasta", "--repeat", "3"],
               profiled_env(out, PASTA_COUNTER_REPLAY="cupti", PASTA_VERBOSE="1"))
    plain = run([f"{build}/examples/counters", "--repeat", "3"]).stdout
    ok = expect("output unchanged", checksums(proc.stdout), checksums(plain))
    again = [int(m.group(1)) for m in (re.search(r"(\d+) launches measured again in one pass",
                                                 l) for l in proc.stderr.splitlines()) if m]
    ok &= expect("launches measured again in one pass (kernel replay)", again, [2])
    return combine(ok, counters_against_ncu(build, out))


def case_counters_device_variables(build, out):
    """A kernel that adds one to a `__device__` counter (examples/cuda/device_variables.cu, 6
    launches of two signatures): under `pasta run --counters`, every launch measured, in batches
    (the default) and each at its own launch, the counter ends at 6, as the program's own launches
    leave it, and so does the one in cudaMalloc'd memory; the verbose summary says the variable
    was saved with the allocations, copied by pasta's kernel at every save and restore. User
    replay restored only allocations before: 24, and 60 with every launch measured."""
    program = f"{build}/examples/device_variables"
    plain = last_json(run([program]).stdout)
    ok = expect("unprofiled: both counters", (plain["device_variable"], plain["allocation"]), (6, 6))
    for batch in ("16", "1"):
        where = os.path.join(out, f"batch{batch}")
        proc = run([f"{build}/bin/pasta", "run", "--counters", "-o", where, "--", program],
                   {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1", "PASTA_COUNTER_LAUNCHES": "0",
                    "PASTA_COUNTER_BATCH": batch}, check=False)
        got = last_json(proc.stdout)
        ok &= expect(f"batch {batch}: both counters, and the exit status",
                     (got["device_variable"], got["allocation"], proc.returncode), (6, 6, 0))
        summary = [l for l in proc.stderr.splitlines() if "hardware counters by user replay" in l]
        saved = [re.search(r"(\d+) `__device__` variables of replayed kernels saved", l)
                 for l in summary]
        ok &= expect(f"batch {batch}: launches replayed, variables saved",
                     (re.search(r"(\d+) launches replayed by pasta", summary[0]).group(1)
                      if summary else None, saved[0].group(1) if saved and saved[0] else None),
                     ("6", "1"))
        # Every save's and restore's variable copied by pasta's copy kernel: as many as were
        # timed.
        made = re.search(r"(\d+) saves' and restores' variables by one launch of pasta's copy "
                         r"kernel", summary[0]) if summary else None
        copied = re.search(r"memory saved \d+ ms \((\d+)\), restored \d+ ms \((\d+)\)",
                           proc.stderr)
        ok &= expect(f"batch {batch}: saves and restores by pasta's copy kernel, of all",
                     int(made.group(1)) if made else None,
                     int(copied.group(1)) + int(copied.group(2)) if copied else "?")
    return ok


def case_counters_uploads(build, out):
    """A wait right after an upload (a copy from the host to the device) leaves the launches
    kept for a batch kept (examples/cuda/uploads.cu: 6 kernels of their own signature, each
    followed by an upload and a wait, as PyTorch's copy of a model to the device makes them,
    then a kernel that sums the 6 buffers and the host's read): one replay of all 7 launches,
    at the read, where each wait replayed one launch before; the sums are what the host sent
    (a replay after an upload leaves the upload), and the sum kernel's numbers are its own:
    6 additions an element, 6 buffers of 16 MiB read from DRAM."""
    program = f"{build}/examples/uploads"
    plain = last_json(run([program]).stdout)
    ok = expect("unprofiled: wrong sums", plain["wrong_sums"], 0)
    proc = run([f"{build}/bin/pasta", "run", "--counters", "-o", out, "--", program],
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1"}, check=False)
    got = last_json(proc.stdout) if "{" in proc.stdout else {}
    ok &= expect("profiled: wrong sums, and the exit status",
                 (got.get("wrong_sums"), proc.returncode), (0, 0))
    summary = " ".join(l for l in proc.stderr.splitlines()
                       if "hardware counters by user replay" in l)
    print("  " + summary[:600])

    def number(pattern):
        m = re.search(pattern, summary)
        return int(m.group(1)) if m else None
    ok &= expect("launches replayed; replays before the batch was full; waits after an upload "
                 "that kept them; kept and dropped",
                 (number(r"(\d+) launches replayed by pasta"),
                  number(r"(\d+) replays before their batch was full"),
                  number(r"(\d+) waits after an upload that left them kept"),
                  number(r"(\d+) kept for a batch and dropped")),
                 (7, 1, 6, 0))
    ok &= expect("the early replay's call and launches", "cudaMemcpy 1 (7 launches)" in summary,
                 True)
    profile, kernels = counter_kernels(out)
    ok &= expect("fill: grids measured (one launch each)",
                 sorted(e["grid"][0] for e in op_counters.profile_entries(profile)
                        if base_name(e["kernel"]) == "fill" and e["measured"] == 1),
                 [1, 2, 3, 4, 5, 6])
    m = (kernels.get("sum") or {}).get("metrics") or {}
    elements, buffers = 1 << 22, 6
    ok &= expect("sum: flops (one addition a buffer an element)", m.get("flops"),
                 float(buffers * elements))
    ok &= within("sum: DRAM bytes read (6 buffers of 16 MiB)", m.get("dram_bytes_read"),
                 buffers * elements * 4, 0.02)
    return ok


def counters_against_ncu(build, out):
    """What counters_pasta --repeat 3 wrote to `out` against ncu on the plain program: each
    metric within 5%."""
    ncu = find_ncu()
    if ncu is None:
        return SKIP
    _, ours = counter_kernels(out)
    theirs = ncu_metrics.collect(ncu, build, [f"{build}/examples/counters", "--repeat", "3"],
                                 os.path.join(out, "ncu"))
    # The launch indices pasta gives its measured launches name the same kernels in ncu's run.
    with open(os.path.join(out, "ncu", "ncu.csv")) as f:
        ncu_names = {i: base_name(k) for i, k, _, _ in ncu_metrics.launches(f.read())}
    ok = expect("launch indices naming another kernel in ncu's run",
                {(kernel, i): ncu_names.get(i) for kernel in ("stream", "fma")
                 for i in (ours.get(kernel) or {}).get("measured_launches", [None])
                 if ncu_names.get(i) != kernel}, {})
    for kernel in ("stream", "fma"):
        entry = ours.get(kernel) or {}
        # The profile's additive metrics cover every launch; ncu's are one launch's.
        mine = {k: (v / entry["launches"] if k in ncu_metrics.ADDITIVE and v is not None else v)
                for k, v in (entry.get("metrics") or {}).items()}
        dram = [mine.get(k) or 0 for k in ("dram_bytes_read", "dram_bytes_write")] + \
            [theirs.get(kernel, {}).get(k, 0) for k in ("dram_bytes_read", "dram_bytes_write")]
        measured = dict(theirs.get(kernel, {}))
        own = measured.pop(ncu_metrics.L2_OWN[0], None)
        for key, value in sorted(measured.items()):
            if key == "l2_hit_rate_pct" and not ncu_metrics.l2_compared(own):
                # Most of such a kernel's L2 traffic is the profiler's own (ncu_metrics.L2_OWN).
                print(f"     {kernel}: {key}: pasta {mine.get(key)}, ncu {value}: {own:.0f} L2 "
                      f"sectors of its own, under {ncu_metrics.L2_OWN_FLOOR}, not compared")
                continue
            if key.startswith("dram_") and max(dram) < (1 << 20):
                # Under 1 MiB of DRAM traffic, what each run leaves in L2 decides the numbers.
                print(f"     {kernel}: {key}: pasta {mine.get(key)}, ncu {value}: under 1 MiB of "
                      "DRAM traffic, not compared")
                continue
            ok &= ncu_metrics.agree(f"{kernel}: {key}", mine.get(key), value)
    return expect("kernels ncu measured", sorted(theirs), ["fma", "stream"]) and ok


def blame_report(out, shown, width):
    """stall_blame.json of run 2 and its blame rows, printing the first `shown` and what was
    not blamed."""
    blame = report(out, "stall_blame")
    rows = blame["tables"].get("blame", [])
    for r in rows[:shown]:
        print(f"  {r['tensor'][:width]:<{width}} {r['operator']:<16} {r['stall_samples']:>10.1f} "
              f"{100 * r['share']:6.2f}%")
    for r in blame["tables"].get("unattributed", []):
        print(f"  unattributed: {r['why']}: {r['stall_samples']:.1f}")
    return blame, rows


def unplaced(target):
    """A target's name without its allocation's address, which differs between processes."""
    return re.sub(r" at 0x[0-9a-f]+\)", ")", target)


def accesses_csv(out):
    """stall_blame.accesses.csv of an access run: {(kernel, pc, target, operator): accesses},
    allocations named without their address (it differs between processes)."""
    rows = {}
    with open(os.path.join(out, "stall_blame.accesses.csv")) as f:
        for r in csv.DictReader(f):
            key = (r["kernel"], r["pc"], unplaced(r["target"]), r["operator"])
            rows[key] = rows.get(key, 0) + int(r["accesses"])
    return rows


def host_reduced_run2(build, program, out, sampled_out, torch=False, **env):
    """Run 2 of stall blame again with --host-reduction's library (every access a record,
    reduced on the host), joined with the same sampled run's file as `sampled_out`'s."""
    library = "libpasta_torch_stall_access_cpu.so" if torch else "libpasta_stall_access_cpu.so"
    samples = glob.glob(os.path.join(sampled_out, "sampled", "**", "stall_samples.json"),
                        recursive=True)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return run(program, {"CUDA_INJECTION64_PATH": f"{build}/inject/{library}",
                         "PASTA_STALL_SAMPLES": samples[0] if samples else "",
                         "PASTA_ACCESS_SPACES": "global,async",  # as --device-reduction's run 2
                         "PASTA_OUTPUT_DIR": out, "PASTA_PRINT": "none", **env})


def expect_same_as_host(out, host_out):
    """The device-reduced run 2 and the host-reduced one: the same accesses pc by pc (some:
    two empty files do not agree), and blame tables within 1% of the samples."""
    device, host = accesses_csv(out), accesses_csv(host_out)
    differ = sorted(k for k in set(device) | set(host) if device.get(k) != host.get(k))
    for k in differ[:8]:
        print(f"  differs: {k}: device {device.get(k)}, host {host.get(k)}")
    print(f"  accesses per (kernel, pc, target, operator): {len(device)} rows on the device, "
          f"{len(host)} on the host, {sum(device.values())} and {sum(host.values())} accesses")
    ok = expect("accesses pc by pc, device against host", len(differ), 0)
    # How many: each case checks the totals its program makes (accesses_by_target).
    ok &= expect("accesses recorded on the device", len(device) > 0, True)
    rows = lambda o: {(unplaced(r["tensor"]), r["operator"]): r["stall_samples"]
                      for r in report(o, "stall_blame")["tables"].get("blame", [])}
    a, b = rows(out), rows(host_out)
    total = report(out, "stall_blame")["summary"].get("stall samples (sampled run)", 0) or 1
    worst = max((abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)), default=0)
    print(f"  blame rows: {len(a)} and {len(b)}; largest difference {worst:.2f} of {total:.0f} "
          f"samples")
    return expect("blame tables within 1% of samples", worst <= 0.01 * total, True) and ok


def expect_blame_whole(blame, sampled_out):
    """Stall blame's run 2 (report `blame`) charged every sample of the sampled run in
    `sampled_out`, some to tensors: blamed + unattributed = the samples in run 1's own file."""
    paths = glob.glob(os.path.join(sampled_out, "sampled", "**", "stall_samples.json"),
                      recursive=True)
    samples = harness.read_json(paths[0]) if paths else None
    print(f"  the sampled run's stall_samples.json: {harness.sampled_stalls(samples)} samples")
    return expect("samples blamed + unattributed = the sampled run's, some blamed (a problem, "
                  "or None)", harness.blame_problem(blame, samples), None)


def accesses_by_target(out, *kernels, operator=None):
    """{target: accesses} of an access run's stall_blame.accesses.csv, over the kernels named
    (their function names; all when none) and, given, one operator; targets named without
    their number (an allocation's #N is its place among the run's allocations)."""
    got = collections.Counter()
    for (kernel, _pc, target, op), n in accesses_csv(out).items():
        if (not kernels or base_name(kernel) in kernels) and operator in (None, op):
            got[re.sub(r"#\d+ ", "", target)] += n
    return dict(got)


def case_stall_blame(build, out):
    """`pasta run -t stall_blame` on a kernel reading a 1 GiB array at random places (its
    loads miss) and a 64 KiB one (its loads hit): the memory-dependency stalls land on the
    1 GiB allocation, the SASS shows which loads each stall waited for, the two runs ran the
    same code, and the program prints what it prints unprofiled in both runs."""
    # 32K threads, 10 launches: 21M accesses, within the instrumented run's record buffer.
    threads, launches = 32768, 10
    program = [f"{build}/examples/stalls", "--threads", str(threads), "--launches", str(launches)]
    plain = run(program).stdout
    # Only blend is instrumented: fill writes 2^28 floats, more records than the buffer holds.
    proc = run([f"{build}/bin/pasta", "run", "-t", "stall_blame", "--device-reduction",
                "--kernel-filter", "^_Z5blend", "-o", out, "--"] + program,
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1"})
    for line in proc.stderr.splitlines():
        if "PC sampling" in line or "nvdisasm" in line:
            print("  " + line)
    ok = expect("output unchanged (sampled run, instrumented run)", checksums(proc.stdout),
                checksums(plain) * 2)
    with open(os.path.join(out, "sampled", "stall_samples.json")) as f:
        samples = json.load(f)
    blend = [k for k in samples["functions"] if base_name(k) == "blend"]
    ok &= expect("blend sampled", len(blend), 1)
    pcs = samples["functions"][blend[0]]["pcs"] if blend else []
    waits = sum(n for p in pcs if p["waits_for"] for r, n in p["reasons"].items()
                if "long_scoreboard" in r)
    lsb = sum(n for p in pcs for r, n in p["reasons"].items() if "long_scoreboard" in r)
    print(f"  blend: {samples['samples']} samples in all, {lsb} long scoreboard, {waits} of them "
          f"moved to their loads")
    rows1 = sorted(((n, p["pc"], p.get("opcode", "?"), r, p["waits_for"]) for p in pcs
                    for r, n in p["reasons"].items()), reverse=True)
    for n, pc, opcode, reason, w in rows1[:12]:
        print(f"    {pc:#06x} {opcode:<14} {reason:<22} {n:>8} waits for {[hex(x) for x in w]}")
    # blend's long-scoreboard stalls are all on loads (tests/nv/sampling/sass_cubin_test.cpp reads the
    # same code): at least 90% of them move to the load they wait for.
    ok &= expect("long-scoreboard samples, at least 90% moved to a load",
                 lsb > 0 and waits >= 0.9 * lsb, True)
    blame, rows = blame_report(out, 6, 48)
    ok &= expect_blame_whole(blame, out)
    cold = sum(r["stall_samples"] for r in rows if "(1073741824 B" in r["tensor"])
    warm = sum(r["stall_samples"] for r in rows if "(65536 B" in r["tensor"])
    print(f"  cold / (cold + warm) = {cold / (cold + warm) if cold + warm else 0:.3f}")
    # cold misses, warm (64 KiB) hits: the design puts nearly all memory stalls on cold.
    ok &= expect("at least 90% of the memory stalls blamed on cold (and some)",
                 cold > 0 and cold >= 0.9 * (cold + warm), True)
    # Each thread of blend reads cold and warm 32 times each and writes out once.
    each = threads * launches
    ok &= expect("run 2's accesses of blend per allocation (cold, warm, out)",
                 accesses_by_target(out, "blend"),
                 {"allocation (1073741824 B)": 32 * each, "allocation (65536 B)": 32 * each,
                  f"allocation ({4 * threads} B)": each})
    ok &= expect("kernels whose code changed", blame["tables"].get("code_changed", []), [])
    ok &= expect("partial", blame.get("partial", ""), "")
    ok &= expect("forest files", all(os.path.exists(os.path.join(out, f)) for f in
                                     ("stall_blame.forest.dot", "stall_blame.forest.svg",
                                      "stall_blame.blame.csv")), True)
    with open(os.path.join(out, "sanitizer.json")) as f:
        device = json.load(f)["summary"]
    ok &= expect("run 2 counted on the device", device.get("device patch"), "pc")
    ok &= expect("per-instruction counts lost",
                 device.get("per-instruction counts lost (table and overflow full)"), 0)
    host_out = out + "-host"
    host = host_reduced_run2(build, program, host_out, out, PASTA_KERNEL_FILTER="^_Z5blend")
    ok &= expect("output unchanged (host-reduced run)", checksums(host.stdout), checksums(plain))
    with open(os.path.join(host_out, "sanitizer.json")) as f:
        raw = json.load(f)["summary"]
    print(f"  run 2: {device.get('per-instruction counts copied')} counts copied "
          f"({device.get('bytes copied to the host')} B) against {raw.get('access records')} "
          f"records ({raw.get('bytes copied to the host')} B)")
    return expect_same_as_host(out, host_out) and ok


def case_stall_blame_views(build, out):
    """`pasta run --torch -t stall_blame` on tests/gpu/torch_views.py: qkv split into views,
    aten::mul reading q and aten::add reading k. Each operator's stalls land on its own view,
    linked to qkv in the forest, and the program's checksum is what it is unprofiled. (The
    checksum's copies to double are elementwise kernels too: their stalls land on y and z.)"""
    script = [sys.executable, os.path.join(ROOT, "tests", "gpu", "torch_views.py")]
    plain = last_json(run(script).stdout)
    # The elementwise kernels only: randn and the sums stay uninstrumented.
    proc = run([f"{build}/bin/pasta", "run", "--torch", "-t", "stall_blame", "--device-reduction",
                "--kernel-filter", "elementwise", "-o", out, "--"] + script,
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1"})
    for line in proc.stderr.splitlines():
        if "aten handler" in line or "PC sampling" in line:
            print("  " + line)
    outputs = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    ok = expect("checksum unchanged (sampled run, instrumented run)",
                [o["checksum"] for o in outputs], [plain["checksum"]] * 2)
    blame, rows = blame_report(out, 8, 96)
    ok &= expect_blame_whole(blame, out)
    cols = plain["cols"]
    layout = f"view Float[{plain['rows']}, {cols}] strides [{3 * cols}, 1]"
    # Each step's aten::mul reads every float of q once, its aten::add every float of k: the
    # views are not contiguous, so PyTorch's elementwise kernels load them a float at a time.
    for offset, op in ((0, "aten::mul"), (4 * cols, "aten::add")):
        got = sum(n for target, n in accesses_by_target(out, operator=op).items()
                  if target.endswith(f"{layout} at +{offset} B"))
        ok &= expect(f"run 2's reads of the view at +{offset} B under {op}", got,
                     plain["rows"] * cols * plain["steps"])
    on = lambda offset, op: sum(r["stall_samples"] for r in rows if r["operator"] == op and
                                r["tensor"].endswith(f"{layout} at +{offset} B"))
    q_mul, k_add = on(0, "aten::mul"), on(4 * cols, "aten::add")
    crossed = on(4 * cols, "aten::mul") + on(0, "aten::add")
    # The operators' own stalls: their loads read the views (the outputs are only written).
    blamed = sum(r["stall_samples"] for r in rows if r["operator"] in ("aten::mul", "aten::add"))
    print(f"  q by aten::mul {q_mul:.1f}, k by aten::add {k_add:.1f}, crossed {crossed:.1f}, "
          f"blamed under the two operators {blamed:.1f}")
    ok &= expect("stalls on q's view under aten::mul", q_mul > 0, True)
    ok &= expect("stalls on k's view under aten::add", k_add > 0, True)
    ok &= expect("stalls on the other operator's view", crossed, 0)
    # Stall samples are a sample: each view's share is not a known number, but the operators'
    # own loads read only their views, so at least 90% of their stalls land there.
    ok &= expect("at least 90% of the two operators' stalls on their views",
                 q_mul + k_add >= 0.9 * blamed, True)
    ok &= expect("partial", blame.get("partial", ""), "")
    with open(os.path.join(out, "stall_blame.forest.dot")) as f:
        dot = f.read()
    ok &= expect("the forest holds the views", layout in dot, True)
    host_out = out + "-host"
    host = host_reduced_run2(build, script, host_out, out, torch=True,
                             PASTA_KERNEL_FILTER="elementwise")
    ok &= expect("checksum unchanged (host-reduced run)", last_json(host.stdout)["checksum"],
                 plain["checksum"])
    return expect_same_as_host(out, host_out) and ok


def case_async_copies(build, out):
    """Which asynchronous copies from global memory the access run counts
    (examples/cuda/async_copy.cu, one tile per block): cp.async (16 B a thread) and
    cp.async.bulk (one copy a block) are counted exactly (PASTA_ACCESS_SPACES=global,async),
    on the device and on the host alike; cp.async.bulk.tensor (TMA) has no patch point in the
    Compute Sanitizer API and is not seen. The program prints what it prints unprofiled."""
    blocks = 4096
    program = [f"{build}/examples/async_copy", "--blocks", str(blocks)]
    plain = run(program).stdout
    ok = True
    got = {}
    for how, library in (("device", "libpasta_stall_access.so"),
                         ("host", "libpasta_stall_access_cpu.so")):
        d = f"{out}/{how}"
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        proc = run(program, {"CUDA_INJECTION64_PATH": f"{build}/inject/{library}",
                             "PASTA_ACCESS_SPACES": "global,async",
                             "PASTA_OUTPUT_DIR": d, "PASTA_PRINT": "none"})
        ok &= expect(f"output unchanged ({how})", checksums(proc.stdout), checksums(plain))
        rows = accesses_csv(d)
        src = re.compile(rf"allocation #\d+ \({blocks * 256 * 4} B\)$")
        per_kernel = {}
        for (kernel, _pc, target, _op), n in rows.items():
            if src.match(target):
                per_kernel[base_name(kernel)] = per_kernel.get(base_name(kernel), 0) + n
        print(f"  {how}: accesses of the source array per kernel: {per_kernel}")
        got[how] = rows
        ok &= expect(f"{how}: cp.async copies counted (staged_sum)",
                     per_kernel.get("staged_sum"), blocks * 64)
        ok &= expect(f"{how}: cp.async.bulk copies counted (bulk_sum)",
                     per_kernel.get("bulk_sum"), blocks)
        ok &= expect(f"{how}: TMA tensor copies not seen (tensor_sum)",
                     per_kernel.get("tensor_sum", 0), 0)
    differ = [k for k in set(got["device"]) | set(got["host"])
              if got["device"].get(k) != got["host"].get(k)]
    ok &= expect("device and host counts, pc by pc", differ, [])
    # Both runs of stall blame: the report names the kernel whose loads it cannot see.
    # (256 MiB of tiles: each kernel runs long enough to be sampled.)
    blame, big = f"{out}/blame", [f"{build}/examples/async_copy", "--blocks", str(1 << 18)]
    proc = run([f"{build}/bin/pasta", "run", "-t", "stall_blame", "-f", "-o", blame, "--"] + big,
               {"PASTA_PRINT": "none"})
    ok &= expect("output unchanged (stall blame's two runs)", checksums(proc.stdout),
                 checksums(run(big).stdout) * 2)
    tables = report(blame, "stall_blame")["tables"]
    unseen = {base_name(r["kernel"]): r["unseen_loads"] for r in tables.get("unseen_loads", [])}
    print(f"  kernels with loads the access run cannot see: {unseen}")
    return expect("unseen loads: tensor_sum's TMA copy alone", unseen, {"tensor_sum": 1}) and ok


def case_annotations_exact(build, out):
    """device::Annotations counts access_pattern's annotated kernels exactly (the same truth
    as the sanitizer path), per buffer and per page, and the program prints the same."""
    proc = run([f"{build}/examples/annotated_pasta"], profiled_env(out))
    buffers = buffers_of(proc.stdout)
    ok = expect_access_counts(out, buffers, access_truth())
    _, objects, pages = hotness(out)
    a = buffers["a"]
    per_page = N * 4 // PAGE
    floats = PAGE // 4
    ok &= expect("a: pages touched", objects[a]["pages_touched"], per_page)
    ok &= expect("a: page 0 (reads, writes, bytes)", pages.get((a, 0)),
                 (floats + 256 * REPS, floats, 4 * (2 * floats + 256 * REPS)))
    with open(os.path.join(out, "device_annotations.json")) as f:
        summary = json.load(f)["summary"]
    ok &= expect("annotated launches", summary.get("annotated launches"), 5)
    ok &= expect("accesses lost", summary.get("annotated accesses lost (device table full)"), 0)
    plain = run([f"{build}/examples/annotated"]).stdout
    sanitizer = run([f"{build}/examples/access_pattern"]).stdout
    ok &= expect("checksum printed", len(checksums(plain)), 1)
    ok &= expect("output of annotated_pasta", checksums(proc.stdout), checksums(plain))
    return expect("same checksum as access_pattern", checksums(plain), checksums(sanitizer)) and ok


def case_annotations_full_table(build, out):
    """A table too small for the launch: accesses are counted as lost, the reports say so,
    and the program's output does not change."""
    proc = run([f"{build}/examples/annotated_pasta"],
               profiled_env(out, PASTA_ANNOTATION_BINS="1K", PASTA_PRINT="stderr"))
    plain = run([f"{build}/examples/annotated"]).stdout
    ok = expect("output unchanged", checksums(proc.stdout), checksums(plain))
    with open(os.path.join(out, "device_annotations.json")) as f:
        lost = json.load(f)["summary"].get("annotated accesses lost (device table full)", 0)
    _, objects, _ = hotness(out)
    counted = sum(r["reads"] + r["writes"] for r in objects.values())
    total = sum(r + w for r, w in access_truth().values())
    print(f"  counted {counted}, lost {lost}, the program's {total}")
    ok &= expect("some accesses lost", lost > 0, True)
    ok &= expect("counted + lost = the program's accesses", counted + lost, total)
    return expect("the reports say why", "raise PASTA_ANNOTATION_BINS" in proc.stderr, True) and ok


def case_uvm_advice(build, out):
    """UvmHotness on managed memory first touched on the GPU: pages per allocation and
    kernel, and the advice (preferred location, prefetch before `init`); results unchanged
    with the advice applied and under the profiler."""
    mb, ok = 64, True
    plain = last_json(run([f"{build}/examples/uvm_advice", "--mb", str(mb)]).stdout)
    advised = last_json(run([f"{build}/examples/uvm_advice", "--mb", str(mb), "--advise"]).stdout)
    proc = run([f"{build}/examples/uvm_advice_pasta", "--mb", str(mb)], profiled_env(out))
    profiled = last_json(proc.stdout)
    ok &= expect("checksum with the advice applied", advised["checksum"], plain["checksum"])
    ok &= expect("checksum under the profiler", profiled["checksum"], plain["checksum"])
    buffers = buffers_of(proc.stdout)
    with open(os.path.join(out, "uvm_hotness.json")) as f:
        report = json.load(f)
    allocs = {int(r["address"], 16): r for r in report["tables"]["allocations"]}
    n, pages = (mb << 20) // 4, (mb << 20) // PAGE
    for name, accesses in (("x", 4 * n), ("y", 7 * n)):
        row = allocs.get(buffers[name], {})
        ok &= expect(f"{name}: pages touched of pages", (row.get("pages_touched"), row.get("pages")),
                     (pages, pages))
        ok &= expect(f"{name}: accesses", row.get("accesses"), accesses)
        ok &= expect(f"{name}: first touched by", (row.get("first_kernel", "").split("(")[0],
                                                   row.get("first_launch")), ("init", 1))
        calls = [r["call"] for r in report["tables"]["advice"]
                 if int(r["address"], 16) == buffers[name]]
        want = [f"cudaMemAdvise({hex(buffers[name])}, {mb << 20}, "
                "cudaMemAdviseSetPreferredLocation, {cudaMemLocationTypeDevice, 0})",
                f"cudaMemPrefetchAsync({hex(buffers[name])}, {mb << 20}, "
                "{cudaMemLocationTypeDevice, 0}, 0, stream) before launch 1 (init(float*, "
                "float*, unsigned long))"]
        ok &= expect(f"{name}: advice", calls, want)
    kernels = {r["kernel"].split("(")[0]: r["pages_touched"] for r in report["tables"]["kernels"]}
    ok &= expect("managed pages per kernel", kernels, {"init": 2 * pages, "axpy": 3 * 2 * pages})
    summary = dict(report["summary"])
    ok &= expect("largest working set (bytes)",
                 summary.get("largest working set of one launch (bytes)"), 2 * (mb << 20))
    return ok


# --- PyTorch (torch::Aten with nv::Cupti or nv::Sanitizer) -----------------------
def report(out_dir, tool):
    with open(os.path.join(out_dir, f"{tool}.json")) as f:
        return json.load(f)


COUNT_KERNELS = os.path.join(ROOT, "tests", "gpu", "count_kernels.py")


def torch_model(build, out, *extra, env=None, pasta=True, script="torch_model.py", count=None):
    """The script's JSON line, run under `pasta run --torch` into `out` (pasta), or natively;
    with `count`, a path, natively under torch.profiler, which writes there the kernels it
    counted and the copies and memsets by operator (tests/gpu/count_kernels.py --operators)."""
    path = os.path.join(ROOT, "tests", "gpu", script) if script == "torch_model.py" else script
    cmd = [sys.executable, path, *extra]
    if count:
        cmd = [sys.executable, COUNT_KERNELS, "--operators", count, path, *extra]
    if pasta:
        cmd = [f"{build}/bin/pasta", "run", "--torch", "-o", out, "--"] + cmd
    return last_json(run(cmd, {"PASTA_PRINT": "none", **(env or {})}).stdout)


def expect_attributed(out, kernels):
    """op_summary saw `kernels` kernels (what torch.profiler counts in the same span, a run of
    its own; None only where the case says why no such count exists) and attributed every one
    to an operator."""
    summary = report(out, "op_summary")["summary"]
    unattributed = report(out, "op_summary")["tables"].get("unattributed", [])
    print("  unattributed kernels:", [(r["kernel"], r["launches"]) for r in unattributed][:10])
    ok = expect("kernels op_summary saw, pasta vs torch.profiler", summary["kernels"], kernels) \
        and some("torch.profiler's kernels", kernels) if kernels is not None else \
        expect("kernels op_summary saw (some)", summary["kernels"] > 0, True)
    # Every kernel of these programs is launched inside an operator (the recorded traces of
    # them show 100%): none may go unattributed.
    return expect(f"kernels attributed to an operator, of {summary['kernels']}",
                  summary["kernels attributed to an operator"], summary["kernels"]) and ok


def expect_copies(out, counts):
    """op_summary charged every copy and memset to the operator torch.profiler links it to (in
    its run of `counts`, tests/gpu/count_kernels.py --operators): the same copies per operator,
    and as many outside every operator."""
    with open(counts) as f:
        theirs = json.load(f)
    ours = {r["operator"]: r["copies"] for r in report(out, "op_summary")["tables"]["operators"]
            if r.get("copies")}
    by_op = theirs["copies_by_operator"]
    differ = {k: (ours.get(k), by_op.get(k)) for k in set(ours) | set(by_op)
              if ours.get(k) != by_op.get(k)}
    print(f"  copies and memsets by operator: pasta {sum(ours.values())} in {len(ours)} "
          f"operators, torch.profiler {sum(by_op.values())} in {len(by_op)}; differing (pasta, "
          f"torch.profiler): {dict(sorted(differ.items())[:10])}")
    outside = report(out, "op_summary")["summary"]["copies and memsets outside every operator"]
    ok = some("torch.profiler's copies and memsets inside operators", sum(by_op.values()))
    ok = expect("operators whose copies and memsets differ from torch.profiler's", len(differ),
                0) and ok
    return expect("copies and memsets outside every operator, pasta vs torch.profiler", outside,
                  theirs["copies_outside"]) and ok


def counted_kernels(path):
    """The kernels tests/gpu/count_kernels.py counted into `path`."""
    with open(path) as f:
        return json.load(f)["kernels"]


def expect_peak(out, max_memory_allocated):
    devices = report(out, "tensor_alloc")["tables"]["devices"]
    gpu = [r for r in devices if str(r["device"]) == "0"]
    # The report's MiB are bytes / 2^20 written with every digit: the bytes come back exactly.
    peak = round(gpu[0]["peak_live_mb"] * 1048576) if gpu else 0
    return expect("live-memory peak (bytes) = torch.cuda.max_memory_allocated", peak,
                  max_memory_allocated)


def expect_same_results(profiled, native, native_again, what=""):
    """The profiled run's checksum equals the native one's where two native runs agree
    bitwise, else lies within ten times their spread; `what` starts the lines."""
    deterministic = native["checksum"] == native_again["checksum"]
    print(f"  {what}native runs {'agree bitwise' if deterministic else 'differ'}: "
          f"{native['checksum']!r} / {native_again['checksum']!r}")
    if deterministic:
        return expect(f"{what}parameter checksum under pasta", profiled["checksum"],
                      native["checksum"])
    rel = abs(profiled["checksum"] - native["checksum"]) / max(abs(native["checksum"]), 1e-30)
    spread = abs(native_again["checksum"] - native["checksum"]) / max(abs(native["checksum"]), 1e-30)
    ok = rel <= 10 * spread
    print(f"{'ok  ' if ok else 'FAIL'} {what}parameter checksum under pasta within the native "
          f"spread: {rel:.3g} vs {spread:.3g}")
    return ok


def case_torch_resnet(build, out):
    """ResNet-18 steps under `pasta run --torch`: operator counts equal torch.profiler's, kernels
    attributed, copies and memsets charged to torch.profiler's operators, live-memory peak vs
    torch.cuda.max_memory_allocated, results unchanged."""
    ref_file = os.path.join(out, "torch_profiler_ops.json")
    profiled = torch_model(build, out, "--steps", "2")
    native = torch_model(build, out, "--steps", "2", "--op-counts", ref_file, pasta=False)
    counts = os.path.join(out, "torch_profiler_kernels.json")
    native_again = torch_model(build, out, "--steps", "2", pasta=False, count=counts)
    with open(ref_file) as f:
        theirs = json.load(f)
    ours = {r["operator"]: r["calls"] for r in report(out, "op_summary")["tables"]["operators"]}
    differ = {k: (ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs)
              if ours.get(k) != theirs.get(k)}
    print(f"  operators: pasta {len(ours)}, torch.profiler {len(theirs)}; calls pasta "
          f"{sum(ours.values())}, torch.profiler {sum(theirs.values())}")
    if differ:
        print("  differing (pasta, torch.profiler):", dict(sorted(differ.items())[:15]))
    ok = expect("operators whose call counts differ from torch.profiler's", len(differ), 0)
    ok = expect_attributed(out, counted_kernels(counts)) and ok
    ok = expect_copies(out, counts) and ok
    ok = expect_peak(out, profiled["max_memory_allocated"]) and ok
    return expect_same_results(profiled, native, native_again) and ok


def case_torch_gpt(build, out):
    """The GPT block under `pasta run --torch`: as many kernels as torch.profiler counts in the
    same script (a run of its own), each attributed, copies and memsets charged to torch.profiler's
    operators, memory peak, same results."""
    script = os.path.join(ROOT, "examples", "pytorch", "gpt_block.py")
    profiled = torch_model(build, out, script=script)
    native = torch_model(build, out, script=script, pasta=False)
    counts = os.path.join(out, "torch_profiler_kernels.json")
    native_again = torch_model(build, out, script=script, pasta=False, count=counts)
    ok = expect_attributed(out, counted_kernels(counts))
    ok = expect_copies(out, counts) and ok
    ok = expect_peak(out, profiled["max_memory_allocated"]) and ok
    return expect_same_results(profiled, native, native_again) and ok


def window_kernels(out_dir):
    """Kernel launches kernel_freq counted, and the window its report names."""
    freq = report(out_dir, "kernel_freq")
    return sum(r["launches"] for r in freq["tables"]["kernels"]), freq.get("window", "")


WINDOW_SCRIPT = os.path.join(ROOT, "tests", "gpu", "torch_window.py")


def pasta_window(build, out, name, mode, window, *extra, env=None):
    """`pasta run MODE [--capture-range WINDOW]` over torch_window.py EXTRA, verbose, its reports
    in OUT/NAME: the report directory, the script's JSON line and pasta's log."""
    d = os.path.join(out, name)
    proc = run([f"{build}/bin/pasta", "run", *mode,
                *(["--capture-range", window] if window else []), "-o", d, "--", sys.executable,
                WINDOW_SCRIPT, *extra],
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1", **(env or {})})
    return d, last_json(proc.stdout), proc.stderr


def case_torch_window(build, out):
    """Capture ranges on a torchvision ResNet-18 trained for 6 steps: steps:2-3 and
    cudaProfilerApi (torch.cuda.profiler.start/stop around steps 2-3) and nvtx:window (a
    torch.cuda.nvtx range over steps 2-3) count exactly the kernels torch.profiler's schedule
    records over steps 2-3, under --torch, the default pipeline, --torch --memory (instrumented
    inside the window only) and --torch --counters (replayed inside it only, every launch
    outside it left unmeasured); steps:2-3 also without --torch (the default pipeline,
    --memory, --counters: torch.optim's step hooks count the steps); a range that never opens
    says so and captures nothing; results unchanged throughout."""
    native = last_json(run([sys.executable, WINDOW_SCRIPT]).stdout)
    ref = last_json(run([sys.executable, WINDOW_SCRIPT, "--torch-profiler", "2-3"]).stdout)
    want = ref["kernels"]
    counts = os.path.join(out, "torch_profiler_kernels.json")
    run([sys.executable, COUNT_KERNELS, counts, WINDOW_SCRIPT])
    total = counted_kernels(counts)
    print(f"  torch.profiler, schedule(wait=1, warmup=1, active=2): {want} kernels; over the "
          f"whole run: {total}")
    ok = expect("torch.profiler's run: parameter checksum", ref["checksum"], native["checksum"])
    ok = some("torch.profiler's kernels in steps 2-3", want) and ok

    for name, mode, window, extra in (
            ("steps", ["--torch"], "steps:2-3", []),
            ("profiler_api", ["--torch"], "cudaProfilerApi", ["--profiler-api", "2-3"]),
            ("profiler_api_default", [], "cudaProfilerApi", ["--profiler-api", "2-3"]),
            ("nvtx", ["--torch"], "nvtx:window", ["--nvtx", "2-3"]),
            ("nvtx_default", [], "nvtx:window", ["--nvtx", "2-3"]),
            ("steps_memory", ["--torch", "--memory"], "steps:2-3", []),
            ("steps_counters", ["--torch", "--counters"], "steps:2-3", []),
            # Without --torch, torch::Steps counts the steps through torch.optim's hooks.
            ("steps_default", [], "steps:2-3", []),
            ("steps_memory_default", ["--memory"], "steps:2-3", []),
            ("steps_counters_default", ["--counters"], "steps:2-3", [])):
        d, res, stderr = pasta_window(build, out, name, mode, window, *extra)
        kernels, said = window_kernels(d)
        if kernels != want:
            ours = kernel_counts(d)
            differ = {k: (ours.get(k), ref["per_kernel"].get(k))
                      for k in set(ours) | set(ref["per_kernel"])
                      if ours.get(k) != ref["per_kernel"].get(k)}
            print(f"  {name}: launches that differ (pasta, torch.profiler):",
                  dict(sorted(differ.items())[:12]))
        ok = expect(f"{name}: kernels in the window", kernels, want) and ok
        ok = expect(f"{name}: the report names its window", said.startswith(
            f"capture range {window}:"), True) and ok
        ok = expect(f"{name}: parameter checksum", res["checksum"], native["checksum"]) and ok
        if "--torch" not in mode and window.startswith("steps:"):
            ok = expect(f"{name}: torch.optim's step hooks installed",
                        "optimizer step hooks installed" in stderr, True) and ok
        if "--torch" in mode and "--memory" not in mode:
            ops = {r["operator"]: r["calls"]
                   for r in report(d, "op_summary")["tables"]["operators"]}
            ok = expect(f"{name}: optimizer steps among the operators",
                        ops.get("Optimizer.step#SGD.step"), 2) and ok
            ok = expect_attributed(d, want) and ok
        if "--counters" in mode:  # the Range Profiler replays the window's launches alone
            counted = report(d, "op_counters")["summary"]
            ok = expect(f"{name}: launches with counters (measured or propagated)",
                        counted.get("measured", 0) + counted.get(
                            "propagated from a measured launch of the same signature", 0),
                        want) and ok
            # Counters keep CUPTI attached (no detach after the window): their callbacks see
            # every launch of the run, the window's measured and the others not.
            m = re.search(r"(\d+) launches outside the capture window were not measured",
                          stderr)
            if not expect(f"{name}: launches outside the window not measured (the run's less "
                          "the window's, torch.profiler)", int(m[1]) if m else 0, total - want):
                ok = False
                for line in stderr.splitlines():
                    if "hardware counters" in line:
                        print(f"    {line}")

    d, res, _ = pasta_window(build, out, "never", ["--torch"], "nvtx:no_such_range")
    partial = report(d, "op_summary").get("partial", "")
    ok = expect("a range never opened: said in the report", partial.startswith(
        "capture range nvtx:no_such_range never opened"), True) and ok
    ok = expect("... and nothing captured", report(d, "op_summary")["summary"]["kernels"], 0) and ok
    return expect("... results unchanged", res["checksum"], native["checksum"]) and ok


def case_torch_detach(build, out):
    """CUPTI detached at each cudaProfilerStop and attached again (PASTA_CUPTI_DETACH=every): a
    torchvision ResNet-18 profiled in two windows (steps 2 and 4, 200 ms apart) with
    an NVTX range around every step reports the same kernels, operators and NVTX ranges as with
    CUPTI kept attached, and as many kernels as torch.profiler records over two steady steps;
    the verbose log says CUPTI was detached at both windows' close; the same without a
    synchronisation before each close; and CUPTI detached for good after a steps:2-3 window (the
    default, PASTA_CUPTI_DETACH=last) reports what an attached one does; results unchanged.
    (Windows closer together than the 20 ms CUPTI takes to be attached again can be lost unseen:
    docs/user-guide.md.)"""
    native = last_json(run([sys.executable, WINDOW_SCRIPT]).stdout)
    ref = last_json(run([sys.executable, WINDOW_SCRIPT, "--torch-profiler", "2-3"]).stdout)
    want = ref["kernels"]
    print(f"  torch.profiler over steps 2-3: {want} kernels")
    ok = some("torch.profiler's kernels in steps 2-3", want)
    for mode in ([], ["--torch"]):
        seen = {}
        for detach in ("every", "off"):
            name = f"{'torch' if mode else 'default'}_detach{detach}"
            d, res, stderr = pasta_window(build, out, name, mode, "cudaProfilerApi",
                                          "--profiler-api", "2-2,4-4", "--nvtx-steps",
                                          "--pause-ms", "200", env={"PASTA_CUPTI_DETACH": detach})
            kernels, said = window_kernels(d)
            scopes = {r["scope"]: r["calls"] for r in report(d, "scope_time")["tables"]["scopes"]} \
                if not mode else {}
            ops = {r["operator"]: r["calls"]
                   for r in report(d, "op_summary")["tables"]["operators"]} if mode else {}
            m = re.search(r"CUPTI detached at (\d+) capture windows' close", stderr)
            print(f"  {name}: {kernels} kernels, {len(ops)} operators, scopes {scopes}, "
                  f"detached {m[1] if m else 'never'}")
            ok = expect(f"{name}: kernels in the two windows", kernels, want) and ok
            ok = expect(f"{name}: parameter checksum", res["checksum"], native["checksum"]) and ok
            ok = expect(f"{name}: detached at each window's close",
                        int(m[1]) if m else 0, 2 if detach == "every" else 0) and ok
            if mode:
                ok = expect_attributed(d, want) and ok
            seen[detach] = (kernels, scopes, ops)
        ok = expect(f"{'--torch' if mode else 'default'}: detached and attached runs report the "
                    "same kernels, NVTX ranges and operators", seen["every"], seen["off"]) and ok
    # No synchronisation after the steps: each window closes with its kernels still running,
    # and CUPTI is detached there all the same.
    d, _, _ = pasta_window(build, out, "default_no_sync", [], "cudaProfilerApi", "--profiler-api",
                           "2-2,4-4", "--no-sync", "--pause-ms", "200",
                           env={"PASTA_CUPTI_DETACH": "every"})
    kernels, _ = window_kernels(d)
    ok = expect("no sync before each window's close: kernels in the two windows", kernels,
                want) and ok
    # A steps window never opens again: CUPTI is detached for good after it, by default.
    seen = {}
    for detach in ("last", "off"):
        d, res, stderr = pasta_window(build, out, f"steps_{detach}", ["--torch"], "steps:2-3",
                                      env={"PASTA_CUPTI_DETACH": detach})
        kernels, _ = window_kernels(d)
        ops = {r["operator"]: r["calls"] for r in report(d, "op_summary")["tables"]["operators"]}
        ok = expect(f"steps:2-3, {detach}: kernels in the window", kernels, want) and ok
        ok = expect(f"steps:2-3, {detach}: detached after the window",
                    "CUPTI detached after the capture window closed" in stderr,
                    detach == "last") and ok
        ok = expect(f"steps:2-3, {detach}: parameter checksum", res["checksum"],
                    native["checksum"]) and ok
        ok = expect_attributed(d, want) and ok
        seen[detach] = (kernels, ops)
    ok = expect("steps:2-3: detached and attached runs report the same kernels and operators",
                seen["last"], seen["off"]) and ok
    return ok


def sync_spans(out_dir):
    """The timeline's synchronisations: how many of each kind on each stream row."""
    return collections.Counter((e["name"].removeprefix("sync "), e["tid"])
                               for e in timeline(out_dir) if e.get("cat") == "sync")


def case_torch_syncs(build, out):
    """Synchronisations from the API callbacks (the default) against CUPTI's synchronization
    records (PASTA_CUPTI_SYNC=records), on a torchvision ResNet-18 whose every step also
    synchronises a stream, an event and a side stream, and makes each stream wait on the other's
    event. In a cudaProfilerApi window over steps 2-3 and over the whole run, both show the same
    synchronisations of each kind on each stream, but for event synchronisations without a
    stream: CUPTI's records also show some that no synchronising call of the program made (one a
    step in this script), which the callbacks cannot see. The callbacks show at least the
    script's own synchronisations of each kind, and a stream's synchronisations on a stream that
    ran kernels (CUPTI's own stream id, also for the default stream). Results unchanged."""
    native = last_json(run([sys.executable, WINDOW_SCRIPT, "--syncs"]).stdout)
    made = native["syncs"]
    print(f"  synchronising calls the script made in 6 steps: {made}")
    ok = True
    for window in ("cudaProfilerApi", None):
        what = "steps 2-3" if window else "whole run"
        extra = ["--profiler-api", "2-3"] if window else []
        seen = {}
        for source in ("callbacks", "records"):
            d, res, _ = pasta_window(build, out, f"{source}_{'window' if window else 'whole'}", [],
                                     window, "--syncs", *extra, env={"PASTA_CUPTI_SYNC": source})
            ok = expect(f"{source}, {what}: parameter checksum", res["checksum"],
                        native["checksum"]) and ok
            seen[source] = sync_spans(d)
            print(f"  {source}, {what}: {dict(sorted(seen[source].items()))}")
            if source == "callbacks":
                kernel_streams = {e["tid"] for e in timeline(d) if e.get("cat") == "kernel"}
                synced = {tid for (kind, tid) in seen[source] if kind == "stream"}
                ok = expect(f"{what}: streams synchronised that ran no kernel (kernels ran on "
                            f"{sorted(kernel_streams)})", sorted(synced - kernel_streams),
                            []) and ok
        calls, records = seen["callbacks"], seen["records"]
        ok = expect(f"{what}: callbacks and records, the same synchronisations per kind and "
                    "stream (but event synchronisations without a stream)",
                    {k: n for k, n in calls.items() if k != ("event", 0)},
                    {k: n for k, n in records.items() if k != ("event", 0)}) and ok
        # CUDA makes one event synchronisation a step inside another call of this script: the
        # records show it, the callbacks (the program's own calls) cannot (docs/benchmarks.md).
        # Exactly one a step in steps 2-3; over the whole run one a step from the second on
        # at least (an H200 run, PyTorch 2.11: 5 in 6 steps, the first step made none), with
        # whatever CUDA makes at start-up, its number CUDA's own.
        extra = records[("event", 0)] - calls[("event", 0)]
        steps = 2 if window else 6 - 1
        ok = expect(f"{what}: event synchronisations without a stream, records "
                    f"{records[('event', 0)]} less callbacks {calls[('event', 0)]}: one a step "
                    + ("(2)" if window else f"after the first ({steps}) at least"),
                    extra == steps if window else extra >= steps, True) and ok
        # Steps 2-3 of the 6 hold a third of the script's calls, but the final synchronisation.
        share = (lambda n: n * 2 // 6) if window else (lambda n: n)
        least = {"context": share(made["context"] - (1 if window else 0)),
                 "stream": share(made["stream"]),
                 "event (synchronize)": share(made["event"]), "event (wait)": share(made["wait"])}
        got = {"context": sum(n for (k, _), n in calls.items() if k == "context"),
               "stream": sum(n for (k, _), n in calls.items() if k == "stream"),
               "event (synchronize)": calls[("event", 0)],
               "event (wait)": sum(n for (k, t), n in calls.items() if k == "event" and t)}
        for kind, n in least.items():
            ok = expect(f"{what}: {kind} synchronisations {got[kind]}, at least the script's {n}",
                        got[kind] >= n, True) and ok
    return ok


def case_torch_libtorch(build, out):
    """A libtorch program with the profiler built in: every kernel attributed to an operator."""
    if not os.path.exists(f"{build}/examples/libtorch_train"):
        print("libtorch_train was not built (no PyTorch with CUDA libraries)")
        return SKIP
    res = last_json(run([f"{build}/examples/libtorch_train", "20"], profiled_env(out)).stdout)
    print("  libtorch_train:", res)
    ops = {r["operator"]: r for r in report(out, "op_summary")["tables"]["operators"]}
    ok = expect("aten::addmm calls (2 layers x 20 steps)", ops.get("aten::addmm", {}).get("calls"), 40)
    # No count by another route: the profiler is built into this program (no run without it
    # for torch.profiler or ncu to count), and libtorch's kernels per operator are cuBLAS's
    # choice. Its kernels' number is not known here; each must still have its operator.
    return expect_attributed(out, None) and ok


def graph_summary(stderr):
    """What nv::Cupti's verbose summary says of CUDA graphs: {"records": device records of graph
    launches, "at_capture": those charged to the operator current at capture}; {} if absent."""
    for line in stderr.splitlines():
        m = re.search(r"CUDA graphs: .*?(\d+) device records of graph launches, (\d+) charged "
                      r"to the operator current at capture", line)
        if m:
            return {"records": int(m[1]), "at_capture": int(m[2])}
    return {}


TORCH_GRAPHS = os.path.join(ROOT, "tests", "gpu", "torch_graphs.py")


def case_torch_graph_capture(build, out):
    """A program's own CUDA graph (torch.cuda.graph, tests/gpu/torch_graphs.py --manual): the
    kernels of its replays are charged to the operators current at capture (aten::sigmoid_,
    aten::exp_), none to record_function("replay"), the operator that launches them."""
    replays = 7
    proc = run([f"{build}/bin/pasta", "run", "--torch", "-o", out, "--", sys.executable,
                TORCH_GRAPHS, "--manual", "--replays", str(replays)],
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1"})
    print("  torch_graphs.py --manual:", last_json(proc.stdout))
    ops = {r["operator"]: r for r in report(out, "op_summary")["tables"]["operators"]}
    ok = True
    for op in ("aten::sigmoid_", "aten::exp_"):
        row = ops.get(op, {})
        # A call and a kernel before the graph, a call captured, then a kernel per replay.
        ok &= expect(f"{op} (calls, kernels)", (row.get("calls"), row.get("kernels")),
                     (2, 1 + replays))
    ok &= expect("record_function('replay') (calls, kernels)",
                 (ops.get("replay", {}).get("calls"), ops.get("replay", {}).get("kernels")), (1, 0))
    return expect("graph records, and those charged to the operator at capture",
                  graph_summary(proc.stderr), {"records": 2 * replays, "at_capture": 2 * replays}) \
        and ok


def case_torch_graphs(build, out):
    """torch.compile(mode="reduce-overhead") trains a transformers GPT-2 (CUDA graph trees,
    tests/gpu/torch_graphs.py): the kernels of each steady-state step under `pasta run --torch`
    equal, by name, those torch.profiler (on from the start, as pasta is) sees in the first of
    them in a run of its own, and so do its copies and memsets; torch.profiler attached at that
    step alone sees the graph's device-to-device copy as a kernel (memcpy128), so against it the
    totals are compared; every device record of a graph launch is charged to the operator current
    at its capture."""
    warmup, steps = 5, 3
    proc = run([f"{build}/bin/pasta", "run", "--torch", "-o", out, "--", sys.executable,
                TORCH_GRAPHS, "--warmup", str(warmup), "--steps", str(steps), "--nvtx"],
               {"PASTA_PRINT": "none", "PASTA_VERBOSE": "1", "TORCH_LOGS": "perf_hints"})
    for line in proc.stderr.splitlines():  # why Inductor would not use CUDA graphs, if it says
        if "cudagraph" in line.lower() and not line.startswith("pasta: "):
            print("  " + line)
    print("  torch_graphs.py under pasta:", last_json(proc.stdout))
    per_step = kernels_per_scope(out, "step ")
    print("  pasta: kernels per step (NVTX ranges):", per_step)
    mine = device_work_in_scope(out, f"step {warmup}")
    # torch.profiler on from the start, as pasta is: CUPTI reports the same device work. Attached
    # at step W alone it reports a graph's device-to-device copy as the copy's kernel (memcpy128)
    # instead: shown, the totals compared.
    ref = last_json(run([sys.executable, TORCH_GRAPHS, "--warmup", str(warmup), "--steps", "1",
                         "--from-start", "--torch-profiler",
                         os.path.join(out, "torch_profiler_from_start.json")]).stdout)
    late = last_json(run([sys.executable, TORCH_GRAPHS, "--warmup", str(warmup), "--steps", "1",
                          "--torch-profiler", os.path.join(out, "torch_profiler.json")]).stdout)
    for label, r in (("on from the start", ref), (f"attached at step {warmup}", late)):
        print(f"  torch.profiler {label}:", {k: v for k, v in r.items() if k != "kernel_names"})
        print_name_diff(f"pasta's step {warmup}", mine["kernels"], f"torch.profiler's ({label})",
                        collections.Counter(r.get("kernel_names", {})))
    print(f"  pasta's step {warmup}: {sum(mine['kernels'].values())} kernels, "
          f"{mine['copies']} copies, {mine['memsets']} memsets")
    ok = expect("steps seen as NVTX scopes", len(per_step), warmup + steps)
    ok &= some(f"torch.profiler's kernels in step {warmup}", ref.get("kernels_in_step"))
    steady = [per_step.get(f"step {i}") for i in range(warmup, warmup + steps)]
    ok &= expect(f"kernels in steps {warmup}..{warmup + steps - 1}, pasta (each = torch.profiler's "
                 f"step {warmup}, on from the start)", steady, [ref.get("kernels_in_step")] * steps)
    ok &= expect(f"kernels of step {warmup} by name, pasta = torch.profiler (on from the start)",
                 mine["kernels"] == collections.Counter(ref.get("kernel_names", {})), True)
    ok &= expect(f"copies and memsets of step {warmup}, pasta (= torch.profiler's, on from the start)",
                 (mine["copies"], mine["memsets"]),
                 (ref.get("copies_in_step"), ref.get("memsets_in_step")))
    late_kernels = collections.Counter(late.get("kernel_names", {}))
    copy_kernels = collections.Counter(
        {name: n for name, n in late_kernels.items() if name.startswith("memcpy")})
    ok &= expect(f"kernels of step {warmup} by name, pasta = torch.profiler attached at step "
                 f"{warmup}, less its {sum(copy_kernels.values())} copy kernels",
                 mine["kernels"] == late_kernels - copy_kernels, True)
    ok &= expect(f"kernels + copies + memsets of step {warmup}, pasta (= torch.profiler's, "
                 f"attached at step {warmup})",
                 sum(mine["kernels"].values()) + mine["copies"] + mine["memsets"],
                 sum(late.get(k, 0) for k in ("kernels_in_step", "copies_in_step",
                                              "memsets_in_step")))
    graphs = graph_summary(proc.stderr)
    print("  CUDA graphs, as pasta saw them:", graphs)
    ok &= expect("device records of graph launches seen (the model ran from CUDA graphs)",
                 graphs.get("records", 0) > 0, True)
    ok &= expect("graph records charged to the operator current at capture (= all)",
                 graphs.get("at_capture"), graphs.get("records"))
    return expect_attributed_share(out) and ok


def expect_attributed_share(out):
    """No kernel lost its operator record (a graph's kernels name operators of their capture,
    long before they run); how many kernels went unattributed is shown (compilation and the
    warm-up of CUDA graph trees may launch some outside operators), not checked."""
    summary = report(out, "op_summary")["summary"]
    unattributed = report(out, "op_summary")["tables"].get("unattributed", [])
    print(f"  kernels attributed to an operator: {summary['kernels attributed to an operator']} "
          f"of {summary['kernels']}; unattributed:",
          [(r["kernel"][:60], r["launches"]) for r in unattributed][:10])
    return expect("kernels whose operator record was evicted",
                  summary["kernels whose operator record was evicted"], 0)
def inductor_metadata(cache):
    """What Inductor's own generated code says, read here independently of pasta: in every
    compiled graph's module under the cache folder, each Triton kernel's source hash (the stem
    of its '# kernel path:' file), its name and the operators of its 'Original ATen: [...]'
    comment. {hash: (name, [operators as Inductor spells them])}, and the same keyed on
    "module file:kernel name"."""
    kernels = {}
    define = re.compile(r"^(\w+) = async_compile\.triton\(")
    for folder, _, files in os.walk(cache):
        for name in files:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(folder, name), errors="replace") as f:
                lines = f.read().splitlines()
            path, ops = None, []
            for line in lines:
                if line.startswith("# kernel path: "):
                    path, ops = line[len("# kernel path: "):].strip(), []
                elif line.startswith("#") and "Original ATen: [" in line and path:
                    inner = line.split("Original ATen: [", 1)[1].rsplit("]", 1)[0]
                    ops = [o.strip() for o in inner.split(",") if o.strip()]
                elif define.match(line) and path:
                    stem = os.path.basename(path).split(".py")[0]
                    kernel = define.match(line).group(1)
                    kernels[stem] = (kernel, ops)
                    kernels[os.path.join(folder, name) + ":" + kernel] = (kernel, ops)
                    path, ops = None, []
    return kernels


def case_torch_compile(build, out):
    """A torch.compile'd transformers GPT-2 (default mode), trained for 3 steps under `pasta run
    --torch`: every Triton kernel is attributed to the aten operators Inductor's own generated
    code names for it (read from the compiled graphs' modules, keyed on the source hash), their
    launches equal the Triton kernels the device ran, the last step's Triton kernels by name
    equal those torch.profiler records in that step (the second native run), and the results
    are unchanged."""
    script = os.path.join(ROOT, "tests", "gpu", "torch_compile.py")
    steps = 3  # torch_compile.py's default
    runs = {}
    # Each run marks its steps as NVTX ranges; the second native one has torch.profiler record
    # the last step's kernels (it reads the device's records and changes no result).
    for label, pasta, extra in (("profiled", True, ["--nvtx"]), ("native", False, ["--nvtx"]),
                                ("native_again", False, ["--nvtx", "--torch-profiler"])):
        os.makedirs(out + "-inductor", exist_ok=True)
        cache = tempfile.mkdtemp(prefix=f"{label}-", dir=out + "-inductor")
        # One process: compile workers would load the injection library too and write reports.
        env = {"TORCHINDUCTOR_CACHE_DIR": cache, "TORCHINDUCTOR_COMPILE_THREADS": "1"}
        if pasta:
            env["PASTA_VERBOSE"] = "1"
        cmd = [sys.executable, script, *extra]
        if pasta:
            cmd = [f"{build}/bin/pasta", "run", "--torch", "-o", out, "--"] + cmd
        proc = run(cmd, {"PASTA_PRINT": "none", **env}, timeout=500)
        if pasta:
            with open(os.path.join(out, "pasta-stderr.log"), "w") as f:
                f.write(proc.stderr)
            lines = [l for l in proc.stderr.splitlines() if "inductor" in l]
            print(f"  pasta said about Inductor ({len(lines)} lines, all in pasta-stderr.log):")
            for line in lines if len(lines) <= 8 else lines[:6] + ["  ..."] + lines[-2:]:
                print("    " + line)
        runs[label] = (last_json(proc.stdout), cache)
    profiled, cache = runs["profiled"]
    meta = inductor_metadata(cache)
    with open(os.path.join(out, "inductor_metadata.json"), "w") as f:
        json.dump(meta, f, indent=1)
    by_hash = {k: v for k, v in meta.items() if "/" not in k}
    print(f"  Inductor's metadata: {len(by_hash)} Triton kernels in the compiled graphs' modules, "
          f"{sum(1 for _, ops in by_hash.values() if not ops)} of them naming no operator")

    summary = report(out, "op_summary")["summary"]
    tables = report(out, "op_summary")["tables"]
    rows = tables.get("compiled_kernels", [])
    print("  op_summary:", {k: v for k, v in summary.items() if k.startswith("kernels")})
    ok = expect("compiled kernels reported (at least one)", bool(rows), True)

    def aten(names):  # Inductor's "aten.add" as operator events spell it, "aten::add"
        return sorted(n if "::" in n or "." not in n else n.replace(".", "::", 1) for n in names)

    wrong, unnamed, unknown, by_name = [], [], [], []
    for r in rows:
        ours = [o for o in r["operators"].split(", ") if o]
        key = r["source"]
        if key not in meta and r["graph"] + ":" + r["kernel"] in meta:
            by_name.append(r["kernel"])
            key = r["graph"] + ":" + r["kernel"]
        if key not in meta:
            unknown.append((r["kernel"], r["source"]))
            continue
        name, theirs = meta[key]
        if not theirs:
            unnamed.append(r["kernel"])
            if ours or r["attribution"] != "unattributed":
                wrong.append((r["kernel"], ours, theirs))
        elif sorted(ours) != aten(theirs) or r["attribution"] != "fused by compiler" or \
                name != r["kernel"]:
            wrong.append((r["kernel"], ours, theirs))
    if wrong:
        print("  differing from Inductor's metadata (kernel, pasta, Inductor):", wrong[:10])
    if unknown:
        print("  kernels whose source hash no compiled graph's module lists:", unknown[:10])
    if by_name:
        print(f"  kernels whose file hash the module's '# kernel path' does not give, found by "
              f"name within their graph's module ({len(by_name)}):", by_name[:10])
    if unnamed:
        print(f"  kernels Inductor names no operator for ({len(unnamed)}; reported unattributed):",
              unnamed[:10])
    ok = expect("compiled kernels whose operators differ from Inductor's metadata", len(wrong), 0) \
        and ok
    ok = expect("compiled kernels not found in Inductor's metadata", len(unknown), 0) and ok
    named = [r for r in rows if meta.get(r["source"], meta.get(r["graph"] + ":" + r["kernel"],
                                                                ("", [])))[1]]
    ok = expect("compiled kernels naming at least one operator, of those Inductor names some for",
                sum(1 for r in named if r["operators"]), len(named)) and ok

    # Every Triton kernel the device ran is one of them: launches per name agree.
    triton = {k: v for k, v in kernel_counts(out).items() if k.startswith("triton_")}
    attributed = {}
    for r in rows:
        attributed[r["kernel"]] = attributed.get(r["kernel"], 0) + r["kernels"]
    ok = expect("Triton kernel runs (kernel_freq) = runs of the compiled kernels (op_summary)",
                sum(triton.values()), sum(attributed.values())) and ok
    differ = {k: (triton.get(k), attributed.get(k)) for k in set(triton) | set(attributed)
              if triton.get(k) != attributed.get(k)}
    ok = expect("Triton kernel names whose runs differ", sorted(differ)[:10], []) and ok
    outside = [r["kernel"] for r in tables.get("unattributed", []) if r["kernel"].startswith("triton_")]
    ok = expect("Triton kernels outside every operator", outside, []) and ok
    # By another route: the last step, long after compiling and tuning launched what they
    # launch, as torch.profiler saw it in a run of its own, against pasta's kernels in that
    # step's NVTX range.
    def triton_kernels(names):
        return {k: n for k, n in names.items() if k.startswith("triton_")}
    theirs = triton_kernels(runs["native_again"][0].get("last_step_kernels", {}))
    mine = triton_kernels(device_work_in_scope(out, f"step {steps - 1}")["kernels"])
    print(f"  Triton kernels in the last step: torch.profiler {sum(theirs.values())} "
          f"({len(theirs)} names), pasta {sum(mine.values())}")
    ok = expect("torch.profiler saw Triton kernels in the last step (the model ran compiled)",
                sum(theirs.values()) > 0, True) and ok
    ok = expect("Triton kernels of the last step by name, pasta = torch.profiler",
                dict(sorted(mine.items())), dict(sorted(theirs.items()))) and ok

    native, native_again = runs["native"][0], runs["native_again"][0]
    print(f"  losses: pasta {profiled['loss']}, native {native['loss']}")
    if native["checksum"] == native_again["checksum"] or \
            profiled["checksum"] == native["checksum"]:
        return expect_same_results(profiled, native, native_again) and ok
    rel = abs(profiled["checksum"] - native["checksum"]) / max(abs(native["checksum"]), 1e-30)
    return expect("parameter checksum under pasta within 1e-6 (native runs differ too)",
                  rel <= 1e-6, True) and ok


def case_diff_compile(build, out):
    """`pasta diff` of a transformers GPT-2 trained eager against torch.compile'd (default
    mode, tests/gpu/diff_steps.py), each profiled over the same timed steps (--capture-range):
    the changes per module (per operator where the reports have no module_summary) add up to
    the change in kernel device time per step torch.profiler measures in each native run (one
    more round under it, after the timed ones), within 5% of the eager run's; the compiled
    run's Triton kernels are changes that replaced eager kernels; the page and its JSON are
    written. The change in the program's own step time is printed beside them, not checked:
    it holds the GPU's idle time between kernels, and the same step's time varies between
    processes by more than its spread within one (DESIGN.md: 15-24 ms)."""
    script = os.path.join(ROOT, "tests", "gpu", "diff_steps.py")
    warmup, rounds, per_round = 3, 5, 4
    window = f"steps:{warmup}-{warmup + rounds * per_round - 1}"
    runs = {}
    for mode in ("eager", "compiled"):
        cmd = [sys.executable, script, "--warmup", str(warmup), "--rounds", str(rounds),
               "--steps", str(per_round)] + (["--compile"] if mode == "compiled" else [])
        for label in ("native", "profiled"):
            # A fresh Inductor cache each: every run compiles, as a user's first run would.
            env = {"TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix=f"{mode}-{label}-", dir=out),
                   "TORCHINDUCTOR_COMPILE_THREADS": "1", "PASTA_PRINT": "none",
                   "PASTA_VERBOSE": "1"}
            pasta = [f"{build}/bin/pasta", "run", "--torch", "--capture-range", window, "-o",
                     os.path.join(out, mode), "--"] if label == "profiled" else []
            proc = run(pasta + cmd + ([] if pasta else ["--kernel-ms"]), env, timeout=900)
            runs[(mode, label)] = last_json(proc.stdout)
            if pasta:
                with open(os.path.join(out, f"{mode}-stderr.log"), "w") as f:
                    f.write(proc.stderr)
                for line in proc.stderr.splitlines():
                    if "inductor: " in line and ("places seen" in line or "extern" in line or
                                                 "name no nn.Module" in line):
                        print(f"  {mode}, profiled: {line.strip()}")
            r = runs[(mode, label)]
            print(f"  {mode}, {label}: {r['mean_ms']:.3f} ms a step (sd {r['stdev_ms']:.3f} over "
                  f"{rounds} rounds of {per_round}), loss {r['loss']:.4f}")
    page = os.path.join(out, "diff.html")
    proc = run([f"{build}/bin/pasta", "diff", os.path.join(out, "eager"),
                os.path.join(out, "compiled"), "-o", page], check=False, timeout=300)
    print("\n".join("  " + line for line in proc.stdout.splitlines()[:60]))
    ok = expect("pasta diff: exit code", proc.returncode, 0)
    if not ok:
        print(proc.stderr)
        return False
    with open(os.path.splitext(page)[0] + ".json") as f:
        doc = json.load(f)
    steps = rounds * per_round
    ok &= expect("per step, every profiled step found in both runs",
                 (doc["unit"], doc["a"]["steps"], doc["b"]["steps"]), ("step", [steps], [steps]))
    eager, compiled = runs[("eager", "native")], runs[("compiled", "native")]
    measured = compiled["mean_ms"] - eager["mean_ms"]
    noise = 3 * ((eager["stdev_ms"] ** 2 + compiled["stdev_ms"] ** 2) / rounds) ** 0.5
    truth = compiled["kernel_ms"] - eager["kernel_ms"]
    slack = 0.05 * eager["kernel_ms"]
    if doc["modules"]:
        level = "modules' own device time, (no module) included"
        parts = sum(r["self_delta_ms"] for r in doc["modules"])
        ok &= expect("the answer names modules", bool(doc["explained"]), True)
    else:
        level = "operators' device self time (these reports have no module_summary)"
        parts = sum(r["delta_ms"] for r in doc["operators"])
    device = doc["device"]
    print(f"  the program's own step: {eager['mean_ms']:.3f} -> {compiled['mean_ms']:.3f} ms, "
          f"{measured:+.3f} ms +- {noise:.3f} (3 sd of the difference of the round means; "
          f"not checked)")
    print(f"  torch.profiler, kernel device time per step: {eager['kernel_ms']:.3f} -> "
          f"{compiled['kernel_ms']:.3f} ms ({truth:+.3f})")
    print(f"  pasta, device time per step: {device['a_ms']:.3f} -> {device['b_ms']:.3f} ms "
          f"({device['delta_ms']:+.3f}); sum of the changes of the {level}: {parts:+.3f} ms")
    print(f"  pasta's answer: {doc['summary']}")
    gap = abs(parts - truth)
    good = gap <= slack
    print(f"{'ok  ' if good else 'FAIL'} the changes add up to torch.profiler's change of kernel "
          f"time: |{parts:+.3f} - ({truth:+.3f})| = {gap:.3f} ms <= {slack:.3f} (5% of eager's)")
    ok &= good
    fused = [c for c in doc["changes"] if c["gone"] and
             any(k["kernel"].startswith("triton_") for k in c["new"])]
    for c in fused[:5]:
        print(f"  kernels {c['kind']} in {c['name'] or 'the run'}: "
              f"{', '.join(k['short'] for k in c['gone'])} -> "
              f"{', '.join(k['short'] for k in c['new'])} ({c['delta_ms']:+.3f} ms a step)")
    ok &= expect("changes where Triton kernels replaced eager ones (at least one)", bool(fused),
                 True)
    if os.environ.get("OUT") and os.path.exists(page):  # run.sh's folder: the page comes back
        for f in (page, os.path.splitext(page)[0] + ".json"):
            shutil.copy(f, os.path.join(os.environ["OUT"], "diff_compile." + f.rsplit(".", 1)[1]))
    return expect("the page", os.path.exists(page), True) and ok


def expect_tensor_counts(out, truth):
    rows = {int(r["address"], 16): r for r in report(out, "tensor_hotness")["tables"]["tensors"]}
    ok = True
    for name, t in truth.items():
        r = rows.get(t["address"], {})
        keys = [k for k in ("bytes", "reads", "writes", "read_bytes", "write_bytes") if k in t]
        got = {k: r.get(k) for k in keys}
        want = {k: t[k] for k in keys}
        ok = expect(f"tensor {name} ({r.get('allocated_by')})", got, want) and ok
    print("  tensor_hotness summary:", report(out, "tensor_hotness")["summary"])
    return ok


def case_torch_hotness(build, out):
    """Accesses per tensor, exact, on tensor_access (known loads and stores per tensor),
    with nv::Sanitizer + torch::Aten built into the program."""
    if not os.path.exists(f"{build}/examples/tensor_access_pasta"):
        print("tensor_access_pasta was not built (no PyTorch with CUDA, or no Sanitizer API)")
        return SKIP
    res = last_json(run([f"{build}/examples/tensor_access_pasta"],
                        profiled_env(out, PASTA_PAGE_BYTES="512")).stdout)
    native = last_json(run([f"{build}/examples/tensor_access"]).stdout)
    ok = expect("checksum unchanged", res["checksum"], native["checksum"])
    truth = {}
    for name in ("x", "hot", "y"):
        t = res[name]
        truth[name] = {"address": t["address"], "bytes": t["bytes"], "reads": t["reads"],
                       "writes": t["writes"], "read_bytes": 4 * t["reads"],
                       "write_bytes": 4 * t["writes"]}
    return expect_tensor_counts(out, truth) and ok


def case_torch_hotness_python(build, out):
    """`pasta run --torch --memory` on a Python script: bytes read and written per tensor,
    exact (a fill writes every byte once, a copy reads its source once)."""
    if not os.path.exists(f"{build}/inject/libpasta_torch_memory.so"):
        print("libpasta_torch_memory.so was not built (no Compute Sanitizer API)")
        return SKIP
    script = os.path.join(ROOT, "tests", "gpu", "tensor_bytes.py")
    proc = run([f"{build}/bin/pasta", "run", "--torch", "--memory", "-o", out, "--",
                sys.executable, script], {"PASTA_PRINT": "none", "PASTA_PAGE_BYTES": "512"})
    res = last_json(proc.stdout)
    native = last_json(run([sys.executable, script]).stdout)
    ok = expect("checksum unchanged", res["checksum"], native["checksum"])
    return expect_tensor_counts(out, res["tensors"]) and ok


def case_contexts(build, out):
    """4 host threads, each in a CUDA context of its own (cuCtxCreate) on one GPU, with
    4 more threads on streams of the primary context: exact counts, same checksums."""
    args = ["--contexts", "4", "--threads", "4", "--per-thread", "50"]
    plain = run([f"{build}/examples/launches"] + args).stdout
    profiled = run([f"{build}/examples/launches_pasta"] + args, profiled_env(out)).stdout
    ok = expect_counts(out, sequence_counts(devices=5, threads=4, per_thread=50))
    injected = run([f"{build}/bin/pasta", "run", "-o", out + "/inj", "--",
                    f"{build}/examples/launches"] + args, {"PASTA_PRINT": "none"}).stdout
    ok &= expect_counts(out + "/inj", sequence_counts(devices=5, threads=4, per_thread=50))
    ok &= expect("output with the in-binary profiler", profiled, plain)
    ok &= expect("output under pasta run", injected, plain)
    sums = {l.split()[0]: float(l.split()[-1]) for l in plain.splitlines() if "checksum" in l}
    return expect("4 contexts give 4 times one sequence's checksum",
                  abs(sums["contexts"] - 4 * sums["device"]) <= 1e-9 * abs(sums["contexts"]),
                  True) and ok


def numbers(text, keys=None):
    """The results a program printed: every number on its checksum lines, or the
    values of `keys` from its last JSON line."""
    if keys:
        j = last_json(text)
        return [j[k] for k in keys]
    def number(word):
        try:
            return float(word)
        except ValueError:
            return None
    return [n for line in text.splitlines() if "checksum" in line or line.startswith("y ")
            for n in map(number, line.replace(",", " ").split()) if n is not None]


# Pipelines of `pasta run` for the results matrix: (name, options, the tool whose
# report must be there, whether it needs PyTorch).
MATRIX_PIPELINES = [
    ("KernelFreq", ["-t", "kernel_freq"], "kernel_freq", False),
    ("Timeline", ["-t", "timeline"], "timeline", False),
    ("MemHotness GpuBucketing", ["--memory", "-t", "mem_hotness"], "mem_hotness", False),
    ("MemHotness Cpu", ["--memory", "--host-reduction", "-t", "mem_hotness"], "mem_hotness", False),
    ("OpSummary", ["--torch", "-t", "op_summary"], "op_summary", True),
]


def matrix_examples(build):
    """(name, argv, JSON keys or None for checksum lines, uses PyTorch, kernels it launches:
    a number the program's code gives, "ncu" or "torch.profiler" to count them by, or None)."""
    py = sys.executable
    # launches.cu: the main sequence in the primary context and in each of 2 more, 4 threads
    # of 50 saxpy each, and a graph of 5 scale kernels run twice after a fill of its own.
    graph_run = {"fill": 1, "scale": 2 * 5}
    launches = sum(sequence_counts(devices=3, threads=4, per_thread=50).values()) + \
        sum(graph_run.values())
    return [
        ("launches (threads, graph, contexts)",
         [f"{build}/examples/launches", "--threads", "4", "--per-thread", "50", "--graph", "2",
          "--contexts", "2"], None, False, launches),
        ("uvm_advice (managed memory)", [f"{build}/examples/uvm_advice", "--mb", "64"],
         ["checksum"], False, 1 + 3),  # init, then axpy 3 times
        ("access_pattern", [f"{build}/examples/access_pattern"], None, False,
         len(ACCESSES_PER_KERNEL)),
        ("conv (cuDNN)", [f"{build}/examples/conv"], None, False, "ncu"),
        # Leaves by std::_Exit (PyTorch's static destructors abort at exit): no
        # exit hook runs, so an injected profiler writes no report.
        ("tensor_access (libtorch)", [f"{build}/examples/tensor_access"], ["checksum"], True,
         None),
        ("ResNet-18 step (PyTorch)", [py, os.path.join(ROOT, "tests", "gpu", "torch_model.py"),
                                      "--steps", "1", "--batch", "4"], ["checksum"], True,
         "torch.profiler"),
        ("GPT block (PyTorch)", [py, os.path.join(ROOT, "examples", "pytorch", "gpt_block.py"),
                                 "--steps", "2"], ["loss", "checksum"], True, "torch.profiler"),
    ]


LEAVES_BY_EXIT = {"tensor_access (libtorch)"}


def matrix_launches(how, argv, out):
    """The kernels an example of the results matrix launches: `how` as matrix_examples() gives
    it; Nsight Compute's count on the plain program, or torch.profiler's in a run of its own
    (tests/gpu/count_kernels.py); SKIP without ncu."""
    if how == "ncu":
        counts = ncu_launches(argv, os.path.join(out, "ncu"))
        return counts if counts is SKIP else sum(counts.values())
    if how == "torch.profiler":
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "torch_profiler_kernels.json")
        run([argv[0], COUNT_KERNELS, path, *argv[1:]])
        return counted_kernels(path)
    return how


def pipeline_launches(d, tool):
    """The kernel launches a results-matrix cell's report counts: kernel_freq's launches, the
    timeline's kernels, op_summary's kernels, or, for mem_hotness, the launches the Sanitizer
    handler instrumented and the graph kernels it let run uninstrumented; None if unreadable."""
    try:
        if tool == "kernel_freq":
            return report(d, "kernel_freq")["summary"].get("launches")
        if tool == "timeline":
            return sum(1 for e in timeline(d) if e.get("cat") == "kernel")
        if tool == "op_summary":
            return report(d, "op_summary")["summary"].get("kernels")
        summary = report(d, "sanitizer")["summary"]
        return summary.get("launches instrumented", 0) + summary.get(
            "graph kernel launches (run uninstrumented)", 0)
    except (OSError, ValueError, KeyError):
        return None


def case_results_matrix(build, out):
    """Every example prints the same results with and without each pipeline; each
    pipeline (pasta run -t) writes its tool's report and no other tool's, counting the
    kernels the example launches (its code's count, ncu's or torch.profiler's). An example
    that leaves by std::_Exit writes no report under any profiler: that pasta was loaded
    into it is what its process list shows."""
    ok = True
    table = []
    skip = [w for w in os.environ.get("MATRIX_SKIP", "").split(",") if w]
    skipped = []
    for name, argv, keys, torch, how in matrix_examples(build):
        why = "MATRIX_SKIP" if any(w in name for w in skip) else \
            "not built" if not os.path.exists(argv[0]) or (torch and not os.path.exists(
                f"{build}/inject/libpasta_torch.so")) else None
        if why:
            print(f"skip {name}: {why}")
            table.append([name, f"skipped ({why})"] + ["skipped"] * len(MATRIX_PIPELINES))
            skipped.append(name)
            continue
        native = numbers(run(argv).stdout, keys)
        again = numbers(run(argv).stdout, keys)
        row = [name, "bitwise" if native == again else "differ"]
        launches = matrix_launches(how, argv, os.path.join(out, f"{len(table)}-truth"))
        if launches is not SKIP and how is not None:
            ok = some(f"{name}: the kernels it launches", launches) and ok
        if launches is SKIP:
            print(f"skip {name}: its kernels cannot be counted here (no ncu)")
            table.append([name, "skipped (no count of its kernels)"] +
                         ["skipped"] * len(MATRIX_PIPELINES))
            skipped.append(name)
            continue
        for pname, options, tool, needs_torch in MATRIX_PIPELINES:
            if needs_torch and not torch:
                row.append("-")
                continue
            d = os.path.join(out, f"{len(table)}-{tool}-{len(row)}")
            proc = run([f"{build}/bin/pasta", "run", *options, "-o", d, "--"] + argv,
                       {"PASTA_PRINT": "none"}, check=False, timeout=150)
            got = numbers(proc.stdout, keys) if proc.returncode == 0 else None
            files = sorted(os.listdir(d)) if os.path.isdir(d) else []
            others = [f for f in files if f.endswith(".json") and f.split(".")[0] not in
                      (tool, "correlation", "gpu_bucketing", "cupti", "sanitizer", "aten",
                       "handlers", "run") and
                      not f.startswith(tool)]
            report_ok = any(f.startswith(tool + ".") for f in files) and not others
            cell_note = ""
            if name in LEAVES_BY_EXIT:
                # No report to read (no exit hook runs): pasta entered the process in the
                # run's list when it loaded, and wrote no report of any tool.
                listed = glob.glob(os.path.join(d, "processes", "*.json"))
                report_ok = len(listed) == 1 and not any(
                    f.endswith(".json") and f.split(".")[0] not in ("run", "job") for f in files)
                cell_note = f" (_Exit: no report; {len(listed)} process listed)"
            elif report_ok:
                seen = pipeline_launches(d, tool)
                if seen != launches:
                    report_ok = False
                    cell_note = f" ({tool}: {seen} launches, the example makes {launches})"
            if got is None:
                cell = "hung (killed after 150 s)" if proc.returncode == 124 else \
                    f"exit {proc.returncode}"
            elif got == native:
                cell = "same"
            elif native != again and all(abs(a - b) <= 10 * abs(c - b) + 1e-12 * abs(b)
                                         for a, b, c in zip(got, native, again)):
                cell = "within native spread"
            else:
                cell = "DIFFERENT"
            cell += cell_note
            if not report_ok:
                cell += f" (reports: {', '.join(files)})"
                print(f"  {pname} on {name}: expected {tool} only, counting {launches} launches"
                      f"{cell_note}; got {files}")
                ok = False
            if cell.startswith(("exit", "hung", "DIFFERENT")):
                print(f"  {pname} on {name}: native {native}, profiled {got}")
                print("  " + proc.stderr[-2000:].replace("\n", "\n  "))
                ok = False
            row.append(cell)
        table.append(row)
        print("row done: | " + " | ".join(row) + " |", flush=True)
    header = ["example", "native x2"] + [p[0] for p in MATRIX_PIPELINES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in table:
        print("| " + " | ".join(row) + " |")
    ok = expect("every example x pipeline keeps its results", ok, True)
    if skipped:
        print(f"{len(skipped)} examples skipped ({', '.join(skipped)}): the case is skipped, "
              "not passed")
    return combine(ok, SKIP if skipped else True)


def case_pipelines_table(build, out):
    """bin/pasta's table of pipelines names the tools each library has (all load here)."""
    proc = run([sys.executable, os.path.join(ROOT, "tests", "cli", "pipelines_test.py"), build,
                "--all"], check=False)
    print(proc.stdout)
    return expect("pipelines_test.py --all", proc.returncode, 0)


# --- a user's CUDA program, built the way the user guide says (issue: in-binary) ------------
def consumer_truth(stdout):
    """What tests/consumer/app.cu says it did: buffers, launches, accesses, checksum."""
    lines = stdout.splitlines()
    buffers = buffers_of(stdout)
    launch = next(l for l in lines if l.startswith("launches ")).split()[1:]
    launches = {launch[i]: int(launch[i + 1]) for i in range(0, len(launch), 2)}
    accesses = {}
    for l in lines:
        if l.startswith("accesses "):
            w = l.split()
            accesses[w[1]] = (int(w[3]), int(w[5]))
    return buffers, launches, accesses, checksums(stdout)


def case_consumer(build, out):
    """tests/consumer/app.cu built by a project of its own through FetchContent with CMake's
    default CUDA architectures (PTX the driver compiles) and no flag added by hand, once per
    composition the user guide shows; two non-blocking streams, managed memory, a scope.
    Exact launches (CUPTI) and accesses per buffer (Sanitizer with GpuBucketing or the host
    processor, device annotations, `pasta run --memory`), the checksum unchanged, no hang;
    the Sanitizer composition again with each factor changed alone."""
    cons = os.path.join(out, "build")
    cons90 = os.path.join(out, "build-sm90")
    configure = ["cmake", "-S", os.path.join(ROOT, "tests", "consumer"), "-G", "Ninja",
                 "-DPASTA_CONSUMER_MODE=fetchcontent", f"-DFETCHCONTENT_SOURCE_DIR_PASTA={ROOT}",
                 "-DPASTA_CONSUMER_REQUIRE_HANDLERS=ON"]
    jobs = str(os.cpu_count() or 4)
    run(configure + ["-B", cons])
    run(["cmake", "--build", cons, "--parallel", jobs])
    run(configure + ["-B", cons90, "-DCMAKE_CUDA_ARCHITECTURES=90"])
    run(["cmake", "--build", cons90, "--parallel", jobs, "--target", "app_sanitizer", "app_plain"])
    with open(os.path.join(cons, "CMakeCache.txt")) as f:
        archs = next((l.split("=", 1)[1].strip() for l in f
                      if l.startswith("CMAKE_CUDA_ARCHITECTURES:")), "?")
    rows, ok = [], True

    def one(label, argv, d, env=None, kind="accesses", app_args=()):
        nonlocal ok
        t0 = time.perf_counter()
        proc = run(argv + list(app_args), {**profiled_env(d), **(env or {})}, check=False,
                   timeout=180)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            print(f"FAIL {label}: exit {proc.returncode}" +
                  (" (killed after 180 s: a hang)" if proc.returncode == 124 else "") +
                  f"\n{proc.stderr[-2000:]}")
            rows.append((label, "FAILED", "", "", f"{seconds:.1f}"))
            ok = False
            return
        buffers, launches, accesses, sums = consumer_truth(proc.stdout)
        good = expect(f"{label}: checksum", sums, plain_sums[tuple(app_args)])
        if kind == "launches":
            good &= expect(f"{label}: launches per kernel", kernel_counts(d), launches)
            what = f"{sum(launches.values())} launches"
        else:
            truth = {name: accesses[name] for name in buffers}
            good &= expect_access_counts(d, buffers, truth)
            what = f"{sum(r + w for r, w in truth.values())} accesses"
        ok &= good
        rows.append((label, "ok" if good else "WRONG", what, "same" if sums else "-",
                     f"{seconds:.1f}"))

    plain_sums = {}
    for args in [(), ("--streams", "default"), ("--managed", "0")]:
        plain_sums[args] = checksums(run([f"{cons}/app_plain", *args]).stdout)
    one("nv::Cupti + KernelFreq, Timeline", [f"{cons}/app_cupti"], out + "/cupti",
        kind="launches")
    one("nv::Sanitizer + GpuBucketing", [f"{cons}/app_sanitizer"], out + "/sanitizer")
    one("nv::Sanitizer + proc::Cpu", [f"{cons}/app_sanitizer_cpu"], out + "/sanitizer_cpu")
    one("device::Annotations + GpuBucketing", [f"{cons}/app_annotations"], out + "/annotations")
    one("pasta run (injected)", [f"{build}/bin/pasta", "run", "-o", out + "/inj", "--",
                                 f"{cons}/app_plain"], out + "/inj", kind="launches")
    one("pasta run --memory (injected)", [f"{build}/bin/pasta", "run", "--memory", "-o",
                                          out + "/inj-memory", "--", f"{cons}/app_plain"],
        out + "/inj-memory")
    one("Sanitizer, default stream", [f"{cons}/app_sanitizer"], out + "/s-default-stream",
        app_args=("--streams", "default"))
    one("Sanitizer, no managed memory", [f"{cons}/app_sanitizer"], out + "/s-no-managed",
        app_args=("--managed", "0"))
    one("Sanitizer, eager module loading", [f"{cons}/app_sanitizer"], out + "/s-eager",
        env={"CUDA_MODULE_LOADING": "EAGER"})
    one("Sanitizer, built for sm_90 (no PTX JIT)", [f"{cons90}/app_sanitizer"], out + "/s-sm90")
    print(f"\n| composition (consumer built for {archs}) | result | exact | checksum | s |")
    print("|---|---|---|---|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return ok


def case_docs_examples(build, out):
    """The user guide's in-binary programs, as the page shows them (docs/examples/*.cu):
    10 launches of `scale` over 2^20 floats, each reading and writing every float once."""
    ok = True
    n = 1 << 20
    for example, check in [("in_binary_cupti", "launches"), ("in_binary_sanitizer", "accesses")]:
        exe = os.path.join(build, "tests", f"docs_{example}")
        if not os.path.exists(exe):
            run(["cmake", "--build", build, "--target", f"docs_{example}"])
        d = os.path.join(out, example)
        run([exe], profiled_env(d), timeout=120)
        if check == "launches":
            ok &= expect(f"{example}: launches", kernel_counts(d), {"scale": 10})
        else:
            _, objects, _ = hotness(d)
            rows = [(r["kind"], r["reads"], r["writes"]) for r in objects.values()]
            ok &= expect(f"{example}: the managed buffer's reads and writes", rows,
                         [("managed", 10 * n, 10 * n)])
    return ok


# --- a job of several processes: torchrun DDP, per-rank reports (issue: multi-process) ------
def ddp_ranks(results):
    """{rank: what it wrote} from a torchrun job of ddp_train.py --results RESULTS."""
    out = {}
    for name in sorted(os.listdir(results)) if os.path.isdir(results) else []:
        with open(os.path.join(results, name)) as f:
            d = json.load(f)
        out[d["rank"]] = d
    return out


def rank_launches(rank_dir):
    """The launches a rank's own reports count: kernel_freq.json's (the kernels a filter keeps),
    or event_count.json's KernelLaunch events where the pipeline has no kernel_freq (--record)."""
    if os.path.exists(os.path.join(rank_dir, "kernel_freq.json")):
        return report(rank_dir, "kernel_freq")["summary"].get("launches")
    if os.path.exists(os.path.join(rank_dir, "event_count.json")):
        events = report(rank_dir, "event_count")["tables"]["events"]
        return {r["event"]: r["count"] for r in events}.get("KernelLaunch")
    return None


def kernels_per_rank_track(job_dir):
    """{rank: kernel events on the tracks the merged timeline (job.trace.json) names for that
    rank ("rank R (host, pid P): ...")}; kernels on a track of no rank under None."""
    events = timeline(job_dir, "job.trace.json")
    rank_of = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            m = re.match(r"rank (\d+) \(", e["args"]["name"])
            if m:
                rank_of[e["pid"]] = int(m[1])
    return dict(collections.Counter(rank_of.get(e["pid"]) for e in events
                                    if e.get("cat") == "kernel"))


def case_ddp(build, out):
    """`pasta run -- torchrun --nproc_per_node=2` over a DDP job (a transformers GPT-2 built
    from a config, gloo backend, both ranks sharing GPU 0), with the default pipeline, --torch,
    --record and --memory: one report directory per rank, each rank's launches (in the job's
    list and in the rank's own reports; with a kernel filter, those of the kernels it keeps)
    equal to what torch.profiler counts inside that rank (a run of its own), the torchrun
    process listed, one merged timeline with each rank's kernels on its own tracks, training
    results unchanged (or, where two native runs differ, within their spread)."""
    pipelines = [("default", []), ("--torch", ["--torch"]), ("--record", ["--record"]),
                 ("--memory, filtered", ["--memory", "--kernel-filter", "elementwise|vectorized"])]
    # DDP_PIPELINES=default,--memory: only these (a short run, reported skipped, not passed).
    # Not PASTA_*: pasta would warn about a variable of its own prefix it does not know, in
    # every profiled process.
    only = [p for p in os.environ.get("DDP_PIPELINES", "").split(",") if p]
    known = [label.split(",")[0] for label, _ in pipelines]
    if [p for p in only if p not in known]:
        print(f"FAIL DDP_PIPELINES={','.join(only)} names {[p for p in only if p not in known]}; "
              f"known: {','.join(known)}")
        return False
    chosen = [p for p in pipelines if not only or p[0].split(",")[0] in only]
    script = os.path.join(ROOT, "tests", "gpu", "ddp_train.py")
    nproc = int(os.environ.get("DDP_RANKS", "2"))
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={nproc}", script, "--steps", "2"]
    env = {"PASTA_PRINT": "none", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1", "OMP_NUM_THREADS": "2"}
    results = os.path.join(out, "results")
    run(torchrun + ["--count-kernels", "--results", f"{results}/counted"], env)
    counted = ddp_ranks(f"{results}/counted")
    run(torchrun + ["--results", f"{results}/native"], env)
    native = ddp_ranks(f"{results}/native")
    ok = expect("ranks that ran", sorted(counted), list(range(nproc)))
    for r in sorted(counted):
        ok = some(f"rank {r}'s kernels (torch.profiler)", counted[r]["kernels"]) and ok
    rows = []
    for label, options in chosen:
        d = os.path.join(out, label.split(",")[0].strip("-") or "default")
        t0 = time.perf_counter()
        mine = f"{results}/{os.path.basename(d)}"
        proc = run([f"{build}/bin/pasta", "run", *options, "-o", d, "--"] + torchrun +
                   ["--results", mine], env, check=False, timeout=600)
        seconds = time.perf_counter() - t0
        print("\n".join(l for l in proc.stderr.splitlines() if l.startswith("  "))[-3000:])
        ranks = ddp_ranks(mine)
        good = expect(f"{label}: exit code", proc.returncode, 0)
        try:
            with open(os.path.join(d, "job.json")) as f:
                job = json.load(f)
        except OSError:
            job = {"processes": []}
        by_rank = {r["rank"]: r for r in job["processes"] if r["rank"] is not None}
        others = [r for r in job["processes"] if r["rank"] is None]
        on_disk = sorted(int(n[4:]) for n in (os.listdir(d) if os.path.isdir(d) else [])
                         if re.fullmatch(r"rank\d+", n) and os.path.isdir(os.path.join(d, n)))
        good &= expect(f"{label}: a report directory per rank (rank<R>/ on disk)", on_disk,
                       list(range(nproc)))
        good &= expect(f"{label}: ranks the job's list says finished",
                       sorted(r for r in by_rank if by_rank[r]["status"] == "finished"),
                       list(range(nproc)))
        launches = {r: by_rank.get(r, {}).get("launches") for r in range(nproc)}
        kernels = {r: counted[r]["kernels"] for r in range(nproc)}
        good &= expect(f"{label}: launches per rank in the job's list, pasta vs torch.profiler "
                       "in the rank", launches, kernels)
        kept = options[options.index("--kernel-filter") + 1] if "--kernel-filter" in options \
            else None
        good &= expect(f"{label}: launches in each rank's own reports, pasta vs torch.profiler"
                       + (f" (kernels matching {kept})" if kept else ""),
                       {r: rank_launches(os.path.join(d, f"rank{r}")) for r in range(nproc)},
                       {r: sum(n for name, n in counted[r]["kernel_names"].items()
                               if re.search(kept, name)) if kept else kernels[r]
                        for r in range(nproc)})
        for r in range(nproc):
            good &= expect_same_results(ranks[r], native[r], counted[r], f"{label}: rank {r}: ") \
                if r in ranks else expect(f"{label}: rank {r} wrote its results", False, True)
        print(f"  {label}: other processes listed: " +
              ", ".join(f"pid {r['pid']} ({r['status']})" for r in others))
        if label == "default":
            good &= expect("default: merged timeline, kernels on each rank's own tracks",
                           kernels_per_rank_track(d), kernels)
        if label == "--torch":
            for r in range(nproc):
                good &= expect_attributed(os.path.join(d, f"rank{r}"), kernels[r])
        if label == "--record":
            for r in range(nproc):
                trace = os.path.join(d, f"rank{r}", "trace.pasta")
                good &= expect(f"--record: rank {r}'s own trace", os.path.exists(trace), True)
                if os.environ.get("OUT") and os.path.exists(trace):
                    shutil.copy(trace, os.path.join(os.environ["OUT"], f"ddp_rank{r}_h100.pasta"))
        if label.startswith("--memory"):
            for r in range(nproc):
                good &= expect(f"--memory: rank {r}'s hotness report",
                               os.path.exists(os.path.join(d, f"rank{r}", "mem_hotness.json")),
                               True)
        ok &= good
        rows.append((label, "ok" if good else "FAILED",
                     ", ".join(f"{launches[r]}" for r in range(nproc)),
                     ", ".join(str(counted[r]["kernels"]) for r in range(nproc)),
                     str(len(others)), f"{seconds:.1f}"))
    print("\n| pasta run ... -- torchrun (2 ranks, GPT-2, gloo) | result | launches per rank "
          "| torch.profiler per rank | other processes | s |")
    print("|---|---|---|---|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if len(chosen) < len(pipelines):
        print(f"DDP_PIPELINES={','.join(only)}: {len(pipelines) - len(chosen)} pipelines left "
              "out: the case is skipped, not passed")
        return combine(ok, SKIP)
    return ok


def ddp_truth(trace_dir, nproc):
    """From each rank's own torch.profiler trace, independently of pasta: per rank the share
    of its NCCL kernels' time that its other kernels overlap (%), and its NCCL kernels
    matched across ranks as the job merge matches them (per stream in start order, streams
    by first use): [(name, {rank: start us})] in order."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from checks import union_us as union
    overlap, per_rank, docs = {}, {}, {}
    for r in range(nproc):
        with open(os.path.join(trace_dir, f"rank{r}.trace.json")) as f:
            docs[r] = json.load(f)
    # A Kineto trace's ts count from its own baseTimeNanoseconds: onto the earliest rank's.
    base = min(d.get("baseTimeNanoseconds", 0) for d in docs.values())
    for r, doc in docs.items():
        shift = (doc.get("baseTimeNanoseconds", 0) - base) / 1e3
        kernels = [(e["ts"] + shift, e["ts"] + shift + e["dur"], e["name"],
                    e.get("args", {}).get("stream"))
                   for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        nccl = ("nccl", "void nccl")
        comm = [(s, t) for s, t, n, _ in kernels if n.startswith(nccl)]
        compute = [(s, t) for s, t, n, _ in kernels if not n.startswith(nccl)]
        overlap[r] = 100 * (union(comm) + union(compute) - union(comm + compute)) / union(comm)
        streams = {}
        for s, t, n, stream in sorted(k for k in kernels if k[2].startswith(nccl)):
            streams.setdefault(stream, []).append((s, n))
        per_rank[r] = [calls for _, calls in sorted(streams.items(), key=lambda kv: kv[1][0][0])]
    matched = []
    for g in range(min(len(v) for v in per_rank.values())):
        for q in range(min(len(per_rank[r][g]) for r in per_rank)):
            matched.append((per_rank[0][g][q][1], {r: per_rank[r][g][q][0] for r in per_rank}))
    return overlap, matched


def case_ddp_analyses(build, out):
    """The job merge's analyses on a DDP job with NCCL, one rank per GPU, rank 1 made slow
    (its GPU spins after each forward): the collectives matched across ranks, which rank
    arrived last and by how much, and each rank's communication overlapped by compute,
    against each rank's own torch.profiler trace. torch.profiler and pasta's CUPTI cannot
    share a process, so they see two runs of the same job: the collectives and their order
    are the same (exact), times within a tolerance (run-to-run noise, stated per check)."""
    if gpus() < 2:
        print("fewer than 2 GPUs: skipped")
        return SKIP
    nproc, slow_ms, steps = 2, 20.0, 5
    script = os.path.join(ROOT, "tests", "gpu", "ddp_train.py")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={nproc}", script, "--backend", "nccl", "--steps", str(steps),
                "--slow-rank", "1", "--slow-ms", str(slow_ms)]
    env = {"PASTA_PRINT": "none", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1", "OMP_NUM_THREADS": "2"}
    traces = os.path.join(out, "torch-traces")
    run(torchrun + ["--trace", traces, "--results", os.path.join(out, "results-torch")], env,
        timeout=600)
    overlap, matched = ddp_truth(traces, nproc)
    d = os.path.join(out, "pasta")
    proc = run([f"{build}/bin/pasta", "run", "-o", d, "--"] + torchrun +
               ["--results", os.path.join(out, "results-pasta")], env, check=False, timeout=600)
    ok = expect("pasta run: exit code", proc.returncode, 0)
    if not expect("the job's files", all(os.path.exists(os.path.join(d, f)) for f in
                                          ("job.json", "job.collectives.csv")), True):
        print(proc.stderr[-3000:])
        return False
    with open(os.path.join(d, "job.json")) as f:
        job = json.load(f)
    with open(os.path.join(d, "job.txt")) as f:
        print(f.read()[-4000:])  # the analyses over ranks, for the log
    if not expect("the merge's analyses (DuckDB on this machine)", job.get("analysis_missing"),
                  None):
        return False
    with open(os.path.join(d, "job.collectives.csv")) as f:
        mine = list(csv.DictReader(f))
    # Exact: the same collectives, in the same order, on both ranks.
    ok &= expect("collectives matched across ranks", job["analysis"]["collectives"]["matched"],
                 len(matched))
    # Named up to the parameters (the two demanglers may spell a type differently).
    ok &= expect("each collective's kernel, in order", [c["name"].split("(")[0] for c in mine],
                 [name.split("(")[0] for name, _ in matched])
    reduce_torch = [(max(a, key=a.get), max(a.values()) - min(a.values()))
                    for name, a in matched if "AllReduce" in name]
    reduce_pasta = [(c["last"], float(c["skew_us"])) for c in mine if "AllReduce" in c["name"]]
    # Rank 1 spins slow_ms before each backward: it arrives last at the backward's all-reduces
    # (the first step's may wait on start-up work; at least 80% of them, in both runs).
    for who, rows, name in (("torch.profiler", reduce_torch, 1), ("pasta", reduce_pasta,
                                                                  "rank 1")):
        last = sum(1 for l, _ in rows if l == name)
        ok &= expect(f"{who}: all-reduces where rank 1 arrived last (at least 80% of "
                     f"{len(rows)})", last >= 0.8 * len(rows) and len(rows) > 0, True)
    # Skew: each step's first all-reduce waits for rank 1's spin (every rank synchronises
    # after its forward, so the lateness does not hang on a profiler's cost per launch); the
    # later buckets queue behind it and wait little. The ones that waited half the spin or
    # more: one a step at least in both runs, their median no less than the spin (rank 1
    # cannot come sooner; 10% for the clock that 2e6 cycles a ms assumes) and within 25% of
    # torch.profiler's.
    spin = slow_ms * 1e3
    waited = {}
    for who, rows in (("torch.profiler", reduce_torch), ("pasta", reduce_pasta)):
        print(f"  {who}: all-reduce skews (ms): {[round(s / 1e3, 1) for _, s in rows]}")
        waited[who] = [s for _, s in rows if s >= spin / 2]
        ok &= expect(f"{who}: all-reduces that waited half the spin or more, one a step at "
                     f"least ({steps - 1} after the first)", len(waited[who]) >= steps - 1, True)
    t_skew, p_skew = (statistics.median(waited[w]) if waited[w] else 0.0
                      for w in ("torch.profiler", "pasta"))
    print(f"  their median skew: torch.profiler {t_skew:.1f} us, pasta {p_skew:.1f} us "
          f"(rank 1 spins about {spin:.0f} us)")
    ok &= expect("median skew of those, pasta no less than the spin", p_skew >= 0.9 * spin,
                 True)
    ok &= expect("median skew of those, pasta within 25% of torch.profiler's",
                 abs(p_skew - t_skew) <= 0.25 * t_skew and t_skew > 0, True)
    # Overlap: how DDP's buckets meet the backward's kernels; two runs, within 15 points.
    ranks = {r["rank"]: r for r in job["analysis"]["ranks"]}
    for r in range(nproc):
        print(f"  rank {r}: communication overlapped by compute: torch.profiler "
              f"{overlap[r]:.1f}%, pasta {ranks[r]['overlap_pct']:.1f}%")
        ok &= expect(f"rank {r}: overlap (%), pasta within 15 points of torch.profiler's",
                     abs(ranks[r]["overlap_pct"] - overlap[r]) <= 15, True)
    verdicts = {v: [o["process"] for o in named]
                for v, named in job["analysis"]["outliers"].items()}
    ok &= expect("what each rank is slow in", verdicts,
                 {"slow in compute": ["rank 1"], "waits in collectives": ["rank 0"]})
    return ok


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main(argv):
    if len(argv) < 3 or argv[1] not in CASES:
        print(f"usage: check.py {{{'|'.join(CASES)}}} BUILD_DIR [OUT_DIR]")
        return 2
    if gpus() == 0:
        print("no GPU on this machine: skipped")
        return SKIP
    build = os.path.abspath(argv[2])
    out = argv[3] if len(argv) > 3 else tempfile.mkdtemp(prefix=f"pasta-gpu-{argv[1]}-")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    result = CASES[argv[1]](build, os.path.abspath(out))
    if result == SKIP:
        return SKIP
    print("PASSED" if result else "FAILED")
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

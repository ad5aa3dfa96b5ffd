#!/usr/bin/env python3
"""Jobs of several processes, end to end on the CPU: `pasta run` over a shell
that starts ranks (tests/cli/job_child.cpp: an in-binary profiler that sees
known kernels), then what the launcher lists and merges; stale directories;
a rank killed mid-run; two processes claiming one rank; several hosts'
directories merged by `pasta report`; per-rank traces merged by `pasta
replay`, on the CPU and on the two ranks' traces of a DDP job recorded on
the H100; and 64 synthetic ranks, for the size and time of the merge.

    job_test.py BUILD_DIR JOB_CHILD

Exact expected values come from job_child.cpp: kernel i of a rank runs 50 us
every 100 us from t = 1 ms, then one 10 us all-reduce.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "share", "pasta"))
import checks  # noqa: E402
import library  # noqa: E402
from checks import expect, near  # noqa: E402

BUILD, CHILD = (os.path.abspath(a) for a in sys.argv[1:3])
PASTA = [sys.executable, os.path.join(BUILD, "bin", "pasta")]


def pasta(*args, env=None, check_code=None):
    ranks = library.rank_variable_names(os.path.join(BUILD, "cli", "pasta-trace"))
    e = {k: v for k, v in os.environ.items() if not k.startswith("PASTA_") and k not in ranks}
    e["PASTA_BUILD_DIR"] = BUILD
    # No GPU here: the injected library is never loaded (the children make no
    # CUDA call); any existing file satisfies the launcher's lookup.
    e["PASTA_INJECT_LIB"] = CHILD
    e.update(env or {})
    p = subprocess.run(PASTA + list(args), capture_output=True, text=True, env=e, timeout=120,
                       check=False)
    if check_code is not None and not expect(f"pasta {args[0]}: exit code", p.returncode,
                                             check_code):
        print(f"  pasta {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    return p


def load(path):
    with open(path) as f:
        return json.load(f)


def by_rank(doc):
    return {r["rank"]: r for r in doc["processes"] if r["rank"] is not None}


def job_run(tmp):
    """Two ranks and a process with no GPU work under one `pasta run`."""
    out = os.path.join(tmp, "job")
    script = (f"RANK=0 WORLD_SIZE=2 {CHILD} 3 & RANK=1 WORLD_SIZE=2 {CHILD} 5 & {CHILD} 0 & wait")
    p = pasta("run", "-o", out, "--", "sh", "-c", script, check_code=0)
    print(p.stderr)
    doc = load(os.path.join(out, "job.json"))
    expect("processes listed", len(doc["processes"]), 3)
    expect("counts", doc["counts"], {"finished": 2, "no GPU work": 1, "running": 0})
    ranks = by_rank(doc)
    expect("rank 0: launches", ranks[0]["launches"], 4)
    expect("rank 1: launches", ranks[1]["launches"], 6)
    expect("rank 0: its directory", ranks[0]["dir"], "rank0")
    near("rank 0: device time (ms)", ranks[0]["device_ms"], 0.16)
    near("rank 1: device time (ms)", ranks[1]["device_ms"], 0.26)
    near("rank 0: GPU busy (%)", ranks[0]["busy_pct"], 100 * 160 / 310)
    near("rank 1: GPU busy (%)", ranks[1]["busy_pct"], 100 * 260 / 510)
    expect("rank 0: top kernel", ranks[0]["top_kernel"], "gemm")
    idle = [r for r in doc["processes"] if r["rank"] is None][0]
    expect("the process with no GPU work", (idle["status"], idle["dir"]), ("no GPU work", None))
    expect("it wrote no directory", os.path.exists(os.path.join(out, f"pid{idle['pid']}")), False)
    s = doc["straggler"]
    expect("straggler", s["process"], "rank 1")
    near("straggler's excess over the others (%)", s["excess_pct"], 100 * (0.25 - 0.15) / 0.15)
    gemm = next(k for k in doc["kernels"] if k["name"] == "gemm")
    near("gemm: min over ranks (ms)", gemm["min"], 0.15)
    near("gemm: max over ranks (ms)", gemm["max"], 0.25)
    expect("gemm: slowest", gemm["slowest"], "rank 1")
    trace = load(os.path.join(out, "job.trace.json"))
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    expect("merged timeline: kernels of both ranks", len(kernels), 10)
    expect("merged timeline: one GPU track per rank",
           sorted({e["pid"] for e in kernels}), [101, 201])
    starts = sorted(e["ts"] for e in kernels if e["pid"] == 101)
    expect("merged timeline: a host's processes share its clock (same start)",
           starts[0], min(e["ts"] for e in kernels if e["pid"] == 201))
    names = [e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"]
    expect("merged timeline names each rank's tracks",
           any(n.startswith("rank 1 (") for n in names), True)
    rank0 = load(os.path.join(out, "rank0", "timeline.trace.json"))
    expect("a rank's own timeline carries Kineto's distributedInfo",
           rank0["distributedInfo"], {"backend": "", "rank": 0, "world_size": 2})
    expect("the launcher lists every process", "no GPU work: no reports" in p.stderr, True)
    # Without Jinja2 there is no page (report_test.py fails for that where CI asks); with it,
    # a page that is not there is a failure, whatever the launcher said.
    if importlib.util.find_spec("jinja2"):
        expect("the job page", os.path.exists(os.path.join(out, "report.html")), True)
    return out


def stale(tmp, out):
    p = pasta("run", "-o", out, "--", "true", check_code=2)
    expect("an earlier run is refused", "holds the reports of an earlier run" in p.stderr, True)
    p = pasta("run", "-f", "-o", out, "--", "sh", "-c", f"RANK=0 {CHILD} 2", check_code=0)
    expect("-f replaces it: the earlier run's rank 1 is gone",
           os.path.exists(os.path.join(out, "rank1")), False)
    expect("-f: one process listed", len(os.listdir(os.path.join(out, "processes"))), 1)
    other = os.path.join(tmp, "notes")
    os.makedirs(other)
    open(os.path.join(other, "notes.txt"), "w").close()
    p = pasta("run", "-f", "-o", other, "--", "true", check_code=2)
    expect("a directory of other files is refused, even with -f",
           "is not empty and holds no pasta reports" in p.stderr, True)


def killed_and_duplicate(tmp):
    out = os.path.join(tmp, "killed")
    script = (f"RANK=0 {CHILD} 2 & RANK=1 {CHILD} 2 gemm 30 & victim=$!; sleep 2; kill -9 $victim; "
              "wait")
    # The shell's own exit code (its last command, a bare wait, returns 0): pasta run passes
    # the program's on, whatever became of a rank.
    p = pasta("run", "-o", out, "--", "sh", "-c", script, check_code=0)
    print(p.stderr)
    doc = load(os.path.join(out, "job.json"))
    ranks = by_rank(doc)
    expect("a killed rank is listed as not finished", ranks[1]["status"], "running")
    expect("the others keep their reports", ranks[0]["launches"], 3)
    expect("the launcher says so", "did not finish" in p.stderr, True)
    out = os.path.join(tmp, "dup")
    p = pasta("run", "-o", out, "--", "sh", "-c", f"RANK=0 {CHILD} 2 & sleep 1; RANK=0 {CHILD} 3",
              check_code=0)
    doc = load(os.path.join(out, "job.json"))
    expect("two processes claiming one rank: named in the job",
           any("rank 0 is claimed by 2 processes" in x for x in doc["problems"]), True)
    expect("and by the second process itself", "rank 0 (RANK) is also claimed by pid" in p.stderr,
           True)


def synthetic_rank(job, rank, host, n, wall_offset_ns, run_id="synthetic", step_us=100.0):
    """A rank's directory as pasta writes it: its entry, kernel_freq.json and timeline."""
    d = os.path.join(job, f"rank{rank}")
    os.makedirs(d, exist_ok=True)
    os.makedirs(os.path.join(job, "processes"), exist_ok=True)
    entry = {"pasta_process": 1, "pid": 1000 + rank, "host": host, "rank": rank,
             "rank_variable": "RANK", "world_size": None, "run_id": run_id, "dir": f"rank{rank}",
             "status": "finished", "launches": n, "reports": ["kernel_freq.json", "op_summary.json"]}
    with open(os.path.join(job, "processes", f"{host}-{1000 + rank}.json"), "w") as f:
        json.dump(entry, f)
    total = n * 0.05 * (1 + rank / 100)
    kf = {"tool": "kernel_freq", "summary": {"launches": n, "device time (ms)": total},
          "tables": {"kernels": [{"kernel": "gemm", "launches": n, "total_ms": total}]}}
    with open(os.path.join(d, "kernel_freq.json"), "w") as f:
        json.dump(kf, f)
    ops = {"tool": "op_summary", "tables": {"operators": [
        {"operator": "aten::mm", "calls": n, "kernels": n, "device_self_ms": total}]}}
    with open(os.path.join(d, "op_summary.json"), "w") as f:
        json.dump(ops, f)  # a --torch rank: the job's operators over processes
    clock0 = 5_000_000_000
    events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPU 0"}},
              {"name": "pasta_origin", "ph": "M", "pid": 0, "tid": 0,
               "args": {"clock_ns": clock0}}]
    events += [{"name": "gemm", "cat": "kernel", "ph": "X", "pid": 1, "tid": 7,
                "ts": i * step_us, "dur": 50.0} for i in range(n)]
    doc = {"pasta": {"clock_ns": clock0, "wall_ns": clock0 + wall_offset_ns, "pid": 1000 + rank,
                     "host": host, "rank": rank}, "traceEvents": events}
    with open(os.path.join(d, "timeline.trace.json"), "w") as f:
        json.dump(doc, f)


def hosts(tmp):
    """Two hosts' directories, gathered afterwards: merged, lined up by wall clock."""
    a, b = os.path.join(tmp, "node-a"), os.path.join(tmp, "node-b")
    synthetic_rank(a, 0, "node-a", 4, 1_000_000_000_000)
    synthetic_rank(b, 1, "node-b", 4, 1_000_000_250_000)  # its wall clock reads 250 us later
    merged = os.path.join(tmp, "merged")
    os.makedirs(merged)
    p = pasta("report", a, b, "-o", os.path.join(merged, "report.html"),
              check_code=0 if importlib.util.find_spec("jinja2") else 1)
    print(p.stderr)
    trace = load(os.path.join(merged, "job.trace.json"))
    first = {pid: min(e["ts"] for e in trace["traceEvents"]
                      if e.get("cat") == "kernel" and e["pid"] == pid) for pid in (101, 201)}
    expect("hosts lined up through their wall clocks (us)", first[201] - first[101], 250.0)
    expect("the alignment is stated", trace["pasta"]["alignment"].startswith("2 hosts"), True)
    expect("both hosts' ranks", [r["rank"] for r in load(os.path.join(merged, "job.json"))
                                 ["processes"]], [0, 1])


def replayed(tmp, out):
    """Per-rank traces (recorded by each rank into its directory) merged by pasta replay."""
    traces = [os.path.join(out, f"rank{r}", "trace.pasta") for r in (0, 1)]
    target = os.path.join(tmp, "replayed")
    p = pasta("replay", *traces, "-o", target, check_code=0)
    print(p.stderr)
    doc = load(os.path.join(target, "job.json"))
    ranks = by_rank(doc)
    expect("replayed traces: one directory per rank", sorted(ranks), [0, 1])
    expect("replayed rank 1: launches", ranks[1]["launches"], 6)
    near("replayed rank 1: device time (ms)", ranks[1]["device_ms"], 0.26)


def trace_truth(path):
    """A trace's rank, host, pid, and its kernels' device time (ms) per kernel, read by
    `pasta-trace info` and `dump` (one line per event), as tests/trace/truth.hpp reads a
    trace in C++: independent of the replay and the merge under test."""
    tool = os.path.join(BUILD, "cli", "pasta-trace")
    info = subprocess.run([tool, "info", path], capture_output=True, text=True, check=True).stdout
    meta = dict(l.strip().split(": ", 1) for l in info.splitlines()[1:]
                if l.startswith("  ") and ": " in l)
    dump = subprocess.run([tool, "dump", path], capture_output=True, text=True, check=True).stdout
    per_kernel, launches = {}, 0
    for line in dump.splitlines():
        if not line.startswith("KernelComplete "):
            continue
        fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        launches += 1
        ms = (int(fields["end_ns"]) - int(fields["start_ns"])) / 1e6
        per_kernel[fields["name"]] = per_kernel.get(fields["name"], 0.0) + ms
    return {"rank": int(meta["rank"]), "host": meta["host"], "pid": int(meta["pid"]),
            "launches": launches, "per_kernel": per_kernel}


def recorded(tmp):
    """The two ranks' traces of a DDP job recorded on the H100 (tests/data/README.md),
    replayed and merged: every value read from the traces themselves (trace_truth)."""
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    traces = [os.path.join(data, f"ddp_rank{r}_h100.pasta") for r in (0, 1)]
    truth = {t["rank"]: t for t in map(trace_truth, traces)}
    target = os.path.join(tmp, "ddp")
    pasta("replay", *traces, "-o", target, check_code=0)
    doc = load(os.path.join(target, "job.json"))
    ranks = by_rank(doc)
    expect("H100 DDP ranks: launches", {r: ranks[r]["launches"] for r in ranks},
           {r: t["launches"] for r, t in truth.items()})
    expect("H100 DDP ranks: hosts and pids", {r: (ranks[r]["host"], ranks[r]["pid"])
                                             for r in ranks},
           {r: (t["host"], t["pid"]) for r, t in truth.items()})
    for r, t in truth.items():
        near(f"H100 DDP rank {r}: device time (ms)", ranks[r]["device_ms"],
             sum(t["per_kernel"].values()))
    names = set().union(*(t["per_kernel"] for t in truth.values()))
    expect("H100 DDP: kernels over ranks", len(doc["kernels"]), len(names))
    # Per kernel over the ranks: (min, max, the slowest), as sorted lists (the job names
    # kernels demangled, the dump mangled).
    want = []
    for name in names:
        v = {r: t["per_kernel"][name] for r, t in truth.items() if name in t["per_kernel"]}
        slow = max(v, key=v.get)
        want.append((round(min(v.values()), 6), round(max(v.values()), 6), f"rank {slow}"))
    got = [(round(k["min"], 6), round(k["max"], 6), k["slowest"]) for k in doc["kernels"]]
    expect("H100 DDP: each kernel's min, max and slowest rank", sorted(got), sorted(want))
    compute = {r: sum(ms for n, ms in t["per_kernel"].items() if not n.startswith("nccl"))
               for r, t in truth.items()}
    expect("H100 DDP: straggler", doc["straggler"]["process"],
           f"rank {max(compute, key=compute.get)}")


def many(tmp, n=64, kernels=1000):
    job = os.path.join(tmp, "many")
    for r in range(n):
        synthetic_rank(job, r, "node", kernels, 0)
    t0 = time.perf_counter()
    pasta("report", job, check_code=0)
    seconds = time.perf_counter() - t0
    doc = load(os.path.join(job, "job.json"))
    trace = os.path.join(job, "job.trace.json")
    events = sum(1 for e in load(trace)["traceEvents"] if e.get("cat") == "kernel")
    expect(f"{n} synthetic ranks merged", len(doc["processes"]), n)
    # Ranks 0 to n - 1 grow in compute: the fastest, the median and the slowest (the one
    # outlier) are on the job's timeline, whole.
    expect("the ranks on the job's timeline, and why",
           {t["process"]: t["why"] for t in doc["timeline_ranks"]},
           {"rank 0": "fastest in compute", f"rank {(n - 1) // 2}": "median in compute",
            f"rank {n - 1}": "slowest in compute"})
    expect("their kernels on the job's timeline", events, 3 * kernels)
    expect("straggler of the synthetic ranks", doc["straggler"]["process"], f"rank {n - 1}")
    page = os.path.join(job, "report.html")
    # Without Jinja2 there is no page (report_test.py fails for that where CI asks); with it,
    # a page that is not there is a failure.
    if importlib.util.find_spec("jinja2") and expect("the job page", os.path.exists(page), True):
        with open(page) as f:
            html = f.read()
        table = html[html.index('<table class="data" id="job-processes">'):]
        table = table[table.index("<tbody>"):table.index("</tbody>")]
        ranks = [int(m) for m in re.findall(r'<tr><td class="num">(\d+)</td>', table)]
        # 50 rows: the straggler (rank n - 1), then the first ranks; job.txt lists them all.
        expect("the job table's rows (first by rank, the straggler kept)", ranks,
               list(range(49)) + [n - 1])
        expect("the job table says how many it shows",
               f"50 of\n{n} processes shown" in html, True)
        expect("the operators over processes (a --torch job)",
               re.findall(r'<td title="aten::mm">aten::mm</td><td class="num">(\d+)</td>', html),
               [str(n)])
    print(f"merge of {n} ranks x {kernels} kernels: {seconds:.2f} s (pasta report, the HTML page "
          f"included), job.trace.json {os.path.getsize(trace) / 1e6:.1f} MB, "
          f"job.json {os.path.getsize(os.path.join(job, 'job.json')) / 1e3:.1f} kB")


def main():
    tmp = tempfile.mkdtemp(prefix="pasta-job-")
    try:
        out = job_run(tmp)
        replayed(tmp, out)
        recorded(tmp)
        stale(tmp, out)
        killed_and_duplicate(tmp)
        hosts(tmp)
        many(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary("jobs: every check exact")


if __name__ == "__main__":
    sys.exit(main())

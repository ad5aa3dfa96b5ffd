#!/usr/bin/env python3
"""gpu_check_test.py: what tests/gpu/check.py reads from reports, on made-up ones, here where
no GPU is: the launches a rank's own reports count, the kernels on each rank's tracks of a
timeline the job's merge (share/pasta/job.py) wrote, and a DDP_PIPELINES that names no
pipeline failing before anything runs, and ddp_analyses' truth (overlap and collectives from
each rank's own trace) on two synthetic ranks whose answers are known (bench/job_ranks.py), and
copies and memsets by operator from a made-up torch.profiler trace (tests/gpu/torch_trace.py)."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import check  # noqa: E402
import job_ranks  # noqa: E402
import torch_trace  # noqa: E402
import checks  # noqa: E402
import job  # noqa: E402


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def rank_launches(tmp):
    write(f"{tmp}/r0/kernel_freq.json", {"summary": {"launches": 388}})
    write(f"{tmp}/r1/event_count.json", {"tables": {"events": [
        {"event": "KernelComplete", "count": 409}, {"event": "KernelLaunch", "count": 409}]}})
    os.makedirs(f"{tmp}/r2")
    checks.expect("a rank's kernel_freq.json launches", check.rank_launches(f"{tmp}/r0"), 388)
    checks.expect("a rank's event_count.json KernelLaunch (--record)",
                  check.rank_launches(f"{tmp}/r1"), 409)
    checks.expect("a rank without reports", check.rank_launches(f"{tmp}/r2"), None)


def rank_tracks(tmp):
    """Two ranks' timelines merged by job.merge_timelines: kernels counted by the rank the
    track's name gives, whatever its number; the second rank's GPU 1 track too."""
    kernels = {0: [(1, 3), (2, 0)], 1: [(1, 5), (2, 2)]}  # rank: [(device pid, kernels)]
    procs = []
    for rank, devices in kernels.items():
        d = f"{tmp}/job/rank{rank}"
        events = [{"name": "pasta_origin", "ph": "i", "ts": 0, "args": {"clock_ns": 1000}}]
        for pid, n in devices:
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"GPU {pid - 1}"}})
            events += [{"name": f"k{i}", "cat": "kernel", "ph": "X", "pid": pid, "tid": 7,
                        "ts": 10 * i, "dur": 5} for i in range(n)]
        write(f"{d}/timeline.trace.json", {"pasta": {"clock_ns": 1000, "wall_ns": 5000},
                                           "traceEvents": events})
        procs.append(types.SimpleNamespace(dir=d, has_reports=True, host="h", pid=40 + rank,
                                           label=job.label(rank, 40 + rank)))
    # Rank 1's timeline first: its tracks get the lower numbers.
    job.merge_timelines(procs[::-1], f"{tmp}/job/job.trace.json")
    checks.expect("kernels on each rank's own tracks of the merged timeline",
                  check.kernels_per_rank_track(f"{tmp}/job"), {0: 3, 1: 7})
    with open(f"{tmp}/job/job.trace.json") as f:
        doc = json.load(f)
    doc["traceEvents"].append({"name": "stray", "cat": "kernel", "ph": "X", "pid": 999, "ts": 1})
    write(f"{tmp}/job/job.trace.json", doc)
    checks.expect("a kernel on a track of no rank",
                  check.kernels_per_rank_track(f"{tmp}/job"), {0: 3, 1: 7, None: 1})


def matrix_cells(tmp):
    """What each results-matrix pipeline's report says the example launched."""
    write(f"{tmp}/m/kernel_freq.json", {"summary": {"launches": 698}})
    write(f"{tmp}/m/op_summary.json", {"summary": {"kernels": 612, "calls": 4000}})
    write(f"{tmp}/m/timeline.trace.json", {"traceEvents": [
        {"name": "k", "cat": "kernel", "ph": "X", "pid": 1, "ts": i} for i in range(5)] + [
        {"name": "copy", "cat": "memcpy", "ph": "X", "pid": 1, "ts": 9}]})
    write(f"{tmp}/m/sanitizer.json", {"summary": {"launches instrumented": 688,
                                                  "graph kernel launches (run uninstrumented)": 10}})
    write(f"{tmp}/s/sanitizer.json", {"summary": {"launches instrumented": 5}})
    checks.expect("cells: kernel_freq, timeline, op_summary, mem_hotness (instrumented + graph)",
                  [check.pipeline_launches(f"{tmp}/m", t)
                   for t in ("kernel_freq", "timeline", "op_summary", "mem_hotness")],
                  [698, 5, 612, 698])
    checks.expect("mem_hotness without graph kernels", check.pipeline_launches(f"{tmp}/s",
                                                                               "mem_hotness"), 5)
    checks.expect("a cell with no report", check.pipeline_launches(f"{tmp}/none", "kernel_freq"),
                  None)


def ddp_pipelines(tmp):
    """DDP_PIPELINES naming no pipeline fails the case before it starts a process."""
    text = io.StringIO()
    os.environ["DDP_PIPELINES"] = "memory,default"
    try:
        with contextlib.redirect_stdout(text):
            got = check.case_ddp(f"{tmp}/no-build", f"{tmp}/ddp")
    finally:
        del os.environ["DDP_PIPELINES"]
    print(text.getvalue())
    checks.expect("DDP_PIPELINES=memory,default: the case fails", got, False)
    checks.expect("... saying which name is unknown", text.getvalue().splitlines(),
                  ["FAIL DDP_PIPELINES=memory,default names ['memory']; known: "
                   "default,--torch,--record,--memory"])
    checks.expect("... having run nothing", os.path.exists(f"{tmp}/ddp"), False)


def ddp_truth(tmp):
    """Two ranks' Chrome traces, the second's ts counting from a base 1 ms later (as two
    Kineto exports each count from their own baseTimeNanoseconds)."""
    p = job_ranks.params(ranks=2, steps=3, kernels=40, overlapped=8, allreduce_us=400.0,
                         slow_rank=1, waiting_rank=0)
    job_ranks.generate(f"{tmp}/ddp-job", p)
    for r in (0, 1):
        with open(f"{tmp}/ddp-job/rank{r}/timeline.trace.json") as f:
            doc = json.load(f)
        for e in doc["traceEvents"]:
            if "ts" in e:
                e["ts"] -= 1000.0 * r
        doc["baseTimeNanoseconds"] = 1_700_000_000_000_000_000 + 1_000_000 * r
        write(f"{tmp}/traces/rank{r}.trace.json", doc)
    overlap, matched = check.ddp_truth(f"{tmp}/traces", 2)
    want = job_ranks.answers(p)
    checks.expect("ddp_truth: each rank's communication overlapped by compute (%)",
                  {r: round(v, 6) for r, v in overlap.items()},
                  {r: round(100 * want["ranks"][r]["overlap_us"] / want["ranks"][r]["comm_total_us"],
                            6) for r in (0, 1)})
    checks.expect("ddp_truth: collectives matched", len(matched), want["collectives"])
    checks.expect("ddp_truth: each one's last rank and skew (us)",
                  [(max(a, key=a.get), round(max(a.values()) - min(a.values()), 6))
                   for _, a in matched], [(1, want["skew_us"])] * want["collectives"])


def copies(tmp):
    """A Kineto trace of CPU and CUDA activity, made up: aten::copy_ (External id 7) nested in
    aten::to (6) issues a copy whose device event names it, a memset whose device event names
    no operator (found through its driver call's External id), and aten::zero_ (9) a memset;
    a copy outside every operator (External id 0). copies_by_operator charges the innermost
    operator, and expect_copies holds op_summary's copies to it."""
    events = [
        {"cat": "cpu_op", "name": "aten::to", "args": {"External id": 6}},
        {"cat": "cpu_op", "name": "aten::copy_", "args": {"External id": 7}},
        {"cat": "cpu_op", "name": "aten::zero_", "args": {"External id": 9}},
        {"cat": "cuda_runtime", "name": "cudaMemcpyAsync",
         "args": {"External id": 7, "correlation": 100}},
        {"cat": "gpu_memcpy", "name": "Memcpy HtoD", "args": {"External id": 7, "correlation": 100}},
        {"cat": "cuda_driver", "name": "cuMemsetD8Async",
         "args": {"External id": 7, "correlation": 101}},
        {"cat": "gpu_memset", "name": "Memset (Device)", "args": {"correlation": 101}},
        {"cat": "gpu_memset", "name": "Memset (Device)", "args": {"External id": 9}},
        {"cat": "gpu_memcpy", "name": "Memcpy DtoH", "args": {"External id": 0}},
        {"cat": "kernel", "name": "k", "args": {"External id": 7}},
    ]
    by_op, outside = torch_trace.copies_by_operator(events)
    checks.expect("copies_by_operator: the innermost operator's", by_op,
                  {"aten::copy_": 2, "aten::zero_": 1})
    checks.expect("copies_by_operator: outside every operator", outside, 1)
    write(f"{tmp}/counts.json", {"copies_by_operator": by_op, "copies_outside": outside})

    def summary(rows, outside_ours):
        write(f"{tmp}/ours/op_summary.json", {
            "summary": {"copies and memsets outside every operator": outside_ours},
            "tables": {"operators": rows}})
    agreed = [{"operator": "aten::copy_", "copies": 2}, {"operator": "aten::zero_", "copies": 1},
              {"operator": "aten::to", "copies": 0}]
    for what, rows, outside_ours, want in (
            ("the same copies", agreed, 1, True),
            ("a copy charged to the outer operator", [
                {"operator": "aten::to", "copies": 1}, {"operator": "aten::copy_", "copies": 1},
                {"operator": "aten::zero_", "copies": 1}], 1, False),
            ("one more copy outside", agreed, 2, False)):
        summary(rows, outside_ours)
        with contextlib.redirect_stdout(io.StringIO()):
            got = check.expect_copies(f"{tmp}/ours", f"{tmp}/counts.json")
        checks.expect(f"expect_copies passes {what}", got, want)


def main():
    tmp = tempfile.mkdtemp(prefix="pasta-gpu-check-")
    try:
        rank_launches(tmp)
        rank_tracks(tmp)
        matrix_cells(tmp)
        ddp_pipelines(tmp)
        ddp_truth(tmp)
        copies(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary("check.py: every made-up report read as its maker wrote it")


if __name__ == "__main__":
    sys.exit(main())

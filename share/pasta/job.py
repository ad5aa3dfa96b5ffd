"""pasta's view of a job: every process that loaded pasta, side by side.

Each process of a job enters itself in <dir>/processes/<host>-<pid>.json
when its profiler starts and again when it stops (include/pasta/core/
detail/process_registry.hpp), and writes its reports into a directory of its
own (rank<R>, pid<P>, or the job directory itself). This module reads those
lists, from one directory or from several gathered from many hosts, and
writes the job's files:

  job.json / job.txt        the processes (rank, pid, host, launches, device
                            time, GPU busy share, peak tensor memory, top
                            kernel, or why it has no reports), the straggler
  job.kernels.csv           per kernel: device time over ranks (min, median,
                            max) and the slowest rank
  job.operators.csv         the same per operator (pipelines with --torch)
  job.trace.json            one Perfetto timeline, a process track per rank

Clock alignment: processes on one host share its clock (CUPTI's, or the
steady clock), so their timelines line up exactly; each timeline also keeps
one reading of that clock taken together with the wall clock, and hosts are
lined up through their wall clocks (as well as NTP keeps them, typically
within a millisecond). Nothing here needs a GPU.
"""
import csv
import io
import json
import os
import statistics

from overview import busy, device_records, load_json_tolerant, read_timeline, timeline_events

FORMAT = 1  # of job.json
# NCCL's kernels wait for the slowest rank: they are left out of the
# straggler's compute time.
COMMUNICATION_PREFIXES = ("ncclDevKernel", "ncclKernel", "nccl")


def label(rank, pid):
    """How the job's tables name a process: by its rank, else its pid."""
    return f"rank {rank}" if rank is not None else f"pid {pid}"


class Process:
    """One process of a job, from its registry entry."""

    def __init__(self, entry, job_dir, source):
        self.entry = entry
        self.job_dir = job_dir
        self.source = source  # the registry file
        rel = entry.get("dir", ".")
        self.dir = os.path.normpath(os.path.join(job_dir, rel))
        self.rank = entry.get("rank")
        self.pid = entry.get("pid")
        self.host = entry.get("host", "?")
        self.status = entry.get("status", "unknown")
        self.launches = entry.get("launches", 0)

    @property
    def label(self):
        return label(self.rank, self.pid)

    @property
    def has_reports(self):
        return self.status == "finished"

    def report(self, tool):
        path = os.path.join(self.dir, tool + ".json")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def sort_key(self):
        return (self.rank is None, self.rank if self.rank is not None else 0, self.host,
                self.pid or 0)


def find_processes(dirs, run_id=None):
    """Every process entered in the lists under `dirs`; with run_id, that run's only.
    Returns (processes, problems): a list entry that cannot be read is a problem."""
    processes, problems, seen = [], [], set()
    for d in dirs:
        reg = os.path.join(d, "processes")
        names = sorted(os.listdir(reg)) if os.path.isdir(reg) else []
        for name in names:
            if not name.endswith(".json"):
                continue
            path = os.path.join(reg, name)
            try:
                with open(path) as f:
                    entry = json.load(f)
            except (OSError, ValueError) as e:
                problems.append(f"{path}: unreadable ({e}); a process died while entering itself?")
                continue
            if run_id is not None and entry.get("run_id") != run_id:
                continue
            key = (entry.get("host"), entry.get("pid"), entry.get("run_id"), name)
            if key in seen:
                continue
            seen.add(key)
            processes.append(Process(entry, d, path))
    processes.sort(key=Process.sort_key)
    return processes, problems


def busy_share(p):
    """(busy %, span ms) of the GPUs in p's timeline: the union of kernel, copy and
    memset intervals over the span from the first to the last of them."""
    events = read_timeline(p.dir)
    busy_us, span_us, covered = busy(device_records(events or []))
    if not covered:
        return None, None
    return (100.0 * busy_us / span_us if span_us > 0 else 100.0), span_us / 1e3


def summarize(p):
    """The row of the processes table for p."""
    row = {"rank": p.rank, "pid": p.pid, "host": p.host, "status": p.status,
           "launches": p.launches, "dir": os.path.relpath(p.dir, p.job_dir) if p.has_reports
           else None, "device_ms": None, "busy_pct": None, "span_ms": None,
           "peak_tensor_mb": None, "top_kernel": None, "compute_ms": None}
    if p.entry.get("partial"):
        row["partial"] = p.entry["partial"]
    if p.entry.get("stopped_by"):
        row["stopped_by"] = p.entry["stopped_by"]
    if not p.has_reports:
        return row
    kf = p.report("kernel_freq")
    if kf:
        kernels = kf.get("tables", {}).get("kernels", [])
        row["device_ms"] = kf.get("summary", {}).get("device time (ms)")
        timed = [k for k in kernels if k.get("total_ms")]
        if timed:
            top = max(timed, key=lambda k: k["total_ms"])
            row["top_kernel"] = top.get("kernel")
            row["compute_ms"] = sum(k["total_ms"] for k in timed
                                    if not str(k.get("kernel", "")).startswith(
                                        COMMUNICATION_PREFIXES))
    ta = p.report("tensor_alloc")
    if ta:
        peaks = [d.get("peak_live_mb") for d in ta.get("tables", {}).get("devices", [])]
        peaks = [x for x in peaks if isinstance(x, (int, float))]
        if peaks:
            row["peak_tensor_mb"] = max(peaks)
    row["busy_pct"], row["span_ms"] = busy_share(p)
    return row


def spread(processes, tool, table, key, value):
    """Per name (key column of tool's table): value over the processes that have it:
    min, median, max and the process with the largest."""
    by_name = {}
    for p in processes:
        if not p.has_reports:
            continue
        report = p.report(tool)
        if not report:
            continue
        totals = {}
        for row in report.get("tables", {}).get(table, []):
            name, v = row.get(key), row.get(value)
            if name is None or not isinstance(v, (int, float)):
                continue
            totals[name] = totals.get(name, 0.0) + v
        for name, v in totals.items():
            by_name.setdefault(name, []).append((v, p))
    rows = []
    for name, values in by_name.items():
        vs = [v for v, _ in values]
        slow_v, slow_p = max(values, key=lambda x: x[0])
        rows.append({"name": name, "processes": len(values), "min": min(vs),
                     "median": statistics.median(vs), "max": max(vs),
                     "slowest": slow_p.label})
    rows.sort(key=lambda r: -r["max"])
    return rows


def straggler(rows):
    """The process with the most compute time (NCCL kernels left out), and by how much
    it exceeds the median of the others; None with fewer than two."""
    timed = [r for r in rows if isinstance(r.get("compute_ms"), (int, float))]
    if len(timed) < 2:
        return None
    slow = max(timed, key=lambda r: r["compute_ms"])
    others = statistics.median(r["compute_ms"] for r in timed if r is not slow)
    return {"process": label(slow["rank"], slow["pid"]), "compute_ms": slow["compute_ms"],
            "others_median_ms": others,
            "excess_pct": 100.0 * (slow["compute_ms"] - others) / others if others else None}


def merge_timelines(processes, path):
    """One Perfetto trace with a process track per (process, device); returns how the
    clocks were lined up, or None when no process has a timeline."""
    tracks, per_host_offset, origins = [], {}, []
    for p in processes:
        tl = os.path.join(p.dir, "timeline.trace.json")
        if not p.has_reports or not os.path.exists(tl):
            continue
        try:
            doc = load_json_tolerant(tl)
        except (OSError, ValueError):
            continue
        header = doc.get("pasta", {}) if isinstance(doc, dict) else {}
        events = timeline_events(doc)
        origin = next((e["args"]["clock_ns"] for e in events if e.get("name") == "pasta_origin"),
                      None)
        if origin is None or "clock_ns" not in header or "wall_ns" not in header:
            continue
        # One host, one clock: the first timeline of a host sets its offset to wall time.
        offset = per_host_offset.setdefault(p.host, header["wall_ns"] - header["clock_ns"])
        wall_origin = origin + offset  # wall-clock ns of this trace's ts = 0
        origins.append(wall_origin)
        tracks.append((p, events, wall_origin))
    if not tracks:
        return None
    job_origin = min(origins)
    out = []
    for index, (p, events, wall_origin) in enumerate(tracks):
        shift_us = (wall_origin - job_origin) / 1e3
        base = 100 * (index + 1)
        names = {}
        for e in events:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                names[e.get("pid")] = e["args"]["name"]
        for e in events:
            if e.get("name") == "pasta_origin":
                continue
            e = dict(e)
            e["pid"] = base + int(e.get("pid", 0))
            if e.get("ph") == "M":
                if e.get("name") == "process_name":
                    e["args"] = {"name": f"{p.label} ({p.host}, pid {p.pid}): {e['args']['name']}"}
                out.append(e)
                continue
            if "ts" in e:
                e["ts"] = round(e["ts"] + shift_us, 3)
            out.append(e)
        for orig_pid in sorted(names):
            out.append({"name": "process_sort_index", "ph": "M", "pid": base + int(orig_pid),
                        "tid": 0, "args": {"sort_index": base + int(orig_pid)}})
    hosts = sorted(per_host_offset)
    alignment = ("one host: every process on its clock, exactly" if len(hosts) == 1 else
                 f"{len(hosts)} hosts: processes of a host on its clock, hosts through their "
                 "wall clocks (as close as NTP keeps them)")
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms",
           "pasta": {"alignment": alignment, "origin_wall_ns": job_origin,
                     "processes": [t[0].label for t in tracks]},
           "traceEvents": out}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
    return alignment


def _fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _csv(path, rows, columns):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([r.get(c) if not isinstance(r.get(c), float) else f"{r[c]:.6g}"
                    for c in columns])
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)


def process_table(rows):
    """The processes as text, one line each."""
    lines = [f"  {'rank':>5} {'pid':>8} {'host':<16} {'launches':>9} {'device_ms':>10} "
             f"{'busy%':>6} {'peak_MB':>8}  status / reports"]
    for r in rows:
        where = r["dir"] if r["dir"] else ""
        status = {"finished": where or ".", "no GPU work": "no GPU work: no reports",
                  "running": "did not finish: killed before writing its reports?"}.get(
            r["status"], r["status"])
        if r.get("stopped_by"):
            status += f" (stopped early: {r['stopped_by']})"
        lines.append(f"  {_fmt(r['rank']):>5} {_fmt(r['pid']):>8} {str(r['host'])[:16]:<16} "
                     f"{_fmt(r['launches']):>9} {_fmt(r['device_ms'], 2):>10} "
                     f"{_fmt(r['busy_pct']):>6} {_fmt(r['peak_tensor_mb']):>8}  {status}")
    return "\n".join(lines)


def duplicates(rows):
    """Ranks that more than one process with reports claims."""
    seen = {}
    for r in rows:
        if r["rank"] is not None and r["status"] == "finished":
            seen.setdefault(r["rank"], []).append(r["pid"])
    return {rank: pids for rank, pids in seen.items() if len(pids) > 1}


def merge(dirs, out_dir, run_id=None, found=None):
    """Writes the job files into out_dir; returns the job document (also job.json).
    `found`: what find_processes(dirs, run_id) returned, where the caller has it."""
    processes, problems = found or find_processes(dirs, run_id)
    problems = list(problems)
    rows = [summarize(p) for p in processes]
    kernels = spread(processes, "kernel_freq", "kernels", "kernel", "total_ms")
    operators = spread(processes, "op_summary", "operators", "operator", "device_self_ms")
    os.makedirs(out_dir, exist_ok=True)
    alignment = merge_timelines(processes, os.path.join(out_dir, "job.trace.json"))
    dup = duplicates(rows)
    for rank, pids in sorted(dup.items()):
        problems.append(f"rank {rank} is claimed by {len(pids)} processes (pids "
                        f"{', '.join(map(str, pids))}): their reports share one directory")
    doc = {"pasta_job": FORMAT, "run_id": run_id, "sources": [os.path.abspath(d) for d in dirs],
           "processes": rows, "straggler": straggler(rows), "kernels": kernels,
           "operators": operators, "timeline": "job.trace.json" if alignment else None,
           "clock_alignment": alignment, "problems": problems}
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in
              ("finished", "no GPU work", "running")}
    doc["counts"] = counts
    tmp = os.path.join(out_dir, "job.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "job.json"))
    _csv(os.path.join(out_dir, "job.kernels.csv"), kernels,
         ["name", "processes", "min", "median", "max", "slowest"])
    if operators:
        _csv(os.path.join(out_dir, "job.operators.csv"), operators,
             ["name", "processes", "min", "median", "max", "slowest"])
    with open(os.path.join(out_dir, "job.txt"), "w") as f:
        f.write(job_text(doc))
    return doc


def job_text(doc, top=10):
    rows = doc["processes"]
    c = doc["counts"]
    lines = [f"== pasta job: {len(rows)} processes: {c['finished']} with reports, "
             f"{c['no GPU work']} with no GPU work, {c['running']} that did not finish ==",
             process_table(rows)]
    if doc.get("straggler"):
        s = doc["straggler"]
        lines.append(f"\nstraggler: {s['process']}, {s['compute_ms']:.2f} ms of compute "
                     f"(NCCL left out) against a median of {s['others_median_ms']:.2f} ms for "
                     f"the others" + (f" (+{s['excess_pct']:.1f}%)" if s["excess_pct"] is not None
                                      else ""))
    for title, key in (("kernels", "kernels"), ("operators", "operators")):
        table = doc.get(key) or []
        if not table:
            continue
        lines.append(f"\nDevice time per {title[:-1]} over processes (ms, top {min(top, len(table))}"
                     f" of {len(table)})")
        lines.append(f"  {'min':>10} {'median':>10} {'max':>10} {'procs':>5}  {'slowest':<10} name")
        for r in table[:top]:
            name = r["name"] if len(r["name"]) <= 70 else r["name"][:67] + "..."
            lines.append(f"  {r['min']:>10.3f} {r['median']:>10.3f} {r['max']:>10.3f} "
                         f"{r['processes']:>5}  {r['slowest']:<10} {name}")
    if doc.get("timeline"):
        lines.append(f"\ntimeline: {doc['timeline']} ({doc['clock_alignment']})")
    for p in doc.get("problems", []):
        lines.append(f"problem: {p}")
    return "\n".join(lines) + "\n"

"""pasta's view of a job: every process that loaded pasta, side by side.

Each process of a job enters itself in <dir>/processes/<host>-<pid>.json
when its profiler starts and again when it stops (include/pasta/core/
detail/process_registry.hpp), and writes its reports into a directory of its
own (rank<R>, pid<P>, or the job directory itself). This module reads those
lists, from one directory or from several gathered from many hosts, and
writes the job's files:

  job.json / job.txt        the processes (rank, pid, host, launches, device
                            time, GPU busy share, peak tensor memory, top
                            kernel, or why it has no reports or was left
                            out), the straggler, the analyses below
  job.kernels.csv           per kernel: device time over ranks (min, median,
                            max) and the slowest rank
  job.operators.csv         the same per operator (pipelines with --torch)
  job.ranks.csv             per process: compute, communication, memory and
                            idle time, overlap, waits in collectives, idle by
                            cause, launch delays, and what it is slow in
  job.collectives.csv       the NCCL collectives matched across ranks: the
                            last rank to arrive and by how much
  job.trace.json            one Perfetto timeline of a few ranks (slowest,
                            fastest, median, the outliers and those asked
                            for), a process track each; every rank's own
                            timeline.trace.json is beside its reports
  tables/*.parquet          the ranks' records and tables (job_store.py)

The records are read and analysed by DuckDB (job_store.py), so the merge's time
and memory stay bounded for thousands of ranks; without DuckDB the processes are
listed and the analyses say what is missing in one line.

Clock alignment: processes on one host share its clock (CUPTI's, or the
steady clock), so their timelines line up exactly; each timeline also keeps
one reading of that clock taken together with the wall clock, and hosts are
lined up through their wall clocks (as well as NTP keeps them, typically
within a millisecond). Nothing here needs a GPU.
"""
import collections
import csv
import io
import json
import os
import re
import statistics

import job_store
import kernel_kinds
from overview import busy, device_records, load_json_tolerant, read_timeline, timeline_events

FORMAT = 2  # of job.json
ENTRY_FORMAT = 1  # of the process entries this pasta reads (core/detail/process_registry.hpp)
PASTA_VERSION = "0.1.0"  # include/pasta/core/version.hpp; job_test.py checks they agree
TIMELINE_RANKS = 8  # ranks on the job's timeline, besides those asked for
OUTLIERS = 8  # ranks named per verdict
COLLECTIVES = 20  # collectives in job.json and on the page, by skew; the CSV has them all
# A rank is slow in compute when its compute exceeds the median rank's by this share; it
# waits in collectives when its wait exceeds the median rank's by this share of the median
# compute.
OUTLIER_SHARE = 0.05
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
        self.trouble = None  # why the job's analyses leave it out (vet)

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


_PID = re.compile(r'"pid":(-?\d+)')
_TS = re.compile(r'"ts":(-?[0-9.eE+]+)')


def timeline_lines(path):
    """(header, clock at ts = 0, event lines) of a pasta timeline, read as the timeline tool
    writes it, one event a line ("{...},"); a line cut in two at the end is dropped. A
    timeline written on one line is read whole. None where it has no clock reading."""
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    if len(lines) < 3:
        doc = load_json_tolerant(path)
        header = doc.get("pasta", {}) if isinstance(doc, dict) else {}
        lines = [json.dumps(e, separators=(",", ":")) for e in timeline_events(doc)]
    else:
        first = lines[0]
        at = first.find('"pasta":')
        try:
            header = json.JSONDecoder().raw_decode(first[at + 8:])[0] if at >= 0 else {}
        except ValueError:
            header = {}
        lines = [l.rstrip(",") for l in lines[1:]]
        lines = [l for l in lines if l.startswith("{\"") and l.endswith("}")]
    origin = None
    for l in lines:
        if '"pasta_origin"' in l:
            origin = json.loads(l)["args"]["clock_ns"]
            break
    if origin is None or "clock_ns" not in header or "wall_ns" not in header:
        return None
    return header, origin, lines


def merge_timelines(processes, path, why=None):
    """One Perfetto trace with a process track per (process, device); returns how the
    clocks were lined up, or None when no process has a timeline. why: {label: why this
    process is on it}, said in its tracks' names. Events are copied as text, their pid and
    ts rewritten: parsing and writing each as JSON took seconds a rank."""
    why = why or {}
    tracks, per_host_offset, origins = [], {}, []
    for p in processes:
        tl = os.path.join(p.dir, "timeline.trace.json")
        if not p.has_reports or not os.path.exists(tl):
            continue
        try:
            found = timeline_lines(tl)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if found is None:
            continue
        header, origin, lines = found
        # One host, one clock: the first timeline of a host sets its offset to wall time.
        offset = per_host_offset.setdefault(p.host, header["wall_ns"] - header["clock_ns"])
        wall_origin = origin + offset  # wall-clock ns of this trace's ts = 0
        origins.append(wall_origin)
        tracks.append((p, lines, wall_origin))
    if not tracks:
        return None
    job_origin = min(origins)
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        out.write('{"schemaVersion":1,"displayTimeUnit":"ms","traceEvents":[\n')
        sort = []
        for index, (p, lines, wall_origin) in enumerate(tracks):
            shift_us = (wall_origin - job_origin) / 1e3
            base = 100 * (index + 1)
            pids = set()

            def pid(m):
                pids.add(int(m.group(1)))
                return f'"pid":{base + int(m.group(1))}'

            def ts(m):
                return f'"ts":{float(m.group(1)) + shift_us:.3f}'
            for line in lines:
                if '"pasta_origin"' in line:
                    continue
                if '"ph":"M"' in line and '"process_name"' in line:
                    e = json.loads(line)
                    reason = f"{why[p.label]}; " if p.label in why else ""
                    e["pid"] = base + int(e.get("pid", 0))
                    pids.add(int(e["pid"]) - base)
                    e["args"] = {"name": f"{p.label} ({reason}{p.host}, pid {p.pid}): "
                                         f"{e['args']['name']}"}
                    out.write(json.dumps(e, separators=(",", ":")) + ",\n")
                    continue
                line = _PID.sub(pid, line, count=1)
                out.write(_TS.sub(ts, line, count=1) + ",\n")
            sort += [{"name": "process_sort_index", "ph": "M", "pid": base + q, "tid": 0,
                      "args": {"sort_index": base + q}} for q in sorted(pids)]
        for e in sort:
            out.write(json.dumps(e, separators=(",", ":")) + ",\n")
        hosts = sorted(per_host_offset)
        alignment = ("one host: every process on its clock, exactly" if len(hosts) == 1 else
                     f"{len(hosts)} hosts: processes of a host on its clock, hosts through "
                     "their wall clocks (as close as NTP keeps them)")
        info = {"alignment": alignment, "origin_wall_ns": job_origin,
                "processes": [t[0].label for t in tracks],
                "why": {t[0].label: why[t[0].label] for t in tracks if t[0].label in why}}
        out.write('{}],"pasta":' + json.dumps(info) + "}\n")
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
        if r.get("problem"):
            status = r["problem"]
        if r.get("stopped_by"):
            status += f" (stopped early: {r['stopped_by']})"
        lines.append(f"  {_fmt(r['rank']):>5} {_fmt(r['pid']):>8} {str(r['host'])[:16]:<16} "
                     f"{_fmt(r['launches']):>9} {_fmt(r['device_ms'], 2):>10} "
                     f"{_fmt(r['busy_pct']):>6} {_fmt(r['peak_tensor_mb']):>8}  {status}")
    return "\n".join(lines)


def duplicates(rows):
    """Ranks that more than one process with reports claims (of those not left out)."""
    seen = {}
    for r in rows:
        if r["rank"] is not None and r["status"] == "finished" and not r.get("problem"):
            seen.setdefault(r["rank"], []).append(r["pid"])
    return {rank: pids for rank, pids in seen.items() if len(pids) > 1}


def vet(processes):
    """Names what keeps a process out of the job's analyses (p.trouble): an entry another
    pasta wrote in a format this one does not read, a process of another job (another world
    size than most), a directory that is gone; returns notes that leave it in (another pasta
    version)."""
    notes = []
    sizes = collections.Counter(p.entry.get("world_size") for p in processes
                                if p.entry.get("world_size"))
    world = sizes.most_common(1)[0][0] if sizes else None
    for p in processes:
        entry_format = p.entry.get("pasta_process", ENTRY_FORMAT)
        size = p.entry.get("world_size")
        if entry_format != ENTRY_FORMAT:
            p.trouble = (f"written by another pasta ({p.entry.get('pasta_version', '?')}: its "
                         f"entry's format is {entry_format}, this pasta {PASTA_VERSION} reads "
                         f"{ENTRY_FORMAT}): left out")
        elif world and size and size != world:
            p.trouble = (f"from another job (world size {size}, this job's {world}; run "
                         f"{p.entry.get('run_id') or '?'}): left out")
        elif p.has_reports and not os.path.isdir(p.dir):
            p.trouble = f"its directory {p.dir} is missing: nothing of it merged"
        elif (p.entry.get("pasta_version") or PASTA_VERSION) != PASTA_VERSION:
            notes.append(f"{p.label}: written by pasta {p.entry['pasta_version']}, merged by "
                         f"{PASTA_VERSION}")
    return notes


def choose_timeline_ranks(rows, verdicts, asked=()):
    """The processes on the job's timeline, each with why: the slowest, fastest and median
    in compute, the outliers, and those asked for (labels or rank numbers); all of them when
    there are TIMELINE_RANKS or fewer. Returns {label: reason}."""
    timed = sorted((r for r in rows if isinstance(r.get("compute_ms"), (int, float))),
                   key=lambda r: r["compute_ms"])
    chosen = {}
    for r in rows:
        key = r["label"]
        if str(r["rank"]) in asked or key in asked:
            chosen[key] = "asked for"
    with_reports = [r for r in rows if r.get("dir") and not r.get("problem")]
    if len(with_reports) <= TIMELINE_RANKS:
        for r in with_reports:
            chosen.setdefault(r["label"], "every rank")
        return chosen
    if timed:
        chosen.setdefault(timed[-1]["label"], "slowest in compute")
        chosen.setdefault(timed[0]["label"], "fastest in compute")
        chosen.setdefault(timed[(len(timed) - 1) // 2]["label"], "median in compute")
    else:  # no compute times (no DuckDB): the first by rank
        for r in with_reports[:TIMELINE_RANKS]:
            chosen.setdefault(r["label"], "first by rank")
    for verdict, named in verdicts.items():
        for o in named:
            if len(chosen) >= TIMELINE_RANKS + len(asked):
                break
            chosen.setdefault(o["process"], verdict)
    return chosen


def merge(dirs, out_dir, run_id=None, found=None, timeline_ranks=()):
    """Writes the job files into out_dir; returns the job document (also job.json).
    `found`: what find_processes(dirs, run_id) returned, where the caller has it;
    timeline_ranks: ranks (numbers or labels) the job's timeline must hold."""
    processes, problems = found or find_processes(dirs, run_id)
    problems = list(problems) + vet(processes)
    os.makedirs(out_dir, exist_ok=True)
    rows = [summarize_entry(p) for p in processes]
    usable = [p for p in processes if p.has_reports and not p.trouble]
    doc = {"pasta_job": FORMAT, "run_id": run_id, "sources": [os.path.abspath(d) for d in dirs],
           "processes": rows, "kernels": [], "operators": [], "analysis": None}
    if job_store.available():
        analyse(processes, usable, rows, doc, out_dir)
    else:
        doc["analysis_missing"] = job_store.MISSING
    for p, row in zip(processes, rows):
        if p.trouble:
            problems.append(f"{p.label} ({p.host}, pid {p.pid}): {p.trouble}")
        for why in row.get("problems", []):
            problems.append(f"{p.label}: {why}")
    doc["straggler"] = straggler(rows)
    verdicts = (doc["analysis"] or {}).get("outliers", {})
    chosen = choose_timeline_ranks(rows, verdicts, {str(r) for r in timeline_ranks})
    shown = [p for p in usable if p.label in chosen]
    alignment = merge_timelines(shown, os.path.join(out_dir, "job.trace.json"), chosen)
    doc["timeline"] = "job.trace.json" if alignment else None
    doc["timeline_ranks"] = [{"process": p.label, "why": chosen[p.label],
                              "timeline": os.path.relpath(os.path.join(p.dir,
                                                                       "timeline.trace.json"),
                                                          out_dir)} for p in shown]
    doc["clock_alignment"] = alignment
    dup = duplicates(rows)
    for rank, pids in sorted(dup.items()):
        problems.append(f"rank {rank} is claimed by {len(pids)} processes (pids "
                        f"{', '.join(map(str, pids))}): their reports share one directory")
    doc["problems"] = problems
    doc["counts"] = {s: sum(1 for r in rows if r["status"] == s) for s in
                     ("finished", "no GPU work", "running")}
    write_files(doc, out_dir)
    return doc


def summarize_entry(p):
    """The row of the processes table for p, from its entry alone (analyse() fills in the
    rest)."""
    row = {"rank": p.rank, "pid": p.pid, "host": p.host, "status": p.status,
           "launches": p.launches, "label": p.label,
           "dir": os.path.relpath(p.dir, p.job_dir) if p.has_reports and not p.trouble
           else None, "device_ms": None, "busy_pct": None, "span_ms": None,
           "peak_tensor_mb": None, "top_kernel": None, "compute_ms": None}
    for key in ("partial", "stopped_by"):
        if p.entry.get(key):
            row[key] = p.entry[key]
    if p.trouble:
        row["problem"] = p.trouble
    return row


def analyse(processes, usable, rows, doc, out_dir):
    """The job's tables (tables/*.parquet) and analyses into doc and rows."""
    store = job_store.Store(out_dir)
    index = {id(p): rid for rid, p in enumerate(processes)}
    labels = {rid: p.label for rid, p in enumerate(processes)}
    trouble = store.ingest([{"rid": index[id(p)], "label": p.label, "rank": p.rank,
                             "host": p.host, "pid": p.pid, "dir": p.dir} for p in usable])
    per = store.per_process()
    parts = store.breakdown()
    causes = store.idle_by_cause()
    delays = store.launch_delays()
    every, matched, waits = store.collectives()
    worst = sorted(every, key=lambda c: -c["skew_us"])[:COLLECTIVES]
    ranks = []
    for p in usable:
        rid = index[id(p)]
        row = rows[rid]
        row["problems"] = trouble.get(rid, [])
        got = per.get(rid, {})
        for key in ("device_ms", "compute_ms", "top_kernel"):
            row[key] = got.get(key)
        part = parts.get(rid)
        if part:
            row["span_ms"] = part["span_us"] / 1e3
            row["busy_pct"] = 100.0 * part["busy_us"] / part["span_us"] if part["span_us"] else None
        row["peak_tensor_mb"] = peak_tensor_mb(p)
        if not part:
            continue
        wait = waits.get(rid, {})
        delay = delays.get(rid)
        ranks.append({
            "process": p.label, "rank": p.rank, "host": p.host,
            **{k[:-3] + "_ms": part[k] / 1e3 for k in ("span_us", "compute_us",
                                                       "communication_us", "memory_us",
                                                       "idle_us")},
            "overlap_pct": 100.0 * part["overlap_us"] / part["comm_total_us"]
            if part["comm_total_us"] else None,
            "collective_ms": part["comm_total_us"] / 1e3,
            "wait_ms": wait["wait_us"] / 1e3 if wait else None,
            "last_arrivals": wait.get("last") if wait else None,
            "idle_by_cause_ms": {k: v / 1e3 for k, v in sorted(causes.get(rid, {}).items())},
            "launch_delay_us": {"launches": delay["launches"], "mean": delay["mean_us"],
                                "median": delay["median_us"], "max": delay["max_us"]}
            if delay else None})
    outliers = verdicts(ranks)
    for r in ranks:
        r["verdict"] = "; ".join(v for v, named in outliers.items()
                                 if any(o["process"] == r["process"] for o in named)) or None
    doc["kernels"] = store.spread("kernels", "kernel", "total_ms", labels)
    doc["operators"] = store.spread("operators", "operator", "device_self_ms", labels)
    for c in every:
        c["last"] = labels[c.pop("last_rid")]
    charted = [index[id(p)] for p in usable]
    kinds = store.kinds_by_kernel(charted, kernel_kinds.kind)
    for rid in charted:
        k = dict(kinds.get(rid, {}))
        for cat in ("memcpy", "memset"):
            if per.get(rid, {}).get(cat + "_ms"):
                k[kernel_kinds.record_kind(cat)] = k.get(kernel_kinds.record_kind(cat), 0.0) + \
                    per[rid][cat + "_ms"]
        rows[rid]["kinds"] = [(kind, k[kind]) for kind in kernel_kinds.KINDS if k.get(kind)]
    doc["analysis"] = {
        "ranks": ranks, "over_ranks": over_ranks(ranks), "outliers": outliers,
        "collectives": {"matched": matched, "by_skew": worst, "all": every},
        "launch_gap_us": job_store.LAUNCH_GAP_US, "tables": "tables/"}


def peak_tensor_mb(p):
    ta = p.report("tensor_alloc") if os.path.exists(os.path.join(p.dir, "tensor_alloc.json")) \
        else None
    peaks = [d.get("peak_live_mb") for d in (ta or {}).get("tables", {}).get("devices", [])]
    peaks = [x for x in peaks if isinstance(x, (int, float))]
    return max(peaks) if peaks else None


BREAKDOWN = ("compute_ms", "communication_ms", "memory_ms", "idle_ms")


def over_ranks(ranks):
    """Each part of the time over the ranks: min, median, max and the rank with the most."""
    out = {}
    for key in BREAKDOWN + ("wait_ms", "overlap_pct"):
        values = [(r[key], r["process"]) for r in ranks if isinstance(r.get(key), (int, float))]
        if values:
            top = max(values)
            out[key] = {"min": min(v for v, _ in values),
                        "median": statistics.median(v for v, _ in values), "max": top[0],
                        "most": top[1]}
    return out


def verdicts(ranks):
    """The outliers, OUTLIERS at most per verdict, the largest first: slow in compute
    (compute over the median rank's by OUTLIER_SHARE) and waits in collectives (a wait over
    the median rank's by OUTLIER_SHARE of the median compute)."""
    out = {"slow in compute": [], "waits in collectives": []}
    compute = [r["compute_ms"] for r in ranks]
    if len(compute) < 2:
        return out
    median = statistics.median(compute)
    for r in ranks:
        if r["compute_ms"] > median * (1 + OUTLIER_SHARE):
            out["slow in compute"].append({"process": r["process"], "ms": r["compute_ms"],
                                           "median_ms": median})
    waits = [r["wait_ms"] for r in ranks if r.get("wait_ms") is not None]
    if waits:
        median_wait = statistics.median(waits)
        for r in ranks:
            if r.get("wait_ms") is not None and r["wait_ms"] > median_wait + OUTLIER_SHARE * median:
                out["waits in collectives"].append({"process": r["process"], "ms": r["wait_ms"],
                                                    "median_ms": median_wait})
    for named in out.values():
        named.sort(key=lambda o: -(o["ms"] - o["median_ms"]))
        del named[OUTLIERS:]
    return out


COLLECTIVE_COLUMNS = ["grp", "seq", "name", "processes", "last", "skew_us", "behind_median_us",
                      "after_last_us"]
RANK_COLUMNS = ["process", "rank", "host", "span_ms", "compute_ms", "communication_ms",
                "memory_ms", "idle_ms", "overlap_pct", "collective_ms", "wait_ms",
                "last_arrivals", "verdict"]


def write_files(doc, out_dir):
    """job.json (the collectives by skew only), the CSVs (every row) and job.txt."""
    every = (doc.get("analysis") or {}).get("collectives", {}).pop("all", [])
    tmp = os.path.join(out_dir, "job.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "job.json"))
    columns = ["name", "processes", "min", "median", "max", "slowest"]
    _csv(os.path.join(out_dir, "job.kernels.csv"), doc["kernels"], columns)
    if doc["operators"]:
        _csv(os.path.join(out_dir, "job.operators.csv"), doc["operators"], columns)
    analysis = doc.get("analysis")
    if analysis:
        causes = sorted({c for r in analysis["ranks"] for c in r["idle_by_cause_ms"]})
        flat = [dict(r, **{f"idle {c} ms": r["idle_by_cause_ms"].get(c) for c in causes},
                     **{f"launch delay {k} us": (r["launch_delay_us"] or {}).get(k)
                        for k in ("median", "max")}) for r in analysis["ranks"]]
        _csv(os.path.join(out_dir, "job.ranks.csv"), flat, RANK_COLUMNS +
             [f"idle {c} ms" for c in causes] + ["launch delay median us", "launch delay max us"])
        _csv(os.path.join(out_dir, "job.collectives.csv"), every, COLLECTIVE_COLUMNS)
    with open(os.path.join(out_dir, "job.txt"), "w") as f:
        f.write(job_text(doc))


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
    lines += analysis_text(doc)
    if doc.get("timeline"):
        lines.append(f"\ntimeline: {doc['timeline']} ({doc['clock_alignment']}): " + ", ".join(
            f"{t['process']} ({t['why']})" for t in doc.get("timeline_ranks", [])) +
            "; every rank's own timeline is timeline.trace.json in its directory")
    for p in doc.get("problems", []):
        lines.append(f"problem: {p}")
    return "\n".join(lines) + "\n"


def analysis_text(doc, top=10):
    """The analyses over ranks as text lines."""
    a = doc.get("analysis")
    if not a:
        return [f"\nanalyses: {doc['analysis_missing']}"] if doc.get("analysis_missing") else []
    lines = [f"\nTime per rank (ms over {len(a['ranks'])} ranks; compute first, then "
             "communication not overlapped with it, memory copies, idle)",
             f"  {'':<18} {'min':>10} {'median':>10} {'max':>10}  most"]
    for key, o in a["over_ranks"].items():
        lines.append(f"  {key:<18} {o['min']:>10.3f} {o['median']:>10.3f} {o['max']:>10.3f}  "
                     f"{o['most']}")
    for verdict, named in a["outliers"].items():
        if named:
            lines.append(f"{verdict}: " + ", ".join(
                f"{o['process']} ({o['ms']:.3f} ms, median {o['median_ms']:.3f})" for o in named))
    c = a["collectives"]
    if c["matched"]:
        lines.append(f"\nNCCL collectives matched across ranks: {c['matched']}; the largest "
                     f"skews (us: last arrival - first)")
        for k in c["by_skew"][:top]:
            lines.append(f"  group {k['grp']} #{k['seq']:<6} {k['skew_us']:>12.3f}  last: "
                         f"{k['last']} ({k['processes']} ranks) {k['name'][:60]}")
    return lines

"""What the top of the report page shows, from a directory of reports: where the
device time went (busy and idle over the run, time by kind of kernel, the top
kernels and operators), tensor memory over time with its peak, one step's
picture, and for a job its processes side by side.

Every series is bounded whatever the run's length: the busy share in BINS bins,
TOP kernels and operators, at most MEMORY_POINTS memory points (each the largest
of the points it stands for, so the peak stays), and a step picture of at most
PICTURE_STREAMS + 3 rows whose bars are merged below PICTURE_COLUMNS per window. Plain data here; charts.py draws it.
"""
import json
import os
import re

import kernel_kinds

TOP = 10
BINS = 120
MEMORY_POINTS = 400
PICTURE_COLUMNS = 800  # about the picture axis's width in pixels
PROCESSES = 32  # a job's processes drawn side by side: the busiest
PICTURE_STREAMS = 16  # the busiest in the window; the others share one row
DEVICE_CATEGORIES = ("kernel", "memcpy", "memset")
# A training step ends where its optimizer step does (torch.optim's RecordFunction
# "Optimizer.step#SGD.step") and starts at its zero_grad, where there is one before;
# profiler steps and scopes named "step ..." mark one whole.
STEP_END = re.compile(r"^Optimizer\.step#")
STEP_START = re.compile(r"^Optimizer\.zero_grad#")
STEP_RANGE = re.compile(r"^(ProfilerStep#\d+|step\b.*)$", re.IGNORECASE)


def load_json_tolerant(path):
    """A JSON file, or a timeline cut short (its closing brackets missing)."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        body = text.rstrip().rstrip(",")
        for tail in ("]}", "]", "}]}"):
            try:
                return json.loads(body + tail)
            except ValueError:
                continue
        raise


def timeline_events(doc):
    """The events of a pasta timeline in either format (object or array)."""
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [e for e in events if isinstance(e, dict) and e]


def read_timeline(out_dir):
    """The events of out_dir/timeline.trace.json, or None."""
    path = os.path.join(out_dir, "timeline.trace.json")
    if not os.path.exists(path):
        return None
    try:
        return timeline_events(load_json_tolerant(path))
    except (OSError, ValueError):
        return None


def device_records(events):
    """Kernels, copies and memsets: (start us, end us, category, name, pid, tid), by start."""
    return sorted((e["ts"], e["ts"] + e.get("dur", 0), e["cat"], e.get("name", ""),
                   e.get("pid", 0), e.get("tid", 0)) for e in events
                  if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES and "ts" in e)


def union(spans):
    """The sorted, disjoint intervals covering the (start, end) spans."""
    merged = []
    for s, t in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], t)
        else:
            merged.append([s, t])
    return merged


def busy(records):
    """(busy us, span us, disjoint busy intervals) of device records."""
    covered = union((r[0], r[1]) for r in records)
    if not covered:
        return 0.0, 0.0, []
    return (sum(t - s for s, t in covered), covered[-1][1] - covered[0][0], covered)


def busy_over_time(covered, bins=BINS):
    """The busy share (%) in each of `bins` equal slices of the span: [(start ms, %)]."""
    if not covered:
        return []
    t0, t1 = covered[0][0], covered[-1][1]
    width = (t1 - t0) / bins or 1.0
    share = [0.0] * bins
    for s, t in covered:
        first, last = int((s - t0) / width), min(int((t - t0) / width), bins - 1)
        for b in range(first, last + 1):
            lo, hi = t0 + b * width, t0 + (b + 1) * width
            share[min(b, bins - 1)] += max(0.0, min(t, hi) - max(s, lo))
    return [((t0 + b * width) / 1e3, 100.0 * v / width) for b, v in enumerate(share)]


def read_report(out_dir, tool):
    try:
        with open(os.path.join(out_dir, tool + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def table(report, name):
    return (report or {}).get("tables", {}).get(name, []) or []


def kinds(kernel_rows, records, idle_us):
    """Device time (ms) per kind: kernels from kernel_freq's totals, copies and memsets
    from the timeline, idle gaps; [(kind, ms)] in kernel_kinds.KINDS order, zeros left out."""
    ms = dict.fromkeys(kernel_kinds.KINDS, 0.0)
    for k in kernel_rows:
        if isinstance(k.get("total_ms"), (int, float)):
            ms[kernel_kinds.kind(k.get("signature") or k.get("kernel", ""))] += k["total_ms"]
    for r in records:
        kind = kernel_kinds.record_kind(r[2])
        if kind:
            ms[kind] += (r[1] - r[0]) / 1e3
    if records:
        ms[kernel_kinds.IDLE] = idle_us / 1e3
    return [(k, v) for k, v in ms.items() if v > 0]


def top_kernels(kernel_rows, n=TOP):
    timed = sorted((k for k in kernel_rows if isinstance(k.get("total_ms"), (int, float))
                    and k["total_ms"] > 0), key=lambda k: -k["total_ms"])[:n]
    return [{"name": kernel_kinds.short_name(k.get("kernel", "")),
             "full": k.get("signature") or k.get("kernel", ""), "ms": k["total_ms"],
             "launches": k.get("launches"), "kind": kernel_kinds.kind(
                 k.get("signature") or k.get("kernel", ""))} for k in timed]


def top_operators(op_rows, n=TOP):
    timed = sorted((o for o in op_rows if isinstance(o.get("device_self_ms"), (int, float))
                    and o["device_self_ms"] > 0), key=lambda o: -o["device_self_ms"])[:n]
    return [{"name": o["operator"], "full": o["operator"], "ms": o["device_self_ms"],
             "calls": o.get("calls")} for o in timed]


def downsample(points, n=MEMORY_POINTS):
    """At most n points, each the largest of a run of consecutive points."""
    if len(points) <= n:
        return points
    step = len(points) / n
    return [max(points[int(i * step):int((i + 1) * step)], key=lambda p: p[1]) for i in range(n)]


def memory(report):
    """Live tensor memory over time per GPU, with the peak and the operator at it."""
    out = []
    rows = table(report, "timeline")
    for d in table(report, "devices"):
        if d.get("device") == "cpu":
            continue
        points = [(r["time_ms"], r["live_mb"]) for r in rows if r.get("device") == d["device"]]
        if not points:
            continue
        out.append({"device": d["device"], "points": downsample(points),
                    "peak_mb": d.get("peak_live_mb"), "peak_at_ms": d.get("peak_at_ms"),
                    "op_at_peak": d.get("op_at_peak") or ""})
    return out


def host_ranges(events, categories=("op", "scope")):
    """Operators and scopes on the host as (start us, end us, name, depth, category)."""
    stacks, out = {}, []
    for e in events:
        if e.get("ph") not in ("B", "E") or e.get("cat") not in categories:
            continue
        stack = stacks.setdefault((e.get("pid"), e.get("tid")), [])
        if e["ph"] == "B":
            stack.append(e)
        elif stack:
            b = stack.pop()
            out.append((b["ts"], e["ts"], b.get("name", ""), len(stack), b.get("cat")))
    out.sort()
    return out


def steps(ranges):
    """Training steps as (start us, end us): ranges named like a step, else from each
    optimizer step's zero_grad (or the end of the step before, or the first range) to
    the end of the optimizer step."""
    marked = [(s, t) for s, t, name, _, _ in ranges if STEP_RANGE.match(name)]
    if marked:
        return sorted(marked)
    ends = sorted(t for _, t, name, _, _ in ranges if STEP_END.match(name))
    zero_grads = [s for s, _, name, _, _ in ranges if STEP_START.match(name)]
    out, previous = [], ranges[0][0] if ranges else 0.0
    for end in ends:
        start = max([z for z in zero_grads if previous <= z < end], default=previous)
        out.append((start, end))
        previous = end
    return out


def choose_window(records, ranges, window=None, step=None):
    """(start us, end us, title) of the step picture: the window asked for (ms), the step
    asked for (1 = first), else the first full step (the second when there are two or
    more: the first also holds the start-up), else the whole run."""
    if window:
        return window[0] * 1e3, window[1] * 1e3, "The window asked for"
    found = steps(ranges)
    if step is not None:
        if 1 <= step <= len(found):
            s, t = found[step - 1]
            return s, t, f"One step: step {step} of {len(found)}"
        step = None
    if found:
        index = 1 if len(found) >= 2 else 0
        s, t = found[index]
        return s, t, f"One step: step {index + 1} of {len(found)}"
    if not records:
        return None
    return records[0][0], max(r[1] for r in records), "The whole run (no step markers)"


def merge_bars(bars, w0, w1, columns=PICTURE_COLUMNS):
    """Bars (start, end, key) of one row, sorted by start, drawn in `columns` pixel
    columns of the window (w0, w1): the same key following within a column merges;
    a row still holding more bars than columns gets one bar per column, of the key
    that covers most of it (runs of one key joined), so a row never holds more
    bars than columns, whatever the number of kernels."""
    resolution = (w1 - w0) / columns
    out = []
    for s, t, key in bars:
        if out and out[-1][2] == key and s - out[-1][1] <= resolution:
            out[-1][1] = max(out[-1][1], t)
        else:
            out.append([s, t, key])
    if len(out) <= columns:
        return out
    cover = [{} for _ in range(columns)]
    for s, t, key in out:
        for c in range(int((s - w0) / resolution), min(int((t - w0) / resolution), columns - 1) + 1):
            lo = w0 + c * resolution
            cover[c][key] = cover[c].get(key, 0.0) + min(t, lo + resolution) - max(s, lo)
    columned = []
    for c, keys in enumerate(cover):
        if not keys:
            continue
        key = max(keys, key=keys.get)
        lo = w0 + c * resolution
        if columned and columned[-1][2] == key and columned[-1][1] >= lo:
            columned[-1][1] = lo + resolution
        else:
            columned.append([lo, lo + resolution, key])
    return columned


def picture(records, ranges, window=None, step=None):
    """One window of the timeline: a row per device stream (bars by kernel kind) and
    a row per operator depth (the outer two); times in ms on the timeline's clock."""
    chosen = choose_window(records, ranges, window, step)
    if not chosen:
        return None
    w0, w1, title = chosen
    if w1 <= w0:
        return None
    streams = {}
    for s, t, cat, name, pid, tid in records:
        if t < w0 or s > w1:
            continue
        key = kernel_kinds.record_kind(cat) or kernel_kinds.kind(name)
        streams.setdefault((pid, tid), []).append((max(s, w0), min(t, w1), key))
    busiest = sorted(streams, key=lambda k: -sum(t - s for s, t, _ in streams[k]))
    rest = sorted(b for k in busiest[PICTURE_STREAMS:] for b in streams.pop(k))
    rows = []
    for (pid, tid), bars in sorted(streams.items()):
        rows.append({"label": f"GPU {pid - 1} stream {tid}", "bars": [
            (s / 1e3, (t - s) / 1e3, key) for s, t, key in merge_bars(bars, w0, w1)]})
    if rest:
        rows.append({"label": f"{len(busiest) - PICTURE_STREAMS} other streams", "bars": [
            (s / 1e3, (t - s) / 1e3, key) for s, t, key in merge_bars(rest, w0, w1)]})
    for depth in (0, 1):
        ops = [(max(s, w0), min(t, w1), name) for s, t, name, d, cat in ranges
               if d == depth and cat == "op" and t >= w0 and s <= w1]
        if ops:
            rows.append({"label": "operators" if depth == 0 else "operators, inner",
                         "bars": [(s / 1e3, (t - s) / 1e3, name)
                                  for s, t, name in merge_bars(ops, w0, w1)]})
    return {"start_ms": w0 / 1e3, "end_ms": w1 / 1e3, "title": title, "rows": rows,
            "kernels": sum(1 for r in records if r[2] == "kernel" and w0 <= r[0] <= w1)}


def run_overview(out_dir, window=None, step=None):
    """The overview of one process's reports, or None when it has no kernels."""
    kf = read_report(out_dir, "kernel_freq")
    kernel_rows = table(kf, "kernels")
    events = read_timeline(out_dir)
    records = device_records(events) if events else []
    if not kernel_rows and not records:
        return None
    busy_us, span_us, covered = busy(records)
    ops = top_operators(table(read_report(out_dir, "op_summary"), "operators"))
    ranges = host_ranges(events) if events else []
    return {
        "timeline": bool(records),
        "span_ms": span_us / 1e3, "busy_ms": busy_us / 1e3, "idle_ms": (span_us - busy_us) / 1e3,
        "busy_pct": 100.0 * busy_us / span_us if span_us > 0 else None,
        "busy_over_time": busy_over_time(covered),
        "kinds": kinds(kernel_rows, records, span_us - busy_us),
        "kernel_ms": (kf or {}).get("summary", {}).get("device time (ms)"),
        "launches": (kf or {}).get("summary", {}).get("launches"), "kernels": len(kernel_rows),
        "top_kernels": top_kernels(kernel_rows), "top_operators": ops,
        "memory": memory(read_report(out_dir, "tensor_alloc")),
        "picture": picture(records, ranges, window, step) if records else None,
    }


def job_overview(job, job_dir):
    """A job's processes side by side: time by kind per process (the merge's, job.json),
    the straggler, and the kernels and operators over processes (median, with the min-max
    range)."""
    processes = []
    straggler = (job.get("straggler") or {}).get("process")
    for row in job.get("processes", []):
        if not row.get("dir") or "kinds" not in row:
            continue
        name = (f"rank {row['rank']}" if row.get("rank") is not None else f"pid {row['pid']}")
        processes.append({"name": name, "straggler": name == straggler,
                          "kinds": [tuple(k) for k in row["kinds"]],
                          "compute_ms": row.get("compute_ms"), "busy_pct": row.get("busy_pct")})
    spread = [{"name": kernel_kinds.short_name(r["name"]), "full": r["name"], "ms": r["median"],
               "min": r["min"], "max": r["max"], "slowest": r["slowest"],
               "kind": kernel_kinds.kind(r["name"])}
              for r in (job.get("kernels") or [])[:TOP]]
    op_spread = [{"name": r["name"], "full": r["name"], "ms": r["median"], "min": r["min"],
                  "max": r["max"], "slowest": r["slowest"]} for r in (job.get("operators") or [])[:TOP]]
    listed = len(processes)
    if listed > PROCESSES:  # the busiest (the straggler among them), in rank order
        total = {id(p): sum(v for k, v in p["kinds"] if k != kernel_kinds.IDLE) for p in processes}
        ranked = sorted(processes, key=lambda p: (not p["straggler"], -total[id(p)]))
        keep = {id(p) for p in ranked[:PROCESSES]}
        processes = [p for p in processes if id(p) in keep]
    return {"processes": processes, "listed": listed, "straggler": job.get("straggler"),
            "top_kernels": spread, "top_operators": op_spread}


def parse_window(text):
    """"START-END" in ms (decimals allowed) -> (start, end); ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*-\s*(\d+(?:\.\d*)?)\s*(ms)?\s*", text or "")
    if not m or float(m.group(2)) <= float(m.group(1)):
        raise ValueError(f"--window takes START-END in ms with START < END (e.g. 480-520), "
                         f"not '{text}'")
    return float(m.group(1)), float(m.group(2))

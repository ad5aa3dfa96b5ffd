"""pasta report and pasta replay: the processes of a job listed and merged, each one's
HTML page, and traces replayed through pasta-trace."""
import concurrent.futures
import functools
import json
import os
import subprocess
import sys

from launcher.where import SHARE, Var, ask_library, fail, find


def make_report(out, output=None, quiet=False, window=None, step=None):
    """Renders out/report.html; returns its path, or None (saying why unless quiet).
    window (start, end ms) or step (1 = the first) choose the step picture."""
    try:
        import report  # share/pasta/report.py: Jinja2 and the charts, when a page is drawn
        page = report.render(out, SHARE, output, window, step)
        if not quiet and not report.charts_available():
            print(f"pasta: the report page has no charts: {report.CHARTS_MISSING}",
                  file=sys.stderr)
        return page
    except ImportError as e:  # the template engine: no page at all
        print(f"pasta: no HTML report: {e} (pip install {e.name or 'jinja2'})", file=sys.stderr)
    except OSError as e:
        print(f"pasta: no HTML report: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001  the page is extra: never the run's exit code
        print(f"pasta: no HTML report: {type(e).__name__}: {e} (the reports beside it are "
              "whole; please report this)", file=sys.stderr)
    return None


def make_process_reports(dirs, window=None, step=None):
    """The page of each process of a job, on every core: drawing a page's charts takes
    a few tenths of a second, and a job may have hundreds of processes."""
    render = functools.partial(make_report, quiet=True, window=window, step=step)
    if len(dirs) < 2:
        return [render(d) for d in dirs]
    with concurrent.futures.ProcessPoolExecutor(min(len(dirs), os.cpu_count() or 1)) as pool:
        return list(pool.map(render, dirs))


def paged(doc, out):
    """The directories of a job's processes that get a page of their own: those on the
    job's timeline (a bounded few; `pasta report DIR/rank<R>` draws any other's)."""
    return [os.path.normpath(os.path.join(out, os.path.dirname(t["timeline"])))
            for t in doc.get("timeline_ranks", [])]


def report(dirs, output, window=None, step=None, timeline_ranks=()):
    """pasta report DIR...: one page; a job (several processes, from one directory
    or from several hosts' directories) merged first."""
    if window is not None:
        try:
            import overview  # share/pasta/overview.py
            window = overview.parse_window(window)
        except ValueError as e:
            fail(str(e))
    if step is not None and step < 1:
        fail(f"--step takes a step number from 1, not {step}")
    for d in dirs:
        if not os.path.isdir(d):
            fail(f"not a directory: {d}")
    import job  # share/pasta/job.py: DuckDB, when a job is merged
    found = job.find_processes(dirs)
    processes = found[0]
    merged = len(dirs) > 1 or len(processes) > 1 or any(p.rank is not None for p in processes)
    if not merged and not any(f.endswith(".json") for f in os.listdir(dirs[0])):
        fail(f"no pasta reports (*.json) in {dirs[0]}")
    target = os.path.dirname(os.path.abspath(output)) if output else dirs[0]
    if merged:
        if not processes:
            fail(f"no processes listed under {', '.join(dirs)} (no processes/ folder)")
        doc = job.merge(dirs, target, found=found, timeline_ranks=timeline_ranks)
        print(job.job_text(doc), file=sys.stderr, end="")
        make_process_reports(paged(doc, target), window, step)
    page = make_report(target, output, window=window, step=step)
    if page is None:
        return 1
    print(page)
    return 0


def replay_job(files, out):
    """pasta replay A.pasta B.pasta ...: each trace through the default tools into a
    directory of its own (named by the rank or pid it was recorded with), entered
    in out/processes/ as its process was, then the job merged."""
    import job  # share/pasta/job.py: DuckDB, when a job is merged
    os.makedirs(out, exist_ok=True)
    # The replaying shell's rank variables must not stand for the traces' ranks.
    launchers = ask_library("rank_variable_names")
    env = {k: v for k, v in os.environ.items()
           if k not in (Var.RUN_ID, Var.OUTPUT_DIR) and k not in launchers}
    used, code = set(), 0
    for i, path in enumerate(files):
        meta = trace_metadata(path)
        name = (f"rank{meta['rank']}" if "rank" in meta else
                f"pid{meta['pid']}" if "pid" in meta else f"trace{i}")
        if name in used:
            name = f"{name}-{i}"
        used.add(name)
        target = os.path.join(out, name)
        tool = find("pasta-trace", Var.TRACE_TOOL)
        r = subprocess.run([tool, "replay", path, "-o", target], env={**env, Var.PRINT: "none"},
                           check=False)
        code = code or r.returncode
        reports = sorted(f for f in os.listdir(target) if not f.endswith(".tmp")) \
            if os.path.isdir(target) else []
        launches = 0
        try:
            with open(os.path.join(target, "kernel_freq.json")) as f:
                launches = json.load(f)["summary"].get("launches", 0)
        except (OSError, ValueError, KeyError):
            pass
        entry = {"pasta_process": 1, "pasta_version": meta.get("pasta_version"),
                 "pid": int(meta["pid"]) if "pid" in meta else None,
                 "host": meta.get("host", "?"),
                 "rank": int(meta["rank"]) if "rank" in meta else None,
                 "rank_variable": meta.get("rank_variable", ""),
                 "world_size": int(meta["world_size"]) if "world_size" in meta else None,
                 "run_id": meta.get("run_id", ""), "dir": name, "command": meta.get("command", ""),
                 "started": meta.get("recorded_at", ""), "replayed_from": os.path.abspath(path),
                 "status": "finished" if r.returncode == 0 and reports else "replay failed",
                 "launches": launches, "reports": reports}
        os.makedirs(os.path.join(out, "processes"), exist_ok=True)
        with open(os.path.join(out, "processes", f"{name}.json"), "w") as f:
            json.dump(entry, f, indent=1)
    doc = job.merge([out], out)
    print(job.job_text(doc), file=sys.stderr, end="")
    return code


def trace_metadata(path):
    """A trace's header metadata, through pasta-trace info ("  key: value" lines)."""
    tool = find("pasta-trace", Var.TRACE_TOOL)
    r = subprocess.run([tool, "info", path], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        fail(f"{path}: {r.stderr.strip() or 'not a pasta trace'}")
    meta = {}
    for line in r.stdout.splitlines():
        if line.startswith("  ") and ": " in line:
            key, value = line.strip().split(": ", 1)
            meta.setdefault(key, value)
    return meta


def trace_tool(argv):
    tool = find("pasta-trace", Var.TRACE_TOOL)
    return subprocess.run([tool] + argv, check=False).returncode

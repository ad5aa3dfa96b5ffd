"""pasta report: one self-contained HTML page for a directory of pasta reports.

Reads every <tool>.json that pasta wrote (and run.json, which `pasta run`
writes, and job.json, the processes of a job side by side: share/pasta/job.py), keeps each table's column order from its CSV, inlines the memory
heatmap SVG, and renders share/pasta/report.html.j2 with Jinja2: the page
escapes every value by default, and its layout lives in the template, not in
string concatenation. The page needs no network: styles, the table-sorting
script and the charts (matplotlib SVG, share/pasta/charts.py) are inline.

The page opens with an overview (share/pasta/overview.py: where the device time
went, top kernels and operators, tensor memory, processes side by side) and a
picture of one step; then a section per tool, where a tool with nothing to show
is one line saying how to get it, kernels go by their short names (the full
signature on hover and in the CSV), and empty tables are left out.
"""
import csv
import json
import os

import kernel_kinds
import overview
from job import label as process_label

ROWS = 50  # rows per table on the page; the CSV has them all
# Each tool says in its JSON how the page shows it ("page": its place among
# the others, the line it gets when it recorded nothing, the summary value that
# counts what it recorded, its tables' order, its picture's title: PageHints in
# include/pasta/core/report.hpp); a report that says nothing follows the others
# by name. These tools' headers do not say it yet (they are being edited
# elsewhere): the page says it for them.
PAGE_UNTIL_THEY_SAY = {
    "module_summary": {"order": 10, "counted_by": "operator calls",
                       "nothing": "no nn.Module recorded: run a PyTorch program with --torch "
                                  "(Python 3.12 or newer)",
                       "tables": ["modules", "lines", "module_kernels"]},
    "op_summary": {"order": 40, "counted_by": "calls",
                   "nothing": "no operators recorded: run a PyTorch program with --torch"},
    "stall_blame": {"order": 50,
                    "picture": "Stalls blamed on allocations, tensors, views and operators"},
    "tensor_hotness": {"order": 90, "nothing": "no tensor accesses recorded: run a PyTorch "
                                               "program with --torch --memory"},
}
# Columns that name a kernel: shown by short name, the full name as the tooltip.
KERNEL_COLUMNS = ("kernel", "top_kernel", "first_kernel")


def _columns(out_dir, tool, table, rows):
    path = os.path.join(out_dir, f"{tool}.{table}.csv")
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
            if header:
                return header, os.path.basename(path)
    except (OSError, StopIteration):
        pass
    return (list(rows[0].keys()) if rows else []), None


def _cell(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def _row(row, columns):
    """A table row as (text, tooltip) cells: kernels by short name, the signature
    (or the name itself) on hover."""
    cells = []
    for c in columns:
        text = _cell(row.get(c))
        if c in KERNEL_COLUMNS and text:
            full = row.get("signature") if c == "kernel" and row.get("signature") else text
            cells.append((kernel_kinds.short_name(text), full))
        else:
            cells.append((text, None))
    return cells


def page_hints(name, report):
    """How the page shows a report: what the tool said in it, else what the page says
    for it (PAGE_UNTIL_THEY_SAY), else nothing."""
    return report.get("page") or PAGE_UNTIL_THEY_SAY.get(name, {})


def _nothing(hints, report, tables):
    """The one line a tool with nothing to show gets, or None: its summary's count
    (counted_by) is 0 (tensor_alloc's lifetime table has a row per decade, all
    zeros), or all its tables are empty."""
    line = hints.get("nothing", "nothing recorded")
    counted_by = hints.get("counted_by")
    if counted_by and report.get("summary", {}).get(counted_by) == 0:
        return line
    if report.get("tables") and not any(t["total"] for t in tables):
        return line
    return None


def _ordered(hints, tables):
    order = hints.get("tables", [])
    return sorted(tables, key=lambda t: (order.index(t["name"]) if t["name"] in order
                                         else len(order), t["name"]))


def _tool_section(out_dir, name, report, hints):
    """One tool's section of the page: its summary, tables, picture and chart."""
    tables = []
    for tname, rows in report.get("tables", {}).items():
        columns, csv_file = _columns(out_dir, name, tname, rows)
        if "kernel" in columns:  # the signature is the kernel cell's tooltip
            columns = [c for c in columns if c != "signature"]
        tables.append({
            "name": tname,
            "columns": columns,
            "rows": [_row(r, columns) for r in rows[:ROWS]],
            "total": len(rows),
            "csv": csv_file,
            "numeric": [all(_numeric(r.get(c)) for r in rows[:ROWS]) for c in columns],
        })
    svg = None
    for svg_name in (name + ".svg", name + ".forest.svg"):  # a heatmap, the stall forest
        svg_path = os.path.join(out_dir, svg_name)
        if os.path.exists(svg_path):
            with open(svg_path) as f:
                svg = f.read()
    return {"name": name, "summary": list(report.get("summary", {}).items()),
            "partial": report.get("partial"), "svg": svg,
            "svg_title": hints.get("picture", "Picture"),
            "nothing": _nothing(hints, report, tables),
            "chart": _tool_chart(name, report),
            "tree": module_tree(report) if name == "module_summary" else None,
            "tables": _ordered(hints, [t for t in tables if t["total"]])}


def collect(out_dir, window=None, step=None):
    """Everything the template shows, from the files in out_dir; window (start, end ms)
    or step (1 = the first) choose the step picture."""
    files = sorted(f for f in os.listdir(out_dir) if not f.endswith(".tmp"))
    run = {}
    if "run.json" in files:
        with open(os.path.join(out_dir, "run.json")) as f:
            run = json.load(f)
    problems, reports = [], {}
    for f in files:
        if not f.endswith(".json") or f == "run.json" or f.endswith(".trace.json"):
            continue
        try:
            with open(os.path.join(out_dir, f)) as fh:
                report = json.load(fh)
        except (OSError, ValueError) as e:
            problems.append(f"{f} could not be read: {e}")
            continue
        if isinstance(report, dict) and "tables" in report:
            reports[f[:-5]] = report
    hints = {name: page_hints(name, r) for name, r in reports.items()}
    unplaced = max([h["order"] for h in hints.values() if "order" in h], default=0) + 1
    names = sorted(reports, key=lambda n: (hints[n].get("order", unplaced), n))
    tools = [_tool_section(out_dir, n, reports[n], hints[n]) for n in names]
    timeline = next((f for f in files if f.endswith(".trace.json") and f != "job.trace.json"),
                    None)
    job = None
    if "job.json" in files:
        try:
            with open(os.path.join(out_dir, "job.json")) as f:
                job = json.load(f)
            for row in job.get("processes", []):
                page = os.path.join(out_dir, row["dir"], "report.html") if row.get("dir") else None
                row["page"] = (os.path.relpath(page, out_dir)
                               if page and os.path.exists(page) and row["dir"] != "." else None)
        except (OSError, ValueError) as e:
            problems.append(f"job.json could not be read: {e}")
    for row in (job or {}).get("processes", []):
        row["top_kernel_short"] = kernel_kinds.short_name(row["top_kernel"] or "")
    if job:
        job["shown"] = shown_processes(job)
    for row in (job or {}).get("kernels", []):
        row["short"] = kernel_kinds.short_name(row["name"])
    for row in (job or {}).get("operators", []):
        row["short"] = row["name"]  # operators are named as they are
    return {"dir": os.path.abspath(out_dir), "run": run, "tools": tools, "files": files,
            "timeline": timeline, "problems": problems, "rows_shown": ROWS, "job": job,
            "overview": _overview(out_dir, job, window, step)}


TREE_ROWS = 400  # modules the page's tree shows; the CSV has them all


def module_tree(report):
    """module_summary's modules as nested lists for the page's collapsible tree:
    [{row..., "children": [...]}], roots first, children by device time (the table's
    depth-first order)."""
    rows = report.get("tables", {}).get("modules", [])
    by_name, roots = {}, []
    for r in rows[:TREE_ROWS]:
        node = dict(r, children=[])
        by_name[r["module"]] = node
        parent = by_name.get(r.get("parent"))
        (parent["children"] if parent else roots).append(node)
    return roots


def _tool_chart(name, report):
    """A tool's chart on the page: the module icicle, the counters' roofline."""
    charts = _charts()
    if charts is None:
        return None
    tables = report.get("tables", {})
    if name == "module_summary" and tables.get("modules"):
        return charts.modules(f"{name}-icicle", tables["modules"])
    if name == "op_counters" and tables.get("verdicts"):
        s = report.get("summary", {})
        keys = ("ceiling: DRAM (TB/s)", "ceiling: FP32 (TFLOP/s)", "ceiling: tensor (TFLOP/s)")
        ceilings = tuple(s[k] for k in keys) if all(k in s for k in keys) else None
        return charts.roofline(f"{name}-roofline", tables["verdicts"], ceilings)
    return None


def shown_processes(job, rows=ROWS):
    """The processes the job table shows, in their order: all of them up to `rows`; past that
    every process that did not finish with reports first, then the straggler, then the
    others in order, `rows` in all (job.txt and job.json list every one)."""
    processes = job.get("processes", [])
    if len(processes) <= rows:
        return processes
    straggler = (job.get("straggler") or {}).get("process")
    first = [p for p in processes if p.get("status") != "finished"]
    first += [p for p in processes if p.get("status") == "finished" and
              process_label(p.get("rank"), p.get("pid")) == straggler]
    picked = {id(p) for p in first[:rows]}
    for p in processes:
        if len(picked) >= rows:
            break
        picked.add(id(p))
    return [p for p in processes if id(p) in picked]


CHARTS_MISSING = "charts need matplotlib, which is not installed here (pip install matplotlib)"


def charts_available():
    return _charts() is not None


NO_CHARTS = {"busy": None, "kinds": None, "top_kernels": None, "top_operators": None,
             "memory": [], "step": None, "processes": None, "modules": None}


def _module_icicle(out_dir, charts):
    """The overview's module tree (module_summary.json's), or None."""
    try:
        with open(os.path.join(out_dir, "module_summary.json")) as f:
            rows = json.load(f).get("tables", {}).get("modules", [])
    except (OSError, ValueError):
        return None
    return charts.modules("overview-modules", rows) if rows else None


def _charts():
    """share/pasta/charts.py, or None where matplotlib is missing: the page then has its
    numbers and tables, and says how to get the charts."""
    try:
        import charts  # imported here: matplotlib is slow to import
    except ImportError:
        return None
    return charts


def _overview(out_dir, job, window, step):
    """The overview's numbers and charts (SVG), for one process or for a job."""
    o = overview.job_overview(job, out_dir) if job else overview.run_overview(out_dir, window,
                                                                             step)
    if o is None:
        return None
    o["kind"] = "job" if job else "run"
    charts = _charts()
    if charts is None:
        o.update(charts=NO_CHARTS, charts_missing=CHARTS_MISSING)
    elif job:
        o["charts"] = {
            "processes": charts.processes("processes", o["processes"], o["listed"])
            if any(p["kinds"] for p in o["processes"]) else None,
            "top_kernels": charts.bars("top-kernels", "Top kernels over processes (median, "
                                       "min-max)", o["top_kernels"]) if o["top_kernels"] else None,
            "top_operators": charts.bars("top-operators", "Top operators over processes (median, "
                                         "min-max)", o["top_operators"], colour=charts.OPERATOR)
            if o["top_operators"] else None, "step": None, "modules": None}
    else:
        o["charts"] = {
            "busy": charts.busy("busy", o["busy_over_time"], o["busy_pct"])
            if o["busy_over_time"] else None,
            "kinds": charts.kinds("kinds", o["kinds"], o["span_ms"])
            if any(k != kernel_kinds.IDLE for k, _ in o["kinds"]) else None,
            "top_kernels": charts.bars("top-kernels", "Top kernels by device time",
                                       o["top_kernels"]) if o["top_kernels"] else None,
            "top_operators": charts.bars("top-operators", "Top operators by device self time",
                                         o["top_operators"], colour=charts.OPERATOR)
            if o["top_operators"] else None,
            "memory": [charts.memory(f"memory-{m['device']}", m) for m in o["memory"]],
            "step": charts.step("step-picture", o["picture"]) if o["picture"] else None,
            "modules": _module_icicle(out_dir, charts),
        }
    return o


def _numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def render(out_dir, template_dir, output=None, window=None, step=None):
    """Writes out_dir/report.html (or `output`); returns its path. Raises ImportError
    without Jinja2; without matplotlib the page has no charts (charts_available() says)."""
    return write_html(template_dir, "report.html.j2", collect(out_dir, window, step),
                      output or os.path.join(out_dir, "report.html"))


def write_html(template_dir, template, context, output):
    """Renders a page of share/pasta (every value escaped) into `output`, whole or not at all;
    returns its path. Raises ImportError without Jinja2."""
    import jinja2  # imported here: only the pages need it
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    page = env.get_template(template).render(**context)
    tmp = output + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, output)
    return output

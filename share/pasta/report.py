"""pasta report: one self-contained HTML page for a directory of pasta reports.

Reads every <tool>.json that pasta wrote (and run.json, which `pasta run`
writes, and job.json, the processes of a job side by side: share/pasta/job.py), keeps each table's column order from its CSV, inlines the memory
heatmap SVG, and renders share/pasta/report.html.j2 with Jinja2: the page
escapes every value by default, and its layout lives in the template, not in
string concatenation. The page needs no network: styles and the table-sorting
script are inline.
"""
import csv
import json
import os

# The order tools appear in; any other report follows, alphabetically.
ORDER = ["kernel_freq", "op_summary", "mem_hotness", "uvm_hotness", "tensor_alloc",
         "tensor_hotness", "scope_time", "timeline", "event_count", "sanitizer", "gpu_bucketing",
         "correlation", "record"]
ROWS = 50  # rows per table on the page; the CSV has them all


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


def collect(out_dir):
    """Everything the template shows, from the files in out_dir."""
    files = sorted(f for f in os.listdir(out_dir) if not f.endswith(".tmp"))
    run = {}
    if "run.json" in files:
        with open(os.path.join(out_dir, "run.json")) as f:
            run = json.load(f)
    tools, problems = [], []
    names = [f[:-5] for f in files if f.endswith(".json") and f not in ("run.json",)
             and not f.endswith(".trace.json")]
    names.sort(key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    for name in names:
        try:
            with open(os.path.join(out_dir, name + ".json")) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{name}.json could not be read: {e}")
            continue
        if not isinstance(report, dict) or "tables" not in report:
            continue
        tables = []
        for tname, rows in report.get("tables", {}).items():
            columns, csv_file = _columns(out_dir, name, tname, rows)
            tables.append({
                "name": tname,
                "columns": columns,
                "rows": [[_cell(r.get(c)) for c in columns] for r in rows[:ROWS]],
                "total": len(rows),
                "csv": csv_file,
                "numeric": [all(_numeric(r.get(c)) for r in rows[:ROWS]) for c in columns],
            })
        svg = None
        svg_path = os.path.join(out_dir, name + ".svg")
        if os.path.exists(svg_path):
            with open(svg_path) as f:
                svg = f.read()
        tools.append({"name": name, "summary": list(report.get("summary", {}).items()),
                      "partial": report.get("partial"), "tables": tables, "svg": svg})
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
    return {"dir": os.path.abspath(out_dir), "run": run, "tools": tools, "files": files,
            "timeline": timeline, "problems": problems, "rows_shown": ROWS, "job": job}


def _numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def render(out_dir, template_dir, output=None):
    """Writes out_dir/report.html (or `output`); returns its path."""
    import jinja2  # imported here: only `pasta report` needs it
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    page = env.get_template("report.html.j2").render(**collect(out_dir))
    output = output or os.path.join(out_dir, "report.html")
    tmp = output + ".tmp"
    with open(tmp, "w") as f:
        f.write(page)
    os.replace(tmp, output)
    return output

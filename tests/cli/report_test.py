#!/usr/bin/env python3
"""The HTML report renders in a browser: replays traces recorded on the H100, runs
`pasta report`, loads each page in headless Chromium and reads the DOM the browser
built. Every expected value is recomputed here from the JSON reports and the
timeline, not read from the page's own numbers:

* uvm_advice (managed memory): every non-empty table, its rows, the heatmap's
  cells, the advice table, the sorting script;
* resnet18_torch (PyTorch, one step): the overview's charts (top-10 kernels and
  operators, device time by kind, GPU busy share, the memory peak), the step
  picture's window, short kernel names with the signature on hover, tools with
  nothing to show reduced to one line, no console error, no network URL but
  Perfetto's; a screenshot of the first screen (1280x800);
* the two ranks of the DDP job: the processes side by side, the straggler named.

    report_test.py BUILD_DIR DATA_DIR OUT_DIR
Exits 77 (skipped) when Chromium, Jinja2 or matplotlib is missing, and fails then
when PASTA_REQUIRE_BROWSER=1.
"""
import html.parser
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "share", "pasta"))
import checks  # noqa: E402
from checks import expect, union_us  # noqa: E402
import kernel_kinds  # noqa: E402  (its own test checks it on real names)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr"}


class Dom(html.parser.HTMLParser):
    """Chromium's serialised DOM as a tree: each element's tag, attributes, children
    and text, and the elements by id."""

    def __init__(self, text):
        super().__init__()
        self.root = {"tag": "#root", "attrs": {}, "children": [], "content": []}
        self.stack, self.ids = [self.root], {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = {"tag": tag, "attrs": dict(attrs), "children": [], "content": []}
        self.stack[-1]["children"].append(node)
        self.stack[-1]["content"].append(node)
        if "id" in node["attrs"]:
            self.ids[node["attrs"]["id"]] = node
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i]["tag"] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1]["content"].append(data)


def walk(node):
    yield node
    for c in node["children"]:
        yield from walk(c)


def text(node, skip=("title",), sep=""):
    """The text of node and its descendants in document order (tooltips left out);
    sep between elements (matplotlib draws each line of a text as an element)."""
    if node is None:
        return None
    parts = [c if isinstance(c, str) else text(c, skip, sep) for c in node["content"]
             if isinstance(c, str) or c["tag"] not in skip]
    return re.sub(r"\s+", " ", sep.join(parts)).strip()


def tooltip(node):
    title = next((c for c in node["children"] if c["tag"] == "title"), None) if node else None
    return text(title, ()) if title else None


def classes(node):
    return node["attrs"].get("class", "").split()


def load(path):
    with open(path) as f:
        return json.load(f)


def device_spans(out):
    events = load(os.path.join(out, "timeline.trace.json"))["traceEvents"]
    return [(e["ts"], e["ts"] + e["dur"], e["cat"]) for e in events
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy", "memset")]


def bar_width(node):
    """The width of a bar drawn by matplotlib: its path's x extent."""
    path = next(n for n in walk(node) if n["tag"] == "path")
    xs = [float(x) for x in re.findall(r"[ML] ([-\d.]+) [-\d.]+", path["attrs"]["d"])]
    return max(xs) - min(xs)


def ms(v):
    return f"{v:.3f} ms" if v < 100 else f"{v:,.1f} ms"


def check_bars(dom, chart, items, what):
    """A bar chart shows items (name, full name, ms) in order: labels, values, tooltips,
    and bar lengths proportional to the values."""
    n = sum(1 for i in range(50) if f"{chart}-bar-{i}" in dom.ids)
    expect(f"{what}: bars", n, len(items))
    labels = [text(dom.ids.get(f"{chart}-label-{i}")) for i in range(len(items))]
    ok = all(label and name.startswith(label.rstrip("\u2026"))
             for label, (name, _, _) in zip(labels, items))
    expect(f"{what}: labels (short names, cut at the end)", ok, True)
    if not ok:
        print("   ", labels, [name for name, _, _ in items])
    expect(f"{what}: values", [text(dom.ids.get(f"{chart}-value-{i}")) for i in range(len(items))],
           [ms(v) for _, _, v in items])
    expect(f"{what}: tooltips", [tooltip(dom.ids.get(f"{chart}-bar-{i}")) for i in range(len(items))],
           [f"{full}: {ms(v)}" for _, full, v in items])
    widths = [bar_width(dom.ids[f"{chart}-bar-{i}"]) for i in range(n)]
    if widths and items[0][2] > 0:
        scale = widths[0] / items[0][2]
        expect(f"{what}: bar lengths proportional to the values (0.5%)",
               all(abs(w - v * scale) <= 0.005 * widths[0] + 0.01
                   for w, (_, _, v) in zip(widths, items)), True)


def browse(browser, page, out):
    """The DOM Chromium built, and what it logged from the page's console."""
    log = subprocess.run([browser] + FLAGS + ["--enable-logging=stderr", "--v=0", "--dump-dom",
                                              "file://" + page],
                         capture_output=True, text=True, check=True, timeout=120)
    console = [line for line in log.stderr.splitlines() if ":CONSOLE" in line]
    return Dom(log.stdout), console


def common(dom, console, page, what):
    """What every page must hold: no script error, no network URL but Perfetto's, no
    empty table, no tool section with nothing to show that has a table."""
    expect(f"{what}: console messages", console, [])
    html_node = next(n for n in walk(dom.root) if n["tag"] == "html")
    expect(f"{what}: errors caught by window.onerror", html_node["attrs"].get("data-errors"), None)
    with open(page) as f:
        source = f.read()
    # SVG namespace names (http://www.w3.org/...) are names, never fetched.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", source))
    expect(f"{what}: network URLs in the page",
           sorted(u for u in urls if not u.startswith("http://www.w3.org/")),
           ["https://ui.perfetto.dev"])
    tables = [n for n in walk(dom.root) if n["tag"] == "table" and "data" in classes(n)]
    empty = [n for n in tables if not any(r["tag"] == "tr" for b in n["children"]
                                          if b["tag"] == "tbody" for r in b["children"])]
    expect(f"{what}: tables without rows", len(empty), 0)
    sections = [n for n in walk(dom.root) if n["tag"] == "section" and "tool" in classes(n)]
    empty_with_table = [s["attrs"]["id"] for s in sections if "empty" in classes(s) and any(
        n["tag"] == "table" for n in walk(s))]
    expect(f"{what}: tool sections with nothing to show that have a table", empty_with_table, [])
    return sections, tables, source


# What a tool counts, when it counts none of it, it recorded nothing (as the page's spec says,
# docs/report.md): no allocations, no operator calls.
COUNTS = {"tensor_alloc": "allocations", "op_summary": "calls", "module_summary": "operator calls",
          "mem_hotness": "accesses"}


def nothing_to_show(report):
    """A tool has nothing to show: every table empty, no counters measured, or none of what
    it counts."""
    s = report.get("summary", {})
    if report.get("tool") == "op_counters":
        return not s.get("measured") and not s.get(
            "propagated from a measured launch of the same signature")
    if s.get(COUNTS.get(report.get("tool")), 1) == 0:
        return True
    tables = report.get("tables", {})
    return bool(tables) and not any(tables.values())


def tool_reports(out):
    reports = {}
    for f in sorted(os.listdir(out)):
        if f.endswith(".json") and not f.endswith(".trace.json") and f not in (
                "run.json", "job.json", "op_counters.profile.json"):
            reports[f[:-5]] = load(os.path.join(out, f))
    return reports


def uvm_page(browser, build, data, out):
    """The managed-memory run: its tables, heatmap and advice."""
    dom, console = browse(browser, replay_and_report(build, data, "uvm_advice_h100", out), out)
    sections, tables, _ = common(dom, console, os.path.join(out, "report.html"), "uvm_advice")
    want_rows = []
    for name, report in tool_reports(out).items():
        if not nothing_to_show(report):
            want_rows += [min(len(rows), 50) for rows in report.get("tables", {}).values() if rows]
    rows = [sum(1 for b in t["children"] if b["tag"] == "tbody" for r in b["children"]
                if r["tag"] == "tr") for t in tables]
    expect("uvm_advice: data tables in the DOM", len(tables), len(want_rows))
    expect("uvm_advice: rows per table (sorted)", sorted(rows), sorted(want_rows))
    expect("uvm_advice: tables the sorting script prepared",
           sum(t["attrs"].get("data-sortable") == "ready" for t in tables), len(want_rows))
    with open(os.path.join(out, "mem_hotness.svg")) as fh:
        want_cells = fh.read().count('class="cell"')
    expect("uvm_advice: heatmap cells drawn",
           sum(1 for n in walk(dom.root) if n["tag"] == "rect" and "cell" in classes(n)), want_cells)
    expect("uvm_advice: heatmap has cells", want_cells > 0, True)
    expect("uvm_advice: advice table shown", sum("advice" in classes(t) for t in tables), 1)
    timed = [k for k in load(os.path.join(out, "kernel_freq.json"))["tables"]["kernels"]
             if k.get("total_ms")]
    expect("uvm_advice: kernels without device time (Sanitizer): a note, no empty chart",
           (len(timed), "no-device-time" in dom.ids,
            sum(1 for n in walk(dom.ids["overview"]) if n["tag"] == "svg")), (0, True, 0))


def replay_and_report(build, data, trace, out, *report_args):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([f"{build}/cli/pasta-trace", "replay", os.path.join(data, trace + ".pasta"),
                    "-o", out], check=True, capture_output=True, env=dict(os.environ,
                                                                          PASTA_PRINT="none"))
    subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out, *report_args], check=True)
    return os.path.join(out, "report.html")


def torch_page(browser, build, data, out):
    """The PyTorch step: the overview's charts hold what the JSON reports say."""
    page = replay_and_report(build, data, "resnet18_torch_h100", out)
    t0 = time.perf_counter()
    dom, console = browse(browser, page, out)
    seconds = time.perf_counter() - t0
    sections, tables, source = common(dom, console, page, "resnet18_torch")
    kf = load(os.path.join(out, "kernel_freq.json"))["tables"]["kernels"]

    top = sorted(kf, key=lambda k: -k["total_ms"])[:10]
    check_bars(dom, "top-kernels", [(kernel_kinds.short_name(k["kernel"]), k["signature"],
                                     k["total_ms"]) for k in top], "top-10 kernels")
    expect("top kernel (a number the test knows from the recorded trace)",
           (kernel_kinds.short_name(top[0]["kernel"]), round(top[0]["total_ms"], 6)),
           ("nchwToNhwcKernel", 0.671813))
    ops = load(os.path.join(out, "op_summary.json"))["tables"]["operators"]
    top_ops = sorted((o for o in ops if o["device_self_ms"] > 0),
                     key=lambda o: -o["device_self_ms"])[:10]
    check_bars(dom, "top-operators", [(o["operator"], o["operator"], o["device_self_ms"])
                                      for o in top_ops], "top-10 operators")

    spans = device_spans(out)
    busy = union_us((s, t) for s, t, _ in spans)
    span = max(t for _, t, _ in spans) - min(s for s, _, _ in spans)
    by_kind = {}
    for k in kf:
        kind = kernel_kinds.kind(k["signature"])
        by_kind[kind] = by_kind.get(kind, 0.0) + k["total_ms"]
    for s, t, cat in spans:
        if cat != "kernel":
            kind = kernel_kinds.COPY if cat == "memcpy" else kernel_kinds.MEMSET
            by_kind[kind] = by_kind.get(kind, 0.0) + (t - s) / 1e3
    kinds = [(k, k, by_kind[k]) for k in kernel_kinds.KINDS if by_kind.get(k)]
    check_bars(dom, "kinds", kinds, "device time by kind")
    caption = text(next(n for n in walk(dom.ids["overview"]) if n["tag"] == "figcaption" and
                        "by kind" in text(n)))
    idle = (span - busy) / 1e3
    expect("idle gaps in the kinds chart's caption", caption,
           f"Device time by kind; idle gaps {ms(idle)} ({100 * idle / (span / 1e3):.1f}%)")
    headline = text(next(n for n in walk(dom.ids["overview"]) if "headline" in classes(n)))
    expect("GPU busy share in the headline", f"GPU busy {100 * busy / span:.1f}% of "
           f"{span / 1e3:.1f} ms ({busy / 1e3:.2f} ms busy, {idle:.1f} ms idle)" in headline, True)
    print(f"     headline: {headline}")

    ta = load(os.path.join(out, "tensor_alloc.json"))["tables"]
    gpu = [d for d in ta["devices"] if d["device"] != "cpu"][0]
    peak = max(r["live_mb"] for r in ta["timeline"] if r["device"] == gpu["device"])
    expect("memory chart: the peak and its operator", text(dom.ids.get("memory-0-peak"), sep=" "),
           f"peak {peak:.1f} MB {gpu['op_at_peak']}")

    # The step: from the optimizer's zero_grad to the end of its step, on the timeline.
    host = [e for e in load(os.path.join(out, "timeline.trace.json"))["traceEvents"]
            if e.get("cat") == "op"]
    zero = next(e["ts"] for e in host if e["name"].startswith("Optimizer.zero_grad#"))
    opened = [e for e in host if e["name"].startswith("Optimizer.step#")]
    end = next(e["ts"] for e in host if e["ph"] == "E" and e["tid"] == opened[0]["tid"]
               and e["ts"] >= opened[0]["ts"] and e["name"] == opened[0]["name"])
    heading = text(next(n for n in dom.ids["step"]["children"] if n["tag"] == "h2"))
    expect("step picture: the first step's window", heading,
           f"One step: step 1 of 1, {zero / 1e3:.1f}-{end / 1e3:.1f} ms")
    rows = [text(n) for n in walk(dom.ids["step"]) if n["tag"] == "g" and
            n["attrs"].get("id", "").startswith("ytick_")]
    streams = sorted({f"GPU {p - 1} stream {t}" for p, t in (
        (e["pid"], e["tid"]) for e in load(os.path.join(out, "timeline.trace.json"))["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "memcpy", "memset")
        and zero <= e["ts"] <= end)})
    expect("step picture: a row per stream in the window, then the operators",
           sorted(rows), sorted(streams + ["operators", "operators, inner"]))
    expect("step picture: the Perfetto link", any(
        n["tag"] == "a" and n["attrs"].get("href") == "https://ui.perfetto.dev"
        for n in walk(dom.ids["step"])), True)

    # Tables: kernels by short name, the signature on hover; no signature column.
    kernel_cells = [n for n in walk(dom.ids["kernel_freq"]) if n["tag"] == "td" and
                    "title" in n["attrs"]]
    # The kernels table has the signature; the shapes table the name as recorded.
    recorded = {k["signature"]: k for k in kf} | {k["kernel"]: k for k in kf}
    expect("kernel tables: every kernel cell's tooltip is a recorded signature or name",
           all(c["attrs"]["title"] in recorded for c in kernel_cells), True)
    expect("kernel tables: kernel cells with a tooltip (50 rows each of kernels and shapes)",
           len(kernel_cells), 100)
    expect("kernel tables: the cell shows the short name", all(
        text(c) == kernel_kinds.short_name(recorded[c["attrs"]["title"]]["kernel"])
        for c in kernel_cells), True)
    expect("no table has a signature column", any(
        text(n) == "signature" for t in tables for n in walk(t) if n["tag"] == "th"), False)
    want_empty = sorted(name for name, r in tool_reports(out).items() if nothing_to_show(r))
    expect("tools with nothing to show, one line each",
           sorted(s["attrs"]["id"] for s in sections if "empty" in classes(s)), want_empty)
    expect("mem_hotness says how to get accesses", text(dom.ids["mem_hotness"]).startswith(
        "mem_hotness: no memory accesses recorded: run with --memory"), True)

    # Another window, asked for: the picture's heading and its x axis say it.
    other = os.path.join(out, "window.html")
    subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out, "--window", "600-700",
                    "-o", other], check=True, capture_output=True)
    with open(other) as f:
        expect("--window 600-700: the picture's heading",
               re.findall(r"<h2>([^<]*)</h2>", f.read())[0], "The window asked for, 600.0-700.0 ms")
    bad = subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out, "--window", "7-3"],
                         capture_output=True, text=True)
    expect("--window 7-3: exit code and message", (bad.returncode, bad.stderr.strip()),
           (2, "pasta: --window takes START-END in ms with START < END (e.g. 480-520), not '7-3'"))

    size = os.path.getsize(page)
    print(f"     page {size / 1e3:.0f} kB, Chromium load and DOM dump {seconds:.2f} s, "
          f"page load event at {next(n for n in walk(dom.root) if n['tag'] == 'html')['attrs'].get('data-load-ms')} ms")
    expect("page under 5 MB", size < 5e6, True)
    shot = os.path.join(out, "overview.png")
    subprocess.run([browser] + FLAGS + ["--window-size=1280,800", f"--screenshot={shot}",
                                        "file://" + page], capture_output=True, check=True,
                   timeout=120)
    with open(shot, "rb") as fh:
        png = fh.read()
    expect("screenshot is a PNG", png[:8], b"\x89PNG\r\n\x1a\n")
    expect("screenshot has content (> 20 KB)", len(png) > 20_000, True)


def no_matplotlib_page(build, data, out):
    """Without matplotlib the page is still written, with its numbers and tables and one line
    saying how to get the charts; `pasta report` says so too, and exits 0."""
    replay_and_report(build, data, "resnet18_torch_h100", out)
    blocker = os.path.join(out, "no-matplotlib")
    os.makedirs(os.path.join(blocker, "matplotlib"))
    with open(os.path.join(blocker, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError(\"No module named 'matplotlib'\", name='matplotlib')\n")
    os.remove(os.path.join(out, "report.html"))
    p = subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=blocker))
    expect("no matplotlib: pasta report's exit code", p.returncode, 0)
    expect("no matplotlib: what it says", [l for l in p.stderr.splitlines() if "no charts" in l],
           ["pasta: the report page has no charts: charts need matplotlib, which is not "
            "installed here (pip install matplotlib)"])
    with open(os.path.join(out, "report.html")) as f:
        page = f.read()
    expect("no matplotlib: the page says so, draws no chart and keeps its tables",
           ('id="no-charts"' in page, "<svg" in page, page.count('<table class="data') > 0),
           (True, False, True))


def gpt12_page(browser, build, data, out):
    """A 12-block GPT, 3 training steps recorded on the H100 (tests/gpu/run.sh record-gpt): the
    page of a model-sized run stays small, and its top kernels are the reports'."""
    page = replay_and_report(build, data, "gpt12_torch_h100", out)
    t0 = time.perf_counter()
    dom, console = browse(browser, page, out)
    seconds = time.perf_counter() - t0
    common(dom, console, page, "gpt12")
    size = os.path.getsize(page)
    expect("gpt12: page under 5 MB", size < 5 << 20, True)
    kf = load(os.path.join(out, "kernel_freq.json"))["tables"]["kernels"]
    top = sorted(kf, key=lambda k: -k["total_ms"])[:10]
    check_bars(dom, "top-kernels", [(kernel_kinds.short_name(k["kernel"]), k["signature"],
                                     k["total_ms"]) for k in top], "gpt12: top-10 kernels")
    html_node = next(n for n in walk(dom.root) if n["tag"] == "html")
    # Told, not checked: a load time is a benchmark, and this machine may be busy.
    print(f"  gpt12: page {size / 1e6:.2f} MB, {len(kf)} kernels; load event at "
          f"{html_node['attrs'].get('data-load-ms')} ms, Chromium's whole run {seconds:.2f} s")


def job_page(browser, build, data, out):
    """The DDP job's two ranks: side by side, the straggler named."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PASTA_TRACE_TOOL=f"{build}/cli/pasta-trace")
    subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "replay",
                    *[os.path.join(data, f"ddp_rank{r}_h100.pasta") for r in (0, 1)], "-o", out],
                   check=True, capture_output=True, env=env)
    subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out], check=True,
                   capture_output=True, env=env)
    page = os.path.join(out, "report.html")
    dom, console = browse(browser, page, out)
    common(dom, console, page, "DDP job")
    compute, device, per_kernel, segments = {}, {}, {}, set()
    for r in (0, 1):
        d = os.path.join(out, f"rank{r}")
        kf = load(os.path.join(d, "kernel_freq.json"))["tables"]["kernels"]
        spans = device_spans(d)
        compute[r] = sum(k["total_ms"] for k in kf if not k["kernel"].startswith("nccl"))
        device[r] = sum(k["total_ms"] for k in kf) + sum(
            (t - s) / 1e3 for s, t, cat in spans if cat != "kernel")
        segments |= {(r, kernel_kinds.kind(k["signature"])) for k in kf}
        segments |= {(r, cat) for _, _, cat in spans if cat != "kernel"}
        for k in kf:
            per_kernel.setdefault(k["kernel"], {})[r] = per_kernel.get(k["kernel"], {}).get(
                r, 0.0) + k["total_ms"]
    slow = max(compute, key=compute.get)
    expect("DDP: the straggler (most compute, recomputed per rank)", slow, 0)
    expect("DDP: the straggler named in the headline", text(dom.ids.get("straggler")), f"rank {slow}")
    expect("DDP: the ranks side by side",
           [text(dom.ids.get(f"processes-label-{i}")) for i in (0, 1)],
           [f"rank {r}" + (" (straggler)" if r == slow else "") for r in (0, 1)])
    expect("DDP: each rank's device time (kernels, copies, memsets)",
           [text(dom.ids.get(f"processes-value-{i}")) for i in (0, 1)],
           [ms(device[r]) for r in (0, 1)])
    expect("DDP: one bar segment per rank and kind",
           sum(1 for i in dom.ids if i.startswith("processes-bar-")), len(segments))
    top = sorted(per_kernel.items(), key=lambda kv: -max(kv[1].values()))[:10]
    check_bars(dom, "top-kernels", [(kernel_kinds.short_name(name), name,
                                     statistics.median(v.values())) for name, v in top],
               "DDP: top-10 kernels over ranks (median)")


def main(build, data, out):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = [] if browser else ["chromium"]
    for module in ("jinja2", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(f"missing on this machine: {', '.join(missing)}")
        if os.environ.get("PASTA_REQUIRE_BROWSER") == "1":
            print("FAILED: PASTA_REQUIRE_BROWSER=1 asks for the browser test")
            return 1
        print("skipped")
        return 77
    uvm_page(browser, build, data, os.path.join(out, "uvm"))
    torch_page(browser, build, data, os.path.join(out, "torch"))
    job_page(browser, build, data, os.path.join(out, "ddp"))
    gpt12_page(browser, build, data, os.path.join(out, "gpt12"))
    no_matplotlib_page(build, data, os.path.join(out, "no-matplotlib"))
    print("PASSED" if checks.failures == 0 else f"FAILED: {checks.failures} checks")
    return 0 if checks.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))

#!/usr/bin/env python3
"""The HTML report renders in a browser: replays a trace recorded on the H100,
runs `pasta report`, loads the page in headless Chromium, and counts what the
browser built from it (tables, rows, heatmap cells, the sorting script), then
takes a screenshot.

    report_test.py BUILD_DIR TRACE OUT_DIR
Exits 77 (skipped) when Chromium or Jinja2 is missing.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Dom(html.parser.HTMLParser):
    """Counts the elements the checks need in Chromium's serialised DOM."""

    def __init__(self):
        super().__init__()
        self.tables, self.cells, self.svgs, self.sortable = [], 0, 0, 0
        self._table = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "data" in a.get("class", "").split():
            self._table = {"rows": 0, "advice": "advice" in a.get("class", "")}
            self.tables.append(self._table)
            self.sortable += a.get("data-sortable") == "ready"
        elif tag == "tr" and self._table is not None and self._in_body:
            self._table["rows"] += 1
        elif tag == "tbody":
            self._in_body = True
        elif tag == "svg":
            self.svgs += 1
        elif tag == "rect" and a.get("class") == "cell":
            self.cells += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    _in_body = False


def expect(what, got, want):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got}" + ("" if ok else f" (expected {want})"))
    return ok


def main(build, trace, out):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        import jinja2  # noqa: F401
    except ImportError:
        browser = None
    if not browser:
        print("no chromium or no jinja2 on this machine: skipped")
        return 77
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([f"{build}/cli/pasta-trace", "replay", trace, "-o", out], check=True,
                   capture_output=True, env=dict(os.environ, PASTA_PRINT="none"))
    subprocess.run([sys.executable, f"{ROOT}/bin/pasta", "report", out], check=True)
    page = os.path.join(out, "report.html")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run([browser] + flags + ["--dump-dom", "file://" + page],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    parsed = Dom()
    parsed.feed(dom)

    # What the page must show: every non-empty table of every JSON report.
    want_tables, want_rows = 0, []
    for f in sorted(os.listdir(out)):
        if f.endswith(".json") and not f.endswith(".trace.json"):
            with open(os.path.join(out, f)) as fh:
                report = json.load(fh)
            for rows in report.get("tables", {}).values():
                if rows:
                    want_tables += 1
                    want_rows.append(min(len(rows), 50))
    with open(os.path.join(out, "mem_hotness.svg")) as fh:
        want_cells = fh.read().count('class="cell"')
    ok = expect("data tables in the DOM", len(parsed.tables), want_tables)
    ok &= expect("rows per table (sorted)", sorted(t["rows"] for t in parsed.tables),
                 sorted(want_rows))
    ok &= expect("tables the sorting script prepared", parsed.sortable, want_tables)
    ok &= expect("heatmap cells drawn", parsed.cells, want_cells)
    ok &= expect("heatmap has cells", want_cells > 0, True)
    ok &= expect("advice table shown", sum(t["advice"] for t in parsed.tables), 1)

    shot = os.path.join(out, "report.png")
    subprocess.run([browser] + flags + ["--window-size=1280,1600", f"--screenshot={shot}",
                                        "file://" + page],
                   capture_output=True, check=True, timeout=120)
    with open(shot, "rb") as fh:
        png = fh.read()
    ok &= expect("screenshot is a PNG", png[:8], b"\x89PNG\r\n\x1a\n")
    ok &= expect("screenshot has content (> 20 KB)", len(png) > 20_000, True)
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))

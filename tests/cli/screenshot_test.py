#!/usr/bin/env python3
"""The README's picture (docs/report-overview.png) is the demo's page: the
trace scripts/demo.sh replays without a GPU is the one the picture's text
chunks name, and the headline of a page rendered again from that trace is
the one they record (scripts/demo-screenshot.py writes both). A changed page
fails here until the picture is taken again.

    screenshot_test.py BUILD_DIR OUT_DIR
Exits 77 (skipped) without Jinja2 or matplotlib (the page needs both).
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import demo_meta  # noqa: E402


def main(build, out):
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as e:
        print(f"skipped: the page needs {e.name}")
        return 77
    with open(os.path.join(ROOT, "scripts", "demo.sh")) as f:
        m = re.search(r"trace=\$root/(\S+)", f.read())
    demo_trace = m.group(1) if m else None
    with open(os.path.join(ROOT, "docs", "report-overview.png"), "rb") as f:
        shown = demo_meta.text_chunks(f.read())
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([os.path.join(build, "cli", "pasta-trace"), "replay",
                    os.path.join(ROOT, demo_trace), "-o", out], check=True, capture_output=True,
                   env=dict(os.environ, PASTA_PRINT="none"))
    subprocess.run([sys.executable, os.path.join(ROOT, "bin", "pasta"), "report", out],
                   check=True, capture_output=True)
    now = demo_meta.describe(out, ROOT)
    ok = True
    for key, want, got in (("trace", demo_trace, shown.get("pasta-source")),
                           ("headline", now["pasta-headline"], shown.get("pasta-headline"))):
        same = want == got and bool(want)
        ok &= same
        print(f"{'ok  ' if same else 'FAIL'} {key}: the demo's {want!r}, the picture's {got!r}")
    if not ok:
        print("take the picture again: bash scripts/demo.sh && python3 scripts/demo-screenshot.py")
        return 1
    print("the README's picture is the demo's page")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

#!/usr/bin/env python3
"""The README's picture, made from the demo itself: loads the page
`bash scripts/demo.sh` wrote (without a GPU: a replay of tests/data) in
headless Chromium, takes the first screen (1280x800) and writes it to
docs/report-overview.png with what it shows in the PNG's text chunks: the
trace replayed and the page's headline. tests/cli/screenshot_test.py renders
the demo's page again and checks both, so the picture cannot drift from the
demo.

    bash scripts/demo.sh && python3 scripts/demo-screenshot.py [DEMO_OUT] [PNG]
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import demo_meta  # noqa: E402


def with_text(png, chunks):
    """`png` with a tEXt chunk per (key, value) before its IEND."""
    end = png.rindex(b"IEND") - 4
    extra = b""
    for key, value in chunks:
        data = key.encode("latin-1") + b"\0" + value.encode("latin-1", "replace")
        extra += struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(
            ">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF)
    return png[:end] + extra + png[end:]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "pasta-out")
    target = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "report-overview.png")
    page = os.path.join(out, "report.html")
    if not os.path.exists(page):
        sys.exit(f"demo-screenshot: no {page}: run bash scripts/demo.sh first")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        sys.exit("demo-screenshot: needs Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        shot = os.path.join(tmp, "shot.png")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--window-size=1280,800", f"--screenshot={shot}",
                        "file://" + os.path.abspath(page)], check=True, capture_output=True,
                       timeout=120)
        with open(shot, "rb") as f:
            png = f.read()
    meta = demo_meta.describe(out, ROOT)
    with open(target, "wb") as f:
        f.write(with_text(png, sorted(meta.items())))
    print(f"demo-screenshot: {target} ({len(png)} bytes): {meta}")


if __name__ == "__main__":
    main()

"""What the README's picture shows, as text: the trace the demo replayed and
the headline of its page. scripts/demo-screenshot.py writes it into the
PNG; tests/cli/screenshot_test.py reads it back and compares it with a page
rendered again from the demo's trace."""
import html
import json
import os
import re
import struct


def headline(page_html):
    """The page's headline (its first <p class="headline">) as plain text."""
    m = re.search(r'<p class="headline">(.*?)</p>', page_html, re.S)
    if not m:
        return ""
    text = html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))
    return " ".join(text.split())


def describe(out_dir, root):
    """{"pasta-source": the trace replayed, relative to root; "pasta-headline": ...}."""
    with open(os.path.join(out_dir, "run.json")) as f:
        run = json.load(f)
    source = run.get("replay_of") or run.get("program", "")
    if source and os.path.isabs(source):
        source = os.path.relpath(source, root)
    with open(os.path.join(out_dir, "report.html")) as f:
        return {"pasta-source": source, "pasta-headline": headline(f.read())}


def text_chunks(png):
    """A PNG's tEXt chunks as {key: value}."""
    out, at = {}, 8
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"tEXt":
            key, _, value = png[at + 8:at + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return out

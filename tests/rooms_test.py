#!/usr/bin/env python3
"""The rooms of include/pasta/ against docs/architecture.md: each header imports only
from the rooms its room's row allows, no header includes a header that includes it (a
header and its detail/X_impl.hpp, included under PASTA_DETAIL_DEFINE, count as one),
and the page's list of exceptions holds exactly the includes that break the table.

  rooms_test.py SOURCE_DIR
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, summary  # noqa: E402

SOURCE = os.path.abspath(sys.argv[1])
INCLUDE = os.path.join(SOURCE, "include")
PAGE = os.path.join(SOURCE, "docs", "architecture.md")


def rules():
    """room -> the rooms it may import, from the page's table ("`core/`" -> "core/"),
    and the exceptions: the files the page's list names, as (from, to) pairs."""
    with open(PAGE) as f:
        text = f.read()
    allowed = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        rooms = re.findall(r"`([^`]+)`", cells[0])
        may = re.findall(r"`([^`]+)`", cells[2]) if cells[2] != "any room" else None
        for room in rooms:
            allowed[room] = may
    listed = text[text.index("includes break the table"):text.index("The launcher")]
    pairs = set(re.findall(r"`([\w/]+\.hpp)` includes `([\w/]+\.hpp)`", listed))
    pairs |= {(f, None) for f in re.findall(r"\* `([\w/]+\.hpp)`, that forward", listed)}
    return allowed, pairs


def room_of(header, allowed):
    """The room of pasta/<header>: the longest row of the table that holds it."""
    if header in allowed:  # an umbrella, by name
        return header
    best = None
    for room in allowed:
        longer = best is None or len(room) > len(best)
        if room.endswith("/") and header.startswith(room) and longer:
            best = room
    return best


def headers():
    for d, _, files in os.walk(os.path.join(INCLUDE, "pasta")):
        for f in files:
            if f.endswith((".hpp", ".cuh")):
                path = os.path.join(d, f)
                yield os.path.relpath(path, os.path.join(INCLUDE, "pasta")), path


def includes(path):
    """The pasta headers a file includes, without its own definitions (the
    *_impl.hpp it includes under PASTA_DETAIL_DEFINE)."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"#ifdef PASTA_DETAIL_DEFINE\n#include <pasta/[\w/]+_impl\.hpp>\n#endif", "",
                  text)
    return re.findall(r"#include <pasta/([\w/.]+)>", text)


def main():
    allowed, exceptions = rules()
    expect("the page's table has rows", len(allowed) > 10, True)
    graph, broken = {}, set()
    for header, path in headers():
        room = room_of(header, allowed)
        expect(f"{header} is in a room of the table", room is not None, True)
        graph[header] = includes(path)
        may = allowed.get(room)
        for target in graph[header]:
            # A header the build generates (nv/generated/) is in its folder's room.
            generated = not os.path.exists(os.path.join(INCLUDE, "pasta", target))
            there = os.path.dirname(target) + "/" if generated else room_of(target, allowed)
            if may is None or there == room or there in may:
                continue
            broken.add((header, target))

    def excused(b):  # a forward header (to None) is excused whatever it includes
        return b in exceptions or (b[0], None) in exceptions

    expect("includes that break the page's table, besides its exceptions",
           sorted(b for b in broken if not excused(b)), [])
    expect("exceptions the page lists that no include needs any more",
           sorted(e for e in exceptions
                  if (e not in broken if e[1] else not any(b[0] == e[0] for b in broken))), [])
    # No header includes a header that includes it: a cycle in the include graph.
    state, cycles = {}, []

    def visit(h, stack):
        state[h] = "open"
        for t in graph.get(h, []):
            if state.get(t) == "open":
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t in graph and t not in state:
                visit(t, stack + [t])
        state[h] = "done"

    for h in sorted(graph):
        if h not in state:
            visit(h, [h])
    expect("headers that include a header that includes them", cycles, [])
    # A detail/X_impl.hpp is read only at the end of the one header that includes it, under
    # PASTA_DETAIL_DEFINE: that header's own check compiles it there, so it has no header
    # check of its own (tests/CMakeLists.txt).
    guarded = re.compile(r"#ifdef PASTA_DETAIL_DEFINE\n#include <pasta/([\w/]+_impl\.hpp)>\n#endif\n*$")
    by = {}
    for d in ("include", "src", "tests", "examples", "cli", "inject", "bench", "docs"):
        for top, _, files in os.walk(os.path.join(SOURCE, d)):
            for f in files:
                if not f.endswith((".hpp", ".cpp", ".cu", ".cuh", ".h")):
                    continue
                with open(os.path.join(top, f)) as src:
                    text = src.read()
                for impl in re.findall(r"#include <pasta/([\w/]+_impl\.hpp)>", text):
                    end = guarded.search(text)
                    where = os.path.relpath(os.path.join(top, f), SOURCE)
                    by.setdefault(impl, []).append(where if end and end.group(1) == impl
                                                   else where + " (not at its end, guarded)")
    impls = sorted(h for h, _ in headers() if h.endswith("_impl.hpp"))
    expect("detail/*_impl.hpp files", len(impls) > 10, True)
    expect("each *_impl.hpp included once, at the end of its header under PASTA_DETAIL_DEFINE",
           {h: by.get(h, []) for h in impls if len(by.get(h, [])) != 1 or "(" in by[h][0]}, {})
    return summary("every room imports what docs/architecture.md allows, and no header "
                   "includes one that includes it")


if __name__ == "__main__":
    sys.exit(main())

"""The injection libraries `pasta run` chooses among: share/pasta/pipelines.json, the
table inject/CMakeLists.txt builds them from."""
import difflib
import functools
import json
import os

from launcher.where import SHARE, fail


MODE_OPTIONS = ("--torch", "--memory", "--record", "--host-reduction", "--counters",
                "-t stall_blame")


@functools.cache
def table():
    """The libraries `pasta run` injects, from share/pasta/pipelines.json (the
    table the injection libraries are built from): (library, mode, tools), mode
    being (torch, memory, record, host_reduction, counters, stalls) with stalls
    1 for the sampled run of -t stall_blame and 2 for its instrumented run, and
    tools in the order the library's Profiler names them (pasta_tool_names();
    tests/cli/pipelines_test.py checks them against the built libraries)."""
    path = os.path.join(SHARE, "pipelines.json")
    try:
        with open(path) as f:
            table = json.load(f)["pipelines"]
    except (OSError, ValueError, KeyError) as e:
        fail(f"cannot read the table of pipelines {path} ({e}); reinstall pasta")
    pipelines = []
    for row in table:
        if row.get("launcher", True):
            mode = tuple(o in row["options"] for o in MODE_OPTIONS[:5]) + (row.get("stall_run", 0),)
            pipelines.append((row["library"], mode, row["tools"]))
    return pipelines


def mode_text(mode):
    return " ".join(o for o, on in zip(MODE_OPTIONS, mode) if on) or "the default pipeline"


def parse_tools(text):
    """"-t a,b" -> ["a", "b"]; one clear line for an empty or unknown name."""
    known = sorted({t for _, _, tools in table() for t in tools})
    names = []
    for name in text.split(","):
        name = name.strip()
        if not name:
            fail(f"-t {text!r}: empty tool name (write -t kernel_freq,timeline)")
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            fail(f"unknown tool {name!r}" + (f" (did you mean {close[0]}?)" if close else "") +
                 f"; tools: {', '.join(known)}")
        if name not in names:
            names.append(name)
    return names


def choose_pipeline(args):
    """The library for the options given; with -t and no mode option, the first
    pipeline that has every tool asked for."""
    wanted = parse_tools(args.tools) if args.tools else []
    stalls = 1 if "stall_blame" in wanted else 0
    # -t stall_blame's --host-reduction chooses its second run (second_run).
    mode = (args.torch, args.memory, args.record, args.host_reduction and not stalls,
            args.counters, stalls)
    if stalls and any(mode[1:5]):
        fail("-t stall_blame runs the program twice on pipelines of its own (PC sampling through "
             "CUPTI, then memory accesses through the Compute Sanitizer): it goes with --torch "
             "and --host-reduction and no other mode option")
    if wanted and not any(mode):
        for library, _, tools in table():
            if all(t in tools for t in wanted):
                return library, wanted
        fail(f"no pipeline has all of {', '.join(wanted)}; see pasta tools")
    for library, m, tools in table():
        if m == mode:
            missing = [t for t in wanted if t not in tools]
            if missing:
                fail(f"{mode_text(mode)} has no {', '.join(missing)} (it has {', '.join(tools)})")
            return library, wanted
    fail(f"{mode_text(mode)}: no such pipeline; see pasta tools")


def list_tools():
    for library, mode, tools in table():
        if mode[5] == 2:
            continue  # shown with its sampled run
        text = mode_text(mode) + (" (two runs, + " + second_run(library, False) + ")"
                                  if mode[5] else "")
        print(f"{'pasta run ' + text if any(mode) else 'pasta run':<40} "
              f"{library:<28} {', '.join(tools)}")
    return 0


def second_run(library, host_reduction):
    """The instrumented run's library for a stall_blame sampled run's: every access
    record reduced on the host (host_reduction), or accesses counted per instruction
    on the device."""
    return library.replace("_stall_sample.so",
                           "_stall_access_cpu.so" if host_reduction else "_stall_access.so")

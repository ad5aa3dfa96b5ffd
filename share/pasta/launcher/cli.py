"""pasta: profile an unmodified CUDA program (PyTorch scripts included) by
injection, or look into a recorded trace.

  pasta run [-o DIR] [-f] [--record] [--kernel-filter RE] [--launch-callbacks] -- PROG [ARGS...]
  pasta run -t TOOL[,TOOL...] [...] -- PROG [ARGS...]   only these tools (see pasta tools)
  pasta run [--torch] -t stall_blame [--host-reduction] -- PROG [ARGS...]   two runs
  pasta run --memory [--host-reduction | --record] [--kernel-filter RE] -- PROG [ARGS...]
  pasta run --torch [--memory | --record | --counters] [--op-inputs] -- python SCRIPT.py [ARGS...]
  pasta run --counters -- PROG [ARGS...]
  pasta tools                    the pipelines `pasta run` injects and their tools
  pasta report DIR [DIR...] [-o FILE]  one HTML page; several processes or hosts merged
  pasta replay FILE [FILE...] [-o DIR]  several traces (one per rank): merged
  pasta diff A B [-o PAGE.html] [--json FILE] [--fail-if-slower PCT]  what changed, beyond the noise
  pasta info FILE
  pasta dump FILE [--limit N]
"""
import argparse
import functools

from launcher import jobs, pipelines, run
from launcher.where import SHARE, Var, fail, find


def diff(args):
    """pasta diff A B: the text on stdout (the answer first), the page and JSON if asked;
    input it cannot use is one line and exit status 2, never a traceback."""
    import diff as share  # share/pasta/diff.py
    try:
        return share.main(args, lambda: find("pasta-trace", Var.TRACE_TOOL), SHARE)
    except share.DiffError as e:
        fail(str(e))
    except Exception as e:  # noqa: BLE001  one line, as for any bad input
        fail(f"diff: {type(e).__name__}: {e} (please report this, with the two inputs)")


def capture_range(text):
    """--capture-range, checked as include/pasta/core/capture.hpp reads it: a malformed
    one stops here, before the program runs, rather than capture nothing."""
    kind, _, rest = text.partition(":")
    if text == "cudaProfilerApi" or (kind == "nvtx" and rest):
        return text
    if kind == "steps":
        first, dash, last = rest.partition("-")
        if first.isdigit() and (not dash or last.isdigit()):
            if dash and int(last) < int(first):
                raise argparse.ArgumentTypeError(f"steps:{first}-{last} ends before it begins")
            return text
        raise argparse.ArgumentTypeError(
            "steps: takes A-B or A, whole numbers counted from 0, as in steps:10-12")
    if kind == "nvtx":
        raise argparse.ArgumentTypeError("nvtx: needs the range's name, as in nvtx:train_step")
    raise argparse.ArgumentTypeError("expected cudaProfilerApi, nvtx:NAME or steps:A-B")


@functools.cache
def make_parser():
    parser = argparse.ArgumentParser(prog="pasta", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="profile a program by CUDA injection")
    r.add_argument("-o", "--output", default="pasta-out", help="report directory (pasta-out)")
    r.add_argument("-f", "--force-overwrite", action="store_true",
                   help="replace the reports of an earlier run in the report directory")
    r.add_argument("-t", "--tools", metavar="TOOL[,TOOL...]",
                   help="run only these tools; without --torch/--memory/--record, the first "
                        "pipeline that has them all (pasta tools lists them)")
    r.add_argument("--record", action="store_true",
                   help="record every event to DIR/trace.pasta instead of analysing")
    r.add_argument("--kernel-filter", metavar="RE", help="only kernels matching RE (POSIX ERE)")
    r.add_argument("--capture-range", metavar="RANGE", type=capture_range,
                   help="profile only a window of the run: cudaProfilerApi (cudaProfilerStart "
                        "to Stop, torch.cuda.profiler.start/stop), nvtx:NAME (inside the NVTX "
                        "ranges or record_functions named NAME), steps:A-B (PyTorch optimizer "
                        "steps A to B, from 0)")
    r.add_argument("--launch-callbacks", action="store_true",
                   help="host-side launch callbacks (thread, time; about 5 us a launch)")
    r.add_argument("--memory", action="store_true",
                   help="memory-access hotness per allocation and page (Compute Sanitizer "
                        "patches, reduced on the GPU); slows kernels down, see docs")
    r.add_argument("--host-reduction", action="store_true",
                   help="with --memory or -t stall_blame: ship every access to the host instead "
                        "(the slow conventional baseline, which loses records past its buffer)")
    r.add_argument("--device-reduction", action="store_true",
                   help="with -t stall_blame: count run 2's accesses per instruction on the GPU "
                        "(the default; the flag says so explicitly)")
    r.add_argument("--torch", action="store_true",
                   help="PyTorch operators and tensors: kernels per operator (OpSummary), "
                        "tensor memory (TensorAlloc); with --memory, accesses per tensor")
    r.add_argument("--counters", action="store_true",
                   help="hardware counters per kernel (and per operator with --torch) under "
                        "ncu's metric names; kernels are replayed, the first "
                        "PASTA_COUNTER_LAUNCHES (1) of each signature")
    r.add_argument("--op-inputs", action="store_true",
                   help="with --torch: record each operator's input shapes and dtypes")
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- PROG [ARGS...]")
    sub.add_parser("tools", help="the pipelines pasta run injects and their tools")
    h = sub.add_parser("report", help="one self-contained HTML page for report directories; "
                                      "several processes or hosts are merged side by side")
    h.add_argument("dir", nargs="+")
    h.add_argument("-o", "--output", help="the HTML file (DIR/report.html; with several "
                                          "directories the job files go next to it)")
    h.add_argument("--window", metavar="START-END",
                   help="the timeline window (ms, as the timeline file and Perfetto count) "
                        "that the page pictures; default: the first full training step")
    h.add_argument("--step", type=int, metavar="N",
                   help="picture training step N (1 = the first), found by its optimizer step")
    h.add_argument("--timeline-ranks", metavar="R[,R...]", default="",
                   help="a job: ranks the job's timeline holds besides the slowest, fastest, "
                        "median and outliers (rank numbers, or labels such as 'pid 4242')")
    c = sub.add_parser("diff", help="what changed from run A to run B (report directories, "
                                    "jobs or traces), per module, operator, kernel and rank, "
                                    "beyond the runs' own noise")
    c.add_argument("a", help="the run before: a report directory, a job's directory or a trace")
    c.add_argument("b", help="the run after")
    c.add_argument("-o", "--output", metavar="PAGE.html",
                   help="an HTML page with the runs side by side (and PAGE.json beside it)")
    c.add_argument("--json", metavar="FILE", help="the diff as JSON ('-': on stdout, the text "
                                                  "on stderr)")
    c.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit status 1 when B is slower than A by more than PCT percent (step "
                        "time, else device time): a CI gate")
    c.add_argument("--top", type=int, default=10, metavar="N", help="rows per table (10)")
    p = sub.add_parser("replay", help="run the default tools over a trace; several traces "
                                      "(one per rank) are merged")
    p.add_argument("file", nargs="+")
    p.add_argument("-o", "--output")
    i = sub.add_parser("info", help="header, metadata and event counts of a trace")
    i.add_argument("file")
    d = sub.add_parser("dump", help="one line per event of a trace")
    d.add_argument("file")
    d.add_argument("--limit", type=int)
    return parser


def parse(argv):
    """The command line, parsed; exits with status 2 and one line when it is bad."""
    args = make_parser().parse_args(argv)
    # argparse takes "-o--" as -o with no value, and hands back an empty list.
    for name, value in vars(args).items():
        if name != "command" and isinstance(value, list) and not value:
            fail(f"--{name.replace('_', '-')} needs a value, not '--'")
    if args.cmd == "run" and args.command and args.command[0] == "--":
        args.command = args.command[1:]
    return args


def main(argv):
    args = parse(argv)
    if args.cmd == "run":
        return run.run(args)
    if args.cmd == "tools":
        return pipelines.list_tools()
    if args.cmd == "report":
        return jobs.report(args.dir, args.output, args.window, args.step,
                      [r.strip() for r in args.timeline_ranks.split(",") if r.strip()])
    if args.cmd == "diff":
        return diff(args)
    if args.cmd == "replay":
        if len(args.file) == 1:
            return jobs.trace_tool(["replay", args.file[0]] +
                                   (["-o", args.output] if args.output else []))
        return jobs.replay_job(args.file, args.output or "pasta-out")
    if args.cmd == "info":
        return jobs.trace_tool(["info", args.file])
    return jobs.trace_tool(["dump", args.file] + (["--limit", str(args.limit)]
                                             if args.limit is not None else []))

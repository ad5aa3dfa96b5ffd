#!/usr/bin/env python3
"""aten_ops.py: what torch::Aten's operator callbacks cost the program's thread per operator
call (bench/aten_ops.cpp), every variant in its own process, interleaved rounds; prints the
median, min..max and the extra ns per call against native, with the CPU's name.

  bench/aten_ops.py BINARY [--rounds 5] [--calls 400000] [--cpu N] [--base OTHER_BINARY]
                           [--paired]
  bench/aten_ops.py BINARY --instructions [--calls 3000]
  bench/aten_ops.py BINARY --misses [--calls 3000] [--evict 2048]

--cpu N runs every process on CPU N alone (and pasta's thread with it), default: all CPUs.
--base OTHER_BINARY times the same variants of another build (an earlier commit's) in the same
rounds, each variant of both binaries once a round, and prints per variant the change of its
extra ns (over its own binary's native) round by round: median and bootstrap 95% interval.
--paired times torch and torch-shared only, each process alternating blocks outside and inside
the tools' capture window (PASTA_CAPTURE_RANGE=cudaProfilerApi): what the operator callbacks
cost over the path outside a window, where no operator callback runs but one sampled in 16
(allocator reports are recorded in both), read within one process, where processes differ by
more (the GPU machine's host: native 4,831..5,547 ns a call across 5 processes). Every run is
checked: its event_count must hold the inside blocks' operator calls exactly. With --base (a
build that has the paired mode too), the change of that paired cost round by round.
--instructions counts instructions instead of time, exactly, where other processes share the
CPUs or no hardware counter is readable: each variant runs under valgrind's callgrind with
--calls and with a third of them, and the difference over the calls between is one call's
instructions on the program's thread: the operator call with pasta's callbacks and its
allocator report, and the tensor's free with its report; the launch-like work (whose spins
depend on time), start-up, exit and pasta's worker left out. Besides the timed variants,
torch-closed and torch-shared-closed: the same tools with a capture window that never opens
(PASTA_CAPTURE_RANGE=cudaProfilerApi), what an operator costs outside a window.
--misses counts, under callgrind's cache simulation (32 KiB first-level caches, a 2 MiB
last-level one), what one operator start and one operator end of `--torch`'s tools touch when
the program has run other code in between, as a real program's interpreter does: after each
call the benchmark writes a buffer of --evict KiB (2048), so the callbacks meet their code and
data uncached. Per callback: instructions, instruction cache lines fetched (first-level misses),
data lines read and written that missed; the difference of two runs (--calls and half as many)
over the calls between; for the tools in the program (torch) and in a shared library it loads
with dlopen (torch-shared), as `pasta run --torch` has them, where a thread-local variable of
the default TLS model is reached through __tls_get_addr; and for ring-callback, the floor of an
operator record (bench/ring_ops.hpp). The number of lines is what the callback costs a program
whose caches its own work keeps full, at each operator call."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

VARIANTS = ["native", "empty-callback", "ring-callback", "torch", "torch-shared", "torch-inline"]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def callgrind(out, options, program, env=None):
    """`program` (the benchmark's arguments) run under callgrind with `options` and `env` added
    to the environment, its profile in OUT/callgrind.out; the finished process. Raises
    RuntimeError when it fails."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", *options,
                           f"--callgrind-out-file={out}/callgrind.out", *program],
                          capture_output=True, text=True, timeout=1800,
                          env=dict(os.environ, PASTA_PRINT="none", PASTA_OUTPUT_DIR=out,
                                   **(env or {})))
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(program[1:])} under callgrind: exit {proc.returncode}\n"
                           f"{proc.stderr[-2000:]}")
    return proc


# The tools' capture window follows cudaProfilerStart/Stop, which only the benchmark's paired
# mode calls: without it the window never opens.
PROFILER_API_WINDOW = {"PASTA_CAPTURE_RANGE": "cudaProfilerApi"}
# --instructions' variants beyond VARIANTS: (the benchmark's variant, extra environment).
CLOSED = {"torch-closed": ("torch", PROFILER_API_WINDOW),
          "torch-shared-closed": ("torch-shared", PROFILER_API_WINDOW)}


def collected(binary, variant, calls):
    """The instructions callgrind counted in one run of `variant` making `calls` calls: the
    benchmark's blocks of calls on its own thread, their launch-like work left out (the
    toggles flip collection on entering and leaving each function)."""
    program, env = CLOSED.get(variant, (variant, {}))
    with tempfile.TemporaryDirectory(prefix="pasta-aten-ops-cg-") as out:
        toggles = ["--toggle-collect=*block_ns*", "--toggle-collect=*launch_like_work*"]
        proc = callgrind(out, toggles, [binary, program, str(calls)], env)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if not found:
        raise RuntimeError(f"{variant} under callgrind: no count\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def misses(args):
    """Per-call cache-simulation counts of Aten::on_start and Aten::on_end (see --misses)."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("--misses needs valgrind (apt-get install valgrind)")
        return 1
    events = ["Ir", "I1mr", "D1mr", "D1mw"]
    low = max(1, args.calls // 2)
    print(f"torch::Aten's callbacks with the caches evicted between calls ({args.evict} KiB), "
          f"callgrind, {args.calls} minus {low} calls, per call")
    print(f"  {'variant':13} {'callback':16} {'instructions':>12} {'code lines':>10} "
          f"{'data read':>9} {'data written':>12}")
    callbacks = [(v, label, fn) for v in ("torch", "torch-shared") for label, fn in
                 [("operator start", "pasta::torch::Aten::on_start*"),
                  ("operator end", "pasta::torch::Aten::on_end*")]]
    # The floor of an operator record (ring_ops.hpp), the same way.
    callbacks += [("ring-callback", "operator start", "pasta_bench::ring::on_start*"),
                  ("ring-callback", "operator end", "pasta_bench::ring::on_end*")]
    for variant, label, fn in callbacks:
        counts = []
        for calls in (args.calls, low):
            with tempfile.TemporaryDirectory(prefix="pasta-aten-ops-cs-") as out:
                try:
                    callgrind(out, ["--cache-sim=yes", "--D1=32768,8,64", "--I1=32768,8,64",
                                    "--LL=2097152,16,64", f"--toggle-collect={fn}"],
                              [args.binary, variant, str(calls), str(args.evict)])
                except RuntimeError as e:
                    print(f"FAILED {label}: {e}")
                    return 1
                ann = subprocess.run(["callgrind_annotate", f"--show={','.join(events)}",
                                      f"{out}/callgrind.out"], capture_output=True,
                                     text=True).stdout
            totals = next((ln for ln in ann.splitlines() if "PROGRAM TOTALS" in ln), None)
            if totals is None:
                print(f"FAILED {label}: no totals in callgrind_annotate's output")
                return 1
            counts.append([int(x.replace(",", "")) for x in
                           re.findall(r"([\d,]+) \(", totals)])
        per = [(a - b) / (args.calls - low) for a, b in zip(*counts)]
        print(f"  {variant:13} {label:16} {per[0]:12.0f} {per[1]:10.1f} {per[2]:9.1f} "
              f"{per[3]:12.1f}", flush=True)
    return 0


PAIRED_VARIANTS = ["torch", "torch-shared"]
PAIRED_BLOCKS, PAIRED_INSIDE = 41, 20  # bench/aten_ops.cpp's paired_ns()


def paired_check(out, calls):
    """None when the run in OUT recorded exactly the inside blocks' operator calls (one aten::add
    a call), else what it recorded."""
    try:
        with open(os.path.join(out, "event_count.json")) as f:
            counts = {r["event"]: r["count"] for r in json.load(f)["tables"]["events"]}
    except (OSError, ValueError, KeyError) as e:
        return f"no event count in {out}: {e}"
    want = PAIRED_INSIDE * (calls // PAIRED_BLOCKS)
    got = counts.get("OpBegin", 0)
    if got == want:
        return None
    return f"{got} operator calls recorded, not the {want} inside the window"


def paired_table(args, binaries, runs, samples):
    """--paired: per variant the median over processes of the paired extra ns; with --base, the
    change round by round with a bootstrap 95% interval."""
    print(f"\ntorch::Aten: what the operator callbacks cost inside a capture window over the "
          f"path outside it, ns a call, within each process (median over its 20 "
          f"inside blocks of each one less the mean of its outside neighbours), on {cpu_name()}; "
          f"median of {args.rounds} processes")
    print(f"  {'variant':21} {'extra ns':>9} {'min..max':>15}")
    for b, v in runs:
        xs = samples[b, v]
        print(f"  {b + v:21} {statistics.median(xs):9.0f} {min(xs):7.0f}..{max(xs):<7.0f}")
    if args.base:
        print_changes(args, "change", {v: [a - b for a, b in zip(samples["", v],
                                                                  samples["base ", v])]
                                       for v in PAIRED_VARIANTS})
    return 0


def print_changes(args, what, changes):
    """--base: per variant, its changes (one a round, this binary's less the base's) as their
    median and a bootstrap 95% interval."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
    from harness import bootstrap
    print(f"\n{what}, {args.binary} minus --base {args.base}, round by round: median and "
          f"bootstrap 95% interval")
    for v, xs in changes.items():
        med, lo, hi = bootstrap(xs)
        print(f"  {v:16} {med:+8.0f} ({lo:+.0f}..{hi:+.0f})")


def instructions(args):
    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind)")
        return 1
    low = max(1, args.calls // 3)
    per_call = {}
    variants = [*VARIANTS, *CLOSED]
    for v in variants:
        try:
            per_call[v] = (collected(args.binary, v, args.calls) -
                           collected(args.binary, v, low)) / (args.calls - low)
        except RuntimeError as e:
            print(f"FAILED {e}")
            return 1
        print(f"{v}: {per_call[v]:.0f} instructions a call", flush=True)
    print(f"\ntorch::Aten per operator call, instructions on the program's thread (callgrind, "
          f"{args.calls} minus {low} calls; the add, its allocation and free, launch-like work "
          f"left out)")
    print(f"  {'variant':19} {'a call':>9} {'extra':>9}")
    for v in variants:
        print(f"  {v:19} {per_call[v]:9.0f} {per_call[v] - per_call['native']:9.0f}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="pasta_bench_aten_ops")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, help="calls a process (400000; 3000 with --instructions "
                   "or --misses)")
    p.add_argument("--cpu", type=int, default=None)
    p.add_argument("--base", metavar="OTHER_BINARY",
                   help="time another build's benchmark in the same rounds (see above)")
    p.add_argument("--paired", action="store_true",
                   help="inside against outside a capture window, within each process (see "
                   "above)")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions under callgrind instead of timing (see above)")
    p.add_argument("--misses", action="store_true",
                   help="count the cache lines the callbacks touch, caches evicted between "
                   "calls (callgrind's cache simulation; see above)")
    # Timed, the buffer's writes (63 us a call on the GPU machine's host for 2 MiB) and their
    # spread between processes hide the callbacks: only --misses takes it.
    p.add_argument("--evict", type=int, default=2048, metavar="KIB",
                   help="with --misses: the buffer written between calls (2048)")
    args = p.parse_args()
    if args.calls is None:
        args.calls = 3000 if args.instructions or args.misses else 400000
    if args.instructions:
        return instructions(args)
    if args.misses:
        return misses(args)
    binaries = {"": args.binary, **({"base ": args.base} if args.base else {})}
    variants = PAIRED_VARIANTS if args.paired else VARIANTS
    runs = [(b, v) for v in variants for b in binaries]  # (binary's label, variant)
    samples = {run: [] for run in runs}
    value = "paired_extra_ns" if args.paired else "ns_per_call"
    with tempfile.TemporaryDirectory(prefix="pasta-aten-ops-") as out:
        env = dict(os.environ, PASTA_PRINT="none", PASTA_OUTPUT_DIR=out,
                   **(PROFILER_API_WINDOW if args.paired else {}))
        pin = (lambda: os.sched_setaffinity(0, {args.cpu})) if args.cpu is not None else None
        for r in range(args.rounds):
            for b, v in runs:
                proc = subprocess.run([binaries[b], v, str(args.calls),
                                       *(["0", "paired"] if args.paired else [])],
                                      capture_output=True, text=True, env=env, preexec_fn=pin,
                                      timeout=300)
                if proc.returncode != 0:
                    print(f"FAILED {b}{v} (round {r + 1}): exit {proc.returncode}\n{proc.stderr}")
                    return 1
                if args.paired and (wrong := paired_check(out, args.calls)):
                    print(f"FAILED {b}{v} (round {r + 1}): {wrong}")
                    return 1
                samples[b, v].append(json.loads(proc.stdout.strip().splitlines()[-1])[value])
            print(f"round {r + 1} of {args.rounds}: " +
                  ", ".join(f"{b}{v} {samples[b, v][-1]:.0f}" for b, v in runs), flush=True)
    if args.paired:
        return paired_table(args, binaries, runs, samples)
    print(f"\ntorch::Aten per operator call (an add, its allocation and free, 4 us of launch-like "
          f"work) on {cpu_name()}, median of {args.rounds} interleaved rounds")
    print(f"  {'variant':21} {'ns/call':>9} {'min..max':>15} {'extra ns':>9}")
    for b, v in runs:
        m = statistics.median(samples[b, v])
        native = statistics.median(samples[b, "native"])
        print(f"  {b + v:21} {m:9.0f} {min(samples[b, v]):7.0f}..{max(samples[b, v]):<7.0f} "
              f"{m - native:9.0f}")
    if args.base:
        print_changes(args, "extra ns a call", {
            v: [(new - new_native) - (old - old_native) for new, new_native, old, old_native
                in zip(samples["", v], samples["", "native"], samples["base ", v],
                       samples["base ", "native"])]
            for v in VARIANTS[1:]})
    return 0


if __name__ == "__main__":
    sys.exit(main())

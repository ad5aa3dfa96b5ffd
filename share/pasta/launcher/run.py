"""pasta run: the plan (which library, which variables, where the reports go), the
program's run (twice for -t stall_blame), and what the run leaves beside the reports."""
import datetime
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import library  # share/pasta/library.py
from launcher import jobs, pipelines
from launcher.where import Var, ask_library, fail, find


def plan_run(args):
    """Checks a `pasta run` command line and returns (report dir, environment to
    add): no side effect, so tests/fuzz/fuzz_launcher.py can call it."""
    if not args.command:
        fail("run needs a program: pasta run [options] -- PROG [ARGS...]")
    program = args.command[0]
    if os.sep not in program and shutil.which(program) is None:
        fail(f"program not found: {program}")
    stalls = bool(args.tools) and "stall_blame" in args.tools
    if args.device_reduction and not stalls:
        fail("--device-reduction goes with -t stall_blame")
    if args.device_reduction and args.host_reduction:
        fail("--device-reduction and --host-reduction: choose one")
    if args.host_reduction and not (args.memory or stalls):
        fail("--host-reduction goes with --memory or -t stall_blame")
    if args.torch and args.host_reduction and not stalls:
        fail("--host-reduction does not go with --torch (but with --torch -t stall_blame)")
    if args.torch and args.memory and args.record:
        fail("--torch takes --memory or --record, not both")
    if args.counters and args.memory:
        fail("--counters reads hardware counters through CUPTI and --memory patches kernels "
             "through the Compute Sanitizer, and CUDA lets a process have one: run twice")
    if args.counters and args.record:
        fail("--counters does not go with --record")
    if args.memory and args.record and args.host_reduction:
        fail("--record with --memory records the device histograms; leave out --host-reduction")
    name, tools = pipelines.choose_pipeline(args)
    library = find(name, Var.INJECT_LIB)
    out = os.path.abspath(expand_output(args.output))
    env = {"CUDA_INJECTION64_PATH": library}
    # Every process of the run reports into a place of its own below `out`
    # (include/pasta/core/process.hpp): the program itself into `out`, ranks
    # into rank<R>, other processes into pid<P>; each enters itself in
    # out/processes/, the list this launcher reads at the end.
    env[Var.OUTPUT_DIR] = out
    env[Var.RUN_ID] = f"{os.uname().nodename}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env[Var.LAUNCHER_PID] = str(os.getpid())
    if args.kernel_filter:
        env[Var.KERNEL_FILTER] = args.kernel_filter
    if args.capture_range:
        env[Var.CAPTURE_RANGE] = args.capture_range
    if args.launch_callbacks:
        env[Var.LAUNCH_CALLBACKS] = "1"
    if args.torch and args.op_inputs:
        env[Var.OP_INPUTS] = "1"
    if tools:
        env[Var.TOOLS] = ",".join(tools)
    # --record: each process writes trace.pasta into its own directory.
    return out, env


def expand_output(pattern):
    """-o with the placeholders a profiled process's output directory takes
    (include/pasta/core/process.hpp), for the launcher's own directory (-o out-%h gives
    each node's `pasta run` a directory of its own): expanded by the library for this
    launcher, which refuses a placeholder it does not know and an unset %q{VAR}."""
    if "%" not in pattern:
        return pattern
    me = ask_library("identity", pattern)
    if me["errors"]:
        fail(f"-o: {library.refusal(me['errors'][0])}")
    return me["expanded"]


def launcher_rank():
    """(rank, variable) when this `pasta run` is itself one rank of a job (mpirun or
    srun starting one pasta run per rank: a rank variable of the library's table is
    set), else None."""
    me = ask_library("identity")
    return (me["rank"], me["rank_variable"]) if me["rank"] is not None else None


def run(args):
    out, added = plan_run(args)
    shared = launcher_rank() if "%" not in args.output else None
    if shared:
        # One pasta run per rank, all into one directory: each owns its rank's place.
        prepare_output(os.path.join(out, f"rank{shared[0]}"), args.force_overwrite)
    else:
        prepare_output(out, args.force_overwrite)
    library = os.path.basename(added["CUDA_INJECTION64_PATH"])
    if library.endswith("_stall_sample.so"):
        return run_stall_blame(args, out, added, bool(shared))
    return run_once(args, out, added, bool(shared))


def run_stall_blame(args, out, added, shared):
    """-t stall_blame: the program runs twice, sampled into OUT/sampled, then
    instrumented into OUT, where the second run joins the first's samples
    (process by process: the same rank, or the program itself)."""
    sampled = os.path.join(out, "sampled")
    print(f"pasta: stall_blame, run 1 of 2: PC sampling (CUPTI) into {sampled}", file=sys.stderr)
    code = run_once(args, sampled, {**added, Var.OUTPUT_DIR: sampled}, shared)
    found = (glob.glob(os.path.join(sampled, "stall_samples.json")) +
             glob.glob(os.path.join(sampled, "*", "stall_samples.json")))
    samples = os.path.join(sampled, "%n", "stall_samples.json")
    if code != 0 or not found:
        print("pasta: stall_blame stops after run 1: " +
              (f"the program exited with {code}" if code else
               f"no stall_samples.json was written under {sampled}"), file=sys.stderr)
        return code or 1
    sampled_library = os.path.basename(added["CUDA_INJECTION64_PATH"])
    second = find(pipelines.second_run(sampled_library, args.host_reduction), Var.STALL_ACCESS_LIB)
    print(f"pasta: stall_blame, run 2 of 2: memory accesses (Compute Sanitizer) into {out}",
          file=sys.stderr)
    more = {}
    if Var.ACCESS_SPACES not in os.environ:
        # Hopper kernels stage tiles with cp.async and cp.async.bulk: count those loads too.
        more[Var.ACCESS_SPACES] = "global,async"
    return run_once(args, out, {**added, **more, "CUDA_INJECTION64_PATH": second,
                                Var.STALL_SAMPLES: samples,
                                Var.RUN_ID: added[Var.RUN_ID] + "-2"}, shared)


def run_once(args, out, added, shared):
    """Runs the program once with `added` in its environment; `shared`: this pasta run
    is one rank's of a job whose ranks all write into one directory."""
    program = args.command[0]
    env = {**os.environ, **added}
    # NVTX_INJECTION64_PATH is left to the injected handler: it names the
    # libcupti the process actually loaded (PyTorch brings its own), and a
    # second copy of CUPTI loaded by path would take the driver from the first.
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"cannot create the report directory {out}: {e.strerror}")
    started, t0 = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()
    try:
        proc = subprocess.run(args.command, env=env, check=False)
        code = proc.returncode
    except OSError as e:
        fail(f"cannot start {program}: {e.strerror}")
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    if code < 0:  # killed by a signal
        code = 128 - code
    import job  # share/pasta/job.py
    found = job.find_processes([out], added[Var.RUN_ID])
    processes, problems = found
    merged = (bool(processes) and not shared and
              not (len(processes) == 1 and processes[0].dir == out))
    if not merged:  # a merge names them with its own problems, below
        for line in problems:
            print(f"pasta: {line}", file=sys.stderr)
    if not processes:
        print(f"pasta: no reports in {out}: the program made no CUDA call that loaded pasta",
              file=sys.stderr)
        return code
    if shared:
        # Other ranks' `pasta run`s write into the same directory: the job is
        # merged once all have finished, by `pasta report`.
        print(job.process_table([job.summarize(p) for p in processes]), file=sys.stderr)
        print(f"pasta: this rank's reports are in {out}; `pasta report {out}` merges the job "
              f"once every rank has finished", file=sys.stderr)
        return code
    write_run_info(out, args.command, started, time.perf_counter() - t0, code,
                   added[Var.RUN_ID])
    reporting = [p for p in processes if p.has_reports]
    if not merged:
        p = processes[0]
        if p.has_reports:
            page = jobs.make_report(out, quiet=True)
            print(f"pasta: reports in {out}: {', '.join(p.entry.get('reports', []))}" +
                  (f"; open {page}" if page else ""), file=sys.stderr)
        else:
            print(f"pasta: no reports: {program} (pid {p.pid}) did no GPU work", file=sys.stderr)
        return code
    doc = job.merge([out], out, added[Var.RUN_ID], found)
    print(f"pasta: {len(processes)} processes in {out}; {len(reporting)} with reports",
          file=sys.stderr)
    print(job.process_table(doc["processes"]), file=sys.stderr)
    for line in doc["problems"]:
        print(f"pasta: {line}", file=sys.stderr)
    jobs.make_process_reports(jobs.paged(doc, out))
    page = jobs.make_report(out, quiet=True)
    print(f"pasta: the job side by side in {os.path.join(out, 'job.txt')}" +
          (f", one timeline {os.path.join(out, 'job.trace.json')}" if doc.get("timeline") else "") +
          (f"; open {page}" if page else ""), file=sys.stderr)
    return code


# Files and folders a pasta run leaves in its directory.
PASTA_MARKERS = ("run.json", "processes", "job.json")


def prepare_output(out, force):
    """A run never mixes with an earlier one: `out` must be new or empty, or hold
    an earlier pasta run that -f replaces. Anything else is refused."""
    if not os.path.exists(out):
        return
    if not os.path.isdir(out):
        fail(f"-o {out}: not a directory")
    entries = os.listdir(out)
    if not entries:
        return
    known = {t for _, _, tools in pipelines.table() for t in tools}
    ours = any(e in PASTA_MARKERS for e in entries) or any(
        e.split(".")[0] in known and e.endswith((".json", ".txt")) for e in entries)
    if not ours:
        fail(f"{out} is not empty and holds no pasta reports: choose a new or empty directory "
             f"with -o")
    if not force:
        what = ""
        try:
            with open(os.path.join(out, "run.json")) as f:
                info = json.load(f)
            what = f" ({info.get('program', '?')}, {info.get('started', '?')})"
        except (OSError, ValueError):
            pass
        fail(f"{out} holds the reports of an earlier run{what}; -f (--force-overwrite) "
             f"replaces them, or choose another directory with -o")
    for e in entries:
        path = os.path.join(out, e)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError as err:
            fail(f"-f: cannot remove {path}: {err.strerror}")


def write_run_info(out, command, started, seconds, code, run_id=None):
    """run.json: what ran, where and how long, for the HTML report."""
    gpus = []
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=False)
        gpus = [l.strip() for l in smi.stdout.splitlines() if l.strip()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    info = {"program": " ".join(command), "started": started.isoformat(timespec="seconds"),
            "duration_s": round(seconds, 3), "exit_code": code, "gpus": gpus,
            "host": os.uname().nodename, "run_id": run_id}
    try:
        with open(os.path.join(out, "run.json"), "w") as f:
            json.dump(info, f, indent=1)
    except OSError as e:
        print(f"pasta: run.json not written: {e.strerror}", file=sys.stderr)

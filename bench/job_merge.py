#!/usr/bin/env python3
"""job_merge.py: how long `pasta report DIR` takes to merge a job of synthetic ranks
(bench/job_ranks.py), and its peak memory, at 64, 1,024 and 4,096 ranks; prints a table with
the CPU's name and writes job_merge.csv. Each rank's directory is written once under WORK
and kept for the next run.

  bench/job_merge.py [--ranks 64,1024,4096] [--kernels 499] [--steps 10] [--launches]
                     [--work DIR] [--pasta bin/pasta]

--pasta: the launcher to time (another checkout's, for before and after). The page's size
and the job timeline's are printed too: both must stay bounded whatever the rank count. The
CPU seconds (the merge and its page workers) and the load average (1 min) say how much of the
machine the merge had: the wall clock of a shared machine tells little alone."""
import argparse
import csv
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_ranks  # noqa: E402
from aten_ops import cpu_name  # noqa: E402


def prepare(work, ranks, kernels, steps, launches):
    """The job's directory, written unless a complete one is there."""
    job = os.path.join(work, f"ranks{ranks}-k{kernels}-s{steps}" +
                       ("-launches" if launches else ""))
    done = os.path.join(job, ".complete")
    if not os.path.exists(done):
        subprocess.run(["rm", "-rf", job], check=True)
        p = job_ranks.params(ranks=ranks, kernels=kernels, steps=steps, launches=launches)
        t0 = time.perf_counter()
        job_ranks.generate(job, p)
        open(done, "w").close()
        print(f"  wrote {ranks} ranks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    for f in os.listdir(job):  # the last merge's output
        if f.startswith("job.") or f in ("report.html", "tables", "merge.log"):
            subprocess.run(["rm", "-rf", os.path.join(job, f)], check=True)
    return job


def merge(pasta, job):
    """(seconds, CPU seconds, peak resident MB of the merging process, exit code) of one
    `pasta report`: CPU seconds too, as the wall clock of a shared machine tells little."""
    log = os.path.join(job, "merge.log")  # a file: job.txt alone can outgrow a pipe
    t0 = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, pasta, "report", job], stdout=subprocess.DEVNULL,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        with open(log) as f:
            print(f.read()[-2000:], file=sys.stderr)
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def size_mb(path):
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="64,1024,4096")
    ap.add_argument("--kernels", type=int, default=job_ranks.DEFAULTS["kernels"])
    ap.add_argument("--steps", type=int, default=job_ranks.DEFAULTS["steps"])
    ap.add_argument("--work", default="/tmp/pasta-job-merge")
    ap.add_argument("--pasta", default=os.path.join(os.path.dirname(HERE), "bin", "pasta"))
    ap.add_argument("--csv", default="job_merge.csv")
    ap.add_argument("--launches", action="store_true",
                    help="host launch times in every timeline, as --launch-callbacks writes them")
    args = ap.parse_args()
    rows = []
    launches = f", {args.steps * (args.kernels + 2)} host launches" if args.launches else ""
    print(f"pasta report over synthetic ranks ({args.steps * (args.kernels + 1)} kernels, "
          f"{args.steps} copies, {args.steps * args.kernels * 2} operator edges{launches} a "
          f"rank), {cpu_name()}, {os.cpu_count()} CPUs, launcher {args.pasta}")
    print("| ranks | merge s | CPU s | load | peak MB | report.html MB | job.trace.json MB | "
          "job.json MB | exit |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in [int(x) for x in args.ranks.split(",")]:
        job = prepare(args.work, n, args.kernels, args.steps, args.launches)
        seconds, cpu, peak, code = merge(args.pasta, job)
        row = {"ranks": n, "seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
               "load": os.getloadavg()[0], "peak_mb": round(peak),
               "page_mb": size_mb(os.path.join(job, "report.html")),
               "timeline_mb": size_mb(os.path.join(job, "job.trace.json")),
               "job_json_mb": size_mb(os.path.join(job, "job.json")), "exit": code}
        rows.append(row)
        print("| " + " | ".join("-" if v is None else f"{v:.2f}" if isinstance(v, float) else
                                str(v) for v in row.values()) + " |", flush=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
